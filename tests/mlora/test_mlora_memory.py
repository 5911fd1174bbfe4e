"""The per-stage memory model (fit, schedule walk, adapter bytes) and admission decisions."""

from __future__ import annotations

import pytest
import torch

from mlora_helpers import tiny_gpt2, tiny_llama
from raystack.mlora.batchlora import AdapterSpec
from raystack.mlora.config import AdapterConfig, TaskConfig
from raystack.mlora.jobs import form_lanes
from raystack.mlora.memory import (MB, ActivationModel, AdmissionPolicy, JobRequest, PipelineMemoryModel, StageLoad,
                                   activation_peak, adapter_state_bytes, job_request, lane_shapes)
from raystack.mlora.schedule import Op
from raystack.mlora.stage import OptimSpec, StageModel


def test_activation_model_recovers_quadratic():
    truth = (5e6, 300.0, 0.7)
    m = ActivationModel()
    for b, l in [(1, 64), (2, 64), (4, 128), (8, 256), (2, 512)]:
        m.observe(b, l, truth[0] + truth[1] * b * l + truth[2] * b * l * l)
    assert m.fitted
    assert m.predict(16, 1024) == pytest.approx(truth[0] + truth[1] * 16 * 1024 + truth[2] * 16 * 1024**2, rel=1e-6)


def test_activation_peak_walks_the_op_order():
    size = {0: 10.0, 1: 30.0, 2: 20.0}
    order = [Op("F", 0, 0, 0), Op("F", 1, 0, 0), Op("B", 0, 0, 0), Op("F", 2, 0, 0), Op("B", 1, 0, 0),
             Op("B", 2, 0, 0)]
    held, largest = activation_peak(order, lambda op: size[op.lane])
    assert (held, largest) == (50.0, 30.0)  # lanes 1 and 2 in flight together after lane 0's backward


def _job(name, micro, n_micro=1, seq=8, adapter=(0.0, 0.0), priority=0, arrival=0):
    return JobRequest(name, micro, n_micro, micro, seq, adapter, priority, arrival)


def test_prediction_follows_the_schedule_and_the_fitted_gamma():
    # activation bytes = rows * tokens on both stages; one lane of 2 micro-batches (2 x 8 each):
    # stage 0 holds both (the lane's next step waits for their backwards), the last stage runs
    # each backward right after its forward
    model = PipelineMemoryModel(2, [100.0, 200.0], [(0.0, 1.0, 0.0)] * 2, in_flight_cap=3)
    job = _job("a", 2, n_micro=2, adapter=(5.0, 7.0))
    load = model.predict([job])
    assert [(s.in_flight, s.working) for s in load] == [(32.0, 16.0), (16.0, 16.0)]
    assert [s.total for s in load] == [100 + 5 + 48, 200 + 7 + 32]
    # the cap bounds what is held, however many jobs run
    capped = PipelineMemoryModel(2, [0.0, 0.0], [(0.0, 1.0, 0.0)] * 2, in_flight_cap=1)
    assert capped.predict([job, _job("b", 2, n_micro=2)])[0].in_flight == 16.0
    # measured peaks twice the saved bytes: gamma is fitted to 2 and predictions follow
    for _ in range(3):
        model.observe_peak(0, load[0], 100 + 5 + 2 * 48)
    assert model.gamma(0) == pytest.approx(2.0) and model.gamma(1) == 1.0
    assert model.predict([job])[0].total == pytest.approx(100 + 5 + 96)


def test_admission_bound_never_drops_below_a_measured_window():
    # the measured peak of the same load varies from window to window (the allocator): one low
    # window after start must not let a larger set in that earlier windows say would not fit
    model = PipelineMemoryModel(2, [100.0, 100.0], [(0.0, 1.0, 0.0)] * 2, in_flight_cap=3)
    one, two = [_job("a", 4)], [_job("a", 4), _job("b", 4)]  # stage 0's A + T: 64, then 96 (two in flight)
    model.observe_peak(0, model.predict([_job("probe", 1)])[0], 100 + 1.3 * 16)  # calibration: x = 16, ratio 1.3
    model.observe_peak(0, model.predict(one)[0], 100 + 1.0 * 64)  # a low window: ratio 1.0
    expected, bound = model.predict(two)[0], model.predict(two)[0].bound
    assert model.gamma(0) < 1.05 and expected.total < 100 + 1.1 * 96  # the fit follows the low window
    assert bound == pytest.approx(100 + 1.3 * 96)  # admission does not
    policy = AdmissionPolicy(model, [(100 + 1.2 * 96) * 1.1, 1e9], max_concurrent=4, margin=0.1)
    assert policy.decide(one, [two[1]]).start == []  # the expected peak fits; the bound does not
    # what the stage keeps after a window (resident, less the adapters) raises its fixed part,
    # and is not read as that window's activations
    load = model.predict(one)[0]
    model.observe_peak(0, load, 120 + 2.0 * 64, resident=120)
    assert model.fixed[0] == 120 and model.gamma_bound(0) == pytest.approx(2.0)


def test_lanes_and_shapes_match_the_pipelines():
    jobs = [_job(f"j{i}", micro=i + 1, n_micro=2, seq=8 * (i + 1)) for i in range(5)]
    model = PipelineMemoryModel(2, [0.0, 0.0], [(0.0, 1.0, 0.0)] * 2)
    lanes = model.lanes(jobs)
    assert [[j.name for j in lane] for lane in lanes] == form_lanes(sorted(j.name for j in jobs), 2)
    shared = next(lane for lane in lanes if len(lane) == 2)  # 5 jobs in 4 lanes: one BatchLoRA lane
    assert lane_shapes(shared) == [(sum(j.micro_batch_size for j in shared), max(j.seq_len for j in shared))] * 2
    task = TaskConfig(adapter="a0", batch_size=5, micro_batch_size=2, cutoff_len=16)
    req = job_request(task, AdapterConfig(name="a0", r=4), tiny_llama(layers=2), [(0, 2), (2, 4)])
    assert [req.rows(m) for m in range(4)] == [2, 2, 1, 0] and req.seq_len == 16


FAMILIES = {"llama": (tiny_llama, ("q_proj", "down_proj", "lm_head")),
            "gpt2": (tiny_gpt2, ("c_attn", "c_fc", "lm_head"))}  # GPT-2: Conv1D layers, [in, out] weights


@pytest.mark.parametrize("family,optimizer,dora", [("llama", "adamw", False), ("llama", "sgd", True),
                                                   ("gpt2", "adamw", True)])
def test_adapter_state_bytes_match_a_trained_stage(family, optimizer, dora):
    make, targets = FAMILIES[family]
    bounds = [(0, 3), (3, 6)]
    predicted = adapter_state_bytes(make(layers=4), bounds, targets, r=4, dora=dora, optimizer=optimizer)
    for s, (a, b) in enumerate(bounds):
        st = StageModel(make(layers=4), a, b)
        st.add_adapter(AdapterSpec("a", "dora" if dora else "lora", r=4, target_modules=targets), OptimSpec(optimizer))
        params = st.model.adapter_parameters("a")
        for p in params:
            p.grad = torch.zeros_like(p)
        st.optims["a"].step()  # materialises the optimizer state
        state = sum(t.numel() * t.element_size() for p in params
                    for t in [p, p.grad, *st.optims["a"].state[p].values()] if t.dim() > 0)
        assert predicted[s] == state


def _policy(budgets, fixed=(100.0, 100.0), **kw):
    model = PipelineMemoryModel(2, list(fixed), [(0.0, 1.0, 0.0)] * 2, in_flight_cap=3)
    return AdmissionPolicy(model, [b for b in budgets], margin=0.0, **kw)


def test_admission_gates_every_stage_queues_by_priority_and_refuses_what_never_fits():
    # one job alone: 100 fixed + adapter + 2 * rows * 8 (held + working) on each stage
    running = [_job("r", 4, adapter=(10.0, 10.0))]  # 100 + 10 + 64 = 174 on each stage
    pending = [_job("huge", 50, adapter=(0.0, 0.0), priority=9, arrival=0),  # 900 alone: never fits
               _job("big", 8, adapter=(0.0, 40.0), priority=5, arrival=1),  # fits alone, not now (stage 1)
               _job("low", 1, arrival=2),
               _job("mid", 1, priority=1, arrival=3),
               _job("late", 1, arrival=4)]
    policy = _policy([400.0, 275.0], max_concurrent=3)
    d = policy.decide(running, pending)
    assert d.start == ["mid", "low"]  # priority order; big waits; late hits the cap
    assert "huge" in d.refused and "never fit" in d.refused["huge"] and "stage 0" in d.refused["huge"]
    assert "stage 1" in d.waiting["big"] and "budget" in d.waiting["big"]
    assert "cap" in d.waiting["late"]
    assert all(load.total <= budget for load, budget in zip(d.loads, policy.budgets))
    # strict priority: the waiting high-priority job blocks the ones behind it
    strict = _policy([400.0, 275.0], max_concurrent=3, strict_priority=True)
    assert strict.decide(running, pending).start == []
    # once the running job is gone, the big one starts first (highest priority that fits)
    assert _policy([400.0, 275.0], max_concurrent=3).decide([], pending).start[0] == "big"


def test_refusal_message_has_the_numbers():
    policy = _policy([2 * MB, 2 * MB], fixed=(1.5 * MB, 1.5 * MB), max_concurrent=4)
    policy.margin = 0.1
    d = policy.decide([], [_job("x", 1024, seq=512, adapter=(0.1 * MB, 0.1 * MB))])
    msg = d.refused["x"]
    assert msg.startswith("job 'x' can never fit: alone it needs ~") and "over the stage's budget of 2 MB" in msg
    assert "(base 2 + adapters 0.1 + activations 1 MB, +10% margin)" in msg


def test_stage_load_parts():
    load = StageLoad(fixed=100.0, adapters=20.0, in_flight=30.0, working=10.0, gamma=1.5)
    assert load.activations == 60.0 and load.total == 180.0
