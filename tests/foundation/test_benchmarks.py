"""Every benchmark runs with --quick and writes JSON in the convention's shape, so none rots.

CI asserts nothing about the figures: they are measured by full runs and reported in the README.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("[a-z]*.py") if p.name != "common.py")


def test_there_are_benchmarks():
    assert SCRIPTS, "no benchmarks/*.py found"


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_quick_benchmark_writes_conventional_json(script, tmp_path):
    out = tmp_path / f"{script.stem}.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run([sys.executable, str(script), "--quick", "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["part"] == script.stem and result["quick"] is True
    assert {"cpus", "gpu"} <= set(result["machine"])
    assert isinstance(result["config"], dict) and result["arms"]
    assert result["targets"], "a benchmark must state its targets"
    for name, t in result["targets"].items():
        assert {"value", "op", "target", "met", "what"} <= set(t), name
        assert t["op"] in (">=", "<=", ">", "<", "==")
    assert "| target |" in proc.stdout  # the Markdown table is printed
