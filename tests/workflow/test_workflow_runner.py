"""The Ray runner: caching, run-time control flow, retries, timeouts, splitting, faults."""

from __future__ import annotations

import time

import pytest
import ray

import wf_toys as T
from raystack.actors.workflow.runner import WorkflowRunner, prepare_functions, run_workflow
from raystack.workflow import ArtifactStore, Workflow
from raystack.workflow.engine import children_count

pytestmark = pytest.mark.cluster


_diamond = T.diamond


def _lines(path):
    try:
        return open(path).read().split()
    except FileNotFoundError:
        return []


def test_cache_rerun_and_changed_parameter_cone(ray_cluster, tmp_path):
    store = ArtifactStore(str(tmp_path / "store"))
    log = str(tmp_path / "log")
    rep = run_workflow(_diamond(log), store=store, progress=False)
    assert rep.status == "succeeded" and rep.output("sum") == 72.0
    assert sorted(rep.executed) == ["a", "b", "src", "sum", "ta", "tb"]
    assert len(_lines(log)) == 6
    rep = run_workflow(_diamond(log), store=store, progress=False)
    assert rep.executed == [] and len(_lines(log)) == 6 and rep.output("sum") == 72.0
    rep = run_workflow(_diamond(log, factor=3.0), store=store, progress=False)
    assert sorted(rep.executed) == ["a", "sum", "ta"]
    assert rep.output("sum") == 78.0


def test_when_and_loop_decided_at_run_time(ray_cluster, tmp_path):
    for n, branch in ((5, "big"), (2, "small")):
        wf = Workflow("cond")
        t = wf.step(T.total, id="t", xs=wf.step(T.source, id="s", n=n))
        with wf.when(t, ">", 5):
            wf.step(T.label, id="big", text="big")
        with wf.otherwise():
            wf.step(T.label, id="small", text="small")
        wf.loop(T.scale, id="loop", carry="xs", max_iterations=10, until=(0, ">=", 16),
                xs=wf.step(T.source, id="one", n=2)[1:] if False else [1.0], factor=2.0)
        rep = run_workflow(wf.build(), store=None, progress=False)
        assert rep.executed.count(branch) == 1
        assert ({"big", "small"} - {branch}) <= set(rep.skipped)
        assert rep.results["loop"].iterations == 4 and rep.output("loop") == [16.0]


def test_retries_then_failure_keeps_artifacts_and_resumes(ray_cluster, tmp_path):
    store = ArtifactStore(str(tmp_path / "store"))
    counter = str(tmp_path / "counter")
    log = str(tmp_path / "log")

    def build():
        wf = Workflow("retry")
        s = wf.step(T.source, id="src", n=3, log=log, ignore=["log"])
        side = wf.step(T.label, id="side", text="independent", log=log, ignore=["log"])
        f = wf.step(T.flaky, id="flaky", fail_times=3, counter=counter, retries=1, after=[s],
                    log=log, ignore=["log", "counter"])
        wf.step(T.label, id="end", text="end", after=[f, side], log=log, ignore=["log"])
        return wf.build()
    rep = run_workflow(build(), store=store, progress=False)
    assert rep.status == "failed"
    assert "flaky failure 2" in rep.failed["flaky"]
    assert open(counter).read() == "2"                 # 1 try + 1 retry
    assert sorted(rep.executed) == ["side", "src"]     # finished work is kept
    rep = run_workflow(build(), store=store, progress=False)
    assert rep.status == "succeeded"
    assert sorted(rep.executed) == ["end", "flaky"]    # resumed: nothing else re-ran
    assert open(counter).read() == "4"


def test_timeout_fails_the_step(ray_cluster):
    wf = Workflow("slow")
    wf.step(T.sleepy, id="z", seconds=30.0, timeout_s=0.5)
    t0 = time.time()
    rep = run_workflow(wf.build(), progress=False)
    assert rep.status == "failed" and "timed out" in rep.failed["z"]
    assert time.time() - t0 < 15


def test_exit_handlers_run_on_ray(ray_cluster, tmp_path):
    p = str(tmp_path / "status")
    wf = Workflow("exits")
    wf.step(T.boom, id="b")
    wf.on_exit(T.status_note, kind="always", id="always", path=p)
    wf.on_exit(T.status_note, kind="failure", id="onfail", path=p)
    wf.on_exit(T.status_note, kind="success", id="onok", path=p)
    rep = run_workflow(wf.build(), progress=False)
    assert rep.status == "failed" and "boom" in rep.failed["b"]
    assert sorted(_lines(p)) == ["failed", "failed"]


def test_split_workflow_runs_every_step_once(ray_cluster, tmp_path):
    log = str(tmp_path / "log")
    wf = Workflow("wide")
    prev = [wf.step(T.source, id=f"s{i}", n=i + 1, log=log, ignore=["log"]) for i in range(10)]
    for layer in range(24):
        prev = [wf.step(T.mix, id=f"c{layer}-{i}", values=[prev[i], prev[(i + 1) % 10]],
                        log=log, ignore=["log"]) for i in range(10)]
    ir = wf.build()
    rep = run_workflow(ir, store=ArtifactStore(str(tmp_path / "s")), progress=False,
                       split_budget=60, max_runners=3)
    assert rep.status == "succeeded"
    assert len(rep.results) == 250 and sorted(rep.executed) == sorted(s.id for s in ir.steps)
    assert len(_lines(log)) == 250                      # no step ran twice
    assert rep.output("c0-0") == 1.0 and rep.output("c1-0") == 1.0 + 4.0


def test_killed_runner_resumes_from_cache(ray_cluster, tmp_path):
    store = ArtifactStore(str(tmp_path / "store"))
    log = str(tmp_path / "log")
    wf = Workflow("chain")
    x = wf.step(T.source, id="c0", n=2, log=log, ignore=["log"])
    for i in range(1, 8):
        x = wf.step(T.sleepy, id=f"c{i}", seconds=0.4 + i / 1000, after=[x], log=log,
                    ignore=["log"])
    ir = wf.build()
    runner = WorkflowRunner.remote()
    runner.run_part.remote(ir.to_dict(), prepare_functions(ir), store, {}, children_count(ir))
    deadline = time.time() + 30
    while len(_lines(log)) < 4 and time.time() < deadline:
        time.sleep(0.05)
    ray.kill(runner)
    time.sleep(1.0)
    before = len(_lines(log))
    assert 4 <= before < 8
    rep = run_workflow(ir, store=store, progress=False)
    assert rep.status == "succeeded"
    assert len(rep.cached) >= 3 and set(rep.cached).isdisjoint(rep.executed)
    assert len(rep.executed) <= 8 - 3
