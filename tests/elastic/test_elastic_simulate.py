"""Job-trace simulator: the three-stage policy raises memory before OOM, static configs die;
every job is the real ElasticLoop over a simulated backend."""
from raystack.elastic.control import State
from raystack.elastic.perfmodel import JobConfig
from raystack.elastic.planner import Observation
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


def _one_job_sim(cluster=None, noise=0.0):
    from raystack.elastic.simulate import SimCluster

    job = make_trace(1, seed=4)[0]
    sim = ClusterSim([job], "three_stage", cluster=cluster or SimCluster(), noise=noise)
    sim.now = 30.0
    r = sim.start_job(job)
    assert r.loop.step() is State.RUNNING  # the initial plan was placed
    return sim, r


def _rescale(sim, r, target, now):
    """What the loop does with a planner's decision at ``now``: its plan, through the backend."""
    sim.now = now
    r.loop.apply_plan(r.loop.plan_to(target, "test"), now)


def test_a_ps_change_pauses_the_job_but_adding_workers_does_not():
    from raystack.elastic.simulate import true_thr as thr

    sim, r = _one_job_sim()
    be = r.backend
    c = be.cfg
    _rescale(sim, r, c.with_(ps=c.ps + 1), 30.0)  # a PS change: state copy, pause
    assert be.cfg.ps == c.ps + 1 and be.paused_until == 30.0 + sim.change_cost
    be.advance(60.0)
    assert be.done == 0.0  # the whole tick was the pause
    c = be.cfg
    _rescale(sim, r, c.with_(workers=c.workers + 3), 60.0)
    assert be.paused_until <= 60.0 and be.warm_until == 60.0 + sim.change_cost
    be.advance(90.0)  # the old workers trained on while the new ones started
    assert abs(be.done - thr(r.job, c) * sim.tick) < 1e-6
    done = be.done
    be.advance(120.0)
    assert abs(be.done - done - thr(r.job, be.cfg) * sim.tick) < 1e-6


def test_new_workers_are_placed_one_by_one_as_far_as_they_fit():
    from raystack.elastic.simulate import SimCluster

    sim, r = _one_job_sim(SimCluster(nodes=1, cpus_per_node=8.0, mem_per_node_gb=512.0))
    c = r.backend.cfg
    assert c.cpus == 3.0  # the default: 2 workers, 1 PS of 1 CPU
    _rescale(sim, r, c.with_(workers=10), 30.0)  # 7 more CPUs wanted, 5 free
    assert r.backend.cfg.workers == 7 and sum(sim.free_cpu) == 0.0
    assert r.loop.config == r.backend.cfg  # the loop saw what was placed, not what it asked
    _rescale(sim, r, r.backend.cfg.with_(ps=2), 60.0)  # no CPU for a 2nd PS: nothing changes
    assert r.backend.cfg.ps == 1 and len(r.backend.units) == 8


def test_three_stage_loses_no_job_and_sizes_ps_memory_closer_to_the_need():
    """The benchmark's trace: a saturated cluster, where a memory raise must find room."""
    tr = make_trace(60, seed=0)
    three = ClusterSim(tr, "three_stage").run()
    static = ClusterSim(tr, "static_over").run()
    assert three["completion_rate"] == 1.0 and three["oom"] == 0
    assert three["ps_mem_util"] > static["ps_mem_util"]
    assert three["cpu_util"] > static["cpu_util"]


def test_memory_asked_per_unit_follows_each_policy_and_counts_used_up_to_the_need():
    from raystack.elastic.simulate import WORKER_MEM_MARGIN

    job = make_trace(1, seed=4)[0]
    asked = {}
    for policy in ("static_over", "static_under", "three_stage", "oracle"):
        sim = ClusterSim([job], policy)
        initial = sim.planner_for(job).decide(Observation(JobConfig(1, 1)))
        asked[policy] = initial.target.worker_mem_gb / job.worker_mem_gb
    assert asked == {"static_over": 2.0, "static_under": 1.5,
                     "three_stage": WORKER_MEM_MARGIN, "oracle": 1.0}
    # an over-asking user's workers leave half their memory unused; the oracle's leave none
    over = ClusterSim([job], "static_over").run()
    oracle = ClusterSim([job], "oracle").run()
    assert over["mem_util"] < 0.75 < oracle["mem_util"]
