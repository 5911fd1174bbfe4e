"""What a planner produces: a draft (steps by catalog name with their constructs and the words
that produced them), the validated IR built from it, or a refusal that says why.

Both planners (rules and model) emit a :class:`Draft`; :mod:`raystack.workflow.nl.build` wires
and validates it into the IR, so the two paths share every check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from raystack.workflow.ir import TuneSpec, WorkflowError, WorkflowIR

REFUSAL_KINDS = ("destructive", "out_of_scope", "unmappable", "unbounded")
EXIT_KINDS = ("always", "failure", "success")


class PlanRefused(WorkflowError):
    """The planner will not plan this request: ``kind`` (one of REFUSAL_KINDS) and ``reasons``
    (each quoting the words it could not map, or naming the rule the request breaks)."""

    def __init__(self, reasons: list[str], kind: str = "unmappable"):
        self.reasons = list(reasons)
        self.kind = kind if kind in REFUSAL_KINDS else "unmappable"
        super().__init__("", f"cannot plan this request ({self.kind}): " + "; ".join(self.reasons))

    def __reduce__(self):
        return (type(self), (self.reasons, self.kind))


@dataclass(frozen=True)
class Cond:
    """``step``'s output metric compared with a number (a run-time condition)."""

    step: str
    metric: str
    op: str
    value: float


@dataclass(frozen=True)
class LoopSpec:
    """Re-run a step until its output metric satisfies the comparison, at most N times."""

    metric: str
    op: str
    value: float
    max_iterations: int


@dataclass
class DraftStep:
    """One step as a planner understood it, before wiring and validation."""

    label: str
    entry: str                                        # catalog name
    params: dict[str, Any] = field(default_factory=dict)    # the step's real parameters
    stated: dict[str, Any] = field(default_factory=dict)    # values as the request stated them
    inputs: dict[str, Any] = field(default_factory=dict)    # param -> label or [labels]
    after: list[str] = field(default_factory=list)          # ordering-only dependencies
    map: tuple[str, list] | None = None               # one step per value of a parameter
    when: Cond | None = None
    otherwise: bool = False                           # the else-branch of the preceding when
    loop: LoopSpec | None = None
    retries: int = 0
    exit: str | None = None
    concurrent: str | None = None                     # name of the concurrent group
    tune: TuneSpec | None = None
    bound: dict[str, Any] | None = None               # {"param", "op", "value"} as stated
    span: str = ""                                    # the words that produced the step
    implicit: bool = False                            # plumbing the request did not name
    follows: list[str] = field(default_factory=list)  # the steps written before it ("then")
    refs: dict[str, str] = field(default_factory=dict)  # param -> key of the latest tuned step's output
    beside: str | None = None                         # runs beside this step, on the table it reads

    def input_labels(self) -> list[str]:
        """The labels of the steps it reads from (each input one label or a list of them)."""
        return [x for v in self.inputs.values() for x in (v if isinstance(v, list) else [v])]


@dataclass
class Draft:
    text: str
    steps: list[DraftStep] = field(default_factory=list)

    def by_label(self) -> dict[str, DraftStep]:
        return {s.label: s for s in self.steps}


@dataclass
class Plan:
    """A validated plan: the IR, the draft it came from, and draft label -> IR step ids."""

    ir: WorkflowIR
    draft: Draft
    ids: dict[str, list[str]]
    assisted: bool = False                            # a model filled what the rules could not

    def provenance(self) -> list[dict[str, Any]]:
        """Which words produced which step(s)."""
        return [{"span": s.span or ("(implicit: " + s.entry + " needed to connect the steps)"
                                    if s.implicit else ""),
                 "step": s.entry, "ids": self.ids.get(s.label, [])} for s in self.draft.steps]

    def render(self) -> str:
        """The plan for review: one line per step, with the words it came from."""
        lines = []
        for s, p in zip(self.draft.steps, self.provenance()):
            extra = []
            if s.map:
                extra.append(f"for each {s.map[0]} in {s.map[1]}")
            if s.when:
                extra.append(f"if {s.when.metric} {s.when.op} {s.when.value}")
            if s.otherwise:
                extra.append("otherwise")
            if s.loop:
                extra.append(f"until {s.loop.metric} {s.loop.op} {s.loop.value}, "
                             f"at most {s.loop.max_iterations} times")
            if s.retries:
                extra.append(f"{s.retries} retries")
            if s.exit:
                extra.append(f"exit handler ({s.exit})")
            if s.concurrent:
                extra.append("concurrently")
            if s.tune:
                extra.append(f"tune {sorted(s.tune.space)} ({s.tune.metric}, {s.tune.mode})")
            ids = ", ".join(p["ids"])
            lines.append(f"  {s.entry:18s} {ids:28s} <- {p['span']!r}"
                         + (f"  [{'; '.join(extra)}]" if extra else ""))
        return "\n".join(lines)
