"""ShardService actor: the exactly-once shard ledger, the embedding routing table, per-worker
rates and drain flags. Its state is written to a file after every change, so a restarted
ShardService (``max_restarts``) carries on where it stopped. It answers with the typed
messages of ``raystack.elastic.messages`` (PullReply, CommitReply, ShardStats)."""
from __future__ import annotations

import json
import os
import time
from collections import deque
from pathlib import Path

import ray

from raystack import metrics
from raystack.elastic.messages import CommitReply, PullReply, ShardStats
from raystack.elastic.shards import Shard, ShardFailedError, ShardLedger, StaleLeaseError


@ray.remote(max_restarts=-1, max_task_retries=-1)
class ShardService:
    def __init__(self, state_path: str, shards: list[Shard], max_failures: int, epochs: int,
                 job: str = "") -> None:
        self.path = Path(state_path)
        self.epochs = epochs
        self.rates: dict[str, deque] = {}
        self.first_commit: dict[str, float] = {}
        self.draining: set[str] = set()
        self.restarted = self.path.exists()
        if self.restarted:
            d = json.loads(self.path.read_text())
            self.ledger = ShardLedger.from_state_dict(d["ledger"])
            self.routing, self.routing_version = {int(k): v for k, v in d["routing"].items()}, d["rv"]
            self.error, self.epoch_rows, self.controller = d["error"], d["epoch_rows"], d["controller"]
            self.draining = set(d.get("draining", []))
        else:
            self.ledger = ShardLedger(shards, max_failures=max_failures)
            self.routing, self.routing_version, self.error = {}, 0, None
            self.epoch_rows, self.controller = 0, {}
            self._save()
        self._tags = {"job": job}
        self._m_shards = metrics.gauge("elastic_shards_done", "shards finished this epoch", ("job",))
        self._m_rows = metrics.counter("elastic_rows_committed", "rows committed (exactly once)", ("job",))

    def _save(self) -> None:
        d = {"ledger": self.ledger.state_dict(), "routing": self.routing, "rv": self.routing_version,
             "error": self.error, "epoch_rows": self.epoch_rows, "controller": self.controller,
             "draining": sorted(self.draining)}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(d))
        os.replace(tmp, self.path)

    def _reply(self, cls, worker_id: str, **kw):
        return cls(self.routing_version, worker_id in self.draining, self.error, **kw)

    def _next_epoch(self) -> None:
        if self.ledger.finished and self.ledger.epoch + 1 < self.epochs:
            self.epoch_rows += self.ledger.rows_total
            self.ledger = ShardLedger(self.ledger.shards, self.ledger.max_failures,
                                      epoch=self.ledger.epoch + 1)

    def pull(self, worker_id: str) -> PullReply:
        lease = None
        if worker_id not in self.draining and self.error is None:
            self._next_epoch()
            lease = self.ledger.pull(worker_id)
            self._save()
        return self._reply(PullReply, worker_id, lease=lease, finished=self._finished())

    def commit(self, worker_id: str, lease_id: int, upto: int, rows: int) -> CommitReply:
        lease = next((x for x in self.ledger.active_leases() if x.lease_id == lease_id), None)
        if lease is not None and self.ledger.committed_offset(lease.shard_id) == upto:
            return self._reply(CommitReply, worker_id, ok=True, shard_done=False)  # a retried commit
        try:
            done = self.ledger.commit(lease_id, upto)
        except StaleLeaseError:
            return self._reply(CommitReply, worker_id, ok=False, shard_done=True)
        now = time.time()
        self.first_commit.setdefault(worker_id, now)
        self.rates.setdefault(worker_id, deque(maxlen=400)).append((now, rows))
        self._m_rows.inc(rows, tags=self._tags)
        self._m_shards.set(self.ledger.shards_done, tags=self._tags)
        self._save()
        return self._reply(CommitReply, worker_id, ok=True, shard_done=done)

    def release(self, worker_id: str, applied: dict[int, int] | None = None,
                gone: bool = False) -> list[int]:
        """Return the worker's rows to the queue; ``gone``: it never gets a shard again."""
        if gone:
            self.draining.add(worker_id)
        back = self.ledger.release(worker_id, applied)
        self._save()
        return back

    def fail(self, worker_id: str, lease_id: int, error: str) -> None:
        try:
            self.ledger.fail(lease_id, error)
        except ShardFailedError as exc:
            self.error = str(exc)
        except StaleLeaseError:
            pass
        self._save()

    def drain(self, worker_id: str) -> None:
        self.draining.add(worker_id)
        self._save()

    def set_routing(self, routing: dict[int, str]) -> int:
        self.routing, self.routing_version = dict(routing), self.routing_version + 1
        self._save()
        return self.routing_version

    def get_routing(self) -> tuple[int, dict[int, str]]:
        return self.routing_version, self.routing

    def set_controller_state(self, state: dict) -> None:
        self.controller = state
        self._save()

    def get_controller_state(self) -> dict:
        return self.controller

    def _finished(self) -> bool:
        return self.ledger.finished and self.ledger.epoch + 1 >= self.epochs

    def first_commit_time(self, worker_id: str) -> float | None:
        return self.first_commit.get(worker_id)

    def first_commit_times(self, worker_ids: list[str]) -> dict[str, float]:
        """When each of ``worker_ids`` first committed a batch (those that have)."""
        return {w: self.first_commit[w] for w in worker_ids if w in self.first_commit}

    def stats(self, window_s: float = 8.0) -> ShardStats:
        now, rates, committed = time.time(), {}, {}
        for w, q in self.rates.items():
            recent = [(t, r) for t, r in q if t >= now - window_s]
            total = committed[w] = sum(r for _, r in q)
            if len(recent) >= 2:
                span = max(recent[-1][0] - recent[0][0], 1e-3)
                rates[w] = (sum(r for _, r in recent[1:]) / span, total)
        return ShardStats(
            rows_done=self.epoch_rows + self.ledger.rows_done, rows_total=self.ledger.rows_total * self.epochs,
            shards_done=self.ledger.shards_done, epoch=self.ledger.epoch, finished=self._finished(),
            error=self.error, rates=rates, committed=committed,
            leases={x.worker_id: x.lease_id for x in self.ledger.active_leases()},
            restarted=self.restarted, pid=os.getpid())
