"""Exactly-once shard ledger: hands out row ranges of Parquet files and tracks per-batch commits.

A shard is a row range ``[start, end)`` of one file. A worker ``pull``s a lease on the
uncommitted remainder of a shard, trains batches from it and ``commit``s the offset it reached
after each batch. When a worker dies, ``release`` first commits what the model has already
applied for it (the parameter server's fenced log tells the caller), then puts the rest of the
shard back at the front of the queue. So every row is trained exactly once. A shard that keeps
failing (``fail``) raises :class:`ShardFailedError` instead of being dropped silently.

The ledger is plain data: ``state_dict``/``from_state_dict`` round-trip through JSON, which is
how the ShardService actor survives its own restart.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable


class ShardFailedError(RuntimeError):
    """A shard failed ``max_failures`` times; the job must stop (never drop data silently)."""

    def __init__(self, shard: "Shard", failures: int, last_error: str) -> None:
        super().__init__(
            f"shard {shard.shard_id} ({shard.path} rows {shard.start}:{shard.end}) failed "
            f"{failures} times; last error: {last_error}"
        )
        self.shard = shard
        self.failures = failures
        self.last_error = last_error


class StaleLeaseError(RuntimeError):
    """A commit for a lease that was released (its worker was declared dead or drained)."""


@dataclass(frozen=True)
class Shard:
    """Rows ``[start, end)`` of file ``path``; ``first_id`` is the sample id of row ``start``."""

    shard_id: int
    path: str
    start: int
    end: int
    first_id: int = 0

    @property
    def rows(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Lease:
    """A worker's claim on rows ``[start, end)`` of a shard (``start`` = committed offset)."""

    lease_id: int
    shard_id: int
    worker_id: str
    path: str
    start: int
    end: int
    first_id: int  # sample id of the shard's first row (row shard.start)
    shard_start: int


@dataclass
class _ShardState:
    done: int  # absolute row offset committed so far (shard.start <= done <= shard.end)
    failures: int = 0
    last_error: str = ""


@dataclass
class ShardLedger:
    """Queue and commit log for one epoch over a list of shards."""

    shards: list[Shard]
    max_failures: int = 3
    epoch: int = 0
    _state: dict[int, _ShardState] = field(default_factory=dict)
    _queue: list[int] = field(default_factory=list)
    _leases: dict[int, Lease] = field(default_factory=dict)
    _next_lease: int = 1

    def __post_init__(self) -> None:
        if not self._state:
            self._state = {s.shard_id: _ShardState(done=s.start) for s in self.shards}
            self._queue = [s.shard_id for s in self.shards if s.rows > 0]
        self._by_id = {s.shard_id: s for s in self.shards}

    # ---- queries -------------------------------------------------------------------------
    @property
    def rows_total(self) -> int:
        return sum(s.rows for s in self.shards)

    @property
    def rows_done(self) -> int:
        return sum(self._state[s.shard_id].done - s.start for s in self.shards)

    @property
    def shards_done(self) -> int:
        return sum(1 for s in self.shards if self._state[s.shard_id].done >= s.end)

    @property
    def finished(self) -> bool:
        return self.rows_done == self.rows_total

    def lease_of(self, worker_id: str) -> Lease | None:
        for lease in self._leases.values():
            if lease.worker_id == worker_id:
                return lease
        return None

    def active_leases(self) -> list[Lease]:
        return list(self._leases.values())

    def committed_offset(self, shard_id: int) -> int:
        """The absolute row offset of shard ``shard_id`` committed so far."""
        return self._state[shard_id].done

    # ---- operations ----------------------------------------------------------------------
    def pull(self, worker_id: str) -> Lease | None:
        """Lease the next unfinished shard to ``worker_id`` (its current lease if it holds one).

        Returns None when no shard is waiting (all done or all leased to others)."""
        held = self.lease_of(worker_id)
        if held is not None:
            return held
        while self._queue:
            sid = self._queue.pop(0)
            shard, st = self._by_id[sid], self._state[sid]
            if st.done >= shard.end:
                continue
            lease = Lease(self._next_lease, sid, worker_id, shard.path, st.done, shard.end,
                          shard.first_id, shard.start)
            self._next_lease += 1
            self._leases[lease.lease_id] = lease
            return lease
        return None

    def commit(self, lease_id: int, upto: int) -> bool:
        """Record that rows up to absolute offset ``upto`` of the lease's shard are trained.

        Returns True when the shard is now complete (the lease is closed). Raises
        StaleLeaseError for a released lease and ValueError for an offset that goes backwards
        or past the lease."""
        lease = self._leases.get(lease_id)
        if lease is None:
            raise StaleLeaseError(f"lease {lease_id} is not active")
        st = self._state[lease.shard_id]
        if not st.done < upto <= lease.end:
            raise ValueError(
                f"commit offset {upto} for lease {lease_id} outside ({st.done}, {lease.end}]")
        st.done = upto
        if upto == lease.end:
            del self._leases[lease_id]
            return True
        return False

    def release(self, worker_id: str, applied: dict[int, int] | None = None) -> list[int]:
        """Take back ``worker_id``'s lease (worker dead, drained or removed).

        ``applied`` maps lease id -> offset the model has already applied (from the PS fence);
        that part is committed first so it is not trained twice; the remainder goes to the
        front of the queue. Returns the shard ids put back."""
        back: list[int] = []
        for lease in [x for x in self._leases.values() if x.worker_id == worker_id]:
            st = self._state[lease.shard_id]
            upto = (applied or {}).get(lease.lease_id, st.done)
            if upto > st.done:
                st.done = min(upto, lease.end)
            del self._leases[lease.lease_id]
            if st.done < lease.end:
                self._queue.insert(0, lease.shard_id)
                back.append(lease.shard_id)
        return back

    def fail(self, lease_id: int, error: str) -> None:
        """A worker could not process the lease's shard (bad file, crash while reading).

        The shard is re-queued; after ``max_failures`` failures ShardFailedError is raised."""
        lease = self._leases.pop(lease_id, None)
        if lease is None:
            raise StaleLeaseError(f"lease {lease_id} is not active")
        st = self._state[lease.shard_id]
        st.failures += 1
        st.last_error = error
        if st.failures >= self.max_failures:
            raise ShardFailedError(self._by_id[lease.shard_id], st.failures, error)
        self._queue.append(lease.shard_id)

    def failed_shard(self) -> tuple[Shard, _ShardState] | None:
        """The first shard that reached ``max_failures``, if any."""
        for s in self.shards:
            if self._state[s.shard_id].failures >= self.max_failures:
                return s, self._state[s.shard_id]
        return None

    # ---- persistence ---------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "shards": [asdict(s) for s in self.shards],
            "max_failures": self.max_failures,
            "epoch": self.epoch,
            "state": {str(k): asdict(v) for k, v in self._state.items()},
            "queue": list(self._queue),
            "leases": [asdict(x) for x in self._leases.values()],
            "next_lease": self._next_lease,
        }

    @classmethod
    def from_state_dict(cls, d: dict) -> "ShardLedger":
        leases = [Lease(**x) for x in d["leases"]]
        return cls(
            shards=[Shard(**s) for s in d["shards"]],
            max_failures=d["max_failures"],
            epoch=d["epoch"],
            _state={int(k): _ShardState(**v) for k, v in d["state"].items()},
            _queue=list(d["queue"]),
            _leases={x.lease_id: x for x in leases},
            _next_lease=d["next_lease"],
        )


def make_shards(files: Iterable[tuple[str, int]], rows_per_shard: int) -> list[Shard]:
    """Cut files given as ``(path, n_rows)`` into shards of ``rows_per_shard`` rows.

    Sample ids run over all files in order, so ``first_id`` of row r of file k is the number
    of rows in files before k plus r."""
    if rows_per_shard < 1:
        raise ValueError(f"rows_per_shard must be >= 1, got {rows_per_shard}")
    shards: list[Shard] = []
    base = 0
    for path, n in files:
        for start in range(0, n, rows_per_shard):
            end = min(n, start + rows_per_shard)
            shards.append(Shard(len(shards), path, start, end, base + start))
        base += n
    return shards
