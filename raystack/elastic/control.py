"""The elastic controller's loop as a pure state machine over a :class:`Backend`.

One ``step()``: poll the backend (units alive, per-worker rates, progress, PS load and
memory), relaunch what died, replace stragglers (the replacement starts first; the straggler
is drained once the replacement has committed a batch, so its rows keep flowing while the new
actor starts), measure throughput
once the configuration has been stable for ``measure_s``, ask the planner, and apply its
decision as a :class:`ScalePlan`. The Ray backend lives in ``actors/elastic``; tests step the
loop against a fake backend without Ray.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Protocol

from raystack.elastic.perfmodel import JobConfig
from raystack.elastic.plan import ScalePlan, UnitSpec, current_config, plan_to
from raystack.elastic.planner import Decision, Observation, ThreeStagePlanner
from raystack.elastic.stragglers import StragglerDetector


class State(enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"


@dataclass
class Poll:
    """One look at the job."""

    now: float
    dead: list[str] = field(default_factory=list)  # unit ids whose actor died
    worker_rates: dict[str, tuple[float, int]] = field(default_factory=dict)
    rows_done: int = 0
    rows_total: int = 1
    ps_cpu_util: list[float] = field(default_factory=list)
    ps_mem_gb: list[float] = field(default_factory=list)
    error: str | None = None  # e.g. a shard failed too often
    errors: dict[str, str] = field(default_factory=dict)  # unit id -> the error its worker reported
    committed: dict[str, int] = field(default_factory=dict)  # unit id -> rows its worker committed

    @property
    def finished(self) -> bool:
        return self.rows_done >= self.rows_total

    def has_committed(self, uid: str) -> bool:
        """Whether ``uid``'s worker has committed rows (its rate sample counts them too)."""
        return self.committed.get(uid, self.worker_rates.get(uid, (0.0, 0))[1]) > 0


class Backend(Protocol):
    def poll(self) -> Poll: ...
    def apply(self, plan: ScalePlan) -> None: ...
    def relaunch(self, unit: UnitSpec) -> None: ...


@dataclass
class Event:
    time: float
    kind: str  # plan | relaunch | straggler | finished | failed
    detail: str


class ElasticLoop:
    """State machine: STARTING -> RUNNING -> FINISHED | FAILED."""

    def __init__(self, planner: ThreeStagePlanner, backend: Backend, *,
                 detector: StragglerDetector | None = None, measure_s: float = 5.0,
                 settle_s: float = 2.0, autoscale: bool = True, max_relaunches: int = 5,
                 handover_s: float = 60.0) -> None:
        self.planner, self.backend = planner, backend
        self.detector = detector or StragglerDetector()
        self.measure_s, self.settle_s, self.autoscale = measure_s, settle_s, autoscale
        self.state = State.STARTING
        self.units: dict[str, UnitSpec] = {}
        self.events: list[Event] = []
        self.error: str | None = None
        self._next_id = 0
        self._window: tuple[float, int] | None = None  # (t0, rows0) of the current measurement
        self._changed_at = 0.0
        self._drained: set[str] = set()
        # replacement unit id -> (straggler unit id, when the replacement was launched)
        self._handover: dict[str, tuple[str, float]] = {}
        self.handover_s = handover_s  # drain the straggler anyway if its replacement takes longer
        self.max_relaunches = max_relaunches
        self._failed_in_a_row: dict[str, int] = {}  # unit id -> relaunches with nothing committed
        self.last_poll: Poll | None = None

    @property
    def config(self) -> JobConfig | None:
        return current_config(self.units)

    def _apply(self, plan: ScalePlan, now: float) -> None:
        if plan.empty:
            return
        self.backend.apply(plan)
        for u in plan.launch:
            self.units[u.unit_id] = u
        for uid in plan.remove:
            self.units.pop(uid, None)
        self._next_id += len(plan.launch)
        self._changed_at, self._window = now, None
        self.events.append(Event(now, "plan", str(plan)))

    def _decide(self, d: Decision | None, now: float) -> None:
        if d is not None:
            self._apply(plan_to(self.units, d.target, self._next_id, d.reason), now)

    def _finish_handovers(self, poll: Poll) -> bool:
        """Drain each straggler whose replacement has committed a batch (or died, or is late).

        Returns True if a plan was applied this step."""
        plan = ScalePlan(reason="straggler replaced")
        for new, (old, t0) in list(self._handover.items()):
            started = (poll.has_committed(new) or new not in self.units
                       or poll.now - t0 >= self.handover_s)
            if started:
                del self._handover[new]
                if old in self.units:
                    plan.remove.append(old)
        if plan.empty:
            return False
        self._apply(plan, poll.now)
        return True

    def step(self) -> State:
        if self.state in (State.FINISHED, State.FAILED):
            return self.state
        poll = self.backend.poll()
        self.last_poll = poll
        now = poll.now
        if self.state is State.STARTING:
            self._decide(self.planner.decide(Observation(JobConfig(1, 1))), now)
            self.state = State.RUNNING
            return self.state
        if poll.error:
            self.state, self.error = State.FAILED, poll.error
            self.events.append(Event(now, "failed", poll.error))
            return self.state
        if poll.finished:
            self.state = State.FINISHED
            self.events.append(Event(now, "finished", f"{poll.rows_done} rows"))
            return self.state
        for uid in poll.dead:
            if uid not in self.units:
                continue
            streak = 0 if poll.has_committed(uid) else self._failed_in_a_row.get(uid, 0) + 1
            self._failed_in_a_row[uid] = streak
            if streak > self.max_relaunches:
                # the same failure again and again (a bug, a bad node): stop and say why,
                # rather than relaunching until the job's timeout
                why = poll.errors.get(uid, "its actor died")
                self.state = State.FAILED
                self.error = (f"{uid} failed {streak} times in a row without committing a batch "
                              f"(faults.max_relaunches={self.max_relaunches}); last error: {why}")
                self.events.append(Event(now, "failed", self.error))
                return self.state
            self.backend.relaunch(self.units[uid])
            self.events.append(Event(now, "relaunch", uid))
        if self._finish_handovers(poll):
            return self.state
        slow = [w for w in self.detector.find(poll.worker_rates)
                if w not in self._drained and w not in self._handover]
        if slow:
            self._drained.update(slow)
            plan = ScalePlan(reason=f"straggler: {', '.join(slow)} slower than "
                                    f"1/{self.detector.factor:g} of the median; replacing")
            for uid in slow:
                old = self.units[uid]
                new = UnitSpec(f"worker-{self._next_id + len(plan.launch)}", "worker", old.index,
                               old.cpus, old.mem_gb)
                plan.launch.append(new)
                self._handover[new.unit_id] = (uid, now)
            self.events.append(Event(now, "straggler", ",".join(slow)))
            self._apply(plan, now)
            return self.state
        if self._handover:
            return self.state  # no sizing decisions while a straggler is being replaced
        obs = Observation(self.config, None, poll.ps_cpu_util, poll.ps_mem_gb,
                          poll.rows_done, poll.rows_total)
        if now - self._changed_at >= self.settle_s:
            if self._window is None:
                self._window = (now, poll.rows_done)
            elif now - self._window[0] >= self.measure_s:
                t0, r0 = self._window
                obs.throughput = (poll.rows_done - r0) / (now - t0)
                self._window = (now, poll.rows_done)
        if self.autoscale:
            self._decide(self.planner.decide(obs), now)
        return self.state
