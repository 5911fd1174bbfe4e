"""Bad mLoRA configs fail up front, naming the field; the embedded default is valid."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from raystack.config import ConfigError
from raystack.mlora.config import load_mlora_config
from raystack.mlora.trainer import check_config

ROOT = Path(__file__).resolve().parents[2]


def test_default_config_is_valid_and_example_yaml_loads():
    cfg = load_mlora_config(None)
    check_config(cfg)
    assert len(cfg.tasks) == 4 and {a.type for a in cfg.adapters} == {"lora", "dora"}
    check_config(load_mlora_config(str(ROOT / "configs" / "mlora.yaml")))


@pytest.mark.parametrize("override,field", [
    ({"adapters": [{"name": "x", "type": "ia3"}]}, "adapters[0].type"),
    ({"adapters": [{"name": "x", "r": 0}], "tasks": [{"adapter": "x", "dataset": "reverse"}]}, "adapters[0].r"),
    ({"datasets": [{"name": "d", "path": "/nonexistent/data.jsonl"}]}, "datasets[0].path"),
    ({"tasks": [{"adapter": "nope", "dataset": "reverse"}]}, "tasks[0].adapter"),
    ({"tasks": [{"adapter": "reverse_lora", "dataset": "reverse", "batch_size": 4, "micro_batch_size": 8}]},
     "tasks[0].micro_batch_size"),
    ({"pipeline": {"stages": 0}}, "pipeline.stages"),
    ({"adapters": [{"name": "x", "bogus": 1}]}, "adapters[0].bogus"),
])
def test_bad_fields_are_named(override, field):
    with pytest.raises(ConfigError) as err:
        load_mlora_config(None, override)
    assert err.value.field == field


def test_top_level_steps_overrides_every_task():
    cfg = load_mlora_config({"steps": 7})
    assert {t.max_steps for t in cfg.tasks} == {7}
    with pytest.raises(ConfigError) as err:
        load_mlora_config({"steps": 0})
    assert err.value.field == "steps"


def test_target_module_missing_from_base_is_named():
    cfg = load_mlora_config(None, {"adapters": [{"name": "x", "target_modules": ["q_proj", "c_attn"]}],
                                   "tasks": [{"adapter": "x", "dataset": "reverse"}]})
    with pytest.raises(ConfigError) as err:
        check_config(cfg)
    assert err.value.field == "adapters[0].target_modules" and "c_attn" in str(err.value)


def test_cli_rejects_bad_yaml_before_any_actor(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("adapters:\n  - {name: x, r: -1}\ntasks:\n  - {adapter: x, dataset: reverse}\n")
    proc = subprocess.run([sys.executable, "-m", "raystack.apps.cli", "mlora", "--config", str(bad)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "adapters[0].r" in proc.stderr and "Started a local Ray" not in proc.stderr
