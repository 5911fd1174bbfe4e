"""Three-stage planner, scale plans and straggler detection on crafted observations."""
import numpy as np

from raystack.elastic.perfmodel import JobConfig, features
from raystack.elastic.plan import UnitSpec, current_config, plan_to
from raystack.elastic.planner import (Budget, HistoryRecord, Observation, Stage,
                                      ThreeStagePlanner)
from raystack.elastic.stragglers import StragglerDetector

TRUE = np.array([0.01, 0.2, 0.004, 0.004, 0.0])  # compute-bound: workers scale well
B = 256


def true_thr(c: JobConfig) -> float:
    return c.workers * B / float(features(c) @ TRUE)


def run_warmup(planner: ThreeStagePlanner, thr=true_thr):
    d = planner.decide(Observation(JobConfig(1, 1)))
    cfg = d.target
    for _ in range(10):
        nxt = planner.decide(Observation(cfg))  # not measured yet: no change
        assert nxt is None
        nxt = planner.decide(Observation(cfg, thr(cfg)))
        if nxt is None:
            break
        cfg = nxt.target
        if planner.stage is Stage.RUNTIME:
            break
    return cfg


def test_no_history_starts_with_the_small_safe_default():
    p = ThreeStagePlanner(Budget(), B)
    d = p.decide(Observation(JobConfig(1, 1)))
    assert d.target == JobConfig(2, 1, 1.0, 1.0, 1.0, 1.0) and "default" in d.reason


def test_history_warm_start_uses_the_most_similar_job_with_memory_margin():
    hist = [HistoryRecord(10_000, 1_000_000, JobConfig(3, 2, 1.0, 1.0, 2.0)),
            HistoryRecord(1_000_000, 1_000_000, JobConfig(6, 4, 1.0, 1.0, 8.0))]
    p = ThreeStagePlanner(Budget(max_cpus=16), B, embedding_rows=12_000,
                          dataset_rows=900_000, history=hist)
    d = p.decide(Observation(JobConfig(1, 1)))
    assert (d.target.workers, d.target.ps) == (3, 2) and d.target.ps_mem_gb == 2.4


def test_warmup_profiles_then_jumps_to_the_best_config_in_budget():
    budget = Budget(max_cpus=10, max_workers=8, max_ps=3)
    p = ThreeStagePlanner(budget, B)
    cfg = run_warmup(p)
    assert p.stage is Stage.RUNTIME
    best = max(p.candidates(cfg), key=true_thr)
    assert budget.allows(cfg)
    assert true_thr(cfg) >= 0.9 * true_thr(best)


def test_runtime_adds_a_worker_that_pays_and_removes_one_that_does_not():
    budget = Budget(max_cpus=32, max_workers=16, max_ps=4)
    p = ThreeStagePlanner(budget, B)
    run_warmup(p)
    c = JobConfig(2, 2)
    d = p.decide(Observation(c, true_thr(c)))
    assert d is not None and d.target.workers == 3 and "pays" in d.reason
    # a PS-bound curve: extra workers bring nothing, so the planner gives one back
    flat = np.array([0.01, 0.01, 0.5, 0.0, 0.0])
    q = ThreeStagePlanner(budget, B)
    run_warmup(q, lambda c: c.workers * B / float(features(c) @ flat))
    c = JobConfig(6, 1)
    d = q.decide(Observation(c, c.workers * B / float(features(c) @ flat)))
    assert d is not None and d.target.workers == 5 and "does not pay" in d.reason


def test_hot_ps_gets_another_ps():
    p = ThreeStagePlanner(Budget(max_cpus=16), B)
    run_warmup(p)
    c = JobConfig(3, 1)
    d = p.decide(Observation(c, None, ps_cpu_util=[0.95]))
    assert d.target.ps == 2 and "hot PS" in d.reason


def test_memory_is_raised_before_the_predicted_oom():
    p = ThreeStagePlanner(Budget(max_mem_gb=64), B)
    run_warmup(p)
    c = JobConfig(2, 1, ps_mem_gb=2.0)
    d = None
    for done, used in ((1000, 0.6), (2000, 0.8), (3000, 1.0)):  # grows 0.2 GB / 1000 rows
        d = p.decide(Observation(c, None, ps_mem_gb=[used], rows_done=done, rows_total=10_000))
    assert d is not None and "OOM" in d.reason
    assert d.target.ps_mem_gb >= 2.4 * 1.3 - 1e-6  # predicted 2.4 GB at the end, +30%


def test_plan_to_adds_removes_and_replaces_units():
    units = {u.unit_id: u for u in [UnitSpec("worker-0", "worker", 0, 1, 1),
                                    UnitSpec("worker-1", "worker", 1, 1, 1),
                                    UnitSpec("ps-2", "ps", 0, 1, 1)]}
    assert current_config(units) == JobConfig(2, 1, 1, 1, 1, 1)
    plan = plan_to(units, JobConfig(1, 2, 1, 1, 2, 1), next_id=3, reason="x")
    assert plan.remove == ["worker-1", "ps-2"]
    ids = {u.unit_id: u for u in plan.launch}
    assert ids["ps-3"].replaces == "ps-2" and ids["ps-3"].mem_gb == 2
    assert ids["ps-4"].index == 1 and ids["ps-4"].replaces is None


def test_straggler_is_a_worker_below_half_the_median_of_the_others():
    d = StragglerDetector(factor=2.0, min_rows=100)
    assert d.find({"a": (100.0, 500), "b": (95.0, 500), "c": (33.0, 500)}) == ["c"]
    assert d.find({"a": (100.0, 500), "b": (60.0, 500)}) == []
    assert d.find({"a": (100.0, 500), "c": (10.0, 50)}) == []  # too new to judge


def test_warmup_survives_a_probe_measured_at_zero_throughput():
    """A worker killed while a probe is profiled can leave a 0 samples/s measurement; the planner
    must fit on the informative probes instead of dividing by zero (seen in the demo)."""
    budget = Budget(max_cpus=10, max_workers=8, max_ps=3)
    p = ThreeStagePlanner(budget, B)
    killed = {"done": False}

    def thr_with_a_dead_probe(c: JobConfig) -> float:
        if not killed["done"] and p.stage is Stage.WARMUP and len(p.points) >= 1:
            killed["done"] = True
            return 0.0
        return true_thr(c)

    cfg = run_warmup(p, thr_with_a_dead_probe)
    assert killed["done"] and p.stage is Stage.RUNTIME
    assert budget.allows(cfg)


def test_perf_model_rejects_non_positive_throughput():
    import pytest

    from raystack.elastic.perfmodel import PerfModel

    with pytest.raises(ValueError, match="must be > 0"):
        PerfModel(B).fit([(JobConfig(1, 1), 100.0), (JobConfig(2, 1), 0.0)])
