"""Ray Tune integration: a step, a generator step under ASHA, and a sub-workflow."""

from __future__ import annotations

import pytest
from ray import tune as rtune

import wf_toys as T
from raystack.actors.workflow.tune import tune
from raystack.workflow import Workflow, WorkflowError

pytestmark = pytest.mark.cluster


def test_tune_a_step_function(ray_cluster, tmp_path):
    import os
    tune_env = {k: v for k, v in os.environ.items() if k.startswith("TUNE_")}
    seen = []

    class Seen(rtune.Callback):
        def on_trial_complete(self, iteration, trials, trial, **info):
            seen.append(trial.config["x"])
    r = tune(T.quadratic, {"x": rtune.grid_search([0.0, 0.3])}, metric="score", mode="max",
             scheduler="fifo", num_samples=1, resources={"cpu": 0.5}, fixed={"y": -0.2},
             storage_path=str(tmp_path), name="quad", callbacks=[Seen()],
             max_concurrent=1)
    assert r.trials == 2 and r.best_config["x"] == 0.3 and r.best_metric == pytest.approx(0.0)
    # Tune's own ResultGrid, written where asked, and the caller's callback ran
    best = r.grid.get_best_result(metric="score", mode="max")
    assert best.config["x"] == 0.3 and best.metrics["score"] == pytest.approx(0.0)
    assert (tmp_path / "quad").is_dir() and sorted(seen) == [0.0, 0.3]
    # no process-wide Tune settings changed (Ray itself may set its own variables)
    assert {k: v for k, v in os.environ.items() if k.startswith("TUNE_")} == tune_env


@pytest.mark.slow
def test_asha_stops_weak_trials_early(ray_cluster, tmp_path):
    space = {"lr": rtune.grid_search([1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0])}
    # Two trials at a time: with all six at once, each can finish before ASHA has seen the
    # others at its first rung, and then there is nothing to stop (a timing race, not ASHA).
    asha = tune(T.learning_curve, space, "score", scheduler="asha", num_samples=1,
                max_iterations=9, resources={"cpu": 0.5}, max_concurrent=2,
                storage_path=str(tmp_path))
    assert asha.trials == 6
    assert asha.iterations < 6 * 9          # FIFO runs every trial to the end
    assert asha.best_config == {"lr": 0.1} and asha.best_metric > 0.98


def test_tune_a_sub_workflow(ray_cluster, tmp_path):
    wf = Workflow("tunable")
    s = wf.step(T.source, id="src", n=4)
    a = wf.step(T.scale, id="scale", xs=s, factor=1.0)
    wf.step(T.total, id="total", xs=a)
    r = tune(wf, {"scale.factor": rtune.grid_search([0.5, 2.0])}, metric="total",
             mode="max", scheduler="fifo", num_samples=1, resources={"cpu": 0.5},
             storage_path=str(tmp_path))
    assert r.best_config == {"scale.factor": 2.0} and r.best_metric == 12.0
    with pytest.raises(WorkflowError, match="names no step"):
        tune(wf, {"nope.factor": rtune.grid_search([1.0])}, metric="total",
             scheduler="fifo", num_samples=1)
