"""Preflight: everything a job can be refused for, checked before Ray or any actor starts.

``preflight(cfg, resources)`` re-checks the config (types, ranges, cross-field rules), opens
the files it names (data, checkpoints: headers, schemas, first records), estimates the job's
memory, and, given the cluster's `ClusterResources`, checks that the job fits. Every entry
point calls it: the CLI and job scripts before starting an embedded cluster, the Python entry
functions before creating any placement group or actor. A refusal is one `PreflightError`
(a `ConfigError`) naming each bad field and file in one line.
"""
from __future__ import annotations

from typing import Any

from raystack.preflight.files import PreflightError, WeightsInfo, check_model_dir, check_safetensors
from raystack.preflight.report import PreflightReport
from raystack.preflight.resources import ClusterResources, from_ray, this_machine

__all__ = ["ClusterResources", "PreflightError", "PreflightReport", "WeightsInfo", "check_model_dir",
           "check_safetensors", "from_ray", "preflight", "this_machine"]


def preflight(cfg: Any, resources: ClusterResources | None = None) -> PreflightReport:
    """Check a part's config (EDiT, mLoRA, elastic, workflow) before anything starts; with
    ``resources``, also that the job fits that cluster. Raises `PreflightError` or
    `ConfigError`; returns the job's planned needs."""
    from raystack.edit.config import EDiTConfig
    from raystack.elastic.config import ElasticConfig
    from raystack.mlora.config import MLoRAConfig
    from raystack.workflow.config import WorkflowConfig

    if isinstance(cfg, EDiTConfig):
        from raystack.preflight.edit import preflight_edit
        return preflight_edit(cfg, resources)
    if isinstance(cfg, MLoRAConfig):
        from raystack.preflight.mlora import preflight_mlora
        return preflight_mlora(cfg, resources)
    if isinstance(cfg, ElasticConfig):
        from raystack.preflight.elastic import preflight_elastic
        return preflight_elastic(cfg, resources)
    if isinstance(cfg, WorkflowConfig):
        from raystack.preflight.workflow import preflight_workflow
        return preflight_workflow(cfg, resources)
    raise TypeError(f"no preflight for {type(cfg).__name__}")
