"""The elastic DLRM job's configuration (one dataclass tree, checked when it is made)."""
from __future__ import annotations

from dataclasses import dataclass

from raystack.config import ConfigBase, ConfigError, Problems, option
from raystack.runtime.tracking import check_loggers

MAX_UNITS = 1024             # workers or parameter servers of one job
MAX_ROWS = 1_000_000_000     # rows of generated data, a shard, an evaluation
MAX_SEED = 2**32 - 1
DAY_S = 86_400.0


@dataclass
class DataConfig(ConfigBase):
    """Criteo-schema Parquet: the user's files, or generated Criteo-like data."""

    path: str | None = option(None, "Parquet files or a directory in the Criteo schema (sample_id, label, I1..I13, C1..C26); null: generate")
    generate_rows: int = option(120_000, "rows of generated data", ge=1000, le=MAX_ROWS)
    generate_files: int = option(4, "generated files (the last one is held out for AUC)", ge=2, le=10_000)
    vocab: int = option(1000, "ids per categorical feature (rows of each embedding table)", ge=2, le=100_000_000)
    zipf_s: float = option(1.1, "Zipf exponent of the generated ids", ge=0, le=10)
    out_dir: str = option("runs/elastic/data", "where generated data is written (reused when its digests match)")
    rows_per_shard: int = option(4096, "rows per data shard (the unit of exactly-once bookkeeping)", ge=1, le=MAX_ROWS)
    eval_rows: int = option(20_000, "held-out rows scored for AUC", ge=1, le=MAX_ROWS)

    def validate(self) -> None:
        problems = Problems()
        if not self.out_dir.strip():
            problems.add("out_dir", "must name a directory")
        if self.path is not None and not self.path.strip():
            problems.add("path", "must name Parquet files or a directory (or be null to generate data)")
        problems.raise_if_any()


@dataclass
class ModelConfig(ConfigBase):
    """The DLRM: 26 embedding tables, bottom and top MLPs."""

    dim: int = option(16, "embedding dimension", ge=1, le=4096)
    bottom: list[int] = option(doc="bottom MLP widths", factory=lambda: [64], ge=1, le=65_536)
    top: list[int] = option(doc="top MLP widths", factory=lambda: [64], ge=1, le=65_536)
    batch_size: int = option(512, "rows per worker step", ge=1, le=1_048_576)
    lr_dense: float = option(0.01, "Adagrad learning rate of the MLPs", gt=0, le=10)
    lr_sparse: float = option(0.05, "Adagrad learning rate of the embedding rows", gt=0, le=10)
    seed: int = option(0, "initialisation and generated-data seed", ge=0, le=MAX_SEED)


@dataclass
class ResourceConfig(ConfigBase):
    """The budget the planner sizes the job within (not a worker count)."""

    max_cpus: float = option(4.0, "CPUs the job may use in all (workers + parameter servers)", gt=0, le=1e6)
    max_mem_gb: float = option(16.0, "memory the job may use in all (GB)", gt=0, le=1e6)
    max_workers: int = option(4, "workers, at most", ge=1, le=MAX_UNITS)
    max_ps: int = option(2, "parameter servers, at most", ge=1, le=MAX_UNITS)
    cpu_choices: list[float] = option(doc="CPUs a worker or PS may get", factory=lambda: [1.0], gt=0, le=1024)
    ray_cpus_per_cpu: float = option(0.25, "Ray logical CPUs reserved per planned CPU (0.25 for a 2-core laptop, 1.0 on a real cluster)", gt=0, le=64)
    reserve_memory: bool = option(False, "put memory into the placement-group bundles")
    sim_nodes: int = option(0, "> 0: pin units round-robin to custom resources sim_node_<k> (the CLI sets 3 on an embedded cluster)", ge=0, le=MAX_UNITS)
    autoscale: bool = option(True, "false: keep the initial config (fixed-size runs)")
    initial_workers: int = option(2, "workers of the first plan", ge=1, le=MAX_UNITS)
    initial_ps: int = option(1, "parameter servers of the first plan", ge=1, le=MAX_UNITS)

    def validate(self) -> None:
        problems = Problems()
        if not self.cpu_choices:
            problems.add("cpu_choices", "must list at least one CPU count")
        if self.initial_workers > self.max_workers:
            problems.add("initial_workers", f"must be <= max_workers ({self.max_workers}), got {self.initial_workers}")
        if self.initial_ps > self.max_ps:
            problems.add("initial_ps", f"must be <= max_ps ({self.max_ps}), got {self.initial_ps}")
        problems.raise_if_any()


@dataclass
class FaultConfig(ConfigBase):
    """Checkpoints, stragglers and how many failures the job survives."""

    checkpoint_every_s: float = option(2.0, "seconds between parameter-server flash checkpoints", gt=0, le=DAY_S)
    straggler_factor: float = option(2.0, "straggler: a worker below the median rate / this factor (after straggler_min_rows rows)",
                                     gt=1, le=1000)
    straggler_min_rows: int = option(4096, "rows a worker trains before it can be called a straggler", ge=1, le=MAX_ROWS)
    max_shard_failures: int = option(3, "failures of one shard before the job stops, naming the file", ge=1, le=1000)
    max_relaunches: int = option(5, "relaunches of a unit in a row without its worker committing a batch before the job stops",
                                 ge=1, le=1000)
    slow_workers: dict[str, float] = option(doc="unit id -> simulated slowdown (demos)", factory=dict, ge=1, le=1000)


@dataclass
class ElasticConfig(ConfigBase):
    """An elastic DLRM job: data, model, resource budget, fault handling."""

    name: str = option("elastic", "job name (letters, digits, - and _): actor, placement-group and state names")
    epochs: int = option(1, "passes over the training data", ge=1, le=10_000)
    work_dir: str = option("runs/elastic", "shard state and parameter-server checkpoints go under work_dir/name")
    poll_s: float = option(0.5, "seconds between controller steps", gt=0, le=3600)
    measure_s: float = option(6.0, "seconds a configuration is measured before the planner judges it", gt=0, le=DAY_S)
    settle_s: float = option(3.0, "seconds after a change before measuring", ge=0, le=DAY_S)
    timeout_s: float = option(900.0, "the job fails after this many seconds", gt=0, le=30 * DAY_S)
    data: DataConfig = option(doc="training data", factory=DataConfig)
    model: ModelConfig = option(doc="model", factory=ModelConfig)
    resources: ResourceConfig = option(doc="resource budget", factory=ResourceConfig)
    faults: FaultConfig = option(doc="fault handling", factory=FaultConfig)
    loggers: list[str] = option(doc="experiment tracking: tensorboard (under work_dir/name/tensorboard), mlflow, wandb",
                                factory=lambda: ["tensorboard"])

    def validate(self) -> None:
        problems = Problems()
        try:
            check_loggers(self.loggers)
        except ConfigError as exc:
            problems.add_error(exc)
        if not self.name or not self.name.replace("-", "").replace("_", "").isalnum():
            problems.add("name", f"letters, digits, - and _ only, got {self.name!r}")
        if not self.work_dir.strip():
            problems.add("work_dir", "must name a directory")
        problems.raise_if_any()
