"""Evaluation sets in the neutral gold format, and the scorer that compares a plan with gold.

A set is YAML: ``{version: 1, prompts: [{id, group, text, expect: plan|refuse, reason?, steps?}]}``;
each gold step has ``name``, ``kind`` (canonical vocabulary), ``params`` (only what the text
states), ``after`` and optional constructs (``map``, ``when``, ``otherwise``, ``loop``,
``retries``, ``exit``, ``concurrent``, ``tune``, ``bound``). See docs/workflow.md.

How a plan is compared (fixed before any held-out prompt was seen):

- steps: each draft step that the request named (implicit plumbing, e.g. a split inserted
  between a table and a model, is contracted away) with its catalog step mapped to a canonical
  kind (``CATALOG[...].kind``; ``evaluate_dlrm`` is ``evaluate_model``);
- a map's expansion counts as one step with its ``map``; a step fanned out because its input
  was (``evaluate each``) counts as one step, with no map of its own or the same map as its input;
- edges are compared as the ordering they impose: the transitive closure of ``after`` over
  non-exit steps (taken from the IR's dependencies for the plan);
- params are compared by value, not name (``80/20``, ``20%`` and ``0.2`` are one test
  fraction; names differ between writers: ``workers`` / ``ranks``), as multisets; a param set
  to its step's default ("total the sales by store": ``agg: sum``) states nothing the step
  would not do anyway: one side stating it and the other not is no difference (added
  2026-12-02, from development set 4, whose author and set 1's disagreed on it; before
  held-out set 5 was scored);
- constructs: map values, when (step, metric, op, value), otherwise, loop (metric, op, value,
  max_iterations), retries, exit kind, concurrency, tune (the fields gold states), bound.

Where the format is silent, each set's author chose conventions, written in the set's README;
the scorer applies the same canonical mapping to the plan (:class:`Conventions`):

- ``order``: how gold writes order. ``"data"`` (``nl_dev.yaml``): edges are data edges, and a
  step that takes no data follows the step written before it; the planner's ordering-only
  edges into steps that take data are not compared. ``"text"`` (``nl_heldout.yaml``, whose
  header says so, and sets 2, ``benchmarks/data/README_sets2.md``): steps written in
  sequence form a chain, even when no data passes, so every edge of the plan counts.
- values on both sides through one mapping: numbers as numbers (percentages as fractions,
  ``200k``, ``1.2M``), model names to the catalog's ``linear``/``logistic``/``knn``/``centroid``
  ("logistic regression", "k-nearest neighbours", "nearest centroid"), metrics by name.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from raystack.workflow.catalog import CATALOG, CatalogEntry, entry_for
from raystack.workflow.nl.lexicon import METRICS
from raystack.workflow.nl.plan import REFUSAL_KINDS, Plan

CANONICAL_KINDS = (
    "make_dataset", "load_data", "load_checkpoint", "clean_data", "impute", "dedup", "normalize",
    "sample", "split_data", "join", "concat", "aggregate", "stats", "train_model", "evaluate_model",
    "select_best", "tune", "edit_pretrain", "mlora_finetune", "evaluate_adapters",
    "serve_adapters", "elastic_dlrm", "plot", "save_report", "write_table", "export_model",
    "deploy_model", "notify", "cleanup")
STEP_KEYS = {"name", "kind", "params", "after", "map", "when", "otherwise", "loop", "retries",
             "exit", "concurrent", "tune", "bound"}


ORDER_CONVENTIONS = ("data", "text")


@dataclass(frozen=True)
class Conventions:
    """The choices a set's author made where the gold format is silent (see the module doc)."""

    order: str = "data"

    def __post_init__(self) -> None:
        if self.order not in ORDER_CONVENTIONS:
            raise ValueError(f"order convention {self.order!r}; expected one of {ORDER_CONVENTIONS}")


SETS1 = Conventions(order="data")
SETS2 = Conventions(order="text")
# sets and the README that states their conventions (benchmarks/data/README_sets2.md)
SET_CONVENTIONS = {"nl_dev2": SETS2, "nl_heldout2": SETS2,
                   # its header: "Text read in sequence ("A, B, then C") is a chain"
                   "nl_heldout": SETS2,
                   # README_sets3.md: "One scorer setting serves sets 2 and 3"
                   "nl_dev3": SETS2, "nl_heldout3": SETS2}


def conventions_for(path: str | Path) -> Conventions:
    """The conventions of an evaluation set: its own ``conventions:`` key when it has one, else
    those its README states for its file name, else the first sets'."""
    data = yaml.safe_load(Path(path).read_text())
    declared = data.get("conventions") if isinstance(data, dict) else None
    if isinstance(declared, dict):
        try:
            return Conventions(**declared)
        except (TypeError, ValueError) as e:
            raise GoldError(f"{path}: conventions: {e}") from None
    return SET_CONVENTIONS.get(Path(path).stem, SETS1)


class GoldError(ValueError):
    """An evaluation set that does not follow the format (names the prompt and field)."""


def load_set(path: str | Path) -> list[dict]:
    """The prompts of an evaluation set, checked against the format."""
    data = yaml.safe_load(Path(path).read_text())
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("prompts"), list):
        raise GoldError(f"{path}: expected {{version: 1, prompts: [...]}}")
    seen = set()
    for p in data["prompts"]:
        pid = p.get("id", "?")
        if pid in seen:
            raise GoldError(f"{path}: duplicate id {pid!r}")
        seen.add(pid)
        if p.get("expect") not in ("plan", "refuse") or not isinstance(p.get("text"), str):
            raise GoldError(f"{path}: prompt {pid}: needs text and expect: plan|refuse")
        if p["expect"] == "refuse":
            if p.get("reason", "unmappable") not in REFUSAL_KINDS:
                raise GoldError(f"{path}: prompt {pid}: reason must be one of {REFUSAL_KINDS}")
            continue
        names = set()
        for s in p.get("steps") or []:
            unknown = set(s) - STEP_KEYS
            if unknown:
                raise GoldError(f"{path}: prompt {pid}: step {s.get('name')}: unknown keys {sorted(unknown)}")
            if s.get("kind") not in CANONICAL_KINDS:
                raise GoldError(f"{path}: prompt {pid}: step {s.get('name')}: unknown kind {s.get('kind')!r}")
            names.add(s["name"])
        for s in p.get("steps") or []:
            for a in s.get("after") or []:
                if a not in names:
                    raise GoldError(f"{path}: prompt {pid}: step {s['name']} is after unknown {a!r}")
    return data["prompts"]


# -- normalisation ------------------------------------------------------------------------------
MODEL_ALIASES = [(r"logistic(?:\s+regression)?(?:\s+(?:model|classifier))?|logit", "logistic"),
                 (r"linear(?:\s+regression)?(?:\s+(?:model|regressor))?|ols", "linear"),
                 (r"k-?nn(?:\s+(?:model|classifier|regressor))?|k[\s-]+nearest[\s-]+neighbou?rs?"
                  r"(?:\s+(?:model|classifier|regressor))?", "knn"),
                 (r"(?:nearest[\s-]+)?centroid(?:\s+(?:model|classifier))?", "centroid")]


def norm_model(s: str) -> str:
    """A model name as the catalog spells it ("k-nearest neighbours" -> "knn")."""
    for pat, name in MODEL_ALIASES:
        if re.fullmatch(pat, s):
            return name
    return s


def norm_value(v: Any) -> Any:
    """A comparable form of a stated value: numbers as floats (80/20 -> 0.2, 20% -> 0.2,
    50k -> 50000), strings lower-cased and stripped, lists element-wise."""
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return round(float(v), 9)
    if isinstance(v, (list, tuple)):
        return [norm_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): norm_value(x) for k, x in v.items()}
    s = str(v).strip().strip("'\"").strip()
    low = s.lower()
    m = re.fullmatch(r"(\d{1,2})\s*/\s*(\d{1,2})", low)
    if m and int(m.group(1)) + int(m.group(2)) == 100:
        return round(int(m.group(2)) / 100.0, 9)
    m = re.fullmatch(r"([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)\s*(%|k|m)?", low.replace(",", ""))
    if m:
        x = float(m.group(1))
        x = x / 100 if m.group(2) == "%" else x * 1000 if m.group(2) == "k" else x * 1e6 if m.group(2) == "m" else x
        return round(x, 9)
    return norm_model(low)


def norm_metric(m: Any) -> str:
    s = re.sub(r"[\s_-]+", " ", str(m).strip().lower())
    return METRICS.get(s, METRICS.get(s.replace(" ", "_"), s.replace(" ", "_")))


def _canon_cond(c: dict | None, rename: dict[str, str] | None = None) -> tuple | None:
    if not c:
        return None
    step = c.get("step")
    if rename is not None:
        step = rename.get(step, step)
    return (step, norm_metric(c.get("metric")), c.get("op"), norm_value(c.get("value")))


def _canon_loop(lp: dict | None) -> tuple | None:
    if not lp:
        return None
    u = lp.get("until") or {}
    return (norm_metric(u.get("metric")), u.get("op"), norm_value(u.get("value")),
            int(lp.get("max_iterations", 0)))


@dataclass
class Canon:
    """One step of a plan or of gold, in comparable form."""

    name: str
    kind: str
    params: list
    after: set
    map: list | None
    when: tuple | None
    otherwise: bool
    loop: tuple | None
    retries: int
    exit: str | None
    concurrent: bool
    tune: dict | None
    bound: tuple | None
    defaults: frozenset = frozenset()   # params' values equal to the step's defaults


@functools.lru_cache(maxsize=None)
def _defaults(names: tuple[str, ...]) -> dict[str, Any]:
    """The default of each parameter of these catalog steps (the first entry's, by name; read
    once per set of steps: a signature is inspected, not cheap per compared step)."""
    out: dict[str, Any] = {}
    for name in names:
        try:
            params = CATALOG[name].params()
        except Exception:  # noqa: BLE001 - a step whose signature cannot be read states all
            continue
        for pname, p in params.items():
            if not p.required:
                out.setdefault(pname, p.default)
    return out


def default_values(params: dict, entries: list[CatalogEntry]) -> frozenset[str]:
    """The comparable values among ``params`` that equal their step's default (by the
    parameter's catalog name; a name the catalog does not use, a gold writer's alias, matches
    any of the step's defaults)."""
    defaults = {k: v for k, v in _defaults(tuple(e.name for e in entries)).items() if v is not None}
    out = set()
    for k, v in params.items():
        options = [defaults[k]] if k in defaults else list(defaults.values())
        if any(norm_value(v) == norm_value(d) for d in options):
            out.add(repr(norm_value(v)))
    return frozenset(out)


def gold_steps(steps: list[dict]) -> list[Canon]:
    out = []
    for s in steps:
        mp = s.get("map")
        b = s.get("bound")
        entries = [e for e in CATALOG.values() if e.kind == s["kind"]]
        out.append(Canon(
            s["name"], s["kind"], sorted(map(repr, (norm_value(v) for v in (s.get("params") or {}).values()))),
            set(s.get("after") or []), sorted(map(repr, norm_value(mp["values"]))) if mp else None,
            _canon_cond(s.get("when")), bool(s.get("otherwise")), _canon_loop(s.get("loop")),
            int(s.get("retries") or 0), s.get("exit"), bool(s.get("concurrent")),
            s.get("tune"), (b.get("op"), norm_value(b.get("value"))) if b else None,
            default_values(s.get("params") or {}, entries)))
    return out


def _step_deps(spec: Any, conventions: Conventions) -> list[str]:
    """A step's upstream ids as the set's order convention counts them."""
    refs = [r.step for r in spec.refs()]
    if conventions.order == "data" and refs:
        return list(dict.fromkeys(refs))        # ordering-only edges of a step that takes data
    return spec.deps()


def plan_steps(plan: Plan, conventions: Conventions = SETS1) -> list[Canon]:
    """The plan's steps in comparable form (structure from the IR, stated values from the
    draft)."""
    ir = plan.ir
    by_id = ir.by_id()
    label_of = {sid: lab for lab, sids in plan.ids.items() for sid in sids}
    drafts = plan.draft.by_label()
    implicit = {lab for lab, d in drafts.items() if d.implicit}

    def deps(lab: str, seen: frozenset = frozenset()) -> set[str]:
        out: set[str] = set()
        for sid in plan.ids.get(lab, []):
            for d in _step_deps(by_id[sid], conventions):
                dl = label_of.get(d)
                if dl is None or dl == lab or dl in seen:
                    continue
                out |= deps(dl, seen | {lab}) if dl in implicit else {dl}
        return out

    out = []
    for lab, d in drafts.items():
        if d.implicit:
            continue
        spec = by_id[plan.ids[lab][0]]
        entry = entry_for(spec.fn)
        kind = entry.kind if entry else spec.fn
        when = None
        if spec.when:
            c = spec.when[0]
            when = (label_of.get(c.ref.step), norm_metric(c.ref.key), c.op, norm_value(c.value))
        loop = None
        if spec.loop:
            loop = (norm_metric(spec.loop.until_key), spec.loop.until_op,
                    norm_value(spec.loop.until_value), spec.loop.max_iterations)
        mp = None
        if d.map:
            mp = sorted(map(repr, norm_value(list(d.map[1]))))
        tune = None
        if spec.tune:
            t = spec.tune
            tune = {"space": t.space, "trials": t.trials, "metric": t.metric, "mode": t.mode,
                    "scheduler": t.scheduler}
        out.append(Canon(
            lab, kind, sorted(map(repr, (norm_value(v) for v in d.stated.values()))), deps(lab), mp, when,
            bool(spec.when and spec.when[0].negate), loop, spec.retries, spec.exit,
            bool(d.concurrent), tune,
            (d.bound["op"], norm_value(d.bound["value"])) if d.bound else None,
            default_values(d.stated, [entry] if entry else [])))
    return out


def _tune_equal(gold: dict | None, mine: dict | None) -> bool:
    if gold is None or mine is None:
        return gold is None and mine is None
    for k, v in gold.items():
        if k == "space":
            gs = {kk: sorted(map(repr, norm_value(vv))) if isinstance(vv, list) else norm_value(vv)
                  for kk, vv in v.items()}
            ms = {kk: sorted(map(repr, norm_value(vv))) if isinstance(vv, list) else norm_value(vv)
                  for kk, vv in mine["space"].items()}
            if sorted(map(repr, gs.values())) != sorted(map(repr, ms.values())):
                return False
        elif k == "metric":
            if norm_metric(v) != norm_metric(mine["metric"]):
                return False
        elif norm_value(v) != norm_value(mine.get(k)):
            return False
    return True


def _local_equal(g: Canon, m: Canon, inherited_map: list | None,
                 else_of: tuple | None = None) -> str | None:
    """None when the two steps agree on everything but edges; else what differs.
    ``else_of``: for a gold else-branch without its own ``when``, the condition it negates."""
    if g.kind != m.kind and not (g.kind == "tune" and m.tune is not None):
        return f"kind {m.kind} != {g.kind}"
    if g.params != m.params:   # a value one side states and the other leaves to its default is equal
        only_g, only_m = Counter(g.params) - Counter(m.params), Counter(m.params) - Counter(g.params)
        if not (set(only_g) <= g.defaults and set(only_m) <= m.defaults):
            return f"{g.name}: params {m.params} != {g.params}"
    if g.map != m.map and not (m.map is None and g.map == inherited_map):
        return f"{g.name}: map {m.map} != {g.map}"
    for f in ("otherwise", "loop", "retries", "exit", "concurrent", "bound"):
        if getattr(g, f) != getattr(m, f):
            return f"{g.name}: {f} {getattr(m, f)} != {getattr(g, f)}"
    gw = g.when if g.when is not None or not g.otherwise else else_of
    if (gw is None) != (m.when is None):
        return f"{g.name}: when {m.when} != {gw}"
    if gw is not None and gw[1:] != m.when[1:]:
        return f"{g.name}: when {m.when} != {gw}"
    if not _tune_equal(g.tune, m.tune):
        return f"{g.name}: tune {m.tune} != {g.tune}"
    return None


def _closure(steps: list[Canon], rename: dict[str, str]) -> set[tuple[str, str]]:
    main = {s.name for s in steps if s.exit is None}
    direct = {(rename.get(a, a), rename[s.name]) for s in steps if s.name in main
              for a in s.after if a in main}
    reach = set(direct)
    while True:
        new = {(a, d) for (a, b) in reach for (c, d) in reach if b == c} - reach
        if not new:
            return reach
        reach |= new


def compare(plan: Plan, gold: list[dict], conventions: Conventions = SETS1) -> tuple[bool, str]:
    """(match, why not) of a plan against a gold step list, under the set's conventions."""
    g = gold_steps(gold)
    m = plan_steps(plan, conventions)
    if len(g) != len(m):
        return False, f"{len(m)} steps, gold has {len(g)}: {[x.kind for x in m]} vs {[x.kind for x in g]}"
    gmap = {s.name: s for s in g}
    inherited = {s.name: next((gmap[a].map for a in s.after if a in gmap and gmap[a].map), None) for s in g}
    mine_by = {s.name: s for s in m}
    minherit = {s.name: next((mine_by[a].map for a in s.after if a in mine_by and mine_by[a].map), None) for s in m}
    last = "no assignment of steps agrees"
    # candidates per gold step, then a search for a consistent bijection
    cands = []
    else_of: dict[str, tuple | None] = {}
    last_when = None
    for gs in g:
        if gs.when is not None:
            last_when = gs.when
        else_of[gs.name] = last_when
    for gs in g:
        eo = else_of[gs.name]
        c = [ms for ms in m if _local_equal(gs, ms, minherit.get(ms.name), eo) is None
             or (_local_equal(gs, ms, inherited.get(gs.name), eo) is None)]
        if not c:
            why = [_local_equal(gs, ms, minherit.get(ms.name), eo) for ms in m if ms.kind == gs.kind]
            return False, why[0] if why else f"no step of kind {gs.kind}"
        cands.append(c)
    for combo in itertools.islice(itertools.product(*cands), 5000):
        if len({id(x) for x in combo}) != len(combo):
            continue
        rename_m = {ms.name: gs.name for gs, ms in zip(g, combo)}
        ok = True
        for gs, ms in zip(g, combo):
            gw = gs.when if gs.when is not None or not gs.otherwise else else_of[gs.name]
            if gw is not None and rename_m.get(ms.when[0]) != gw[0]:
                ok, last = False, f"{gs.name}: condition tests {rename_m.get(ms.when[0])}, gold {gw[0]}"
                break
        if not ok:
            continue
        if _closure(g, {s.name: s.name for s in g}) == _closure(m, rename_m):
            return True, ""
        last = (f"edges: plan {sorted(_closure(m, rename_m))} vs gold "
                f"{sorted(_closure(g, {s.name: s.name for s in g}))}")
    return False, last
