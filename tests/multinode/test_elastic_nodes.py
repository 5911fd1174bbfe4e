"""Elastic DLRM on a simulated multi-node cluster: workers and parameter servers spread over
nodes (Ray's state API), then the node of the dense PS and the node of a worker lost together:
the PS comes back at the last consistent cut, the ledger goes back with it, and the audit by
sample id finds every sample trained exactly once."""
from __future__ import annotations

import os

import pytest
import ray

from raystack.config import load_config
from raystack.elastic.config import ElasticConfig

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_a_ps_and_a_worker_lost_with_their_nodes_lose_and_duplicate_no_sample(nodes, tmp_path):
    from raystack.actors.elastic import ElasticController

    sim = nodes
    cfg = load_config(ElasticConfig, {
        "name": "mn", "work_dir": "work", "poll_s": 0.3,   # relative: made absolute on the driver
        "data": {"generate_rows": 24_000, "generate_files": 3, "out_dir": str(tmp_path / "data"),
                 "rows_per_shard": 2048},
        "resources": {"autoscale": False, "initial_workers": 2, "initial_ps": 2, "ray_cpus_per_cpu": 1.0,
                      "max_cpus": 8},
        "faults": {"checkpoint_every_s": 0.5}})
    lost = {}

    def lose_nodes(ctl):
        if lost or ctl.loop.last_poll is None or ctl.loop.last_poll.rows_done < 3000:
            return
        where = sim.actor_nodes(ctl.backend.actors)
        units = sorted(where)
        assert len(set(where.values())) == len(units) == 4, where   # every unit on its own node
        ps, worker = next(u for u in units if u.startswith("ps")), next(u for u in units if u.startswith("worker"))
        lost.update(ps=ps, worker=worker, nodes={where[ps], where[worker]},
                    rows=ray.get(ctl.backend.ss.stats.remote()).rows_done)
        for node in lost["nodes"]:
            sim.remove(node)

    here = os.getcwd()
    os.chdir(tmp_path)                                      # the driver's directory, not the nodes'
    try:
        ctl = ElasticController(cfg)
    finally:
        os.chdir(here)
    try:
        res = ctl.run(on_step=lose_nodes)
        after = sim.actor_nodes(ctl.backend.actors)
    finally:
        ctl.shutdown()
    assert lost, "the nodes were never removed"
    assert not set(after.values()) & lost["nodes"], after
    restores = ctl.backend.restores
    assert len(restores) == 1 and restores[0].ps == (lost["ps"],), restores   # the lost PS, restored
    assert 0 < restores[0].cut and restores[0].rows_redone <= lost["rows"]     # to a cut, not the start
    assert res.rows == 16_000 and res.lost == 0 and res.duplicated == 0   # audited by sample id
    assert (tmp_path / "work" / "mn" / ctl.run_dir.run_id / "shards" / "shards.json").is_file()
    assert res.auc > 0.6
