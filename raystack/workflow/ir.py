"""The engine-neutral workflow IR: a typed, versioned graph of steps, built before anything runs.

A workflow is a list of :class:`StepSpec`. A step calls one function (``module:qualname``)
with JSON parameters; a parameter value may hold references to other steps' outputs
(``{"$ref": step_id, "$key": optional item}``), which are the data edges. Control lives on the
step: ``when`` (conditions on upstream outputs decided at run time), ``loop`` (a bounded
while/until), ``exit`` (an exit handler run after the main graph: always / on failure /
on success), ``group`` (the construct a step came from: ``map:<name>``, ``concurrent:<name>``),
``tune`` (search the step's parameters with Ray Tune and keep the best trial's output).
``side_effect`` marks a step that changes the world outside the run (deploy, delete, notify,
files written for people): such a step is never served from the cache. ``span`` records the
words of a plain-English request that produced the step. The IR round-trips through JSON and
YAML; :func:`raystack.workflow.api.validate` checks it before any run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Literal

from raystack.config import dump_yaml, load_yaml  # YAML whose exponent numbers (2e-4) read as numbers

IR_VERSION = 1
OPS = ("==", "!=", "<", "<=", ">", ">=", "truthy", "falsy")
ExitKind = Literal["always", "failure", "success"]


class WorkflowError(ValueError):
    """A workflow that cannot run: names the step and what is wrong."""

    def __init__(self, step: str, message: str):
        self.step = step
        self.message = message
        super().__init__(f"step {step!r}: {message}" if step else message)

    def __reduce__(self):
        return (type(self), (self.step, self.message))


@dataclass(frozen=True)
class Ref:
    """The output of ``step`` (or its item ``key`` when the output is a dict or list)."""

    step: str
    key: str | int | None = None

    def to_json(self) -> dict:
        d: dict[str, Any] = {"$ref": self.step}
        if self.key is not None:
            d["$key"] = self.key
        return d


@dataclass(frozen=True)
class Condition:
    """``ref <op> value``, evaluated at run time on the referenced output."""

    ref: Ref
    op: str = "truthy"
    value: Any = None
    negate: bool = False

    def evaluate(self, x: Any) -> bool:
        """True when the condition holds for the resolved output ``x``."""
        op = self.op
        if op == "truthy":
            r = bool(x)
        elif op == "falsy":
            r = not bool(x)
        elif op == "==":
            r = x == self.value
        elif op == "!=":
            r = x != self.value
        elif op == "<":
            r = x < self.value
        elif op == "<=":
            r = x <= self.value
        elif op == ">":
            r = x > self.value
        elif op == ">=":
            r = x >= self.value
        else:
            raise WorkflowError("", f"unknown condition op {op!r}; expected one of {OPS}")
        return (not r) if self.negate else r


@dataclass(frozen=True)
class Loop:
    """Re-run the step, feeding its output into parameter ``carry``, until ``until`` holds on
    the output (``until_key`` selects an item of it), at most ``max_iterations`` times."""

    max_iterations: int
    carry: str | None = None
    until_key: str | int | None = None
    until_op: str = "truthy"
    until_value: Any = None

    def done(self, output: Any) -> bool:
        """True when the loop's stop condition holds for this iteration's output."""
        x = output[self.until_key] if self.until_key is not None else output
        return Condition(Ref("_"), self.until_op, self.until_value).evaluate(x)


@dataclass(frozen=True)
class TuneSpec:
    """Search ``space`` (parameter -> list of values, or {"min", "max"} for a range) with
    ``trials`` trials, keeping the trial whose output's ``metric`` is best by ``mode``."""

    space: dict[str, Any]
    metric: str
    mode: str = "max"
    trials: int = 0                 # 0: one trial per grid point
    scheduler: str = "fifo"         # fifo | asha

    def __post_init__(self) -> None:
        if self.mode not in ("max", "min"):
            raise WorkflowError("", f"tune.mode must be 'max' or 'min', got {self.mode!r}")
        if self.scheduler not in ("fifo", "asha"):
            raise WorkflowError("", f"tune.scheduler must be 'fifo' or 'asha', got {self.scheduler!r}")
        if not self.space:
            raise WorkflowError("", "tune.space must name at least one parameter")


@dataclass
class StepSpec:
    """One step of the IR."""

    id: str
    fn: str                                   # "module:qualname"
    params: dict[str, Any] = field(default_factory=dict)
    after: list[str] = field(default_factory=list)   # control-only dependencies
    when: list[Condition] = field(default_factory=list)
    loop: Loop | None = None
    exit: ExitKind | None = None
    group: str | None = None
    retries: int = 0
    timeout_s: float | None = None
    resources: dict[str, float] = field(default_factory=dict)
    cache: bool = True
    ignore: list[str] = field(default_factory=list)  # params left out of the cache key
    code_hash: str = ""
    description: str = ""
    side_effect: bool = False                 # changes the world: never served from the cache
    tune: TuneSpec | None = None
    span: str = ""                            # the request's words that produced this step
    # with ``when``: the parameter whose input is handed on, as this step's output, when the
    # condition is false ("if over 5% is missing, impute; then train" trains either way)
    passthrough: str | None = None

    def refs(self) -> list[Ref]:
        """Every data reference in the parameters and conditions."""
        out = list(iter_refs(self.params))
        out += [c.ref for c in self.when]
        return out

    def deps(self) -> list[str]:
        """Upstream step ids (data, condition and control edges), without duplicates."""
        seen: dict[str, None] = {}
        for r in self.refs():
            seen[r.step] = None
        for a in self.after:
            seen[a] = None
        return list(seen)


@dataclass
class WorkflowIR:
    """A whole workflow: named, versioned, a list of steps in build order."""

    name: str
    steps: list[StepSpec] = field(default_factory=list)
    version: int = IR_VERSION
    description: str = ""
    # Functions handed over as objects by the Python API that built this IR (the user's own
    # code). Never serialised: an IR read from a file names functions as text only.
    functions: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def registry(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The functions this IR may call without an import: its own, plus ``extra``."""
        return {**self.functions, **(extra or {})}

    def by_id(self) -> dict[str, StepSpec]:
        return {s.id: s for s in self.steps}

    def main_steps(self) -> list[StepSpec]:
        return [s for s in self.steps if s.exit is None]

    def exit_steps(self) -> list[StepSpec]:
        return [s for s in self.steps if s.exit is not None]

    def edges(self) -> list[tuple[str, str]]:
        return [(d, s.id) for s in self.steps for d in s.deps()]

    # -- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"version": self.version, "name": self.name, "description": self.description,
                "steps": [_step_to_dict(s) for s in self.steps]}

    @classmethod
    def from_dict(cls, d: dict) -> "WorkflowIR":
        if not isinstance(d, dict):
            raise WorkflowError("", f"a workflow IR must be a mapping, got {type(d).__name__}")
        ver = d.get("version", IR_VERSION)
        if ver != IR_VERSION:
            raise WorkflowError("", f"IR version {ver} is not supported (expected {IR_VERSION})")
        if "name" not in d:
            raise WorkflowError("", "IR field 'name' is missing")
        steps = [_step_from_dict(s) for s in d.get("steps", [])]
        return cls(name=d["name"], steps=steps, version=ver, description=d.get("description", ""))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=1)

    @classmethod
    def from_json(cls, text: str) -> "WorkflowIR":
        return cls.from_dict(json.loads(text))

    def to_yaml(self) -> str:
        return dump_yaml(self.to_dict(), sort_keys=False)

    @classmethod
    def from_yaml(cls, text: str) -> "WorkflowIR":
        return cls.from_dict(load_yaml(text))

    def digest(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()


# -- references inside parameter values ---------------------------------------------------
def is_ref(v: Any) -> bool:
    return isinstance(v, Ref) or (isinstance(v, dict) and "$ref" in v)


def as_ref(v: Any) -> Ref:
    return v if isinstance(v, Ref) else Ref(v["$ref"], v.get("$key"))


def iter_refs(v: Any) -> Iterator[Ref]:
    """Yield every reference inside a (nested) parameter value."""
    if is_ref(v):
        yield as_ref(v)
    elif isinstance(v, dict):
        for x in v.values():
            yield from iter_refs(x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from iter_refs(x)


def map_refs(v: Any, fn) -> Any:
    """Rebuild a parameter value with each reference replaced by ``fn(ref)``."""
    if is_ref(v):
        return fn(as_ref(v))
    if isinstance(v, dict):
        return {k: map_refs(x, fn) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [map_refs(x, fn) for x in v]
    return v


def _to_json_value(v: Any) -> Any:
    return map_refs(v, lambda r: r.to_json())


def _step_to_dict(s: StepSpec) -> dict:
    d = asdict(s)
    d["params"] = _to_json_value(s.params)
    d["when"] = [{"ref": c.ref.to_json(), "op": c.op, "value": c.value, "negate": c.negate}
                 for c in s.when]
    if d["passthrough"] is None:     # written only where used: IR files stay as they were
        del d["passthrough"]
    return d


def _step_from_dict(d: dict) -> StepSpec:
    if not isinstance(d, dict) or "id" not in d or "fn" not in d:
        raise WorkflowError(str(d.get("id", "")) if isinstance(d, dict) else "",
                            "each step needs 'id' and 'fn'")
    known = set(StepSpec.__dataclass_fields__)
    unknown = set(d) - known
    if unknown:
        raise WorkflowError(d["id"], f"unknown IR fields {sorted(unknown)}")
    d = dict(d)
    d["params"] = map_refs(d.get("params") or {}, lambda r: r)
    d["when"] = [Condition(as_ref(c["ref"]), c.get("op", "truthy"), c.get("value"),
                           c.get("negate", False)) for c in d.get("when") or []]
    if d.get("loop") is not None:
        d["loop"] = Loop(**d["loop"])
    if d.get("tune") is not None:
        d["tune"] = TuneSpec(**d["tune"])
    d["after"] = list(d.get("after") or [])
    d["ignore"] = list(d.get("ignore") or [])
    d["resources"] = dict(d.get("resources") or {})
    return StepSpec(**d)


def canonical_params(params: dict, ignore: list[str] | tuple[str, ...] = ()) -> str:
    """A canonical JSON text of the parameters (refs as ``$ref``), minus ``ignore``d names."""
    kept = {k: v for k, v in params.items() if k not in set(ignore)}
    return json.dumps(_to_json_value(kept), sort_keys=True, default=repr, separators=(",", ":"))


def topo_order(ir: WorkflowIR, external: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Step ids in dependency order (Kahn's algorithm, build order breaks ties).

    ``external``: ids of steps outside ``ir`` whose results are given (for sub-workflows).
    Raises WorkflowError naming a step on a cycle, or a dependency on an unknown step.
    """
    ids = ir.by_id()
    indeg = {s.id: 0 for s in ir.steps}
    children: dict[str, list[str]] = {s.id: [] for s in ir.steps}
    for s in ir.steps:
        for d in s.deps():
            if d in external and d not in ids:
                continue
            if d not in ids:
                raise WorkflowError(s.id, f"input from unknown step {d!r}")
            indeg[s.id] += 1
            children[d].append(s.id)
    ready = [s.id for s in ir.steps if indeg[s.id] == 0]
    order: list[str] = []
    i = 0
    while i < len(ready):
        n = ready[i]
        i += 1
        order.append(n)
        for c in children[n]:
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    if len(order) != len(ir.steps):
        stuck = [s.id for s in ir.steps if indeg[s.id] > 0]
        raise WorkflowError(stuck[0], f"dependency cycle among steps {stuck[:10]}")
    return order


def downstream_cone(ir: WorkflowIR, roots: set[str]) -> set[str]:
    """Every step reachable from ``roots`` (inclusive)."""
    children: dict[str, list[str]] = {s.id: [] for s in ir.steps}
    for s in ir.steps:
        for d in s.deps():
            children.setdefault(d, []).append(s.id)
    out, stack = set(), list(roots)
    while stack:
        n = stack.pop()
        if n in out:
            continue
        out.add(n)
        stack.extend(children.get(n, []))
    return out
