"""Job-trace simulator: the three-stage policy raises memory before OOM, static configs die."""
from raystack.elastic.simulate import ClusterSim, make_trace, oracle_config, job_budget, true_thr


def test_trace_has_poisson_arrivals_and_some_growing_jobs():
    tr = make_trace(50, seed=1)
    assert len(tr) == 50 and all(b.arrival_s > a.arrival_s for a, b in zip(tr, tr[1:]))
    assert 5 < sum(j.mem_growth > 1 for j in tr) < 45


def test_three_stage_completes_growing_jobs_that_static_configs_lose_to_oom():
    tr = [j for j in make_trace(40, seed=3) if j.mem_growth > 2.2][:4]
    assert tr
    three = ClusterSim(tr, "three_stage").run()
    static = ClusterSim(tr, "static_over").run()
    assert three["completion_rate"] == 1.0 and three["oom"] == 0
    assert static["oom"] == len(tr)


def test_oracle_config_is_within_budget_and_near_the_best():
    job = make_trace(1, seed=4)[0]
    b = job_budget()
    o = oracle_config(job, b)
    assert b.allows(o)
    sim = ClusterSim([job], "oracle").run()
    assert sim["completion_rate"] == 1.0 and true_thr(job, o) > 0
