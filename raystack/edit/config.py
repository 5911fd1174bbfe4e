"""The one config object of an EDiT job, with defaults that run on a laptop."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Optional

from raystack.config import ConfigError
from raystack.devices import Device

Mode = Literal["edit", "aedit", "diloco", "post_local_sgd", "sync"]
Compression = Literal["none", "fp16", "bf16", "int8"]     # codecs of raystack.comm.compress


@dataclass
class InnerConfig:
    """The inner optimizer each replica steps on its own data."""

    optimizer: Literal["adamw", "sgd"] = "adamw"
    lr: float = 2e-3
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    momentum: float = 0.0            # sgd only
    grad_clip: float = 1.0           # <= 0: no clipping
    lr_warmup_steps: int = 20        # linear learning-rate ramp
    lr_decay: Literal["none", "cosine"] = "none"   # after the ramp, over the run's steps
    lr_min_ratio: float = 0.1        # cosine: the last step's lr over lr

    def validate(self) -> None:
        if self.lr <= 0:
            raise ConfigError("lr", f"must be > 0, got {self.lr}")
        if self.lr_warmup_steps < 0:
            raise ConfigError("lr_warmup_steps", f"must be >= 0, got {self.lr_warmup_steps}")
        if not 0 <= self.lr_min_ratio <= 1:
            raise ConfigError("lr_min_ratio", f"must be in [0, 1], got {self.lr_min_ratio}")

    def lr_at(self, step: int, total_steps: int) -> float:
        """The inner learning rate of 0-based ``step`` in a run of ``total_steps``: a linear ramp
        over ``lr_warmup_steps``, then constant or a cosine decay to ``lr_min_ratio`` x lr."""
        ramp = min(1.0, (step + 1) / max(1, self.lr_warmup_steps))
        if self.lr_decay == "none" or step < self.lr_warmup_steps:
            return self.lr * ramp
        span = max(1, total_steps - self.lr_warmup_steps)
        progress = min(1.0, (step - self.lr_warmup_steps) / span)
        return self.lr * (self.lr_min_ratio + (1 - self.lr_min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


@dataclass
class SyncConfig:
    """When and how replicas synchronise."""

    h: int = 16                      # EDiT / DiLoCo / Post Local SGD: inner steps between syncs
    t_seconds: float = 2.0           # A-EDiT: wall-clock seconds between syncs
    min_steps: int = 2               # A-EDiT: skip a sync unless every replica ran this many steps
    warmup_steps: int = 10           # first steps run as synchronous data parallel
    layerwise: bool = True           # EDiT/A-EDiT: sync each block in its own forward pre-hook
    prefetch: bool = True            # launch block l+1's collective while block l computes
    state_on_cpu: bool = False       # keep θ_sync and the outer momentum on CPU
    overlap_steps: int = 0           # τ: inner steps a block's outer update runs behind its sync
                                     # (EDiT; 0: applied in the next forward, the paper's method)
    compression: Compression = "none"    # pseudo-gradients on the wire: fp16, bf16 or int8
    error_feedback: bool = True      # carry what compression lost into the next sync

    def validate(self) -> None:
        if self.h < 1:
            raise ConfigError("h", f"must be >= 1, got {self.h}")
        if not 0 <= self.overlap_steps < self.h:
            raise ConfigError("overlap_steps", f"must be in [0, h={self.h}), got {self.overlap_steps}")
        if self.t_seconds <= 0:
            raise ConfigError("t_seconds", f"must be > 0, got {self.t_seconds}")
        if self.min_steps < 1:
            raise ConfigError("min_steps", f"must be >= 1, got {self.min_steps}")
        if self.warmup_steps < 0:
            raise ConfigError("warmup_steps", f"must be >= 0, got {self.warmup_steps}")


@dataclass
class OuterConfig:
    """The outer optimizer on θ_sync (Nesterov SGD, DiLoCo's choice)."""

    lr: float = 0.7
    momentum: float = 0.8
    nesterov: bool = True

    def validate(self) -> None:
        if self.lr <= 0:
            raise ConfigError("lr", f"must be > 0, got {self.lr}")
        if not 0 <= self.momentum < 1:
            raise ConfigError("momentum", f"must be in [0, 1), got {self.momentum}")


@dataclass
class PenaltyConfig:
    """The pseudo-gradient penalty (EDiT and A-EDiT only)."""

    enabled: bool = True
    ewma_alpha: float = 0.02
    z_threshold: float = 3.0
    warmup_syncs: int = 5            # syncs before outliers can be flagged (the reference: 120)
    temperature: float = 1.0         # softmax(−ĝ/τ) on norms normalised by their mean
    clip: float = 5.0                # max norm of the averaged pseudo-gradient per block; <= 0 off

    def validate(self) -> None:
        if not 0 < self.ewma_alpha <= 1:
            raise ConfigError("ewma_alpha", f"must be in (0, 1], got {self.ewma_alpha}")
        if self.temperature <= 0:
            raise ConfigError("temperature", f"must be > 0, got {self.temperature}")
        if self.warmup_syncs < 0:
            raise ConfigError("warmup_syncs", f"must be >= 0, got {self.warmup_syncs}")


@dataclass
class DataConfig:
    """Byte-level text: the standard-library corpus by default, or local files."""

    paths: list[str] = field(default_factory=list)   # empty: the Python standard library sources
    text_field: str = "text"
    max_bytes: int = 2_000_000
    val_fraction: float = 0.05
    batch_size: int = 8              # sequences per rank per step
    seq_len: int = 128
    eval_batches: int = 4

    def validate(self) -> None:
        for name in ("max_bytes", "batch_size", "seq_len", "eval_batches"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}", f"must be >= 1, got {getattr(self, name)}")
        for i, p in enumerate(self.paths):
            if not Path(p).exists():
                raise ConfigError(f"paths[{i}]", f"no such file or directory: {p}")


@dataclass
class SimulateConfig:
    """Simulated conditions for experiments (named as simulated in every report)."""

    latency_s: float = 0.0           # network model: per-collective latency
    bandwidth_bytes_per_s: float = 0.0   # network model: 0 means unlimited
    slowdown: list[float] = field(default_factory=list)  # per replica: compute time multiplier
    random_slow_prob: float = 0.0    # replica `random_slow_replica` gets random slow steps
    random_slow_factor: float = 3.0
    random_slow_replica: int = -1
    spike_replica: int = -1          # loss-spike injection: shuffled tokens and lr × spike_lr_mult
    spike_start: int = 0
    spike_steps: int = 0
    spike_lr_mult: float = 10.0


@dataclass
class RunConfig:
    """Where results go and how the run survives failures."""

    out_dir: str = "runs/edit"
    checkpoint_every: int = 5        # syncs between checkpoints (0: only at the end)
    eval_every: int = 5              # syncs between validation losses (0: only at the end)
    resume: bool = False             # continue from out_dir/checkpoint if it exists
    seed: int = 0
    max_replacements: int = 3        # replica actors replaced after a failure before giving up
    comm_timeout_s: float = 60.0
    cpus_per_rank: float = 1.0
    threads_per_rank: int = 1
    device: Device = "auto"          # auto: GPUs when the cluster has any
    segments_per_call: int = 8       # segments (syncs) a rank runs per driver call, at most

    def validate(self) -> None:
        if self.segments_per_call < 1:
            raise ConfigError("segments_per_call", f"must be >= 1, got {self.segments_per_call}")


@dataclass
class EDiTConfig:
    """An EDiT pretraining job: ``ranks`` processes in ``ranks // shards`` replicas."""

    model: str = "tiny-1m"
    mode: Mode = "edit"
    ranks: int = 2                   # total ranks (processes)
    shards: int = 1                  # S: ranks per replica, each owning 1/S of every block
    full_shard: bool = False         # shard parameters, gradients and AdamW state too (FSDP2)
    steps: int = 200                 # inner steps per replica (A-EDiT: the mean over replicas)
    inner: InnerConfig = field(default_factory=InnerConfig)
    sync: SyncConfig = field(default_factory=SyncConfig)
    outer: OuterConfig = field(default_factory=OuterConfig)
    penalty: PenaltyConfig = field(default_factory=PenaltyConfig)
    data: DataConfig = field(default_factory=DataConfig)
    simulate: SimulateConfig = field(default_factory=SimulateConfig)
    run: RunConfig = field(default_factory=RunConfig)

    @property
    def replicas(self) -> int:
        return self.ranks // self.shards

    def validate(self) -> None:
        from raystack.models import MODEL_NAMES
        if self.model not in MODEL_NAMES and not (Path(self.model) / "config.json").is_file():
            raise ConfigError("model", f"unknown model {self.model!r}; expected one of "
                              f"{list(MODEL_NAMES)} or a checkpoint directory")
        if self.ranks < 1:
            raise ConfigError("ranks", f"must be >= 1, got {self.ranks}")
        if self.shards < 1 or self.ranks % self.shards:
            raise ConfigError("shards", f"must divide ranks={self.ranks}, got {self.shards}")
        if self.steps < 1:
            raise ConfigError("steps", f"must be >= 1, got {self.steps}")
        if self.simulate.slowdown and len(self.simulate.slowdown) != self.replicas:
            raise ConfigError("simulate.slowdown", f"needs one factor per replica ({self.replicas}), "
                              f"got {len(self.simulate.slowdown)}")
        if any(f < 1 for f in self.simulate.slowdown):
            raise ConfigError("simulate.slowdown", "factors must be >= 1")
        if self.sync.overlap_steps and not self.uses_layerwise:
            raise ConfigError("sync.overlap_steps", f"needs mode edit with sync.layerwise on, got mode "
                              f"{self.mode} (layerwise={self.sync.layerwise})")
        if self.sync.overlap_steps and self.mode == "aedit":
            raise ConfigError("sync.overlap_steps", "needs mode edit (A-EDiT agrees on each sync before "
                              "it starts), got mode aedit")
        if self.full_shard and self.shards < 2:
            raise ConfigError("full_shard", f"needs shards >= 2 (ranks per replica to shard over), "
                              f"got shards={self.shards}")

    # -- what each mode means ------------------------------------------------------------------
    @property
    def uses_penalty(self) -> bool:
        return self.mode in ("edit", "aedit") and self.penalty.enabled

    @property
    def uses_layerwise(self) -> bool:
        return self.mode in ("edit", "aedit") and self.sync.layerwise

    @property
    def overlap_steps(self) -> int:
        """τ of the overlapped outer update (0 outside EDiT's layer-wise sync)."""
        return self.sync.overlap_steps if self.uses_layerwise else 0

    @property
    def outer_lr(self) -> float:
        return 1.0 if self.mode == "post_local_sgd" else self.outer.lr

    @property
    def outer_momentum(self) -> float:
        return 0.0 if self.mode == "post_local_sgd" else self.outer.momentum
