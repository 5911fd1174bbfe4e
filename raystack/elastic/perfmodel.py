"""Resource-performance model: step time as a non-negative sum of diminishing-returns terms.

For a job with ``w`` workers of ``cpu_w`` CPUs and ``p`` PS of ``cpu_p`` CPUs, the time one
worker needs per batch is modelled as

    t = c0 + c1 / cpu_w + c2 * w / p + c3 * w / (p * cpu_p) + c4 * w

(fixed overhead, the worker's compute, PS bandwidth contention, PS compute contention, and
synchronisation that grows with the worker count), with every ``c_i >= 0`` fitted by
non-negative least squares on observed (config, throughput) points. Job throughput is
``w * batch_size / t``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class JobConfig:
    """A DLRM job's resources: worker and PS counts, CPUs each, PS memory (GB)."""

    workers: int
    ps: int
    worker_cpu: float = 1.0
    ps_cpu: float = 1.0
    ps_mem_gb: float = 1.0
    worker_mem_gb: float = 1.0

    @property
    def cpus(self) -> float:
        return self.workers * self.worker_cpu + self.ps * self.ps_cpu

    @property
    def mem_gb(self) -> float:
        return self.workers * self.worker_mem_gb + self.ps * self.ps_mem_gb

    def with_(self, **kw) -> "JobConfig":
        return replace(self, **kw)


TERMS = ("overhead", "1/cpu_w", "w/p", "w/(p*cpu_p)", "w")


def features(cfg: JobConfig) -> np.ndarray:
    """The regressors of the step-time model for one configuration."""
    w, p = float(cfg.workers), float(cfg.ps)
    return np.array([1.0, 1.0 / cfg.worker_cpu, w / p, w / (p * cfg.ps_cpu), w])


def nnls(a: np.ndarray, b: np.ndarray, max_iter: int = 500, tol: float = 1e-12) -> np.ndarray:
    """Solve ``min ||a x - b||`` subject to ``x >= 0`` (Lawson-Hanson active set)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    n = a.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    grad = a.T @ (b - a @ x)
    for _ in range(max_iter):
        if passive.all() or (grad[~passive] <= tol).all():
            break
        j = int(np.argmax(np.where(passive, -np.inf, grad)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > tol).all():
                x = z
                break
            neg = passive & (z <= tol)
            alpha = np.min(x[neg] / (x[neg] - z[neg] + 1e-300))
            x = x + alpha * (z - x)
            passive &= x > tol
            x[~passive] = 0.0
        grad = a.T @ (b - a @ x)
    return x


@dataclass
class PerfModel:
    """Fitted step-time model; ``fit`` on observations, ``throughput`` to predict."""

    batch_size: int
    coef: np.ndarray | None = None

    def fit(self, points: list[tuple[JobConfig, float]]) -> "PerfModel":
        """Fit from ``(config, samples_per_second)`` points (needs >= 2 distinct configs)."""
        if len({c for c, _ in points}) < 2:
            raise ValueError(f"need observations of >= 2 distinct configs, got {len(points)}")
        bad = [thr for _, thr in points if not thr > 0]
        if bad:
            raise ValueError(f"throughputs must be > 0 samples/s, got {bad[0]}")
        a = np.stack([features(c) for c, _ in points])
        t = np.array([c.workers * self.batch_size / thr for c, thr in points])
        # Relative error matters (configs differ by orders of magnitude): weight rows by 1/t.
        self.coef = nnls(a / t[:, None], np.ones_like(t))
        return self

    @property
    def fitted(self) -> bool:
        return self.coef is not None

    def step_time(self, cfg: JobConfig) -> float:
        assert self.coef is not None, "fit the model first"
        return float(features(cfg) @ self.coef)

    def throughput(self, cfg: JobConfig) -> float:
        """Predicted samples per second of the whole job."""
        return cfg.workers * self.batch_size / max(self.step_time(cfg), 1e-9)


def mape(model: PerfModel, points: list[tuple[JobConfig, float]]) -> float:
    """Mean absolute percentage error of predicted throughput on ``points``."""
    errs = [abs(model.throughput(c) - thr) / thr for c, thr in points]
    return float(np.mean(errs))


@dataclass
class MemoryTrend:
    """Linear fit of memory use over training steps, to raise memory before an OOM."""

    points: list[tuple[float, float]]

    def predict(self, step: float) -> float:
        if not self.points:
            return 0.0
        x, y = np.array(self.points, dtype=float).T
        keep = np.isfinite(x) & np.isfinite(y)
        x, y = x[keep], y[keep]
        if len(y) == 0:
            return 0.0
        if len(np.unique(x)) < 2:  # no progress between samples yet: no trend to fit
            return float(y.max())
        slope, icpt = np.polyfit(x, y, 1)
        return float(icpt + max(slope, 0.0) * step)
