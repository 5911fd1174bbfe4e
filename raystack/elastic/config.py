"""The elastic DLRM job's configuration (one dataclass tree, validated up front)."""
from __future__ import annotations

from dataclasses import dataclass, field

from raystack.config import ConfigError
from raystack.runtime.tracking import check_loggers


@dataclass
class DataConfig:
    path: str | None = None  # Parquet files or a directory; None: generate Criteo-like data
    generate_rows: int = 120_000
    generate_files: int = 4  # the last file is held out for AUC
    vocab: int = 1000
    zipf_s: float = 1.1
    out_dir: str = "runs/elastic/data"
    rows_per_shard: int = 4096
    eval_rows: int = 20_000

    def validate(self) -> None:
        if self.generate_rows < 1000:
            raise ConfigError("generate_rows", f"must be >= 1000, got {self.generate_rows}")
        if self.generate_files < 2:
            raise ConfigError("generate_files", "must be >= 2 (the last file is held out)")
        if self.rows_per_shard < 1:
            raise ConfigError("rows_per_shard", f"must be >= 1, got {self.rows_per_shard}")
        if self.vocab < 2:
            raise ConfigError("vocab", f"must be >= 2, got {self.vocab}")


@dataclass
class ModelConfig:
    dim: int = 16
    bottom: list[int] = field(default_factory=lambda: [64])
    top: list[int] = field(default_factory=lambda: [64])
    batch_size: int = 512
    lr_dense: float = 0.01
    lr_sparse: float = 0.05
    seed: int = 0

    def validate(self) -> None:
        if self.batch_size < 1:
            raise ConfigError("batch_size", f"must be >= 1, got {self.batch_size}")
        if self.dim < 1:
            raise ConfigError("dim", f"must be >= 1, got {self.dim}")
        if self.lr_dense <= 0 or self.lr_sparse <= 0:
            raise ConfigError("lr_dense", "learning rates must be > 0")


@dataclass
class ResourceConfig:
    """The budget the planner sizes the job within (not a worker count)."""

    max_cpus: float = 4.0
    max_mem_gb: float = 16.0
    max_workers: int = 4
    max_ps: int = 2
    cpu_choices: list[float] = field(default_factory=lambda: [1.0])
    ray_cpus_per_cpu: float = 0.25  # Ray logical CPUs reserved per planned CPU (2-core laptop)
    reserve_memory: bool = False  # put memory into the placement-group bundles
    sim_nodes: int = 0  # > 0: pin units round-robin to custom resources sim_node_<k>
    autoscale: bool = True  # False: keep the initial config (fixed-size runs)
    initial_workers: int = 2
    initial_ps: int = 1

    def validate(self) -> None:
        if self.max_cpus <= 0:
            raise ConfigError("max_cpus", f"must be > 0, got {self.max_cpus}")
        if self.max_workers < 1 or self.max_ps < 1:
            raise ConfigError("max_workers", "max_workers and max_ps must be >= 1")
        if not 1 <= self.initial_workers <= self.max_workers:
            raise ConfigError("initial_workers", f"must be in [1, max_workers], got "
                              f"{self.initial_workers}")
        if not 1 <= self.initial_ps <= self.max_ps:
            raise ConfigError("initial_ps", f"must be in [1, max_ps], got {self.initial_ps}")
        if self.ray_cpus_per_cpu <= 0:
            raise ConfigError("ray_cpus_per_cpu", "must be > 0")


@dataclass
class FaultConfig:
    checkpoint_every_s: float = 2.0
    straggler_factor: float = 2.0
    straggler_min_rows: int = 4096
    max_shard_failures: int = 3
    max_relaunches: int = 5  # a unit relaunched this often in a row, committing nothing, fails the job
    slow_workers: dict[str, float] = field(default_factory=dict)  # unit id -> slowdown (demos)

    def validate(self) -> None:
        if self.checkpoint_every_s <= 0:
            raise ConfigError("checkpoint_every_s", "must be > 0")
        if self.straggler_factor <= 1:
            raise ConfigError("straggler_factor", f"must be > 1, got {self.straggler_factor}")
        if self.max_shard_failures < 1:
            raise ConfigError("max_shard_failures", "must be >= 1")
        if self.max_relaunches < 1:
            raise ConfigError("max_relaunches", f"must be >= 1, got {self.max_relaunches}")


@dataclass
class ElasticConfig:
    name: str = "elastic"
    epochs: int = 1
    work_dir: str = "runs/elastic"
    poll_s: float = 0.5
    measure_s: float = 6.0
    settle_s: float = 3.0
    timeout_s: float = 900.0
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    resources: ResourceConfig = field(default_factory=ResourceConfig)
    faults: FaultConfig = field(default_factory=FaultConfig)
    # experiment tracking: tensorboard (under work_dir/name/tensorboard), mlflow, wandb
    loggers: list[str] = field(default_factory=lambda: ["tensorboard"])

    def validate(self) -> None:
        check_loggers(self.loggers)
        if self.epochs < 1:
            raise ConfigError("epochs", f"must be >= 1, got {self.epochs}")
        if not self.name.replace("-", "").replace("_", "").isalnum():
            raise ConfigError("name", f"letters, digits, - and _ only, got {self.name!r}")
