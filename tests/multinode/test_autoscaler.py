"""Elastic DLRM and Ray's own autoscaler (the fake multi-node provider on the simulated
cluster): a budget above today's capacity makes the controller's capacity request launch nodes
the job then uses, and the nodes go once the job has ended and cleared its request; a budget
no node type can hold fails naming it, and no placement group outlives either job."""
from __future__ import annotations

import time

import pytest
import ray

from raystack.config import load_config
from raystack.elastic.config import ElasticConfig
from raystack.simcluster import autoscaled_nodes

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def cfg_for(tmp_path, name, ray_cpus_per_cpu, **resources):
    return load_config(ElasticConfig, {
        "name": name, "work_dir": str(tmp_path / "work"), "poll_s": 0.3,
        "data": {"generate_rows": 8_000, "generate_files": 2, "out_dir": str(tmp_path / "data"),
                 "rows_per_shard": 2048},
        "resources": {"autoscale": False, "initial_workers": 1, "initial_ps": 1,
                      "ray_cpus_per_cpu": ray_cpus_per_cpu, "max_cpus": 8, **resources}})


def job_groups(name):
    return [pg for pg in ray.util.placement_group_table().values()
            if pg["name"].startswith(f"{name}-pg-") and pg["state"] != "REMOVED"]


def test_capacity_requests_scale_the_cluster_up_and_down_and_an_unreachable_budget_fails(nodes, tmp_path):
    from raystack.actors.elastic import ElasticController
    from raystack.actors.elastic.backend import CapacityError

    assert not autoscaled_nodes()
    # each unit reserves 4 Ray CPUs: no static node (2 CPUs) can hold one; the autoscaler's
    # "big" nodes (4 CPUs) can
    ctl = ElasticController(cfg_for(tmp_path, "up", 4.0))
    try:
        res = ctl.run()
        used = {ray.util.placement_group_table(ctl.backend.group.placement(k))["bundles_to_node_id"][0]
                for k in ctl.backend.units}
    finally:
        ctl.shutdown()
    big = {n["NodeID"] for n in ray.nodes() if n["Resources"].get("CPU") == 4.0}
    assert len(used) == 2 and used <= big, (used, big)       # launched for the job, and used by it
    assert res.lost == 0 and res.duplicated == 0
    assert not job_groups("up")
    deadline = time.time() + 60                               # request cleared: idle nodes go
    while autoscaled_nodes() and time.time() < deadline:
        time.sleep(0.5)
    assert not autoscaled_nodes()

    bad = cfg_for(tmp_path, "never", 8.0, capacity_timeout_s=4.0)   # 8 CPUs a unit: no node type
    with pytest.raises(CapacityError, match=r"resources: the budget cannot be placed.*ray_cpus_per_cpu=8"):
        ctl = ElasticController(bad)
        try:
            ctl.run()
        finally:
            ctl.shutdown()
    assert not job_groups("never")
