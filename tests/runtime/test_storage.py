"""Storage locations and run folders: absolute on the driver, one folder per run, atomic writes."""
from __future__ import annotations

import os
import pickle

import pytest

from raystack.runtime.storage import LATEST, Storage, StorageError, open_run


def test_a_relative_location_is_made_absolute_on_the_driver_and_pickles_as_its_uri(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Storage("runs/edit")
    assert s.uri == str(tmp_path / "runs" / "edit") and s.is_local
    monkeypatch.chdir("/")  # an actor elsewhere: the path does not move with its cwd
    again = pickle.loads(pickle.dumps(s))
    assert again == s and again.path("x") == str(tmp_path / "runs" / "edit" / "x")
    assert Storage(f"file://{tmp_path}").path("a") == str(tmp_path / "a")


def test_writes_are_atomic_and_folders_are_published_whole(tmp_path):
    s = Storage(tmp_path)
    s.write_json({"a": 1}, "d", "x.json")
    assert s.read_json("d", "x.json") == {"a": 1} and s.listdir("d") == ["x.json"]  # no temporary left
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "f.bin").write_bytes(b"one")
    s.upload(src, "out")
    (src / "sub" / "f.bin").write_bytes(b"two")
    s.upload(src, "out")  # replaces the folder whole
    assert s.read_bytes("out", "sub", "f.bin") == b"two"
    assert [n for n in s.listdir() if n.startswith("out")] == ["out"]


def test_a_fresh_run_never_touches_an_earlier_run_and_resuming_names_the_run(tmp_path):
    first = open_run(tmp_path, "edit")
    first.storage.write_bytes(b"weights", "checkpoint", "rank0.pt")
    first.write_summary("finished", metrics={"val_loss": 2.0})
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != LATEST}
    second = open_run(tmp_path, "edit")
    assert second.run_id != first.run_id and not second.storage.exists("checkpoint")
    assert {p: p.read_bytes() for p in before} == before
    assert Storage(tmp_path).read_text(LATEST) == second.run_id
    with pytest.raises(StorageError, match="run_id: name the run to resume"):
        open_run(tmp_path, "edit", resume=True)
    with pytest.raises(StorageError, match="already exists"):
        open_run(tmp_path, "edit", run_id=first.run_id)
    with pytest.raises(StorageError, match="no run 'nope'"):
        open_run(tmp_path, "edit", run_id="nope", resume=True)
    back = open_run(tmp_path, "edit", run_id=first.run_id, resume=True)
    assert back.resumed and back.summary()["status"] == "finished"
    assert open_run(tmp_path, "edit", run_id="latest", resume=True).run_id == first.run_id
    with pytest.raises(StorageError, match="run_id: expected letters"):
        open_run(tmp_path, "edit", run_id="../escape")


def test_an_empty_location_is_refused_naming_the_field():
    with pytest.raises(StorageError, match="^run.out_dir: expected a directory"):
        Storage(" ", field="run.out_dir")
    assert os.path.isabs(Storage(".").uri)
