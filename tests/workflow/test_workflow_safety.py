"""Side effects confined and explicit; nothing from a file executes unless allowed."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

from raystack.workflow import ArtifactStore, Workflow, WorkflowError, WorkflowIR, run_local
from raystack.workflow import steps as S
from raystack.workflow.api import validate
from raystack.workflow.context import ConfinementError, deletable, new_context
from raystack.workflow.formats import UnsafeArtifact, UnstorableOutput
from raystack.workflow.ir import StepSpec


def test_ir_naming_an_arbitrary_function_is_refused(tmp_path):
    marker = tmp_path / "ran"
    ir = WorkflowIR("evil", [StepSpec("x", "os:system", {"command": f"touch {marker}"})])
    for run in (lambda: validate(ir), lambda: run_local(ir)):
        with pytest.raises(WorkflowError, match="not in the step catalog"):
            run()
    ir2 = WorkflowIR("evil2", [StepSpec("x", "raystack.workflow.steps:_xy", {})])
    with pytest.raises(WorkflowError, match="private names"):
        validate(ir2)
    ir3 = WorkflowIR("evil3", [StepSpec("x", "raystack.workflow.steps:notify",
                                        {"message": "x", "run_context": {"scratch_dir": "/"}})])
    with pytest.raises(WorkflowError, match="set by the runner"):
        validate(ir3)
    assert not marker.exists()


class _Opaque:
    def __init__(self, v):
        self.v = v


def _opaque(n: int) -> _Opaque:
    return _Opaque(n)


def test_pickled_artifact_in_the_store_is_refused_by_default(tmp_path):
    store = ArtifactStore(str(tmp_path / "s"))
    wf = Workflow("p")
    wf.step(S.make_dataset, id="d", rows=20)
    ir = wf.build()
    run_local(ir, store=store)
    key = store.entries()[0].key
    # someone with write access swaps in a pickle (code that runs when read)
    meta_path = Path(store._dir(key)) / "meta.json"
    meta = json.loads(meta_path.read_text())
    payload = pickle.dumps({"rows": 1})
    (Path(store._dir(key)) / "data").write_bytes(payload)
    from raystack.workflow.formats import digest_bytes
    meta.update(format="pickle", digest=digest_bytes(payload), size=len(payload))
    meta_path.write_text(json.dumps(meta))
    fresh = ArtifactStore(str(tmp_path / "s"))
    with pytest.raises(UnsafeArtifact, match="pickled"):
        fresh.get(key)
    rep = run_local(ir, store=fresh)                 # refused, recomputed, stored as Parquet
    assert rep.executed == ["d"] and fresh.meta(key).format == "parquet"


def test_outputs_that_fit_no_data_format_are_not_cached_unless_pickle_is_opted_in(tmp_path):
    wf = Workflow("opaque")
    wf.step(_opaque, id="o", n=3, args={})
    ir = wf.build()
    store = ArtifactStore(str(tmp_path / "s"))
    with pytest.raises(UnstorableOutput):
        store.put("k" * 64, "o", _Opaque(1))
    assert run_local(ir, store=store).executed == ["o"]
    assert run_local(ir, store=store).executed == ["o"]       # not cached: runs again
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    opted = ArtifactStore(str(private), allow_pickle=True)
    run_local(ir, store=opted)
    assert run_local(ir, store=opted).cached == ["o"]
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(ValueError, match="no group or other user can write"):
        ArtifactStore(str(shared), allow_pickle=True)


def test_side_effect_steps_are_never_served_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = ArtifactStore(str(tmp_path / "s"))
    wf = Workflow("deploy")
    d = wf.step(S.make_dataset, id="d", rows=60)
    sp = wf.step(S.split_data, id="sp", data=d)
    m = wf.step(S.train_model, id="m", data=sp, model="centroid")
    wf.step(S.deploy_model, id="deploy", model=m, name="prod")
    ir = wf.build()
    assert ir.by_id()["deploy"].side_effect
    run_local(ir, store=store)
    (tmp_path / "deployed" / "prod.json").unlink()           # the deployed model disappears
    rep = run_local(ir, store=store)
    assert rep.executed == ["deploy"] and sorted(rep.cached) == ["d", "m", "sp"]
    assert (tmp_path / "deployed" / "prod.json").exists()    # the effect was redone
    # an IR file cannot switch the mark off
    raw = ir.to_dict()
    raw["steps"][-1]["side_effect"] = False
    again = WorkflowIR.from_dict(raw)
    validate(again)
    assert again.by_id()["deploy"].side_effect


def test_cleanup_deletes_only_inside_the_run_scratch_space_or_configured_paths(tmp_path):
    ctx = new_context("c", scratch_root=str(tmp_path / "scratch"))
    (Path(ctx.scratch_dir) / "tmp").mkdir()
    assert "removed" in S.cleanup("tmp", run_context=ctx)
    keep = tmp_path / "precious"
    keep.mkdir()
    for bad in (str(keep), "../precious", "/", str(Path.home())):
        with pytest.raises(ConfinementError, match="confined"):
            S.cleanup(bad, run_context=ctx)
    os.symlink(keep, Path(ctx.scratch_dir) / "link")
    with pytest.raises(ConfinementError):
        deletable("link", ctx)                               # a link cannot lead outside
    assert keep.exists()
    allowed = tmp_path / "allowed" / "work"
    allowed.mkdir(parents=True)
    ctx2 = new_context("c", scratch_root=str(tmp_path / "scratch"), delete_paths=[str(tmp_path / "allowed")])
    assert "removed" in S.cleanup(str(allowed), run_context=ctx2)
    with pytest.raises(PermissionError, match="inside a workflow run"):
        S.cleanup("tmp")
    with pytest.raises(ConfinementError, match="too broad"):
        new_context("c", delete_paths=["/"])
