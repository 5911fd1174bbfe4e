"""Preflight: bad files, checkpoints and infeasible jobs are refused before Ray or any actor
starts, in one line naming the field and the file, with exit code 2 at every entry point."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import raystack.cluster
from raystack.config import load_config
from raystack.preflight import ClusterResources, PreflightError, check_model_dir, preflight

GB = 1e9
SMALL = ClusterResources(cpus=2, gpus=0, memory_bytes=8 * GB, node_cpus=2, node_gpus=0,
                         node_memory_bytes=8 * GB, where="a test cluster")


@pytest.fixture
def no_connect(monkeypatch):
    """Fail the test if anything tries to start or reach a Ray cluster."""
    def never(*args, **kwargs):
        raise AssertionError("connected to a cluster although the job should have been refused")
    monkeypatch.setattr(raystack.cluster, "connect", never)


def refused(argv, capsys, entry=None) -> str:
    """Run a command (or a job script's main), assert exit 2 and one stderr line; return it."""
    from raystack.apps.cli import main

    code = (entry or main)(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    return err


def _parquet(path: Path, columns: dict) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


@pytest.mark.parametrize("name, content, expected", [
    ("binary.jsonl", b'{"text": "a"}\n\x00\x01\x02\xff', "is binary, not JSON text"),
    ("prose.jsonl", b"just some words\n", "line 1 is not valid JSON"),
    ("empty.jsonl", b"", "is empty"),
    ("latin1.txt", "caf\u00e9".encode("latin-1") * 4, "is not UTF-8 text"),
    ("broken.parquet", b"PAR1 not really parquet PAR1", "is not a readable Parquet file"),
])
def test_edit_data_files_are_opened_before_ray(tmp_path, capsys, no_connect, name, content, expected):
    path = tmp_path / name
    path.write_bytes(content)
    err = refused(["edit", "--set", f"data.paths=[{path}]"], capsys)
    assert err.startswith("raystack edit: error: data.paths[0]: ") and str(path) in err and expected in err


def test_edit_parquet_empty_or_without_the_text_column(tmp_path, capsys, no_connect):
    empty = _parquet(tmp_path / "empty.parquet", {"text": pa.array([], pa.string())})
    assert "is an empty Parquet file (0 rows)" in refused(["edit", "--set", f"data.paths=[{empty}]"], capsys)
    other = _parquet(tmp_path / "other.parquet", {"body": ["a" * 100]})
    err = refused(["edit", "--set", f"data.paths=[{other}]"], capsys)
    assert "data.text_field" in err and "has no field 'text'" in err and "body" in err


def test_every_entry_point_refuses_the_same_way(tmp_path, capsys, no_connect):
    """The job script and the Python entry function refuse what the CLI refuses."""
    import ray

    import raystack.edit
    from raystack.apps.jobs.edit import main as job_main
    from raystack.edit.config import EDiTConfig

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\x00\x00")
    err = refused(["--set", f"data.paths=[{bad}]"], capsys, entry=job_main)
    assert err.startswith("raystack.apps.jobs.edit: error: data.paths[0]:")
    groups = dict(ray.util.placement_group_table()) if ray.is_initialized() else {}
    with pytest.raises(PreflightError, match="is binary"):
        raystack.edit.pretrain(EDiTConfig(data={"paths": [str(bad)]}))
    if ray.is_initialized():  # a session cluster of other tests: nothing was reserved on it
        assert dict(ray.util.placement_group_table()) == groups


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    """A tiny Llama saved with save_pretrained, as a user's checkpoint directory is."""
    from raystack.models import build_model

    path = tmp_path_factory.mktemp("ckpt") / "tiny"
    build_model("tiny-1m").save_pretrained(path)
    return path


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_a_checkpoints_safetensors_header_is_checked_against_its_size(checkpoint, tmp_path, capsys, no_connect):
    from raystack.models import build_model, count_parameters

    info = check_model_dir(checkpoint, "model")
    assert info.parameters == count_parameters(build_model("tiny-1m"))
    truncated = _copy(checkpoint, tmp_path / "truncated")
    weights = truncated / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1000])
    err = refused(["edit", "--set", f"model={truncated}"], capsys)
    assert "model:" in err and str(weights) in err and "truncated" in err
    garbled = _copy(checkpoint, tmp_path / "garbled")
    raw = bytearray((garbled / "model.safetensors").read_bytes())
    raw[8:16] = b"\xff" * 8   # the JSON header's first bytes
    (garbled / "model.safetensors").write_bytes(bytes(raw))
    with pytest.raises(PreflightError, match="header is not JSON"):
        check_model_dir(garbled, "base")
    (garbled / "model.safetensors").unlink()
    with pytest.raises(PreflightError, match="has a config.json but no weights"):
        check_model_dir(garbled, "base")


def test_resuming_from_a_damaged_or_mismatched_edit_checkpoint_is_refused(checkpoint, tmp_path):
    import torch

    from raystack.edit.config import EDiTConfig

    ckpt = tmp_path / "run" / "checkpoint"
    _copy(checkpoint, ckpt / "model")
    (ckpt / "driver.json").write_text(json.dumps({"segments": 1, "history": [], "config": {"ranks": 2, "shards": 1}}))
    for rank in range(2):
        torch.save({"step": 1}, ckpt / f"rank{rank}.pt")
    cfg = EDiTConfig(run={"out_dir": str(tmp_path / "run"), "resume": True})
    preflight(cfg, SMALL)  # whole and matching: accepted
    with pytest.raises(PreflightError, match=r"run.resume: checkpoint in .* is for ranks=2, shards=1; this run has ranks=4"):
        preflight(EDiTConfig(ranks=4, run={"out_dir": str(tmp_path / "run"), "resume": True}),
                  ClusterResources(4, 0, 8 * GB, 4, 0, 8 * GB))
    (ckpt / "rank1.pt").write_bytes((ckpt / "rank1.pt").read_bytes()[:40])
    with pytest.raises(PreflightError, match=r"rank1.pt is corrupt or truncated"):
        preflight(cfg, SMALL)


def test_mlora_dataset_fields_are_checked_against_the_template(tmp_path, capsys, no_connect):
    data = tmp_path / "qa.jsonl"
    data.write_text(json.dumps({"question": "2+2?", "answer": "4"}) + "\n")
    cfg = tmp_path / "mlora.yaml"
    base = {"datasets": [{"name": "qa", "path": str(data), "prompt_template": "Q: {question} ({topic})\nA: ",
                          "response_field": "answer"}],
            "adapters": [{"name": "qa_lora"}], "tasks": [{"adapter": "qa_lora", "dataset": "qa"}]}
    cfg.write_text(json.dumps(base))
    err = refused(["mlora", "--config", str(cfg)], capsys)
    assert "datasets[0].prompt_template" in err and "no field 'topic'" in err and str(data) in err
    base["datasets"][0].update(prompt_template="Q: {question}\nA: ", response_field="reply")
    cfg.write_text(json.dumps(base))
    assert "datasets[0].response_field" in refused(["mlora", "--config", str(cfg)], capsys)


def test_elastic_parquet_data_is_checked_and_truncated_generated_data_is_rewritten(tmp_path, capsys, no_connect):
    from raystack.data.criteo import COLUMNS, generate, generated_is_current

    files = generate(tmp_path / "gen", rows=3000, files=2, vocab=50)
    assert generated_is_current(tmp_path / "gen", 3000, 2, 50, 1.1, 0)
    first = Path(files[0][0])
    first.write_bytes(first.read_bytes()[:-100])  # a truncated file beside an intact manifest
    assert not generated_is_current(tmp_path / "gen", 3000, 2, 50, 1.1, 0)
    again = generate(tmp_path / "gen", rows=3000, files=2, vocab=50)
    assert again == files and generated_is_current(tmp_path / "gen", 3000, 2, 50, 1.1, 0)
    assert pq.ParquetFile(first).metadata.num_rows == 1500
    user = tmp_path / "user"
    user.mkdir()
    _parquet(user / "a.parquet", {c: [1] for c in COLUMNS if c != "C7"})
    _parquet(user / "b.parquet", {c: [1] for c in COLUMNS})
    err = refused(["elastic", "--set", f"data.path={user}"], capsys)
    assert "data.path" in err and "a.parquet has no column 'C7'" in err
    (user / "a.parquet").unlink()
    assert "need >= 2" in refused(["elastic", "--set", f"data.path={user}"], capsys)


def test_jobs_that_cannot_fit_the_cluster_are_refused():
    from raystack.edit.config import EDiTConfig
    from raystack.elastic.config import ElasticConfig
    from raystack.mlora.config import MLoRAConfig

    cases = [
        (EDiTConfig(ranks=4), "ranks: 4 ranks x run.cpus_per_rank=1 reserve 4 CPUs in all; a test cluster has 2"),
        (EDiTConfig(run={"device": "cuda"}), "run.device: device: cuda, but the cluster has 0 GPUs (a test cluster)"),
        (EDiTConfig(model="tiny-20m", data={"batch_size": 4096, "seq_len": 1024, "max_bytes": 2**33}),
         "ranks: 2 ranks x run.cpus_per_rank=1 need about"),
        (MLoRAConfig(pipeline={"stages": 3}), "pipeline.stages: 3 pipeline stages reserve 3 CPUs"),
        (ElasticConfig(resources={"sim_nodes": 2}), "resources.sim_nodes: 2 simulated nodes need the custom "
                                                    "resource 'sim_node_0'"),
        (ElasticConfig(resources={"max_cpus": 100.0}), "resources.max_cpus: the budget"),
    ]
    for cfg, message in cases:
        with pytest.raises(PreflightError) as e:
            preflight(cfg, SMALL)
        assert message in str(e.value), str(e.value)
    assert preflight(EDiTConfig(), SMALL).actors == 2  # the defaults fit two CPUs
    with_nodes = ClusterResources(2, 0, 8 * GB, 2, 0, 8 * GB, custom={"sim_node_0": 100, "sim_node_1": 100})
    assert preflight(ElasticConfig(resources={"sim_nodes": 2}), with_nodes).actors == 3


def test_model_positions_bound_the_sequence_length():
    from raystack.edit.config import EDiTConfig

    with pytest.raises(PreflightError, match="data.seq_len: must be <= the model's 1024 positions, got 2048"):
        preflight(load_config(EDiTConfig, {"data": {"seq_len": 2048}}), None)
