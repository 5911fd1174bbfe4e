"""Argo Workflows export, checked against golden files (UPDATE_GOLDEN=1 rewrites them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

import wf_toys as T
from raystack.workflow import Workflow
from raystack.workflow.export_argo import to_argo, to_argo_yaml
from raystack.workflow.nl_devset import DEVSET
from raystack.workflow.planner_nl import RulePlanner

GOLDEN = Path(__file__).parent / "golden"


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


CASES = {
    "pipeline": _pipeline,
    "planned_models": lambda: RulePlanner().plan(DEVSET[2]["prompt"], name="planned-models"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_argo_export_matches_golden(name):
    text = to_argo_yaml(CASES[name]())
    path = GOLDEN / f"argo_{name}.yaml"
    if os.environ.get("UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(text)
    assert text == path.read_text()


def test_argo_manifest_semantics():
    m = to_argo(_pipeline())
    assert m["kind"] == "Workflow" and m["spec"]["entrypoint"] == "main"
    tasks = {t["name"]: t for t in m["spec"]["templates"][0]["dag"]["tasks"]}
    assert tasks["scale"]["dependencies"] == ["load"]
    assert tasks["big"]["when"] == "{{tasks.total.outputs.result}} >= 10"
    assert tasks["small"]["when"].startswith("!(")
    tmpl = {t["name"]: t for t in m["spec"]["templates"]}
    assert tmpl["scale"]["retryStrategy"]["limit"] == "3"
    assert tmpl["scale"]["activeDeadlineSeconds"] == 60
    assert tmpl["load"]["script"]["resources"]["requests"]["cpu"] == "2"
    assert m["spec"]["onExit"] == "exit-handler"
    assert yaml.safe_load(to_argo_yaml(_pipeline())) == m
