"""Executing one step (cache lookup, run-time conditions, bounded loops, tuning, timeouts) and a
local in-process executor. The Ray runner (``actors.workflow``) calls :func:`execute_step`
inside each Ray task, so the semantics are the same in both.

Side-effect steps (deploy, notify, cleanup, files written for people) always run: their
effect is outside the store, so a stored record of an earlier run proves nothing. A cached
output holding typed artifacts is served only while their files are intact.
"""

from __future__ import annotations

import inspect
import logging
import signal
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Sequence

from raystack.workflow.cache import cache_key
from raystack.workflow.codehash import code_fingerprint
from raystack.workflow.context import RUN_CONTEXT_PARAM, STATUS_PARAM, RunContext, new_context
from raystack.workflow.formats import UnsafeArtifact, UnstorableOutput, output_digest
from raystack.workflow.functions import has_side_effect, resolve
from raystack.workflow.ir import (StepSpec, WorkflowError, WorkflowIR, canonical_params,
                                  iter_refs, map_refs, topo_order)
from raystack.workflow.store import ArtifactStore, CorruptArtifact
from raystack.workflow.tuning import search_local

log = logging.getLogger(__name__)

# A tuned step's search: (fn, kwargs, spec, call) -> (best output, tune info).
Tuner = Callable[..., tuple[Any, dict]]


class StepTimeout(Exception):
    """A step ran past its ``timeout_s``."""


class StepFailed(RuntimeError):
    """A step raised (after its retries); carries the step id and the original error text."""

    def __init__(self, step: str, error: str):
        self.step = step
        self.error = error
        super().__init__(f"step {step!r} failed: {error}")

    def __reduce__(self):
        return (StepFailed, (self.step, self.error))


@dataclass
class StepResult:
    """What a step hands to its dependents: status, cache key, output digest, maybe the value."""

    step: str
    status: Literal["done", "cached", "skipped"]
    key: str | None = None
    digest: str | None = None
    value: Any = field(default=None, repr=False)
    has_value: bool = False
    seconds: float = 0.0
    cost_s: float = 0.0        # recompute cost: own seconds plus upstream cost
    iterations: int = 0
    handed_on: str | None = None   # skipped, its ``passthrough`` input handed on: that step's id

    @property
    def blocks(self) -> bool:
        """Whether dependents are skipped too: a skipped step that handed nothing on."""
        return self.status == "skipped" and self.handed_on is None

    def load(self, store: ArtifactStore | None) -> Any:
        """The output value (read from the store when not carried; None for a skipped step
        that handed nothing on)."""
        if self.blocks:
            return None
        if self.has_value:
            return self.value
        if store is None or self.key is None:
            raise WorkflowError(self.step, "output not available (no artifact store)")
        return store.get(self.key)


def _pick(value: Any, key: Any) -> Any:
    if key is None:
        return value
    try:
        return value[key]
    except (KeyError, IndexError, TypeError) as e:
        raise WorkflowError("", f"output has no item {key!r}: {e}") from e


def step_key(spec: StepSpec, inputs: dict[str, StepResult]) -> str | None:
    """The cache key of ``spec`` given its inputs' results; None when an input has no digest."""
    digests = []
    ignored = set(spec.ignore)
    refs = [(name, r) for name, v in spec.params.items() if name not in ignored
            for r in iter_refs(v)] + [("$when", c.ref) for c in spec.when]
    for name, r in refs:
        d = inputs[r.step].digest
        if d is None:
            return None
        digests.append(f"{name}:{r.step}:{r.key}:{d}")
    params = (canonical_params(spec.params, spec.ignore) + "|" + repr(spec.loop) + "|"
              + repr(spec.tune))
    return cache_key(spec.code_hash or spec.fn, params, digests)


def call_with_timeout(fn: Callable, kwargs: dict, timeout_s: float | None) -> Any:
    """Call ``fn(**kwargs)``, raising StepTimeout after ``timeout_s`` seconds."""
    if not timeout_s:
        return fn(**kwargs)
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        def on_alarm(signum, frame):
            raise StepTimeout(f"timed out after {timeout_s} s")
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            return fn(**kwargs)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    box: dict[str, Any] = {}

    def target():
        try:
            box["v"] = fn(**kwargs)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            box["e"] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise StepTimeout(f"timed out after {timeout_s} s")
    if "e" in box:
        raise box["e"]
    return box["v"]


def runner_kwargs(fn: Callable, ctx: RunContext | None, status: str = "") -> dict[str, Any]:
    """The reserved parameters ``fn`` declares, filled by the runner (never by a workflow)."""
    params = inspect.signature(fn).parameters
    out: dict[str, Any] = {}
    if RUN_CONTEXT_PARAM in params and ctx is not None:
        out[RUN_CONTEXT_PARAM] = ctx.with_status(status) if status else ctx
    if STATUS_PARAM in params and status:
        out[STATUS_PARAM] = status
    return out


def cacheable(spec: StepSpec, fn: Callable | None = None) -> bool:
    """Whether the step's output may be served from (and written to) the store."""
    return spec.cache and not spec.side_effect and not (fn is not None and has_side_effect(fn))


def _call(spec: StepSpec, fn: Callable, kwargs: dict, tuner: Tuner | None) -> tuple[Any, int]:
    """Call the step (tuned, looped or once); returns (output, iterations)."""
    def once(f: Callable, kw: dict) -> Any:
        return call_with_timeout(f, kw, spec.timeout_s)

    if spec.tune is not None:
        out, info = (tuner or search_local)(fn, kwargs, spec.tune, once)
        if isinstance(out, dict):
            out = {**out, "tune": info}
        return out, info.get("trials", 1)
    if spec.loop is None:
        return once(fn, kwargs), 1
    out, iterations = None, 0
    for iterations in range(1, spec.loop.max_iterations + 1):
        out = once(fn, kwargs)
        if spec.loop.done(out):
            break
        if spec.loop.carry:
            kwargs[spec.loop.carry] = out
    return out, iterations


def _skipped(spec: StepSpec, inputs: dict[str, StepResult]) -> StepResult:
    """A step whose condition is false: skipped; with ``passthrough``, the named parameter's
    input handed on as its output (same value, key and digest), so its dependents still run."""
    if spec.passthrough is None:
        return StepResult(spec.id, "skipped")
    src = inputs[spec.params[spec.passthrough].step]   # a whole upstream output (validated)
    return StepResult(spec.id, "skipped", src.key, src.digest, src.value, src.has_value, cost_s=src.cost_s,
                      handed_on=src.step)


def execute_step(spec: StepSpec, fn: Callable, inputs: dict[str, StepResult],
                 store: ArtifactStore | None, *, reuse: int = 1,
                 extra: dict[str, Any] | None = None, context: RunContext | None = None,
                 tuner: Tuner | None = None) -> StepResult:
    """Run one step given its upstream results: skip, hit the cache, or execute and store.

    Skips when an input or condition step was skipped or a ``when`` condition is false;
    returns a cached result (value not loaded) when the key is stored and intact and the step
    has no side effect; otherwise calls the function (tuned, or looping while the loop's
    condition is unmet) and stores the output when it fits a data format.
    """
    if any(inputs[d].blocks for d in spec.deps() if d in inputs):
        return StepResult(spec.id, "skipped")
    missing = [d for d in spec.deps() if d not in inputs]
    if missing:
        raise StepFailed(spec.id, f"inputs {missing} did not produce a result")
    for c in spec.when:
        x = _pick(inputs[c.ref.step].load(store), c.ref.key)
        if not c.evaluate(x):
            return _skipped(spec, inputs)
    upstream = sum(inputs[d].cost_s for d in spec.deps() if d in inputs)
    use_cache = store is not None and cacheable(spec, fn)
    key = step_key(spec, inputs) if store is not None else None
    if key is not None and use_cache:
        m = store.meta(key)
        if m is not None:
            if store.verify(key):
                return StepResult(spec.id, "cached", key, m.digest, cost_s=m.compute_s + upstream)
            store.delete(key)  # corrupted, unsafe or its files are gone: recompute
    try:
        kwargs = map_refs(spec.params, lambda r: _pick(inputs[r.step].load(store), r.key))
    except (CorruptArtifact, UnsafeArtifact) as e:
        raise StepFailed(spec.id, f"input artifact refused: {e}") from e
    kwargs.update(runner_kwargs(fn, context.for_step(spec.id, key) if context else None))
    kwargs.update(extra or {})
    t0 = time.perf_counter()
    out, iterations = _call(spec, fn, kwargs, tuner)
    seconds = time.perf_counter() - t0
    digest = None
    if use_cache and key is not None:
        try:
            digest = store.put(key, spec.id, out, compute_s=seconds, upstream_cost_s=upstream,
                               reuse=reuse).digest
        except UnstorableOutput as e:
            log.warning("step %s: %s", spec.id, e)
    if digest is None and store is not None:
        digest = output_digest(out)
    return StepResult(spec.id, "done", key, digest, out, True, seconds, seconds + upstream,
                      iterations)


@dataclass
class RunReport:
    """The outcome of a workflow run."""

    name: str
    status: Literal["succeeded", "failed"]
    results: dict[str, StepResult] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    store: ArtifactStore | None = field(default=None, repr=False)
    exits: dict[str, StepResult] = field(default_factory=dict)  # exit handlers that ran
    context: RunContext | None = field(default=None, repr=False)

    def _with(self, status: str) -> list[str]:
        return [k for k, r in self.results.items() if r.status == status]

    @property
    def executed(self) -> list[str]:
        """Steps whose function ran in this run (cache misses), in completion order."""
        return self._with("done")

    @property
    def cached(self) -> list[str]:
        return self._with("cached")

    @property
    def skipped(self) -> list[str]:
        return self._with("skipped")

    def output(self, step_id: str) -> Any:
        """A step's output value (loaded from the store if needed)."""
        if step_id in self.exits:
            return self.exits[step_id].load(self.store)
        if step_id not in self.results:
            raise KeyError(f"step {step_id!r} has no result in this run")
        return self.results[step_id].load(self.store)


def with_code_hashes(ir: WorkflowIR, functions: dict[str, Callable]) -> WorkflowIR:
    """A copy of ``ir`` whose steps carry the fingerprint of the code their function reaches,
    computed here from the functions that will run (never taken from an IR file)."""
    hashes = {path: code_fingerprint(fn) for path, fn in functions.items()
              if any(s.fn == path for s in ir.steps)}
    return replace(ir, steps=[replace(s, code_hash=hashes.get(s.fn, "")) for s in ir.steps])


def children_count(ir: WorkflowIR) -> dict[str, int]:
    """How many steps consume each step (its downstream reuse)."""
    n = {s.id: 0 for s in ir.steps}
    for s in ir.steps:
        for d in s.deps():
            n[d] = n.get(d, 0) + 1
    return n


def run_local(ir: WorkflowIR, functions: dict[str, Callable] | None = None,
              store: ArtifactStore | None = None, *, allow: Sequence[str] = (),
              context: RunContext | None = None, tuner: Tuner | None = None) -> RunReport:
    """Run a workflow in this process, in dependency order (dry runs, Tune trials, tests).

    ``allow``: modules (beyond the catalog) whose functions the IR may name. ``context``: the
    run's scratch space and output directory (default: a fresh temporary scratch directory).
    """
    from raystack.workflow.api import validate
    t0 = time.perf_counter()
    validate(ir, functions, allow=allow)
    functions = ir.registry(functions)
    functions = {s.fn: resolve(s.fn, functions, allow) for s in ir.steps}
    ir = with_code_hashes(ir, functions)
    ctx = context or new_context(ir.name)
    by_id = ir.by_id()
    order = topo_order(ir)
    reuse = children_count(ir)
    results: dict[str, StepResult] = {}
    failed: dict[str, str] = {}
    for sid in order:
        spec = by_id[sid]
        if spec.exit is not None:
            continue
        if any(d in failed or d not in results for d in spec.deps()):
            continue
        fn = resolve(spec.fn, functions, allow)
        attempts = spec.retries + 1
        for attempt in range(attempts):
            try:
                results[sid] = execute_step(spec, fn, results, store, reuse=reuse[sid],
                                            context=ctx, tuner=tuner)
                break
            except Exception as e:  # noqa: BLE001 - recorded as the step's failure
                if attempt == attempts - 1:
                    failed[sid] = f"{type(e).__name__}: {e}"
        if failed:
            break
    status = "failed" if failed else "succeeded"
    exits: dict[str, StepResult] = {}
    for spec in ir.exit_steps():
        if spec.exit == "always" or (spec.exit == "failure") == bool(failed):
            fn = resolve(spec.fn, functions, allow)
            try:
                exits[spec.id] = execute_step(spec, fn, results, None,
                                              extra=runner_kwargs(fn, ctx.for_step(spec.id, None), status),
                                              context=ctx)
            except Exception as e:  # noqa: BLE001
                failed[spec.id] = f"{type(e).__name__}: {e}"
    return RunReport(ir.name, status, results, failed, time.perf_counter() - t0, store, exits,
                     ctx)
