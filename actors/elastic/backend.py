"""RayBackend: applies ScalePlans on a Ray cluster, one placement group per scale unit.

Ray placement groups cannot be resized, so every worker and every PS is its own unit with its
own group: adding a worker adds a group, removing one drains the worker and removes its group.
A PS replacement (more memory or CPU) copies the old PS's state into the new one before the
routing table switches; from the export on, the old PS refuses updates (``TableMoved``) and
workers retry them at the new owner once the routing switches, so no update is lost.
Capacity is requested from the autoscaler with ``request_resources``.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import ray
from ray.exceptions import GetTimeoutError, RayActorError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from raystack.actors.elastic.ps import ParameterServer
from raystack.actors.elastic.shard_service import ShardService
from raystack.actors.elastic.worker import DLRMWorker
from raystack import metrics
from raystack.elastic.checkpoint import _default_shm
from raystack.elastic.config import ElasticConfig
from raystack.elastic.control import Poll
from raystack.elastic.dlrm import DLRMSpec
from raystack.elastic.plan import ScalePlan, UnitSpec
from raystack.elastic.shards import Shard


class RayBackend:
    """Owns the job's actors and placement groups; the :class:`ElasticLoop` drives it."""

    def __init__(self, cfg: ElasticConfig, spec: DLRMSpec, shards: list[Shard], total_rows: int,
                 adopt: bool = False) -> None:
        self.cfg, self.spec, self.job = cfg, spec, cfg.name
        self.total_rows = total_rows
        self.dir = Path(cfg.work_dir) / cfg.name
        if not adopt:  # a fresh job: no state of an earlier run with this name may leak in
            shutil.rmtree(self.dir, ignore_errors=True)
            for f in _default_shm().joinpath("raystack-flash").glob(f"{self.job}-*.npz"):
                f.unlink(missing_ok=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.units: dict[str, UnitSpec] = {}
        self.actors: dict[str, object] = {}
        self.pgs: dict[str, object] = {}
        self.inc: dict[str, int] = {}
        self.kill_times: dict[str, float] = {}  # worker id of the replacement -> kill detected
        self.recoveries: list[float] = []
        self.worker_errors: list[str] = []
        self._node = 0
        name = f"{self.job}-shards"
        if adopt:
            self.ss = ray.get_actor(name)
            st = ray.get(self.ss.get_controller_state.remote())
            for d in st["units"]:
                u = UnitSpec(**d)
                self.units[u.unit_id] = u
                self.inc[u.unit_id] = st["inc"][u.unit_id]
                self.actors[u.unit_id] = ray.get_actor(self.actor_name(u))
                self.pgs[u.unit_id] = ray.util.get_placement_group(f"{self.job}-pg-{u.unit_id}")
        else:
            self.ss = ShardService.options(name=name, num_cpus=0, lifetime="detached").remote(
                str(self.dir / "shards.json"), shards, cfg.faults.max_shard_failures, cfg.epochs,
                job=self.job)
        # every series carries the job's name: jobs sharing a cluster do not add up
        self._tags = {"job": self.job}
        self._m_workers = metrics.gauge("elastic_workers", "running DLRM workers", ("job",))
        self._m_ps = metrics.gauge("elastic_ps", "running parameter servers", ("job",))
        self._m_plans = metrics.counter("elastic_plan_changes", "scale plans applied", ("job",))
        self._m_sps = metrics.gauge("elastic_samples_per_s", "job throughput", ("job",))

    # ---- naming ---------------------------------------------------------------------------
    def worker_id(self, uid: str) -> str:
        return f"{uid}.{self.inc.get(uid, 0)}"

    def actor_name(self, u: UnitSpec) -> str:
        return f"{self.job}-{u.unit_id}" + (f".{self.inc[u.unit_id]}" if u.role == "worker" else "")

    def ps_units(self) -> list[UnitSpec]:
        return sorted((u for u in self.units.values() if u.role == "ps"), key=lambda u: u.index)

    # ---- placement groups -------------------------------------------------------------------
    def _bundle(self, u: UnitSpec) -> dict[str, float]:
        r = self.cfg.resources
        b = {"CPU": round(u.cpus * r.ray_cpus_per_cpu, 4)}
        if r.reserve_memory:
            b["memory"] = int(u.mem_gb * 1e9)
        if r.sim_nodes > 0:
            b[f"sim_node_{self._node % r.sim_nodes}"] = 0.01
            self._node += 1
        return b

    def _make_pg(self, u: UnitSpec):
        pg = placement_group([self._bundle(u)], strategy="STRICT_PACK",
                             name=f"{self.job}-pg-{u.unit_id}", lifetime="detached")
        ray.get(pg.ready(), timeout=120)
        self.pgs[u.unit_id] = pg
        return pg

    def _opts(self, u: UnitSpec) -> dict:
        pg = self.pgs[u.unit_id]
        return {"num_cpus": pg.bundle_specs[0]["CPU"], "name": self.actor_name(u),
                "lifetime": "detached",  # units outlive a controller restart
                "scheduling_strategy": PlacementGroupSchedulingStrategy(pg, 0)}

    def _start_worker(self, u: UnitSpec) -> None:
        slow = self.cfg.faults.slow_workers.get(u.unit_id, 1.0)
        a = DLRMWorker.options(**self._opts(u)).remote(
            self.worker_id(u.unit_id), self.job, self.spec, self.cfg.model.batch_size, slow)
        self.actors[u.unit_id] = a
        a.start.remote()

    def _start_ps(self, u: UnitSpec, tables: list[int], dense: bool) -> None:
        m = self.cfg.model
        self.actors[u.unit_id] = ParameterServer.options(**self._opts(u)).remote(
            self.actor_name(u), self.spec, tables, dense, m.lr_sparse, m.lr_dense,
            str(self.dir / "ckpt"), self.total_rows, m.seed, self.cfg.faults.checkpoint_every_s)

    # ---- applying plans ---------------------------------------------------------------------
    def apply(self, plan: ScalePlan) -> None:
        first = not self.units
        new_ps = [u for u in plan.launch if u.role == "ps"]
        for u in plan.launch:
            self.inc.setdefault(u.unit_id, 0)
            self._make_pg(u)
        for u in new_ps:
            dense = first and u.index == 0
            tables = ([t for t in range(self.spec.n_tables) if t % len(new_ps) == u.index]
                      if first else [])
            self._start_ps(u, tables, dense)
            self.units[u.unit_id] = u
        ray.get([self.actors[u.unit_id].stats.remote() for u in new_ps])
        for u in new_ps:  # replacements take over the old PS's whole state
            if u.replaces:
                old = self.actors[u.replaces]
                ray.get(self.actors[u.unit_id].import_all.remote(old.export_all.remote()))
                self.units.pop(u.replaces)
        ps_removed = [uid for uid in plan.remove if uid in self.units
                      and self.units[uid].role == "ps"]
        for uid in ps_removed:
            self.units.pop(uid)
        self._reroute(plan)
        for uid in plan.remove:
            if uid in self.units and self.units[uid].role == "worker":
                self._remove_worker(uid)
        for uid in {*ps_removed, *(u.replaces for u in new_ps if u.replaces)}:
            self._drop(uid)
        for u in plan.launch:
            if u.role == "worker":
                self.units[u.unit_id] = u
                self._start_worker(u)
        self._m_plans.inc(tags=self._tags)
        self._save_state()
        try:
            from ray.autoscaler.sdk import request_resources
            request_resources(bundles=[self._bundle(u) for u in self.units.values()])
        except Exception:  # a plain local cluster has no autoscaler to ask
            pass

    def _reroute(self, plan: ScalePlan) -> None:
        """Move tables to their owners under the current PS set, then publish the routing."""
        ver, routing = ray.get(self.ss.get_routing.remote())
        routing = {int(t): n for t, n in routing.items()}
        ps = self.ps_units()
        names = {u.unit_id: self.actor_name(u) for u in ps}
        by_name = {self.actor_name(u): self.actors[u.unit_id] for u in ps}
        for u in plan.launch:  # a replacement answers for the old PS's tables
            if u.replaces:
                old = f"{self.job}-{u.replaces}"
                routing = {t: (names[u.unit_id] if n == old else n) for t, n in routing.items()}
        want = {t: names[ps[t % len(ps)].unit_id] for t in range(self.spec.n_tables)}
        want[-1] = routing.get(-1, names[ps[0].unit_id])
        moves: dict[tuple[str, str], list[int]] = {}
        for t, dst in want.items():
            src = routing.get(t)
            if t >= 0 and src is not None and src != dst:
                moves.setdefault((src, dst), []).append(t)
        old_handles = {f"{self.job}-{uid}": self.actors[uid] for uid in plan.remove
                       if uid in self.actors}
        for (src, dst), tables in moves.items():
            h = by_name.get(src) or old_handles[src]
            ray.get(by_name[dst].import_tables.remote(h.export_tables.remote(tables)))
        ray.get(self.ss.set_routing.remote(want))
        for (src, _), tables in moves.items():
            if src in by_name:
                by_name[src].drop_tables.remote(tables)

    def _remove_worker(self, uid: str, timeout_s: float = 15.0) -> None:
        wid, a = self.worker_id(uid), self.actors[uid]
        ray.get(self.ss.drain.remote(wid))
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            try:
                if ray.get(a.status.remote(), timeout=5)["done"]:
                    break
            except (RayActorError, GetTimeoutError):
                break
            time.sleep(0.1)
        self.units.pop(uid, None)
        self._drop(uid)
        self._fence_release(wid)

    def _drop(self, uid: str) -> None:
        a, pg = self.actors.pop(uid, None), self.pgs.pop(uid, None)
        if a is not None:
            ray.kill(a)
        if pg is not None:
            remove_placement_group(pg)

    def _fence_release(self, wid: str) -> None:
        ps0 = self.actors[self.ps_units()[0].unit_id] if self.ps_units() else None
        dense_name = ray.get(self.ss.get_routing.remote())[1].get(-1)
        if dense_name:
            ps0 = ray.get_actor(dense_name)
        applied = ray.get(ps0.fence.remote(wid)) if ps0 is not None else {}
        # its last sparse push, if that batch did not commit, is taken back on every PS: the
        # rows go back to the queue and another worker trains them, once
        ray.get([self.actors[u.unit_id].rollback.remote(wid, applied) for u in self.ps_units()])
        ray.get(self.ss.release.remote(wid, applied, True))

    def relaunch(self, u: UnitSpec) -> None:
        """A worker died: fence its updates, return its rows, start a new incarnation."""
        if u.role != "worker":
            return  # PS actors restart themselves (max_restarts) and restore their checkpoint
        now = time.time()
        old = self.actors.get(u.unit_id)
        if old is not None:
            ray.kill(old)  # it may only look dead (a status timeout): make sure it is
        self._fence_release(self.worker_id(u.unit_id))
        self.inc[u.unit_id] += 1
        self.kill_times[self.worker_id(u.unit_id)] = now
        self._start_worker(u)
        self._save_state()

    def _save_state(self) -> None:
        self._m_workers.set(sum(u.role == "worker" for u in self.units.values()), tags=self._tags)
        self._m_ps.set(sum(u.role == "ps" for u in self.units.values()), tags=self._tags)
        ray.get(self.ss.set_controller_state.remote(
            {"units": [asdict(u) for u in self.units.values()], "inc": self.inc}))

    # ---- observing --------------------------------------------------------------------------
    def poll(self) -> Poll:
        now = time.time()
        try:
            st = ray.get(self.ss.stats.remote(), timeout=30)
        except (RayActorError, GetTimeoutError) as exc:
            return Poll(now, error=f"ShardService unavailable: {exc}")
        workers = {uid: a for uid, a in self.actors.items() if self.units[uid].role == "worker"}
        refs = {uid: a.status.remote() for uid, a in workers.items()}
        dead, errors = [], {}
        for uid, ref in refs.items():
            try:
                s = ray.get(ref, timeout=10)
                if s["error"]:
                    errors[uid] = f"{s['worker_id']}: {s['error']}"
                    self.worker_errors.append(errors[uid])
                    dead.append(uid)
            except RayActorError:
                dead.append(uid)
            except GetTimeoutError:
                pass  # still starting (importing torch) or busy: not dead
        ps_util, ps_mem = [], []
        for u in self.ps_units():
            try:
                s = ray.get(self.actors[u.unit_id].stats.remote(), timeout=10)
                ps_util.append(s["cpu_util"])
                ps_mem.append(s["mem_gb"])
            except (RayActorError, GetTimeoutError):
                pass
        for wid, t_kill in list(self.kill_times.items()):
            t = ray.get(self.ss.first_commit_time.remote(wid))
            if t is not None:
                self.recoveries.append(t - t_kill)
                del self.kill_times[wid]
        unit_of = {self.worker_id(uid): uid for uid in workers}
        rates = {unit_of[w]: tuple(r) for w, r in st["rates"].items() if w in unit_of}
        self._m_sps.set(sum(r for r, _ in rates.values()), tags=self._tags)
        committed = {unit_of[w]: int(n) for w, n in st.get("committed", {}).items() if w in unit_of}
        return Poll(now, dead, rates, st["rows_done"], st["rows_total"], ps_util, ps_mem,
                    st["error"], errors, committed)

    # ---- results and cleanup ------------------------------------------------------------------
    def dense_ps(self):
        return ray.get_actor(ray.get(self.ss.get_routing.remote())[1][-1])

    def audit(self) -> np.ndarray:
        return ray.get(self.dense_ps().audit_counts.remote())

    def model_state(self) -> tuple[dict[str, np.ndarray], dict[int, np.ndarray]]:
        tables: dict[int, np.ndarray] = {}
        for u in self.ps_units():
            tables.update(ray.get(self.actors[u.unit_id].tables.remote()))
        return ray.get(self.dense_ps().pull_dense.remote()), tables

    def shutdown(self) -> None:
        for uid in list(self.actors):
            self._drop(uid)
        ray.kill(self.ss)
