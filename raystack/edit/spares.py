"""Which spare replica takes which lost replica's place (``run.spare_replicas``).

A spare replica is a replica's worth of started, idle ranks: the members of one placement
group, one per bundle. :func:`choose_spares` is the policy, a pure function of where the spares
are; ``raystack.actors.edit_spares`` owns the spare actors and carries the choice out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Sequence


@dataclass(frozen=True)
class SpareMember:
    """One spare rank: its member key, its placement group and bundle, and the node the bundle
    is on (None: not placed yet, or unknown)."""

    key: str
    placement: str
    bundle: int
    node: str | None


def choose_spares(lost_replicas: Iterable[int], spares: Sequence[SpareMember], shards: int,
                  lost_nodes: Collection[str], node_alive: Callable[[str], bool]) -> list[tuple[int, tuple[str, ...]]]:
    """Pair lost replicas (ascending) with usable spare replicas (in the order of ``spares``):
    ``(replica, spare keys in bundle order)`` per pair, as many pairs as both allow. A spare
    replica is usable when it is complete (``shards`` members) and every member is placed on a
    node that is neither in ``lost_nodes`` nor dead by ``node_alive`` (asked only of the others)."""
    sets: dict[str, list[SpareMember]] = {}
    for member in spares:
        sets.setdefault(member.placement, []).append(member)
    usable = [tuple(m.key for m in sorted(members, key=lambda m: m.bundle)) for members in sets.values()
              if len(members) == shards and all(m.node is not None and m.node not in lost_nodes
                                                and node_alive(m.node) for m in members)]
    return list(zip(sorted(set(lost_replicas)), usable))
