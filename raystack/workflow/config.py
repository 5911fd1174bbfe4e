"""The workflow part's configuration (one dataclass, checked when it is made)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from raystack.config import ConfigBase, Problems, option


@dataclass
class LLMConfig(ConfigBase):
    """An OpenAI-compatible endpoint for the planner (empty url: offline rule planner only)."""

    url: str = option("", "OpenAI-compatible endpoint for `workflow plan`; empty: rule planner only")
    model: str = option("", "model name at that endpoint (required with url)")
    api_key_env: str = option("OPENAI_API_KEY", "environment variable holding the API key")
    assist: bool = option(True, "rules first; the model fills what they leave unmapped")
    timeout_s: float = option(60.0, "seconds to wait for the model's answer", gt=0, le=3600)
    max_repairs: int = option(1, "times an invalid answer is sent back with the error", ge=0, le=10)


@dataclass
class WorkflowConfig(ConfigBase):
    """How workflows run: cache, store, eviction, splitting, cluster, planner."""

    store: str = option(".raystack/artifacts", "artifact store: a local directory or a pyarrow URI (s3://...)")
    cache: bool = option(True, "serve unchanged steps from the store")
    capacity_mb: Optional[float] = option(None, "bound on the store (MB); null: unbounded", gt=0, le=1e9)
    eviction: Literal["couler", "lru"] = option("couler", "couler (rebuild cost x reuse / size) or lru")
    split_budget: int = option(2000, "workflows with more steps are split into sub-workflows", ge=1, le=10_000_000)
    max_runners: int = option(4, "runner actors for split workflows", ge=1, le=1024)
    address: Optional[str] = option(None, "Ray address; null: RAY_ADDRESS or the embedded local cluster")
    progress: bool = option(True, "progress bars")
    allow_modules: list[str] = option(doc="modules a workflow or IR file may name step functions from "
                                      "(pkg.* for a package); the catalog is always allowed", factory=list)
    scratch: str = option(".raystack/scratch", "each run gets its own scratch directory under here")
    out_dir: str = option("runs/workflow", "files steps write (checkpoints, adapters, tables)")
    delete_paths: list[str] = option(doc="where cleanup steps may delete besides the run's scratch", factory=list)
    cache_pickle: bool = option(False, "store non-data outputs as pickle: only for a store only you can write "
                                "(a pickle runs code when read)")
    memory_item_kb: float = option(256.0, "outputs up to this size are also kept in memory", ge=0, le=1e7)
    memory_mb: float = option(64.0, "the memory level's bound", ge=0, le=1e7)
    llm: LLMConfig = option(doc="optional model for `workflow plan`", factory=LLMConfig)

    def validate(self) -> None:
        problems = Problems()
        if not self.store.strip():
            problems.add("store", "must name a directory or URI")
        if self.llm.url and not self.llm.model:
            problems.add("llm.model", "is required when llm.url is set")
        for i, m in enumerate(self.allow_modules):
            if not m or not all(p.isidentifier() for p in m.removesuffix(".*").split(".")):
                problems.add(f"allow_modules[{i}]", f"expected a module name (or pkg.*), got {m!r}")
        from raystack.workflow.context import ConfinementError, check_delete_root
        for i, p in enumerate(self.delete_paths):
            try:
                check_delete_root(p)
            except ConfinementError as e:
                problems.add(f"delete_paths[{i}]", str(e))
        problems.raise_if_any()

    def open_store(self, override: Optional[str] = None):
        """The artifact store this config describes (``override``: another location)."""
        from raystack.workflow.store import ArtifactStore
        cap = int(self.capacity_mb * 2**20) if self.capacity_mb else None
        return ArtifactStore(override or self.store, capacity_bytes=cap,
                             allow_pickle=self.cache_pickle,
                             memory_item_bytes=int(self.memory_item_kb * 1024),
                             memory_bytes=int(self.memory_mb * 2**20))

    def context(self, workflow: str):
        """A fresh run context: own scratch directory, output directory, deletable paths."""
        from raystack.workflow.context import new_context
        return new_context(workflow, self.scratch, self.out_dir, self.delete_paths)
