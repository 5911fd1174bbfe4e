"""Argo Workflows export: golden files (UPDATE_GOLDEN=1 rewrites them), validation against the
Argo Workflow schema (Hera's generated models), and what runs inside each step's container."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

import wf_toys as T
from raystack.workflow import Workflow
from raystack.workflow.argo_step import main as step_main
from raystack.workflow.argo_step import read_artifact
from raystack.workflow.export_argo import DEFAULT_IMAGE, to_argo, to_argo_yaml
from raystack.workflow.nl.rules import RulePlanner

GOLDEN = Path(__file__).parent / "golden"
ROOT = Path(__file__).resolve().parents[2]


def _pipeline():
    wf = Workflow("train-pipeline")
    s = wf.step(T.source, id="load", n=8, resources={"num_cpus": 2, "memory": 2**30})
    a = wf.step(T.scale, id="scale", xs=s, factor=0.5, retries=3, timeout_s=60)
    t = wf.step(T.total, id="total", xs=a)
    with wf.when(t, ">=", 10):
        wf.step(T.label, id="big", text="big")
    with wf.otherwise():
        wf.step(T.label, id="small", text="small")
    wf.loop(T.grow, id="grow", max_iterations=4, until=("done", "truthy"), x=0.0)
    wf.on_exit(T.status_note, kind="failure", id="alert")
    return wf.build()


PLANNED = ("Generate a synthetic dataset with 1000 rows. Train logistic, knn and centroid models, "
           "evaluate each, select the best. If the best accuracy is above 0.8, deploy it, otherwise "
           "notify me. Always at the end, clean up the tmp directory.")
CASES = {"pipeline": _pipeline, "planned_models": lambda: RulePlanner().plan(PLANNED, name="planned-models").ir}


def _validate_schema(manifest: dict) -> None:
    """Hera's models of the Argo Workflow CRD: types checked, and nothing they do not know."""
    from hera.workflows.models import Workflow as ArgoWorkflow
    model = ArgoWorkflow.model_validate(manifest)
    back = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert back == manifest, "the manifest has fields the Argo schema does not define"


@pytest.mark.parametrize("name", sorted(CASES))
def test_argo_export_matches_golden_and_the_schema(name):
    text = to_argo_yaml(CASES[name]())
    path = GOLDEN / f"argo_{name}.yaml"
    if os.environ.get("UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(text)
    assert text == path.read_text()
    _validate_schema(yaml.safe_load(text))


def test_argo_artifacts_and_parameters_are_typed():
    m = to_argo(CASES["planned_models"]())
    assert m["spec"]["templates"][1]["container"]["image"] == DEFAULT_IMAGE
    tasks = {t["name"]: t for t in m["spec"]["templates"][0]["dag"]["tasks"]}
    tmpl = {t["name"]: t for t in m["spec"]["templates"]}
    # a literal is a JSON-typed parameter: 1000 stays a number
    gen = tasks["s1"]["arguments"]["parameters"]
    assert {"name": "p-rows", "value": "1000"} in gen and json.loads(gen[0]["value"]) == 1000
    # a data edge is an artifact from the upstream task, not a string of its stdout
    split = tasks["-split-data1"] if "-split-data1" in tasks else next(t for n, t in tasks.items() if "split" in n)
    assert split["arguments"]["artifacts"] == [{"name": "data", "from": "{{tasks.s1.outputs.artifacts.result}}"}]
    # a list of references is one input artifact per element
    best = tasks["s4"]
    assert [a["name"] for a in best["arguments"]["artifacts"]] == ["results-0", "results-1", "results-2"]
    assert all(a["from"].endswith(".outputs.artifacts.result}}") for a in best["arguments"]["artifacts"])
    assert tmpl["s4"]["outputs"]["artifacts"][0]["name"] == "result"
    assert "jsonpath(tasks['s4'].outputs.parameters.value, '$.accuracy') > 0.8" in tasks["s5"]["when"]
    assert m["spec"]["onExit"] == "exit-handler"


def test_a_step_that_hands_its_input_on_when_skipped_exports_a_conditional_artifact():
    """'if over 10% is missing, impute them, otherwise clean it; then train': in Argo a skipped
    task has no output, so what reads it takes the artifact by expression: the task's own when
    it ran, else the one it hands on (chained through the if/else pair). Schema-valid."""
    ir = RulePlanner().plan("Load r.csv; if over 10% of values are missing, impute them, otherwise clean it. "
                            "Then train knn.").ir
    m = to_argo(ir)
    _validate_schema(m)
    tasks = {t["name"]: t for t in m["spec"]["templates"][0]["dag"]["tasks"]}
    clean = tasks["s3"]["arguments"]["artifacts"][0]
    assert clean["fromExpression"] == ("(tasks['s2'].status == 'Skipped' ? tasks['s1'].outputs.artifacts['result'] "
                                       ": tasks['s2'].outputs.artifacts['result'])")
    split = next(t for n, t in tasks.items() if "split" in n)["arguments"]["artifacts"][0]
    assert split["fromExpression"].startswith("(tasks['s3'].status == 'Skipped' ? (tasks['s2'].status")


def test_argo_step_runs_a_catalog_function_on_artifact_files(tmp_path):
    """What a step's container does: typed parameters in, data-format artifacts out and in."""
    out1 = tmp_path / "gen"
    assert step_main(["--fn", "raystack.workflow.table_steps:make_dataset", "--step", "gen",
                      "--param", "rows=50", "--param", "seed=3", "--out", str(out1)]) == 0
    assert (out1 / "result" / "format").read_text() == "parquet"
    out2 = tmp_path / "split"
    step_main(["--fn", "raystack.workflow.table_steps:split_data", "--step", "split",
               "--input", f"data={out1 / 'result'}", "--out", str(out2)])
    parts = read_artifact(out2 / "result")
    assert parts["train"].num_rows + parts["test"].num_rows == 50
    with pytest.raises(Exception, match="not in the step catalog"):
        step_main(["--fn", "os:system", "--step", "x", "--param", 'command="id"', "--out", str(tmp_path / "x")])


def test_dockerfile_installs_the_project():
    text = (ROOT / "Dockerfile").read_text()
    assert "pip install --no-cache-dir ." in text and "raystack.workflow.argo_step" in text
    assert DEFAULT_IMAGE.split(":")[0] == "raystack"
