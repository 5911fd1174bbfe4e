"""The LoRA-aware pipeline schedule (LoRAPP) as a pure function, and GPipe for comparison.

Work is organised in *lanes*: a lane is a group of adapters trained together with BatchLoRA
(often one adapter per lane). Each lane runs ``steps`` optimizer steps; each step's batch is
split into ``micro_batches`` micro-batches. A micro-batch goes forward through stages
``0..D-1`` and backward through ``D-1..0``; after the last backward of a step on a stage, that
stage steps the lane's optimizer. A lane's next step may only start its forward on a stage
once the previous step's update is applied there, so nothing ever runs on stale weights.
Different lanes are independent, so they fill each other's bubbles; with at least as many
lanes as stages the bubble vanishes in steady state (bubble ratio ``max((D - L) / D, 0)``,
against GPipe's ``(D - 1) / (N + D - 1)``).

:func:`lorapp_schedule` simulates a greedy list schedule (backward before forward when both
are ready) with given per-stage op costs and returns the per-stage op order (which the
actors then execute in that order) with the simulated start/end times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Sequence

OpKind = Literal["F", "B"]


@dataclass(frozen=True, order=True)
class Op:
    """One forward or backward of micro-batch ``micro`` of ``lane``'s step ``step`` on one stage."""

    kind: OpKind
    lane: int
    step: int
    micro: int


@dataclass(frozen=True)
class LaneWork:
    """How much a lane runs: ``steps`` optimizer steps of ``micro_batches`` micro-batches each."""

    steps: int
    micro_batches: int = 1


@dataclass
class Schedule:
    """Per-stage op order plus simulated timing."""

    num_stages: int
    lanes: list[LaneWork]
    order: list[list[Op]]
    start: dict[tuple[int, Op], float] = field(default_factory=dict)
    end: dict[tuple[int, Op], float] = field(default_factory=dict)

    @property
    def makespan(self) -> float:
        return max(self.end.values(), default=0.0)

    def busy(self, stage: int) -> float:
        return sum(self.end[(stage, op)] - self.start[(stage, op)] for op in self.order[stage])

    def idle_fraction(self, stage: int) -> float:
        span = self.makespan
        return 0.0 if span == 0 else 1.0 - self.busy(stage) / span

    def bubble_ratio(self) -> float:
        """Idle stage-time over total stage-time, over the whole run."""
        span = self.makespan
        if span == 0:
            return 0.0
        return 1.0 - sum(self.busy(s) for s in range(self.num_stages)) / (span * self.num_stages)

    def window_bubble_ratio(self, t0: float, t1: float) -> float:
        """Bubble ratio restricted to the time window ``[t0, t1)`` (e.g. the steady state)."""
        busy = 0.0
        for (stage, op), s in self.start.items():
            e = self.end[(stage, op)]
            busy += max(0.0, min(e, t1) - max(s, t0))
        return 1.0 - busy / ((t1 - t0) * self.num_stages)


def lorapp_bubble_formula(num_stages: int, num_lanes: int) -> float:
    """Steady-state bubble ratio of LoRAPP with one micro-batch per step: ``max((D-L)/D, 0)``."""
    return max((num_stages - num_lanes) / num_stages, 0.0)


def gpipe_bubble_formula(num_stages: int, micro_batches: int) -> float:
    """GPipe's bubble ratio ``(D - 1) / (N + D - 1)``."""
    return (num_stages - 1) / (micro_batches + num_stages - 1)


def _costs(c: float | Sequence[float], d: int) -> list[float]:
    if isinstance(c, (int, float)):
        return [float(c)] * d
    if len(c) != d:
        raise ValueError(f"expected {d} per-stage costs, got {len(c)}")
    return [float(x) for x in c]


def lorapp_schedule(
    num_stages: int,
    lanes: Sequence[LaneWork],
    forward_cost: float | Sequence[float] = 1.0,
    backward_cost: float | Sequence[float] = 1.0,
    max_in_flight: int | None = None,
) -> Schedule:
    """Greedy LoRAPP schedule: each stage, when free, runs a ready backward if any, else the
    ready forward that has waited longest (ties: lowest lane).

    Dependencies: F(s) after F(s-1); B(D-1) after F(D-1); B(s) after B(s+1); the first forward
    of a lane's step ``k+1`` on stage 0 after the last backward of step ``k`` on stage 0 (which
    is after every other stage's backward of that step). ``max_in_flight`` caps the
    micro-batches whose forward started on stage 0 but whose backward has not finished there
    (activation memory), over all lanes.
    """
    d = num_stages
    if d < 1:
        raise ValueError("num_stages must be >= 1")
    fc, bc = _costs(forward_cost, d), _costs(backward_cost, d)
    lanes = list(lanes)
    sched = Schedule(d, lanes, [[] for _ in range(d)])
    free = [0.0] * d
    ready: list[dict[Op, float]] = [dict() for _ in range(d)]  # op -> ready time
    # per lane: next (step, micro) to inject on stage 0, and backwards outstanding in its step
    next_inject = {i: (0, 0) for i, w in enumerate(lanes) if w.steps > 0}
    lane_ready = {i: 0.0 for i in next_inject}  # time its next step may start
    outstanding = {i: 0 for i in next_inject}
    in_flight = 0

    def inject_candidates() -> None:
        for lane, (step, micro) in list(next_inject.items()):
            if lane_ready[lane] is None:
                continue
            op = Op("F", lane, step, micro)
            if op not in ready[0]:
                ready[0][op] = lane_ready[lane]

    total = sum(2 * d * w.steps * w.micro_batches for w in lanes)
    done = 0
    while done < total:
        inject_candidates()
        best = None
        for s in range(d):
            cands = ready[s]
            if s == 0 and max_in_flight is not None and in_flight >= max_in_flight:
                cands = {op: t for op, t in cands.items() if op.kind == "B"}
            if not cands:
                continue
            t = max(free[s], min(cands.values()))
            avail = [op for op, r in cands.items() if r <= t]
            op = min(avail, key=lambda o: (o.kind != "B", cands[o], o.lane, o.step, o.micro))
            if best is None or (t, op.kind != "B", s) < (best[0], best[2].kind != "B", best[1]):
                best = (t, s, op)
        if best is None:
            raise RuntimeError("schedule deadlocked (max_in_flight too small?)")
        t, s, op = best
        del ready[s][op]
        cost = fc[s] if op.kind == "F" else bc[s]
        sched.order[s].append(op)
        sched.start[(s, op)] = t
        sched.end[(s, op)] = t + cost
        free[s] = t + cost
        done += 1
        w = lanes[op.lane]
        if op.kind == "F":
            if s == 0:
                in_flight += 1
                outstanding[op.lane] += 1
                step, micro = op.step, op.micro + 1
                if micro < w.micro_batches:
                    next_inject[op.lane] = (step, micro)
                    lane_ready[op.lane] = t + cost  # the next micro-batch may follow at once
                else:
                    lane_ready[op.lane] = None  # wait for this step's backwards
                    next_inject[op.lane] = (step + 1, 0)
            nxt = Op("F", op.lane, op.step, op.micro) if s + 1 < d else Op("B", op.lane, op.step, op.micro)
            ready[s + 1 if s + 1 < d else s][nxt] = t + cost
        else:
            if s > 0:
                ready[s - 1][op] = t + cost
            else:
                in_flight -= 1
                outstanding[op.lane] -= 1
                if outstanding[op.lane] == 0 and next_inject.get(op.lane, (0, 0))[1] == 0 and lane_ready[op.lane] is None:
                    if next_inject[op.lane][0] < w.steps:
                        lane_ready[op.lane] = t + cost
                    else:
                        del next_inject[op.lane]
                        del lane_ready[op.lane]
    return sched


def gpipe_schedule(
    num_stages: int,
    micro_batches: int,
    steps: int,
    forward_cost: float | Sequence[float] = 1.0,
    backward_cost: float | Sequence[float] = 1.0,
) -> Schedule:
    """GPipe with one adapter: all forwards of a step, then all backwards, then a flush."""
    d = num_stages
    fc, bc = _costs(forward_cost, d), _costs(backward_cost, d)
    sched = Schedule(d, [LaneWork(steps, micro_batches)], [[] for _ in range(d)])
    t0 = 0.0
    for step in range(steps):
        free = [t0] * d
        fwd_done: dict[tuple[int, int], float] = {}
        for m in range(micro_batches):
            for s in range(d):
                start = max(free[s], fwd_done.get((s - 1, m), t0))
                op = Op("F", 0, step, m)
                sched.order[s].append(op)
                sched.start[(s, op)], sched.end[(s, op)] = start, start + fc[s]
                free[s] = fwd_done[(s, m)] = start + fc[s]
        last_fwd = max(free)
        free = [max(f, last_fwd) for f in free]
        bwd_done: dict[tuple[int, int], float] = {}
        for m in range(micro_batches):
            for s in reversed(range(d)):
                start = max(free[s], bwd_done.get((s + 1, m), last_fwd))
                op = Op("B", 0, step, m)
                sched.order[s].append(op)
                sched.start[(s, op)], sched.end[(s, op)] = start, start + bc[s]
                free[s] = bwd_done[(s, m)] = start + bc[s]
        t0 = max(free)
    return sched


def stale_weight_violations(order: Sequence[Sequence[Op]], lanes: Sequence[LaneWork]) -> list[str]:
    """Check, per stage, that every op of a lane's step ``k`` runs on weights updated exactly
    ``k`` times, i.e. after all of step ``k-1``'s backwards and before step ``k``'s update.

    Returns a description of each violation (empty when the order is safe).
    """
    problems = []
    for s, ops in enumerate(order):
        version = {i: 0 for i in range(len(lanes))}
        pending = {i: 0 for i in range(len(lanes))}
        for op in ops:
            if op.step != version[op.lane]:
                problems.append(f"stage {s}: {op} runs on weights of version {version[op.lane]}")
            if op.kind == "B":
                pending[op.lane] += 1
                if pending[op.lane] == lanes[op.lane].micro_batches:
                    version[op.lane] += 1
                    pending[op.lane] = 0
    return problems
