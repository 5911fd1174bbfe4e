"""Natural language to workflow: an offline rule planner, and an OpenAI-compatible client.

The offline planner splits a description into task clauses, retrieves the best catalog step
for each (keyword overlap weighted by how specific a word is), fills typed parameters from
the text, wires data edges by artifact kind, and builds the IR with the constructs the text
asks for: a list of alternatives becomes a ``map``, "if ... otherwise ..." a ``when`` pair,
"until ... at most N times" a bounded loop, "always at the end" / "if anything fails" an
exit handler, "in parallel" a ``concurrent`` group. Anything it cannot map is refused with
the reason (:class:`PlanRefused`), never guessed. The result is validated before it is shown.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from raystack.workflow.api import Out, Workflow
from raystack.workflow.catalog import CATALOG, CatalogEntry
from raystack.workflow.ir import WorkflowError, WorkflowIR

STOP = set("a an the it its them they this that these those to of on in into with and or for "
           "then by from as my our your me us we i please also first next finally after "
           "which each every all some data dataset model models set".split())
LOOP_CARRY = {"train_model": ("init", "score")}
# Implicit conversions: a step needing kind K when only kind J exists gets this step inserted.
IMPLICIT = {("split", "table"): "split_data"}
_NUM = r"(-?\d+(?:\.\d+)?)"
_CMP = [(r"(?:at least|no less than|>=)", ">="), (r"(?:at most|no more than|<=)", "<="),
        (r"(?:above|over|greater than|more than|higher than|exceeds?|better than|>)", ">"),
        (r"(?:below|under|less than|lower than|worse than|<)", "<"),
        (r"(?:equals?|is exactly|==)", "==")]


class PlanRefused(WorkflowError):
    """The planner could not map the description; ``reasons`` says which part and why."""

    def __init__(self, reasons: list[str]):
        self.reasons = reasons
        super().__init__("", "cannot plan this description: " + "; ".join(reasons))

    def __reduce__(self):
        return (PlanRefused, (self.reasons,))


def _stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > 4 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def _tokens(text: str) -> list[str]:
    return [_stem(t) for t in re.findall(r"[a-z][a-z0-9\-]*", text.lower()) if t not in STOP]


@dataclass
class _Index:
    """Keyword index over the catalog with inverse-frequency weights."""

    catalog: dict[str, CatalogEntry]
    vocab: dict[str, set[str]] = field(default_factory=dict)

    def __post_init__(self):
        for e in self.catalog.values():
            for w in set(_tokens(" ".join(e.keywords) + " " + e.name.replace("_", " "))):
                self.vocab.setdefault(w, set()).add(e.name)

    def best(self, clause: str) -> tuple[CatalogEntry | None, float]:
        scores: dict[str, float] = {}
        n = len(self.catalog)
        toks = _tokens(clause)
        for w in set(toks):
            for name in self.vocab.get(w, ()):
                scores[name] = scores.get(name, 0.0) + math.log(1 + n / len(self.vocab[w]))
        if toks:  # the leading verb says what the clause does: it breaks ties
            for name in self.vocab.get(toks[0], ()):
                scores[name] += 0.5
        if not scores:
            return None, 0.0
        name = max(scores, key=lambda k: (scores[k], -list(self.catalog).index(k)))
        return self.catalog[name], scores[name]


@dataclass
class _Task:
    entry: CatalogEntry
    params: dict[str, Any]
    over: tuple[str, list] | None = None        # map over a parameter's choices
    loop: tuple[int, str, float] | None = None  # (max_iterations, op, value)
    text: str = ""


def _fill(entry: CatalogEntry, clause: str, original: str) -> tuple[dict, tuple | None]:
    """Parameters named in the clause, and a map over a choice list if several are named."""
    params: dict[str, Any] = {}
    over = None
    low = clause.lower()
    for name, spec in entry.params().items():
        if spec.choices:
            found = [c for c in spec.choices if isinstance(c, str) and re.search(rf"\b{c}\b", low)]
            found.sort(key=lambda c: low.index(c))
            if len(found) == 1:
                params[name] = found[0]
            elif len(found) > 1:
                over = (name, found)
            continue
        tp = spec.type
        if name == "path":
            m = re.search(r"([\w./\-]+\.(?:csv|parquet|json))", original)
            if m:
                params[name] = m.group(1)
            continue
        if name == "message":
            m = re.search(r"[\"']([^\"']+)[\"']", original)
            if m:
                params[name] = m.group(1)
            continue
        if tp in (int, float) or "int" in str(tp) or "float" in str(tp):
            is_int = tp is int or "int" in str(tp)
            for alias in spec.aliases:
                a = re.escape(alias)
                m = (re.search(rf"\b{a}\s*(?:of|=|:|to|at)?\s*{_NUM}(%?)", low)
                     or re.search(rf"{_NUM}(%?)\s*{a}\b", low))
                if m:
                    v = float(m.group(1))
                    if m.group(2) == "%":
                        v /= 100.0
                    params[name] = int(v) if is_int else v
                    break
        if name == "test_fraction" and name not in params:
            m = re.search(r"\b(\d{1,2})\s*/\s*(\d{1,2})\b", low)
            if m and int(m.group(1)) + int(m.group(2)) == 100:
                params[name] = int(m.group(2)) / 100.0
            m2 = re.search(rf"{_NUM}\s*%", low)
            if name not in params and m2:
                params[name] = float(m2.group(1)) / 100.0
        if tp is str or str(tp) == "<class 'str'>":
            for alias in spec.aliases:
                m = re.search(rf"\b{re.escape(alias)}\s+['\"]?([\w\-./]+)", low)
                if m and m.group(1) not in STOP:
                    params[name] = m.group(1)
                    break
    return params, over


class RulePlanner:
    """The default offline planner (no model, no network)."""

    def __init__(self, catalog: dict[str, CatalogEntry] | None = None, min_score: float = 1.2):
        self.catalog = catalog or CATALOG
        self.index = _Index(self.catalog)
        self.min_score = min_score

    # -- clause handling ---------------------------------------------------------------------
    def _split(self, text: str) -> list[str]:
        text = re.sub(r"(\d)\.(\d)", r"\1<dot>\2", text)
        text = re.sub(r"([\w/\-]+)\.(csv|parquet|json)", r"\1<dot>\2", text)
        text = re.sub(r",?\s*\band (if|when)\b", r". \1", text, flags=re.I)
        sentences = [s.strip() for s in re.split(r"[.;\n]+", text) if s.strip()]
        out = []
        for s in sentences:
            s = s.replace("<dot>", ".")
            if re.match(r"^\s*(if|when)\b", s, re.I) and not self._exit_kind(s):
                out.append(s)
                continue
            out += [p.strip() for p in re.split(r",?\s*\b(?:and then|then|after that|afterwards|"
                                                  r"next|finally)\b\s*,?", s, flags=re.I)
                    if p and p.strip(" ,")]
        return out

    @staticmethod
    def _exit_kind(clause: str) -> str | None:
        c = clause.lower()
        if re.search(r"\b(if|when) (anything|something|any step|it|the workflow|the run|a step)"
                     r" fails\b|\bon failure\b|\bin case of failure\b", c):
            return "failure"
        if re.search(r"\balways\b|\bno matter what\b|\bwhatever happens\b|\bin any case\b", c):
            return "always"
        return None

    def _tasks(self, clause: str, reasons: list[str]) -> list[_Task]:
        """One or more catalog tasks for a clause ('A and B' may be two steps)."""
        pieces = [p.strip(" ,") for p in re.split(r"\band\b|,", clause) if p.strip(" ,")]
        groups: list[str] = []
        for p in pieces:
            e, score = self.index.best(p)
            if groups and (e is None or score < self.min_score
                           or self.index.best(groups[-1])[0] is e):
                groups[-1] += " and " + p
            else:
                groups.append(p)
        tasks = []
        for g in groups:
            e, score = self.index.best(g)
            if e is None or score < self.min_score:
                reasons.append(f"no catalog step matches {g!r}")
                continue
            params, over = _fill(e, g, g)
            t = _Task(e, params, over, text=g)
            m = re.search(rf"\buntil\b.*?\b(?:is\s+)?({'|'.join(p for p, _ in _CMP)}|reach(?:es)?)"
                          rf"\s*{_NUM}", g, re.I)
            if re.search(r"\buntil\b", g, re.I):
                bound = re.search(r"(?:at most|up to|no more than|max(?:imum)?(?: of)?)\s+(\d+)\s*"
                                  r"(?:times|rounds|iterations|tries|attempts)?", g, re.I)
                if e.name not in LOOP_CARRY:
                    reasons.append(f"{e.name} cannot be repeated in a loop ({g!r})")
                elif not m:
                    reasons.append(f"the loop condition in {g!r} is not a comparison with a number")
                elif not bound:
                    reasons.append(f"the loop in {g!r} has no bound (say 'at most N times')")
                else:
                    op = next((o for p, o in _CMP if re.fullmatch(p, m.group(1), re.I)), ">=")
                    t.loop = (int(bound.group(1)), op, float(m.group(2)))
            tasks.append(t)
        return tasks

    # -- building ----------------------------------------------------------------------------
    def plan(self, text: str, name: str = "planned") -> WorkflowIR:
        """The validated IR for a description, or PlanRefused naming what could not be mapped."""
        reasons: list[str] = []
        if not text or not text.strip():
            raise PlanRefused(["the description is empty"])
        wf = Workflow(name, description=text.strip())
        produced: list[tuple[str, Any]] = []   # (kind, Out | list[Out]) in order
        for clause in self._split(text):
            kind = self._exit_kind(clause)
            if kind:
                body = re.sub(r"^.*?\b(always|no matter what|whatever happens|in any case|"
                              r"on failure|fails)\b\s*,?\s*(at the end)?\s*,?", "", clause,
                              flags=re.I) or clause
                for t in self._tasks(body, reasons):
                    if not t.entry.exit_ok:
                        reasons.append(f"{t.entry.name} cannot run as an exit handler")
                        continue
                    wf.on_exit(t.entry.function(), kind=kind, **t.params)
                continue
            cond = re.match(r"^\s*(?:if|when)\s+(.*?)\s*,\s*(.*?)\s*(?:,\s*)?(?:\b(?:otherwise|else)"
                            r"\b\s*,?\s*(.*))?$", clause, re.I)
            if cond:
                self._conditional(wf, cond.groups(), produced, reasons)
                continue
            parallel = re.search(r"\b(in parallel|at the same time|simultaneously|concurrently)\b",
                                 clause, re.I)
            body = re.sub(r"\b(in parallel|at the same time|simultaneously|concurrently)\b", "",
                          clause, flags=re.I)
            tasks = self._tasks(body, reasons)
            if parallel and len(tasks) > 1:
                with wf.concurrent("parallel"):
                    outs = [self._add(wf, t, produced, reasons) for t in tasks]
                for t, o in zip(tasks, outs):
                    if o is not None and t.entry.output:
                        produced.append((t.entry.output, o))
            else:
                for t in tasks:
                    o = self._add(wf, t, produced, reasons)
                    if o is not None and t.entry.output:
                        produced.append((t.entry.output, o))
        if reasons:
            raise PlanRefused(reasons)
        if not wf._steps:
            raise PlanRefused(["no step found in the description"])
        try:
            ir = wf.build()
        except WorkflowError as e:
            raise PlanRefused([f"the plan does not validate: {e}"]) from e
        return ir

    def _find(self, want: str, produced: list, name: str, reasons: list[str],
              wf: Workflow | None = None) -> Any:
        kinds = want.rstrip("*").split("|")
        for kind, out in reversed(produced):
            if kind in kinds or "any" in kinds:
                return out
        for (need, have), conv in IMPLICIT.items():
            if need in kinds and wf is not None:
                src = next((o for k, o in reversed(produced) if k == have), None)
                if src is not None and not isinstance(src, list):
                    entry = self.catalog[conv]
                    out = wf.step(entry.function(), **{next(iter(entry.inputs)): src})
                    produced.append((need, out))
                    return out
        reasons.append(f"{name} needs a {' or '.join(kinds)} input but no earlier step makes one")
        return None

    def _add(self, wf: Workflow, t: _Task, produced: list, reasons: list[str]) -> Any:
        e = t.entry
        inputs: dict[str, Any] = {}
        for pname, kind in e.inputs.items():
            src = self._find(kind, produced, e.name, reasons, wf)
            if src is None:
                return None
            if isinstance(src, list) and not kind.endswith("*"):
                inputs[pname] = src           # zipped fan-out below
            elif not isinstance(src, list) and kind.endswith("*"):
                inputs[pname] = [src]
            else:
                inputs[pname] = src
        fn = e.function()
        lists = {k: v for k, v in inputs.items() if isinstance(v, list) and not e.inputs[k].endswith("*")}
        if t.loop is not None:
            carry, key = LOOP_CARRY[e.name]
            n, op, value = t.loop
            if lists:
                reasons.append(f"a loop over several {e.name} inputs is not supported")
                return None
            return wf.loop(fn, max_iterations=n, carry=carry, until=(key, op, value),
                           **inputs, **t.params)
        if t.over is not None:
            pname, items = t.over
            return wf.map(fn, items, over=pname, **inputs, **t.params)
        if lists:
            n = max(len(v) for v in lists.values())
            outs = []
            prev, wf._group = wf._group, f"map:{e.name}"
            try:
                for i in range(n):
                    kw = {k: (v[i] if k in lists else v) for k, v in inputs.items()}
                    outs.append(wf.step(fn, **kw, **t.params))
            finally:
                wf._group = prev
            return outs
        return wf.step(fn, **inputs, **t.params)

    def _conditional(self, wf: Workflow, groups: tuple, produced: list, reasons: list[str]) -> None:
        test, then, other = groups
        ref = self._find("evaluation|model|any", produced, "the condition", reasons)
        if ref is None:
            return
        if isinstance(ref, list):
            reasons.append("the condition refers to several results; add a step that selects one")
            return
        op = None
        value = None
        for pat, o in _CMP:
            m = re.search(rf"{pat}\s*{_NUM}", test, re.I)
            if m:
                op, value = o, float(m.group(1))
                break
        if op is None:
            reasons.append(f"cannot read a comparison with a number in {test!r}")
            return
        cond_ref: Out = ref["score"] if isinstance(ref, Out) else ref
        with wf.when(cond_ref, op, value):
            for t in self._tasks(then, reasons):
                self._add(wf, t, produced, reasons)
        if other:
            with wf.otherwise():
                for t in self._tasks(other, reasons):
                    self._add(wf, t, produced, reasons)


def structure(ir: WorkflowIR) -> dict[str, Any]:
    """The structural signature compared with gold workflows: steps, edges and constructs."""
    by_fn = {e.fn: e.name for e in CATALOG.values()}
    name = {s.id: by_fn.get(s.fn, s.fn) for s in ir.steps}
    constructs = set()
    for s in ir.steps:
        if s.group:
            constructs.add(s.group.split(":")[0])
        if s.when:
            constructs.add("when")
            if any(c.negate for c in s.when):
                constructs.add("otherwise")
        if s.loop:
            constructs.add("loop")
        if s.exit:
            constructs.add(f"exit:{s.exit}")
    return {"steps": sorted(name[s.id] for s in ir.steps),
            "edges": sorted(f"{name[a]}>{name[b]}" for a, b in ir.edges()),
            "constructs": sorted(constructs)}


class LLMPlanner:
    """Plans with an OpenAI-compatible chat endpoint (``url``, ``model``, ``api_key``).

    The model is asked for JSON steps over the catalog; the answer is built and validated like
    the rule planner's. With ``assist=True`` the rule planner goes first and the model is
    asked only when it refuses.
    """

    def __init__(self, url: str, model: str, api_key: str = "", assist: bool = True,
                 timeout_s: float = 60.0, catalog: dict[str, CatalogEntry] | None = None):
        self.url, self.model, self.api_key = url.rstrip("/"), model, api_key
        self.assist, self.timeout_s = assist, timeout_s
        self.catalog = catalog or CATALOG

    def _ask(self, text: str) -> dict:
        import urllib.request
        from raystack.workflow.catalog import describe
        system = ("You turn ML workflow descriptions into JSON. Use only these steps: "
                  + json.dumps(describe()) + '. Answer {"steps": [{"id": str, "step": catalog '
                  'name, "params": {}, "inputs": {param: step id}, "exit": null|"always"|'
                  '"failure"}]} or {"refuse": reason}.')
        body = json.dumps({"model": self.model, "temperature": 0, "messages": [
            {"role": "system", "content": system}, {"role": "user", "content": text}]}).encode()
        req = urllib.request.Request(self.url + "/chat/completions", data=body, headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"})
        with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
            content = json.loads(r.read())["choices"][0]["message"]["content"]
        m = re.search(r"\{.*\}", content, re.S)
        if not m:
            raise PlanRefused([f"the model answered without JSON: {content[:200]!r}"])
        return json.loads(m.group(0))

    def plan(self, text: str, name: str = "planned") -> WorkflowIR:
        if self.assist:
            try:
                return RulePlanner(self.catalog).plan(text, name)
            except PlanRefused:
                pass
        ans = self._ask(text)
        if "refuse" in ans:
            raise PlanRefused([str(ans["refuse"])])
        wf = Workflow(name, description=text)
        outs: dict[str, Out] = {}
        for s in ans.get("steps", []):
            e = self.catalog.get(s.get("step", ""))
            if e is None:
                raise PlanRefused([f"the model used unknown step {s.get('step')!r}"])
            inputs = {}
            for p, src in (s.get("inputs") or {}).items():
                if src not in outs:
                    raise PlanRefused([f"step {s.get('id')!r} uses unknown input {src!r}"])
                inputs[p] = outs[src]
            if s.get("exit"):
                outs[s["id"]] = wf.on_exit(e.function(), kind=s["exit"], id=s.get("id"),
                                           **s.get("params", {}))
            else:
                outs[s["id"]] = wf.step(e.function(), id=s.get("id"), **inputs,
                                        **s.get("params", {}))
        try:
            return wf.build()
        except WorkflowError as e:
            raise PlanRefused([f"the model's plan does not validate: {e}"]) from e


def plan(text: str, name: str = "planned", llm: LLMPlanner | None = None) -> WorkflowIR:
    """Plan a description offline (or with ``llm``); raises PlanRefused when it cannot."""
    return (llm or RulePlanner()).plan(text, name)
