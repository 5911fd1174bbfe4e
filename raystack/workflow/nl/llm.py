"""Planning with a model behind an OpenAI-compatible chat endpoint (``/v1/chat/completions``).

The model is shown the catalog (steps, parameters, inputs, metrics) and asked for a plan in
the same draft format the rule planner produces: steps by catalog name with their parameters
and constructs (``map``, ``when``/``otherwise``, ``loop``, ``retries``, ``exit``, ``concurrent``,
``tune``). Its answer is parsed and checked like any draft (:mod:`raystack.workflow.nl.build`):
an answer that does not validate is sent back with the error (``max_repairs`` times), then
refused. Only catalog steps can come out of it: a step name the catalog lacks
(``os:system``) is an error, never an import.

In assist mode the rules go first; the model is consulted whenever they leave words unmapped
(any unmappable refusal), with those words named, never to overrule a safety refusal.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.error
import urllib.request
from typing import Any

from raystack.workflow.catalog import describe
from raystack.workflow.ir import TuneSpec, WorkflowError
from raystack.workflow.nl.build import build
from raystack.workflow.nl.plan import (EXIT_KINDS, REFUSAL_KINDS, Cond, Draft, DraftStep,
                                       LoopSpec, Plan, PlanRefused)
from raystack.workflow.nl.rules import RulePlanner
from raystack.workflow.nl.safety import screen

log = logging.getLogger(__name__)

ANSWER_FORMAT = """Answer with JSON only, either
{"steps": [{"id": "s1", "step": "<catalog name>", "params": {...}, "inputs": {"<param>": "<id>"},
  "after": ["<id>"], "map": {"param": "<param>", "values": [...]},
  "when": {"step": "<id>", "metric": "<metric that step reports>", "op": ">=", "value": 0.8},
  "otherwise": false, "loop": {"until": {"metric": "...", "op": "<=", "value": 0.1}, "max_iterations": 5},
  "retries": 0, "exit": null, "concurrent": false,
  "tune": {"space": {"lr": [0.1, 0.01]}, "trials": 4, "metric": "accuracy", "mode": "max", "scheduler": "asha"},
  "span": "<the words of the request this step comes from>"}]}
(omit keys you do not need; "inputs" may be left out to let data edges be wired by kind;
"exit" is one of always, failure, success; an "otherwise" step is the else-branch of the
nearest "when" before it), or {"refuse": "<why>", "kind": "destructive|out_of_scope|unmappable|unbounded"}.
Use only catalog steps and their parameters. Refuse destructive requests (deleting files,
running commands, sending data away), requests outside the catalog, and loops without a bound."""
STEP_KEYS = {"id", "step", "params", "inputs", "after", "map", "when", "otherwise", "loop",
             "retries", "exit", "concurrent", "tune", "span"}


class EndpointError(RuntimeError):
    """The model endpoint did not answer in the OpenAI chat format."""


class ModelRefused(PlanRefused):
    """The model itself refused the request (its reason and kind)."""


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise PlanRefused([f"the model's plan: {where}: {what}"])


def draft_from_answer(answer: dict[str, Any], text: str) -> Draft:
    """The draft an answer describes, or PlanRefused naming the first thing wrong with it."""
    if "refuse" in answer:
        kind = answer.get("kind", "unmappable")
        raise ModelRefused([f"the model refused: {answer['refuse']}"],
                           kind if kind in REFUSAL_KINDS else "unmappable")
    steps = answer.get("steps")
    _need(isinstance(steps, list) and steps, "steps", "expected a non-empty list")
    out: list[DraftStep] = []
    last_when: Cond | None = None
    for i, s in enumerate(steps):
        where = f"steps[{i}]"
        _need(isinstance(s, dict), where, "expected an object")
        unknown = set(s) - STEP_KEYS
        _need(not unknown, where, f"unknown keys {sorted(unknown)}")
        sid = s.get("id", f"s{i + 1}")
        _need(isinstance(sid, str) and re.fullmatch(r"[A-Za-z_][\w\-]*", sid or ""), where,
              f"id {sid!r} must be a plain name")
        _need(isinstance(s.get("step"), str), where, "'step' must name a catalog step")
        params = s.get("params") or {}
        _need(isinstance(params, dict), where, "'params' must be an object")
        inputs = s.get("inputs") or {}
        _need(isinstance(inputs, dict), where, "'inputs' must map parameters to step ids")
        after = s.get("after") or []
        _need(isinstance(after, list) and all(isinstance(a, str) for a in after), where,
              "'after' must be a list of step ids")
        d = DraftStep(sid, s["step"], dict(params), dict(params), inputs=dict(inputs),
                      after=list(after), retries=int(s.get("retries") or 0),
                      concurrent="model" if s.get("concurrent") else None,
                      span=str(s.get("span", "")))
        if s.get("map") is not None:
            mp = s["map"]
            _need(isinstance(mp, dict) and isinstance(mp.get("param"), str)
                  and isinstance(mp.get("values"), list), where, "'map' needs param and values")
            d.map = (mp["param"], list(mp["values"]))
        if s.get("when") is not None:
            w = s["when"]
            _need(isinstance(w, dict) and {"step", "metric", "op", "value"} <= set(w), where,
                  "'when' needs step, metric, op, value")
            _need(isinstance(w["value"], (int, float)), where, "'when.value' must be a number")
            d.when = last_when = Cond(w["step"], w["metric"], w["op"], float(w["value"]))
        if s.get("otherwise"):
            _need(last_when is not None, where, "'otherwise' with no 'when' before it")
            d.when, d.otherwise = last_when, True
        if s.get("loop") is not None:
            lp = s["loop"]
            u = lp.get("until") if isinstance(lp, dict) else None
            _need(isinstance(u, dict) and {"metric", "op", "value"} <= set(u), where,
                  "'loop' needs until {metric, op, value}")
            n = lp.get("max_iterations")
            if not isinstance(n, int) or n < 1:
                raise PlanRefused([f"the model's plan: {where}: a loop needs max_iterations >= 1"],
                                  "unbounded")
            d.loop = LoopSpec(u["metric"], u["op"], float(u["value"]), n)
        if s.get("exit") is not None:
            _need(s["exit"] in EXIT_KINDS, where, f"'exit' must be one of {EXIT_KINDS}")
            d.exit = s["exit"]
        if s.get("tune") is not None:
            t = s["tune"]
            _need(isinstance(t, dict) and isinstance(t.get("space"), dict), where, "'tune' needs a space")
            try:
                d.tune = TuneSpec(space=dict(t["space"]), metric=str(t.get("metric", "accuracy")),
                                  mode=t.get("mode", "max"), trials=int(t.get("trials") or 0),
                                  scheduler=t.get("scheduler", "fifo"))
            except (WorkflowError, TypeError, ValueError) as e:
                raise PlanRefused([f"the model's plan: {where}: tune: {e}"]) from None
        out.append(d)
    return Draft(text.strip(), out)


class LLMPlanner:
    """Plans with an OpenAI-compatible chat endpoint (``url`` up to ``/v1``, ``model``, key)."""

    def __init__(self, url: str, model: str, api_key: str = "", assist: bool = True,
                 timeout_s: float = 60.0, max_repairs: int = 1):
        self.url, self.model, self.api_key = url.rstrip("/"), model, api_key
        self.assist, self.timeout_s, self.max_repairs = assist, timeout_s, max_repairs
        self.asked = 0                           # requests sent (for tests and reports)

    # -- protocol ---------------------------------------------------------------------------
    def chat(self, messages: list[dict[str, str]]) -> str:
        """One chat completion: the assistant message's text."""
        body = json.dumps({"model": self.model, "temperature": 0, "messages": messages}).encode()
        req = urllib.request.Request(self.url + "/chat/completions", data=body, headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"})
        self.asked += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                reply = json.loads(r.read())
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise EndpointError(f"the planner endpoint {self.url} did not answer: {e}") from e
        try:
            return str(reply["choices"][0]["message"]["content"])
        except (KeyError, IndexError, TypeError) as e:
            raise EndpointError(f"the planner endpoint {self.url} answered without a chat "
                                f"message: {str(reply)[:200]}") from e

    def system_prompt(self, unmapped: list[str] | None = None) -> str:
        catalog = json.dumps(describe(), default=str)
        hint = ""
        if unmapped:
            hint = ("\nThe rule planner could not map these words of the request: "
                    + "; ".join(unmapped) + ". Plan the whole request, or refuse.")
        return ("You turn a machine-learning workflow request into a plan over this step "
                f"catalog: {catalog}\n{ANSWER_FORMAT}{hint}")

    @staticmethod
    def repair_message(error: str) -> str:
        return (f"That plan is not valid: {error}. Send the whole plan again as JSON, "
                "corrected, or refuse.")

    @staticmethod
    def parse(content: str) -> dict[str, Any]:
        """The JSON object in a reply (also inside a fenced code block)."""
        m = re.search(r"\{.*\}", content, re.S)
        if not m:
            raise PlanRefused([f"the model answered without JSON: {content[:160]!r}"])
        try:
            out = json.loads(m.group(0))
        except json.JSONDecodeError as e:
            raise PlanRefused([f"the model's JSON does not parse: {e}"]) from None
        if not isinstance(out, dict):
            raise PlanRefused(["the model's JSON is not an object"])
        return out

    # -- planning -----------------------------------------------------------------------------
    def plan(self, text: str, name: str = "planned") -> Plan:
        """A validated plan (rules first in assist mode), or PlanRefused."""
        screen(text)
        unmapped: list[str] = []
        if self.assist:
            try:
                return RulePlanner().plan(text, name)
            except PlanRefused as e:
                if e.kind in ("destructive", "unbounded"):
                    raise
                unmapped = e.reasons
        plan = self.ask(text, name, unmapped)
        plan.assisted = self.assist
        return plan

    def ask(self, text: str, name: str = "planned", unmapped: list[str] | None = None) -> Plan:
        """Ask the model, validate, send errors back up to ``max_repairs`` times."""
        messages = [{"role": "system", "content": self.system_prompt(unmapped)},
                    {"role": "user", "content": text}]
        last: PlanRefused | None = None
        for attempt in range(self.max_repairs + 1):
            content = self.chat(messages)
            try:
                answer = self.parse(content)
                draft = draft_from_answer(answer, text)
                return build(draft, name)
            except ModelRefused:
                raise
            except PlanRefused as e:
                if e.kind != "unmappable":
                    raise
                last = e
                log.info("planner model answer %d rejected: %s", attempt, e)
                messages += [{"role": "assistant", "content": content},
                             {"role": "user", "content": self.repair_message("; ".join(e.reasons))}]
        assert last is not None
        raise PlanRefused(last.reasons + [f"still invalid after {self.max_repairs} repair(s)"])
