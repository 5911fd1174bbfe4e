"""Elastic DLRM on the shared local Ray cluster: end to end, and faults by really killing actors
(the ten-kill run also scrapes the metrics endpoint)."""
import contextlib
import re
import time
import uuid

import numpy as np
import pytest
import ray

from raystack.actors.elastic import ElasticController
from raystack.actors.elastic.ps import ParameterServer, TableMoved
from raystack.config import ConfigError, load_config
from raystack.data.criteo import DataError
from raystack.elastic.config import ElasticConfig
from raystack.elastic.dlrm import DLRMSpec
from raystack.runtime.storage import Storage
from tests.scrape import scraped

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
def test_ten_worker_kills_lose_and_duplicate_nothing_and_metrics_reach_the_dashboard(ray_cluster, data_dir,
                                                                                    fault_free):
    """Ten worker kills in one epoch: no sample lost or trained twice; the README's elastic series
    reach the cluster's metrics endpoint throughout (scraped while workers die and come back)."""
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
    job = "kills"  # this job's series only: other jobs of the session have their own
    ctl = ElasticController(make_cfg(data_dir, job, rows=48_000, faults={"slow_workers": slow}))
    names = ["elastic_workers", "elastic_ps", "elastic_samples_per_s", "elastic_samples_total",
             "elastic_rows_committed_total", "elastic_shards_done", "elastic_plan_changes_total",
             "elastic_ps_touched_rows"]
    res, s = scraped(lambda: ctl.run(on_step=killer), ctl.shutdown, names)
    assert len(kills) == 10
    assert res.lost == 0 and res.duplicated == 0, res
    assert sum("relaunch" in e for e in res.events) >= 9
    # AUC within 0.005 of the fault-free run is measured by benchmarks/elastic.py (target
    # kill_auc_delta) on a 240k-row job beside two fault-free runs: at this test's 48k rows two
    # fault-free runs alone differ by 0.005-0.012 (the order in which asynchronous pushes land),
    # so a single-run comparison here would test luck, not recovery.
    cfg = ctl.cfg.resources
    assert s.values("elastic_workers", job=job) and s.values("elastic_ps", job=job)
    assert set(s.values("elastic_workers", job=job)) <= set(range(1, cfg.max_workers + 1))
    assert set(s.values("elastic_ps", job=job)) <= set(range(1, cfg.max_ps + 1))
    assert max(s.values("elastic_samples_per_s", job=job)) > 0
    assert 0 < max(s.values("elastic_rows_committed_total", job=job)) <= res.rows
    assert max(s.values("elastic_plan_changes_total", job=job)) >= 1


@pytest.mark.slow
def test_ps_kill_restores_the_last_cut_and_every_sample_is_trained_once(ray_cluster, data_dir):
    state = {"killed": False}

    def killer(ctl):
        if not state["killed"] and ray.get(ctl.backend.ss.stats.remote()).rows_done > 5000:
            ps = next(a for u, a in ctl.backend.actors.items() if u.startswith("ps"))
            ray.kill(ps, no_restart=False)
            state["killed"], state["rows"] = True, ray.get(ctl.backend.ss.stats.remote()).rows_done

    res, ctl = run(make_cfg(data_dir, "pskill"), on_step=killer)
    assert state["killed"]
    restores = ctl.backend.restores
    assert len(restores) == 1 and restores[0].cut >= 1, restores   # back to a cut, not to the start
    assert restores[0].rows_redone <= state["rows"]
    assert res.rows == 18_000 and res.lost == 0 and res.duplicated == 0
    assert res.auc > 0.6


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
def test_worker_kills_during_autoscale_resizes_finish_exactly_once(ray_cluster, data_dir):
    # Autoscaling on: the warm-up probes add a worker, replace the PS by two (new memory size),
    # change the worker CPU and jump to the predicted best. Right after each resize (new units
    # still starting, the PS handover just done) the oldest and the newest worker are killed,
    # and one more worker at 30% of the rows. This used to stall until the timeout: the new PS
    # got read-only arrays from the handover, so every push failed and workers crash-looped.
    kills, seen = [], {"plans": 1, "at30": False}

    def killer(ctl):
        b, p = ctl.backend, ctl.loop.last_poll
        plans = sum(e.kind == "plan" for e in ctl.loop.events)
        at30 = p is not None and not seen["at30"] and p.rows_done >= 0.3 * p.rows_total
        if len(kills) >= 8 or not (plans > seen["plans"] or at30):
            return
        seen["plans"], seen["at30"] = plans, seen["at30"] or at30
        ws = sorted((u for u, s in b.units.items() if s.role == "worker" and u in b.actors),
                    key=lambda u: int(u.split("-")[1]))
        for uid in dict.fromkeys([ws[0], ws[-1]] if not at30 else [ws[-1]]):
            ray.kill(b.actors[uid])
            kills.append(uid)

    # All workers equally slowed (no stragglers) so the warm-up's resizes land within the epoch.
    cfg = make_cfg(data_dir, "resizekills", rows=48_000, measure_s=1.0, settle_s=0.5,
                   timeout_s=300, resources={"autoscale": True},  # a stall never ends; the run takes 45-90 s
                   data={"out_dir": str(data_dir / "data-48k")},  # not regenerated per size
                   faults={"slow_workers": {f"worker-{i}": 4.0 for i in range(40)}})
    res, ctl = run(cfg, on_step=killer)  # a stall raises ElasticJobError (timed out)
    plans = [e for e in res.events if " plan: " in e]
    assert any(re.search(r"-\[[^\]]*ps-", e) for e in plans), plans  # a PS was replaced
    assert len(plans) >= 3 and len(kills) >= 4, (plans, kills)
    assert sum(" relaunch: " in e for e in res.events) >= 4, res.events
    assert res.rows == 36_000
    assert res.lost == 0 and res.duplicated == 0, (res, ctl.backend.worker_errors)


@contextlib.contextmanager
def two_ps(tmp_path, prefix):
    """A small spec, a PS holding every table and the dense net, and an empty PS; killed and
    their checkpoints are in the test's own folder."""
    spec = DLRMSpec(vocab=50, dim=4, bottom=(8,), top=(8,))
    job = f"{prefix}{uuid.uuid4().hex[:8]}"
    kw = dict(spec=spec, lr_sparse=0.05, lr_dense=0.01, storage=Storage(tmp_path), total_rows=100)
    full = ParameterServer.remote(f"{job}-ps-0", tables=list(range(spec.n_tables)), dense=True, **kw)
    empty = ParameterServer.remote(f"{job}-ps-1", tables=[], dense=False, **kw)
    try:
        yield spec, full, empty
    finally:
        for a in (full, empty):
            ray.kill(a)


def test_ps_handover_leaves_the_new_ps_writable_and_the_old_one_refusing(ray_cluster, tmp_path):
    # A replacement PS takes the old one's state through the object store (read-only arrays);
    # it must still apply updates, and the old PS must refuse any update that comes after the
    # export (it would be lost: the new owner already has its copy).
    with two_ps(tmp_path, "handover") as (spec, old, new):
        ray.get(new.import_all.remote(old.export_all.remote()))
        ids, g = np.array([1, 2]), np.ones((2, spec.dim), np.float32)
        before = ray.get(new.pull.remote({0: ids}))[0].copy()
        ray.get(new.push.remote({0: (ids, g)}))
        assert (ray.get(new.pull.remote({0: ids}))[0] < before).all()
        grads = {k: np.ones_like(v) for k, v in ray.get(new.pull_dense.remote()).items()}
        assert ray.get(new.push_dense.remote("worker-0.0", 1, 2, np.array([5, 6]), grads))
        assert ray.get(new.audit_counts.remote())[[5, 6]].tolist() == [1, 1]
        with pytest.raises(TableMoved):
            ray.get(old.push.remote({0: (ids, g)}))
        with pytest.raises(TableMoved):
            ray.get(old.push_dense.remote("worker-0.0", 1, 4, np.array([7, 8]), grads))
        assert ray.get(old.audit_counts.remote())[[7, 8]].tolist() == [0, 0]
        # Moving a single table seals only that table; pulling a table the PS dropped says so.
        ray.get(new.export_tables.remote([1]))
        w0 = ray.get(new.pull.remote({0: ids}))[0].copy()
        with pytest.raises(TableMoved):
            ray.get(new.push.remote({0: (ids, g), 1: (ids, g)}))
        assert (ray.get(new.pull.remote({0: ids}))[0] == w0).all()  # all or nothing
        ray.get(new.push.remote({0: (ids, g)}))
        ray.get(new.drop_tables.remote([1]))
        with pytest.raises(TableMoved):
            ray.get(new.pull.remote({1: ids}))


def test_a_sparse_push_whose_batch_never_commits_is_taken_back(ray_cluster, tmp_path):
    # A worker killed between its sparse push and its dense push (the commit): its rows go back
    # to the queue and are trained again, so its embedding update must not stay applied. The
    # rollback follows a table that moved to another PS in between.
    with two_ps(tmp_path, "rollback") as (spec, ps0, ps1):
        ids, g = np.array([1, 2]), np.ones((2, spec.dim), np.float32)
        w0 = {t: ray.get(ps0.pull.remote({t: ids}))[t].copy() for t in (0, 1)}
        dense = {k: np.zeros_like(v) for k, v in ray.get(ps0.pull_dense.remote()).items()}
        # worker a: batch (lease 7, rows up to 64) committed, then its next batch pushed, not
        ray.get(ps0.push.remote({0: (ids, g), 1: (ids, g)}, ("a", 7, 64)))
        assert ray.get(ps0.push_dense.remote("a", 7, 64, np.array([3]), dense))
        w1 = {t: ray.get(ps0.pull.remote({t: ids}))[t].copy() for t in (0, 1)}
        ray.get(ps0.push.remote({0: (ids, 2 * g), 1: (ids, 2 * g)}, ("a", 7, 128)))
        # worker b's committed update in between stays
        ray.get(ps0.push.remote({0: (np.array([5]), g[:1])}, ("b", 9, 32)))
        assert ray.get(ps0.push_dense.remote("b", 9, 32, np.array([4]), dense))
        w5 = ray.get(ps0.pull.remote({0: np.array([5])}))[0].copy()
        # table 1 moves to ps1 with its last pushes
        ray.get(ps1.import_tables.remote(ps0.export_tables.remote([1])))
        committed = ray.get(ps0.fence.remote("a"))
        assert committed == {7: 64}
        undone = ray.get([ps.rollback.remote("a", committed) for ps in (ps0, ps1)])
        assert sum(undone) == 2  # table 0 on ps0, table 1 on ps1
        np.testing.assert_allclose(ray.get(ps0.pull.remote({0: ids}))[0], w1[0], atol=1e-6)
        np.testing.assert_allclose(ray.get(ps1.pull.remote({1: ids}))[1], w1[1], atol=1e-6)
        assert not np.allclose(w1[0], w0[0])  # the committed batch's update is still there
        assert (ray.get(ps0.pull.remote({0: np.array([5])}))[0] == w5).all()
        # b's last push committed: nothing to take back
        assert ray.get(ps0.rollback.remote("b", ray.get(ps0.fence.remote("b")))) == 0


@pytest.mark.slow
def test_a_3x_slow_worker_is_detected_and_drained(ray_cluster, data_dir):
    # a sleeping straggler frees CPU for the others, so on a loaded 2-core machine a 3x-slow
    # worker measures only ~2x slower: judge it at 1/1.5 of the median, and give it the rows
    cfg = make_cfg(data_dir, "slow", rows=36_000,
                   faults={"slow_workers": {"worker-0": 3.0}, "straggler_min_rows": 2000,
                           "straggler_factor": 1.5})
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


def test_an_error_from_the_capacity_request_stops_the_job_and_leaves_nothing(ray_cluster, tmp_path, monkeypatch):
    import ray.autoscaler.sdk

    def refuse(**kw):
        raise RuntimeError("autoscaler refused the request")

    monkeypatch.setattr(ray.autoscaler.sdk, "request_resources", refuse)
    with pytest.raises(RuntimeError, match="autoscaler refused the request"):
        ctl = ElasticController(make_cfg(tmp_path, "refused"))
        try:
            ctl.run()
        finally:
            monkeypatch.undo()  # the shutdown's own request (clearing the floor) may go through
            ctl.shutdown()
    assert not [pg for pg in ray.util.placement_group_table().values()
                if pg["name"].startswith("refused-") and pg["state"] != "REMOVED"]
    assert not [a for a in ray.util.list_named_actors() if a.startswith("refused-")]
