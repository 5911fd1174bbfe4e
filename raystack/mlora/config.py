"""The mLoRA job config: base model, datasets, adapters, tasks, pipeline and scheduler.

One YAML (or dict) describes everything; :func:`load_mlora_config` type-checks it and then
:meth:`MLoRAConfig.validate` checks what types cannot (r > 0, a dataset file exists, a target
module exists in the base, names refer to each other), naming the bad field, before any
actor starts. ``MLoRAConfig()`` with no arguments is the embedded demo: 4 adapters on 4
synthetic tasks on the tiny base.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

from raystack.comm.network import NetworkModel
from raystack.config import ConfigBase, Problems, did_you_mean, load_config, option
from raystack.runtime.tracking import check_loggers, loggers_option
from raystack.devices import Device
from raystack.data.sft import (SYNTHETIC_TASKS, Example, chat_examples, check_dataset_fields, file_examples,
                               synthetic_examples)
from raystack.data.suffixes import RECORD_SUFFIXES
from raystack.mlora.batchlora import AdapterSpec
from raystack.runtime.storage import run_id_problem

ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


MAX_STEPS = 10_000_000       # any count of steps
MAX_BATCH = 65_536           # rows of one batch or micro-batch
MAX_SEQ_LEN = 1_048_576      # tokens per row (the base's positions bound it further)
MAX_JOBS = 1024              # datasets, adapters or tasks in one config
MAX_EXAMPLES = 1_000_000     # generated examples of a synthetic dataset
MAX_SEED = 2**32 - 1


@dataclass
class DatasetConfig(ConfigBase):
    """A named dataset: a built-in synthetic task, or a JSON/JSONL/Parquet file of records
    read with a prompt template (``format: template``) or as chat ``messages`` rendered with
    the tokenizer's chat template (``format: chat``)."""

    name: str = option("reverse", "the name tasks refer to")
    synthetic: Optional[str] = option(None, "built-in task: reverse, sort, copy or arithmetic (or set path)")
    path: Optional[str] = option(None, "a .json, .jsonl or .parquet file of records (or set synthetic)")
    format: Literal["template", "chat"] = option("template", "template: prompt_template + response_field; chat: "
                                                 "messages rendered with the tokenizer's chat template")
    prompt_template: str = option("{prompt}", "template: Python format string over the record's fields, e.g. "
                                  "'Q: {question}\\nA: '")
    response_field: str = option("response", "template: record field holding the answer (the loss is on the "
                                 "answer + EOS only)")
    messages_field: str = option("messages", "chat: record field holding [{role, content}, ...] (the loss is on "
                                 "the assistant turns)")
    num_examples: int = option(2000, "synthetic only: examples generated", ge=1, le=MAX_EXAMPLES)
    eval_examples: int = option(64, "examples held out for accuracy (synthetic: another seed)", ge=1, le=1_000_000)
    seed: int = option(0, "synthetic data seed", ge=0, le=MAX_SEED)

    def examples(self, tokenizer: Any = None) -> list[Example]:
        """The examples (``tokenizer`` renders chat records; the byte tokenizer by default)."""
        if self.synthetic is not None:
            return synthetic_examples(self.synthetic, self.num_examples, seed=self.seed)
        if self.format == "chat":
            return chat_examples(self.path, tokenizer, self.messages_field)
        return file_examples(self.path, self.prompt_template, self.response_field)

    def eval_set(self, tokenizer: Any = None) -> list[Example]:
        if self.synthetic is not None:
            return synthetic_examples(self.synthetic, self.eval_examples, seed=self.seed + 10_007)
        return self.examples(tokenizer)[: self.eval_examples]


@dataclass
class AdapterConfig(ConfigBase):
    """One adapter: type, rank, scaling, dropout, targets, optimizer and schedule."""

    name: str = option("a0", "adapter name (an identifier): its folder under output_dir/adapters")
    type: Literal["lora", "dora"] = option("lora", "lora or dora")
    r: int = option(8, "rank", ge=1, le=4096)
    alpha: float = option(16.0, "scaling numerator (scale = alpha / r)", gt=0, le=1e6)
    dropout: float = option(0.0, "dropout on the adapter's input", ge=0, lt=1)
    target_modules: list[str] = option(doc="short names of the linear layers that get the adapter; must exist in the base (lm_head allowed)",
                                       factory=lambda: list(ALL_LINEAR))
    optimizer: Literal["adamw", "sgd"] = option("adamw", "adamw or sgd (momentum 0.9)")
    lr: float = option(3e-3, "learning rate", gt=0, le=10)
    weight_decay: float = option(0.0, "weight decay", ge=0, le=10)
    schedule: Literal["constant", "linear", "cosine"] = option("constant", "constant, linear or cosine decay after the linear warm-up")
    warmup_steps: int = option(0, "linear warm-up steps", ge=0, le=MAX_STEPS)
    seed: int = option(0, "initialisation seed", ge=0, le=MAX_SEED)

    def spec(self) -> AdapterSpec:
        return AdapterSpec(self.name, self.type, self.r, self.alpha, self.dropout, tuple(self.target_modules), self.seed)


@dataclass
class TaskConfig(ConfigBase):
    """A training job: which adapter learns which dataset, and how."""

    adapter: str = option("a0", "the adapter trained")
    dataset: str = option("reverse", "the dataset it learns")
    batch_size: int = option(16, "rows per step", ge=1, le=MAX_BATCH)
    micro_batch_size: int = option(16, "rows per micro-batch; micro-batches per step = ceil(batch_size / micro_batch_size)",
                                   ge=1, le=MAX_BATCH)
    epochs: float = option(1.0, "passes over the dataset (when max_steps is null)", gt=0, le=1e6)
    max_steps: Optional[int] = option(None, "steps; overrides epochs when set", ge=1, le=MAX_STEPS)
    cutoff_len: int = option(32, "tokens per row (prompt + response), longer rows are cut", ge=1, le=MAX_SEQ_LEN)
    packing: bool = option(False, "pack a micro-batch's examples into rows of cutoff_len (else: pad each)")
    save_steps: int = option(50, "checkpoint interval (checkpoints are also taken at every window end)", ge=1, le=MAX_STEPS)
    priority: int = option(0, "higher is admitted first", ge=-1000, le=1000)

    @property
    def micro_batches(self) -> int:
        return -(-self.batch_size // self.micro_batch_size)


@dataclass
class PipelineConfig(ConfigBase):
    """How the base is split over stage actors and how jobs fill them."""

    stages: int = option(2, "pipeline stage actors (1 CPU each)", ge=1, le=1024)
    balance: Literal["params", "measured"] = option("params", "split by parameter count or measured time")
    window_steps: int = option(20, "steps scheduled at once; checkpoints and admissions between windows",
                               ge=1, le=1_000_000)
    max_in_flight: Optional[int] = option(
        None, "cap on micro-batches in flight on stage 0 (activation memory); null: stages + 1, enough to keep every stage busy", ge=1, le=4096)
    lanes: Optional[int] = option(
        None, "lanes of jobs filling the pipeline; null: 2 x stages; fewer lanes: wider BatchLoRA micro-batches, more activation memory", ge=1, le=4096)
    max_restarts: int = option(2, "restarts per stage actor failure before giving up", ge=0, le=1000)
    device: Device = option("auto", "auto (stages on GPUs when the cluster has any), cpu or cuda; activations cross stages as CPU tensors")
    link_latency_s: float = option(0.0, "simulated link between consecutive stages (activations forward, gradients "
                                   "back), for experiments: seconds per transfer", ge=0, le=3600)
    link_bandwidth_bytes_per_s: float = option(0.0, "simulated link between stages: bytes per second; 0: unlimited",
                                               ge=0, le=1e15)

    @property
    def in_flight_cap(self) -> int:
        return self.max_in_flight if self.max_in_flight is not None else self.stages + 1

    @property
    def link(self) -> NetworkModel:
        """The simulated link between consecutive stages (ideal unless the link fields say)."""
        bw = self.link_bandwidth_bytes_per_s
        return NetworkModel(self.link_latency_s, bw if bw > 0 else math.inf)


@dataclass
class SchedulerConfig(ConfigBase):
    """Which queued jobs start, within each stage's memory budget."""

    max_concurrent: int = option(8, "jobs training at once", ge=1, le=MAX_JOBS)
    memory_budget_mb: Optional[float] = option(
        None, "each stage's peak memory (MB): RSS of the stage process on the CPU, CUDA allocator bytes on a GPU; "
        "null: the stage's share of its node's memory (CPU) or of its GPU. Jobs that do not fit wait; a job that "
        "never fits is refused", gt=0, le=2**30)
    memory_margin: float = option(0.1, "admit a job only if every stage's predicted peak x (1 + margin) fits its budget",
                                  ge=0, le=10)
    strict_priority: bool = option(False, "a higher-priority job that does not fit blocks lower-priority ones")


@dataclass
class MLoRAConfig(ConfigBase):
    """An mLoRA job: adapters trained on datasets by tasks, over a pipelined base."""

    base: str = option("tiny-1m", "tiny-1m, tiny-20m, small-50m, a local transformers checkpoint directory "
                       "(Llama, Qwen2, Mistral, GPT-2 families), or a Hub id in the Hugging Face cache")
    quantize: Optional[Literal["int8"]] = option(None, "int8: the frozen base's decoder linear layers stored int8 "
                                                 "(per-row scales); adapters stay full precision; null: as loaded")
    tokenizer: Optional[str] = option(None, "null: the base's own (built-in bases: bytes); 'byte'; or a "
                                      "tokenizer directory / Hub id")
    seed: int = option(0, "base weights seed (named bases) and data order", ge=0, le=MAX_SEED)
    output_dir: str = option("runs/mlora", "output location, a directory or a pyarrow filesystem URI: each run "
                                           "writes adapters/<name>/ (PEFT), checkpoints/<name>.pt and summary.json "
                                           "under <output_dir>/<run id>")
    run_id: str = option("", "this run's folder in output_dir; empty: a new id; with resume: the run to continue "
                             "(or latest)")
    resume: bool = option(False, "continue the run named by run_id: finished adapters are reported, the others "
                                 "resume from their checkpoints")
    datasets: list[DatasetConfig] = option(doc="datasets", factory=lambda: [
        DatasetConfig(name=t, synthetic=t, seed=i) for i, t in enumerate(SYNTHETIC_TASKS)])
    adapters: list[AdapterConfig] = option(doc="adapters", factory=lambda: [
        AdapterConfig(name=f"{t}_lora", type="dora" if t == "sort" else "lora", r=16, alpha=32, seed=i,
                      target_modules=[*ALL_LINEAR, "lm_head"],
                      dropout=0.05 if t == "copy" else 0.0)
        for i, t in enumerate(SYNTHETIC_TASKS)])
    tasks: list[TaskConfig] = option(doc="training jobs: one adapter each", factory=lambda: [
        TaskConfig(adapter=f"{t}_lora", dataset=t, batch_size=16, micro_batch_size=8, max_steps=150)
        for t in SYNTHETIC_TASKS])
    pipeline: PipelineConfig = option(doc="pipeline", factory=PipelineConfig)
    scheduler: SchedulerConfig = option(doc="admission scheduler", factory=SchedulerConfig)
    eval: bool = option(True, "report accuracy before and after")
    steps: Optional[int] = option(None, "if set, every task's max_steps (e.g. from a workflow step)", ge=1, le=MAX_STEPS)
    loggers: list[str] = loggers_option("output_dir")

    def validate(self) -> None:
        if self.steps is not None:
            for t in self.tasks:
                t.max_steps = self.steps
        _validate(self)

    def adapter(self, name: str) -> AdapterConfig:
        return next(a for a in self.adapters if a.name == name)

    def dataset(self, name: str) -> DatasetConfig:
        return next(d for d in self.datasets if d.name == name)

    def fingerprint(self, task: TaskConfig) -> str:
        """What a checkpoint of ``task``'s job must match to be resumed: base (and its
        quantisation), tokenizer, seed, adapter, task and dataset configs (a short sha256)."""
        import hashlib
        import json

        from raystack.config import config_to_dict

        doc = {"base": self.base, "tokenizer": self.tokenizer, "seed": self.seed,
               **({"quantize": self.quantize} if self.quantize else {}),
               "adapter": config_to_dict(self.adapter(task.adapter)),
               "task": config_to_dict(task), "dataset": config_to_dict(self.dataset(task.dataset))}
        return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _validate(cfg: MLoRAConfig) -> None:
    from raystack.models.load import resolve_model

    problems = Problems()
    problems.collect(check_loggers, cfg.loggers)
    problems.collect(resolve_model, cfg.base, "base")  # a built-in name, a checkpoint directory or a cached Hub id
    if not cfg.output_dir.strip():
        problems.add("output_dir", "must name a directory")
    if cfg.resume and not cfg.run_id.strip():
        problems.add("run_id", "name the run to resume (a run id in output_dir, or latest)")
    if run_id_problem(cfg.run_id):
        problems.add("run_id", run_id_problem(cfg.run_id))
    for key in ("datasets", "adapters", "tasks"):
        if len(getattr(cfg, key)) > MAX_JOBS:
            problems.add(key, f"at most {MAX_JOBS} entries, got {len(getattr(cfg, key))}")
    names: set[str] = set()
    for i, d in enumerate(cfg.datasets):
        f = f"datasets[{i}]"
        if d.name in names:
            problems.add(f"{f}.name", f"duplicate dataset name {d.name!r}")
        names.add(d.name)
        if (d.synthetic is None) == (d.path is None):
            problems.add(f, "set exactly one of 'synthetic' (a built-in task) or 'path' (a file)")
        if d.synthetic is not None and d.synthetic not in SYNTHETIC_TASKS:
            problems.add(f"{f}.synthetic", f"unknown task {d.synthetic!r}{did_you_mean(d.synthetic, SYNTHETIC_TASKS)}; "
                         f"expected one of {list(SYNTHETIC_TASKS)}")
        if d.path is not None:
            p = Path(d.path)
            if not p.is_file():
                problems.add(f"{f}.path", f"dataset file {d.path} does not exist")
            elif p.suffix.lower() not in RECORD_SUFFIXES:
                problems.add(f"{f}.path", f"unsupported format {p.suffix!r}; use {', '.join(RECORD_SUFFIXES)}")
            else:
                problems.collect(check_dataset_fields, p, d.format, d.prompt_template, d.response_field,
                                 d.messages_field, f)
    anames: set[str] = set()
    for i, a in enumerate(cfg.adapters):
        f = f"adapters[{i}]"
        if not a.name.isidentifier() or a.name in anames:
            problems.add(f"{f}.name", f"{a.name!r} must be a unique identifier")
        anames.add(a.name)
        if not a.target_modules:
            problems.add(f"{f}.target_modules", "must name at least one module")
    if not cfg.tasks:
        problems.add("tasks", "at least one task is needed")
    used: set[str] = set()
    for i, t in enumerate(cfg.tasks):
        f = f"tasks[{i}]"
        if t.adapter not in anames:
            problems.add(f"{f}.adapter", f"no adapter named {t.adapter!r}{did_you_mean(t.adapter, anames)} "
                         f"(have {sorted(anames)})")
        elif t.adapter in used:
            problems.add(f"{f}.adapter", f"adapter {t.adapter!r} is already trained by another task")
        used.add(t.adapter)
        if t.dataset not in names:
            problems.add(f"{f}.dataset", f"no dataset named {t.dataset!r}{did_you_mean(t.dataset, names)} "
                         f"(have {sorted(names)})")
        if t.micro_batch_size > t.batch_size:
            problems.add(f"{f}.micro_batch_size", f"must be <= batch_size ({t.batch_size}), got {t.micro_batch_size}")
    problems.raise_if_any()


def check_against_model(cfg: MLoRAConfig, linear_names: set[str], num_units: int, tokenizer: Any = None) -> None:
    """Checks that need the base model's structure (target modules exist, enough layers) and
    its tokenizer (chat datasets need a chat template)."""
    problems = Problems()
    for i, d in enumerate(cfg.datasets):
        if d.path is not None and d.format == "chat" and not getattr(tokenizer, "chat_template", None):
            problems.add(f"datasets[{i}].format", f"chat needs a tokenizer with a chat template; the tokenizer "
                                                  f"of base {cfg.base!r} has none (set tokenizer: to one that has)")
    for i, a in enumerate(cfg.adapters):
        missing = [m for m in a.target_modules if m not in linear_names]
        if missing:
            problems.add(f"adapters[{i}].target_modules",
                         f"base {cfg.base!r} has no module {missing[0]!r}{did_you_mean(missing[0], linear_names)}; "
                         f"it has {sorted(linear_names)}")
    if cfg.pipeline.stages > num_units:
        problems.add("pipeline.stages", f"base has only {num_units} pipeline units (embed, layers, head), "
                     f"got {cfg.pipeline.stages}")
    problems.raise_if_any()


def load_mlora_config(source: str | dict[str, Any] | None = None, overrides: dict[str, Any] | None = None) -> MLoRAConfig:
    """Load and validate (types, then :meth:`MLoRAConfig.validate`)."""
    return load_config(MLoRAConfig, source, overrides)
