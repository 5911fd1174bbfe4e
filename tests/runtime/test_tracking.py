"""Experiment tracking: the controller feeds every step's metrics to the loggers a config
names; TensorBoard event files are read back; a logger that is missing fails up front."""
from __future__ import annotations

import importlib.util

import pytest

from raystack.config import ConfigError, load_config
from raystack.runtime import ActorGroup, Controller, FailurePolicy, Result, history_table
from raystack.runtime.tracking import make_loggers
from tests.runtime.fakes import FakeSpawner
from tests.runtime.tb_events import read_scalars
from tests.runtime.test_kernel import ToyPart


def test_tensorboard_gets_every_step_and_the_final_metrics(tmp_path):
    loggers = make_loggers(["tensorboard"], tmp_path, "toy", {"lr": 0.1})
    ctl = Controller(ToyPart(ActorGroup("toy", FakeSpawner())), FailurePolicy(1), callbacks=loggers)
    ctl.run()
    ctl.end(Result("toy", {"val_loss": 0.25}, history_table([]), None, {}, {}))
    scalars = read_scalars(tmp_path / "tensorboard")
    assert [s for s, _ in scalars["loss"]] == list(range(1, 9))
    assert scalars["loss"][1][1] == pytest.approx(0.5)
    assert scalars["final/val_loss"] == [(8, 0.25)]


def test_loggers_are_checked_with_the_config(monkeypatch):
    from raystack.edit.config import EDiTConfig
    from raystack.elastic.config import ElasticConfig
    from raystack.mlora.config import MLoRAConfig

    for cls in (EDiTConfig, MLoRAConfig, ElasticConfig):
        assert load_config(cls, {}).loggers == ["tensorboard"]
        with pytest.raises(ConfigError, match=r"loggers\[0\]: unknown logger 'tensorbord'"):
            load_config(cls, {"loggers": ["tensorbord"]})
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a))
    with pytest.raises(ConfigError, match=r"loggers\[1\]: mlflow needs the package 'mlflow'.*pip install mlflow"):
        load_config(EDiTConfig, {"loggers": ["tensorboard", "mlflow"]})
    assert load_config(EDiTConfig, {"loggers": []}).loggers == []


def test_history_table_takes_rows_with_different_keys():
    t = history_table([{"window": 0, "loss.a": 1.0}, {"window": 1, "loss.b": 2.0}])
    assert t.column_names == ["window", "loss.a", "loss.b"]
    assert t.column("loss.a").to_pylist() == [1.0, None]
    r = Result("mlora", {"tokens": 3.0}, t, None, {}, {})
    assert list(r.to_pandas()["window"]) == [0, 1]
