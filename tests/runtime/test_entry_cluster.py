"""The entry API on the shared local Ray cluster: a part returns the one Result (history table,
TensorBoard events read back), and a Run used as a context manager removes every actor and
placement group of its job, detached ones included. The elastic Ray controller and the
trace simulator step the same ElasticLoop."""
from __future__ import annotations

import pyarrow as pa
import pytest
import ray

from raystack.runtime import ControllerState, Result
from tests.runtime.tb_events import read_scalars

pytestmark = pytest.mark.cluster


def test_pretrain_returns_the_result_with_its_history_and_tensorboard_events(ray_cluster, tmp_path):
    import raystack.edit

    res = raystack.edit.pretrain({
        "model": "tiny-1m", "ranks": 2, "steps": 8, "sync": {"h": 2, "warmup_steps": 2},
        "data": {"max_bytes": 200_000, "batch_size": 2, "seq_len": 32, "eval_batches": 1},
        "run": {"out_dir": str(tmp_path / "run"), "checkpoint_every": 0, "eval_every": 2,
                "segments_per_call": 4}}, progress=False)
    assert isinstance(res, Result) and res.part == "edit" and isinstance(res.history, pa.Table)
    assert res.metrics["steps"] == 8 and res.metrics["tokens"] == 2 * 8 * 2 * 32
    assert 0 < res.metrics["val_loss"] < 6 and res.config["run"]["out_dir"] == str(tmp_path / "run")
    hist = res.to_pandas()
    assert list(hist["step"]) == sorted(hist["step"]) and hist["step"].iloc[-1] == 8
    assert hist["val_loss"].notna().sum() >= 1            # evaluated every 2 segments
    assert res.checkpoint == res.artifacts["model"] and (tmp_path / "run" / "checkpoint" / "model").is_dir()
    tb = read_scalars(res.artifacts["tensorboard"])
    assert [s for s, _ in tb["train_loss"]] == list(hist["step"])  # every segment, also within a call
    assert [v for _, v in tb["train_loss"]] == pytest.approx(list(hist["loss"]))
    assert tb["final/val_loss"][0][1] == pytest.approx(res.metrics["val_loss"])


def test_an_elastic_run_cleans_up_its_detached_actors_and_groups_and_shares_the_loop_with_the_simulator(
        ray_cluster, tmp_path, monkeypatch):
    import raystack.elastic
    from raystack.elastic.control import ElasticLoop
    from raystack.elastic.simulate import ClusterSim, make_trace

    drivers = []
    step = ElasticLoop.step

    def spy(self):
        drivers.append(type(self.backend).__name__)
        return step(self)
    monkeypatch.setattr(ElasticLoop, "step", spy)

    name = "entryclean"
    cfg = {"name": name, "work_dir": str(tmp_path / "work"), "poll_s": 0.2,
           "data": {"generate_rows": 4000, "generate_files": 2, "out_dir": str(tmp_path / "data")},
           "resources": {"autoscale": False}}

    def job_groups():
        return {pg["name"]: pg["state"] for pg in ray.util.placement_group_table().values()
                if pg["name"].startswith(f"{name}-")}

    with raystack.elastic.train(cfg, wait=False, progress=False) as run:
        assert run.step() is ControllerState.RUNNING       # data, ShardService, the initial plan
        assert isinstance(run.driver.job.loop, ElasticLoop)
        groups = job_groups()
        assert len(groups) == 3 and set(groups.values()) == {"CREATED"}  # 2 workers and a PS, detached
        assert ray.get_actor(f"{name}-shards") is not None
    assert set(job_groups().values()) == {"REMOVED"}
    with pytest.raises(ValueError):
        ray.get_actor(f"{name}-shards")
    ClusterSim(make_trace(2, seed=1), "three_stage").run()
    assert {"RayBackend", "SimBackend"} <= set(drivers)
