"""The three-stage resource planner (DLRover-RM): initial, warm-up, runtime.

``decide(obs)`` returns a :class:`Decision` (a target :class:`JobConfig` and why) or None.
- initial: a similar past job's final config with a margin, or a small safe default;
- warm-up: measure a few probe configs, fit the :class:`PerfModel`, jump to the predicted
  best configuration within the budget;
- runtime: keep fitting; add a worker while its predicted marginal throughput pays, remove one
  when it does not, add a PS when one is hot, raise PS memory before a predicted OOM.
"""
from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field

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


@dataclass
class PlannerSettings:
    add_pays: float = 0.5  # add a worker if it brings >= this x an average worker's throughput
    remove_below: float = 0.2  # remove the last worker if it brings < this x the average
    hot_ps_cpu: float = 0.9
    mem_headroom: float = 0.9  # act when predicted use exceeds this fraction of the limit
    mem_raise: float = 1.3  # new limit = predicted peak x this
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

    # ---- the policy ----------------------------------------------------------------------
    def decide(self, obs: Observation) -> Decision | None:
        """The next target configuration, or None to keep the current one."""
        if self.stage is Stage.INITIAL:
            return self.initial()
        d = self._decide(obs)
        if d is None:
            return None
        # Never shrink total PS memory as a side effect of a CPU/count change.
        cur, tgt = obs.config, d.target
        if tgt.ps_mem_gb * tgt.ps < cur.ps_mem_gb * cur.ps:
            tgt = tgt.with_(ps_mem_gb=round(cur.ps_mem_gb * cur.ps / tgt.ps, 2))
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
        return True

    def _warmup(self, obs: Observation) -> Decision | None:
        todo = [c for c in self._probes if perf_key(c) not in self.points]
        if perf_key(obs.config) not in self.points:
            return None  # still measuring the current probe
        if todo:
            return Decision(todo[0], f"warm-up: profiling probe {len(self.points) + 1}")
        self.stage = Stage.RUNTIME
        if not self._fit():
            return None
        best = self.best_config(obs.config)
        if best == obs.config:
            return None
        return Decision(best, f"warm-up: jump to predicted best "
                              f"({self.model.throughput(best):.0f} samples/s)")

    def _runtime(self, obs: Observation) -> Decision | None:
        s, c = self.settings, obs.config
        mem = self._memory(obs)
        if mem is not None:
            return mem
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

    def _memory(self, obs: Observation) -> Decision | None:
        if len(self.mem.points) < 3:
            return None
        peak = self.mem.predict(obs.rows_total)
        if peak > self.settings.mem_headroom * obs.config.ps_mem_gb:
            new = obs.config.with_(ps_mem_gb=round(peak * self.settings.mem_raise, 2))
            return Decision(new, f"runtime: PS memory predicted to reach {peak:.2f} GB of "
                                 f"{obs.config.ps_mem_gb:.2f} GB; raising before OOM")
        return None

    # ---- search ------------------------------------------------------------------------
    def candidates(self, like: JobConfig) -> list[JobConfig]:
        b = self.budget
        out = []
        for w, p, cw, cp in itertools.product(range(1, b.max_workers + 1),
                                              range(1, b.max_ps + 1), b.cpu_choices,
                                              b.cpu_choices):
            c = with_ps(like, p).with_(workers=w, worker_cpu=cw, ps_cpu=cp)
            if b.allows(c):
                out.append(c)
        return out

    def best_config(self, like: JobConfig) -> JobConfig:
        """The cheapest (fewest CPUs) config within ``best_slack`` of the predicted maximum."""
        return best_config(self.candidates(like), self.model.throughput, self.settings.best_slack)

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
