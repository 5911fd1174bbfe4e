"""Every part's documented metrics reach the cluster's Prometheus endpoint while it runs.

A background thread (tests/scrape.py) scrapes the endpoint (what the Ray dashboard reads) during a
real run and the test looks for the names the README documents, with values that make sense for
that run. Each training part's series are checked during its own fault test, so the run that
kills and replaces actors is the one scraped (no extra run per part):
- EDiT: tests/edit/test_edit_cluster.py::test_a_killed_replica_is_replaced_the_run_finishes_and_its_metrics_reach_the_dashboard
- mLoRA: tests/mlora/test_mlora_pipeline.py::test_killed_stage_restarts_adapters_resume_from_checkpoint_and_metrics_reach_the_dashboard
- elastic: tests/elastic/test_elastic_cluster.py::test_ten_worker_kills_lose_and_duplicate_nothing_and_metrics_reach_the_dashboard
The workflow runner's step states are checked here.
"""
from __future__ import annotations

import pytest

from tests.scrape import Scraper

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_workflow_step_states_during_a_run(ray_cluster):
    import raystack.workflow as W
    from raystack.actors.workflow.runner import run_workflow
    from tests.workflow.wf_toys import sleepy

    wf = W.Workflow("dash-metrics")
    prev = None
    for i in range(8):  # a chain: steps finish one at a time, ~0.7 s apart
        prev = wf.step(sleepy, id=f"s{i}", seconds=0.7, after=[prev] if prev else [])
    with Scraper(every_s=0.3) as s:
        rep = run_workflow(wf.build(), functions=wf.functions, store=None, progress=False)
        s.wait_for(["workflow_steps_executed_total"])
        # the finished run's gauges reach the endpoint at the next export (every 2 s here)
        s.wait_until(lambda: (s.snapshot_labels("workflow_steps", "state", workflow="dash-metrics") or [{}])[-1]
                     .get("executed") == 8)
    assert rep.status == "succeeded" and len(rep.executed) == 8
    states = s.snapshot_labels("workflow_steps", "state", workflow="dash-metrics")
    assert states, "workflow_steps{workflow=dash-metrics} never reached the endpoint"
    # every scrape accounts for all 8 steps; one was taken mid-run (some done, some pending),
    # and the last one shows the finished run
    assert all(sum(row.values()) == 8 for row in states), states
    assert any(0 < row.get("executed", 0) < 8 and row.get("pending", 0) > 0 for row in states), states
    assert states[-1].get("executed") == 8 and states[-1].get("pending") == 0
    assert max(s.values("workflow_steps_executed_total", workflow="dash-metrics")) == 8
