"""The three-stage resource planner (DLRover-RM): initial, warm-up, runtime.

``decide(obs)`` returns a :class:`Decision` (a target :class:`JobConfig` and why) or None.
- initial: a similar past job's final config with a margin, or a small safe default;
- warm-up: measure a few probe configs, fit the :class:`PerfModel`, jump to the predicted
  best configuration within the budget;
- runtime: keep fitting; add a worker while its predicted marginal throughput pays, remove one
  when it does not, add a PS when one is hot, raise PS memory before a predicted OOM.

PS memory follows the fitted memory trend (per-PS use over rows done), DLRover-style: a limit
close to the predicted need with a 20% margin. It is set so whenever the PS units are replaced
anyway (the warm-up jump, a hot-PS split) and lowered on its own when it is above 1.4x the need;
it is raised, in steps, when an OOM is predicted within the next ``mem_lookahead`` of the job's
rows, to the need predicted twice that far ahead (not reserved up front for the end of the
job). A raise beyond ``max_ps_mem_gb`` per PS spreads the memory over more PS.
"""
from __future__ import annotations

import enum
import itertools
import math
from dataclasses import dataclass, field
from typing import Protocol

from raystack.elastic.perfmodel import JobConfig, MemoryTrend, PerfModel


@dataclass(frozen=True)
class Budget:
    """The most a job may hold."""

    max_cpus: float = 8.0
    max_mem_gb: float = 32.0
    max_workers: int = 8
    max_ps: int = 4
    cpu_choices: tuple[float, ...] = (1.0, 2.0)

    def allows(self, c: JobConfig) -> bool:
        return (c.cpus <= self.max_cpus + 1e-9 and c.mem_gb <= self.max_mem_gb + 1e-9
                and 1 <= c.workers <= self.max_workers and 1 <= c.ps <= self.max_ps)


@dataclass(frozen=True)
class HistoryRecord:
    """A finished job: its size (embedding rows, dataset rows) and final configuration."""

    embedding_rows: int
    dataset_rows: int
    config: JobConfig


@dataclass
class Observation:
    """What the controller saw since the last decision."""

    config: JobConfig
    throughput: float | None = None  # samples/s measured at ``config`` (None: not measured yet)
    ps_cpu_util: list[float] = field(default_factory=list)
    ps_mem_gb: list[float] = field(default_factory=list)  # used, per PS
    rows_done: int = 0
    rows_total: int = 1


@dataclass(frozen=True)
class Decision:
    target: JobConfig
    reason: str


class Stage(enum.Enum):
    INITIAL = "initial"
    WARMUP = "warmup"
    RUNTIME = "runtime"


class Planner(Protocol):
    """What the elastic loop asks: given an observation, a new target (or None)."""

    def decide(self, obs: Observation) -> Decision | None: ...


class FixedPlanner:
    """A user's fixed configuration: the initial decision is ``target``, never changed after
    (the trace simulator's static arms, and its oracle with the best config known up front)."""

    def __init__(self, target: JobConfig, reason: str = "fixed configuration") -> None:
        self.target, self.reason = target, reason
        self.stage = Stage.INITIAL

    def decide(self, obs: Observation) -> Decision | None:
        if self.stage is Stage.INITIAL:
            self.stage = Stage.RUNTIME
            return Decision(self.target, self.reason)
        return None


@dataclass
class PlannerSettings:
    add_pays: float = 0.5  # add a worker if it brings >= this x an average worker's throughput
    remove_below: float = 0.2  # remove the last worker if it brings < this x the average
    rejump_gain: float = 0.25  # runtime: go to the predicted best if it is this much faster
    hot_ps_cpu: float = 0.9
    mem_headroom: float = 0.9  # raise when predicted use within the lookahead > this x limit
    mem_lookahead: float = 0.25  # ... looking this fraction of the job's rows ahead
    mem_margin: float = 1.2  # limit = predicted need x this (DLRover's PS memory margin: 20%)
    mem_shrink_above: float = 1.4  # lower a limit above this x the predicted need (a PS move
    # for memory alone); when PS units are replaced anyway, they are always right-sized
    min_ps_mem_gb: float = 0.5  # never size a PS below this (the process itself)
    max_ps_mem_gb: float = 32.0  # a raise beyond this per PS adds PS instead (units that fit)
    best_slack: float = 0.05  # warm-up jump: the cheapest config within 5% of the best
    refit_every: int = 5  # refit on every new config, else every n-th measurement


class ThreeStagePlanner:
    """Pure policy: feed observations, get target configurations."""

    def __init__(self, budget: Budget, batch_size: int, *, embedding_rows: int = 0,
                 dataset_rows: int = 0, history: list[HistoryRecord] | None = None,
                 default: JobConfig | None = None,
                 settings: PlannerSettings | None = None) -> None:
        self.budget = budget
        self.model = PerfModel(batch_size)
        self.settings = settings or PlannerSettings()
        self.embedding_rows, self.dataset_rows = embedding_rows, dataset_rows
        self.history = history or []
        self.default = default or JobConfig(2, 1, 1.0, 1.0, 1.0, 1.0)
        self.stage = Stage.INITIAL
        self.points: dict[JobConfig, list[float]] = {}
        self.mem = MemoryTrend([])
        self._probes: list[JobConfig] = []
        self._mem_ps = 0
        self._measurements, self._fitted_on = 0, 0
        self._mem_sized = False  # the current decision sets PS memory on purpose
        self._fits = 0  # model version, for the best-config cache
        self._best: dict[JobConfig, JobConfig] = {}

    # ---- stage 1 ---------------------------------------------------------------------------
    def initial(self) -> Decision:
        """History warm start (nearest past job by size, with a 20% memory margin) or default."""
        self.stage = Stage.WARMUP
        if self.history:
            def dist(h: HistoryRecord) -> float:
                return (abs(h.embedding_rows - self.embedding_rows) / max(h.embedding_rows, 1)
                        + abs(h.dataset_rows - self.dataset_rows) / max(h.dataset_rows, 1))
            best = min(self.history, key=dist)
            cfg = best.config.with_(ps_mem_gb=best.config.ps_mem_gb * 1.2)
            self._probes = [cfg]
            return Decision(self._clip(cfg), "initial: from a similar past job")
        cfg = self._clip(self.default)
        w, p = cfg.workers, cfg.ps
        self._probes = [cfg, cfg.with_(workers=w * 2), with_ps(cfg, p + 1).with_(workers=w * 2),
                        with_ps(cfg, p + 1).with_(workers=w * 3, worker_cpu=2.0)]
        self._probes = [self._clip(c) for c in self._probes]
        return Decision(cfg, "initial: safe default (no history)")

    def adopt(self, stage: Stage) -> None:
        """Continue a job that already runs (its controller restarted): no initial decision
        and no probes left to measure; ``stage`` is WARMUP (measure, fit, jump) or RUNTIME."""
        self.stage = stage
        self._probes = []

    # ---- the policy ----------------------------------------------------------------------
    def decide(self, obs: Observation) -> Decision | None:
        """The next target configuration, or None to keep the current one."""
        if self.stage is Stage.INITIAL:
            return self.initial()
        self._mem_sized = False
        d = self._decide(obs)
        if d is None:
            return None
        cur, tgt = obs.config, d.target
        if not self._mem_sized and (tgt.ps, tgt.ps_cpu) != (cur.ps, cur.ps_cpu):
            sized = self._right_size(obs, tgt)  # the PS units are replaced anyway: size them
            self._mem_sized, tgt = sized != tgt, sized
        # Never shrink total PS memory as a side effect of a CPU/count change.
        if not self._mem_sized and tgt.ps_mem_gb * tgt.ps < cur.ps_mem_gb * cur.ps:
            tgt = tgt.with_(ps_mem_gb=round(cur.ps_mem_gb * cur.ps / tgt.ps, 2))
        if tgt.ps_mem_gb < self.settings.min_ps_mem_gb:  # a split never goes below the floor
            tgt = tgt.with_(ps_mem_gb=self.settings.min_ps_mem_gb)
        return None if tgt == cur else Decision(tgt, d.reason)

    def _decide(self, obs: Observation) -> Decision | None:
        if obs.throughput is not None:
            self.points.setdefault(perf_key(obs.config), []).append(obs.throughput)
        if obs.ps_mem_gb:
            if self._mem_ps != obs.config.ps:  # per-PS use jumps when the PS count changes
                self.mem.points.clear()
                self._mem_ps = obs.config.ps
            self.mem.points.append((obs.rows_done, max(obs.ps_mem_gb)))
        if self.stage is Stage.WARMUP:
            return self._memory(obs) or self._warmup(obs)
        return self._runtime(obs)

    def _fit(self) -> bool:
        # A config measured at zero throughput (all its workers died or stalled while it was
        # profiled) says nothing about step time; fitting on it would divide by zero.
        pts = [(c, sum(v) / len(v)) for c, v in self.points.items() if sum(v) > 0]
        if len(pts) < 2:
            return False
        self.model.fit(pts)
        self._fits += 1
        self._best.clear()
        return True

    def _warmup(self, obs: Observation) -> Decision | None:
        todo = [c for c in self._probes if perf_key(c) not in self.points]
        if perf_key(obs.config) not in self.points:
            return None  # still measuring the current probe
        if todo:
            return Decision(todo[0], f"warm-up: profiling probe {len(self.points) + 1}")
        self.stage = Stage.RUNTIME
        best = self.best_config(obs.config) if self._fit() else obs.config
        sized = self._right_size(obs, best)
        if sized != best:
            self._mem_sized = True
        if sized == obs.config:
            return None
        if best == obs.config:
            return Decision(sized, f"warm-up: PS memory to {sized.ps_mem_gb:.2f} GB "
                                   f"(predicted need x {self.settings.mem_margin:g})")
        return Decision(sized, f"warm-up: jump to predicted best "
                               f"({self.model.throughput(best):.0f} samples/s)")

    def _runtime(self, obs: Observation) -> Decision | None:
        s, c = self.settings, obs.config
        mem = self._memory(obs)
        if mem is not None:
            return mem
        lower = self._right_size(obs, c)
        if lower != c:
            self._mem_sized = True
            return Decision(lower, f"runtime: PS memory lowered to {lower.ps_mem_gb:.2f} GB "
                                   f"(predicted need x {s.mem_margin:g})")
        if obs.ps_cpu_util and max(obs.ps_cpu_util) >= s.hot_ps_cpu:
            hot = with_ps(c, c.ps + 1)
            if self.budget.allows(hot):
                return Decision(hot, f"runtime: hot PS (cpu {max(obs.ps_cpu_util):.2f})")
        if obs.throughput is None:
            return None
        self._measurements += 1
        if self.model.coef is None or len(self.points) != self._fitted_on \
                or self._measurements % self.settings.refit_every == 0:
            if not self._fit():
                return None
            self._fitted_on = len(self.points)
        m = self.model
        thr, avg = m.throughput(c), m.throughput(c) / c.workers
        best = self.best_config(c)
        if m.throughput(best) >= (1 + s.rejump_gain) * thr:  # e.g. the warm-up jump did not fit
            return Decision(best, f"runtime: predicted best is {m.throughput(best) / thr - 1:.0%} "
                                  f"faster ({m.throughput(best):.0f} samples/s); moving there")
        up = c.with_(workers=c.workers + 1)
        if self.budget.allows(up) and m.throughput(up) - thr >= s.add_pays * avg:
            return Decision(up, "runtime: one more worker pays "
                                f"(+{m.throughput(up) - thr:.0f} samples/s)")
        if c.workers > 1:
            down = c.with_(workers=c.workers - 1)
            if thr - m.throughput(down) < s.remove_below * avg:
                return Decision(down, "runtime: last worker does not pay "
                                      f"(+{thr - m.throughput(down):.0f} samples/s)")
        return None

    def _mem_need(self, obs: Observation, rows: float, ps: int) -> float:
        """Per-PS memory for ``ps`` PS at ``rows`` done: predicted need x margin (>= floor)."""
        s = self.settings
        per_ps = max(self.mem.predict(min(rows, obs.rows_total)), max(obs.ps_mem_gb or [0.0]))
        return round(max(s.min_ps_mem_gb, per_ps * obs.config.ps / ps * s.mem_margin), 2)

    def _ahead(self, obs: Observation, times: float) -> float:
        return obs.rows_done + times * self.settings.mem_lookahead * obs.rows_total

    def _memory(self, obs: Observation) -> Decision | None:
        """Raise PS memory when the trend predicts an OOM within the lookahead."""
        s, c = self.settings, obs.config
        if len(self.mem.points) < 3:
            return None
        soon = self.mem.predict(min(self._ahead(obs, 1), obs.rows_total))
        soon = max(soon, max(obs.ps_mem_gb or [0.0]))
        if soon <= s.mem_headroom * c.ps_mem_gb:
            return None
        new = max(self._mem_need(obs, self._ahead(obs, 2), c.ps), round(soon * s.mem_margin, 2))
        if new <= c.ps_mem_gb:
            return None
        self._mem_sized = True
        target = c.with_(ps_mem_gb=new)
        if new > s.max_ps_mem_gb:  # spread it over more (smaller) PS when the budget allows
            ps = min(self.budget.max_ps, math.ceil(new * c.ps / s.max_ps_mem_gb))
            spread = c.with_(ps=ps, ps_mem_gb=round(new * c.ps / ps, 2))
            if ps > c.ps and self.budget.allows(spread):
                target = spread
        return Decision(target, f"runtime: PS memory predicted to reach {soon:.2f} GB of "
                                f"{c.ps_mem_gb:.2f} GB soon; raising to "
                                f"{target.ps} x {target.ps_mem_gb:.2f} GB before OOM")

    def _right_size(self, obs: Observation, target: JobConfig) -> JobConfig:
        """``target`` with its PS memory lowered to the predicted need x margin: always when
        ``target`` replaces the PS units anyway, else only when the limit is above
        ``mem_shrink_above`` x the need (a PS move for memory alone must be worth it). Needs a
        known trend; never raises here."""
        if len(self.mem.points) < 3:
            return target
        s, c = self.settings, obs.config
        need = self._mem_need(obs, self._ahead(obs, 2), target.ps)
        limit = target.ps_mem_gb
        if target.ps != c.ps:  # the count change keeps the total unless resized
            limit = max(limit, round(c.ps_mem_gb * c.ps / target.ps, 2))
        replaced = (target.ps, target.ps_cpu) != (c.ps, c.ps_cpu)  # new PS units anyway
        if need < limit and (replaced or limit > s.mem_shrink_above * need / s.mem_margin):
            return target.with_(ps_mem_gb=need)
        return target.with_(ps_mem_gb=limit)

    # ---- search ------------------------------------------------------------------------
    def candidates(self, like: JobConfig) -> list[JobConfig]:
        b = self.budget
        out = []
        for w, p, cw, cp in itertools.product(range(1, b.max_workers + 1),
                                              range(1, b.max_ps + 1), b.cpu_choices,
                                              b.cpu_choices):
            # = with_ps(like, p).with_(workers=w, ...), built directly (this loop is hot)
            c = JobConfig(w, p, cw, cp, round(like.ps_mem_gb * like.ps / p, 2), like.worker_mem_gb)
            if b.allows(c):
                out.append(c)
        return out

    def best_config(self, like: JobConfig) -> JobConfig:
        """The cheapest (fewest CPUs) config within ``best_slack`` of the predicted maximum."""
        if like not in self._best:  # cached until the next fit
            self._best[like] = best_config(self.candidates(like), self.model.throughput,
                                           self.settings.best_slack)
        return self._best[like]

    def _clip(self, c: JobConfig) -> JobConfig:
        b = self.budget
        c = c.with_(workers=min(c.workers, b.max_workers), ps=min(c.ps, b.max_ps))
        while not b.allows(c) and c.workers > 1:
            c = c.with_(workers=c.workers - 1)
        return c


def perf_key(c: JobConfig) -> JobConfig:
    """The part of a config that sets throughput (memory does not)."""
    return c.with_(ps_mem_gb=0.0, worker_mem_gb=0.0)


def with_ps(c: JobConfig, ps: int) -> JobConfig:
    """``c`` with ``ps`` parameter servers, per-PS memory rescaled to keep the same total."""
    return c.with_(ps=ps, ps_mem_gb=round(c.ps_mem_gb * c.ps / ps, 2))


def best_config(candidates: list[JobConfig], throughput, slack: float) -> JobConfig:
    """Among ``candidates``, the fewest-CPU one whose throughput is within ``slack`` of the best."""
    scored = [(throughput(c), c) for c in candidates]
    top = max(t for t, _ in scored)
    good = [c for t, c in scored if t >= (1 - slack) * top]
    return min(good, key=lambda c: (c.cpus, c.mem_gb, -throughput(c)))
