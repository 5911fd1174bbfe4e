"""Split a large workflow into sub-workflows under a budget, each run by its own runner.

Parts are cut from a dependency order, keeping weakly connected components together where
they fit, so every step lands in exactly one part and every edge between parts points from
an earlier part to a later one (the parts themselves form a DAG in index order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from raystack.workflow.ir import WorkflowError, WorkflowIR, topo_order


@dataclass
class Part:
    """One sub-workflow: its steps (in dependency order) and the parts it waits for."""

    index: int
    steps: list[str] = field(default_factory=list)
    depends_on: set[int] = field(default_factory=set)
    size_bytes: int = 0


def _components(ir: WorkflowIR) -> dict[str, int]:
    parent = {s.id: s.id for s in ir.steps}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for a, b in ir.edges():
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
    roots: dict[str, int] = {}
    return {s.id: roots.setdefault(find(s.id), len(roots)) for s in ir.steps}


def split(ir: WorkflowIR, max_steps: int = 500, max_bytes: int | None = None) -> list[Part]:
    """Cut the main steps of ``ir`` into parts of at most ``max_steps`` steps (and at most
    ``max_bytes`` of serialised IR when given). Exit handlers are left to the parent run."""
    if max_steps < 1:
        raise WorkflowError("", f"split budget max_steps must be >= 1, got {max_steps}")
    by_id = ir.by_id()
    order = [s for s in topo_order(ir) if by_id[s].exit is None]
    comp = _components(ir)
    # Order by component first (a stable sort keeps dependency order inside each component),
    # so small independent pipelines stay whole inside one part.
    pos = {sid: i for i, sid in enumerate(order)}
    order.sort(key=lambda sid: (comp[sid], pos[sid]))
    sizes = {s.id: len(str(s.params)) + len(s.fn) + 64 for s in ir.steps} if max_bytes else {}
    parts: list[Part] = []
    cur = Part(0)
    for sid in order:
        sz = sizes.get(sid, 0)
        full = len(cur.steps) >= max_steps or (
            max_bytes is not None and cur.steps and cur.size_bytes + sz > max_bytes)
        if full:
            parts.append(cur)
            cur = Part(len(parts))
        cur.steps.append(sid)
        cur.size_bytes += sz
    if cur.steps:
        parts.append(cur)
    where = {sid: p.index for p in parts for sid in p.steps}
    for p in parts:
        for sid in p.steps:
            for d in by_id[sid].deps():
                if where[d] != p.index:
                    p.depends_on.add(where[d])
    return parts


def sub_workflow(ir: WorkflowIR, part: Part) -> WorkflowIR:
    """The IR of one part (its steps keep their ids; inputs from other parts stay refs)."""
    by_id = ir.by_id()
    return WorkflowIR(f"{ir.name}/part-{part.index}", [by_id[s] for s in part.steps],
                      ir.version, ir.description, functions=ir.functions)
