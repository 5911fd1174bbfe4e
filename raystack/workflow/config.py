"""The workflow part's configuration (one dataclass, loaded and validated up front)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from raystack.config import ConfigError


@dataclass
class LLMConfig:
    """An OpenAI-compatible endpoint for the planner (empty url: offline rule planner only)."""

    url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"   # name of the environment variable holding the key
    assist: bool = True                   # rules first; the model fills what they leave unmapped
    timeout_s: float = 60.0
    max_repairs: int = 1                  # times an invalid answer is sent back with the error


@dataclass
class WorkflowConfig:
    """How workflows run: cache, store, eviction, splitting, cluster, planner."""

    store: str = ".raystack/artifacts"    # local directory or pyarrow URI (s3://...)
    cache: bool = True
    capacity_mb: Optional[float] = None   # bound on the store; None: unbounded
    eviction: Literal["couler", "lru"] = "couler"
    split_budget: int = 2000              # above this many steps, split into sub-workflows
    max_runners: int = 4                  # runner actors for split workflows
    address: Optional[str] = None         # Ray address; None: RAY_ADDRESS or embedded
    progress: bool = True
    allow_modules: list[str] = field(default_factory=list)  # modules an IR file may name (pkg.* too)
    scratch: str = ".raystack/scratch"    # each run gets its own directory under here
    out_dir: str = "runs/workflow"        # files steps write (checkpoints, adapters, tables)
    delete_paths: list[str] = field(default_factory=list)   # where cleanup may delete besides scratch
    cache_pickle: bool = False            # store non-data outputs as pickle (a store only you can write)
    memory_item_kb: float = 256.0         # outputs up to this size are also kept in memory
    memory_mb: float = 64.0               # the memory level's bound
    llm: LLMConfig = field(default_factory=LLMConfig)

    def validate(self) -> None:
        if self.capacity_mb is not None and self.capacity_mb <= 0:
            raise ConfigError("capacity_mb", f"must be > 0 (or null), got {self.capacity_mb}")
        if self.split_budget < 1:
            raise ConfigError("split_budget", f"must be >= 1, got {self.split_budget}")
        if self.max_runners < 1:
            raise ConfigError("max_runners", f"must be >= 1, got {self.max_runners}")
        if self.llm.url and not self.llm.model:
            raise ConfigError("llm.model", "is required when llm.url is set")
        if self.llm.max_repairs < 0 or self.llm.timeout_s <= 0:
            raise ConfigError("llm.max_repairs", "max_repairs must be >= 0 and timeout_s > 0")
        if self.memory_item_kb < 0 or self.memory_mb < 0:
            raise ConfigError("memory_mb", "memory_item_kb and memory_mb must be >= 0")
        for i, m in enumerate(self.allow_modules):
            if not m or not all(p.isidentifier() for p in m.removesuffix(".*").split(".")):
                raise ConfigError(f"allow_modules[{i}]", f"expected a module name (or pkg.*), got {m!r}")
        from raystack.workflow.context import ConfinementError, check_delete_root
        for i, p in enumerate(self.delete_paths):
            try:
                check_delete_root(p)
            except ConfinementError as e:
                raise ConfigError(f"delete_paths[{i}]", str(e)) from None

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
