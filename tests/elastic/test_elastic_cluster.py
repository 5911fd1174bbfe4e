"""Elastic DLRM on the shared local Ray cluster: end to end, and faults by really killing actors."""
import threading
import time

import numpy as np
import pytest
import ray

from actors.elastic import ElasticController, ElasticJobError
from raystack.config import ConfigError, load_config
from raystack.data.criteo import DataError
from raystack.elastic.config import ElasticConfig

pytestmark = pytest.mark.cluster


def make_cfg(tmp_path, name, rows=24_000, **over):
    d = {"name": name, "work_dir": str(tmp_path / "work"), "poll_s": 0.3,
         "data": {"generate_rows": rows, "generate_files": 4, "out_dir": str(tmp_path / "data"),
                  "rows_per_shard": 2048},
         "resources": {"autoscale": False}, "faults": {"checkpoint_every_s": 0.5}}
    for k, v in over.items():
        d.setdefault(k, {}).update(v) if isinstance(v, dict) else d.__setitem__(k, v)
    return load_config(ElasticConfig, d)


def run(cfg, on_step=None):
    ctl = ElasticController(cfg)
    try:
        return ctl.run(on_step=on_step), ctl
    finally:
        ctl.shutdown()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("elastic")


@pytest.fixture(scope="module")
def fault_free(ray_cluster, data_dir):
    res, _ = run(make_cfg(data_dir, "ff", rows=48_000))
    return res


def test_trains_to_a_useful_auc_with_every_sample_once(fault_free):
    assert fault_free.lost == 0 and fault_free.duplicated == 0
    assert fault_free.rows == 36_000
    assert fault_free.auc > 0.65


@pytest.mark.slow
def test_ten_worker_kills_lose_and_duplicate_nothing(ray_cluster, data_dir, fault_free):
    kills = []

    def killer(ctl):
        # Kill by progress, not by the clock: the k-th kill once k/12 of the rows are committed,
        # so all ten land within the epoch however fast this machine trains.
        b, p = ctl.backend, ctl.loop.last_poll
        if p is None or len(kills) >= 10 or p.rows_done < (len(kills) + 1) * p.rows_total / 12:
            return
        uid = sorted(u for u in b.units if u.startswith("worker"))[len(kills) % 2]
        ray.kill(b.actors[uid])
        kills.append(uid)

    # Both workers equally slowed (no straggler between them) so the epoch outlasts ten kills and
    # relaunches on a fast, idle machine too.
    slow = {"worker-0": 4.0, "worker-1": 4.0}
    res, ctl = run(make_cfg(data_dir, "kills", rows=48_000, faults={"slow_workers": slow}), on_step=killer)
    assert len(kills) == 10
    assert res.lost == 0 and res.duplicated == 0, res
    assert sum("relaunch" in e for e in res.events) >= 9
    # The issue also asks for AUC within 0.005 of the fault-free run. That is not met yet (gaps of
    # 0.005-0.018 seen here, about the run-to-run spread of asynchronous PS training at this data
    # size) and stays open on the issue rather than being asserted loosely here.


@pytest.mark.slow
def test_ps_kill_restores_from_flash_checkpoint_and_training_continues(ray_cluster, data_dir):
    state = {"killed": False}

    def killer(ctl):
        if not state["killed"] and ray.get(ctl.backend.ss.stats.remote())["rows_done"] > 5000:
            ps = next(a for u, a in ctl.backend.actors.items() if u.startswith("ps"))
            ray.kill(ps, no_restart=False)
            state["killed"], state["ps"] = True, ps

    res, ctl = run(make_cfg(data_dir, "pskill"), on_step=killer)
    assert state["killed"]
    assert res.rows > 0 and res.auc > 0.6


def test_shard_service_restart_carries_on_exactly_once(ray_cluster, data_dir):
    state = {"killed": False}

    def killer(ctl):
        if not state["killed"] and ray.get(ctl.backend.ss.stats.remote())["rows_done"] > 5000:
            ray.kill(ctl.backend.ss, no_restart=False)
            state["killed"] = True

    res, ctl = run(make_cfg(data_dir, "ssrestart"), on_step=killer)
    assert state["killed"]
    assert res.lost == 0 and res.duplicated == 0


def test_controller_restart_adopts_the_running_job(ray_cluster, data_dir):
    cfg = make_cfg(data_dir, "adopt")
    first = ElasticController(cfg)
    t0 = time.time()
    while time.time() - t0 < 3:
        first.step()
        time.sleep(0.3)
    del first  # the controller is gone; workers keep training through the ShardService
    second = ElasticController(cfg, adopt=True)
    try:
        res = second.run()
    finally:
        second.shutdown()
    assert res.lost == 0 and res.duplicated == 0, (res, second.backend.worker_errors)


@pytest.mark.slow
def test_a_3x_slow_worker_is_detected_and_drained(ray_cluster, data_dir):
    cfg = make_cfg(data_dir, "slow", faults={"slow_workers": {"worker-0": 3.0},
                                             "straggler_min_rows": 2000})
    res, ctl = run(cfg)
    assert any("straggler" in e and "worker-0" in e for e in res.events), res.events
    assert res.lost == 0 and res.duplicated == 0


def test_unreadable_parquet_fails_naming_the_file(ray_cluster, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "part-0.parquet").write_bytes(b"not parquet at all")
    (bad / "part-1.parquet").write_bytes(b"PAR1 nope")
    cfg = make_cfg(tmp_path, "bad", data={"path": str(bad)})
    with pytest.raises(DataError, match="part-0.parquet"):
        ElasticController(cfg)


def test_bad_config_names_the_field():
    with pytest.raises(ConfigError, match="resources.max_workers"):
        load_config(ElasticConfig, {"resources": {"max_workers": "many"}})
    with pytest.raises(ConfigError, match="faults.straggler_factor"):
        load_config(ElasticConfig, {"faults": {"straggler_factor": 0.5}})
