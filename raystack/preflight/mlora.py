"""Preflight of an mLoRA job: base checkpoint, dataset files and fields, sizes, cluster fit."""
from __future__ import annotations

import string
from pathlib import Path

from raystack.config import Problems, check_config
from raystack.mlora.config import MLoRAConfig
from raystack.preflight.files import PreflightError, read_first_records, require_fields
from raystack.preflight.llm import ModelShape, model_shape
from raystack.preflight.report import PreflightReport, check_fit, raise_problems
from raystack.preflight.resources import (PROCESS_OVERHEAD_BYTES, ClusterResources, adam_training_bytes,
                                          transformer_activation_bytes)

STAGE_CPUS = 1.0   # what each pipeline stage actor reserves (LoRAPipeline's default stage options)


def template_fields(template: str, field: str) -> list[str]:
    """The record fields a ``str.format`` prompt template uses (``{a}``, ``{a[0]}``, ``{a.b}``)."""
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise PreflightError(field, f"is not a valid template ({exc}): {template!r}") from None
    out = []
    for name in names:
        root = name.split(".")[0].split("[")[0]
        if not root or root.isdigit():
            raise PreflightError(field, f"placeholders must name record fields, got {{{name}}} in {template!r}")
        out.append(root)
    return out


def check_dataset_files(cfg: MLoRAConfig, problems: Problems) -> None:
    """Each file dataset opens, holds records, and has the fields its template and response use."""
    for i, d in enumerate(cfg.datasets):
        if d.path is None:
            continue
        where = f"datasets[{i}]"
        try:
            fields = template_fields(d.prompt_template, f"{where}.prompt_template")
            records = read_first_records(Path(d.path), f"{where}.path")
            require_fields(records, fields, Path(d.path), f"{where}.prompt_template")
            require_fields(records, [d.response_field], Path(d.path), f"{where}.response_field")
        except PreflightError as exc:
            problems.add_error(exc)


def adapter_parameters(cfg: MLoRAConfig, shape: ModelShape) -> int:
    """An upper-side count of every adapter's trainable parameters (A and B of each target;
    MLP and lm_head targets counted at their wide side)."""
    total = 0
    for a in cfg.adapters:
        for m in a.target_modules:
            wide = shape.vocab if m == "lm_head" else 4 * shape.hidden
            layers = 1 if m == "lm_head" else shape.layers
            total += a.r * (shape.hidden + wide) * layers + (wide * layers if a.type == "dora" else 0)
    return total


def preflight_mlora(cfg: MLoRAConfig, resources: ClusterResources | None = None,
                    stage_cpus: float = STAGE_CPUS) -> PreflightReport:
    """Check an mLoRA job before any actor starts (``stage_cpus``: what each stage actor
    reserves); raise `PreflightError` naming each problem."""
    from raystack.mlora.trainer import check_config as check_against_base

    check_config(cfg)
    problems = Problems()
    shape = model_shape(cfg.base, "base")
    check_against_base(cfg)  # target modules exist, enough units for the stages
    for i, t in enumerate(cfg.tasks):
        if shape.max_positions is not None and t.cutoff_len > shape.max_positions:
            problems.add(f"tasks[{i}].cutoff_len", f"must be <= the base's {shape.max_positions} positions, "
                         f"got {t.cutoff_len}")
    check_dataset_files(cfg, problems)
    raise_problems(problems)

    p = cfg.pipeline
    in_flight = p.in_flight_cap
    activations = max(transformer_activation_bytes(t.micro_batch_size, t.cutoff_len, shape.hidden, shape.layers,
                                                   shape.heads, shape.vocab) for t in cfg.tasks) * in_flight
    adapters = adam_training_bytes(adapter_parameters(cfg, shape))
    base = 4.0 * shape.parameters
    per_stage = PROCESS_OVERHEAD_BYTES + (base + adapters + activations) / p.stages
    gpus = float(p.stages) if p.device == "cuda" else 0.0
    report = PreflightReport("mlora", p.stages, p.stages * stage_cpus, gpus,
                             p.stages * PROCESS_OVERHEAD_BYTES + base + adapters + activations, per_stage, resources)
    if resources is not None:
        if p.device == "cuda" and resources.gpus < 1:
            problems.add("pipeline.device", f"device: cuda, but the cluster has {resources.gpus:g} GPUs "
                                          f"({resources.where}); use auto or cpu")
        check_fit(problems, resources, field="pipeline.stages", what=f"{p.stages} pipeline stages",
                  cpus=report.cpus, actor_cpus=stage_cpus, memory=report.memory_bytes, actor_memory=per_stage)
    raise_problems(problems)
    return report
