"""Tune any step or sub-workflow with Ray Tune (ASHA and other schedulers, actor reuse).

``tune(target, search_space, metric, mode, scheduler, num_samples, resources, ...)`` passes
through what ``ray.tune.Tuner`` takes (``search_alg``, ``scheduler``, ``callbacks``,
``storage_path``, ``name``, resources per trial, and any other ``TuneConfig`` / ``RunConfig``
field through ``tune_config`` / ``run_config``) and returns Tune's own ``ResultGrid`` beside
the best config. It changes no process-wide setting (no environment variables, no loggers'
levels): Tune writes its usual per-trial results under ``storage_path`` (Ray's default when
not given).

- a step function returning a number or a dict of metrics is one trial per config;
- a generator function yielding metric dicts (one per training iteration) lets schedulers
  such as ASHA stop weak trials early;
- a Workflow or WorkflowIR is run in the trial (in-process) with the config applied as
  ``"<step id>.<param>"`` overrides; the metric is read from ``output_step``'s output.
"""

from __future__ import annotations

import copy
import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import ray
from ray import tune as rtune
from ray.tune import ResultGrid
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, TrialScheduler
from ray.tune.search import BasicVariantGenerator, SearchAlgorithm, Searcher

from raystack.actors.workflow.runner import _pickle_by_value_if_needed
from raystack.workflow.api import Workflow
from raystack.workflow.engine import run_local
from raystack.workflow.ir import TuneSpec, WorkflowError, WorkflowIR
from raystack.workflow.tuning import integer_params, metric_of, trial_configs


@dataclass
class TuneResult:
    """The outcome of a search."""

    best_config: dict[str, Any]
    best_metric: float
    trials: int
    iterations: int                  # training iterations reported over all trials
    seconds: float
    per_trial: list[dict[str, Any]] = field(default_factory=list)
    grid: ResultGrid | None = field(default=None, repr=False)   # Tune's own results


def _scheduler(scheduler: str | TrialScheduler, max_t: int, grace: int) -> TrialScheduler:
    if isinstance(scheduler, TrialScheduler):
        return scheduler
    if scheduler == "asha":
        return ASHAScheduler(max_t=max_t, grace_period=grace, reduction_factor=3)
    if scheduler == "fifo":
        return FIFOScheduler()
    raise WorkflowError("", f"unknown scheduler {scheduler!r}; expected 'asha', 'fifo' or a "
                        "ray.tune TrialScheduler")


def _quiet_loggers() -> list:
    """Logger callbacks that write nothing, for Tune's CSV and TensorBoard loggers: Tune adds
    its loggers only when none of each type is given, so passing these keeps those files off
    for one search without any process-wide setting. The JSON logger stays: the ResultGrid
    reads each trial's results from it."""
    from ray.tune.logger import CSVLoggerCallback, TBXLoggerCallback

    out = []
    for base in (CSVLoggerCallback, TBXLoggerCallback):
        quiet = type(f"Quiet{base.__name__}", (base,), {
            "__init__": lambda self: None, "log_trial_start": lambda self, trial: None,
            "log_trial_result": lambda self, iteration, trial, result: None,
            "log_trial_end": lambda self, trial, failed=False: None,
            "on_trial_result": lambda self, *a, **k: None, "on_trial_complete": lambda self, *a, **k: None,
            "on_trial_start": lambda self, *a, **k: None, "on_trial_error": lambda self, *a, **k: None,
            "on_experiment_end": lambda self, *a, **k: None, "setup": lambda self, *a, **k: None})
        out.append(quiet())
    return out


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
         search_alg: Searcher | SearchAlgorithm | None = None,
         callbacks: Sequence[rtune.Callback] = (), storage_path: str | None = None,
         name: str | None = None, tune_config: dict[str, Any] | None = None,
         run_config: dict[str, Any] | None = None, trial_logs: bool = True) -> TuneResult:
    """Run a Ray Tune search over ``target``; returns the best config, accounting and the
    ``ResultGrid``.

    ``resources`` per trial, e.g. ``{"cpu": 1}`` (0 CPU is not allowed by Tune: use 0.01).
    ``search_alg``: any Tune searcher (default: a seeded random/grid generator, so schedulers
    can be compared on the same trials). ``scheduler``: "asha", "fifo" or a TrialScheduler.
    ``tune_config`` / ``run_config``: further ``TuneConfig`` / ``RunConfig`` fields.
    ``trial_logs=False``: Tune writes no per-trial CSV or TensorBoard files for this search
    (the JSON results the ResultGrid reads are kept).
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
    tally = _Tally(metric, mode)
    if search_alg is None:  # Tune ignores max_concurrent_trials for a generator: give it here
        search_alg = BasicVariantGenerator(random_state=seed, max_concurrent=max_concurrent or 0)
        max_concurrent = None
    tc = dict(metric=metric, mode=mode, num_samples=num_samples,
              scheduler=_scheduler(scheduler, max_iterations, grace_period),
              search_alg=search_alg, reuse_actors=reuse_actors,
              max_concurrent_trials=max_concurrent)
    tc.update(tune_config or {})
    rc = dict(storage_path=storage_path, name=name, verbose=0, log_to_file=False,
              callbacks=[tally, *callbacks, *([] if trial_logs else _quiet_loggers())])
    rc.update(run_config or {})
    tuner = rtune.Tuner(rtune.with_resources(trainable, res), param_space=search_space,
                        tune_config=rtune.TuneConfig(**tc), run_config=rtune.RunConfig(**rc))
    t0 = time.perf_counter()
    grid = tuner.fit()
    seconds = time.perf_counter() - t0
    errors = [str(r.error) for r in grid if r.error]
    per_trial = [{"config": tally.configs[t], "iterations": tally.iterations[t],
                  "best": tally.best[t]} for t in tally.best]
    if not per_trial:
        raise RuntimeError(f"every trial failed: {errors[:3]}")
    pick = max if mode == "max" else min
    best = pick(per_trial, key=lambda t: t["best"])
    return TuneResult(best["config"], best["best"], len(per_trial),
                      sum(t["iterations"] for t in per_trial), seconds, per_trial, grid)


def search_step(fn: Callable, kwargs: dict[str, Any], spec: TuneSpec,
                resources: dict[str, float] | None = None) -> tuple[Any, dict]:
    """A workflow step's ``tune`` construct on Ray Tune: every trial config of ``spec``, the
    step called with it; returns (the best trial's output, {"best_config", ...})."""
    configs = trial_configs(spec, integers=integer_params(fn))
    keys = sorted({k for c in configs for k in c})
    grid_space = {"trial": rtune.grid_search(list(range(len(configs))))}

    def trial(trial: int, **fixed) -> dict:
        out = fn(**fixed, **configs[trial])
        return {spec.metric: metric_of(out, spec.metric)}
    res = tune(trial, grid_space, spec.metric, mode=spec.mode,
               scheduler="fifo" if spec.scheduler == "fifo" else "asha", num_samples=1,
               resources=resources or {"cpu": 0.5}, fixed=kwargs, trial_logs=False)
    best = configs[res.best_config["trial"]]
    out = fn(**kwargs, **best)  # the best trial's output, made here to hand downstream
    return out, {"best_config": best, "best_metric": res.best_metric, "trials": res.trials,
                 "searched": keys}
