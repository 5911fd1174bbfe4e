"""The benchmark convention (see README, "Benchmarks"): one script per part, every arm in the
same run, results in benchmarks/results/<part>.json plus a Markdown table on stdout."""
from __future__ import annotations

import argparse
import datetime
import json
import math
import operator
import os
import platform
import sys
import threading
import time
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"
_cli_out: str | None = None  # --out from parse_args: where Report writes unless told otherwise
QUICK_DIR = RESULTS_DIR / "quick"   # git-ignored: a smoke run never replaces a full run's figures


def default_out(name: str, quick: bool) -> Path:
    """Where a run's JSON goes unless ``--out`` says: ``results/<name>.json`` for a full run,
    ``results/quick/<name>.json`` for ``--quick`` (its plots go beside it)."""
    return (QUICK_DIR if quick else RESULTS_DIR) / f"{name}.json"


_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq}

# Let `python benchmarks/<part>.py` import the project from a checkout without installing it.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


def format_target_value(value, op: str | None = None, target: float | None = None) -> str:
    """A target's value as the tables show it: 4 significant digits, more where 4 would round
    it onto the other side of its goal (1.0324 against <= 1.03 shows 1.032, never 1.03)."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value).lower()
    if not isinstance(value, float):
        return str(value)
    met = None if op is None or target is None else bool(_OPS[op](value, target))
    for digits in range(4, 18):
        text = f"{value:.{digits}g}"
        if met is None or bool(_OPS[op](float(text), target)) == met:
            return text
    return repr(value)


def targets_markdown(targets: dict, notes: list[str], missed: str = "no") -> list[str]:
    """The target table's lines (header, one row per target) and the notes under it."""
    lines = ["| target | value | goal | met | what |", "| --- | --- | --- | --- | --- |"]
    for name, t in targets.items():
        lines.append(f"| {name} | {format_target_value(t['value'], t['op'], t['target'])} | "
                     f"{t['op']} {format_target_value(t['target'])} | {'yes' if t['met'] else missed} | {t['what']} |")
    lines += [f"\n_{n}_" for n in notes]
    return lines


def parse_args(description: str, extra=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="shrink every size so the run takes < 2 minutes")
    p.add_argument("--out", default=None, help="results file (default benchmarks/results/<part>.json; "
                   "with --quick benchmarks/results/quick/<part>.json, which git ignores)")
    if extra:
        extra(p)
    args = p.parse_args()
    global _cli_out
    _cli_out = args.out
    return args


def machine_info() -> dict:
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    try:
        import psutil
        mem = psutil.virtual_memory().total
    except Exception:
        mem = None
    return {"cpus": os.cpu_count(), "cpu_model": _cpu_model(), "gpu": gpu, "memory_bytes": mem,
            "platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__,
            # the kernels torch picked (AVX2 / AVX512 ...): float results, and so losses over long runs,
            # differ between machines that differ here, so figures from two of them are not paired
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability()}


def _cpu_model() -> str | None:
    """The CPU's model name as Linux reports it (None elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


class Report:
    """Collects arms and targets; `write()` saves the JSON and prints the Markdown table."""

    def __init__(self, part: str, quick: bool, config: dict | None = None, out: str | None = None):
        self.part, self.quick = part, quick
        self.config = dict(config or {})
        self.arms: dict[str, dict] = {}
        self.targets: dict[str, dict] = {}
        self.notes: list[str] = []
        out = out or _cli_out
        self.out = Path(out) if out else default_out(part, quick)
        self.started = time.time()

    def arm(self, name: str, **figures) -> dict:
        self.arms.setdefault(name, {}).update(figures)
        return self.arms[name]

    def target(self, name: str, value: float | None, op: str, target: float, what: str) -> dict:
        if op not in _OPS:
            raise ValueError(f"op must be one of {list(_OPS)}, got {op!r}")
        met = value is not None and bool(_OPS[op](value, target))
        self.targets[name] = {"value": value, "op": op, "target": target, "met": met, "what": what}
        return self.targets[name]

    def note(self, text: str) -> None:
        """Say what is simulated (network, nodes, a trace...) and with which parameters."""
        self.notes.append(text)

    def as_dict(self) -> dict:
        return {"part": self.part, "quick": self.quick, "machine": machine_info(),
                "date": datetime.date.today().isoformat(), "seconds": round(time.time() - self.started, 1),
                "config": self.config, "notes": self.notes, "arms": self.arms, "targets": self.targets}

    def markdown(self) -> str:
        return "\n".join(targets_markdown(self.targets, self.notes))

    def write(self) -> Path:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(json.dumps(self.as_dict(), indent=2, default=float) + "\n")
        print(f"\n## {self.part} benchmark ({'quick' if self.quick else 'full'}, {machine_info()['cpus']} CPUs)\n")
        print(self.markdown())
        print(f"\nwrote {self.out}")
        return self.out


class PeakRSS:
    """Samples the summed RSS of `pids` (and their children) every `interval_s`; `.peak_bytes`.

    `alone` pids count without their children: a driver that started an embedded Ray cluster
    is the parent of every Ray process (raylet, GCS, dashboard, idle pooled workers, other
    arms' actors), which belong to no single arm.
    """

    def __init__(self, pids, interval_s: float = 0.05, alone=(), children_every_s: float = 1.0):
        self.pids = list(pids)
        self.alone = set(alone)
        self.interval_s = interval_s
        self.children_every_s = children_every_s
        self.peak_bytes = 0
        self._procs: dict[int, object] = {}
        self._scanned_at = -math.inf
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def add(self, pid: int) -> None:
        self.pids.append(pid)
        self._scanned_at = -math.inf

    def _tree(self) -> list:
        """The processes to count. Listing children walks all of /proc (~1 ms a pid), so it
        is redone every ``children_every_s``, not at every sample: the sampler would
        otherwise take ~5% of a core from the arm it measures."""
        import psutil

        now = time.monotonic()
        if now - self._scanned_at >= self.children_every_s:
            procs: dict[int, object] = {}
            for pid in list(self.pids):
                try:
                    p = psutil.Process(pid)
                    for q in [p] if pid in self.alone else [p, *p.children(recursive=True)]:
                        procs.setdefault(q.pid, q)
                except Exception:
                    continue
            self._procs, self._scanned_at = procs, now
        return list(self._procs.values())

    def sample(self) -> int:
        total = 0
        for q in self._tree():
            try:
                total += q.memory_info().rss
            except Exception:
                continue
        self.peak_bytes = max(self.peak_bytes, total)
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def __enter__(self) -> "PeakRSS":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()
