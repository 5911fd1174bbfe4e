"""Each part step run from a planned workflow on tiny sizes, end to end on the shared cluster:
pretrain -> fine-tune (the checkpoint is the base) -> serve; elastic DLRM -> evaluate (reads
the saved model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raystack.workflow.context import new_context
from raystack.workflow.nl.rules import RulePlanner

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _run(text: str, tmp_path: Path):
    from raystack.actors.workflow.runner import run_workflow
    plan = RulePlanner().plan(text)
    ctx = new_context(plan.ir.name, scratch_root=str(tmp_path / "scratch"), out_dir=str(tmp_path / "out"),
                      tiny=True)
    rep = run_workflow(plan.ir, store=None, progress=False, context=ctx)
    assert rep.status == "succeeded", rep.failed
    out = {d.entry: rep.output(plan.ids[d.label][0]) for d in plan.draft.steps if not d.implicit}
    return plan, out


def test_pretrain_then_finetune_on_the_checkpoint_then_serve(ray_cluster, tmp_path):
    plan, out = _run("Pretrain a language model with EDiT for 4 steps on 2 workers, then fine-tune "
                     "1 LoRA adapter on the copy task from that checkpoint and serve it.", tmp_path)
    ckpt = out["edit_pretrain"]
    assert ckpt.kind == "edit_checkpoint" and (Path(ckpt.path) / "config.json").is_file()
    adapters = out["mlora_finetune"]
    assert adapters.kind == "adapter_set" and adapters.info["base"] == ckpt.path
    cfg = json.loads((Path(adapters.files["copy_lora"]) / "adapter_config.json").read_text())
    assert cfg["base_model_name_or_path"] == ckpt.path      # the adapter records its real base
    from raystack.workflow.steps import load_adapters       # a later workflow loads the set by its path
    again = load_adapters(adapters.path)
    assert {n: Path(p).resolve() for n, p in again.files.items()} == \
        {n: Path(p).resolve() for n, p in adapters.files.items()}
    assert again.info["config"] == adapters.info["config"] and again.info["base"] == ckpt.path
    served = out["serve_adapters"]
    assert served.info["adapters"] == ["copy_lora"] and "copy_lora" in served.info["answers"]
    assert served.info["deleted"]                           # a tiny (dry) run leaves no app up


def test_elastic_dlrm_then_evaluate_reads_the_saved_model(ray_cluster, tmp_path):
    plan, out = _run("Train an elastic DLRM recommendation model for 1 epoch with at most 2 workers, "
                     "then evaluate it.", tmp_path)
    model = out["elastic_dlrm"]
    assert model.kind == "dlrm_model" and Path(model.path).is_file() and Path(model.files["tables"]).is_file()
    assert model.metrics["lost"] == 0 and model.metrics["duplicated"] == 0
    ev = out["evaluate_dlrm"]
    assert ev["auc"] == pytest.approx(model.metrics["auc"], abs=1e-6)   # same model, same held-out rows
