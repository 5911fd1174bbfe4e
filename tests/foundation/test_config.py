from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Optional

import pytest

from raystack.config import ConfigError, load_config, save_config


@dataclass
class Sync:
    h: int = 16
    mode: Literal["steps", "time"] = "steps"
    period_s: Optional[float] = None

    def validate(self):
        if self.h < 1:
            raise ConfigError("h", f"must be >= 1, got {self.h}")


@dataclass
class Job:
    name: str = "job"
    lr: float = 1e-3
    sync: Sync = field(default_factory=Sync)
    layers: list[int] = field(default_factory=lambda: [1, 2])
    tags: dict[str, str] = field(default_factory=dict)


def test_defaults_when_source_is_none():
    job = load_config(Job)
    assert job.sync.h == 16 and job.lr == 1e-3


def test_nested_values_and_int_to_float():
    job = load_config(Job, {"lr": 1, "sync": {"h": 4, "mode": "time", "period_s": 2}})
    assert job.lr == 1.0 and isinstance(job.lr, float)
    assert job.sync == Sync(h=4, mode="time", period_s=2.0)


def test_unknown_field_names_dotted_path_and_known_fields():
    with pytest.raises(ConfigError) as e:
        load_config(Job, {"sync": {"hh": 3}})
    assert e.value.field == "sync.hh"
    assert "h, mode, period_s" in str(e.value)


@pytest.mark.parametrize("data, field_path, expected", [
    ({"lr": "fast"}, "lr", "expected float"),
    ({"sync": {"h": 2.5}}, "sync.h", "expected int"),
    ({"sync": {"mode": "sometimes"}}, "sync.mode", "one of 'steps', 'time'"),
    ({"layers": [1, "x"]}, "layers[1]", "expected int"),
    ({"sync": 3}, "sync", "expected a mapping"),
    ({"sync": {"h": True}}, "sync.h", "expected int"),
])
def test_wrong_type_names_field_and_expected_type(data, field_path, expected):
    with pytest.raises(ConfigError) as e:
        load_config(Job, data)
    assert e.value.field == field_path
    assert expected in str(e.value)


def test_validate_hook_reports_absolute_path():
    with pytest.raises(ConfigError) as e:
        load_config(Job, {"sync": {"h": 0}})
    assert e.value.field == "sync.h"
    assert "must be >= 1" in str(e.value)


def test_yaml_file_roundtrip_and_overrides(tmp_path: Path):
    job = load_config(Job, {"name": "a", "sync": {"h": 8}, "tags": {"k": "v"}})
    path = save_config(job, tmp_path / "job.yaml")
    assert load_config(Job, path) == job
    assert load_config(Job, path, overrides={"sync": {"h": 2}}).sync.h == 2


def test_bad_yaml_and_missing_file_are_clear(tmp_path: Path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(Job, tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("sync: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(Job, bad)
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("3\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(Job, scalar)


def test_required_field_missing():
    @dataclass
    class NeedsPath:
        path: str

    with pytest.raises(ConfigError) as e:
        load_config(NeedsPath, {})
    assert e.value.field == "path" and "required" in str(e.value)


def test_parse_overrides_builds_nested_yaml_values():
    from raystack.config import parse_overrides

    assert parse_overrides(["sync.h=8", "lr=0.5", "layers=[1, 2]", "name=x"]) == {
        "sync": {"h": 8}, "lr": 0.5, "layers": [1, 2], "name": "x"}
    assert load_config(Job, None, parse_overrides(["sync.h=2"])).sync.h == 2
    with pytest.raises(ConfigError, match="FIELD=VALUE"):
        parse_overrides(["sync.h"])


def test_config_error_survives_pickling_and_copying():
    """Ray and Tune pickle and copy exceptions raised in workers; the field must survive."""
    import copy
    import pickle

    err = ConfigError("sync.h", "must be >= 1")
    for clone in (pickle.loads(pickle.dumps(err)), copy.copy(err)):
        assert clone.field == "sync.h" and str(clone) == "sync.h: must be >= 1"


def test_every_bad_field_is_named_at_once_with_did_you_mean():
    from raystack.edit.config import EDiTConfig

    with pytest.raises(ConfigError) as e:
        load_config(EDiTConfig, {"mdoe": "edit", "ranks": 0, "inner": {"lr": float("nan"), "beta1": 1.0},
                                 "sync": {"h": "x"}, "data": {"batch_size": 10**9}})
    fields = [f for f, _ in e.value.problems]
    assert fields == ["mdoe", "ranks", "inner.lr", "inner.beta1", "sync.h", "data.batch_size"]
    text = str(e.value)
    assert "\n" not in text and text.startswith("6 problems:")
    assert "did you mean 'mode'?" in text and "must be a finite number, got nan" in text
    assert "data.batch_size: must be in [1, 65536], got 1000000000" in text


def test_constructing_a_config_checks_it():
    from raystack.edit.config import EDiTConfig, InnerConfig
    from raystack.elastic.config import ElasticConfig
    from raystack.mlora.config import MLoRAConfig

    with pytest.raises(ConfigError) as e:
        EDiTConfig(mode="edti", ranks=-1)
    assert [f for f, _ in e.value.problems] == ["mode", "ranks"] and "did you mean 'edit'?" in str(e.value)
    with pytest.raises(ConfigError, match="inner.lr: must be in"):
        EDiTConfig(inner={"lr": -1.0})
    with pytest.raises(ConfigError, match="poll_s: must be in"):
        ElasticConfig(poll_s=0.0)
    with pytest.raises(ConfigError, match=r"tasks\[0\].adapter: no adapter named 'reverse_lor' \(did you mean"):
        MLoRAConfig(tasks=[{"adapter": "reverse_lor", "dataset": "reverse"}])
    cfg = EDiTConfig(inner={"lr": 1}, steps=5.0)  # lossless conversions: a mapping, int -> float, 5.0 -> 5
    assert cfg.inner == InnerConfig(lr=1.0) and cfg.steps == 5 and isinstance(cfg.steps, int)


def test_yaml_and_set_read_exponent_numbers_as_numbers(tmp_path: Path):
    from raystack.config import parse_overrides

    path = tmp_path / "job.yaml"
    path.write_text("lr: 2e-4\nsync: {period_s: 1E-3}\nlayers: [1e2, -3]\n")
    job = load_config(Job, path)
    assert job.lr == 2e-4 and job.sync.period_s == 1e-3 and job.layers == [100, -3]
    assert parse_overrides(["lr=1e-3", "sync.period_s=.5e1", "name=2e-4x"]) == {
        "lr": 1e-3, "sync": {"period_s": 5.0}, "name": "2e-4x"}
    with pytest.raises(ConfigError, match="list items"):
        parse_overrides(["tasks[0].lr=1"])
    from raystack.config import dump_yaml, load_yaml
    both = {"name": "2e-4", "lr": 2e-4, "tag": "1E5"}  # strings that look like numbers stay strings
    assert load_yaml(dump_yaml(both)) == both


def test_multi_problem_error_survives_pickling():
    import pickle

    with pytest.raises(ConfigError) as e:
        load_config(Job, {"lr": "x", "sync": {"h": 0}})
    clone = pickle.loads(pickle.dumps(e.value))
    assert clone.problems == e.value.problems and str(clone) == str(e.value)


def test_workflow_ir_yaml_reads_exponent_numbers():
    from raystack.workflow.ir import WorkflowIR

    text = ("name: w\nsteps:\n- id: train\n  fn: raystack.workflow.steps:train_model\n"
            "  params: {lr: 2e-4, epochs: 1e1}\n")
    step = WorkflowIR.from_yaml(text).steps[0]
    assert step.params == {"lr": 2e-4, "epochs": 10.0}
