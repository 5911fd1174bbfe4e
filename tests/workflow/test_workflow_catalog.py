"""The step catalog: typed parameters, canonical kinds, and the part steps generated from the
parts' own config dataclasses (every field a parameter, checked when the workflow is built)."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from raystack.edit.config import EDiTConfig
from raystack.elastic.config import ElasticConfig
from raystack.mlora.config import MLoRAConfig
from raystack.workflow import Workflow, WorkflowError
from raystack.workflow.catalog import CATALOG, describe
from raystack.workflow.nl.gold import CANONICAL_KINDS


def test_every_catalog_step_has_typed_params_a_kind_and_a_description():
    rows = {r["name"]: r for r in describe()}
    assert set(rows) == set(CATALOG)
    assert rows["split_data"]["params"]["test_fraction"] == {"type": "float", "default": 0.2}
    assert rows["train_model"]["inputs"] == {"data": "split"}
    # unions, choices and item types are spelled out (the LLM planner is shown this listing)
    assert rows["aggregate"]["params"]["by"]["type"] == "str | list[str] | None"
    assert rows["aggregate"]["params"]["agg"]["type"] == "'sum' | 'mean' | 'median' | 'count' | 'min' | 'max'"
    assert all(r["description"] and r["kind"] in CANONICAL_KINDS for r in rows.values())
    # every canonical kind but the tune construct has a catalog step
    assert set(CANONICAL_KINDS) - {r["kind"] for r in rows.values()} == {"tune"}
    assert {n for n, r in rows.items() if r["side_effect"]} >= {"deploy_model", "notify", "cleanup",
                                                                 "serve_adapters", "save_report"}


@pytest.mark.parametrize("step,cls", [("edit_pretrain", EDiTConfig), ("mlora_finetune", MLoRAConfig),
                                      ("elastic_dlrm", ElasticConfig)])
def test_part_steps_take_every_config_field(step, cls):
    fn = CATALOG[step].function()
    params = inspect.signature(fn).parameters
    fields = [f.name for f in dataclasses.fields(cls)]
    assert set(fields) <= set(params), set(fields) - set(params)
    for f in fields:  # documented in the step's docstring (with its default, or as an input)
        assert f"  {f} (" in fn.__doc__ or f"  {f}: " in fn.__doc__


def test_wrong_part_fields_fail_when_the_workflow_is_built():
    from raystack.actors.workflow import parts as P
    wf = Workflow("bad-edit")
    wf.step(P.edit_pretrain, id="pre", workers=4)           # EDiT has ranks, not workers
    with pytest.raises(WorkflowError, match="unknown parameter 'workers'"):
        wf.build()
    wf = Workflow("bad-edit2")
    wf.step(P.edit_pretrain, id="pre", ranks=4, shards=3)
    with pytest.raises(WorkflowError, match=r"edit_pretrain\.shards: must divide ranks=4"):
        wf.build()
    wf = Workflow("bad-mlora")
    wf.step(P.mlora_finetune, id="ft", adapters=2)           # a list of adapter configs
    with pytest.raises(WorkflowError, match="'adapters' = 2"):
        wf.build()
    wf = Workflow("bad-elastic")
    wf.step(P.elastic_dlrm, id="d", args={"resources": {"max_workers": 0}})
    with pytest.raises(WorkflowError, match="max_workers"):
        wf.build()
    wf = Workflow("ok")
    ck = wf.step(P.edit_pretrain, id="pre", ranks=2, steps=10, sync={"h": 4})
    wf.step(P.mlora_finetune, id="ft", base=ck, steps=5)
    assert [s.id for s in wf.build().steps] == ["pre", "ft"]


def test_knn_scores_are_the_nearest_neighbours_mean_in_bounded_blocks():
    import numpy as np

    from raystack.workflow import steps as S
    rng = np.random.default_rng(3)
    kept, ys = rng.normal(size=(50, 3)), (rng.random(50) > 0.5).astype(float)
    rows = rng.normal(size=(2 * S.KNN_CHUNK + 7, 3))     # three blocks, the last one short
    d = ((rows[:, None, :] - kept[None]) ** 2).sum(-1)   # brute force: every pair at once
    want = ys[np.argsort(d, axis=1)[:, :5]].mean(axis=1)
    model = {"kind": "knn", "x": kept.tolist(), "y": ys.tolist(), "k": 5}
    assert np.allclose(S._scores(model, rows), want)
    # k above the rows kept: every kept row is a neighbour
    assert np.allclose(S._scores({**model, "k": 80}, rows[:4]), ys.mean())
