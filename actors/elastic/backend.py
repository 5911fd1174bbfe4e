"""RayBackend: applies ScalePlans on a Ray cluster, one placement group per scale unit.

Ray placement groups cannot be resized, so every worker and every PS is its own unit with its
own group: adding a worker adds a group, removing one drains the worker and removes its group.
A PS replacement (more memory or CPU) copies the old PS's state into the new one before the
routing table switches; from the export on, the old PS refuses updates (``TableMoved``) and
workers retry them at the new owner once the routing switches, so no update is lost.
Capacity is requested from the autoscaler with ``request_resources``.

The actors and placement groups belong to one kernel :class:`ActorGroup` (members: the
ShardService and every unit), which spawns and relaunches them, fans calls out and polls
the workers' status in one batch.
"""
from __future__ import annotations

import logging
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import ray

from raystack import metrics
from raystack.actors.elastic.ps import ParameterServer
from raystack.actors.elastic.shard_service import ShardService
from raystack.actors.elastic.worker import DLRMWorker
from raystack.elastic.checkpoint import _default_shm
from raystack.elastic.config import ElasticConfig
from raystack.elastic.control import Poll
from raystack.elastic.dlrm import DLRMSpec
from raystack.elastic.messages import DENSE
from raystack.elastic.plan import ScalePlan, UnitSpec
from raystack.elastic.shards import Shard
from raystack.runtime.group import ActorGroup, MemberFailure, MemberSpec, PlacementSpec, Spawner
from raystack.runtime.health import Health

logger = logging.getLogger(__name__)

SHARDS = "shards"  # the ShardService's member key
STATUS_TIMEOUT_S = 10.0  # a worker slower than this to answer is busy or starting, not dead
SHARDS_TIMEOUT_S = 30.0  # the ShardService slower than this is lost: the job fails
DRAIN_TIMEOUT_S = 15.0  # a removed worker gets this long to finish its batch


class RayBackend:
    """Owns the job's actors and placement groups; the :class:`ElasticLoop` drives it."""

    def __init__(self, cfg: ElasticConfig, spec: DLRMSpec, shards: list[Shard], total_rows: int,
                 adopt: bool = False, spawner: Spawner | None = None) -> None:
        self.cfg, self.spec, self.job = cfg, spec, cfg.name
        self.total_rows = total_rows
        self.dir = Path(cfg.work_dir) / cfg.name
        if not adopt:  # a fresh job: no state of an earlier run with this name may leak in
            shutil.rmtree(self.dir, ignore_errors=True)
            for f in _default_shm().joinpath("raystack-flash").glob(f"{self.job}-*.npz"):
                f.unlink(missing_ok=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.group = ActorGroup(f"elastic:{self.job}", spawner, poll_timeout_s=STATUS_TIMEOUT_S)
        self.units: dict[str, UnitSpec] = {}
        self.inc: dict[str, int] = {}
        self.kill_times: dict[str, float] = {}  # worker id of the replacement -> kill detected
        self.recoveries: list[float] = []
        self.worker_errors: list[str] = []
        self._node = 0
        name = f"{self.job}-shards"
        ss_spec = MemberSpec(SHARDS, ShardService, (str(self.dir / "shards.json"), shards,
                                                    cfg.faults.max_shard_failures, cfg.epochs),
                             {"job": self.job}, {"name": name, "num_cpus": 0, "lifetime": "detached"})
        if adopt:
            self.group.adopt(ss_spec, ray.get_actor(name))
            st = self.group.ask(SHARDS, "get_controller_state")
            for d in st["units"]:
                u = UnitSpec(**d)
                self.units[u.unit_id] = u
                self.inc[u.unit_id] = st["inc"][u.unit_id]
                pg_spec = self._pg_spec(u)
                self.group.adopt_placement(pg_spec, ray.util.get_placement_group(pg_spec.ray_name))
                self.group.adopt(self._member_spec(u), ray.get_actor(self.actor_name(u)))
        else:
            self.group.spawn(ss_spec)
        # every series carries the job's name: jobs sharing a cluster do not add up
        self._tags = {"job": self.job}
        self._m_workers = metrics.gauge("elastic_workers", "running DLRM workers", ("job",))
        self._m_ps = metrics.gauge("elastic_ps", "running parameter servers", ("job",))
        self._m_plans = metrics.counter("elastic_plan_changes", "scale plans applied", ("job",))
        self._m_sps = metrics.gauge("elastic_samples_per_s", "job throughput", ("job",))

    # ---- naming and handles -------------------------------------------------------------------
    @property
    def ss(self):
        """The ShardService actor."""
        return self.group.handle(SHARDS)

    @property
    def actors(self) -> dict[str, object]:
        """Unit id -> its actor (workers and PS)."""
        return {k: self.group.handle(k) for k in self.group.keys if k != SHARDS}

    def worker_id(self, uid: str) -> str:
        return f"{uid}.{self.inc.get(uid, 0)}"

    def actor_name(self, u: UnitSpec) -> str:
        return f"{self.job}-{u.unit_id}" + (f".{self.inc[u.unit_id]}" if u.role == "worker" else "")

    def ps_units(self) -> list[UnitSpec]:
        return sorted((u for u in self.units.values() if u.role == "ps"), key=lambda u: u.index)

    def _ps_keys(self) -> list[str]:
        return [u.unit_id for u in self.ps_units()]

    # ---- placement groups and member specs ------------------------------------------------------
    def _bundle(self, u: UnitSpec) -> dict[str, float]:
        r = self.cfg.resources
        b = {"CPU": round(u.cpus * r.ray_cpus_per_cpu, 4)}
        if r.reserve_memory:
            b["memory"] = int(u.mem_gb * 1e9)
        if r.sim_nodes > 0:
            b[f"sim_node_{self._node % r.sim_nodes}"] = 0.01
            self._node += 1
        return b

    def _pg_spec(self, u: UnitSpec) -> PlacementSpec:
        return PlacementSpec(u.unit_id, (self._bundle(u),), "STRICT_PACK", detached=True,
                             ray_name=f"{self.job}-pg-{u.unit_id}")

    def _member_spec(self, u: UnitSpec, tables: list[int] | None = None, dense: bool = False) -> MemberSpec:
        opts = {"num_cpus": round(u.cpus * self.cfg.resources.ray_cpus_per_cpu, 4),
                "name": self.actor_name(u), "lifetime": "detached"}  # units outlive a controller restart
        if u.role == "worker":
            slow = self.cfg.faults.slow_workers.get(u.unit_id, 1.0)
            args = (self.worker_id(u.unit_id), self.job, self.spec, self.cfg.model.batch_size, slow)
            return MemberSpec(u.unit_id, DLRMWorker, args, options=opts, placement=u.unit_id)
        m = self.cfg.model
        args = (self.actor_name(u), self.spec, tables or [], dense, m.lr_sparse, m.lr_dense,
                str(self.dir / "ckpt"), self.total_rows, m.seed, self.cfg.faults.checkpoint_every_s)
        return MemberSpec(u.unit_id, ParameterServer, args, options=opts, placement=u.unit_id)

    def _start_worker(self, u: UnitSpec) -> None:
        self.group.spawn(self._member_spec(u))
        self.group.submit(u.unit_id, "start")

    # ---- applying plans ---------------------------------------------------------------------
    def apply(self, plan: ScalePlan) -> ScalePlan:
        first = not self.units
        new_ps = [u for u in plan.launch if u.role == "ps"]
        for u in plan.launch:
            self.inc.setdefault(u.unit_id, 0)
        self.group.reserve(*[self._pg_spec(u) for u in plan.launch])  # all at once
        for u in new_ps:
            dense = first and u.index == 0
            tables = ([t for t in range(self.spec.n_tables) if t % len(new_ps) == u.index]
                      if first else [])
            self.group.spawn(self._member_spec(u, tables, dense))
            self.units[u.unit_id] = u
        self.group.call("ping", keys=[u.unit_id for u in new_ps])  # the new PS are up
        for u in new_ps:  # replacements take over the old PS's whole state
            if u.replaces:
                state = self.group.submit(u.replaces, "export_all")
                self.group.ask(u.unit_id, "import_all", state.future)
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
        except Exception as exc:  # noqa: BLE001 - a plain local cluster has no autoscaler to ask
            logger.debug("request_resources: %s", exc)
        return plan

    def _reroute(self, plan: ScalePlan) -> None:
        """Move tables to their owners under the current PS set, then publish the routing."""
        _, routing = self.group.ask(SHARDS, "get_routing")
        routing = {int(t): n for t, n in routing.items()}
        ps = self.ps_units()
        names = {u.unit_id: self.actor_name(u) for u in ps}
        key_of = {self.actor_name(u): u.unit_id for u in ps}
        for u in plan.launch:  # a replacement answers for the old PS's tables
            if u.replaces:
                old = f"{self.job}-{u.replaces}"
                routing = {t: (names[u.unit_id] if n == old else n) for t, n in routing.items()}
        want = {t: names[ps[t % len(ps)].unit_id] for t in range(self.spec.n_tables)}
        want[DENSE] = routing.get(DENSE, names[ps[0].unit_id])
        moves: dict[tuple[str, str], list[int]] = {}
        for t, dst in want.items():
            src = routing.get(t)
            if t != DENSE and src is not None and src != dst:
                moves.setdefault((src, dst), []).append(t)
        leaving = {f"{self.job}-{uid}": uid for uid in plan.remove if uid in self.group}
        for (src, dst), tables in moves.items():
            exported = self.group.submit(key_of.get(src) or leaving[src], "export_tables", tables)
            self.group.ask(key_of[dst], "import_tables", exported.future)
        self.group.ask(SHARDS, "set_routing", want)
        for (src, _), tables in moves.items():
            if src in key_of:
                self.group.submit(key_of[src], "drop_tables", tables)

    def _remove_worker(self, uid: str) -> None:
        wid = self.worker_id(uid)
        self.group.ask(SHARDS, "drain", wid)
        deadline = time.time() + DRAIN_TIMEOUT_S
        while time.time() < deadline:
            m = self.group.poll("status", keys=[uid], timeout_s=5).members[uid]
            if m.health is not Health.ALIVE or m.reply.done:
                break
            time.sleep(0.1)
        self.units.pop(uid, None)
        self._drop(uid)
        self._fence_release(wid)

    def _drop(self, uid: str) -> None:
        if uid in self.group:
            self.group.remove(uid)

    def _dense_key(self) -> str | None:
        """The unit holding the dense network (and so the fence and the audit)."""
        dense_name = self.group.ask(SHARDS, "get_routing")[1].get(DENSE)
        return next((u.unit_id for u in self.ps_units() if self.actor_name(u) == dense_name),
                    self.ps_units()[0].unit_id if self.ps_units() else None)

    def _fence_release(self, wid: str) -> None:
        dense = self._dense_key()
        applied = self.group.ask(dense, "fence", wid) if dense is not None else {}
        # its last sparse push, if that batch did not commit, is taken back on every PS: the
        # rows go back to the queue and another worker trains them, once
        self.group.call("rollback", wid, applied, keys=self._ps_keys())
        self.group.ask(SHARDS, "release", wid, applied, True)

    def relaunch(self, u: UnitSpec) -> None:
        """A worker died: fence its updates, return its rows, start a new incarnation."""
        if u.role != "worker":
            return  # PS actors restart themselves (max_restarts) and restore their checkpoint
        now = time.time()
        self.group.kill(u.unit_id)  # it may only look dead (a status timeout): make sure it is
        self._fence_release(self.worker_id(u.unit_id))
        self.inc[u.unit_id] += 1
        self.kill_times[self.worker_id(u.unit_id)] = now
        self.group.respawn([u.unit_id], spec_for=lambda _: self._member_spec(u))
        self.group.submit(u.unit_id, "start")
        self._save_state()

    def _save_state(self) -> None:
        self._m_workers.set(sum(u.role == "worker" for u in self.units.values()), tags=self._tags)
        self._m_ps.set(sum(u.role == "ps" for u in self.units.values()), tags=self._tags)
        self.group.ask(SHARDS, "set_controller_state",
                       {"units": [asdict(u) for u in self.units.values()], "inc": self.inc})

    # ---- observing --------------------------------------------------------------------------
    def poll(self) -> Poll:
        now = time.time()
        try:
            st = self.group.ask(SHARDS, "stats", timeout_s=SHARDS_TIMEOUT_S)
        except MemberFailure as exc:
            return Poll(now, error=f"ShardService unavailable: {exc.reason}")
        workers = [uid for uid, u in self.units.items() if u.role == "worker" and uid in self.group]
        status = self.group.poll("status", keys=workers)
        dead, errors = [], {}
        for uid, m in status.members.items():
            if m.health is Health.ALIVE:
                if m.reply.error:
                    errors[uid] = f"{m.reply.worker_id}: {m.reply.error}"
                    self.worker_errors.append(errors[uid])
                    dead.append(uid)
            elif m.health.failed:
                dead.append(uid)
            # UNREACHABLE: still starting (importing torch) or busy: not dead
        ps = self.group.poll("stats", keys=self._ps_keys()).replies()
        ps_util = [s.cpu_util for s in ps.values()]
        ps_mem = [s.mem_gb for s in ps.values()]
        if self.kill_times:
            first = self.group.ask(SHARDS, "first_commit_times", list(self.kill_times))
            for wid, t in first.items():
                self.recoveries.append(t - self.kill_times.pop(wid))
        unit_of = {self.worker_id(uid): uid for uid in workers}
        rates = {unit_of[w]: tuple(r) for w, r in st.rates.items() if w in unit_of}
        self._m_sps.set(sum(r for r, _ in rates.values()), tags=self._tags)
        committed = {unit_of[w]: int(n) for w, n in st.committed.items() if w in unit_of}
        return Poll(now, dead, rates, st.rows_done, st.rows_total, ps_util, ps_mem,
                    st.error, errors, committed)

    # ---- results and cleanup ------------------------------------------------------------------
    def audit(self) -> np.ndarray:
        return self.group.ask(self._dense_key(), "audit_counts")

    def model_state(self) -> tuple[dict[str, np.ndarray], dict[int, np.ndarray]]:
        tables: dict[int, np.ndarray] = {}
        for part in self.group.call("tables", keys=self._ps_keys()):
            tables.update(part)
        return self.group.ask(self._dense_key(), "pull_dense"), tables

    def shutdown(self) -> None:
        """Stop every actor (the ShardService too) and remove every placement group."""
        self.group.shutdown()
