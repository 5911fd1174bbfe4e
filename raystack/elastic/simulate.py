"""Job-trace simulator: DLRM jobs arriving on a simulated cluster, under different policies.

Everything here is simulated and says so: N virtual nodes (CPUs, GB), a trace of jobs with
Poisson arrivals, hidden true step-time curves (the model's terms plus an unmodelled one and
measurement noise), and PS memory that grows during training for some jobs. Policies:
- ``static_over`` / ``static_under``: the user's fixed config, 2x / 0.5x the oracle's
  workers and PS, memory per unit at 2x / 1.5x its need (PS: the job's initial need, what a
  user sees at start; workers: their steady use);
- ``three_stage``: the real :class:`ThreeStagePlanner` fed noisy observations every tick;
  workers ask their use x ``WORKER_MEM_MARGIN`` (an assumption of the model: the real
  controller takes worker memory from the planner's default and sizes only PS memory);
- ``oracle``: the best config under the true curve and the true peak memory, from the start
  (workers ask exactly their use).
A PS whose memory need exceeds its allocation dies of OOM and the job fails.

Mechanics, as in our controller (see docs/elastic.md, "Trace simulator"): every worker and PS
is its own placement group, so new workers are placed one by one (as many as fit) while a PS
set goes all or nothing; a change that touches a PS (count, CPU or memory: state copy and
re-routing) pauses the job ``change_cost_s``; added workers train after ``change_cost_s``
while the others go on; removing workers costs nothing. Each tick: progress and completions
first, then the running jobs' plans (memory raises first: they keep a job alive), then
admissions, first come first served with backfill. Utilisation counts every running job's
allocation; a worker's memory counts as used up to its need (``SimJob.worker_mem_gb``), PS
memory up to the job's current need (``ps_mem_util`` is that part alone).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from raystack.elastic.perfmodel import JobConfig, features
from raystack.elastic.plan import UnitSpec, plan_to
from raystack.elastic.planner import (Budget, Decision, Observation, ThreeStagePlanner,
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


@dataclass
class _Running:
    job: SimJob
    cfg: JobConfig
    placed: dict[str, int] = field(default_factory=dict)  # unit id -> node
    units: dict[str, UnitSpec] = field(default_factory=dict)
    done: float = 0.0
    start_s: float = 0.0
    paused_until: float = 0.0
    planner: ThreeStagePlanner | None = None
    next_id: int = 0
    last_obs: float = 0.0
    window: tuple[float, float] | None = None
    warm_until: float = 0.0  # new workers are starting until then; ``prev_cfg`` trains
    prev_cfg: JobConfig | None = None


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
        self.free_cpu = [cluster.cpus_per_node] * cluster.nodes
        self.free_mem = [cluster.mem_per_node_gb] * cluster.nodes
        self.results: dict[int, dict] = {}
        self._init: dict[int, tuple] = {}
        self.cpu_used = self.cpu_alloc = self.mem_used = self.mem_alloc = 0.0
        self.ps_mem_used = self.ps_mem_alloc = 0.0

    # ---- placement -------------------------------------------------------------------------
    def _place(self, units: list[UnitSpec]) -> dict[str, int] | None:
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

    def _free(self, r: _Running, ids: list[str]) -> None:
        for uid in ids:
            n, u = r.placed.pop(uid), r.units.pop(uid)
            self.free_cpu[n] += u.cpus
            self.free_mem[n] += u.mem_gb

    def _initial(self, job: SimJob) -> tuple[JobConfig, ThreeStagePlanner | None]:
        if self.policy == "oracle":
            return oracle_config(job, job_budget()), None
        if self.policy == "static_over":
            return static_config(job, 2.0, 2.0), None
        if self.policy == "static_under":
            return static_config(job, 0.5, 1.5), None
        default = JobConfig(2, 1, 1.0, 1.0, round(job.mem0_gb * 1.5, 2),
                            round(job.worker_mem_gb * WORKER_MEM_MARGIN, 2))
        planner = ThreeStagePlanner(job_budget(), job.batch, default=default)
        return planner.decide(Observation(default)).target, planner

    def _try_start(self, job: SimJob, now: float) -> _Running | None:
        if job.job_id not in self._init:
            self._init[job.job_id] = self._initial(job)
        cfg, planner = self._init[job.job_id]
        r = _Running(job, cfg, start_s=now, planner=planner, last_obs=now)
        plan = plan_to({}, cfg, 0)
        where = self._place(plan.launch)
        if where is None:
            return None
        r.units = {u.unit_id: u for u in plan.launch}
        r.placed, r.next_id = where, len(plan.launch)
        return r

    def _rescale(self, r: _Running, target: JobConfig, reason: str, now: float) -> None:
        """Apply a target the way per-unit placement groups do.

        PS launches and worker replacements go all or nothing (a PS set is one sharding); new
        workers are placed one by one, as many as fit (each is its own placement group), so a
        scale-up that does not fully fit still gets what fits. Costs: a change that touches a
        PS (count, CPU or memory: state copy and re-routing) pauses the job ``change_cost``;
        adding workers does not stop the running ones, the new ones train after
        ``change_cost`` (start-up); removing workers costs nothing (their shards go back)."""
        plan = plan_to(r.units, target, r.next_id, reason)
        cur_w = sum(u.role == "worker" for u in r.units.values())
        extra = [u for u in plan.launch if u.role == "worker" and u.index >= cur_w
                 and u.replaces is None]
        must = [u for u in plan.launch if u not in extra]
        old = {uid: (r.placed[uid], r.units[uid]) for uid in plan.remove}
        self._free(r, plan.remove)
        where = self._place(must)
        got: list[UnitSpec] = []
        if where is not None:
            for u in extra:
                w = self._place([u])
                if w is None:
                    break
                where.update(w)
                got.append(u)
        if where is None or (not plan.remove and not got and not must):
            for uid, (n, u) in old.items():  # no room: keep the old units
                self.free_cpu[n] -= u.cpus
                self.free_mem[n] -= u.mem_gb
                r.placed[uid], r.units[uid] = n, u
            return
        placed = must + got
        r.units.update({u.unit_id: u for u in placed})
        r.placed.update(where)
        r.next_id += len(plan.launch)
        workers = sum(u.role == "worker" for u in r.units.values())
        prev, r.cfg, r.window = r.cfg, target.with_(workers=workers), None
        ps_touched = any(u.role == "ps" for u in placed) or any(
            u.role == "ps" for _, u in old.values())
        if ps_touched or any(u.replaces or u.index < cur_w for u in placed
                             if u.role == "worker"):
            r.paused_until = now + self.change_cost
        elif got:  # only new workers: the old ones keep training while these start
            r.warm_until, r.prev_cfg = now + self.change_cost, prev

    # ---- the run -----------------------------------------------------------------------------
    def run(self, horizon_s: float = 7 * 24 * 3600) -> dict:
        queue, running, now = list(self.trace), [], 0.0
        pending: list[SimJob] = []
        while (queue or pending or running) and now < horizon_s:
            now += self.tick
            while queue and queue[0].arrival_s <= now:
                pending.append(queue.pop(0))
            for r in list(running):  # progress; finished and failed jobs free their units
                self._advance(r, now)
                if r.job.job_id in self.results:
                    self._free(r, list(r.units))
                    running.remove(r)
            # Then the running jobs' plans, before admissions; a memory raise (keeping a job
            # alive) goes before growth.
            plans = [(r, d) for r in running if (d := self._observe(r, now)) is not None]
            plans.sort(key=lambda rd: rd[1].target.ps_mem_gb * rd[1].target.ps
                       <= rd[0].cfg.ps_mem_gb * rd[0].cfg.ps)
            for r, d in plans:
                self._rescale(r, d.target, d.reason, now)
            for job in list(pending):  # first come first served, with backfill
                r = self._try_start(job, now)
                if r is not None:
                    pending.remove(job)
                    running.append(r)
        for job in pending + queue + [r.job for r in running]:
            self.results[job.job_id] = {"completed": False, "jct_s": None, "reason": "horizon"}
        return self.summary()

    def _advance(self, r: _Running, now: float) -> None:
        """One tick ``(now - tick, now]``: paused part trains nothing, the part while new
        workers start trains at the previous config, the rest at the current one."""
        job, c = r.job, r.cfg
        alloc_cpu, alloc_mem = c.cpus, c.mem_gb
        progress = r.done / job.samples
        need = ps_need_gb(job, progress)
        used_mem = c.workers * min(job.worker_mem_gb, c.worker_mem_gb) + need
        start = now - self.tick
        p_end = min(now, max(start, r.paused_until))
        w_end = min(now, max(p_end, r.warm_until))
        warm, run = w_end - p_end, now - w_end
        prev = r.prev_cfg or c
        self.cpu_alloc += alloc_cpu * self.tick
        self.mem_alloc += alloc_mem * self.tick
        self.cpu_used += used_cpu(job, prev) * warm + used_cpu(job, c) * run
        self.mem_used += min(used_mem, alloc_mem) * self.tick
        self.ps_mem_alloc += c.ps * c.ps_mem_gb * self.tick
        self.ps_mem_used += min(need, c.ps * c.ps_mem_gb) * self.tick
        if need / c.ps > c.ps_mem_gb:
            self.results[job.job_id] = {"completed": False, "jct_s": None, "reason": "OOM"}
            return
        r.done += true_thr(job, prev) * warm + true_thr(job, c) * run
        if r.done >= job.samples:
            self.results[job.job_id] = {"completed": True, "jct_s": now - job.arrival_s,
                                        "reason": "done"}

    def _observe(self, r: _Running, now: float) -> Decision | None:
        """What the planner of a running three-stage job says after this tick."""
        job, c = r.job, r.cfg
        if r.planner is None or now < max(r.paused_until, r.warm_until):
            return None
        need = ps_need_gb(job, r.done / job.samples)
        thr = None
        if r.window is None:
            r.window = (now, r.done)
        elif now - r.window[0] >= self.measure:
            thr = (r.done - r.window[1]) / (now - r.window[0]) * self.rng.normal(1, self.noise)
            r.window = (now, r.done)
        util = [ps_cpu_util(job, c)] * c.ps
        obs = Observation(c, thr, util if thr is not None else [], [need / c.ps] * c.ps,
                          int(r.done), int(job.samples))
        return r.planner.decide(obs)

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
