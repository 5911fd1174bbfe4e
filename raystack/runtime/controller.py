"""The run's state machine, shared by every part: start, run, recover, finish or error.

``Controller.step()`` does one thing per call, depending on the state:

- STARTING: the part's ``start()`` hook (reserve placement groups, spawn, form groups); a
  hook that returns False is still waiting (e.g. for room) and is called again next step;
- RUNNING: the part's ``advance()`` hook (EDiT: a segment; mLoRA: a window; elastic: one
  poll and scale plan), whose :class:`Progress` feeds the tracking callbacks; a Progress
  with an ``error`` (the part cannot go on, e.g. a shard failed too often) -> ERRORED;
- a failure (a :class:`MemberFailure` out of a hook, or failures a poll reported) is
  diagnosed with one batched health poll of the group, turned into a :class:`FailureEvent`
  and given to the :class:`FailurePolicy`: ``Raise`` -> ERRORED with the reason;
  ``Restart`` -> RECOVERING: after the backoff, the part's ``recover(event)`` hook (respawn
  the failed members, re-form, heal them) runs in the same step and the run goes back to
  RUNNING; if the recovery itself fails, the controller stays RECOVERING and the next step
  tries again (the policy counts that failure too);
- FINISHED and ERRORED are terminal.

Other errors (a bad argument, a bug on the driver) propagate unchanged. The controller knows
no Ray: tests step it against fake members.
"""
from __future__ import annotations

import enum
import logging
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol, Sequence

from raystack.runtime.group import ActorGroup, MemberFailure
from raystack.runtime.health import Health, worst
from raystack.runtime.policy import FailureEvent, FailurePolicy, Raise

logger = logging.getLogger(__name__)


class ControllerState(enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    RECOVERING = "recovering"
    FINISHED = "finished"
    ERRORED = "errored"
    FAILED = "errored"  # an alias of ERRORED (the elastic loop's name for it)

    @property
    def terminal(self) -> bool:
        return self in (ControllerState.FINISHED, ControllerState.ERRORED)


@dataclass(frozen=True)
class Progress:
    """What one ``advance()`` did: finished?, the metrics of this step (one history row),
    failures a poll found without an exception (e.g. elastic's dead units), or an error that
    ends the run."""

    done: bool = False
    step: int | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    failures: tuple[FailureEvent, ...] = ()
    error: str | None = None
    # (step, metrics) of steps completed before ``step`` in the same call (EDiT runs several
    # segments per call): the callbacks get every one
    earlier: tuple[tuple[int, Mapping[str, float]], ...] = ()


class Hooks(Protocol):
    """A part's strategy: what starting, one unit of work and a recovery mean for it."""

    def start(self) -> bool | None: ...
    def advance(self) -> Progress: ...
    def recover(self, event: FailureEvent) -> None: ...


class MetricsCallback(Protocol):
    """Experiment tracking: called with each step's metrics, and once with the result."""

    def on_metrics(self, step: int, metrics: Mapping[str, float]) -> None: ...
    def on_end(self, result) -> None: ...


@dataclass(frozen=True)
class Transition:
    before: ControllerState
    after: ControllerState
    why: str


class RunFailedError(RuntimeError):
    """The run stopped: the failure policy gave up (the message says why)."""


class Controller:
    """Steps a part's hooks through STARTING -> RUNNING (<-> RECOVERING) -> FINISHED | ERRORED."""

    def __init__(self, hooks: Hooks, policy: FailurePolicy, *, group: ActorGroup | None = None,
                 callbacks: Sequence[MetricsCallback] = (), sleep: Callable[[float], None] = time.sleep,
                 name: str = "run") -> None:
        self.hooks, self.policy, self.group = hooks, policy, group
        self.callbacks = list(callbacks)
        self.sleep, self.name = sleep, name
        self.state = ControllerState.STARTING
        self.error: str | None = None
        self.transitions: list[Transition] = []
        self.recoveries = 0  # recoveries completed
        self.steps = 0  # advance() calls that returned
        self.last_failure: BaseException | None = None  # the latest member failure seen
        self._pending: list[FailureEvent] = []
        self._delay = 0.0

    # ---- the loop ------------------------------------------------------------------------------
    def step(self) -> ControllerState:
        """One step of the state machine; returns the state after it."""
        state = self.state
        if state.terminal:
            return state
        try:
            if state is ControllerState.STARTING:
                if self.hooks.start() is not False:
                    self._to(ControllerState.RUNNING, "started")
            elif state is ControllerState.RUNNING:
                self._advance()
            else:
                self._recover()
                return self.state
        except MemberFailure as exc:
            self.last_failure = exc
            if state is ControllerState.STARTING:
                self._error(f"start failed: {exc.reason}")
                raise
            self._fail([self.diagnose(exc)])
        except BaseException as exc:
            self._error(f"{type(exc).__name__}: {exc}")
            raise
        if self.state is ControllerState.RECOVERING:
            self._recover()
        return self.state

    def run(self) -> ControllerState:
        """Step until FINISHED; raise :class:`RunFailedError` if the run errored."""
        while not self.step().terminal:
            pass
        self.raise_if_errored()
        return self.state

    def raise_if_errored(self) -> None:
        """Raise :class:`RunFailedError` (from the last member failure) if the run errored."""
        if self.state is ControllerState.ERRORED:
            raise RunFailedError(f"{self.name}: {self.error}") from self.last_failure

    def adopt_running(self, why: str = "adopted a running job") -> None:
        """Skip STARTING: the part's actors already run (a restarted driver took them over)."""
        if self.state is ControllerState.STARTING:
            self._to(ControllerState.RUNNING, why)

    def end(self, result) -> None:
        """Hand the run's result to the tracking callbacks (their ``on_end``)."""
        for cb in self.callbacks:
            cb.on_end(result)

    # ---- what a step does ----------------------------------------------------------------------
    def _advance(self) -> None:
        progress = self.hooks.advance()
        self.steps += 1
        rows = list(progress.earlier)
        if progress.metrics:
            rows.append((progress.step if progress.step is not None else self.steps, progress.metrics))
        for step, metrics in rows:
            for cb in self.callbacks:
                cb.on_metrics(step, metrics)
        if progress.error is not None:
            self._error(progress.error)
        elif progress.failures:
            self._fail(list(progress.failures))
        elif progress.done:
            self._to(ControllerState.FINISHED, "done")

    def diagnose(self, failure: MemberFailure) -> FailureEvent:
        """The members that really failed, from one batched health poll of the group (a call
        can fail on a live member because a peer died); without a group, the errors' health."""
        if self.group is not None:
            status = self.group.poll()
            bad = status.failed + status.unreachable
            health = worst(status.members[k].health for k in bad) if bad else Health.ALIVE
            reasons = status.reasons(bad)
            why = "; ".join(f"{k}: {r}" for k, r in reasons.items()) if reasons else failure.reason
            if bad and failure.reason not in why:
                why = f"{why} (first error: {failure.reason})"
            return FailureEvent(tuple(bad), health, why)
        bad = [k for k, h in failure.health.items() if h is not None and h is not Health.ALIVE]
        return FailureEvent(tuple(bad), worst(failure.health[k] for k in bad) if bad else Health.ALIVE,
                            failure.reason)

    def _fail(self, events: list[FailureEvent]) -> None:
        delay = 0.0
        for event in events:
            decision = self.policy.decide(event)
            if isinstance(decision, Raise):
                self._error(decision.reason)
                return
            delay = max(delay, decision.delay_s)
        self._pending.extend(events)
        self._delay = max(self._delay, delay)
        if self.state is not ControllerState.RECOVERING:
            self._to(ControllerState.RECOVERING, "; ".join(e.describe() for e in events))

    def _recover(self) -> None:
        if self._delay > 0:
            logger.info("%s: backing off %.2fs before recovering", self.name, self._delay)
            self.sleep(self._delay)
            self._delay = 0.0
        events, self._pending = self._pending, []
        try:
            for event in events:
                self.hooks.recover(event)
        except MemberFailure as exc:
            self.last_failure = exc
            self._fail([self.diagnose(exc)])
            return
        except BaseException as exc:
            self._error(f"recovery failed: {type(exc).__name__}: {exc}")
            raise
        self.recoveries += 1
        self._to(ControllerState.RUNNING, "recovered")

    def _error(self, why: str) -> None:
        self.error = why
        logger.info("%s: %s", self.name, why)  # the caller gets the error itself
        self._to(ControllerState.ERRORED, why)

    def _to(self, state: ControllerState, why: str) -> None:
        if state is not self.state:
            self.transitions.append(Transition(self.state, state, why))
            logger.info("%s: %s -> %s (%s)", self.name, self.state.value, state.value, why)
            self.state = state
