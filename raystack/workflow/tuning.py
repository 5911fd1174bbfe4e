"""A tuned step's search, without Ray: the trial configs of a :class:`TuneSpec` and an
in-process search over them (used by the local engine and dry runs; the Ray runner hands the
same configs to Ray Tune, see ``raystack.actors.workflow.tune``).
"""

from __future__ import annotations

import inspect
import itertools
import math
import random
from dataclasses import dataclass
from typing import Any, Callable

from raystack.workflow.ir import TuneSpec, WorkflowError

TUNE_SEED = 0


@dataclass(frozen=True)
class TrialOutcome:
    config: dict[str, Any]
    metric: float


def metric_of(output: Any, metric: str) -> float:
    """The named metric of a step output (a number, a dict, or an artifact's metrics)."""
    if isinstance(output, (int, float)) and not isinstance(output, bool):
        return float(output)
    try:
        return float(output[metric])
    except (KeyError, TypeError, IndexError) as e:
        raise WorkflowError("", f"tuned step's output has no metric {metric!r}") from e


def integer_params(fn: Callable | None) -> set[str]:
    """The parameters of ``fn`` annotated as integers (``int``, ``Optional[int]``): a range over
    one is sampled in whole numbers (a float k or epoch count fails in the step, or means nothing)."""
    if fn is None:
        return set()
    out = set()
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):       # (a builtin, or a callable without a signature)
        return out
    for name, p in params.items():
        ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", str(p.annotation))
        if ann in ("int", "Optional[int]", "int | None", "None | int"):
            out.add(name)
    return out


def trial_configs(spec: TuneSpec, seed: int = TUNE_SEED, integers: set[str] = frozenset()) -> list[dict[str, Any]]:
    """Grid over list-valued parameters; ranges ({"min", "max"}, optionally "log": true) are
    sampled, in whole numbers for the parameters named in ``integers``. ``trials`` > 0 caps (or,
    with ranges, sets) the number of configs."""
    rng = random.Random(seed)
    grid = {k: v for k, v in spec.space.items() if isinstance(v, list)}
    ranges = {k: v for k, v in spec.space.items() if isinstance(v, dict)}
    bad = [k for k, v in spec.space.items() if not isinstance(v, (list, dict))]
    if bad:
        raise WorkflowError("", f"tune space {bad}: give a list of values or {{min, max}}")
    combos = [dict(zip(grid, vals)) for vals in itertools.product(*grid.values())] or [{}]
    n = spec.trials or len(combos)
    if not ranges:
        return combos[:n] if spec.trials else combos
    out = []
    for i in range(max(n, 1)):
        c = dict(combos[i % len(combos)])
        for k, r in ranges.items():
            lo, hi = float(r["min"]), float(r["max"])
            if r.get("log"):
                c[k] = math.exp(rng.uniform(math.log(lo), math.log(hi)))
            else:
                c[k] = rng.uniform(lo, hi)
            if k in integers:
                c[k] = min(max(int(round(c[k])), math.ceil(lo)), math.floor(hi))
        out.append(c)
    return out


def search_local(fn: Callable, kwargs: dict[str, Any], spec: TuneSpec,
                 call: Callable[[Callable, dict], Any] | None = None) -> tuple[Any, dict]:
    """Run every trial config in this process; (best output, {"best_config", "trials"})."""
    call = call or (lambda f, kw: f(**kw))
    best: tuple[float, Any, dict] | None = None
    trials = []
    for cfg in trial_configs(spec, integers=integer_params(fn)):
        out = call(fn, {**kwargs, **cfg})
        m = metric_of(out, spec.metric)
        trials.append(TrialOutcome(cfg, m))
        if best is None or (m > best[0] if spec.mode == "max" else m < best[0]):
            best = (m, out, cfg)
    assert best is not None
    return best[1], {"best_config": best[2], "best_metric": best[0], "trials": len(trials)}
