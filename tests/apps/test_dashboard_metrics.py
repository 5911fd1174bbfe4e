"""Every part's documented metrics reach the cluster's Prometheus endpoint while it runs.

A background thread scrapes the endpoint (what the Ray dashboard reads) every half second
during a small real run of each part; the test then looks for the names the README documents,
with values that make sense for that run. Counters carry Prometheus' ``_total`` suffix. The session cluster exports metrics every 2 s
(RAY_metrics_report_interval_ms, set in tests/conftest.py).
"""
from __future__ import annotations

import threading
import time

import pytest

from raystack.cluster import scrape_series

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
P = "ray_raystack_"


class Scraper:
    """Scrapes the metrics endpoint in the background; keeps every snapshot taken."""

    def __init__(self, every_s: float = 0.5) -> None:
        self.every_s = every_s
        self.snapshots: list[list[tuple[str, dict[str, str], float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.snapshots.append(scrape_series())
            except OSError:
                pass  # the endpoint restarts with the metrics agent: try again
            self._stop.wait(self.every_s)

    def __enter__(self) -> "Scraper":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def values(self, name: str, **labels: str) -> list[float]:
        """Per snapshot where the series appears: its value summed over matching label sets."""
        out = []
        for snap in self.snapshots:
            hits = [v for n, lab, v in snap if n == P + name
                    and all(lab.get(k) == x for k, x in labels.items())]
            if hits:
                out.append(sum(hits))
        return out

    def increase(self, name: str, **labels: str) -> float:
        """How much a counter rose during the scrape: earlier runs in this session count from
        the first snapshot (taken before this run's first export)."""
        first = [v for n, lab, v in self.snapshots[0] if n == P + name
                 and all(lab.get(k) == x for k, x in labels.items())] if self.snapshots else []
        return max(self.values(name, **labels), default=0.0) - sum(first)

    def snapshot_labels(self, name: str, key: str, **labels: str) -> list[dict[str, float]]:
        """Per snapshot: {label value of ``key``: value} of the series matching ``labels``."""
        out = []
        for snap in self.snapshots:
            row = {lab.get(key, ""): v for n, lab, v in snap if n == P + name
                   and all(lab.get(k) == x for k, x in labels.items())}
            if row:
                out.append(row)
        return out

    def wait_until(self, done, timeout_s: float = 20.0) -> None:
        """Keep scraping until ``done()`` holds (a later export reached the endpoint) or time is up."""
        deadline = time.time() + timeout_s
        while time.time() < deadline and not done():
            time.sleep(0.3)

    def wait_for(self, names: list[str], timeout_s: float = 20.0) -> None:
        """Keep the run's metrics a little longer if the last export was not scraped yet."""
        deadline = time.time() + timeout_s
        while time.time() < deadline and not all(self.values(n) for n in names):
            time.sleep(0.5)


def scraped(run, shutdown, names: list[str], settled=None):
    """``run()`` with the endpoint scraped throughout, then ``shutdown()``; (result, Scraper).

    ``settled(result, scraper)``, when given, is waited for before the shutdown: a short run
    can end between two exports, and the values it set last reach the endpoint only with the
    next export, while its actors still live."""
    try:
        with Scraper() as s:
            res = run()
            s.wait_for(names)
            if settled is not None:
                s.wait_until(lambda: settled(res, s))
    finally:
        shutdown()
    for n in names:
        assert s.values(n), f"{n} never reached the endpoint"
    return res, s


def test_edit_metrics_during_a_run(ray_cluster, tmp_path):
    from raystack.actors.edit import EDiTGroup
    from tests.edit.test_edit_cluster import small_cfg

    group = EDiTGroup(small_cfg(tmp_path, steps=64, run={"eval_every": 4}))
    group.start()
    names = ["edit_train_loss", "edit_val_loss", "edit_tokens_per_s", "edit_sync_seconds"]
    def final_loss_shown(res, s) -> bool:
        return min(s.values("edit_train_loss"), default=float("inf")) <= res.train_loss + 0.5

    res, s = scraped(lambda: group.run(progress=False), group.shutdown, names, final_loss_shown)
    assert all(0.0 < v < 6.0 for v in s.values("edit_train_loss")), s.values("edit_train_loss")
    assert all(0.0 < v < 6.0 for v in s.values("edit_val_loss"))
    assert s.values("edit_tokens_per_s") and max(s.values("edit_tokens_per_s")) > 0
    assert s.values("edit_sync_seconds") and min(s.values("edit_sync_seconds")) >= 0
    # the loss shown while it trained came down towards the final one
    assert min(s.values("edit_train_loss")) <= res.train_loss + 0.5


def test_mlora_metrics_during_a_run(ray_cluster, tmp_path):
    from raystack.actors.mlora import LoRAPipeline
    from tests.mlora.test_mlora_pipeline import _cfg

    cfg = _cfg(tmp_path)
    for t in cfg.tasks:
        t.max_steps = 12
    pipe = LoRAPipeline(cfg, progress=False)
    names = ["mlora_loss", "mlora_step", "mlora_tokens_total", "mlora_stage_idle_fraction",
             "mlora_stage_busy_seconds_total"]
    res, s = scraped(pipe.run, pipe.shutdown, names)
    assert 0 < s.increase("mlora_tokens_total") <= res.tokens
    # summed over the adapters (label sets): at most 12 steps each
    assert 0 < max(s.values("mlora_step")) <= 12 * len(cfg.tasks)
    # idle fraction summed over 2 stages
    assert all(0.0 <= v <= 2.0 for v in s.values("mlora_stage_idle_fraction"))
    assert max(s.values("mlora_stage_busy_seconds_total")) > 0


def test_elastic_metrics_during_a_run(ray_cluster, tmp_path):
    from raystack.actors.elastic import ElasticController
    from tests.elastic.test_elastic_cluster import make_cfg

    # both workers equally slowed (no straggler) so the run spans several metric exports
    slow = {"worker-0": 4.0, "worker-1": 4.0}
    job = "metrics"  # this job's series only: other jobs of the session have their own
    ctl = ElasticController(make_cfg(tmp_path, job, rows=24_000, faults={"slow_workers": slow}))
    names = ["elastic_workers", "elastic_ps", "elastic_samples_per_s", "elastic_samples_total",
             "elastic_rows_committed_total", "elastic_shards_done", "elastic_plan_changes_total",
             "elastic_ps_touched_rows"]
    res, s = scraped(ctl.run, ctl.shutdown, names)
    cfg = ctl.cfg.resources
    assert s.values("elastic_workers", job=job) and s.values("elastic_ps", job=job)
    assert set(s.values("elastic_workers", job=job)) <= set(range(1, cfg.max_workers + 1))
    assert set(s.values("elastic_ps", job=job)) <= set(range(1, cfg.max_ps + 1))
    assert max(s.values("elastic_samples_per_s", job=job)) > 0
    assert 0 < max(s.values("elastic_rows_committed_total", job=job)) <= res.rows
    assert max(s.values("elastic_plan_changes_total", job=job)) >= 1


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
