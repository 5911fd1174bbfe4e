"""Collective groups among processes (Ray actors) over torch.distributed.

One `CommGroup` per member process: gloo on CPU, nccl on GPU. Each op records the bytes this
rank sends and the time it takes, and is delayed by the group's `NetworkModel` so a benchmark
on one machine can simulate a slow link. Asynchronous ops return a `CommHandle`; compute goes
on while the (real and simulated) transfer runs, and `wait()` blocks only for what is left.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable, Sequence

import torch
import torch.distributed as dist

from raystack.comm.network import NetworkModel, SimulatedLink, ring_bytes

OPS = ("all_reduce", "all_gather", "broadcast")


def default_backend() -> str:
    return "nccl" if torch.cuda.is_available() else "gloo"


@dataclass
class OpStats:
    """Totals for one kind of op on one rank."""

    count: int = 0
    bytes: int = 0          # bytes this rank sent (ring algorithm)
    seconds: float = 0.0    # issue to completion, simulated delay included
    wait_seconds: float = 0.0  # time the caller was blocked in wait(): exposed communication

    def as_dict(self) -> dict:
        return {"count": self.count, "bytes": self.bytes, "seconds": self.seconds, "wait_seconds": self.wait_seconds}


class CommHandle:
    """A pending collective. `wait()` returns its result once the simulated link delivers it."""

    def __init__(self, work, result_fn: Callable[[], object], done_at: float, issued_at: float, stats: OpStats):
        self._work = work
        self._result_fn = result_fn
        self._done_at = done_at
        self._issued_at = issued_at
        self._stats = stats
        self._result = None
        self._finished = False

    def is_completed(self) -> bool:
        """True once both the real transfer and the simulated link are done (never blocks)."""
        if self._finished:
            return True
        real_done = self._work is None or self._work.is_completed()
        return real_done and time.monotonic() >= self._done_at

    def wait(self):
        if self._finished:
            return self._result
        t0 = time.monotonic()
        if self._work is not None:
            self._work.wait()
        remaining = self._done_at - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
        t1 = time.monotonic()
        self._stats.wait_seconds += t1 - t0
        self._stats.seconds += t1 - self._issued_at
        self._result = self._result_fn()
        self._finished = True
        return self._result


class CommGroup:
    """A collective group seen from one member. Build with `CommGroup.init` in every member."""

    def __init__(self, rank: int, world_size: int, process_group, backend: str,
                 network: NetworkModel | None, ranks: Sequence[int] | None = None,
                 timeout_s: float = 120.0):
        self.rank = rank
        self.world_size = world_size
        self.backend = backend
        self.network = network or NetworkModel()
        self._pg = process_group
        self._ranks = list(ranks) if ranks is not None else list(range(world_size))
        self._link = SimulatedLink(self.network)
        self._stats = {op: OpStats() for op in OPS}
        self._owns_world = ranks is None
        self.timeout_s = timeout_s  # how long an op waits for a peer before it raises

    @classmethod
    def init(cls, rank: int, world_size: int, master_addr: str, master_port: int,
             backend: str | None = None, network: NetworkModel | None = None,
             timeout_s: float = 120.0) -> "CommGroup":
        """Join the world of `world_size` processes rendezvousing at master_addr:master_port."""
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, {world_size}), got {rank}")
        backend = backend or default_backend()
        if dist.is_initialized():
            raise RuntimeError("this process already belongs to a torch.distributed world; "
                               "call destroy() on its CommGroup first")
        dist.init_process_group(backend=backend, init_method=f"tcp://{master_addr}:{master_port}",
                                rank=rank, world_size=world_size, timeout=timedelta(seconds=timeout_s))
        return cls(rank, world_size, dist.group.WORLD, backend, network, timeout_s=timeout_s)

    @property
    def device(self) -> torch.device:
        return torch.device("cuda", torch.cuda.current_device()) if self.backend == "nccl" else torch.device("cpu")

    @property
    def process_group(self):
        """The torch.distributed process group under this group (for torch's own parallelism,
        e.g. a DeviceMesh for FSDP2); its ops bypass this group's accounting and network model."""
        return self._pg

    def subgroup(self, ranks: Sequence[int], network: NetworkModel | None = None,
                 tag: str = "") -> "CommGroup | None":
        """A group over `ranks` of this world. Every rank of the world must call this with the same
        `ranks`; members get a CommGroup (rank = position in `ranks`), non-members get None.
        Every call makes a new group (its own process group and simulated link), so ops on two
        groups over the same ranks never need a common order; `tag` only names it. Its ops
        time out as this group's do (torch's own default for a new group is 30 minutes: a
        rank whose peer left a collective would wait that long)."""
        ranks = list(ranks)
        pg = dist.new_group(ranks=ranks, backend=self.backend, timeout=timedelta(seconds=self.timeout_s))
        me = dist.get_rank()
        if me not in ranks:
            return None
        return CommGroup(ranks.index(me), len(ranks), pg, self.backend, network or self.network, ranks=ranks,
                         timeout_s=self.timeout_s)

    # -- ops ---------------------------------------------------------------------------------
    def _staged(self, tensor: torch.Tensor) -> torch.Tensor:
        """NCCL only moves CUDA tensors: a CPU tensor goes through a CUDA copy (gloo takes both)."""
        if self.backend == "nccl" and tensor.device.type != "cuda":
            return tensor.to(self.device)
        return tensor

    def _issue(self, op: str, payload_bytes: int, work, result_fn, async_op: bool):
        now = time.monotonic()
        sent = ring_bytes(op, payload_bytes, self.world_size)
        done_at = self._link.reserve(sent, now)
        stats = self._stats[op]
        stats.count += 1
        stats.bytes += sent
        handle = CommHandle(work, result_fn, done_at, now, stats)
        return handle if async_op else handle.wait()

    def all_reduce(self, tensor: torch.Tensor, op: str = "sum", async_op: bool = False):
        """Reduce `tensor` in place across the group (op "sum" or "avg"); returns the tensor."""
        if op not in ("sum", "avg"):
            raise ValueError(f"op must be 'sum' or 'avg', got {op!r}")
        if self.world_size == 1:
            return self._issue("all_reduce", 0, None, lambda: tensor, async_op)
        x = self._staged(tensor)
        work = dist.all_reduce(x, op=dist.ReduceOp.SUM, group=self._pg, async_op=True)

        def result():
            if op == "avg":
                x.div_(self.world_size)
            if x is not tensor:
                tensor.copy_(x)
            return tensor
        return self._issue("all_reduce", tensor.numel() * tensor.element_size(), work, result, async_op)

    def all_gather(self, tensor: torch.Tensor, async_op: bool = False):
        """Every member's `tensor`, in rank order (a list of world_size tensors)."""
        if self.world_size == 1:
            out = [tensor.clone()]
            return self._issue("all_gather", 0, None, lambda: out, async_op)
        x = self._staged(tensor)
        out = [torch.empty_like(x) for _ in range(self.world_size)]
        work = dist.all_gather(out, x, group=self._pg, async_op=True)

        def result():
            return out if x is tensor else [o.to(tensor.device) for o in out]
        return self._issue("all_gather", tensor.numel() * tensor.element_size(), work, result, async_op)

    def broadcast(self, tensor: torch.Tensor, src: int = 0, async_op: bool = False):
        """Copy member `src`'s `tensor` into every member's `tensor` (src is a group rank)."""
        if not 0 <= src < self.world_size:
            raise ValueError(f"src must be in [0, {self.world_size}), got {src}")
        if self.world_size == 1:
            return self._issue("broadcast", 0, None, lambda: tensor, async_op)
        x = self._staged(tensor)
        work = dist.broadcast(x, src=self._ranks[src], group=self._pg, async_op=True)

        def result():
            if x is not tensor:
                tensor.copy_(x)
            return tensor
        return self._issue("broadcast", tensor.numel() * tensor.element_size(), work, result, async_op)

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier(group=self._pg)

    # -- accounting ----------------------------------------------------------------------------
    def stats(self) -> dict:
        """{op: {"count", "bytes", "seconds", "wait_seconds"}} for this rank since the last reset."""
        return {op: s.as_dict() for op, s in self._stats.items()}

    def total_stats(self) -> dict:
        tot = OpStats()
        for s in self._stats.values():
            tot.count += s.count
            tot.bytes += s.bytes
            tot.seconds += s.seconds
            tot.wait_seconds += s.wait_seconds
        return tot.as_dict()

    def reset_stats(self) -> None:
        self._stats = {op: OpStats() for op in OPS}

    def destroy(self) -> None:
        """Leave the group; the world is torn down if this group owns it."""
        if self._owns_world and dist.is_initialized():
            dist.destroy_process_group()
        elif self._pg is not None and dist.is_initialized():
            dist.destroy_process_group(self._pg)
        self._pg = None
