"""Catalog steps that run the other raystack parts, generated from their config dataclasses.

``edit_pretrain`` takes every field of :class:`EDiTConfig`, ``mlora_finetune`` every field of
:class:`MLoRAConfig` (its ``base`` may be an upstream EDiT checkpoint), ``elastic_dlrm`` every
field of :class:`ElasticConfig`; a wrong field fails when the workflow is built. Each returns a
typed :class:`Artifact`: an EDiT checkpoint, a set of peft adapters, a DLRM model with its AUC.
``evaluate_adapters`` and ``evaluate_dlrm`` read those artifacts' files. Outputs go to the
step's own directory under the run's output directory unless the config names one. In a dry
run (``run_context.tiny``) each part runs at tiny sizes (``TINY``) so a plan is checked end to
end in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from raystack.actors.workflow import part_drivers as drivers
from raystack.config import config_to_dict, load_config
from raystack.edit.config import EDiTConfig
from raystack.elastic.config import ElasticConfig
from raystack.mlora.config import MLoRAConfig
from raystack.workflow.artifacts import (ADAPTER_SET, DLRM_MODEL, EDIT_CHECKPOINT, Artifact,
                                         ArtifactError, make_artifact)
from raystack.workflow.adapter_sets import write_index
from raystack.workflow.context import RunContext
from raystack.workflow.partsteps import config_from_params, make_part_step

_MODULE = __name__
TINY_EDIT = {"model": "tiny-1m", "steps": 4, "ranks": 2, "shards": 1,
             "sync": {"h": 2, "warmup_steps": 1},
             "data": {"max_bytes": 200_000, "batch_size": 4, "seq_len": 64, "eval_batches": 1},
             "run": {"eval_every": 1, "checkpoint_every": 0}}
TINY_MLORA_STEPS = 2
TINY_MLORA_EXAMPLES = 64
TINY_ELASTIC = {"epochs": 1, "data": {"generate_rows": 2000, "generate_files": 2,
                                      "rows_per_shard": 500, "eval_rows": 500},
                "resources": {"max_workers": 2, "initial_workers": 1, "autoscale": False}}


def _tiny(cfg_cls: type, cfg: Any, overrides: dict) -> Any:
    return config_from_params(cfg_cls, overrides, base=config_to_dict(cfg))


def _out(cfg_value: str, default: str, ctx: Optional[RunContext]) -> str:
    """The config's output directory if the user set one, else the step's own directory."""
    if cfg_value != default or ctx is None:
        return cfg_value
    return ctx.step_dir()


def _run_edit(cfg: EDiTConfig, inputs: dict, ctx: Optional[RunContext]) -> Artifact:
    if ctx is not None and ctx.tiny:
        tiny = dict(TINY_EDIT)
        if Path(cfg.model).is_dir():  # a checkpoint the user named stays the model
            tiny.pop("model")
        cfg = _tiny(EDiTConfig, cfg, tiny)
    cfg.run.out_dir = _out(cfg.run.out_dir, EDiTConfig().run.out_dir, ctx)
    o = drivers.pretrain(cfg)
    return make_artifact(EDIT_CHECKPOINT, o.path, metrics=o.metrics, info=o.info)


def _base_of(base: Any) -> str | None:
    if isinstance(base, Artifact):
        return base.expect(EDIT_CHECKPOINT, what="mlora_finetune.base").path
    return base


def _run_mlora(cfg: MLoRAConfig, inputs: dict, ctx: Optional[RunContext]) -> Artifact:
    base = _base_of(inputs.get("base"))
    d = config_to_dict(cfg)
    if base is not None:
        d["base"] = base
    if ctx is not None and ctx.tiny:
        d["steps"] = TINY_MLORA_STEPS
        for ds in d["datasets"]:
            ds["num_examples"] = min(ds["num_examples"], TINY_MLORA_EXAMPLES)
            ds["eval_examples"] = min(ds["eval_examples"], 8)
        d["pipeline"]["window_steps"] = 1
    d["output_dir"] = _out(cfg.output_dir, MLoRAConfig().output_dir, ctx)
    cfg = load_config(MLoRAConfig, d)
    o = drivers.finetune(cfg)
    if Path(o.path).is_dir():   # so that a later workflow can load the set by its path
        write_index(o.path, o.files, o.info)
    return make_artifact(ADAPTER_SET, o.path, files=o.files, metrics=o.metrics, info=o.info)


def _run_elastic(cfg: ElasticConfig, inputs: dict, ctx: Optional[RunContext]) -> Artifact:
    if ctx is not None and ctx.tiny:
        cfg = _tiny(ElasticConfig, cfg, TINY_ELASTIC)
    default = ElasticConfig()
    out = _out(cfg.work_dir, default.work_dir, ctx)
    cfg.work_dir = str(Path(out) / "work")
    if cfg.data.path is None and cfg.data.out_dir == default.data.out_dir:
        cfg.data.out_dir = str(Path(out) / "data")
    o = drivers.train_dlrm(cfg, str(Path(out) / "model"))
    return make_artifact(DLRM_MODEL, o.path, files=o.files, metrics=o.metrics, info=o.info)


edit_pretrain = make_part_step(
    "edit_pretrain", _MODULE, EDiTConfig, _run_edit,
    summary="Pretrain a language model with EDiT / A-EDiT local SGD (the edit part).",
    returns="an edit_checkpoint artifact (a transformers model directory) with val_loss, "
            "train_loss, tokens_per_s.")

mlora_finetune = make_part_step(
    "mlora_finetune", _MODULE, MLoRAConfig, _run_mlora,
    summary="Fine-tune LoRA/DoRA adapters on one shared base with mLoRA (the mlora part).",
    inputs={"base": (Optional[Union[str, Artifact]],
                     "the base model: a built-in name, a checkpoint directory, or an upstream "
                     "edit_checkpoint artifact")},
    returns="an adapter_set artifact (peft adapter directories) with the mean final loss.")

elastic_dlrm = make_part_step(
    "elastic_dlrm", _MODULE, ElasticConfig, _run_elastic,
    summary="Train a DLRM recommendation model elastically (the elastic part).",
    returns="a dlrm_model artifact (dense and embedding weights as safetensors) with its AUC.")


def evaluate_adapters(adapters: Artifact, max_examples: int = 64) -> dict:
    """Exact-match and token accuracy of each adapter on its task's held-out examples, before
    (the bare base) and after (the exported adapter); the means as ``token_accuracy`` and
    ``exact_match``."""
    from raystack.mlora.trainer import evaluate_adapters as evaluate
    adapters.expect(ADAPTER_SET, what="evaluate_adapters.adapters")
    cfg = load_config(MLoRAConfig, adapters.info["config"])
    per = evaluate(cfg, dict(adapters.files), max_examples=max_examples)
    out: dict[str, Any] = {"adapters": per}
    for key, name in (("token_after", "token_accuracy"), ("exact_after", "exact_match"),
                      ("token_before", "token_accuracy_before")):
        out[name] = float(np.mean([v[key] for v in per.values()])) if per else 0.0
    out["score"] = out["token_accuracy"]
    return out


def evaluate_dlrm(model: Artifact, rows: Optional[int] = None) -> dict:
    """AUC and log loss of a saved DLRM model on its held-out file (read from the files)."""
    import torch
    from safetensors.numpy import load_file

    from raystack.data.criteo import auc, list_files, read_rows
    from raystack.elastic.dlrm import DLRMDense, DLRMSpec, predict
    model.expect(DLRM_MODEL, what="evaluate_dlrm.model")
    spec_d = json.loads(Path(model.files["spec"]).read_text())
    spec = DLRMSpec(vocab=spec_d["vocab"], dim=spec_d["dim"], bottom=tuple(spec_d["bottom"]),
                    top=tuple(spec_d["top"]))
    net = DLRMDense(spec)
    net.load_state_dict({k: torch.from_numpy(v) for k, v in load_file(model.path).items()})
    tables = {int(k[1:]): v for k, v in load_file(model.files["tables"]).items()}
    eval_file = model.files["eval_file"]
    n = min(rows or spec_d["eval_rows"], list_files(eval_file)[0][1])
    if n < 1:
        raise ArtifactError(f"evaluate_dlrm: held-out file {eval_file} has no rows")
    b = read_rows(eval_file, 0, n, spec.vocab)
    p = np.clip(predict(net, b.dense, b.cat, tables), 1e-7, 1 - 1e-7)
    logloss = float(-(b.label * np.log(p) + (1 - b.label) * np.log(1 - p)).mean())
    return {"auc": auc(b.label, p), "logloss": logloss, "loss": logloss, "rows": int(n),
            "score": auc(b.label, p)}
