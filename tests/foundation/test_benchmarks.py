"""Every benchmark runs with --quick and writes JSON in the convention's shape, so none rots.

CI asserts nothing about the figures: they are measured by full runs and reported in
docs/benchmarks.md. The quick runs are separate processes, each with its own Ray instance: two
run at once (the first test starts them all; each test waits for its own), which fills the time
one spends starting Ray or sleeping through a simulated link with the other's work.
"""
import json
import os
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.own_ray  # see tests/conftest.py: OWN_RAY_SCOPE
ROOT = Path(__file__).resolve().parents[2]
# Longest first, so the two slots finish together (no quick run left alone at the end); seconds
# each took under CI (two at a time, 2 cores); a script not listed counts as the longest. The tests
# run in the same order, so each waits for a run that started about when it did.
QUICK_SECONDS = {"mlora": 150, "edit": 110, "reliability": 100, "workflow": 60, "elastic": 50,
                 "edit_quality": 20, "comm": 18}
SCRIPTS = sorted((p for p in (ROOT / "benchmarks").glob("[a-z]*.py") if p.name != "common.py"),
                 key=lambda p: (-QUICK_SECONDS.get(p.stem, max(QUICK_SECONDS.values()) + 1), p.name))
RELIABILITY = ROOT / "benchmarks" / "reliability.py"


def test_there_are_benchmarks():
    assert SCRIPTS, "no benchmarks/*.py found"


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_help_prints_every_option(script):
    """``--help`` works (argparse formats each help text with %: a bare '%' in one broke it)."""
    proc = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "--quick" in proc.stdout and "--out" in proc.stdout


AT_ONCE = 2
_runs: dict[str, Future] = {}


# A hang detector, not a speed check: under xdist the quick runs are niced below the shared
# cluster's tests (tests/conftest.py: OWN_RAY_NICE) and on a busy 2-core machine one took 480 s
# that takes 145 s alone.
QUICK_TIMEOUT_S = 1200
# Ray gives a local node's raylet a fixed 30 s to register with its GCS (ray/_private/node.py);
# a niced raylet on a busy machine can miss that before any benchmark code has run. Such a run
# is started once more; any other failure is reported as it is.
RAY_START_TIMED_OUT = "The current node timed out during startup"


def _quick_run(script: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    env.pop("RAY_ADDRESS", None)
    for _ in range(2):
        proc = subprocess.run([sys.executable, str(script), "--quick", "--out", str(out)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=QUICK_TIMEOUT_S)
        if proc.returncode == 0 or RAY_START_TIMED_OUT not in proc.stderr:
            return proc
    return proc


@pytest.fixture(scope="module")
def quick_outputs(tmp_path_factory, request):
    """Start the quick run of every selected benchmark (AT_ONCE at a time); script -> JSON path."""
    chosen = {item.callspec.params["script"] for item in request.session.items
              if item.originalname == "test_quick_benchmark_writes_conventional_json"}
    if any(item.originalname == "test_quick_reliability_reads_the_fault_free_spread" for item in request.session.items):
        chosen.add(RELIABILITY)
    folder = tmp_path_factory.mktemp("quick")
    pool = ThreadPoolExecutor(max_workers=AT_ONCE)
    outs = {}
    for script in [p for p in SCRIPTS if p in chosen]:
        outs[script] = folder / f"{script.stem}.json"
        _runs[script.name] = pool.submit(_quick_run, script, outs[script])
    yield outs
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.slow
@pytest.mark.timeout(3 * QUICK_TIMEOUT_S)  # a test waits for its own run (up to two tries) and part of another's
@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_quick_benchmark_writes_conventional_json(script, quick_outputs):
    out = quick_outputs[script]
    proc = _runs[script.name].result()
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


@pytest.mark.slow
@pytest.mark.timeout(3 * QUICK_TIMEOUT_S)
def test_quick_reliability_reads_the_fault_free_spread(quick_outputs):
    """The quick reliability run (shared with the test above) judges the elastic AUC against its
    fault-free run(s), times every arm, and says why the torchft recovery target is not read."""
    proc = _runs[RELIABILITY.name].result()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(quick_outputs[RELIABILITY].read_text())
    elastic = result["arms"]["elastic_short"]
    assert len(elastic["auc_fault_free"]) == result["config"]["elastic_fault_free_runs"] == 1
    delta = result["targets"]["elastic_auc_delta"]
    assert delta["value"] == pytest.approx(min(elastic["auc_fault_free"]) - min(elastic["auc"]))
    assert all(arm["seconds"] > 0 for arm in result["arms"].values())
    assert "torchft" not in result["arms"] and result["targets"]["edit_vs_torchft_recovery"]["value"] is None
    assert any("torchft arm: full run only" in n for n in result["notes"])


def _benchmarks_common():
    """benchmarks/common.py, imported the way the scripts import it (their folder on the path)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import common
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return common


def test_a_quick_run_never_replaces_the_full_runs_results():
    """Without --out a --quick run writes under results/quick/ (git-ignored), so a smoke run
    after a full one leaves the full run's JSON and plots as they were; --out still wins."""
    common = _benchmarks_common()
    full, quick = common.Report("edit_quality", False), common.Report("edit_quality", True)
    assert full.out == ROOT / "benchmarks" / "results" / "edit_quality.json"
    assert quick.out == ROOT / "benchmarks" / "results" / "quick" / "edit_quality.json"
    assert common.Report("edit_quality", True, out="/tmp/x.json").out == Path("/tmp/x.json")
    ignored = subprocess.run(["git", "check-ignore", "-q", str(quick.out.relative_to(ROOT))], cwd=ROOT)
    assert ignored.returncode == 0, "results/quick/ must be git-ignored"


def test_a_tables_value_never_reads_as_the_other_side_of_its_goal():
    """The tables round a value to 4 significant digits unless that would put it on the other
    side of its goal: 1.0324 against <= 1.03 (missed) must not show as 1.03."""
    common = _benchmarks_common()
    fmt = common.format_target_value
    assert fmt(1.0324, "<=", 1.03) == "1.032"
    assert fmt(1.03004, "<=", 1.03) == "1.03004"  # missed by 4e-5: shown with the digits it takes
    assert fmt(0.20004, "<=", 0.2) == "0.20004"  # missed by a hair: never shown as 0.2
    assert fmt(0.19996, "<=", 0.2) == "0.2"  # met, and 0.2 <= 0.2 reads as met
    assert fmt(1.0035, ">=", 1.0) == "1.004" and fmt(None, "<=", 1.0) == "n/a"
    assert fmt(7.1534e-07, "<=", 1e-05) == "7.153e-07" and fmt(3, "==", 3) == "3"
    report = common.Report("edit_quality", True, out="/tmp/unused.json")
    report.target("loss", 1.0324, "<=", 1.03, "a ratio")
    assert "| loss | 1.032 | <= 1.03 | no |" in report.markdown()
