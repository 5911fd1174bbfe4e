"""ParameterServer actor: embedding tables (sparse Adagrad), and on PS 0 the dense network,
the commit fence and the sample-id audit. Table ids are 0..n-1;
:data:`~raystack.elastic.messages.DENSE` stands for the dense network.

Checkpoints are the job's consistent cuts: the controller parks every worker at a batch
boundary, then every PS takes ``snapshot(cid)`` (an in-memory copy, persisted to the run's
storage in the background) while the ShardService records its ledger under the same ``cid``.
A PS that Ray restarts (its process or its node was lost) loads the newest complete cut and
stays frozen (refusing pushes and pulls, which workers retry) until the controller has rolled
every PS and the ledger back to that same cut (``restore``), so the ledger, the audit and the
model state agree again."""
from __future__ import annotations

import os
import time

import numpy as np
import ray

from raystack import metrics
from raystack.elastic.checkpoint import FlashCheckpointer
from raystack.elastic.dlrm import DLRMDense, DLRMSpec, adagrad_rows, init_table, undo_adagrad_rows
from raystack.elastic.messages import DENSE, PSStats
from raystack.runtime.storage import Storage


class PSFrozen(RuntimeError):
    """This PS was restarted and waits for the controller to restore the job's last cut:
    retry later (the worker that gets this is fenced and replaced before then)."""


class TableMoved(RuntimeError):
    """This PS handed the table (or the dense net) to another PS: re-read the routing, retry.

    Raised instead of applying an update, so nothing is applied to a copy that is already on
    its way to the new owner (and lost there)."""


@ray.remote(max_restarts=-1)
class ParameterServer:
    """Holds embedding tables ``tables``; ``dense=True`` also holds the dense network."""

    def __init__(self, name: str, spec: DLRMSpec, tables: list[int], dense: bool, lr_sparse: float,
                 lr_dense: float, storage: Storage, total_rows: int, seed: int = 0,
                 job: str = "") -> None:
        import torch

        torch.set_num_threads(1)
        self.name, self.spec, self.lr, self.lr_dense = name, spec, lr_sparse, lr_dense
        self.ckpt = FlashCheckpointer(name, storage)
        self.version = 0  # the last cut this PS took or was restored to
        self.w: dict[int, np.ndarray] = {}
        self.acc: dict[int, np.ndarray] = {}
        self.touched: dict[int, np.ndarray] = {}
        self.dense: dict[str, np.ndarray] = {}
        self.dense_acc: dict[str, np.ndarray] = {}
        self.audit = np.zeros(0, dtype=np.int32)
        self.applied: dict[int, tuple[str, int]] = {}  # lease -> (worker, offset applied)
        self.fenced: set[str] = set()  # worker incarnations declared dead
        self.sealed: set[int] = set()  # tables exported to a new owner (DENSE: the dense net)
        # table -> worker -> (lease, upto, ids, grads, step) of that worker's last sparse push:
        # a push whose batch never commits (the worker died before its dense push) is taken
        # back by rollback(), so the batch's rows, trained again elsewhere, update once
        self.undo: dict[int, dict[str, tuple]] = {}
        self._cpu0, self._t0 = time.process_time(), time.time()
        self._initial = (tables, dense, seed, total_rows)
        # restarted by Ray (its process or node was lost): back to the job's last complete cut,
        # frozen until the controller has rolled the others and the ledger back to it too
        self.restored = self.frozen = ray.get_runtime_context().was_current_actor_reconstructed
        if self.restored:
            cid = ray.get(ray.get_actor(f"{job}-shards").checkpoint_version.remote()) if job else 0
            self._reset(cid)
        else:
            self._reset(0)
        self._m_rows = metrics.gauge("elastic_ps_touched_rows", "embedding rows touched", ("ps",))

    # ---- state ---------------------------------------------------------------------------
    def _add_table(self, t: int, w: np.ndarray, acc: np.ndarray | None,
                   touched: np.ndarray | None = None) -> None:
        self.w[t] = w
        self.acc[t] = acc if acc is not None else np.zeros_like(w)
        self.touched[t] = touched if touched is not None else np.zeros(len(w), dtype=bool)

    def _state(self) -> dict[str, np.ndarray]:
        s: dict[str, np.ndarray] = {}
        for t in self.w:
            s[f"w/{t}"], s[f"acc/{t}"], s[f"touched/{t}"] = self.w[t], self.acc[t], self.touched[t]
        for k in self.dense:
            s[f"dense/{k}"], s[f"dacc/{k}"] = self.dense[k], self.dense_acc[k]
        s["audit"] = self.audit
        s["applied"] = np.array([[lease, off] for lease, (_, off) in self.applied.items()],
                                dtype=np.int64).reshape(-1, 2)
        s["applied_workers"] = np.array([w for _, (w, _) in self.applied.items()], dtype=object
                                        ).astype(str)
        s["fenced"] = np.array(sorted(self.fenced), dtype=object).astype(str)
        return s

    def _load(self, s: dict[str, np.ndarray]) -> None:
        for k in s:
            if k.startswith("w/"):
                t = int(k[2:])
                self._add_table(t, s[k], s[f"acc/{t}"], s[f"touched/{t}"])
            elif k.startswith("dense/"):
                self.dense[k[6:]], self.dense_acc[k[6:]] = s[k], s[f"dacc/{k[6:]}"]
        self.audit = s["audit"]
        self.applied = {int(lease): (str(w), int(off)) for (lease, off), w in
                        zip(s["applied"], s["applied_workers"])}
        self.fenced |= {str(w) for w in s.get("fenced", ())}
        self.version = int(s["__version__"])

    def _reset(self, cid: int) -> None:
        """This PS's state at cut ``cid`` (0: its initial state, made from the seed)."""
        self.w, self.acc, self.touched, self.dense, self.dense_acc = {}, {}, {}, {}, {}
        self.applied, self.undo, self.sealed = {}, {}, set()
        self.audit = np.zeros(0, dtype=np.int32)
        snap = self.ckpt.load(cid) if cid > 0 else None
        if cid > 0 and snap is None:
            raise RuntimeError(f"{self.name}: no snapshot of cut {cid} in {self.ckpt.storage.uri}")
        if snap is not None:
            snap["__version__"] = np.array(cid)
            self._load(snap)
            return
        tables, dense, seed, total_rows = self._initial
        for t in tables:
            self._add_table(t, init_table(self.spec, t, seed), None)
        if dense:
            model = DLRMDense(self.spec, seed)
            self.dense = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
            self.dense_acc = {k: np.zeros_like(v) for k, v in self.dense.items()}
            self.audit = np.zeros(total_rows, dtype=np.int32)
        self.version = 0

    def _check_live(self) -> None:
        if self.frozen:
            raise PSFrozen(f"{self.name} was restarted and waits for the job's restore")

    def _check_owned(self, tables) -> None:
        gone = sorted(t for t in tables if t in self.sealed or (t != DENSE and t not in self.w))
        if gone:
            raise TableMoved(f"{self.name} no longer owns tables {gone}")

    # ---- sparse ----------------------------------------------------------------------------
    def pull(self, req: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Rows ``req[t]`` (unique ids) of each table ``t`` (an exported one may still be read)."""
        self._check_live()
        self._check_owned([t for t in req if t not in self.w])
        return {t: self.w[t][ids] for t, ids in req.items()}

    def push(self, grads: dict[int, tuple[np.ndarray, np.ndarray]],
             tag: tuple[str, int, int] | None = None) -> None:
        """Apply all of ``grads`` or none (TableMoved), so a retry never applies one twice.

        ``tag`` = (worker, lease, upto) of the batch: the push is kept until the worker's next
        one, so :meth:`rollback` can take it back if that batch never commits."""
        self._check_live()
        self._check_owned(grads)
        for t, (ids, g) in grads.items():
            step = adagrad_rows(self.w[t], self.acc[t], ids, g, self.lr)
            self.touched[t][ids] = True
            if tag is not None:
                self.undo.setdefault(t, {})[tag[0]] = (tag[1], tag[2], ids, g, step)

    def rollback(self, worker_id: str, committed: dict[int, int]) -> int:
        """``worker_id`` is fenced and ``committed`` maps its leases to the offsets its dense
        pushes (commits) reached: take back its last sparse push if that batch is not among
        them. Returns the number of tables rolled back."""
        undone = 0
        for t, by_worker in self.undo.items():
            rec = by_worker.pop(worker_id, None)
            if rec is None or t not in self.w or t in self.sealed:
                continue
            lease, upto, ids, g, step = rec
            if committed.get(lease, -1) < upto:
                undo_adagrad_rows(self.w[t], self.acc[t], ids, g, step)
                undone += 1
        return undone

    # ---- dense, fence, audit (PS 0) ------------------------------------------------------
    def pull_dense(self) -> dict[str, np.ndarray]:
        self._check_live()
        return self.dense

    def push_dense(self, worker_id: str, lease_id: int, upto: int, sample_ids: np.ndarray,
                   grads: dict[str, np.ndarray]) -> bool:
        """Apply a batch's dense update: the batch's commit point. False if the lease is fenced."""
        if worker_id in self.fenced:
            return False
        self._check_live()
        self._check_owned([DENSE])
        for k, g in grads.items():
            self.dense_acc[k] += g * g
            self.dense[k] -= self.lr_dense * g / (np.sqrt(self.dense_acc[k]) + 1e-8)
        np.add.at(self.audit, sample_ids, 1)
        self.applied[lease_id] = (worker_id, upto)
        return True

    def fence(self, worker_id: str) -> dict[int, int]:
        """Refuse further updates from ``worker_id``'s leases; return lease -> offset applied."""
        self.fenced.add(worker_id)
        return {lease: off for lease, (w, off) in self.applied.items() if w == worker_id}

    def audit_counts(self) -> np.ndarray:
        return self.audit

    # ---- moving tables ---------------------------------------------------------------------
    def export_all(self) -> dict:
        """Everything, for a replacement PS; from now on this PS refuses updates."""
        self.sealed |= {DENSE, *self.w}
        return {**self._state(), "__undo__": self.undo}

    def import_all(self, s: dict) -> None:
        s = dict(s)
        self.undo = {t: dict(r) for t, r in s.pop("__undo__", {}).items()}
        # Arrays that arrive through the object store are read-only views of shared memory;
        # this PS updates its tables, dense net and audit in place, so it needs its own copies.
        s = {k: np.array(v, copy=True) for k, v in s.items()}
        s["__version__"] = np.array(self.version)
        self._load(s)

    def export_tables(self, tables: list[int]) -> dict[int, tuple]:
        """Tables for their new owner; from now on this PS refuses updates to them."""
        self.sealed |= set(tables)
        return {t: (self.w[t], self.acc[t], self.touched[t], self.undo.get(t, {})) for t in tables}

    def import_tables(self, d: dict[int, tuple]) -> None:
        for t, (w, a, tc, undo) in d.items():
            self._add_table(t, w.copy(), a.copy(), tc.copy())
            self.undo[t] = dict(undo)  # the last pushes move with the table, for rollback()
            self.sealed.discard(t)  # a table may come back to a PS that gave it away

    def drop_tables(self, tables: list[int]) -> None:
        for t in tables:
            self.w.pop(t, None)
            self.acc.pop(t, None)
            self.touched.pop(t, None)
            self.undo.pop(t, None)

    def tables(self) -> dict[int, np.ndarray]:
        return self.w

    # ---- observation -----------------------------------------------------------------------
    def ping(self) -> str:
        return self.name

    def stats(self) -> PSStats:
        now, cpu = time.time(), time.process_time()
        util = (cpu - self._cpu0) / max(now - self._t0, 1e-6)
        self._cpu0, self._t0 = cpu, now
        rows = int(sum(t.sum() for t in self.touched.values()))
        self._m_rows.set(rows, tags={"ps": self.name})
        mem_gb = rows * self.spec.dim * 4 * 2 / 1e9
        return PSStats(self.name, sorted(self.w), util, mem_gb, self.restored, self.version, os.getpid(),
                       self.ckpt.last_copy_s, self.frozen, self.ckpt.persisted_version, self.ckpt.error)

    # ---- the job's consistent cuts ---------------------------------------------------------
    def snapshot(self, cid: int) -> float:
        """Take cut ``cid`` (workers are parked): an in-memory copy, persisted in the background;
        returns the copy seconds."""
        self.version = cid
        return self.ckpt.save(self._state(), cid)

    def persisted(self) -> int:
        """The newest cut this PS has on storage."""
        return self.ckpt.persisted_version

    def flush(self) -> int:
        """Wait until every cut taken is on storage; returns the newest."""
        return self.ckpt.flush()

    def restore(self, cid: int, fence: list[str]) -> int:
        """Back to cut ``cid`` (dropping everything applied since), refusing from now on the
        worker incarnations in ``fence``; thaws a restarted PS. Returns ``cid``."""
        self._reset(cid)
        self.fenced |= set(fence)
        self.frozen = False
        return cid
