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
    assist: bool = option(True, "rule planner first, the model only when it refuses")


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
    llm: LLMConfig = option(doc="optional model for `workflow plan`", factory=LLMConfig)

    def validate(self) -> None:
        problems = Problems()
        if not self.store.strip():
            problems.add("store", "must name a directory or URI")
        if self.llm.url and not self.llm.model:
            problems.add("llm.model", "is required when llm.url is set")
        problems.raise_if_any()
