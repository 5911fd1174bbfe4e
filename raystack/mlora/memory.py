"""Online memory model and job admission (the mLoRA scheduler's OOM avoidance).

:class:`MemoryModel` fits ``Mem ~= b0 + b1*B*L + b2*B*L^2`` (B batch rows, L sequence length)
by least squares to observations made while jobs run, and predicts a new job's memory before
it is admitted. :class:`AdmissionPolicy` is the scheduler's pure policy: given the running
and pending jobs it decides which pending jobs start now (priority first, then arrival,
up to a concurrency cap, only if the predicted memory fits the budget).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np


class MemoryModel:
    """Least-squares fit of ``b0 + b1*B*L + b2*B*L^2`` bytes, refit after every observation."""

    def __init__(self, prior: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> None:
        self.beta = np.asarray(prior, dtype=float)
        self.samples: list[tuple[int, int, float]] = []

    @staticmethod
    def _features(b: float, l: float) -> np.ndarray:
        return np.array([1.0, b * l, b * l * l])

    def observe(self, batch: int, seq_len: int, mem_bytes: float) -> None:
        self.samples.append((batch, seq_len, float(mem_bytes)))
        if len({(b, l) for b, l, _ in self.samples}) >= 3:
            x = np.stack([self._features(b, l) for b, l, _ in self.samples])
            y = np.array([m for _, _, m in self.samples])
            self.beta = np.linalg.lstsq(x, y, rcond=None)[0]

    @property
    def fitted(self) -> bool:
        return len({(b, l) for b, l, _ in self.samples}) >= 3

    def predict(self, batch: int, seq_len: int) -> float:
        return float(self._features(batch, seq_len) @ self.beta)


@dataclass(frozen=True)
class JobRequest:
    """A training job as the scheduler sees it."""

    name: str
    batch_size: int
    seq_len: int
    priority: int = 0
    arrival: int = 0


@dataclass(frozen=True)
class AdmissionObs:
    running: Sequence[JobRequest]
    pending: Sequence[JobRequest]


@dataclass(frozen=True)
class AdmissionDecision:
    start: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)  # why a pending job waits


class AdmissionPolicy:
    """Start pending jobs by (priority desc, arrival asc) while under ``max_concurrent`` and
    while the memory model says the running set plus the job fits ``budget_bytes``.

    A job that does not fit does not block smaller, lower-priority jobs behind it (backfill),
    unless ``strict_priority`` is set.
    """

    def __init__(self, model: MemoryModel, budget_bytes: float, max_concurrent: int,
                 strict_priority: bool = False) -> None:
        self.model = model
        self.budget = float(budget_bytes)
        self.max_concurrent = max_concurrent
        self.strict = strict_priority

    def decide(self, obs: AdmissionObs) -> AdmissionDecision:
        used = sum(self.model.predict(j.batch_size, j.seq_len) for j in obs.running)
        count = len(obs.running)
        decision = AdmissionDecision()
        for job in sorted(obs.pending, key=lambda j: (-j.priority, j.arrival, j.name)):
            if count >= self.max_concurrent:
                decision.reasons[job.name] = f"concurrency cap {self.max_concurrent} reached"
                continue
            need = self.model.predict(job.batch_size, job.seq_len)
            if used + need > self.budget:
                decision.reasons[job.name] = (
                    f"needs ~{need / 2**20:.1f} MiB, {max(self.budget - used, 0) / 2**20:.1f} MiB free")
                if self.strict:
                    break
                continue
            decision.start.append(job.name)
            used += need
            count += 1
        return decision
