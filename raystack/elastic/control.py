"""The elastic controller's loop: the part's strategy over the runtime kernel's Controller.

One ``step()`` is one :class:`~raystack.runtime.controller.Controller` step whose hooks are
this loop's: STARTING applies the planner's initial decision; each RUNNING step polls the
backend (units alive, per-worker rates, progress, PS load and memory) and hands dead units
to the shared :class:`~raystack.runtime.policy.FailurePolicy` (counted per unit and in a
row, ``faults.max_relaunches``: a unit that committed a batch since it last died starts from
zero), which the controller turns into a relaunch (RECOVERING, then RUNNING) or an error;
otherwise it replaces stragglers (the replacement starts first; the straggler is drained once
the replacement has committed a batch, so its rows keep flowing while the new actor starts),
measures throughput once the configuration has been stable for ``measure_s``, asks the
planner, and applies its decision as a :class:`ScalePlan`.

The backend is the Ray cluster (``actors/elastic``) or the job-trace simulator's simulated
cluster (``simulate.py``): both drive this same loop. Tests step it against a fake.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from raystack.elastic.perfmodel import JobConfig
from raystack.elastic.plan import ScalePlan, UnitSpec, current_config, plan_to
from raystack.elastic.planner import Decision, Observation, Planner
from raystack.elastic.stragglers import StragglerDetector
from raystack.runtime.controller import Controller, ControllerState, MetricsCallback, Progress
from raystack.runtime.health import Health
from raystack.runtime.policy import FailureEvent, FailurePolicy

State = ControllerState  # STARTING, RUNNING, RECOVERING, FINISHED, ERRORED (alias FAILED)


@dataclass(frozen=True)
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

    @property
    def samples_per_s(self) -> float:
        return sum(r for r, _ in self.worker_rates.values())


class Backend(Protocol):
    def poll(self) -> Poll: ...

    def apply(self, plan: ScalePlan) -> ScalePlan | None:
        """Carry out ``plan``; return what was done (a backend short of room may launch fewer
        units, or nothing: an empty plan), or None for all of it."""

    def relaunch(self, unit: UnitSpec) -> None: ...


@dataclass(frozen=True)
class Event:
    time: float
    kind: str  # plan | relaunch | straggler | finished | failed
    detail: str


class ElasticLoop:
    """The elastic part's hooks, stepped by a kernel Controller: STARTING -> RUNNING
    (<-> RECOVERING while dead units are relaunched) -> FINISHED | FAILED."""

    def __init__(self, planner: Planner, backend: Backend, *,
                 detector: StragglerDetector | None = None, measure_s: float = 5.0,
                 settle_s: float = 2.0, autoscale: bool = True, max_relaunches: int = 5,
                 handover_s: float = 60.0, callbacks: Sequence[MetricsCallback] = ()) -> None:
        self.planner, self.backend = planner, backend
        self.detector = detector or StragglerDetector()
        self.measure_s, self.settle_s, self.autoscale = measure_s, settle_s, autoscale
        self.units: dict[str, UnitSpec] = {}
        self.events: list[Event] = []
        self.max_relaunches = max_relaunches
        self.policy = FailurePolicy(max_relaunches, field="faults.max_relaunches", consecutive=True,
                                    progress="committing a batch")
        self.controller = Controller(self, self.policy, callbacks=callbacks, name="elastic")
        self._next_id = 0
        self._window: tuple[float, int] | None = None  # (t0, rows0) of the current measurement
        self._changed_at = 0.0
        self._drained: set[str] = set()
        # replacement unit id -> (straggler unit id, when the replacement was launched)
        self._handover: dict[str, tuple[str, float]] = {}
        self.handover_s = handover_s  # drain the straggler anyway if its replacement takes longer
        self._initial: Decision | None = None
        self.last_poll: Poll | None = None

    # ---- the kernel's view -------------------------------------------------------------------
    @property
    def state(self) -> ControllerState:
        return self.controller.state

    @property
    def error(self) -> str | None:
        return self.controller.error

    def step(self) -> ControllerState:
        """One controller step (one poll of the backend)."""
        state = self.controller.step()
        if state is State.ERRORED and not (self.events and self.events[-1].kind == "failed"):
            self.events.append(Event(self._now(), "failed", self.controller.error))
        return state

    # ---- public operations -------------------------------------------------------------------
    @property
    def config(self) -> JobConfig | None:
        return current_config(self.units)

    @property
    def next_unit_id(self) -> int:
        """The number the next new unit's id gets (unit ids are never reused)."""
        return self._next_id

    def plan_to(self, target: JobConfig, reason: str = "") -> ScalePlan:
        """The plan from the running units to ``target`` (not applied)."""
        return plan_to(self.units, target, self._next_id, reason)

    def apply_plan(self, plan: ScalePlan, now: float) -> ScalePlan:
        """Apply ``plan`` through the backend now; returns what the backend did."""
        if plan.empty:
            return plan
        done = self.backend.apply(plan)
        done = plan if done is None else done
        if done.empty:
            return done
        for u in done.launch:
            self.units[u.unit_id] = u
        for uid in done.remove:
            self.units.pop(uid, None)
        self._next_id += len(plan.launch)
        self._changed_at, self._window = now, None
        self.events.append(Event(now, "plan", str(done)))
        return done

    def adopt(self, units: dict[str, UnitSpec]) -> None:
        """Carry on with units that already run (a restarted controller): no initial plan."""
        self.units = dict(units)
        self._next_id = 1 + max((int(u.split("-")[1]) for u in self.units), default=-1)
        self.controller.adopt_running()

    def _now(self) -> float:
        return self.last_poll.now if self.last_poll is not None else 0.0

    # ---- hooks (called by the controller) -------------------------------------------------------
    def start(self) -> bool:
        """The initial decision, applied; False while the backend has no room for it yet."""
        poll = self.last_poll = self.backend.poll()
        if self._initial is None:
            self._initial = self.planner.decide(Observation(JobConfig(1, 1)))
        if self._initial is None:
            return True
        return not self.apply_plan(plan_to(self.units, self._initial.target, self._next_id,
                                           self._initial.reason), poll.now).empty

    def advance(self) -> Progress:
        poll = self.last_poll = self.backend.poll()
        now = poll.now
        metrics = {"rows_done": float(poll.rows_done), "samples_per_s": poll.samples_per_s,
                   "workers": float(sum(u.role == "worker" for u in self.units.values())),
                   "ps": float(sum(u.role == "ps" for u in self.units.values()))}
        if poll.error:
            self.events.append(Event(now, "failed", poll.error))
            return Progress(error=poll.error, metrics=metrics)
        if poll.finished:
            self.events.append(Event(now, "finished", f"{poll.rows_done} rows"))
            return Progress(done=True, metrics=metrics)
        dead = [uid for uid in poll.dead if uid in self.units]
        if dead:
            return Progress(metrics=metrics, failures=tuple(
                FailureEvent((uid,), Health.DEAD, poll.errors.get(uid, "its actor died"),
                             progressed=poll.has_committed(uid)) for uid in dead))
        if not self._finish_handovers(poll):
            self._replace_stragglers_or_plan(poll)
        return Progress(metrics=metrics)

    def recover(self, event: FailureEvent) -> None:
        """Relaunch the dead units (the backend fences their updates and returns their rows)."""
        for uid in event.members:
            if uid in self.units:
                self.backend.relaunch(self.units[uid])
                self.events.append(Event(self._now(), "relaunch", uid))

    # ---- what a running step decides -------------------------------------------------------------
    def _decide(self, d: Decision | None, now: float) -> None:
        if d is not None:
            self.apply_plan(plan_to(self.units, d.target, self._next_id, d.reason), now)

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
        self.apply_plan(plan, poll.now)
        return True

    def _replace_stragglers_or_plan(self, poll: Poll) -> None:
        now = poll.now
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
            self.apply_plan(plan, now)
            return
        if self._handover:
            return  # no sizing decisions while a straggler is being replaced
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
