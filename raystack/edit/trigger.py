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

    def reset(self, scale: float = 1.0, quota: int | None = None) -> None:
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
        self._quota: int | None = None

    def should_sync(self, steps_since_sync: int) -> bool:
        """True when the window of ``t_seconds`` since the last reset has elapsed (or, in a
        window given a step quota, once this replica ran its quota)."""
        if self._quota is not None:
            return steps_since_sync >= self._quota
        return self._clock() - self._since >= self._window

    def reset(self, scale: float = 1.0, quota: int | None = None) -> None:
        """Start a new window of ``scale`` x t_seconds (called right after a sync, so all
        replicas restart together; a scale below 1 shortens a window), or, with ``quota``, a
        window of that many inner steps of this replica (the last window of a run)."""
        self._since = self._clock()
        self._window = self.t_seconds * scale
        self._quota = quota


def split_by_rate(left: int, steps: list[int], at_least: int = 1) -> list[int]:
    """Split ``left`` inner steps over replicas in proportion to ``steps`` (each replica's
    steps in the last window, i.e. its speed), largest remainders first, each >= ``at_least``:
    the replicas then finish their shares at about the same time."""
    total = sum(steps)
    if total <= 0:
        return [max(at_least, -(-left // len(steps)))] * len(steps)
    exact = [left * s / total for s in steps]
    out = [int(x) for x in exact]
    order = sorted(range(len(steps)), key=lambda i: (out[i] - exact[i], i))
    for i in order[:left - sum(out)]:
        out[i] += 1
    return [max(at_least, q) for q in out]


def accept_sync(steps_per_replica: list[int], min_steps: int) -> bool:
    """The collective decision of A-EDiT: sync only if every replica ran >= ``min_steps``."""
    return min(steps_per_replica) >= min_steps


def in_warmup(global_step: int, warmup_steps: int) -> bool:
    """True while the first ``warmup_steps`` steps run as synchronous data parallel."""
    return global_step < warmup_steps
