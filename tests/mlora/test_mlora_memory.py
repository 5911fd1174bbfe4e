"""Memory model fit and admission decisions."""

from __future__ import annotations

import pytest

from raystack.mlora.memory import AdmissionObs, AdmissionPolicy, JobRequest, MemoryModel


def test_memory_model_recovers_quadratic():
    truth = (5e6, 300.0, 0.7)
    m = MemoryModel()
    for b, l in [(1, 64), (2, 64), (4, 128), (8, 256), (2, 512)]:
        m.observe(b, l, truth[0] + truth[1] * b * l + truth[2] * b * l * l)
    assert m.fitted
    assert m.predict(16, 1024) == pytest.approx(truth[0] + truth[1] * 16 * 1024 + truth[2] * 16 * 1024**2, rel=1e-6)


def test_admission_respects_cap_priority_and_memory():
    m = MemoryModel(prior=(0.0, 1.0, 0.0))  # memory = B*L bytes
    policy = AdmissionPolicy(m, budget_bytes=1000, max_concurrent=3)
    running = [JobRequest("r", 10, 40)]  # 400 used
    pending = [JobRequest("big", 10, 70, priority=5, arrival=1),  # 700: does not fit
               JobRequest("low", 5, 40, priority=0, arrival=0),  # 200
               JobRequest("mid", 5, 40, priority=1, arrival=2),  # 200
               JobRequest("late", 1, 10, priority=0, arrival=9)]
    d = policy.decide(AdmissionObs(running, pending))
    assert d.start == ["mid", "low"]  # priority order, big skipped (memory), late hits the cap
    assert "MiB" in d.reasons["big"] and "cap" in d.reasons["late"]
    strict = AdmissionPolicy(m, budget_bytes=1000, max_concurrent=3, strict_priority=True)
    assert strict.decide(AdmissionObs(running, pending)).start == []
