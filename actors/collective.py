"""Forming a `raystack.comm.CommGroup` among Ray actors.

An actor class inherits `CommMember`; the driver calls `form_comm_group(actors)`, which asks
rank 0 for a rendezvous address on its own node and has every actor join at once.
"""
from __future__ import annotations

from typing import Sequence

import ray

from raystack.comm import CommGroup, NetworkModel, free_port


class CommMember:
    """Mixin for actor classes that take part in a collective group (sets `self.comm`)."""

    comm: CommGroup | None = None

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


def form_comm_group(actors: Sequence, network: NetworkModel | None = None, backend: str | None = None,
                    timeout_s: float = 120.0) -> None:
    """Make `actors` (CommMember actors, rank = position) one collective group; blocks until joined."""
    if not actors:
        raise ValueError("form_comm_group needs at least one actor")
    addr, port = ray.get(actors[0].comm_rendezvous.remote())
    ray.get([a.join_comm.remote(rank, len(actors), addr, port, backend, network, timeout_s)
             for rank, a in enumerate(actors)])
