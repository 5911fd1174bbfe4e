"""An in-process stand-in for ``raystack.comm.CommGroup``: ranks are threads of one process.

It offers the same calls the EDiT code uses (``all_reduce``, ``all_gather``, ``broadcast``
with ``async_op``, ``subgroup``, ``rank``, ``world_size``, ``stats``), so the EDiT math can be
run and checked in one process (tests, notebooks) without Ray or torch.distributed. Bytes are
counted as ``raystack.comm.CommGroup`` counts them (ring algorithm), with no network model.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

import torch

from raystack.comm.network import ring_bytes


class _World:
    """Shared rendezvous state of one group: contributions per (op sequence number)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.cond = threading.Condition()
        self.slots: dict[int, dict[int, torch.Tensor]] = defaultdict(dict)
        self.results: dict[int, Any] = {}
        self.taken: dict[int, int] = defaultdict(int)
        self.subworlds: dict[tuple, "_World"] = {}


class LocalHandle:
    """Returned by async ops; ``wait()`` returns the op's result."""

    def __init__(self, fn, ready) -> None:
        self._fn = fn
        self._ready = ready
        self._done = False
        self._result = None

    def is_completed(self) -> bool:
        """True once every rank has posted its part (never blocks)."""
        return self._done or self._ready()

    def wait(self):
        if not self._done:
            self._result = self._fn()
            self._done = True
        return self._result


class LocalComm:
    """One rank's view of a thread-backed group. Build all ranks with :meth:`create`."""

    def __init__(self, world: _World, rank: int, ranks: tuple[int, ...], timeout_s: float = 60.0) -> None:
        self._world = world
        self.rank = rank
        self.world_size = world.size
        self._ranks = ranks          # global ranks of the members (for subgroup naming)
        self._seq = 0
        self.timeout_s = timeout_s
        self._stats: dict[str, dict[str, float]] = defaultdict(lambda: {"count": 0, "bytes": 0, "seconds": 0.0, "wait_seconds": 0.0})

    @staticmethod
    def create(world_size: int, timeout_s: float = 60.0) -> list["LocalComm"]:
        """One LocalComm per rank of a new world."""
        world = _World(world_size)
        ranks = tuple(range(world_size))
        return [LocalComm(world, r, ranks, timeout_s) for r in range(world_size)]

    def _post(self, op: str, t: torch.Tensor, combine) -> LocalHandle:
        w = self._world
        seq = self._seq
        self._seq += 1
        st = self._stats[op]
        st["count"] += 1
        st["bytes"] += ring_bytes(op, t.numel() * t.element_size(), self.world_size)
        with w.cond:
            w.slots[seq][self.rank] = t.detach().clone()
            w.cond.notify_all()

        def wait():
            with w.cond:
                ok = w.cond.wait_for(lambda: len(w.slots[seq]) == w.size or seq in w.results, self.timeout_s)
                if not ok:
                    raise TimeoutError(f"LocalComm {op} #{seq} timed out on rank {self.rank}")
                if seq not in w.results:
                    parts = [w.slots[seq][r] for r in range(w.size)]
                    w.results[seq] = combine(parts)
                res = w.results[seq]
                w.taken[seq] += 1
                if w.taken[seq] == w.size:
                    del w.results[seq], w.slots[seq], w.taken[seq]
            if isinstance(res, list):
                return [x.clone() for x in res]
            return res.clone()

        def ready() -> bool:
            with w.cond:
                return len(w.slots.get(seq, ())) == w.size or seq in w.results
        return LocalHandle(wait, ready)

    def all_reduce(self, t: torch.Tensor, op: str = "sum", async_op: bool = False):
        """Sum (or average) of every rank's tensor."""
        def combine(parts):
            out = torch.stack(parts).sum(0)
            return out / len(parts) if op == "avg" else out
        h = self._post("all_reduce", t, combine)
        return h if async_op else h.wait()

    def all_gather(self, t: torch.Tensor, async_op: bool = False):
        """List of every rank's tensor, in rank order."""
        h = self._post("all_gather", t, lambda parts: list(parts))
        return h if async_op else h.wait()

    def broadcast(self, t: torch.Tensor, src: int, async_op: bool = False):
        """Rank ``src``'s tensor, everywhere."""
        h = self._post("broadcast", t, lambda parts: parts[src])
        return h if async_op else h.wait()

    @property
    def process_group(self):
        """No torch.distributed group behind threads (FSDP2 needs processes)."""
        return None

    def subgroup(self, ranks: list[int], network=None, tag: str = ""):
        """Group over ``ranks`` (call on every rank, same order); None if not a member. Groups
        over the same ranks with different ``tag`` are independent (own op order)."""
        key = (tuple(ranks), tag)
        with self._world.cond:
            sub = self._world.subworlds.get(key)
            if sub is None:
                sub = _World(len(ranks))
                self._world.subworlds[key] = sub
        if self.rank not in ranks:
            return None
        return LocalComm(sub, ranks.index(self.rank), tuple(ranks), self.timeout_s)

    def stats(self) -> dict:
        return {k: dict(v) for k, v in self._stats.items()}

    def reset_stats(self) -> None:
        self._stats.clear()

    def destroy(self) -> None:
        """Nothing to release."""


def run_in_threads(world_size: int, fn, timeout_s: float = 60.0) -> list:
    """Run ``fn(comm)`` for every rank of a new LocalComm world in its own thread; results in
    rank order. An exception in any rank is re-raised here."""
    comms = LocalComm.create(world_size, timeout_s)
    results: list = [None] * world_size
    errors: list = []

    def body(r: int) -> None:
        try:
            results[r] = fn(comms[r])
        except BaseException as exc:   # noqa: BLE001 - re-raised in the caller
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s * 4)
    if errors:
        raise errors[0]
    return results
