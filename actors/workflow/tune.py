"""Tune any step or sub-workflow with Ray Tune (ASHA and other schedulers, actor reuse).

``tune(target, search_space, metric, mode, scheduler, num_samples, resources)``:

- a step function returning a number or a dict of metrics is one trial per config;
- a generator function yielding metric dicts (one per training iteration) lets schedulers
  such as ASHA stop weak trials early;
- a Workflow or WorkflowIR is run in the trial (in-process) with the config applied as
  ``"<step id>.<param>"`` overrides; the metric is read from ``output_step``'s output.
"""

from __future__ import annotations

import copy
import inspect
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import ray
from ray import tune as rtune
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, TrialScheduler
from ray.tune.search import BasicVariantGenerator

from raystack.actors.workflow.runner import _pickle_by_value_if_needed
from raystack.workflow.api import Workflow
from raystack.workflow.engine import run_local
from raystack.workflow.ir import WorkflowError, WorkflowIR


@dataclass
class TuneResult:
    """The outcome of a search."""

    best_config: dict[str, Any]
    best_metric: float
    trials: int
    iterations: int                  # training iterations reported over all trials
    seconds: float
    per_trial: list[dict[str, Any]] = field(default_factory=list)


def _scheduler(scheduler: str | TrialScheduler, max_t: int, grace: int) -> TrialScheduler:
    if isinstance(scheduler, TrialScheduler):
        return scheduler
    if scheduler == "asha":
        return ASHAScheduler(max_t=max_t, grace_period=grace, reduction_factor=3)
    if scheduler == "fifo":
        return FIFOScheduler()
    raise WorkflowError("", f"unknown scheduler {scheduler!r}; expected 'asha', 'fifo' or a "
                        "ray.tune TrialScheduler")


class _Tally(rtune.Callback):
    """Counts reported iterations and the best metric seen per trial, in the driver."""

    def __init__(self, metric: str, mode: str):
        self.metric, self.mode = metric, mode
        self.iterations: dict[str, int] = {}
        self.best: dict[str, float] = {}
        self.configs: dict[str, dict] = {}

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if self.metric not in result:
            return
        tid = trial.trial_id
        v = float(result[self.metric])
        self.iterations[tid] = self.iterations.get(tid, 0) + 1
        self.configs[tid] = dict(trial.config)
        old = self.best.get(tid)
        if old is None or (v > old if self.mode == "max" else v < old):
            self.best[tid] = v


def _apply_overrides(ir: WorkflowIR, config: dict[str, Any]) -> WorkflowIR:
    ir = copy.deepcopy(ir)
    by_id = ir.by_id()
    for k, v in config.items():
        sid, _, param = k.rpartition(".")
        if sid not in by_id:
            raise WorkflowError(sid, f"search-space key {k!r} names no step (use 'step.param')")
        by_id[sid].params[param] = v
    return ir


def _trainable(target: Any, metric: str, fixed: dict[str, Any], functions, output_step):
    if isinstance(target, Workflow):
        functions = {**target.functions, **(functions or {})}
        target = target.build()
    if isinstance(target, WorkflowIR):
        ir = target
        from raystack.actors.workflow.runner import prepare_functions
        functions = prepare_functions(ir, functions)
        out_id = output_step or ir.main_steps()[-1].id

        def run_wf(config: dict) -> None:
            rep = run_local(_apply_overrides(ir, config), functions)
            if rep.status != "succeeded":
                raise RuntimeError(f"trial workflow failed: {rep.failed}")
            out = rep.output(out_id)
            rtune.report({metric: float(out[metric] if isinstance(out, dict) else out)})
        return run_wf
    if not callable(target):
        raise WorkflowError("", f"tune() needs a step function or a workflow, got {target!r}")
    fn = target
    _pickle_by_value_if_needed(fn)

    if inspect.isgeneratorfunction(fn):
        def run_gen(config: dict) -> None:
            for m in fn(**fixed, **config):
                rtune.report(dict(m))
        return run_gen

    def run_fn(config: dict) -> None:
        out = fn(**fixed, **config)
        rtune.report(dict(out) if isinstance(out, dict) else {metric: float(out)})
    return run_fn


def tune(target: Callable | Workflow | WorkflowIR, search_space: dict[str, Any], metric: str,
         mode: str = "max", scheduler: str | TrialScheduler = "asha", num_samples: int = 8,
         resources: dict[str, float] | None = None, *, max_iterations: int = 100,
         grace_period: int = 1, reuse_actors: bool = True, max_concurrent: int | None = None,
         seed: int | None = 0, fixed: dict[str, Any] | None = None,
         functions: dict[str, Callable] | None = None, output_step: str | None = None,
         storage_path: str | None = None) -> TuneResult:
    """Run a Ray Tune search over ``target``; returns the best config and accounting.

    ``resources`` per trial, e.g. ``{"cpu": 1}`` (0 CPU is not allowed by Tune: use 0.01).
    ``seed`` fixes the sampled configs, so schedulers can be compared on the same trials.
    """
    if mode not in ("max", "min"):
        raise WorkflowError("", f"mode must be 'max' or 'min', got {mode!r}")
    if not ray.is_initialized():
        from raystack.cluster import connect
        connect()
    if isinstance(target, (Workflow, WorkflowIR)):
        ir = target.build(validate_ir=False) if isinstance(target, Workflow) else target
        _apply_overrides(ir, {k: None for k in search_space})  # names every key's step
    trainable = _trainable(target, metric, dict(fixed or {}), functions, output_step)
    res = dict(resources or {"cpu": 1})
    if res.get("cpu", 1) <= 0:
        res["cpu"] = 0.01
    # Results are tallied in the driver by _Tally: skip Tune's per-trial JSON/CSV files.
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    tally = _Tally(metric, mode)
    tuner = rtune.Tuner(
        rtune.with_resources(trainable, res),
        param_space=search_space,
        tune_config=rtune.TuneConfig(
            metric=metric, mode=mode, num_samples=num_samples,
            scheduler=_scheduler(scheduler, max_iterations, grace_period),
            search_alg=BasicVariantGenerator(random_state=seed),
            reuse_actors=reuse_actors, max_concurrent_trials=max_concurrent),
        run_config=rtune.RunConfig(storage_path=storage_path or tempfile.mkdtemp(prefix="rs-tune-"),
                                   verbose=0, log_to_file=False, callbacks=[tally]),
    )
    # Without the per-trial files, Tune's ResultGrid warns once per trial that it cannot read
    # their metric history; the history is in ``tally``, so that warning is only noise.
    analysis_log = logging.getLogger("ray.tune.analysis.experiment_analysis")
    level = analysis_log.level
    analysis_log.setLevel(logging.ERROR)
    t0 = time.perf_counter()
    try:
        grid = tuner.fit()
    finally:
        analysis_log.setLevel(level)
    seconds = time.perf_counter() - t0
    errors = [str(r.error) for r in grid if r.error]
    per_trial = [{"config": tally.configs[t], "iterations": tally.iterations[t],
                  "best": tally.best[t]} for t in tally.best]
    if not per_trial:
        raise RuntimeError(f"every trial failed: {errors[:3]}")
    pick = max if mode == "max" else min
    best = pick(per_trial, key=lambda t: t["best"])
    return TuneResult(best["config"], best["best"], len(per_trial),
                      sum(t["iterations"] for t in per_trial), seconds, per_trial)
