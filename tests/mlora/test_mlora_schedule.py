"""The LoRAPP schedule as a pure function: bubbles, ordering, and no stale weights."""

from __future__ import annotations

import pytest

from raystack.mlora.balance import param_costs, partition
from raystack.mlora.schedule import (LaneWork, Op, gpipe_bubble_formula, gpipe_schedule, lorapp_bubble_formula,
                                     lorapp_schedule, stale_weight_violations)
from tests.mlora.mlora_helpers import tiny_llama


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("lanes", [1, 2, 3, 4, 6])
def test_steady_state_bubble_matches_formula(stages, lanes):
    sched = lorapp_schedule(stages, [LaneWork(steps=40)] * lanes)
    span = sched.makespan
    steady = sched.window_bubble_ratio(0.2 * span, 0.8 * span)
    assert steady == pytest.approx(lorapp_bubble_formula(stages, lanes), abs=0.02)
    assert stale_weight_violations(sched.order, sched.lanes) == []


@pytest.mark.parametrize("stages,micro", [(2, 1), (2, 4), (4, 8), (3, 5)])
def test_gpipe_bubble_matches_formula(stages, micro):
    sched = gpipe_schedule(stages, micro, steps=3, forward_cost=1.0, backward_cost=2.0)
    assert sched.bubble_ratio() == pytest.approx(gpipe_bubble_formula(stages, micro))
    assert stale_weight_violations(sched.order, sched.lanes) == []


def test_micro_batches_unequal_costs_and_every_op_once():
    lanes = [LaneWork(3, 2), LaneWork(2, 3), LaneWork(4, 1)]
    sched = lorapp_schedule(2, lanes, forward_cost=[1.0, 1.5], backward_cost=[2.0, 2.5])
    for s in range(2):
        expected = {Op(k, i, st, m) for i, w in enumerate(lanes) for st in range(w.steps)
                    for m in range(w.micro_batches) for k in "FB"}
        assert set(sched.order[s]) == expected and len(sched.order[s]) == len(expected)
    assert stale_weight_violations(sched.order, lanes) == []
    # every stage's ops never overlap, and each backward follows its forward on the last stage
    for s in range(2):
        times = sorted((sched.start[(s, op)], sched.end[(s, op)]) for op in sched.order[s])
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(times, times[1:]))
    for op in sched.order[1]:
        if op.kind == "B":
            assert sched.start[(1, op)] >= sched.end[(1, Op("F", op.lane, op.step, op.micro))]


def test_stale_weight_checker_catches_early_forward():
    lanes = [LaneWork(2, 1)]
    bad = [[Op("F", 0, 0, 0), Op("F", 0, 1, 0), Op("B", 0, 0, 0), Op("B", 0, 1, 0)]]
    assert stale_weight_violations(bad, lanes)
    good = [[Op("F", 0, 0, 0), Op("B", 0, 0, 0), Op("F", 0, 1, 0), Op("B", 0, 1, 0)]]
    assert stale_weight_violations(good, lanes) == []


def test_lorapp_beats_gpipe_makespan_with_many_adapters():
    d, n_adapters, steps = 2, 4, 6
    ours = lorapp_schedule(d, [LaneWork(steps)] * n_adapters)
    gpipe_total = n_adapters * gpipe_schedule(d, 1, steps).makespan  # one adapter at a time
    assert ours.makespan < 0.6 * gpipe_total


def test_in_flight_cap_is_respected():
    sched = lorapp_schedule(2, [LaneWork(3, 4)] * 2, max_in_flight=2)
    live, peak = 0, 0
    events = []
    for op in sched.order[0]:
        events.append((sched.start[(0, op)], 1 if op.kind == "F" else 0, op))
    for t, is_f, op in sorted(events, key=lambda e: e[0]):
        live += 1 if is_f else -1
        peak = max(peak, live)
    assert peak <= 2


def test_default_in_flight_cap_keeps_the_pipeline_full():
    # stages + 1 micro-batches in flight lose nothing against an unbounded schedule, in the
    # benchmark's shape (2 stages, 2 lanes of 2 adapters, 2 micro-batches per step) and others
    from raystack.mlora.config import PipelineConfig

    for d, lanes in ((2, [LaneWork(3, 4)] * 2), (2, [LaneWork(6, 1)] * 4), (3, [LaneWork(4, 2)] * 3)):
        cap = PipelineConfig(stages=d).in_flight_cap
        assert cap == d + 1
        free = lorapp_schedule(d, lanes, backward_cost=2.0)
        capped = lorapp_schedule(d, lanes, backward_cost=2.0, max_in_flight=cap)
        assert capped.makespan <= free.makespan * 1.05, (d, capped.makespan, free.makespan)


def test_partition_minimises_largest_stage():
    plan = partition([1, 1, 1, 1, 4], 2)
    assert plan.bounds == [(0, 4), (4, 5)] and max(plan.costs) == 4
    plan = partition([3, 1, 1, 1, 1, 1, 3], 3)
    assert max(plan.costs) == 4
    assert [b for _, b in plan.bounds][-1] == 7
    with pytest.raises(ValueError):
        partition([1, 2], 3)


def test_param_balance_on_llama_is_near_even():
    model = tiny_llama(layers=6)
    costs = param_costs(model)
    assert len(costs) == 8  # embed, 6 layers, head
    plan = partition(costs, 2)
    assert plan.imbalance < 1.25


def test_measured_costs_cover_every_unit():
    from raystack.mlora.balance import measured_costs

    costs = measured_costs(tiny_llama(layers=2), batch=1, seq=8, repeats=1)
    assert len(costs) == 4 and all(c > 0 for c in costs)
