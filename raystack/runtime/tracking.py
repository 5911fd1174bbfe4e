"""Experiment tracking: the ``loggers:`` field of every part's config.

One callback interface, the controller's :class:`~raystack.runtime.controller.MetricsCallback`
(``on_metrics(step, metrics)`` after each step, ``on_end(result)`` once), with three
implementations: TensorBoard event files under the run's output directory (the default,
written with tensorboardX, which Ray Tune already depends on), MLflow and Weights & Biases
when those packages are installed. Asking for one that is not installed is a ConfigError
naming the package, before anything starts.
"""
from __future__ import annotations

import importlib.util
import logging
import math
from pathlib import Path
from typing import Mapping, Sequence

from raystack.config import ConfigError

logger = logging.getLogger(__name__)

TENSORBOARD_DIR = "tensorboard"
# logger name -> the package it needs
LOGGERS = {"tensorboard": "tensorboardX", "mlflow": "mlflow", "wandb": "wandb"}


def loggers_option(where: str):
    """The ``loggers:`` field of a part's config (TensorBoard by default, under ``where``)."""
    from raystack.config import option
    return option(doc=f"experiment tracking: tensorboard (under {where}/tensorboard), mlflow, wandb",
                  factory=lambda: ["tensorboard"])


def check_loggers(names: Sequence[str], field: str = "loggers") -> None:
    """Fail (ConfigError) on an unknown logger or one whose package is missing."""
    for i, name in enumerate(names):
        if name not in LOGGERS:
            raise ConfigError(f"{field}[{i}]", f"unknown logger {name!r}; expected one of {list(LOGGERS)}")
        if importlib.util.find_spec(LOGGERS[name]) is None:
            raise ConfigError(f"{field}[{i}]", f"{name} needs the package {LOGGERS[name]!r}, which is not "
                              f"installed: pip install {LOGGERS[name]} (or remove {name!r} from {field})")


def _scalars(metrics: Mapping[str, float]) -> dict[str, float]:
    out = {}
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if math.isfinite(float(v)):
            out[k] = float(v)
    return out


class TensorBoardLogger:
    """Scalars into TensorBoard event files in ``log_dir``; the final metrics as ``final/*``."""

    def __init__(self, log_dir: str | Path, config: Mapping | None = None) -> None:
        from tensorboardX import SummaryWriter

        self.log_dir = str(log_dir)
        self.writer = SummaryWriter(self.log_dir)
        if config:
            import json
            self.writer.add_text("config", "```\n" + json.dumps(config, indent=1, default=str) + "\n```")
        self._last = 0

    def on_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        for k, v in _scalars(metrics).items():
            self.writer.add_scalar(k, v, step)
        self._last = max(self._last, step)
        self.writer.flush()

    def on_end(self, result) -> None:
        for k, v in _scalars(result.metrics).items():
            self.writer.add_scalar(f"final/{k}", v, self._last)
        self.writer.close()


class MLflowLogger:
    """Metrics and params into the active MLflow tracking URI (an experiment per part)."""

    def __init__(self, part: str, run_name: str, config: Mapping | None = None) -> None:
        import mlflow

        self.mlflow = mlflow
        mlflow.set_experiment(f"raystack-{part}")
        self.run = mlflow.start_run(run_name=run_name)
        if config:
            flat = _flatten(config)
            mlflow.log_params({k: str(v)[:250] for k, v in list(flat.items())[:100]})

    def on_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        self.mlflow.log_metrics(_scalars(metrics), step=step)

    def on_end(self, result) -> None:
        self.mlflow.log_metrics({f"final/{k}": v for k, v in _scalars(result.metrics).items()})
        self.mlflow.end_run()


class WandbLogger:
    """Metrics and config into a Weights & Biases run (project ``raystack-<part>``)."""

    def __init__(self, part: str, run_name: str, config: Mapping | None = None) -> None:
        import wandb

        self.run = wandb.init(project=f"raystack-{part}", name=run_name, config=dict(config or {}),
                              reinit=True)

    def on_metrics(self, step: int, metrics: Mapping[str, float]) -> None:
        self.run.log(_scalars(metrics), step=step)

    def on_end(self, result) -> None:
        self.run.summary.update({f"final/{k}": v for k, v in _scalars(result.metrics).items()})
        self.run.finish()


def _flatten(d: Mapping, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.update(_flatten(v, key))
        else:
            out[key] = v
    return out


def tracking_artifacts(names: Sequence[str], out_dir: str | Path) -> dict[str, str]:
    """A run's tracking files on disk, for its Result's artifacts (``{"tensorboard": dir}`` when
    ``names`` logs there; MLflow and W&B keep theirs in their own stores)."""
    return {"tensorboard": str(Path(out_dir) / TENSORBOARD_DIR)} if "tensorboard" in names else {}


def make_loggers(names: Sequence[str], out_dir: str | Path, part: str, config: Mapping | None = None,
                 run_name: str | None = None) -> list:
    """The callbacks for a run whose config says ``loggers: names``."""
    check_loggers(names)
    run_name = run_name or Path(out_dir).name or part
    out = []
    for name in dict.fromkeys(names):
        if name == "tensorboard":
            out.append(TensorBoardLogger(Path(out_dir) / TENSORBOARD_DIR, config))
        elif name == "mlflow":
            out.append(MLflowLogger(part, run_name, config))
        elif name == "wandb":
            out.append(WandbLogger(part, run_name, config))
    logger.info("%s: tracking with %s", part, ", ".join(names) or "nothing")
    return out
