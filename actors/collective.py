"""Forming a `raystack.comm.CommGroup` among Ray actors.

An actor class inherits `CommMember`; the driver calls `form_comm_group(members)`, which asks
rank 0 for a rendezvous address on its own node and has every actor join at once. ``members``
is a kernel :class:`~raystack.runtime.group.ActorGroup` (rank = member order) or a list of
actor handles.
"""
from __future__ import annotations

from typing import Sequence

import ray

from raystack.cluster import free_port
from raystack.comm import CommGroup, NetworkModel
from raystack.runtime.group import ActorGroup, MemberSpec


class CommMember:
    """Mixin for actor classes that take part in a collective group (sets `self.comm`)."""

    comm: CommGroup | None = None

    def comm_ready(self) -> bool:
        """Answers once the actor is constructed (a call waits for the constructor)."""
        return True

    def comm_rendezvous(self) -> tuple[str, int]:
        """An address and a free port on this actor's node, for rank 0 to host the rendezvous."""
        ip = ray.util.get_node_ip_address()
        return ip, free_port(ip)

    def join_comm(self, rank: int, world_size: int, addr: str, port: int, backend: str | None = None,
                  network: NetworkModel | None = None, timeout_s: float = 120.0) -> int:
        if self.comm is not None:
            self.comm.destroy()
        self.comm = CommGroup.init(rank, world_size, addr, port, backend=backend, network=network,
                                   timeout_s=timeout_s)
        return rank

    def leave_comm(self) -> None:
        if self.comm is not None:
            self.comm.destroy()
            self.comm = None

    def comm_stats(self) -> dict:
        return self.comm.stats() if self.comm is not None else {}


def form_comm_group(members: ActorGroup | Sequence, network: NetworkModel | None = None,
                    backend: str | None = None, timeout_s: float = 120.0) -> None:
    """Make ``members`` (CommMember actors, rank = position) one collective group; blocks
    until every member joined.

    Every member is first awaited until it is constructed (the group's ``ready_timeout_s``), so a replacement still importing torch on a busy node does not eat into the
    rendezvous' ``timeout_s`` while the members already up wait for it in the store."""
    if not isinstance(members, ActorGroup):
        actors, members = list(members), ActorGroup("comm")
        for i, actor in enumerate(actors):
            members.adopt(MemberSpec(f"rank-{i}", CommMember), actor)
    keys = members.keys
    if not keys:
        raise ValueError("form_comm_group needs at least one actor")
    members.call("comm_ready", timeout_s=members.ready_timeout_s)
    addr, port = members.ask(keys[0], "comm_rendezvous")
    members.call_each("join_comm", {k: (rank, len(keys), addr, port, backend, network, timeout_s)
                                    for rank, k in enumerate(keys)})
