"""One CLI shape: every part takes --config, --set (repeatable), --output-dir, --json,
--print-config; the job scripts take the same and fail the same way; `raystack --version`."""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import yaml

import raystack.cluster
from raystack.apps.cli import build_parser, main
from raystack.parts import PARTS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "configs" / "workflow_example.py"
SHAPE = ["--config", "c.yaml", "--set", "a.b=1", "--set", "c=2e-4", "--output-dir", "out", "--json", "r.json",
         "--print-config"]


def _check_shape(args) -> None:
    assert (args.config, args.overrides, args.output_dir, args.json_path, args.print_config) == (
        "c.yaml", ["a.b=1", "c=2e-4"], "out", "r.json", True)


@pytest.mark.parametrize("part", sorted(PARTS))
def test_every_part_and_its_job_script_take_the_shared_options(part):
    import argparse

    from raystack.apps.cli import _add_command_arguments

    action = ["run", "flow.py"] if part == "workflow" else []
    _check_shape(build_parser().parse_args([part, *action, *SHAPE]))
    job = argparse.ArgumentParser()
    _add_command_arguments(job, part)
    _check_shape(job.parse_args([*action, *SHAPE]))
    if part == "workflow":  # the options also go before the action, as the job docs show them
        _check_shape(build_parser().parse_args(["workflow", *SHAPE, "run", "flow.py"]))


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("raystack 0.1.0 (ray 2.60.0, torch ")


@pytest.mark.parametrize("part", sorted(PARTS))
def test_output_dir_sets_the_parts_output_field(part, capsys, tmp_path):
    assert main([part, "--print-config", "--output-dir", str(tmp_path / "o")]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    *parents, leaf = PARTS[part].output_field.split(".")
    for p in parents:
        shown = shown[p]
    assert shown[leaf] == str(tmp_path / "o")


@pytest.mark.parametrize("part", ["mlora", "elastic", "workflow"])
def test_job_scripts_report_config_errors_in_one_line(part, capsys, monkeypatch):
    monkeypatch.setattr(raystack.cluster, "connect", lambda *a, **k: pytest.fail("connected"))
    job = importlib.import_module(f"raystack.apps.jobs.{part}")
    action = ["run", str(EXAMPLE)] if part == "workflow" else []
    assert job.main([*action, "--set", "nosuch=1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and err.startswith(f"raystack.apps.jobs.{part}: error: nosuch: unknown field")


@pytest.mark.cluster
def test_workflow_run_file_then_config_writes_the_json_result(ray_cluster, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    flow = tmp_path / "flow.py"
    flow.write_text("from raystack.workflow import Workflow\nfrom raystack.workflow import steps as S\n"
                    "workflow = Workflow('two')\ndata = workflow.step(S.make_dataset, id='data', rows=50)\n"
                    "workflow.step(S.split_data, id='split', data=data)\n")
    cfg = tmp_path / "wf.yaml"
    cfg.write_text(f"store: {tmp_path / 'store'}\nprogress: false\n")
    out = tmp_path / "result.json"
    assert main(["workflow", "run", str(flow), "--config", str(cfg), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["status"] == "succeeded" and sorted(result["executed"]) == ["data", "split"]
    assert result["store"].endswith("store") and (tmp_path / "store").is_dir()
