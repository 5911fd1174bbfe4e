"""The mLoRA job config: base model, datasets, adapters, tasks, pipeline and scheduler.

One YAML (or dict) describes everything; :func:`load_mlora_config` type-checks it and then
:meth:`MLoRAConfig.validate` checks what types cannot (r > 0, a dataset file exists, a target
module exists in the base, names refer to each other), naming the bad field, before any
actor starts. ``MLoRAConfig()`` with no arguments is the embedded demo: 4 adapters on 4
synthetic tasks on the tiny base.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from raystack.comm.network import NetworkModel
from raystack.config import ConfigError, load_config
from raystack.devices import Device
from raystack.data.sft import SYNTHETIC_TASKS, Example, file_examples, synthetic_examples
from raystack.mlora.batchlora import AdapterSpec

ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass
class DatasetConfig:
    """A named dataset: a built-in synthetic task, or a JSON/JSONL/Parquet file."""

    name: str = "reverse"
    synthetic: Optional[str] = None  # reverse | sort | copy | arithmetic
    path: Optional[str] = None
    prompt_template: str = "{prompt}"
    response_field: str = "response"
    num_examples: int = 2000  # synthetic only
    eval_examples: int = 64  # held out for accuracy (synthetic: generated with another seed)
    seed: int = 0

    def examples(self) -> list[Example]:
        if self.synthetic is not None:
            return synthetic_examples(self.synthetic, self.num_examples, seed=self.seed)
        return file_examples(self.path, self.prompt_template, self.response_field)

    def eval_set(self) -> list[Example]:
        if self.synthetic is not None:
            return synthetic_examples(self.synthetic, self.eval_examples, seed=self.seed + 10_007)
        return self.examples()[: self.eval_examples]


@dataclass
class AdapterConfig:
    """One adapter: type, rank, scaling, dropout, targets, optimizer and schedule."""

    name: str = "a0"
    type: Literal["lora", "dora"] = "lora"
    r: int = 8
    alpha: float = 16.0
    dropout: float = 0.0
    target_modules: list[str] = field(default_factory=lambda: list(ALL_LINEAR))
    optimizer: Literal["adamw", "sgd"] = "adamw"
    lr: float = 3e-3
    weight_decay: float = 0.0
    schedule: Literal["constant", "linear", "cosine"] = "constant"
    warmup_steps: int = 0
    seed: int = 0

    def spec(self) -> AdapterSpec:
        return AdapterSpec(self.name, self.type, self.r, self.alpha, self.dropout, tuple(self.target_modules), self.seed)


@dataclass
class TaskConfig:
    """A training job: which adapter learns which dataset, and how."""

    adapter: str = "a0"
    dataset: str = "reverse"
    batch_size: int = 16
    micro_batch_size: int = 16  # batch_size / micro_batch_size micro-batches per step
    epochs: float = 1.0
    max_steps: Optional[int] = None  # overrides epochs when set
    cutoff_len: int = 32
    save_steps: int = 50
    priority: int = 0

    @property
    def micro_batches(self) -> int:
        return -(-self.batch_size // self.micro_batch_size)


@dataclass
class PipelineConfig:
    stages: int = 2
    balance: Literal["params", "measured"] = "params"
    window_steps: int = 20  # steps scheduled at once; checkpoints and admissions between windows
    # micro-batches whose forward started on stage 0 and whose backward has not finished there;
    # None: stages + 1, which keeps every stage busy (more only holds activations in memory)
    max_in_flight: Optional[int] = None
    # lanes of jobs filling the pipeline; None: 2 x stages. More jobs than lanes share a lane
    # (their rows in one BatchLoRA micro-batch): fewer lanes, wider micro-batches, faster
    # matmuls but more activation memory
    lanes: Optional[int] = None
    max_restarts: int = 2  # per stage actor failure, before giving up
    device: Device = "auto"  # auto: stages on GPUs when the cluster has any
    # simulated link between consecutive stages (activations forward, gradients back), for
    # experiments: per-transfer latency and bandwidth; 0 bandwidth means unlimited
    link_latency_s: float = 0.0
    link_bandwidth_bytes_per_s: float = 0.0

    @property
    def in_flight_cap(self) -> int:
        return self.max_in_flight if self.max_in_flight is not None else self.stages + 1

    @property
    def link(self) -> NetworkModel:
        """The simulated link between consecutive stages (ideal unless the link fields say)."""
        bw = self.link_bandwidth_bytes_per_s
        return NetworkModel(self.link_latency_s, bw if bw > 0 else math.inf)


@dataclass
class SchedulerConfig:
    max_concurrent: int = 8
    # each stage's memory budget: peak RSS of the stage process on the CPU, peak CUDA allocator
    # bytes on a GPU; None: the stage's share of its node's memory (CPU) or of its GPU
    memory_budget_mb: Optional[float] = None
    memory_margin: float = 0.1  # admit only if predicted peak x (1 + margin) <= budget
    strict_priority: bool = False


@dataclass
class MLoRAConfig:
    base: str = "tiny-1m"
    quantize: Optional[Literal["int8"]] = None  # the frozen base's linear layers; adapters stay full precision
    seed: int = 0
    output_dir: str = "runs/mlora"
    datasets: list[DatasetConfig] = field(default_factory=lambda: [
        DatasetConfig(name=t, synthetic=t, seed=i) for i, t in enumerate(SYNTHETIC_TASKS)])
    adapters: list[AdapterConfig] = field(default_factory=lambda: [
        AdapterConfig(name=f"{t}_lora", type="dora" if t == "sort" else "lora", r=16, alpha=32, seed=i,
                      target_modules=[*ALL_LINEAR, "lm_head"],
                      dropout=0.05 if t == "copy" else 0.0)
        for i, t in enumerate(SYNTHETIC_TASKS)])
    tasks: list[TaskConfig] = field(default_factory=lambda: [
        TaskConfig(adapter=f"{t}_lora", dataset=t, batch_size=16, micro_batch_size=8, max_steps=150)
        for t in SYNTHETIC_TASKS])
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    eval: bool = True
    steps: Optional[int] = None  # if set, every task's max_steps (e.g. from a workflow step)

    def validate(self) -> None:
        if self.steps is not None:
            if self.steps < 1:
                raise ConfigError("steps", f"must be >= 1, got {self.steps}")
            for t in self.tasks:
                t.max_steps = self.steps
        _validate(self)

    def adapter(self, name: str) -> AdapterConfig:
        return next(a for a in self.adapters if a.name == name)

    def dataset(self, name: str) -> DatasetConfig:
        return next(d for d in self.datasets if d.name == name)


def _validate(cfg: MLoRAConfig) -> None:
    names: set[str] = set()
    for i, d in enumerate(cfg.datasets):
        f = f"datasets[{i}]"
        if d.name in names:
            raise ConfigError(f"{f}.name", f"duplicate dataset name {d.name!r}")
        names.add(d.name)
        if (d.synthetic is None) == (d.path is None):
            raise ConfigError(f, "set exactly one of 'synthetic' (a built-in task) or 'path' (a file)")
        if d.synthetic is not None and d.synthetic not in SYNTHETIC_TASKS:
            raise ConfigError(f"{f}.synthetic", f"unknown task {d.synthetic!r}; expected one of {list(SYNTHETIC_TASKS)}")
        if d.path is not None:
            p = Path(d.path)
            if not p.is_file():
                raise ConfigError(f"{f}.path", f"dataset file {d.path} does not exist")
            if p.suffix.lower() not in (".json", ".jsonl", ".parquet"):
                raise ConfigError(f"{f}.path", f"unsupported format {p.suffix!r}; use .json, .jsonl or .parquet")
        if d.num_examples < 1:
            raise ConfigError(f"{f}.num_examples", "must be >= 1")
    anames: set[str] = set()
    for i, a in enumerate(cfg.adapters):
        f = f"adapters[{i}]"
        if not a.name.isidentifier() or a.name in anames:
            raise ConfigError(f"{f}.name", f"{a.name!r} must be a unique identifier")
        anames.add(a.name)
        if a.r <= 0:
            raise ConfigError(f"{f}.r", f"must be > 0, got {a.r}")
        if a.alpha <= 0:
            raise ConfigError(f"{f}.alpha", f"must be > 0, got {a.alpha}")
        if not 0.0 <= a.dropout < 1.0:
            raise ConfigError(f"{f}.dropout", f"must be in [0, 1), got {a.dropout}")
        if a.lr <= 0:
            raise ConfigError(f"{f}.lr", f"must be > 0, got {a.lr}")
        if not a.target_modules:
            raise ConfigError(f"{f}.target_modules", "must name at least one module")
    if not cfg.tasks:
        raise ConfigError("tasks", "at least one task is needed")
    used: set[str] = set()
    for i, t in enumerate(cfg.tasks):
        f = f"tasks[{i}]"
        if t.adapter not in anames:
            raise ConfigError(f"{f}.adapter", f"no adapter named {t.adapter!r} (have {sorted(anames)})")
        if t.adapter in used:
            raise ConfigError(f"{f}.adapter", f"adapter {t.adapter!r} is already trained by another task")
        used.add(t.adapter)
        if t.dataset not in names:
            raise ConfigError(f"{f}.dataset", f"no dataset named {t.dataset!r} (have {sorted(names)})")
        for fld in ("batch_size", "micro_batch_size", "cutoff_len", "save_steps"):
            if getattr(t, fld) < 1:
                raise ConfigError(f"{f}.{fld}", "must be >= 1")
        if t.micro_batch_size > t.batch_size:
            raise ConfigError(f"{f}.micro_batch_size", "must be <= batch_size")
        if t.max_steps is None and t.epochs <= 0:
            raise ConfigError(f"{f}.epochs", "must be > 0")
    if cfg.pipeline.stages < 1:
        raise ConfigError("pipeline.stages", "must be >= 1")
    if cfg.pipeline.window_steps < 1:
        raise ConfigError("pipeline.window_steps", "must be >= 1")
    if cfg.pipeline.lanes is not None and cfg.pipeline.lanes < 1:
        raise ConfigError("pipeline.lanes", "must be >= 1 (or null for 2 x stages)")
    if cfg.pipeline.max_in_flight is not None and cfg.pipeline.max_in_flight < 1:
        raise ConfigError("pipeline.max_in_flight", "must be >= 1 (or null for stages + 1)")
    if cfg.scheduler.max_concurrent < 1:
        raise ConfigError("scheduler.max_concurrent", "must be >= 1")
    if cfg.scheduler.memory_budget_mb is not None and cfg.scheduler.memory_budget_mb <= 0:
        raise ConfigError("scheduler.memory_budget_mb", f"must be > 0 (or null for the device's share), "
                                                        f"got {cfg.scheduler.memory_budget_mb}")
    if cfg.scheduler.memory_margin < 0:
        raise ConfigError("scheduler.memory_margin", f"must be >= 0, got {cfg.scheduler.memory_margin}")
    if cfg.pipeline.link_latency_s < 0:
        raise ConfigError("pipeline.link_latency_s", f"must be >= 0, got {cfg.pipeline.link_latency_s}")
    if cfg.pipeline.link_bandwidth_bytes_per_s < 0:
        raise ConfigError("pipeline.link_bandwidth_bytes_per_s",
                          f"must be > 0, or 0 for unlimited, got {cfg.pipeline.link_bandwidth_bytes_per_s}")


def check_against_model(cfg: MLoRAConfig, linear_names: set[str], num_units: int) -> None:
    """Checks that need the base model's structure (target modules exist, enough layers)."""
    for i, a in enumerate(cfg.adapters):
        missing = [m for m in a.target_modules if m not in linear_names]
        if missing:
            raise ConfigError(f"adapters[{i}].target_modules",
                              f"base {cfg.base!r} has no module {missing[0]!r}; it has {sorted(linear_names)}")
    if cfg.pipeline.stages > num_units:
        raise ConfigError("pipeline.stages", f"base has only {num_units} pipeline units (embed, layers, head)")


def load_mlora_config(source: str | dict[str, Any] | None = None, overrides: dict[str, Any] | None = None) -> MLoRAConfig:
    """Load and validate (types, then :meth:`MLoRAConfig.validate`)."""
    return load_config(MLoRAConfig, source, overrides)
