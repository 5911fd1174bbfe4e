"""Declarative scale plans: which units (one worker or one PS, each its own placement group)
to launch and which to remove, computed as the difference between the running units and a
target :class:`JobConfig`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from raystack.elastic.perfmodel import JobConfig

Role = Literal["worker", "ps"]


@dataclass(frozen=True)
class UnitSpec:
    """One scale unit: a single actor in its own placement group."""

    unit_id: str
    role: Role
    index: int
    cpus: float
    mem_gb: float
    replaces: str | None = None  # a PS unit whose state this one takes over

    def bundle(self) -> dict[str, float]:
        return {"CPU": self.cpus}


@dataclass
class ScalePlan:
    """Launch these units, then remove those; ``reason`` says why (shown to the user)."""

    launch: list[UnitSpec] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def empty(self) -> bool:
        return not self.launch and not self.remove

    def __str__(self) -> str:
        add = ",".join(u.unit_id for u in self.launch) or "-"
        rm = ",".join(self.remove) or "-"
        return f"ScalePlan(+[{add}] -[{rm}]: {self.reason})"


def current_config(units: dict[str, UnitSpec]) -> JobConfig | None:
    """The JobConfig the running units add up to (None when there are none)."""
    ws = [u for u in units.values() if u.role == "worker"]
    ps = [u for u in units.values() if u.role == "ps"]
    if not ws or not ps:
        return None
    return JobConfig(len(ws), len(ps), ws[0].cpus, ps[0].cpus, ps[0].mem_gb, ws[0].mem_gb)


def plan_to(units: dict[str, UnitSpec], target: JobConfig, next_id: int,
            reason: str = "") -> ScalePlan:
    """The plan that turns ``units`` into ``target``.

    Workers are added or removed (highest index first); a worker whose resources differ is
    replaced. PS are added at the next index; a PS whose CPU or memory differs is replaced by a
    new unit that takes over its shard (``replaces``). ``next_id`` numbers new unit ids."""
    plan = ScalePlan(reason=reason)
    for role, count, cpus, mem in (("worker", target.workers, target.worker_cpu,
                                     target.worker_mem_gb),
                                   ("ps", target.ps, target.ps_cpu, target.ps_mem_gb)):
        mine = sorted((u for u in units.values() if u.role == role), key=lambda u: u.index)
        for u in mine[count:]:
            plan.remove.append(u.unit_id)
        for u in mine[:count]:
            if (u.cpus, u.mem_gb) != (cpus, mem):
                plan.launch.append(UnitSpec(f"{role}-{next_id}", role, u.index, cpus, mem,
                                            replaces=u.unit_id if role == "ps" else None))
                plan.remove.append(u.unit_id)
                next_id += 1
        for index in range(len(mine), count):
            plan.launch.append(UnitSpec(f"{role}-{next_id}", role, index, cpus, mem))
            next_id += 1
    return plan
