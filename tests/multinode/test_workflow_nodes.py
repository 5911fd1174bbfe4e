"""Workflows on a simulated multi-node cluster: the node running a step is lost mid-step; the
step runs again on another node (Ray's retry of a lost task, or a new runner for the part
served from the cache), the run succeeds, and the step that had finished is not run again."""
from __future__ import annotations

import threading
import time

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def double(x: float, log: str) -> float:
    with open(log, "a") as f:
        f.write("double\n")
    return 2 * x


def slow_inc(x: float, log: str) -> float:
    import ray

    with open(log, "a") as f:
        f.write(f"slow {ray.get_runtime_context().get_node_id()}\n")
    time.sleep(4)
    return x + 1


def test_a_step_whose_node_is_lost_runs_again_elsewhere_and_finished_steps_are_not_redone(nodes, tmp_path):
    from raystack.actors.workflow.runner import run_workflow
    from raystack.workflow import ArtifactStore, Workflow

    sim = nodes
    log = str(tmp_path / "log")
    wf = Workflow("lossy")
    a = wf.step(double, id="a", x=1.0, log=log)
    b = wf.step(slow_inc, id="b", x=a, log=log)
    wf.step(double, id="c", x=b, log=log)
    out = {}

    def run():
        out["rep"] = run_workflow(wf.build(), store=ArtifactStore(str(tmp_path / "store")), progress=False,
                                  split_budget=1, max_runners=2)   # every step a part, run by runners
    t = threading.Thread(target=run)
    t.start()
    lost = None
    deadline = time.time() + 60
    while lost is None and time.time() < deadline:
        lines = [ln.split() for ln in open(log).read().splitlines()] if (tmp_path / "log").exists() else []
        slow = [ln[1] for ln in lines if ln[0] == "slow"]
        if slow:
            lost = slow[0]
            sim.remove(sim.name_of(lost))
        time.sleep(0.05)
    t.join(120)
    assert lost is not None and not t.is_alive()
    rep = out["rep"]
    assert rep.status == "succeeded" and rep.output("c") == 6.0, rep.failed
    lines = open(log).read().split("\n")
    runs = [ln.split()[1] for ln in lines if ln.startswith("slow")]
    assert len(runs) == 2 and runs[1] != lost                 # again, on another node
    assert lines.count("double") == 2                         # a and c once each: a not redone
