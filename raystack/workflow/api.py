"""The Python API for writing workflows; it builds the IR (:mod:`raystack.workflow.ir`).

    wf = Workflow("demo")
    data = wf.step(load_csv, path="iris.csv")
    models = wf.map(train, over="model", items=["linear", "logistic"], data=data)
    best = wf.step(select_best, results=models)
    with wf.when(best["score"], ">=", 0.8):
        wf.step(deploy, model=best)
    with wf.otherwise():
        wf.step(report, text="too weak")
    wf.on_exit(cleanup, kind="always")
    ir = wf.build()

Passing a step's output (an :class:`Out`) as a parameter creates the edge. Step ids are
explicit (``id=``) or derived from content (function, parameters, conditions), never from
source line numbers.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
from typing import Any, Callable, Iterator, Sequence

from raystack.workflow.functions import (check_params, fn_path, has_side_effect, resolve,
                                         step_options)
from raystack.workflow.ir import (Condition, Loop, Ref, StepSpec, TuneSpec, WorkflowError,
                                  WorkflowIR, canonical_params, iter_refs, topo_order)


class Out:
    """A handle to a step's output (or an item of it) while building a workflow."""

    def __init__(self, step_id: str, key: str | int | None = None):
        self.step_id = step_id
        self.key = key

    @property
    def ref(self) -> Ref:
        return Ref(self.step_id, self.key)

    def __getitem__(self, key: str | int) -> "Out":
        if self.key is not None:
            raise WorkflowError(self.step_id, "only one level of item selection is supported")
        return Out(self.step_id, key)

    def __repr__(self) -> str:
        return f"Out({self.step_id!r}, {self.key!r})"


def step(fn: Callable | None = None, **options: Any):
    """Decorator giving a function default step options (retries, timeout_s, resources,
    ``side_effect=True`` for a function that changes the world outside the run: it is then
    never served from the cache)."""
    def wrap(f: Callable) -> Callable:
        f.__raystack_step_options__ = dict(options)  # type: ignore[attr-defined]
        return f
    return wrap(fn) if fn is not None else wrap


def _to_ir_value(v: Any) -> Any:
    if isinstance(v, Out):
        return v.ref
    if isinstance(v, dict):
        return {k: _to_ir_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_to_ir_value(x) for x in v]
    return v


class Workflow:
    """Builder for one workflow. Methods add steps; :meth:`build` returns the validated IR."""

    def __init__(self, name: str, description: str = ""):
        self.name = name
        self.description = description
        self._steps: list[StepSpec] = []
        self._ids: set[str] = set()
        self._fns: dict[str, Callable] = {}
        self._when: list[Condition] = []
        self._last_when: list[Condition] | None = None
        self._group: str | None = None

    # -- steps -------------------------------------------------------------------------------
    def step(self, fn: Callable, *, id: str | None = None, after: Sequence[Out | str] = (),
             retries: int | None = None, timeout_s: float | None = None,
             resources: dict[str, float] | None = None, cache: bool | None = None,
             ignore: Sequence[str] = (), description: str = "", side_effect: bool = False,
             tune: TuneSpec | None = None, span: str = "", args: dict[str, Any] | None = None,
             passthrough: str | None = None, **params: Any) -> Out:
        """Add a step calling ``fn(**params)``; returns a handle to its output.

        ``tune``: search some parameters with Ray Tune and keep the best trial's output.
        ``args``: parameters whose names are also step options (e.g. the elastic part's
        ``resources`` config section), passed to the function, not to the runner.
        ``passthrough``: inside ``when(...)``, the parameter whose input becomes this step's
        output when the condition is false, so the steps after it run either way (a transform
        applied only when needed: ``wf.step(impute, data=raw, passthrough="data")``).
        """
        return Out(self._add(fn, id=id, after=after, retries=retries, timeout_s=timeout_s,
                             resources=resources, cache=cache, ignore=ignore,
                             description=description, params={**(args or {}), **params},
                             side_effect=side_effect, tune=tune, span=span, passthrough=passthrough))

    def map(self, fn: Callable, items: Sequence[Any], *, over: str, id: str | None = None,
            **kwargs: Any) -> list[Out]:
        """Fan out: one step per item, the item passed as parameter ``over``."""
        name = id or getattr(fn, "__name__", "map")
        outs = []
        prev = self._group
        self._group = f"map:{name}"
        try:
            for i, item in enumerate(items):
                sid = f"{id}[{i}]" if id else None
                outs.append(self.step(fn, id=sid, **{over: item}, **kwargs))
        finally:
            self._group = prev
        return outs

    def loop(self, fn: Callable, *, max_iterations: int, carry: str | None = None,
             until: tuple[Any, ...] = (None, "truthy", None), id: str | None = None,
             **kwargs: Any) -> Out:
        """A bounded loop: run ``fn`` again (its output fed to ``carry``) until
        ``until = (key, op, value)`` holds on the output, at most ``max_iterations`` times."""
        if max_iterations < 1:
            raise WorkflowError(id or "", f"max_iterations must be >= 1, got {max_iterations}")
        key, op, value = (tuple(until) + (None, None, None))[:3]
        lp = Loop(max_iterations=int(max_iterations), carry=carry, until_key=key,
                  until_op=op or "truthy", until_value=value)
        opts = {k: kwargs.pop(k) for k in list(kwargs) if k in _OPTION_NAMES}
        args = kwargs.pop("args", None) or {}
        return Out(self._add(fn, id=id, loop=lp, params={**args, **kwargs}, **opts))

    def on_exit(self, fn: Callable, *, kind: str = "always", id: str | None = None,
                span: str = "", args: dict[str, Any] | None = None, **params: Any) -> Out:
        """An exit handler run after the main graph: ``always``, on ``failure`` or ``success``.

        A parameter named ``workflow_status`` receives "succeeded" or "failed".
        """
        if kind not in ("always", "failure", "success"):
            raise WorkflowError(id or "", f"exit kind {kind!r}; expected always|failure|success")
        return Out(self._add(fn, id=id, exit=kind, params={**(args or {}), **params}, span=span))

    # -- constructs --------------------------------------------------------------------------
    @contextlib.contextmanager
    def when(self, out: Out, op: str = "truthy", value: Any = None,
             negate: bool = False) -> Iterator[None]:
        """Steps added inside run only if ``out <op> value`` holds at run time (with
        ``negate``: only if it does not)."""
        cond = Condition(out.ref, op, value, negate)
        self._when.append(cond)
        try:
            yield
        finally:
            self._when.pop()
            self._last_when = self._when + [cond]

    @contextlib.contextmanager
    def otherwise(self) -> Iterator[None]:
        """Steps added inside run only if the condition of the ``when`` just closed is false."""
        if not self._last_when:
            raise WorkflowError("", "otherwise() must follow a when() block")
        last = self._last_when[-1]
        neg = Condition(last.ref, last.op, last.value, negate=not last.negate)
        self._when.append(neg)
        try:
            yield
        finally:
            self._when.pop()
            self._last_when = None

    @contextlib.contextmanager
    def concurrent(self, name: str = "group") -> Iterator[None]:
        """Mark steps added inside as one concurrent group (they run at once when ready)."""
        prev = self._group
        self._group = f"concurrent:{name}"
        try:
            yield
        finally:
            self._group = prev

    # -- build -------------------------------------------------------------------------------
    @property
    def functions(self) -> dict[str, Callable]:
        """``module:qualname`` -> function, for the runner (covers unimportable functions)."""
        return dict(self._fns)

    def steps(self) -> list[StepSpec]:
        """The steps added so far, in order."""
        return list(self._steps)

    @contextlib.contextmanager
    def group(self, name: str) -> Iterator[None]:
        """Steps added inside belong to the construct ``name`` (``map:x``, ``concurrent:y``)."""
        prev = self._group
        self._group = name
        try:
            yield
        finally:
            self._group = prev

    def build(self, validate_ir: bool = True, allow: Sequence[str] = ()) -> WorkflowIR:
        """The IR of the workflow; validated (cycles, inputs, types) unless told otherwise."""
        ir = WorkflowIR(self.name, [s for s in self._steps], description=self.description,
                        functions=dict(self._fns))
        if validate_ir:
            validate(ir, allow=allow)
        return ir

    def run(self, config: Any = None, *, local: bool = False, store: str | None = None,
            cache: bool | None = None, address: str | None = None, progress: bool | None = None):
        """Build, validate and run the workflow; returns the runtime's
        :class:`~raystack.runtime.result.Result` (part ``"workflow"``: step counts and seconds
        in ``metrics``, one ``history`` row per step, the store and output files in
        ``artifacts``).

        ``config``: a :class:`~raystack.workflow.config.WorkflowConfig`, a dict of its fields
        or a YAML path (validated first). On Ray (connecting as ``address`` or the config
        says, else the embedded local cluster) unless ``local``: then in this process.
        ``store`` overrides the config's store; ``cache=False`` runs without one.
        """
        from raystack.config import config_to_dict, load_config
        from raystack.runtime.registry import resolve as resolve_name
        from raystack.workflow.config import WorkflowConfig
        from raystack.workflow.engine import run_local
        from raystack.workflow.result import workflow_result
        cfg = load_config(WorkflowConfig, config)
        ir = self.build(allow=cfg.allow_modules)
        use_cache = cfg.cache if cache is None else cache
        st = cfg.open_store(store) if use_cache else None
        ctx = cfg.context(self.name)
        if local:
            rep = run_local(ir, self.functions, st, allow=cfg.allow_modules, context=ctx)
        else:
            import ray
            if not ray.is_initialized():
                from raystack.cluster import connect
                connect(address or cfg.address)
            runner = resolve_name(WORKFLOW_RUNNER)   # the actors' runner, named (layering)
            rep = runner(ir, functions=self.functions, store=st,
                         progress=cfg.progress if progress is None else progress,
                         split_budget=cfg.split_budget, max_runners=cfg.max_runners,
                         eviction=cfg.eviction, allow=cfg.allow_modules, context=ctx)
        return workflow_result(rep, ir, config_to_dict(cfg))

    def _add(self, fn: Callable, *, id: str | None, params: dict[str, Any],
             after: Sequence[Out | str] = (), retries: int | None = None,
             timeout_s: float | None = None, resources: dict[str, float] | None = None,
             cache: bool | None = None, ignore: Sequence[str] = (), description: str = "",
             loop: Loop | None = None, exit: str | None = None, side_effect: bool = False,
             tune: TuneSpec | None = None, span: str = "", passthrough: str | None = None) -> str:
        if not callable(fn):
            raise WorkflowError(id or "", f"a step needs a function, got {fn!r}")
        opts = step_options(fn)
        path = fn_path(fn)
        self._fns[path] = fn
        ir_params = {k: _to_ir_value(v) for k, v in params.items()}
        after_ids = [a.step_id if isinstance(a, Out) else str(a) for a in after]
        when = list(self._when) if exit is None else []
        if id is None:
            content = "|".join([path, canonical_params(ir_params), ",".join(after_ids),
                                repr(when), repr(loop), str(exit), repr(tune)])
            base = f"{getattr(fn, '__name__', 'step')}-{hashlib.sha256(content.encode()).hexdigest()[:8]}"
            sid, n = base, 2
            while sid in self._ids:
                sid, n = f"{base}-{n}", n + 1
        else:
            sid = str(id)
            if sid in self._ids:
                raise WorkflowError(sid, "duplicate step id")
        self._ids.add(sid)
        spec = StepSpec(
            id=sid, fn=path, params=ir_params, after=after_ids, when=when, loop=loop,
            exit=exit,  # type: ignore[arg-type]
            group=self._group,
            retries=int(retries if retries is not None else opts.get("retries", 0)),
            timeout_s=timeout_s if timeout_s is not None else opts.get("timeout_s"),
            resources=dict(resources if resources is not None else opts.get("resources", {})),
            cache=bool(cache if cache is not None else opts.get("cache", True)),
            ignore=list(ignore or opts.get("ignore", [])),
            description=description or (fn.__doc__ or "").strip().split("\n")[0],
            side_effect=bool(side_effect or opts.get("side_effect", False)), tune=tune, span=span,
            passthrough=passthrough)
        self._steps.append(spec)
        return sid


# the Ray runner lives in the actors layer; raystack/ names it and imports it only when a run starts
WORKFLOW_RUNNER = "raystack.actors.workflow.runner:run_workflow"
_OPTION_NAMES = ("after", "retries", "timeout_s", "resources", "cache", "ignore", "description",
                 "span", "passthrough")


def validate(ir: WorkflowIR, functions: dict[str, Callable] | None = None,
             allow: Sequence[str] = ()) -> list[str]:
    """Check the IR before anything runs; returns the topological order.

    Errors (WorkflowError, naming the step): duplicate ids, a dependency cycle, an input from
    an unknown step, a condition on a step that is not upstream, an exit handler used as an
    input, a function outside the catalog and ``allow`` (see :func:`functions.resolve`), an
    unknown/missing/reserved parameter or one of the wrong type, a part step's config field
    that its part rejects, a bad loop, retry or tune, a passthrough without a condition or an
    input to hand on. A step whose function is marked as a
    side effect is marked so here too, whatever the IR said.
    """
    seen: set[str] = set()
    for s in ir.steps:
        if s.id in seen:
            raise WorkflowError(s.id, "duplicate step id")
        seen.add(s.id)
    order = topo_order(ir)
    by_id = ir.by_id()
    for s in ir.steps:
        for d in s.deps():
            if by_id[d].exit is not None and s.exit is None:
                raise WorkflowError(s.id, f"uses exit handler {d!r} as an input")
        if s.retries < 0:
            raise WorkflowError(s.id, f"retries must be >= 0, got {s.retries}")
        if s.timeout_s is not None and s.timeout_s <= 0:
            raise WorkflowError(s.id, f"timeout_s must be > 0, got {s.timeout_s}")
        for k, v in s.resources.items():
            if not isinstance(v, (int, float)) or v < 0:
                raise WorkflowError(s.id, f"resource {k!r} must be a number >= 0, got {v!r}")
        if s.loop is not None and s.loop.max_iterations < 1:
            raise WorkflowError(s.id, "loop.max_iterations must be >= 1")
        if s.passthrough is not None:
            if not s.when:
                raise WorkflowError(s.id, "passthrough needs a 'when' condition (it says what a skipped step hands on)")
            held = s.params.get(s.passthrough)
            if not isinstance(held, Ref) or held.key is not None:
                raise WorkflowError(s.id, f"passthrough {s.passthrough!r} must name a parameter holding one "
                                    "whole upstream output")
        try:
            fn = resolve(s.fn, ir.registry(functions), allow)
        except WorkflowError as e:
            raise WorkflowError(s.id, e.message) from None
        if has_side_effect(fn):
            s.side_effect = True
        check_params(s.id, fn, s.params)
        sig = inspect.signature(fn).parameters
        if s.loop is not None and s.loop.carry is not None:
            if s.loop.carry not in sig:
                raise WorkflowError(s.id, f"loop carry {s.loop.carry!r} is not a parameter")
        if s.tune is not None:
            unknown = [p for p in s.tune.space if p not in sig]
            if unknown:
                raise WorkflowError(s.id, f"tune space names {unknown}, not parameters of "
                                    f"{fn.__qualname__}")
            if s.side_effect:
                raise WorkflowError(s.id, "a step with side effects cannot be tuned")
        check = step_options(fn).get("check")
        if check is not None:  # e.g. a part step: its config dataclass validates the fields
            try:
                check({k: v for k, v in s.params.items() if not any(True for _ in iter_refs(v))})
            except (ValueError, TypeError) as e:
                raise WorkflowError(s.id, str(e)) from None
    return order
