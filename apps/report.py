"""Run reports: a Markdown file with PNG plots, written next to the run's outputs."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence


def plot_series(path: Path, title: str, series: Mapping[str, Sequence[tuple[float, float]]],
                xlabel: str, ylabel: str) -> Path:
    """One line per named series of (x, y) points, saved as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    for name, points in series.items():
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, ys, label=name, marker="." if len(points) < 30 else None)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def markdown_table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


class MarkdownReport:
    """Collects sections, tables and plots; `write()` saves report.md in `directory`."""

    def __init__(self, directory: str | Path, title: str):
        self.directory = Path(directory)
        self.title = title
        self.parts: list[str] = [f"# {title}\n"]

    def section(self, heading: str, text: str = "") -> None:
        self.parts.append(f"\n## {heading}\n\n{text}".rstrip() + "\n")

    def table(self, rows: Sequence[Sequence[object]], header: Sequence[str]) -> None:
        self.parts.append("\n" + markdown_table(rows, header) + "\n")

    def plot(self, name: str, title: str, series: Mapping[str, Sequence[tuple[float, float]]],
             xlabel: str, ylabel: str) -> Path:
        path = plot_series(self.directory / f"{name}.png", title, series, xlabel, ylabel)
        self.parts.append(f"\n![{title}]({path.name})\n")
        return path

    def write(self) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / "report.md"
        path.write_text("".join(self.parts))
        return path
