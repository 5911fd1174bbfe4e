"""The one config object of an EDiT job, with defaults that run on a laptop."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

from raystack.config import ConfigBase, ConfigError, Problems, option
from raystack.devices import Device
from raystack.runtime.tracking import check_loggers, loggers_option
from raystack.runtime.storage import run_id_problem

Mode = Literal["edit", "aedit", "diloco", "post_local_sgd", "sync"]
Compression = Literal["none", "fp16", "bf16", "int8"]     # codecs of raystack.comm.compress


MAX_RANKS = 4096             # ranks (processes) of one job
MAX_STEPS = 10_000_000       # any count of steps or syncs
MAX_BATCH = 65_536           # sequences per rank per step
MAX_SEQ_LEN = 1_048_576      # tokens per sequence (the model's positions bound it further)
MAX_SEED = 2**32 - 1
DAY_S = 86_400.0


@dataclass
class InnerConfig(ConfigBase):
    """The inner optimizer each replica steps on its own data."""

    optimizer: Literal["adamw", "sgd"] = option("adamw", "adamw or sgd")
    lr: float = option(2e-3, "peak learning rate", gt=0, le=10)
    weight_decay: float = option(0.1, "decoupled weight decay", ge=0, le=10)
    beta1: float = option(0.9, "AdamW beta1", ge=0, lt=1)
    beta2: float = option(0.95, "AdamW beta2", ge=0, lt=1)
    momentum: float = option(0.0, "SGD momentum (sgd only)", ge=0, lt=1)
    grad_clip: float = option(1.0, "max gradient norm; 0: no clipping", ge=0, le=1e6)
    lr_warmup_steps: int = option(20, "steps of linear learning-rate ramp", ge=0, le=MAX_STEPS)
    lr_decay: Literal["none", "cosine"] = option("none", "after the ramp: none, or cosine decay to "
                                                 "lr_min_ratio x lr over the run's steps")
    lr_min_ratio: float = option(0.1, "cosine: the last step's lr over lr", ge=0, le=1)
    fused: bool | None = option(None, "AdamW in torch's fused kernel (CPU, CUDA); null: wherever torch has it "
                                "for the parameters (not with full_shard); false: torch's per-parameter loop")

    def lr_at(self, step: int, total_steps: int) -> float:
        """The inner learning rate of 0-based ``step`` in a run of ``total_steps``: a linear ramp
        over ``lr_warmup_steps``, then constant or a cosine decay to ``lr_min_ratio`` x lr."""
        ramp = min(1.0, (step + 1) / max(1, self.lr_warmup_steps))
        if self.lr_decay == "none" or step < self.lr_warmup_steps:
            return self.lr * ramp
        span = max(1, total_steps - self.lr_warmup_steps)
        progress = min(1.0, (step - self.lr_warmup_steps) / span)
        return self.lr * (self.lr_min_ratio + (1 - self.lr_min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def check_fragments_fit(model: str, fragments: int) -> None:
    """``sync.fragments`` needs at least one block per fragment: the model's blocks are its
    embeddings, each decoder layer, and the final norm with the head."""
    from raystack.models.load import load_model_config
    try:
        layers = getattr(load_model_config(model), "num_hidden_layers", None)
    except ConfigError:
        return                            # the model field's own check names what is wrong
    if layers is not None and fragments > layers + 2:
        raise ConfigError("sync.fragments", f"must be at most {layers + 2} for {model} (its blocks: embeddings, "
                          f"{layers} decoder layers, final norm + head), got {fragments}")


@dataclass
class SyncConfig(ConfigBase):
    """When and how replicas synchronise."""

    h: int = option(16, "inner steps between syncs (EDiT, DiLoCo, Post Local SGD)", ge=1, le=100_000)
    t_seconds: float = option(2.0, "A-EDiT: wall-clock seconds between syncs", gt=0, le=DAY_S)
    min_steps: int = option(2, "A-EDiT: skip a sync unless every replica ran this many steps", ge=1, le=100_000)
    warmup_steps: int = option(10, "first steps run as synchronous data parallel", ge=0, le=MAX_STEPS)
    layerwise: bool = option(True, "EDiT/A-EDiT: sync each block in its own forward pre-hook")
    prefetch: bool = option(True, "launch block l+1's collective while block l computes")
    state_on_cpu: bool = option(False, "keep theta_sync and the outer momentum on the CPU")
    overlap_steps: int = option(0, "tau: inner steps a block's outer update is applied after its sync "
                                "(mode edit; 0: in the next forward, the paper's method; must be < h)",
                                ge=0, le=100_000)
    overlap_eager: bool = option(False, "with overlap_steps > 0: at the sync point each replica steps to its own "
                                 "estimate of the outer update (its pseudo-gradient for the average) and trains the "
                                 "tau steps from there; the real update replaces the estimate when it lands")
    fragments: int = option(1, "F: blocks split into F contiguous groups of about equal size, each synced at its own "
                            "point of the H-step window (mode edit; 1: every block at once, the paper's method)",
                            ge=1, le=100_000)
    compression: Compression = option("none", "pseudo-gradients on the wire: none (fp32), fp16, bf16 or int8")
    error_feedback: bool = option(True, "carry what compression lost into the next sync")

    def validate(self) -> None:
        if self.overlap_steps >= self.h:
            raise ConfigError("overlap_steps", f"must be in [0, h={self.h}), got {self.overlap_steps}")
        if self.fragments > self.h:
            raise ConfigError("fragments", f"must be in [1, h={self.h}] (one sync point per step at most), "
                              f"got {self.fragments}")
        if self.fragments > 1 and self.overlap_steps >= self.h // self.fragments:
            raise ConfigError("overlap_steps", f"must be < h // fragments = {self.h // self.fragments} with "
                              f"fragments={self.fragments} (a fragment's update lands before the next "
                              f"fragment syncs), got {self.overlap_steps}")


@dataclass
class OuterConfig(ConfigBase):
    """The outer optimizer on theta_sync (Nesterov SGD, DiLoCo's choice)."""

    lr: float = option(0.7, "outer learning rate", gt=0, le=10)
    momentum: float = option(0.8, "outer momentum", ge=0, lt=1)
    nesterov: bool = option(True, "Nesterov momentum")


@dataclass
class PenaltyConfig(ConfigBase):
    """The pseudo-gradient penalty (EDiT and A-EDiT only)."""

    enabled: bool = option(True, "EDiT / A-EDiT only: drop and down-weight anomalous pseudo-gradients")
    ewma_alpha: float = option(0.02, "EWMA weight of the norm statistics", gt=0, le=1)
    z_threshold: float = option(3.0, "z-score above which a pseudo-gradient is an outlier", gt=0, le=1000)
    warmup_syncs: int = option(5, "syncs before outliers can be flagged (the reference: 120)", ge=0, le=MAX_STEPS)
    temperature: float = option(1.0, "softmax(-g/tau) on norms normalised by their mean", gt=0, le=1000)
    clip: float = option(5.0, "max norm of the averaged pseudo-gradient per block; 0: off", ge=0, le=1e6)


@dataclass
class DataConfig(ConfigBase):
    """Text in the model's tokens: the standard-library corpus by default, or local files."""

    paths: list[str] = option(doc="text/JSON/JSONL/Parquet files or directories; []: the Python "
                              "standard library sources", factory=list)
    text_field: str = option("text", "JSON/JSONL/Parquet field holding the text")
    max_bytes: int = option(2_000_000, "bytes of the standard-library corpus to read", ge=1, le=2**36)
    cache_dir: Optional[str] = option(None, "token shards, shared by the ranks (null: ~/.cache/raystack/tokens)")
    val_fraction: float = option(0.05, "share of documents held out for validation", gt=0, le=0.5)
    batch_size: int = option(8, "sequences per rank per step", ge=1, le=MAX_BATCH)
    seq_len: int = option(128, "tokens per sequence", ge=1, le=MAX_SEQ_LEN)
    eval_batches: int = option(4, "validation batches per evaluation", ge=1, le=100_000)

    def validate(self) -> None:
        problems = Problems()
        for i, p in enumerate(self.paths):
            if not p.strip():
                problems.add(f"paths[{i}]", "must name a file or directory")
            elif not Path(p).exists():
                problems.add(f"paths[{i}]", f"no such file or directory: {p}")
        problems.raise_if_any()


@dataclass
class SimulateConfig(ConfigBase):
    """Simulated conditions for experiments (named as simulated in every report)."""

    latency_s: float = option(0.0, "network model: per-collective latency (s)", ge=0, le=3600)
    bandwidth_bytes_per_s: float = option(0.0, "network model: link bandwidth; 0: unlimited", ge=0, le=1e15)
    slowdown: list[float] = option(doc="per replica: compute time multiplier; []: none",
                                   factory=list, ge=1, le=1000)
    random_slow_prob: float = option(0.0, "chance of a random slow step on `random_slow_replica`", ge=0, le=1)
    random_slow_factor: float = option(3.0, "compute time multiplier of a random slow step", ge=1, le=1000)
    random_slow_replica: int = option(-1, "replica with random slow steps; -1: none", ge=-1, le=MAX_RANKS)
    spike_replica: int = option(-1, "loss-spike injection (shuffled tokens, lr x spike_lr_mult); -1: none",
                                ge=-1, le=MAX_RANKS)
    spike_start: int = option(0, "first step of the loss spike", ge=0, le=MAX_STEPS)
    spike_steps: int = option(0, "steps the loss spike lasts", ge=0, le=MAX_STEPS)
    spike_lr_mult: float = option(10.0, "learning-rate multiplier during the spike", gt=0, le=1e6)


@dataclass
class RunConfig(ConfigBase):
    """Where results go and how the run survives failures."""

    out_dir: str = option("runs/edit", "output location, a directory or a pyarrow filesystem URI (s3://...); "
                                       "each run writes under <out_dir>/<run id>")
    checkpoint_every: int = option(5, "syncs between checkpoints; 0: only at the end", ge=0, le=MAX_STEPS)
    eval_every: int = option(5, "syncs between validation losses; 0: only at the end", ge=0, le=MAX_STEPS)
    run_id: str = option("", "this run's folder in out_dir; empty: a new id; with resume: the run to continue "
                             "(or latest)")
    resume: bool = option(False, "continue the run named by run_id from its last checkpoint")
    seed: int = option(0, "model init and data order", ge=0, le=MAX_SEED)
    max_replacements: int = option(3, "replica actors replaced after a failure before giving up", ge=0, le=1000)
    spare_replicas: int = option(0, "replicas' worth of rank processes kept started and idle on other nodes: a "
                                    "replica lost whole is replaced by them at once (no process start, imports "
                                    "or data loading during recovery); each reserves what a replica does", ge=0,
                                 le=64)
    comm_timeout_s: float = option(60.0, "how long a rank waits for its peers in any collective, "
                                   "the replica's and per-block groups' too, before it raises (s)", gt=0, le=DAY_S)
    cpus_per_rank: float = option(1.0, "Ray CPUs each rank reserves", gt=0, le=1024)
    threads_per_rank: int = option(1, "torch threads in each rank", ge=1, le=1024)
    device: Device = option("auto", "auto (GPUs when the cluster has any), cpu or cuda; a GPU per rank gives NCCL, fewer are shared over gloo")
    segments_per_call: int = option(8, "segments (syncs) a rank runs per driver call, at most", ge=1, le=10_000)

    def validate(self) -> None:
        if not self.out_dir.strip():
            raise ConfigError("out_dir", "must name a directory")
        if self.resume and not self.run_id.strip():
            raise ConfigError("run_id", "name the run to resume (a run id in out_dir, or latest)")
        if run_id_problem(self.run_id):
            raise ConfigError("run_id", run_id_problem(self.run_id))


@dataclass
class EDiTConfig(ConfigBase):
    """An EDiT pretraining job: ``ranks`` processes in ``ranks // shards`` replicas."""

    model: str = option("tiny-1m", "tiny-1m, tiny-20m, small-50m, a local transformers checkpoint directory, "
                        "or a Hub id in the Hugging Face cache")
    tokenizer: Optional[str] = option(None, "null: the model's own (built-in models: bytes); 'byte'; or a "
                                      "tokenizer directory / Hub id")
    mode: Mode = option("edit", "edit, aedit, diloco, post_local_sgd or sync (plain data parallel)")
    ranks: int = option(2, "total ranks (processes)", ge=1, le=MAX_RANKS)
    shards: int = option(1, "S: ranks per replica, each owning 1/S of every block (must divide ranks)", ge=1, le=MAX_RANKS)
    full_shard: bool = option(False, "shard parameters, gradients and AdamW state over the S ranks too "
                              "(FSDP2; needs shards >= 2)")
    steps: int = option(200, "inner steps per replica (A-EDiT: the mean over replicas)", ge=1, le=MAX_STEPS)
    inner: InnerConfig = option(doc="inner optimizer", factory=InnerConfig)
    sync: SyncConfig = option(doc="synchronisation", factory=SyncConfig)
    outer: OuterConfig = option(doc="outer optimizer", factory=OuterConfig)
    penalty: PenaltyConfig = option(doc="pseudo-gradient penalty", factory=PenaltyConfig)
    data: DataConfig = option(doc="training text", factory=DataConfig)
    simulate: SimulateConfig = option(doc="simulated network and stragglers", factory=SimulateConfig)
    run: RunConfig = option(doc="outputs and fault tolerance", factory=RunConfig)
    loggers: list[str] = loggers_option("run.out_dir")

    @property
    def replicas(self) -> int:
        return self.ranks // self.shards

    def validate(self) -> None:
        from raystack.models.tokenizer import check_tokenizer_fits
        problems = Problems()
        problems.collect(check_loggers, self.loggers)
        problems.collect(check_tokenizer_fits, self.model, self.tokenizer)  # model and tokenizer resolve, ids fit
        if self.shards < 1 or self.ranks < 1:
            pass  # out of range: named by the field checks
        elif self.ranks % self.shards:
            problems.add("shards", f"must divide ranks={self.ranks}, got {self.shards}")
        else:
            if self.simulate.slowdown and len(self.simulate.slowdown) != self.replicas:
                problems.add("simulate.slowdown", f"needs one factor per replica ({self.replicas}), "
                             f"got {len(self.simulate.slowdown)}")
            for name in ("random_slow_replica", "spike_replica"):
                if getattr(self.simulate, name) >= self.replicas:
                    problems.add(f"simulate.{name}", f"must be -1 or a replica in [0, {self.replicas - 1}], "
                                 f"got {getattr(self.simulate, name)}")
        if self.sync.overlap_steps and (self.mode != "edit" or not self.sync.layerwise):
            problems.add("sync.overlap_steps", f"needs mode edit with sync.layerwise on (A-EDiT agrees on a "
                         f"sync before it starts), got mode {self.mode} (layerwise={self.sync.layerwise})")
        if self.sync.fragments > 1 and (self.mode != "edit" or not self.sync.layerwise):
            problems.add("sync.fragments", f"needs mode edit with sync.layerwise on (A-EDiT and the blocking "
                         f"modes sync every block at once), got mode {self.mode} (layerwise={self.sync.layerwise})")
        elif self.sync.fragments > 1:
            problems.collect(check_fragments_fit, self.model, self.sync.fragments)
        if self.full_shard and self.shards < 2:
            problems.add("full_shard", f"needs shards >= 2 (ranks per replica to shard over), got shards={self.shards}")
        if self.full_shard and self.inner.fused:
            problems.add("inner.fused", "must be null or false with full_shard (torch's fused AdamW does not run "
                         "over FSDP's DTensor shards)")
        problems.raise_if_any()

    # -- what each mode means ------------------------------------------------------------------
    @property
    def uses_penalty(self) -> bool:
        return self.mode in ("edit", "aedit") and self.penalty.enabled

    @property
    def uses_layerwise(self) -> bool:
        return self.mode in ("edit", "aedit") and self.sync.layerwise

    @property
    def overlap_steps(self) -> int:
        """tau of the overlapped outer update (0 outside EDiT's layer-wise sync)."""
        return self.sync.overlap_steps if self.uses_layerwise else 0

    @property
    def fragments(self) -> int:
        """F of the staggered fragments (1 outside EDiT's layer-wise sync)."""
        return self.sync.fragments if self.mode == "edit" and self.sync.layerwise else 1

    @property
    def outer_lr(self) -> float:
        return 1.0 if self.mode == "post_local_sgd" else self.outer.lr

    @property
    def outer_momentum(self) -> float:
        return 0.0 if self.mode == "post_local_sgd" else self.outer.momentum
