"""The one place workflow steps call the parts' drivers (EDiT, mLoRA, elastic DLRM).

Each function takes the part's validated config and returns a :class:`PartOutcome` (where the
outputs are, and the run's figures), so the catalog steps do not depend on each driver's own
result type. EDiT and mLoRA run through their entry functions (``raystack.edit.pretrain``,
``raystack.mlora.finetune``, returning ``raystack.runtime.result.Result``); elastic through
its controller, whose model state this module saves as files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from raystack.config import config_to_dict
from raystack.edit.config import EDiTConfig
from raystack.elastic.config import ElasticConfig
from raystack.mlora.config import MLoRAConfig

DLRM_DENSE = "dense.safetensors"
DLRM_TABLES = "tables.safetensors"
DLRM_SPEC = "spec.json"


@dataclass(frozen=True)
class PartOutcome:
    """What a part run left behind: its main output path, named files, figures and details."""

    path: str
    files: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


def pretrain(cfg: EDiTConfig) -> PartOutcome:
    """EDiT / A-EDiT pretraining; the checkpoint is a transformers model directory."""
    import raystack.edit
    r = raystack.edit.pretrain(cfg, progress=False)
    m = r.metrics
    return PartOutcome(r.checkpoint, metrics={
        "val_loss": m["val_loss"], "train_loss": m["train_loss"], "loss": m["val_loss"],
        "tokens_per_s": m["tokens_per_s"], "steps": m["steps"], "tokens": m["tokens"],
        "seconds": m["seconds"], "sync_seconds": m["sync_seconds"]},
        info={"model": cfg.model, "mode": cfg.mode, "ranks": cfg.ranks})


def finetune(cfg: MLoRAConfig) -> PartOutcome:
    """mLoRA: every task's adapter through the pipeline, exported in peft's layout."""
    import raystack.mlora
    r = raystack.mlora.finetune(cfg, progress=False)
    adapters = {k.split(".", 1)[1]: v for k, v in r.artifacts.items() if k.startswith("adapter.")}
    losses = json.loads(Path(r.artifacts["losses"]).read_text())
    finals = [v[-1] for v in losses.values() if v]
    m = r.metrics
    return PartOutcome(r.checkpoint, files=adapters, metrics={
        "loss": float(np.mean(finals)) if finals else float("nan"),
        "tokens_per_s": m["tokens_per_s"], "seconds": m["seconds"], "restarts": m["restarts"]},
        info={"base": cfg.base, "adapters": sorted(adapters),
              "losses": {k: list(v) for k, v in losses.items()},
              "config": config_to_dict(cfg)})


def train_dlrm(cfg: ElasticConfig, out_dir: str) -> PartOutcome:
    """Elastic DLRM training; the model's dense and embedding weights are saved as safetensors
    (with the spec and the held-out file) so that later steps read the model from files."""
    from safetensors.numpy import save_file

    from raystack.actors.elastic.controller import ElasticController, spec_of
    ctl = ElasticController(cfg)
    try:
        r = ctl.run()
        dense, tables = ctl.backend.model_state()
    finally:
        ctl.shutdown()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: np.ascontiguousarray(np.asarray(v)) for k, v in dense.items()}, str(out / DLRM_DENSE))
    save_file({f"t{i}": np.ascontiguousarray(t) for i, t in tables.items()}, str(out / DLRM_TABLES))
    spec = spec_of(cfg)
    (out / DLRM_SPEC).write_text(json.dumps({"vocab": spec.vocab, "dim": spec.dim,
                                             "bottom": list(spec.bottom), "top": list(spec.top),
                                             "eval_file": ctl.eval_file,
                                             "eval_rows": cfg.data.eval_rows}))
    return PartOutcome(str(out / DLRM_DENSE), files={"tables": str(out / DLRM_TABLES),
                                                    "spec": str(out / DLRM_SPEC),
                                                    "eval_file": ctl.eval_file},
                       metrics={"auc": r.auc, "rows": r.rows, "samples_per_s": r.samples_per_s,
                                "lost": r.lost, "duplicated": r.duplicated, "seconds": r.seconds},
                       info={"final_config": r.final_config})
