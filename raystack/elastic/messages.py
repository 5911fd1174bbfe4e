"""What elastic DLRM actors report to the controller and to each other, as typed messages.

The ShardService answers workers' ``pull`` and ``commit`` calls with :class:`PullReply` and
:class:`CommitReply` and the controller's ``stats`` with :class:`ShardStats`; workers answer
``status`` with :class:`WorkerStatus`; parameter servers answer ``stats`` with
:class:`PSStats`. In the routing table, :data:`DENSE` names the dense network beside the
embedding tables (table ids 0..n-1).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from raystack.elastic.shards import Lease
from raystack.runtime.messages import Message

DENSE = -1  # routing-table key of the dense network (its owner also holds the fence and audit)


@dataclass(frozen=True)
class PullReply(Message):
    """The answer to a worker's ``pull``: a lease of rows (or None), and what to do next."""

    routing_version: int
    drain: bool  # stop: this worker is being removed
    error: str | None  # the job failed (e.g. a shard failed too often): stop
    lease: Lease | None = None
    finished: bool = False  # every row of every epoch is committed


@dataclass(frozen=True)
class CommitReply(Message):
    """The answer to a worker's ``commit`` of a batch."""

    routing_version: int
    drain: bool
    error: str | None
    ok: bool = True  # False: the lease was taken back (the worker was fenced)
    shard_done: bool = False


@dataclass(frozen=True)
class ShardStats(Message):
    """The ShardService's view of the job: progress, per-worker rates and commits."""

    rows_done: int
    rows_total: int
    shards_done: int
    epoch: int
    finished: bool
    error: str | None
    rates: dict[str, tuple[float, int]] = field(default_factory=dict)  # worker -> (rows/s, rows)
    committed: dict[str, int] = field(default_factory=dict)  # worker -> rows committed
    leases: dict[str, int] = field(default_factory=dict)  # worker -> lease id held
    restarted: bool = False
    pid: int = 0


@dataclass(frozen=True)
class WorkerStatus(Message):
    """A DLRM worker's answer to ``status``."""

    worker_id: str
    steps: int
    rows: int
    done: bool
    error: str | None


@dataclass(frozen=True)
class PSStats(Message):
    """A parameter server's answer to ``stats``."""

    name: str
    tables: list[int]
    cpu_util: float
    mem_gb: float
    restored: bool
    version: int
    pid: int
    ckpt_copy_s: float
