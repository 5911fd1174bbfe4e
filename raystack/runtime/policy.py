"""When a run restarts after a failure and when it gives up: one policy for every part.

``FailurePolicy.decide(event)`` returns :class:`Restart` (with a backoff delay) or
:class:`Raise` (with the reason the run stops), counting failures against a budget each part
configures from its own config field:

- EDiT, ``run.max_replacements``: every replaced actor costs one (``per="member"``);
- mLoRA, ``pipeline.max_restarts`` x stages: every failed window costs one (``per="event"``);
- elastic, ``faults.max_relaunches``: counted per unit and in a row (``consecutive=True``): a
  unit that made progress (committed a batch) since its last failure starts again from zero.

A failure in which no member died (an error raised inside a method while every actor is
alive, e.g. a bug) costs one too, so a deterministic error cannot restart a run forever.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from raystack.runtime.health import Health

logger = logging.getLogger(__name__)

Charge = Literal["member", "event"]


@dataclass(frozen=True)
class FailureEvent:
    """Something failed: which members (empty when every actor is alive), how, and why."""

    members: tuple[str, ...]
    health: Health
    reason: str
    progressed: bool = False  # the members made progress since their previous failure

    def describe(self) -> str:
        who = ", ".join(self.members) if self.members else "a call"
        return f"{who} ({self.health.value}): {self.reason}"


@dataclass(frozen=True)
class Restart:
    """Recover and go on, after ``delay_s`` (backoff); ``attempt`` counts failures charged."""

    delay_s: float
    attempt: int
    reason: str


@dataclass(frozen=True)
class Raise:
    """Stop the run; ``reason`` says why (the budget and the last error)."""

    reason: str
    failures: int


Decision = Restart | Raise


class FailurePolicy:
    """Restart until more than ``max_failures`` failures are charged, then raise.

    ``field`` names the config field the budget comes from (it appears in the reason);
    ``progress`` says what counts as progress in a consecutive count. Backoff before a
    restart: ``backoff_s * backoff_factor ** (attempt - 1)``, at most ``max_backoff_s``.
    """

    def __init__(self, max_failures: int, *, field: str = "max_failures", per: Charge = "member",
                 consecutive: bool = False, progress: str = "progress", backoff_s: float = 0.0,
                 backoff_factor: float = 2.0, max_backoff_s: float = 60.0) -> None:
        if max_failures < 0:
            raise ValueError(f"{field}: must be >= 0, got {max_failures}")
        if per not in ("member", "event"):
            raise ValueError(f"per must be 'member' or 'event', got {per!r}")
        self.max_failures, self.field, self.per = max_failures, field, per
        self.consecutive, self.progress = consecutive, progress
        self.backoff_s, self.backoff_factor, self.max_backoff_s = backoff_s, backoff_factor, max_backoff_s
        self.failures = 0  # charged in all (not consecutive)
        self._streak: dict[str, int] = {}

    def delay(self, attempt: int) -> float:
        """The backoff before the ``attempt``-th restart (attempt >= 1)."""
        if self.backoff_s <= 0:
            return 0.0
        return min(self.backoff_s * self.backoff_factor ** max(attempt - 1, 0), self.max_backoff_s)

    def decide(self, event: FailureEvent) -> Decision:
        decision = self._streaks(event) if self.consecutive and event.members else self._total(event)
        logger.info("failure %s -> %s", event.describe(), decision)
        return decision

    def _total(self, event: FailureEvent) -> Decision:
        cost = len(event.members) if self.per == "member" and event.members else 1
        self.failures += cost
        if self.failures > self.max_failures:
            return Raise(f"{event.describe()}; {self.failures} failures in all, more than "
                         f"{self.field}={self.max_failures} allows", self.failures)
        return Restart(self.delay(self.failures), self.failures, event.reason)

    def _streaks(self, event: FailureEvent) -> Decision:
        worst = 0
        for key in event.members:
            streak = 0 if event.progressed else self._streak.get(key, 0) + 1
            self._streak[key] = streak
            worst = max(worst, streak)
            if streak > self.max_failures:
                return Raise(f"{key} failed {streak} times in a row without {self.progress} "
                             f"({self.field}={self.max_failures}); last error: {event.reason}", streak)
        self.failures += 1
        return Restart(self.delay(worst), worst, event.reason)
