"""`raystack workflow run | plan | export` and the config."""

from __future__ import annotations

from pathlib import Path

import pytest

from raystack.apps.cli import main
from raystack.config import ConfigError, load_config
from raystack.workflow.config import WorkflowConfig

EXAMPLE = Path(__file__).resolve().parents[2] / "configs" / "workflow_example.py"
PROMPT = "Generate a dataset with 300 rows, split it, train a centroid model, evaluate it and deploy it as cli."


def test_plan_prints_and_writes_editable_ir(tmp_path, capsys):
    out = tmp_path / "plan.yaml"
    assert main(["workflow", "plan", PROMPT, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "raystack.workflow.steps:deploy_model" in text and out.exists()
    assert main(["workflow", "export", "--argo", str(out), "-o", str(tmp_path / "argo.yaml")]) == 0
    assert "argoproj.io/v1alpha1" in (tmp_path / "argo.yaml").read_text()


def test_plan_refuses_with_reasons(capsys):
    assert main(["workflow", "plan", "book a flight to Paris"]) == 2
    assert "no catalog step matches" in capsys.readouterr().err


def test_bad_config_and_missing_file_are_clear_errors(tmp_path, capsys):
    with pytest.raises(ConfigError, match="split_budget"):
        load_config(WorkflowConfig, {"split_budget": 0})
    with pytest.raises(ConfigError, match="eviction"):
        load_config(WorkflowConfig, {"eviction": "random"})
    assert main(["workflow", "run", str(tmp_path / "nope.py")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.cluster
def test_run_example_file_then_rerun_from_cache(ray_cluster, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    store = str(tmp_path / "store")
    assert main(["workflow", "run", str(EXAMPLE), "--store", store]) == 0
    out = capsys.readouterr().out
    assert "succeeded" in out and "executed 10, cached 0, skipped 1" in out
    assert main(["workflow", "run", str(EXAMPLE), "--store", store]) == 0
    assert "executed 0, cached 10" in capsys.readouterr().out
