"""Refresh the benchmark tables of docs/benchmarks.md from benchmarks/results/<part>.json.

    python benchmarks/_tables.py        # rewrites the blocks between <!-- bench:PART --> markers
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from common import targets_markdown

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TABLES = ROOT / "docs" / "benchmarks.md"  # the README links there, keeping the user guide first


def table(part: str) -> str:
    r = json.loads((RESULTS / f"{part}.json").read_text())
    m = r.get("machine", {})
    head = (f"Measured {r.get('date', '?')} on {m.get('cpus', '?')} CPUs, "
            f"{'GPU ' + m['gpu'] if m.get('gpu') else 'no GPU'}, {'quick' if r.get('quick') else 'full'} run "
            f"(`benchmarks/{part}.py`, raw figures in `benchmarks/results/{part}.json`).")
    return "\n".join([head, ""] + targets_markdown(r["targets"], r.get("notes", []), missed="**no**"))


def main() -> None:
    text = TABLES.read_text()
    for part in sorted(p.stem for p in RESULTS.glob("*.json")):
        pattern = re.compile(rf"(<!-- bench:{part} -->\n).*?(<!-- /bench:{part} -->)", re.S)
        if pattern.search(text):
            text = pattern.sub(lambda mm: mm.group(1) + table(part) + "\n" + mm.group(2), text)
    TABLES.write_text(text)


if __name__ == "__main__":
    main()
