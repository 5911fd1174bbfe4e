"""Job-trace simulator: DLRM jobs arriving on a simulated cluster, under different policies.

Everything here is simulated and says so: N virtual nodes (CPUs, GB), a trace of jobs with
Poisson arrivals, hidden true step-time curves (the model's terms plus an unmodelled one),
throughput noise, and PS memory that grows during training for some jobs. Each job runs the
real controller: an :class:`~raystack.elastic.control.ElasticLoop` (the same class the Ray
controller steps) over a :class:`SimBackend`, the simulated cluster and clock in place of
Ray. Policies are planners:
- ``static_over`` / ``static_under``: a :class:`FixedPlanner` holding the user's fixed config,
  2x / 0.5x the oracle's workers and PS, memory per unit at 2x / 1.5x its need (PS: the job's
  initial need, what a user sees at start; workers: their steady use);
- ``three_stage``: the real :class:`ThreeStagePlanner`; workers ask their use x
  ``WORKER_MEM_MARGIN`` (an assumption of the model: the real controller takes worker memory
  from the planner's default and sizes only PS memory);
- ``oracle``: a :class:`FixedPlanner` with the best config under the true curve and the true
  peak memory, from the start (workers ask exactly their use).
A PS whose memory need exceeds its allocation dies of OOM and the job fails.

Mechanics, as in our controller (see docs/elastic.md, "Trace simulator"): every worker and PS
is its own placement group, so new workers are placed one by one (as many as fit) while a PS
set goes all or nothing; a change that touches a PS (count, CPU or memory: state copy and
re-routing) pauses the job ``change_cost_s``; added workers train after ``change_cost_s``
while the others go on; removing workers costs nothing. The loop waits ``change_cost_s``
after a change before it measures (its ``settle_s``) and measures throughput over
``measure_s``. Each tick: progress (at a throughput with ``noise`` relative spread per tick),
then every running job's loop steps once (finished and failed jobs first, freeing their
units; then the others, the one closest to its PS memory limit first: a memory raise keeps a
job alive), then waiting jobs' loops try to start, first come first served with backfill.
Utilisation counts every running job's allocation; a worker's memory counts as used up to its
need (``SimJob.worker_mem_gb``), PS memory up to the job's current need (``ps_mem_util`` is
that part alone).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from raystack.elastic.control import ElasticLoop, Poll, State
from raystack.elastic.perfmodel import JobConfig, features
from raystack.elastic.plan import ScalePlan, UnitSpec, current_config
from raystack.elastic.planner import (Budget, FixedPlanner, Planner, ThreeStagePlanner,
                                      best_config)

POLICIES = ("static_over", "static_under", "three_stage", "oracle")
WORKER_MEM_MARGIN = 1.2  # three-stage: worker memory = observed use x this


@dataclass(frozen=True)
class SimJob:
    job_id: int
    arrival_s: float
    samples: float
    batch: int
    coef: tuple[float, ...]  # hidden true step-time coefficients (model terms)
    hidden: float  # coefficient of an unmodelled term w**1.5 / p
    mem0_gb: float  # total PS memory need at start
    mem_growth: float  # need at the end = mem0 * mem_growth
    worker_mem_gb: float = 2.0


@dataclass(frozen=True)
class SimCluster:
    nodes: int = 16
    cpus_per_node: float = 32.0
    mem_per_node_gb: float = 128.0


def true_step(job: SimJob, c: JobConfig) -> float:
    return float(features(c) @ np.array(job.coef)) + job.hidden * c.workers ** 1.5 / c.ps


def true_thr(job: SimJob, c: JobConfig) -> float:
    return c.workers * job.batch / true_step(job, c)


def _busy_cpus(job: SimJob, c: JobConfig) -> tuple[float, float]:
    t = true_step(job, c)
    c0, c1, c2, c3, _ = job.coef
    workers = min(c.workers * c.worker_cpu, c.workers * (c0 + c1) / t)
    ps = min(c.ps * c.ps_cpu, c.workers * (c3 + 0.2 * c2) / t)
    return workers, ps


def used_cpu(job: SimJob, c: JobConfig) -> float:
    """CPUs kept busy: workers' compute and overhead, PS compute, per second."""
    return sum(_busy_cpus(job, c))


def ps_cpu_util(job: SimJob, c: JobConfig) -> float:
    """Busy fraction of each PS's CPUs (load is spread evenly over the PS)."""
    return _busy_cpus(job, c)[1] / (c.ps * c.ps_cpu)


def ps_need_gb(job: SimJob, progress: float) -> float:
    """Total PS memory the job needs at ``progress`` in [0, 1] (linear growth)."""
    return job.mem0_gb * (1 + (job.mem_growth - 1) * progress)


def make_trace(n_jobs: int = 60, seed: int = 0, mean_gap_s: float = 150.0,
               grow_fraction: float = 0.4) -> list[SimJob]:
    """A trace of ``n_jobs`` with Poisson arrivals, varied sizes, some with growing memory."""
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(n_jobs):
        t += rng.exponential(mean_gap_s)
        coef = (rng.uniform(0.005, 0.02), rng.uniform(0.1, 0.6), rng.uniform(0.002, 0.02),
                rng.uniform(0.003, 0.03), rng.uniform(0.008, 0.03))
        job = SimJob(i, t, 0.0, 512, coef, rng.uniform(0.0, 0.0005), rng.uniform(2.0, 24.0),
                     rng.uniform(1.5, 4.0) if rng.random() < grow_fraction else 1.0)
        best = oracle_config(job, job_budget())
        hours = float(np.clip(rng.lognormal(math.log(0.75), 0.6), 0.15, 4.0))
        jobs.append(SimJob(**{**job.__dict__, "samples": true_thr(job, best) * hours * 3600}))
    return jobs


def job_budget() -> Budget:
    return Budget(max_cpus=48, max_mem_gb=400, max_workers=24, max_ps=8)


def _grid(budget: Budget, like: JobConfig) -> list[JobConfig]:
    return ThreeStagePlanner(budget, 1).candidates(like)


def oracle_config(job: SimJob, budget: Budget) -> JobConfig:
    like = JobConfig(1, 1, 1, 1, 1, job.worker_mem_gb)
    best = best_config(_grid(budget, like), lambda c: true_thr(job, c), 0.05)
    return best.with_(ps_mem_gb=round(ps_need_gb(job, 1.0) / best.ps * 1.1, 2))


def static_config(job: SimJob, factor: float, mem_factor: float) -> JobConfig:
    o = oracle_config(job, job_budget())
    w, p = max(1, round(o.workers * factor)), max(1, round(o.ps * factor))
    return o.with_(workers=w, ps=p, ps_mem_gb=round(job.mem0_gb / p * mem_factor, 2),
                   worker_mem_gb=round(job.worker_mem_gb * mem_factor, 2))


class SimBackend:
    """One job's units on the simulated cluster: the :class:`Backend` the elastic loop
    drives in the simulator. ``advance(now)`` trains the job over the last tick."""

    def __init__(self, sim: "ClusterSim", job: SimJob) -> None:
        self.sim, self.job = sim, job
        self.units: dict[str, UnitSpec] = {}
        self.placed: dict[str, int] = {}  # unit id -> node
        self.done = 0.0  # samples trained
        self.paused_until = 0.0  # a PS change stops training until then
        self.warm_until = 0.0  # new workers are starting until then; ``prev_cfg`` trains
        self.prev_cfg: JobConfig | None = None
        self.error: str | None = None
        self._tick_rows = 0.0  # trained in the last tick
        self._ps_util = 0.0  # PS busy fraction over the last tick
        self._worker_rows: dict[str, float] = {}

    @property
    def cfg(self) -> JobConfig | None:
        return current_config(self.units)

    @property
    def finished(self) -> bool:
        return self.done >= self.job.samples

    # ---- the Backend protocol ---------------------------------------------------------------------
    def poll(self) -> Poll:
        c, tick = self.cfg, self.sim.tick
        if c is None:
            return Poll(self.sim.now, rows_total=int(self.job.samples))
        trained = [uid for uid, rows in self._worker_rows.items() if rows > 0]
        per_worker = self._tick_rows / max(len(trained), 1) / tick
        rates = {uid: (per_worker, int(self._worker_rows[uid])) for uid in trained}
        need = ps_need_gb(self.job, min(self.done / self.job.samples, 1.0))
        return Poll(self.sim.now, [], rates, int(min(self.done, self.job.samples)), int(self.job.samples),
                    [self._ps_util] * c.ps, [need / c.ps] * c.ps, self.error)

    def apply(self, plan: ScalePlan) -> ScalePlan:
        """Place what fits, the way per-unit placement groups do; return what was done.

        The first plan goes all or nothing. Later, PS launches and worker replacements go all
        or nothing (a PS set is one sharding); new workers are placed one by one, as many as
        fit (each is its own placement group), so a scale-up that does not fully fit still
        gets what fits. Costs: a change that touches a PS (count, CPU or memory: state copy
        and re-routing) pauses the job ``change_cost``; adding workers does not stop the
        running ones, the new ones train after ``change_cost`` (start-up); removing workers
        costs nothing (their shards go back)."""
        sim, now = self.sim, self.sim.now
        if not self.units:
            where = sim.place(plan.launch)
            if where is None:
                return ScalePlan(reason=plan.reason)
            self._add(plan.launch, where)
            return plan
        cur_w = sum(u.role == "worker" for u in self.units.values())
        extra = [u for u in plan.launch if u.role == "worker" and u.index >= cur_w
                 and u.replaces is None]
        must = [u for u in plan.launch if u not in extra]
        prev = self.cfg
        old = {uid: (self.placed[uid], self.units[uid], self._worker_rows.get(uid)) for uid in plan.remove}
        self._drop(plan.remove)
        where = sim.place(must)
        got: list[UnitSpec] = []
        if where is not None:
            for u in extra:
                w = sim.place([u])
                if w is None:
                    break
                where.update(w)
                got.append(u)
        if where is None or (not plan.remove and not got and not must):
            for uid, (n, u, rows) in old.items():  # no room: keep the old units
                sim.take(n, u)
                self.placed[uid], self.units[uid] = n, u
                if rows is not None:
                    self._worker_rows[uid] = rows
            return ScalePlan(reason=plan.reason)
        placed = must + got
        self._add(placed, where)
        ps_touched = any(u.role == "ps" for u in placed) or any(u.role == "ps" for _, u, _ in old.values())
        if ps_touched or any(u.replaces or u.index < cur_w for u in placed if u.role == "worker"):
            self.paused_until = now + sim.change_cost
        elif got:  # only new workers: the old ones keep training while these start
            self.warm_until, self.prev_cfg = now + sim.change_cost, prev
        return ScalePlan(placed, list(plan.remove), plan.reason)

    def relaunch(self, unit: UnitSpec) -> None:
        """Nothing dies in the simulation."""

    # ---- the simulation -----------------------------------------------------------------------------
    def _add(self, units: list[UnitSpec], where: dict[str, int]) -> None:
        for u in units:
            self.units[u.unit_id], self.placed[u.unit_id] = u, where[u.unit_id]
            if u.role == "worker":
                self._worker_rows[u.unit_id] = 0.0

    def _drop(self, ids) -> None:
        self.sim.free([(self.placed.pop(uid), self.units.pop(uid)) for uid in ids])
        for uid in ids:
            self._worker_rows.pop(uid, None)

    def release(self) -> None:
        """Free every unit (the job ended)."""
        self._drop(list(self.units))

    def memory_pressure(self) -> float:
        """The PS memory the job needs now over what it holds."""
        c = self.cfg
        return ps_need_gb(self.job, self.done / self.job.samples) / (c.ps * c.ps_mem_gb)

    def advance(self, now: float) -> None:
        """One tick ``(now - tick, now]``: the paused part trains nothing, the part while new
        workers start trains at the previous config, the rest at the current one."""
        sim, job, c = self.sim, self.job, self.cfg
        tick = sim.tick
        progress = self.done / job.samples
        need = ps_need_gb(job, progress)
        used_mem = c.workers * min(job.worker_mem_gb, c.worker_mem_gb) + need
        start = now - tick
        p_end = min(now, max(start, self.paused_until))
        w_end = min(now, max(p_end, self.warm_until))
        warm, run = w_end - p_end, now - w_end
        prev = self.prev_cfg or c
        sim.cpu_alloc += c.cpus * tick
        sim.mem_alloc += c.mem_gb * tick
        sim.cpu_used += used_cpu(job, prev) * warm + used_cpu(job, c) * run
        sim.mem_used += min(used_mem, c.mem_gb) * tick
        sim.ps_mem_alloc += c.ps * c.ps_mem_gb * tick
        sim.ps_mem_used += min(need, c.ps * c.ps_mem_gb) * tick
        if need / c.ps > c.ps_mem_gb:
            self.error = (f"OOM: a PS needs {need / c.ps:.2f} GB, holds {c.ps_mem_gb:.2f} GB "
                          f"(simulated)")
            return
        speed = max(0.0, sim.rng.normal(1.0, sim.noise)) if sim.noise > 0 else 1.0
        old = true_thr(job, prev) * warm * speed
        new = true_thr(job, c) * run * speed
        self._tick_rows = old + new
        self._ps_util = (ps_cpu_util(job, prev) * warm + ps_cpu_util(job, c) * run) / tick
        self.done += self._tick_rows
        workers = [uid for uid, u in self.units.items() if u.role == "worker"]
        trained_before = [uid for uid in workers if self._worker_rows.get(uid, 0.0) > 0]
        for uid in workers:  # the old workers trained all tick, new ones only after warm-up
            share = (old / max(len(trained_before), 1) if uid in trained_before else 0.0) \
                + new / len(workers)
            self._worker_rows[uid] = self._worker_rows.get(uid, 0.0) + share


@dataclass
class SimJobRun:
    """One job in the simulation: the real elastic loop over its simulated backend."""

    job: SimJob
    loop: ElasticLoop
    backend: SimBackend


class ClusterSim:
    """Discrete-time simulation of one policy over one trace."""

    def __init__(self, trace: list[SimJob], policy: str, cluster: SimCluster = SimCluster(),
                 tick_s: float = 30.0, change_cost_s: float = 30.0, noise: float = 0.03,
                 measure_s: float = 60.0, seed: int = 0) -> None:
        if policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
        self.trace, self.policy, self.cluster = trace, policy, cluster
        self.tick, self.change_cost, self.noise, self.measure = (tick_s, change_cost_s, noise,
                                                                  measure_s)
        self.rng = np.random.default_rng(seed)
        self.now = 0.0
        self.free_cpu = [cluster.cpus_per_node] * cluster.nodes
        self.free_mem = [cluster.mem_per_node_gb] * cluster.nodes
        self.results: dict[int, dict] = {}
        self.cpu_used = self.cpu_alloc = self.mem_used = self.mem_alloc = 0.0
        self.ps_mem_used = self.ps_mem_alloc = 0.0

    # ---- placement -------------------------------------------------------------------------
    def place(self, units: list[UnitSpec]) -> dict[str, int] | None:
        """First fit of all ``units`` on the nodes (unit id -> node), or None (nothing taken)."""
        cpu, mem, where = list(self.free_cpu), list(self.free_mem), {}
        for u in units:
            n = next((i for i in range(len(cpu)) if cpu[i] >= u.cpus and mem[i] >= u.mem_gb),
                     None)
            if n is None:
                return None
            cpu[n] -= u.cpus
            mem[n] -= u.mem_gb
            where[u.unit_id] = n
        self.free_cpu, self.free_mem = cpu, mem
        return where

    def take(self, node: int, u: UnitSpec) -> None:
        self.free_cpu[node] -= u.cpus
        self.free_mem[node] -= u.mem_gb

    def free(self, placed: list[tuple[int, UnitSpec]]) -> None:
        for n, u in placed:
            self.free_cpu[n] += u.cpus
            self.free_mem[n] += u.mem_gb

    # ---- policies and jobs ---------------------------------------------------------------------
    def planner_for(self, job: SimJob) -> Planner:
        """The policy's planner for ``job``."""
        if self.policy == "oracle":
            return FixedPlanner(oracle_config(job, job_budget()), "oracle: the best config")
        if self.policy == "static_over":
            return FixedPlanner(static_config(job, 2.0, 2.0), "static: the user's config")
        if self.policy == "static_under":
            return FixedPlanner(static_config(job, 0.5, 1.5), "static: the user's config")
        default = JobConfig(2, 1, 1.0, 1.0, round(job.mem0_gb * 1.5, 2),
                            round(job.worker_mem_gb * WORKER_MEM_MARGIN, 2))
        return ThreeStagePlanner(job_budget(), job.batch, default=default)

    def start_job(self, job: SimJob) -> SimJobRun:
        """The job's loop over a fresh backend (stepping it places the initial plan)."""
        backend = SimBackend(self, job)
        loop = ElasticLoop(self.planner_for(job), backend, measure_s=self.measure,
                           settle_s=self.change_cost)
        return SimJobRun(job, loop, backend)

    # ---- the run -----------------------------------------------------------------------------
    def run(self, horizon_s: float = 7 * 24 * 3600) -> dict:
        queue, running, now = list(self.trace), [], 0.0
        pending: list[SimJobRun] = []
        while (queue or pending or running) and now < horizon_s:
            now = self.now = now + self.tick
            while queue and queue[0].arrival_s <= now:
                pending.append(self.start_job(queue.pop(0)))
            for r in running:
                r.backend.advance(now)
            ending = [r for r in running if r.backend.finished or r.backend.error]
            rest = sorted((r for r in running if r not in ending),
                          key=lambda r: r.backend.memory_pressure(), reverse=True)
            for r in ending + rest:
                if r.loop.step().terminal:
                    self._record(r, now)
                    r.backend.release()
                    running.remove(r)
            for r in list(pending):  # first come first served, with backfill
                if r.loop.step() is State.RUNNING:
                    pending.remove(r)
                    running.append(r)
        for job in [r.job for r in pending] + queue + [r.job for r in running]:
            self.results[job.job_id] = {"completed": False, "jct_s": None, "reason": "horizon"}
        return self.summary()

    def _record(self, r: SimJobRun, now: float) -> None:
        if r.loop.state is State.FINISHED:
            self.results[r.job.job_id] = {"completed": True, "jct_s": now - r.job.arrival_s,
                                          "reason": "done"}
        else:
            oom = (r.backend.error or "").startswith("OOM")
            self.results[r.job.job_id] = {"completed": False, "jct_s": None,
                                          "reason": "OOM" if oom else (r.loop.error or "failed")}

    def summary(self) -> dict:
        res = self.results.values()
        jcts = [x["jct_s"] for x in res if x["completed"]]
        return {
            "policy": self.policy,
            "jobs": len(self.results),
            "completion_rate": sum(x["completed"] for x in res) / max(len(self.results), 1),
            "oom": sum(x["reason"] == "OOM" for x in res),
            "jct_mean_s": float(np.mean(jcts)) if jcts else None,
            "jct_p50_s": float(np.median(jcts)) if jcts else None,
            "jct_p90_s": float(np.percentile(jcts, 90)) if jcts else None,
            "jcts_s": [round(j, 1) for j in jcts],
            "job_ids": sorted(self.results),
            "jct_by_job": [None if self.results[i]["jct_s"] is None
                           else round(self.results[i]["jct_s"], 1) for i in sorted(self.results)],
            "cpu_util": self.cpu_used / max(self.cpu_alloc, 1e-9),
            "mem_util": self.mem_used / max(self.mem_alloc, 1e-9),
            "ps_mem_util": self.ps_mem_used / max(self.ps_mem_alloc, 1e-9),
        }


def simulate_all(trace: list[SimJob], **kw) -> dict[str, dict]:
    """Run every policy on the same trace."""
    return {p: ClusterSim(trace, p, **kw).run() for p in POLICIES}
