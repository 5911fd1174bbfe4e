"""The demo workflow, written with raystack's own workflow API.

    LLM branch:   EDiT pretrain -> Tune (adapter lr) -> mLoRA fine-tune -> evaluate (map) -> Serve
    DLRM branch:  elastic DLRM on Criteo-like data, one worker killed -> AUC

The two branches share no edge, so the runner runs them at the same time.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from raystack.config import ConfigError
from raystack.workflow.api import Workflow

from raystack.apps.demo import steps


@dataclass
class DemoConfig:
    out_dir: str = "runs/demo"
    edit_steps: int = 160
    tasks: list[str] = field(default_factory=lambda: ["copy", "arithmetic", "reverse"])
    mlora_steps: int = 200
    tune_lrs: list[float] = field(default_factory=lambda: [3e-3, 1e-2, 3e-2])
    tune_steps: int = 25
    elastic_rows: int = 60_000
    kill_worker: bool = True

    def validate(self) -> None:
        unknown = [t for t in self.tasks if t not in steps.SYNTHETIC_TASKS]
        if unknown:
            raise ConfigError("tasks", f"unknown task {unknown[0]!r}; expected some of {list(steps.SYNTHETIC_TASKS)}")
        if not 1 <= len(self.tasks) <= 4:
            raise ConfigError("tasks", f"give 1 to 4 tasks, got {len(self.tasks)}")
        for name in ("edit_steps", "mlora_steps", "tune_steps", "elastic_rows"):
            if getattr(self, name) < 1:
                raise ConfigError(name, f"must be >= 1, got {getattr(self, name)}")


# Step tasks only orchestrate: the actors they start hold the CPUs.
LIGHT = {"num_cpus": 0.05}


def build(cfg: DemoConfig) -> Workflow:
    # Absolute paths: steps run in Ray workers and Tune trials, whose working directories differ.
    cfg = dataclasses.replace(cfg, out_dir=str(Path(cfg.out_dir).resolve()))
    wf = Workflow("raystack-demo", "every raystack part in one workflow")
    edit = wf.step(steps.pretrain_edit, id="edit_pretrain", out_dir=cfg.out_dir, steps=cfg.edit_steps,
                   resources=LIGHT)
    tuned = wf.step(steps.tune_adapter_lr, id="tune_adapter_lr", base_dir=edit["model_dir"], task=cfg.tasks[0],
                    lrs=list(cfg.tune_lrs), steps=cfg.tune_steps, resources=LIGHT)
    mlora = wf.step(steps.finetune_mlora, id="mlora_finetune", base_dir=edit["model_dir"], out_dir=cfg.out_dir,
                    tasks=list(cfg.tasks), steps=cfg.mlora_steps, tuned=tuned, resources=LIGHT)
    wf.map(steps.evaluate_adapter, items=list(cfg.tasks), over="task", id="evaluate_adapter", mlora=mlora,
           resources={"num_cpus": 0.5})
    wf.step(steps.serve_adapters, id="serve_adapters", mlora=mlora, resources=LIGHT)
    wf.step(steps.train_elastic, id="elastic_dlrm", out_dir=cfg.out_dir, rows=cfg.elastic_rows,
            kill_worker=cfg.kill_worker, resources=LIGHT)
    return wf
