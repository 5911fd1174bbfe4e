"""The EDiT part's driver behind ``raystack.edit.pretrain(cfg)``: an EDiTGroup plus experiment
tracking, stepped by the runtime and turned into the run's :class:`Result`."""
from __future__ import annotations

from typing import Sequence

from raystack.actors.edit import EDiTGroup
from raystack.config import config_to_dict
from raystack.edit.config import EDiTConfig
from raystack.runtime.controller import Controller, ControllerState, MetricsCallback
from raystack.runtime.result import Result, history_table
from raystack.runtime.tracking import make_loggers, tracking_artifacts


class EDiTDriver:
    """The EDiT part behind ``raystack.edit.pretrain(cfg)``: one EDiTGroup, experiment
    tracking, and the run's :class:`Result`."""

    part = "edit"

    def __init__(self, cfg: EDiTConfig, *, callbacks: Sequence[MetricsCallback] = (),
                 progress: bool = True) -> None:
        self.cfg, self.progress = cfg, progress
        self.group = EDiTGroup(cfg, callbacks=callbacks)
        self.run_dir = self.group.run_dir
        self.group.callbacks.extend(make_loggers(cfg.loggers, self.run_dir.tracking_dir(), self.part,
                                                 config_to_dict(cfg), run_name=self.run_dir.run_id))

    @property
    def controller(self) -> Controller | None:
        return self.group.controller

    def step(self) -> ControllerState:
        if self.group.controller is None:
            self.group.begin(self.progress)
        return self.group.step()

    def result(self) -> Result:
        s = self.group.finish()
        metrics = {k: float(getattr(s, k)) for k in ("steps", "tokens", "seconds", "tokens_per_s", "train_loss",
                                                      "val_loss", "sync_seconds", "dp_seconds", "outliers",
                                                      "replacements", "extra_state_bytes")}
        metrics.update({f"wire_bytes_{k}": float(v) for k, v in s.wire_bytes.items()})    # per rank, sent
        metrics.update({f"memory_{k}": float(v) for k, v in s.memory.items()})             # per rank, held
        artifacts = {"model": s.model_dir, "checkpoint": self.group.checkpoint_dir,
                     "run": self.run_dir.storage.uri}
        artifacts.update(tracking_artifacts(self.cfg.loggers, self.run_dir.tracking_dir()))
        rows = [{**row, "val_loss": row.get("val_loss")} for row in s.history]
        return Result("edit", metrics, history_table(rows), s.model_dir, artifacts, config_to_dict(self.cfg))

    def shutdown(self) -> None:
        self.group.shutdown()
