"""Workflows (Couler): one Python API, an engine-neutral IR, caching, splitting, Argo export
and a natural-language planner. The Ray runner and Tune integration live in ``actors.workflow``."""

from raystack.workflow.api import Out, Workflow, step, validate
from raystack.workflow.artifacts import Artifact
from raystack.workflow.context import RunContext
from raystack.workflow.engine import RunReport, StepFailed, run_local
from raystack.workflow.eviction import CoulerPolicy, LRUPolicy
from raystack.workflow.ir import TuneSpec, WorkflowError, WorkflowIR
from raystack.workflow.store import ArtifactStore

__all__ = ["Workflow", "Out", "step", "validate", "WorkflowIR", "WorkflowError", "ArtifactStore",
           "CoulerPolicy", "LRUPolicy", "RunReport", "StepFailed", "run_local", "Artifact",
           "RunContext", "TuneSpec"]
