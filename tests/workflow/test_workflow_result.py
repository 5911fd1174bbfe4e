"""Workflow.run() returns the runtime's Result: counts and seconds, one history row per step,
the store and the files steps wrote; a re-run is served from the cache and says so."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from raystack.runtime.result import Result
from raystack.workflow import Workflow
from raystack.workflow import steps as S


def _workflow() -> Workflow:
    wf = Workflow("result-demo")
    data = wf.step(S.make_dataset, id="data", rows=60)
    split = wf.step(S.split_data, id="split", data=data)
    model = wf.step(S.train_model, id="train", data=split, model="centroid")
    wf.step(S.write_table, id="write", data=data, path="rows.parquet")
    wf.step(S.evaluate_model, id="eval", model=model, data=split)
    wf.on_exit(S.notify, id="bye", kind="always", message="done")
    return wf


def _config(tmp_path: Path) -> dict:
    return {"store": str(tmp_path / "store"), "scratch": str(tmp_path / "scratch"),
            "out_dir": str(tmp_path / "out"), "progress": False}


def test_run_returns_the_runtime_result_and_a_rerun_is_cached(tmp_path):
    res = _workflow().run(_config(tmp_path), local=True)
    assert isinstance(res, Result) and res.part == "workflow"
    assert res.metrics["executed"] == 5 and res.metrics["failed"] == 0 and res.metrics["succeeded"] == 1.0
    assert res.metrics["steps"] == 6 and res.metrics["seconds"] > 0
    rows = {r["step"]: r for r in res.history.to_pylist()}
    assert set(rows) == {"data", "split", "train", "write", "eval", "bye"}
    assert rows["bye"]["exit"] == "always" and rows["eval"]["status"] == "done"
    assert res.artifacts["store"] == str(tmp_path / "store")
    written = Path(res.artifacts["write"])
    assert written.is_file() and pq.read_table(written).num_rows == 60
    assert res.config["workflow"] == "result-demo" and res.config["store"] == str(tmp_path / "store")
    again = _workflow().run(_config(tmp_path), local=True)
    # the side-effect step (write_table) always runs; everything else comes from the store
    assert again.metrics["cached"] == 4 and again.metrics["executed"] == 1
    assert {r["step"]: r["status"] for r in again.to_pandas().to_dict("records")}["train"] == "cached"


@pytest.mark.cluster
def test_run_on_ray_returns_the_same_result(ray_cluster, tmp_path):
    res = _workflow().run(_config(tmp_path))
    assert res.part == "workflow" and res.metrics["executed"] == 5 and res.metrics["failed"] == 0
    assert Path(res.artifacts["write"]).is_file() and len(res.history) == 6
