"""ParameterServer actor: embedding tables (sparse Adagrad), and on PS 0 the dense network,
the commit fence and the sample-id audit. Flash-checkpointed; restores itself on restart.
Table ids are 0..n-1; :data:`~raystack.elastic.messages.DENSE` stands for the dense network."""
from __future__ import annotations

import os
import time

import numpy as np
import ray

from raystack import metrics
from raystack.elastic.checkpoint import FlashCheckpointer
from raystack.elastic.dlrm import DLRMDense, DLRMSpec, adagrad_rows, init_table, undo_adagrad_rows
from raystack.elastic.messages import DENSE, PSStats


class TableMoved(RuntimeError):
    """This PS handed the table (or the dense net) to another PS: re-read the routing, retry.

    Raised instead of applying an update, so nothing is applied to a copy that is already on
    its way to the new owner (and lost there)."""


@ray.remote(max_restarts=-1)
class ParameterServer:
    """Holds embedding tables ``tables``; ``dense=True`` also holds the dense network."""

    def __init__(self, name: str, spec: DLRMSpec, tables: list[int], dense: bool, lr_sparse: float,
                 lr_dense: float, ckpt_dir: str, total_rows: int, seed: int = 0,
                 ckpt_every_s: float = 2.0) -> None:
        import torch

        torch.set_num_threads(1)
        self.name, self.spec, self.lr, self.lr_dense = name, spec, lr_sparse, lr_dense
        self.ckpt = FlashCheckpointer(name, ckpt_dir)
        self.ckpt_every_s = ckpt_every_s
        self.version, self._last_ckpt = 0, time.time()
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
        snap = self.ckpt.restore()
        self.restored = snap is not None
        if snap is not None:
            self._load(snap)
        else:
            for t in tables:
                self._add_table(t, init_table(spec, t, seed), None)
            if dense:
                model = DLRMDense(spec, seed)
                self.dense = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
                self.dense_acc = {k: np.zeros_like(v) for k, v in self.dense.items()}
                self.audit = np.zeros(total_rows, dtype=np.int32)
            self._checkpoint()
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

    def _checkpoint(self) -> float:
        self.version += 1
        self._last_ckpt = time.time()
        return self.ckpt.save(self._state(), self.version)

    def _maybe_checkpoint(self) -> None:
        if time.time() - self._last_ckpt >= self.ckpt_every_s:
            self._checkpoint()

    def _check_owned(self, tables) -> None:
        gone = sorted(t for t in tables if t in self.sealed or (t != DENSE and t not in self.w))
        if gone:
            raise TableMoved(f"{self.name} no longer owns tables {gone}")

    # ---- sparse ----------------------------------------------------------------------------
    def pull(self, req: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Rows ``req[t]`` (unique ids) of each table ``t`` (an exported one may still be read)."""
        self._check_owned([t for t in req if t not in self.w])
        return {t: self.w[t][ids] for t, ids in req.items()}

    def push(self, grads: dict[int, tuple[np.ndarray, np.ndarray]],
             tag: tuple[str, int, int] | None = None) -> None:
        """Apply all of ``grads`` or none (TableMoved), so a retry never applies one twice.

        ``tag`` = (worker, lease, upto) of the batch: the push is kept until the worker's next
        one, so :meth:`rollback` can take it back if that batch never commits."""
        self._check_owned(grads)
        for t, (ids, g) in grads.items():
            step = adagrad_rows(self.w[t], self.acc[t], ids, g, self.lr)
            self.touched[t][ids] = True
            if tag is not None:
                self.undo.setdefault(t, {})[tag[0]] = (tag[1], tag[2], ids, g, step)
        self._maybe_checkpoint()

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
        return self.dense

    def push_dense(self, worker_id: str, lease_id: int, upto: int, sample_ids: np.ndarray,
                   grads: dict[str, np.ndarray]) -> bool:
        """Apply a batch's dense update: the batch's commit point. False if the lease is fenced."""
        if worker_id in self.fenced:
            return False
        self._check_owned([DENSE])
        for k, g in grads.items():
            self.dense_acc[k] += g * g
            self.dense[k] -= self.lr_dense * g / (np.sqrt(self.dense_acc[k]) + 1e-8)
        np.add.at(self.audit, sample_ids, 1)
        self.applied[lease_id] = (worker_id, upto)
        self._maybe_checkpoint()
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
        self._checkpoint()

    def export_tables(self, tables: list[int]) -> dict[int, tuple]:
        """Tables for their new owner; from now on this PS refuses updates to them."""
        self.sealed |= set(tables)
        return {t: (self.w[t], self.acc[t], self.touched[t], self.undo.get(t, {})) for t in tables}

    def import_tables(self, d: dict[int, tuple]) -> None:
        for t, (w, a, tc, undo) in d.items():
            self._add_table(t, w.copy(), a.copy(), tc.copy())
            self.undo[t] = dict(undo)  # the last pushes move with the table, for rollback()
            self.sealed.discard(t)  # a table may come back to a PS that gave it away
        self._checkpoint()

    def drop_tables(self, tables: list[int]) -> None:
        for t in tables:
            self.w.pop(t, None)
            self.acc.pop(t, None)
            self.touched.pop(t, None)
            self.undo.pop(t, None)
        self._checkpoint()

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
                       self.ckpt.last_copy_s)

    def checkpoint_now(self) -> float:
        """Force a flash checkpoint; returns the in-memory copy time (seconds)."""
        s = self._checkpoint()
        self.ckpt.flush()
        return s
