"""Preflight of the workflow part's config: values, and a store it can write to."""
from __future__ import annotations

import os
from pathlib import Path

from raystack.config import check_config
from raystack.preflight.files import PreflightError
from raystack.preflight.report import PreflightReport
from raystack.preflight.resources import ClusterResources
from raystack.workflow.config import WorkflowConfig


def preflight_workflow(cfg: WorkflowConfig, resources: ClusterResources | None = None) -> PreflightReport:
    """Check the config and that a local artifact store can be created and written."""
    check_config(cfg)
    if cfg.cache and "://" not in cfg.store:
        existing = Path(cfg.store).resolve()
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir() or not os.access(existing, os.W_OK):
            raise PreflightError("store", f"{cfg.store}: {existing} is not a writable directory")
    return PreflightReport("workflow", 0, 0.0, 0.0, 0.0, 0.0, resources)
