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
    assist: bool = True                   # rule planner first, the model only when it refuses


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
