"""DLRMWorker actor: pulls shards from the ShardService and trains batch by batch against
the parameter servers, committing after each batch. The loop runs in a thread so the actor
answers ``status`` (a :class:`WorkerStatus`) and ``stop`` while training."""
from __future__ import annotations

import threading
import time
import traceback

import numpy as np
import ray
from ray.exceptions import RayActorError

from raystack.actors.elastic.ps import TableMoved
from raystack import metrics
from raystack.data.criteo import DataError, read_rows
from raystack.elastic.dlrm import DLRMDense, DLRMSpec, forward_backward
from raystack.elastic.messages import DENSE, WorkerStatus

try:
    from ray.exceptions import ActorUnavailableError
except ImportError:  # pragma: no cover
    ActorUnavailableError = RayActorError

_RETRY = (RayActorError, ActorUnavailableError, TableMoved)


@ray.remote(max_restarts=0)
class DLRMWorker:
    def __init__(self, worker_id: str, job: str, spec: DLRMSpec, batch_size: int,
                 slow_factor: float = 1.0, ps_retry_s: float = 60.0) -> None:
        import torch

        torch.set_num_threads(1)
        self.worker_id, self.job, self.spec, self.batch = worker_id, job, spec, batch_size
        self.slow = slow_factor
        self.ps_retry_s = ps_retry_s
        self.model = DLRMDense(spec)
        self.ss = ray.get_actor(f"{job}-shards")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.steps, self.rows, self.error, self.done = 0, 0, None, False
        self.routing_version, self.routing, self._ps = -1, {}, {}
        self._m_rows = metrics.counter("elastic_samples", "samples trained", ("job", "worker"))

    # ---- control ----------------------------------------------------------------------------
    def start(self) -> bool:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return True

    def stop(self) -> None:
        self._stop.set()

    def ping(self) -> str:
        return self.worker_id

    def status(self) -> WorkerStatus:
        return WorkerStatus(self.worker_id, self.steps, self.rows, self.done, self.error)

    # ---- the loop ---------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                r = ray.get(self.ss.pull.remote(self.worker_id))
                self._maybe_route(r.routing_version)
                if r.drain or r.error:
                    break
                lease = r.lease
                if lease is None:
                    if r.finished:
                        break
                    time.sleep(0.2)
                    continue
                try:
                    data = read_rows(lease.path, lease.start,
                                     lease.end, self.spec.vocab)
                except DataError as exc:
                    ray.get(self.ss.fail.remote(self.worker_id, lease.lease_id, str(exc)))
                    continue
                if not self._train_lease(lease, data):
                    break
        except Exception:  # a bug or a lost ShardService: say it in status, do not hang
            self.error = traceback.format_exc(limit=5)
        finally:
            self.done = True

    def _train_lease(self, lease, data) -> bool:
        """Train the lease's rows; False to leave the loop (drained, fenced or stopped)."""
        off = lease.start
        while off < lease.end:
            if self._stop.is_set():
                ray.get(self.ss.release.remote(self.worker_id))
                return False
            upto = min(off + self.batch, lease.end)
            b = data.slice(off - lease.start, upto - lease.start)
            if not self._step(lease.lease_id, upto, b):
                return False  # fenced: the controller declared this incarnation dead
            rep = ray.get(self.ss.commit.remote(self.worker_id, lease.lease_id, upto, len(b)))
            self.steps += 1
            self.rows += len(b)
            self._m_rows.inc(len(b), tags={"job": self.job, "worker": self.worker_id})
            self._maybe_route(rep.routing_version)
            off = upto
            if rep.drain:
                if off < lease.end:
                    ray.get(self.ss.release.remote(self.worker_id))
                return False
        return True

    def _maybe_route(self, version: int) -> None:
        if version != self.routing_version:
            self.routing_version, routing = ray.get(self.ss.get_routing.remote())
            self.routing = {int(t): name for t, name in routing.items()}
            self._ps = {}

    def _ps_handle(self, name: str):
        if name not in self._ps:
            self._ps[name] = ray.get_actor(name)
        return self._ps[name]

    def _call(self, fn):
        """Run ``fn()`` (PS calls), retrying while a PS restarts or moves.

        ``fn`` must route by ``self.routing`` when it runs: a retry follows the new routing."""
        deadline = time.time() + self.ps_retry_s
        while True:
            try:
                return fn()
            except (_RETRY + (ValueError,)) as exc:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
                self._ps = {}
                ver = ray.get(self.ss.get_routing.remote())[0]
                if ver != self.routing_version:
                    self._maybe_route(ver)
                if isinstance(exc, ValueError) and "Failed to look up actor" not in str(exc):
                    raise

    def _by_ps(self, tables) -> dict[str, list[int]]:
        """The current routing's owner of each table."""
        by_ps: dict[str, list[int]] = {}
        for t in tables:
            by_ps.setdefault(self.routing[t], []).append(t)
        return by_ps

    def _step(self, lease_id: int, upto: int, b) -> bool:
        t0 = time.perf_counter()
        uniq = {t: np.unique(b.cat[:, t]) for t in range(self.spec.n_tables)}

        def pull():
            refs = {n: self._ps_handle(n).pull.remote({t: uniq[t] for t in ts})
                    for n, ts in self._by_ps(uniq).items()}
            dref = self._ps_handle(self.routing[DENSE]).pull_dense.remote()
            got = {n: ray.get(r) for n, r in refs.items()}
            return got, ray.get(dref)

        got, dense = self._call(pull)
        rows = {}
        for n, d in got.items():
            for t, w in d.items():
                rows[t] = (uniq[t], w)
        import torch
        self.model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in dense.items()})
        _, dg, sg = forward_backward(self.model, b.dense, b.cat, b.label, rows)
        pending = set(uniq)  # tables whose gradients no PS has applied yet

        def push():
            # A PS applies a push whole or not at all; after a move only the tables not yet
            # applied go again, to their new owners, so no gradient is applied twice.
            by_ps = self._by_ps(sorted(pending))
            handles = {n: self._ps_handle(n) for n in by_ps}  # look-ups first: nothing sent yet
            tag = (self.worker_id, lease_id, upto)  # lets a PS take the push back if the
            refs = {n: (ts, handles[n].push.remote({t: (uniq[t], sg[t]) for t in ts}, tag))
                    for n, ts in by_ps.items()}       # batch never commits (a kill right now)
            failed = None
            for ts, ref in refs.values():
                try:
                    ray.get(ref)
                    pending.difference_update(ts)
                except _RETRY as exc:
                    failed = failed or exc
            if failed is not None:
                raise failed
            return ray.get(self._ps_handle(self.routing[DENSE]).push_dense.remote(
                self.worker_id, lease_id, upto, b.sample_id,
                {k: v.numpy() for k, v in dg.items()}))

        ok = self._call(push)
        if self.slow > 1:
            time.sleep((self.slow - 1) * (time.perf_counter() - t0))
        return bool(ok)
