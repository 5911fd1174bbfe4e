"""When a replica synchronises: every H inner steps (EDiT) or every T seconds (A-EDiT)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable


@dataclass
class StepTrigger:
    """EDiT: fire after every ``h`` inner steps counted since the last sync."""

    h: int

    def __post_init__(self) -> None:
        if self.h < 1:
            raise ValueError(f"h must be >= 1, got {self.h}")

    def should_sync(self, steps_since_sync: int) -> bool:
        """True when ``steps_since_sync`` inner steps have run since the last sync."""
        return steps_since_sync >= self.h

    def reset(self, scale: float = 1.0) -> None:
        """Called after each sync (nothing to reset: the step count lives with the caller)."""


class TimeTrigger:
    """A-EDiT: fire once ``t_seconds`` of wall clock have passed since the last sync.

    A sync is only *proposed* by the trigger; whether it happens is decided collectively
    (see :func:`accept_sync`), because every replica must join the same collectives.
    """

    def __init__(self, t_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        if t_seconds <= 0:
            raise ValueError(f"t_seconds must be > 0, got {t_seconds}")
        self.t_seconds = t_seconds
        self._clock = clock
        self._since = clock()
        self._window = t_seconds

    def should_sync(self, steps_since_sync: int) -> bool:
        """True when the window of ``t_seconds`` since the last reset has elapsed."""
        return self._clock() - self._since >= self._window

    def reset(self, scale: float = 1.0) -> None:
        """Start a new window of ``scale`` x t_seconds (called right after a sync, so all
        replicas restart together; a scale below 1 shortens the last window of a run)."""
        self._since = self._clock()
        self._window = self.t_seconds * scale


def accept_sync(steps_per_replica: list[int], min_steps: int) -> bool:
    """The collective decision of A-EDiT: sync only if every replica ran >= ``min_steps``."""
    return min(steps_per_replica) >= min_steps


def in_warmup(global_step: int, warmup_steps: int) -> bool:
    """True while the first ``warmup_steps`` steps run as synchronous data parallel."""
    return global_step < warmup_steps
