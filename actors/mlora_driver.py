"""The mLoRA part's driver behind ``raystack.mlora.finetune(cfg)``: a LoRAPipeline plus experiment
tracking, stepped by the runtime and turned into the run's :class:`Result`."""
from __future__ import annotations

from typing import Sequence

from raystack.actors.mlora import LoRAPipeline
from raystack.config import config_to_dict
from raystack.mlora.config import MLoRAConfig
from raystack.runtime.controller import Controller, ControllerState, MetricsCallback
from raystack.runtime.result import Result, history_table
from raystack.runtime.tracking import make_loggers, tracking_artifacts


class MLoRADriver:
    """The mLoRA part behind ``raystack.mlora.finetune(cfg)``: one LoRAPipeline, experiment
    tracking, and the run's :class:`Result`."""

    part = "mlora"

    def __init__(self, cfg: MLoRAConfig, *, callbacks: Sequence[MetricsCallback] = (),
                 progress: bool = True) -> None:
        self.cfg = cfg
        self.pipeline = LoRAPipeline(cfg, progress=progress, callbacks=callbacks)
        self.run_dir = self.pipeline.run_dir
        self.pipeline.callbacks.extend(make_loggers(cfg.loggers, self.run_dir.tracking_dir(), self.part,
                                                    config_to_dict(cfg), run_name=self.run_dir.run_id))
        self.pipeline.begin()

    @property
    def controller(self) -> Controller:
        return self.pipeline.controller

    def step(self) -> ControllerState:
        return self.pipeline.step()

    def result(self) -> Result:
        run = self.pipeline.finish()
        store = self.run_dir.storage
        artifacts = {f"adapter.{n}": d for n, d in run.adapters.items()}
        artifacts.update(losses=store.write_json(run.losses, "losses.json"), run=store.uri)  # every step's loss
        if run.refused:  # jobs that can never fit a stage's memory budget, with the numbers
            artifacts["refused"] = store.write_json(run.refused, "refused.json")
        artifacts.update(tracking_artifacts(self.cfg.loggers, self.run_dir.tracking_dir()))
        return Result("mlora", run.summary(), history_table(run.history_rows()), store.path("adapters"),
                      artifacts, config_to_dict(self.cfg))

    def shutdown(self) -> None:
        self.pipeline.shutdown()
