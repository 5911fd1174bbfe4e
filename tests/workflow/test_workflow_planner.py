"""The natural-language planner on its development set, refusals, and the LLM client path."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from raystack.workflow.nl_devset import DEVSET, gold_structure, score
from raystack.workflow.planner_nl import LLMPlanner, PlanRefused, RulePlanner, structure


def test_devset_is_large_enough():
    assert sum(1 for d in DEVSET if not d.get("refuse")) >= 30
    assert sum(1 for d in DEVSET if d.get("refuse")) >= 5


def test_planner_structural_match_on_devset():
    r = score(RulePlanner())
    assert r["accuracy"] >= 0.8, r["misses"]


@pytest.mark.parametrize("item", [d for d in DEVSET if d.get("refuse")], ids=lambda d: d["prompt"][:30])
def test_unmappable_prompts_are_refused_with_a_reason(item):
    with pytest.raises(PlanRefused) as e:
        RulePlanner().plan(item["prompt"])
    assert e.value.reasons and all(isinstance(r, str) and r for r in e.value.reasons)


def test_plan_fills_typed_parameters_and_constructs():
    ir = RulePlanner().plan(DEVSET[2]["prompt"])
    by_fn = {}
    for s in ir.steps:
        by_fn.setdefault(s.fn.split(":")[1], []).append(s)
    assert by_fn["make_dataset"][0].params == {"rows": 1000}
    assert sorted(s.params["model"] for s in by_fn["train_model"]) == ["centroid", "knn", "logistic"]
    deploy = by_fn["deploy_model"][0]
    assert deploy.when[0].op == ">" and deploy.when[0].value == 0.8 and deploy.when[0].ref.key == "score"
    assert by_fn["notify"][0].when[0].negate
    assert by_fn["cleanup"][0].exit == "always"
    loop = RulePlanner().plan(DEVSET[3]["prompt"]).steps[2].loop
    assert (loop.max_iterations, loop.until_op, loop.until_value, loop.carry) == (5, ">=", 0.9, "init")


def test_planned_workflow_runs_locally(tmp_path, monkeypatch):
    from raystack.workflow import run_local
    monkeypatch.chdir(tmp_path)
    ir = RulePlanner().plan("Generate a dataset with 300 rows, split it, train logistic and "
                            "centroid models, evaluate each, select the best. If the best "
                            "accuracy is above 0.5, deploy it as best, otherwise notify me.")
    rep = run_local(ir)
    assert rep.status == "succeeded"
    assert (tmp_path / "deployed" / "best.json").exists()


class _FakeLLM(BaseHTTPRequestHandler):
    answer: dict = {}

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body["messages"][0]["role"] == "system"
        out = json.dumps({"choices": [{"message": {"content": json.dumps(self.answer)}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


def test_llm_planner_against_an_openai_compatible_endpoint():
    _FakeLLM.answer = {"steps": [
        {"id": "d", "step": "make_dataset", "params": {"rows": 100}},
        {"id": "s", "step": "split_data", "inputs": {"data": "d"}},
        {"id": "m", "step": "train_model", "params": {"model": "centroid"}, "inputs": {"data": "s"}}]}
    srv = HTTPServer(("127.0.0.1", 0), _FakeLLM)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        llm = LLMPlanner(f"http://127.0.0.1:{srv.server_port}/v1", "any-model", assist=False)
        st = structure(llm.plan("make a centroid model on toy data"))
        assert st["steps"] == ["make_dataset", "split_data", "train_model"]
        _FakeLLM.answer = {"steps": [{"id": "x", "step": "launch_rocket"}]}
        with pytest.raises(PlanRefused, match="unknown step 'launch_rocket'"):
            llm.plan("launch a rocket")
        _FakeLLM.answer = {"steps": [{"id": "m", "step": "train_model", "params": {"epochs": "many"}}]}
        with pytest.raises(PlanRefused, match="does not validate"):
            llm.plan("train")
    finally:
        srv.shutdown()


def test_gold_structure_expands_counts():
    g = gold_structure({"steps": "a b*2", "edges": "a>b*2", "constructs": "map"})
    assert g == {"steps": ["a", "b", "b"], "edges": ["a>b", "a>b"], "constructs": ["map"]}
