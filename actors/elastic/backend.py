"""RayBackend: applies ScalePlans on a Ray cluster, one placement group per scale unit.

Ray placement groups cannot be resized, so every worker and every PS is its own unit with its
own group: adding a worker adds a group, removing one drains the worker and removes its group.
A PS replacement (more memory or CPU) copies the old PS's state into the new one before the
routing table switches; from the export on, the old PS refuses updates (``TableMoved``) and
workers retry them at the new owner once the routing switches, so no update is lost.
Capacity is requested from the autoscaler with ``request_resources`` before the placement
groups are reserved (the floor follows the job: it shrinks with it and is cleared at the end);
an error from that request stops the job. Units are aimed at the least-used nodes, so the PS
and the workers spread and one lost node takes few of them.

Exactly once, parameter servers included: every ``faults.checkpoint_every_s`` the backend takes
a consistent cut (workers parked at a batch boundary; every PS snapshots, the ShardService
records its ledger under the same id; complete once every PS has persisted it to the run's
storage). When a PS is lost (process or node) Ray restarts it at the last complete cut, frozen;
the backend then kills the workers, rolls every PS and the ledger back to that cut and starts
new worker incarnations, so the ledger, the audit and the model agree (the rows committed
since the cut are trained again, once).

The actors and placement groups belong to one kernel :class:`ActorGroup` (members: the
ShardService and every unit), which spawns and relaunches them, fans calls out and polls
the workers' status in one batch.
"""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass

import numpy as np
import ray

from raystack import metrics
from raystack.actors.elastic.ps import ParameterServer
from raystack.actors.elastic.shard_service import ShardService
from raystack.actors.elastic.worker import DLRMWorker
from raystack.elastic.config import ElasticConfig
from raystack.elastic.control import Poll
from raystack.elastic.dlrm import DLRMSpec
from raystack.elastic.messages import DENSE
from raystack.elastic.plan import ScalePlan, UnitSpec
from raystack.elastic.shards import Shard
from raystack.runtime.group import ActorGroup, MemberFailure, MemberSpec, PlacementSpec, Spawner
from raystack.runtime.health import Health
from raystack.runtime.storage import RunDir

logger = logging.getLogger(__name__)

SHARDS = "shards"  # the ShardService's member key
STATUS_TIMEOUT_S = 10.0  # a worker slower than this to answer is busy or starting, not dead
SHARDS_TIMEOUT_S = 30.0  # the ShardService slower than this is lost: the job fails
DRAIN_TIMEOUT_S = 15.0  # a removed worker gets this long to finish its batch
CUT_TIMEOUT_S = 5.0  # workers that do not park within this long: the cut is tried again later


class CapacityError(RuntimeError):
    """The cluster (with its autoscaler) could not give a plan's units room in time."""


@dataclass(frozen=True)
class Restore:
    """The job rolled back to a consistent cut after a parameter server was lost."""

    time: float           # when the backend began the restore
    cut: int              # the cut restored to
    rows_redone: int      # rows committed after the cut, trained again
    ps: tuple[str, ...]   # the parameter servers that had been restarted


def request_capacity(bundles: list[dict[str, float]]) -> None:
    """Ask the autoscaler for ``bundles`` (replacing the job's previous request; [] clears it).
    Errors propagate: a request that fails must not pass unnoticed."""
    from ray.autoscaler.sdk import request_resources

    request_resources(bundles=bundles)


class RayBackend:
    """Owns the job's actors and placement groups; the :class:`ElasticLoop` drives it."""

    def __init__(self, cfg: ElasticConfig, spec: DLRMSpec, shards: list[Shard], total_rows: int,
                 run_dir: RunDir, adopt: bool = False, spawner: Spawner | None = None) -> None:
        self.cfg, self.spec, self.job = cfg, spec, cfg.name
        self.total_rows = total_rows
        self.run_dir = run_dir  # every file of the job: <work_dir>/<name>/<run id>/
        self.store = run_dir.storage
        self.group = ActorGroup(f"elastic:{self.job}", spawner, poll_timeout_s=STATUS_TIMEOUT_S,
                                ready_timeout_s=cfg.resources.capacity_timeout_s)
        self.units: dict[str, UnitSpec] = {}
        self.inc: dict[str, int] = {}
        self.kill_times: dict[str, float] = {}  # worker id of the replacement -> kill detected
        self.recoveries: list[float] = []
        self.worker_errors: list[str] = []
        self.restores: list[Restore] = []
        self._node = 0
        self._cut, self._cut_t, self._pending_cuts = 0, 0.0, []
        self._ps_lost_since: float | None = None
        name = f"{self.job}-shards"
        ss_spec = MemberSpec(SHARDS, ShardService, (self.store.child("shards"), shards,
                                                    cfg.faults.max_shard_failures, cfg.epochs),
                             {"job": self.job}, {"name": name, "num_cpus": 0, "lifetime": "detached",
                                                 **driver_node_affinity()})
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

    def _pg_spec(self, u: UnitSpec, target: str = "") -> PlacementSpec:
        return PlacementSpec(u.unit_id, (self._bundle(u),), "STRICT_PACK", detached=True,
                             ray_name=f"{self.job}-pg-{u.unit_id}", target_node=target)

    def _targets(self, units: list[UnitSpec]) -> dict[str, str]:
        """A node for each new unit: the one with the fewest of this job's units (PS first),
        so the PS and the workers spread and a lost node takes as few as possible."""
        import ray

        if not ray.is_initialized() or not units:
            return {}
        load = {n["NodeID"]: 0 for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0}
        if len(load) < 2:
            return {}
        for key in self.group.keys:
            node = self.group.node(key) if key != SHARDS else None
            if node in load:
                load[node] += 1
        out = {}
        for u in sorted(units, key=lambda u: u.role != "ps"):
            node = min(load, key=lambda n: (load[n], n))
            out[u.unit_id] = node
            load[node] += 1
        return out

    def _member_spec(self, u: UnitSpec, tables: list[int] | None = None, dense: bool = False) -> MemberSpec:
        opts = {"num_cpus": round(u.cpus * self.cfg.resources.ray_cpus_per_cpu, 4),
                "name": self.actor_name(u), "lifetime": "detached"}  # units outlive a controller restart
        if u.role == "worker":
            slow = self.cfg.faults.slow_workers.get(u.unit_id, 1.0)
            args = (self.worker_id(u.unit_id), self.job, self.spec, self.cfg.model.batch_size, slow)
            return MemberSpec(u.unit_id, DLRMWorker, args, options=opts, placement=u.unit_id)
        m = self.cfg.model
        args = (self.actor_name(u), self.spec, tables or [], dense, m.lr_sparse, m.lr_dense,
                self.store.child("ps"), self.total_rows, m.seed, self.job)
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
        after = {**{uid: u for uid, u in self.units.items() if uid not in plan.remove},
                 **{u.unit_id: u for u in plan.launch}}
        request_capacity([self._bundle(u) for u in after.values()])  # before the groups are needed
        targets = self._targets(list(plan.launch))
        try:
            self.group.reserve(*[self._pg_spec(u, targets.get(u.unit_id, "")) for u in plan.launch])  # all at once
        except TimeoutError as exc:  # none of the plan's groups is left behind
            r = self.cfg.resources
            raise CapacityError(
                f"resources: the budget cannot be placed: {len(plan.launch)} units of "
                f"{[self._bundle(u) for u in plan.launch][:2]}... (cpu_choices={r.cpu_choices} x "
                f"ray_cpus_per_cpu={r.ray_cpus_per_cpu:g}, max_cpus={r.max_cpus:g}) found no room within "
                f"resources.capacity_timeout_s={r.capacity_timeout_s:g}s ({exc})") from None
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
        if new_ps or ps_removed:  # a cut of the new PS set and routing (the first: persisted)
            self.checkpoint(wait=first)
        for u in plan.launch:
            if u.role == "worker":
                self.units[u.unit_id] = u
                self._start_worker(u)
        self._m_plans.inc(tags=self._tags)
        self._save_state()
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
        if u.role != "worker" or u.unit_id not in self.units:
            return  # PS actors restart themselves (max_restarts); poll() restores the job's cut
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
                       {"units": [asdict(u) for u in self.units.values()], "inc": self.inc,
                        "run_id": self.run_dir.run_id})

    # ---- observing --------------------------------------------------------------------------
    def poll(self) -> Poll:
        now = time.time()
        try:
            st = self.group.ask(SHARDS, "stats", timeout_s=SHARDS_TIMEOUT_S)
        except MemberFailure as exc:
            return Poll(now, error=f"ShardService unavailable: {exc.reason}")
        ps_status = self.group.poll("stats", keys=self._ps_keys())
        ps = ps_status.replies()
        restarted = [k for k, s in ps.items() if s.frozen]
        if len(ps) < len(ps_status.members) or restarted:
            # a PS is lost or back at the last cut: hold the workers' relaunches until every PS
            # answers, then roll the whole job back to that cut
            self._ps_lost_since = self._ps_lost_since or now
            if len(ps) < len(ps_status.members):
                return Poll(now, [], {}, st.rows_done, st.rows_total)
            self._restore(restarted, self._ps_lost_since)
            self._ps_lost_since = None
            return Poll(now, [], {}, st.rows_done, st.rows_total)
        self._complete_cuts(ps)
        if now - self._cut_t >= self.cfg.faults.checkpoint_every_s and not st.finished:
            self.checkpoint()
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

    # ---- consistent cuts and restores ---------------------------------------------------------
    def checkpoint(self, wait: bool = False) -> bool:
        """Take a consistent cut: park the workers at a batch boundary, snapshot every PS and
        the ledger under one id. ``wait``: until every PS has persisted it (then it is the cut
        a restore goes back to). False if the workers did not park in time (tried again later)."""
        self._cut_t = time.time()
        workers = {self.worker_id(uid) for uid, u in self.units.items() if u.role == "worker" and uid in self.group}
        self.group.ask(SHARDS, "pause")
        try:
            deadline = time.time() + CUT_TIMEOUT_S
            while True:
                parked = set(self.group.ask(SHARDS, "parked_workers"))
                busy = workers - parked
                if busy:
                    done = {m.reply.worker_id for m in self.group.poll(
                        "status", keys=[w.rsplit(".", 1)[0] for w in busy], timeout_s=2).members.values()
                        if m.health is Health.ALIVE and m.reply.done}
                    busy -= done
                if not busy:
                    break
                if time.time() > deadline:
                    logger.info("elastic %s: workers %s did not park within %gs; no cut this time",
                                self.job, sorted(busy), CUT_TIMEOUT_S)
                    return False
                time.sleep(0.01)
            cid = self._cut + 1
            self.group.call("snapshot", cid, keys=self._ps_keys())
            self.group.ask(SHARDS, "snapshot", cid)
            self._cut = cid
            self._pending_cuts.append(cid)
        finally:
            self.group.ask(SHARDS, "resume")
        if wait:
            self.group.call("flush", keys=self._ps_keys())
            self._complete_cuts({k: None for k in self._ps_keys()}, flushed=True)
        return True

    def _complete_cuts(self, ps: dict, flushed: bool = False) -> None:
        """Mark the newest cut every PS has persisted as the one to restore to."""
        if not self._pending_cuts or not ps:
            return
        done = self._pending_cuts[-1] if flushed else min(s.persisted for s in ps.values())
        ready = [c for c in self._pending_cuts if c <= done]
        if ready:
            self.group.ask(SHARDS, "mark_complete", ready[-1])
            self._pending_cuts = [c for c in self._pending_cuts if c > done]

    def _restore(self, restarted: list[str], since: float) -> None:
        """Roll the job back to the last complete cut: workers killed, every PS and the
        ledger restored to it, new worker incarnations started."""
        cid = self.group.ask(SHARDS, "checkpoint_version")
        self.group.ask(SHARDS, "pause")
        try:
            workers = [uid for uid, u in self.units.items() if u.role == "worker" and uid in self.group]
            fence = [self.worker_id(uid) for uid in workers]
            for uid in workers:
                self.group.kill(uid)  # their updates since the cut are dropped with the PS state
            self.group.call("restore", cid, fence, keys=self._ps_keys())
            redone = self.group.ask(SHARDS, "rollback", cid)
            self._pending_cuts = []
            for uid in workers:
                self.inc[uid] += 1
                self.kill_times[self.worker_id(uid)] = since
                self.group.respawn([uid], spec_for=lambda _, u=self.units[uid]: self._member_spec(u))
            self._save_state()
        finally:
            self.group.ask(SHARDS, "resume")
        for uid in workers:
            self.group.submit(uid, "start")
        self.restores.append(Restore(since, cid, redone, tuple(restarted)))
        logger.warning("elastic %s: %s restarted; the job went back to cut %d (%d rows to train again)",
                       self.job, ", ".join(restarted), cid, redone)

    # ---- results and cleanup ------------------------------------------------------------------
    def audit(self) -> np.ndarray:
        return self.group.ask(self._dense_key(), "audit_counts")

    def model_state(self) -> tuple[dict[str, np.ndarray], dict[int, np.ndarray]]:
        tables: dict[int, np.ndarray] = {}
        for part in self.group.call("tables", keys=self._ps_keys()):
            tables.update(part)
        return self.group.ask(self._dense_key(), "pull_dense"), tables

    def shutdown(self) -> None:
        """Stop every actor (the ShardService too), remove every placement group and clear the
        job's capacity request (idle nodes may then go)."""
        try:
            self.group.shutdown()
        finally:
            request_capacity([])


def driver_node_affinity() -> dict:
    """Ray options that place an actor on the driver's node if it has room (soft): the
    ShardService lives where the controller does, not on a node that may be lost."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if not ray.is_initialized():
        return {}
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(),
                                                                  soft=True)}
