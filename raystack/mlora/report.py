"""What a pipeline run reports: per window (time, tokens, idle, losses, lanes, memory) and in all.

:class:`LoRAPipeline` (``raystack.actors.mlora``) fills these; ``raystack.mlora.finetune``
turns a :class:`PipelineRun` into the runtime's ``Result`` (:meth:`PipelineRun.history_rows`,
:meth:`PipelineRun.summary`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from raystack.mlora.balance import StagePlan

MB = 2**20


@dataclass(frozen=True)
class StagePeak:
    """A stage's peak memory in one window: predicted before it ran, and measured."""

    predicted_bytes: float
    measured_bytes: int
    budget_bytes: float

    @property
    def error(self) -> float:
        """(predicted - measured) / measured."""
        return self.predicted_bytes / self.measured_bytes - 1.0 if self.measured_bytes else 0.0


@dataclass(frozen=True)
class WindowReport:
    window: int
    seconds: float
    tokens: int
    idle_fraction: list[float]
    losses: dict[str, float]
    lanes: tuple[tuple[str, ...], ...] = ()  # the jobs that ran, by lane (a lane's jobs share micro-batches)
    memory: list[StagePeak] = field(default_factory=list)  # per stage

    @property
    def jobs(self) -> tuple[str, ...]:
        return tuple(sorted(n for lane in self.lanes for n in lane))

    def metrics(self) -> dict[str, float]:
        """The window as flat metrics (a history row, a tracking step)."""
        return {"tokens": float(self.tokens), "seconds": self.seconds,
                "tokens_per_s": self.tokens / max(self.seconds, 1e-9),
                **{f"idle/stage{i}": f for i, f in enumerate(self.idle_fraction)},
                **{f"memory/stage{i}_peak_mb": p.measured_bytes / MB for i, p in enumerate(self.memory)},
                **{f"memory/stage{i}_predicted_mb": p.predicted_bytes / MB for i, p in enumerate(self.memory)},
                **{f"loss/{n}": v for n, v in self.losses.items()}}


@dataclass
class PipelineRun:
    """What one ``LoRAPipeline.run()`` did (``raystack.mlora.finetune`` turns it into a Result)."""

    adapters: dict[str, str] = field(default_factory=dict)  # name -> exported PEFT dir
    losses: dict[str, list[float]] = field(default_factory=dict)
    windows: list[WindowReport] = field(default_factory=list)
    restarts: int = 0
    plan: StagePlan | None = None
    seconds: float = 0.0
    completion_s: dict[str, float] = field(default_factory=dict)
    admitted_window: dict[str, int] = field(default_factory=dict)  # the window a job first ran in
    finished_window: dict[str, int] = field(default_factory=dict)  # the window it finished in
    refused: dict[str, str] = field(default_factory=dict)  # jobs that can never fit: why, with the numbers

    @property
    def tokens(self) -> int:
        return sum(w.tokens for w in self.windows)

    def history_rows(self) -> list[dict[str, float]]:
        """One row per window: time, tokens, idle and memory per stage, losses."""
        rows = []
        for w in self.windows:
            m = w.metrics()
            rows.append({"window": w.window, **{k.replace("/", "_" if k.startswith(("idle", "memory")) else "."): v
                                               for k, v in m.items()}})
        return rows

    def summary(self) -> dict[str, float]:
        """The run's final metrics."""
        out = {"seconds": self.seconds, "tokens": float(self.tokens),
               "tokens_per_s": self.tokens / max(self.seconds, 1e-9), "restarts": float(self.restarts),
               "adapters": float(len(self.adapters)), "refused": float(len(self.refused)),
               **{f"loss.{n}": v[-1] for n, v in self.losses.items() if v}}
        if self.windows:
            out["idle_fraction"] = sum(sum(w.idle_fraction) / len(w.idle_fraction) for w in self.windows) \
                / len(self.windows)
            for s in range(len(self.windows[0].memory)):
                out[f"peak_mb.stage{s}"] = max(w.memory[s].measured_bytes for w in self.windows) / MB
        return out
