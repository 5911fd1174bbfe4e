"""One way to run each part from Python: the part registry, validation at the entry, and the
layering that keeps ``raystack/`` free of imports of the actors and apps."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from raystack.config import ConfigError
from raystack.runtime import registry
from raystack.runtime.run import Run

ROOT = Path(__file__).resolve().parents[2]
BACK_EDGE = re.compile(r"^\s*(from|import)\s+(raystack\.)?(actors|apps)\b", re.M)


def test_nothing_under_raystack_imports_the_actors_or_the_apps():
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "raystack").rglob("*.py")
                 if BACK_EDGE.search(p.read_text())]
    assert offenders == []


def test_each_parts_driver_and_config_resolve_by_dotted_name():
    from raystack.edit.config import EDiTConfig
    from raystack.elastic.config import ElasticConfig
    from raystack.mlora.config import MLoRAConfig

    for part, cfg in (("edit", EDiTConfig), ("mlora", MLoRAConfig), ("elastic", ElasticConfig)):
        driver = registry.driver_class(part)
        assert driver.__module__.startswith("raystack.actors.") and driver.part == part
        assert registry.config_class(part) is cfg
    with pytest.raises(KeyError, match="no part named 'dlrm'"):
        registry.driver_class("dlrm")
    with pytest.raises(ValueError, match="package.module:Attr"):
        registry.register("mine", "mine.driver.Driver", "mine.config:Config")


@pytest.fixture
def never_started(monkeypatch):
    def start(self):
        raise AssertionError(f"{self.part}: the run started with an invalid config")
    monkeypatch.setattr(Run, "start", start)


def test_an_invalid_config_fails_at_every_entry_before_anything_starts(never_started, tmp_path):
    import raystack.edit
    import raystack.elastic
    import raystack.mlora
    from raystack.edit.config import EDiTConfig

    with pytest.raises(ConfigError, match=r"^mode: expected one of 'edit', 'aedit'"):
        raystack.edit.pretrain(EDiTConfig(mode="edti"))        # an object built in Python
    with pytest.raises(ConfigError, match=r"^pipeline.stages: must be >= 1"):
        raystack.mlora.finetune({"pipeline": {"stages": 0}})   # a dict
    bad = tmp_path / "elastic.yaml"
    bad.write_text("resources: {max_workers: many}\n")
    with pytest.raises(ConfigError, match=r"^resources.max_workers: expected int"):
        raystack.elastic.train(str(bad))                        # a YAML path
    with pytest.raises(ConfigError, match="config file not found"):
        raystack.elastic.train(tmp_path / "missing.yaml")
    with pytest.raises(TypeError, match="expected a EDiTConfig, a dict or a YAML path, got int"):
        raystack.edit.pretrain(3)
