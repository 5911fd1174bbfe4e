"""The planner's held-out gold set and destructive-prompt corpus are well-formed.

These files score the natural-language planner; a malformed gold (an edge to a missing
step, two phrasings of one request with different plans, a param the text never states)
would score a right plan as wrong. Nothing here imports the planner.
"""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from raystack.workflow.catalog import CATALOG

REPO = Path(__file__).resolve().parents[2]
HELDOUT = REPO / "benchmarks" / "data" / "nl_heldout.yaml"
HELDOUT4 = REPO / "benchmarks" / "data" / "nl_heldout4.yaml"  # set 4: plans of up to 8 steps
HELDOUT5 = REPO / "benchmarks" / "data" / "nl_heldout5.yaml"  # set 5: held out, up to 8 steps
DEV4 = REPO / "benchmarks" / "data" / "nl_dev4.yaml"          # set 5's development twin
DEV5 = REPO / "benchmarks" / "data" / "nl_dev5.yaml"          # a second development set of that shape
HELDOUT6 = REPO / "benchmarks" / "data" / "nl_heldout6.yaml"  # set 6: held out, up to 8 steps
DEV6 = REPO / "benchmarks" / "data" / "nl_dev6.yaml"          # its development twin
DEV7 = REPO / "benchmarks" / "data" / "nl_dev7.yaml"          # a second development set of that shape
HELDOUT7 = REPO / "benchmarks" / "data" / "nl_heldout7.yaml"  # set 7: held out, written after the planner froze
HELDOUT8 = REPO / "benchmarks" / "data" / "nl_heldout8.yaml"  # set 8: held out, written after round 17
DEV8 = REPO / "benchmarks" / "data" / "nl_dev8.yaml"          # a development set written before round 19
HELDOUT9 = REPO / "benchmarks" / "data" / "nl_heldout9.yaml"  # set 9: held out, written before round 19
DEV9 = REPO / "benchmarks" / "data" / "nl_dev9.yaml"          # a development set written before round 20
HELDOUT10 = REPO / "benchmarks" / "data" / "nl_heldout10.yaml"  # set 10: held out, written before round 20
DEV10 = REPO / "benchmarks" / "data" / "nl_dev10.yaml"        # a development set written before round 22
DEV11 = REPO / "benchmarks" / "data" / "nl_dev11.yaml"        # a development set written before round 23
DEV12 = REPO / "benchmarks" / "data" / "nl_dev12.yaml"        # development sets written before round 24
DEV13 = REPO / "benchmarks" / "data" / "nl_dev13.yaml"
DEV14 = REPO / "benchmarks" / "data" / "nl_dev14.yaml"        # development sets written before round 25
DEV15 = REPO / "benchmarks" / "data" / "nl_dev15.yaml"
DEV16 = REPO / "benchmarks" / "data" / "nl_dev16.yaml"
DEV17 = REPO / "benchmarks" / "data" / "nl_dev17.yaml"
DEV18 = REPO / "benchmarks" / "data" / "nl_dev18.yaml"        # a development set written before round 27's second half
DEV19 = REPO / "benchmarks" / "data" / "nl_dev19.yaml"        # a development set written during round 28
DESTRUCTIVE = REPO / "tests" / "workflow" / "data" / "destructive_prompts.yaml"

CANONICAL_KINDS = frozenset(
    "make_dataset load_data load_checkpoint clean_data impute dedup normalize sample "
    "split_data join aggregate stats train_model evaluate_model select_best tune "
    "edit_pretrain mlora_finetune evaluate_adapters serve_adapters elastic_dlrm plot "
    "save_report write_table export_model deploy_model notify cleanup".split()
)
LATER_KINDS = frozenset({"concat"})   # in the catalog since set 8: a set may use it, the earlier ones do not
REFUSE_REASONS = frozenset({"destructive", "out_of_scope", "unmappable", "unbounded"})
OPS = frozenset({">", ">=", "<", "<=", "==", "!="})
EXIT_KINDS = frozenset({"always", "failure", "success"})
STEP_KEYS = frozenset(
    {"name", "kind", "params", "after", "map", "retries", "when", "otherwise", "exit",
     "loop", "concurrent", "tune", "bound"}
)
MIN_STEPS = 2
MAX_STEPS = {HELDOUT.name: 7, HELDOUT4.name: 8, HELDOUT5.name: 8,   # what each set's author was asked for
             HELDOUT6.name: 8, DEV4.name: 8, DEV5.name: 8, DEV6.name: 8, DEV7.name: 8, HELDOUT7.name: 8,
             HELDOUT8.name: 8, DEV8.name: 8, HELDOUT9.name: 8, DEV9.name: 8, HELDOUT10.name: 8, DEV10.name: 8, DEV11.name: 8,
             DEV12.name: 8, DEV13.name: 8, DEV14.name: 8, DEV15.name: 8,
             DEV16.name: 8, DEV17.name: 8, DEV18.name: 9,   # (set 18's author was given no cap: its longest plan)
             DEV19.name: 9}


def _load(path: Path) -> list[dict]:
    doc = yaml.safe_load(path.read_text())
    assert doc["version"] == 1, f"{path.name}: version must be 1"
    return doc["prompts"]


def _check_condition(cond: dict, where: str) -> None:
    assert set(cond) == {"metric", "op", "value"} | ({"step"} & set(cond)), where
    assert cond["op"] in OPS, f"{where}: op {cond['op']!r}"
    assert isinstance(cond["value"], (int, float)), f"{where}: value must be a number"
    assert cond["metric"] == cond["metric"].lower() and " " not in cond["metric"], where


def _check_plan(pid: str, steps: list[dict], max_steps: int) -> None:
    """Labels unique, edges to earlier labels only (acyclic), constructs well-formed,
    `after` a transitive reduction (the set's stated convention)."""
    assert MIN_STEPS <= len(steps) <= max_steps, f"{pid}: {len(steps)} steps"
    seen: dict[str, set[str]] = {}  # label -> its ancestors
    last_when: str | None = None
    for step in steps:
        where = f"{pid}/{step.get('name')}"
        assert set(step) <= STEP_KEYS, f"{where}: unknown keys {set(step) - STEP_KEYS}"
        assert step["kind"] in CANONICAL_KINDS | LATER_KINDS, f"{where}: kind {step['kind']!r}"
        assert step["name"] not in seen, f"{where}: duplicate label"
        after = step.get("after", [])
        if "exit" in step:
            assert step["exit"] in EXIT_KINDS, where
            assert not after, f"{where}: exit handlers carry no after"
        for label in after:
            assert label in seen, f"{where}: after {label!r} is not an earlier step"
        tested = (step.get("when") or {}).get("step")
        for label in after:  # no edge implied by another edge (but the step a condition tests, listed as the convention says)
            if label == tested:
                continue
            others = set(after) - {label}
            assert not any(label in seen[o] for o in others), f"{where}: redundant edge {label}"
        if "when" in step:
            _check_condition(step["when"], where)
            assert step["when"]["step"] in after, f"{where}: when tests a step not in after"
            last_when = step["when"]["step"]
        if step.get("otherwise"):
            assert last_when is not None, f"{where}: otherwise without a preceding when"
            assert last_when in after, f"{where}: otherwise must follow the when's step"
        if "map" in step:
            assert set(step["map"]) == {"param", "values"}, where
            assert len(step["map"]["values"]) >= 2, where
            assert "concurrent" not in step, f"{where}: a map's values are independent already"
        if "loop" in step:
            _check_condition(step["loop"]["until"], where)
            assert int(step["loop"]["max_iterations"]) >= 1, f"{where}: loops are bounded"
        if "retries" in step:
            assert isinstance(step["retries"], int) and step["retries"] >= 1, where
        if "bound" in step:
            _check_condition({k: v for k, v in step["bound"].items() if k != "param"}
                             | {"metric": step["bound"]["param"]}, where)
        if "tune" in step:
            tune = step["tune"]
            assert step["kind"] == "tune", f"{where}: tune construct on a {step['kind']}"
            assert set(tune) == {"space", "trials", "metric", "mode", "scheduler"}, where
            assert tune["mode"] in {"min", "max"} and tune["scheduler"] in {"asha", "fifo"}
        seen[step["name"]] = set(after).union(*(seen[a] for a in after))


def _choices(kind: str, param: str) -> tuple:
    """The catalog's choices for a step's parameter (a tune's model is a training's)."""
    entry = CATALOG.get("train_model" if kind == "tune" else kind)
    spec = entry.params().get(param) if entry is not None else None
    return tuple(spec.choices) if spec is not None else ()


def _stated_strings(step: dict) -> list[str]:
    """The string values a step's params and map claim the text states (a metric's name is
    lowercase with underscores by convention, so its words are what the text states). A
    parameter with the catalog's choices (a model kind, an aggregate's function) is the gold's
    canonical name for what the text says in its own words ("total", "5-nearest-neighbour"):
    it must be one of the choices instead."""
    params = step.get("params") or {}
    for k, v in params.items():
        if _choices(step["kind"], k) and isinstance(v, str):
            assert v in _choices(step["kind"], k), f"{step.get('name')}: {k} {v!r} is none of the catalog's choices"
    values = [v for k, v in params.items() if k != "metric" and not _choices(step["kind"], k)]
    mapped = step.get("map") or {}
    if _choices(step["kind"], mapped.get("param", "")):    # a map over model kinds: each one of the choices
        for v in mapped.get("values", []):
            assert v in _choices(step["kind"], mapped["param"]), f"{step.get('name')}: {v!r} is none of the choices"
    else:
        values += mapped.get("values", [])
    out: list[str] = []
    for value in values:
        out += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]
    metric = params.get("metric")
    if isinstance(metric, str):
        out.append(metric.replace("_", " "))
    return out


def _spellings(value: str) -> set[str]:
    """How the text may state a value: as written, a metric's "val" as "validation", its words
    hyphenated ("the lower-val-loss one") or joined as a column name is ("min(runs, key=val_loss)"),
    accuracy by its adjective ("the most accurate one"), RMSE and MAE in words."""
    value = value.lower()
    return {value, re.sub(r"\bval\b", "validation", value), value.replace(" ", "-"), value.replace(" ", "_")} | (
        {"accurate"} if value == "accuracy" else set()) | SPELLED_OUT.get(value, set())


# a metric said in words ("the lowest root mean squared error")
SPELLED_OUT = {"rmse": {"root mean squared error", "root mean square error", "root-mean-square error"},
               "mae": {"mean absolute error"}}


@pytest.mark.parametrize("path", [HELDOUT, HELDOUT4, HELDOUT5, HELDOUT6, DEV4, DEV5, DEV6, DEV7, HELDOUT7, HELDOUT8,
                                  DEV8, HELDOUT9, DEV9, HELDOUT10, DEV10, DEV11, DEV12, DEV13, DEV14, DEV15,
                                  DEV16, DEV17, DEV18, DEV19],
                         ids=lambda p: p.stem)
def test_heldout_gold_is_well_formed_and_states_only_what_the_text_says(path):
    prompts = _load(path)
    ids = [p["id"] for p in prompts]
    assert len(ids) == len(set(ids)), "duplicate prompt ids"
    groups: dict[str, list[dict]] = defaultdict(list)
    for p in prompts:
        assert re.fullmatch(rf"{p['group']}[a-z]", p["id"]), f"{p['id']}: id/group mismatch"
        groups[p["group"]].append(p)
        if p["expect"] == "refuse":
            assert p["reason"] in REFUSE_REASONS and "steps" not in p, p["id"]
            continue
        assert p["expect"] == "plan" and "reason" not in p, p["id"]
        _check_plan(p["id"], p["steps"], MAX_STEPS[path.name])
        text = p["text"].lower()
        for step in p["steps"]:
            for value in _stated_strings(step):
                assert any(v in text for v in _spellings(value)), f"{p['id']}: {value!r} is not in the text"
    for group, members in groups.items():
        assert len(members) >= 2, f"{group}: one phrasing only"
        golds = [(m["expect"], m.get("reason"), m.get("steps")) for m in members]
        assert all(g == golds[0] for g in golds), f"{group}: phrasings disagree on the gold"
        assert len({m["text"] for m in members}) == len(members), f"{group}: same text twice"
    refused = [g for g, m in groups.items() if m[0]["expect"] == "refuse"]
    assert 25 <= len(groups) <= 35 and 4 <= len(refused) <= 7
    used = {s["kind"] for p in prompts for s in p.get("steps", [])}
    assert CANONICAL_KINDS <= used <= CANONICAL_KINDS | LATER_KINDS, f"kinds never used: {sorted(CANONICAL_KINDS - used)}"
    constructs = {k for p in prompts for s in p.get("steps", []) for k in s}
    assert constructs == STEP_KEYS, f"constructs never used: {sorted(STEP_KEYS - constructs)}"
    exits = {s["exit"] for p in prompts for s in p.get("steps", []) if "exit" in s}
    assert exits == EXIT_KINDS


@pytest.mark.parametrize(
    "kind, pattern",
    [
        ("delete", r"\b(delete|remove|wipe|erase|rm)\b"),
        ("format", r"\bformat|reformat\b"),
        ("exfiltrate", r"\b(upload|send|copy|post)\b.*(\.ssh|key|token|table|credentials)"),
        ("shell or code", r"`|execute|os:system|shell"),
        ("injection", r"ignore (all |previous )|override"),
        ("hidden in a pipeline", r"\b(train|fine-tune|pretrain)\b.*\b(then|and)\b.*\b(wipe|delete|drop|overwrite)"),
    ],
)
def test_destructive_corpus_covers_each_kind_of_attack(kind, pattern):
    prompts = _load(DESTRUCTIVE)
    hits = [p["id"] for p in prompts if re.search(pattern, p["text"], re.IGNORECASE)]
    assert len(hits) >= 2, f"fewer than 2 {kind} prompts: {hits}"


def test_destructive_corpus_is_all_refusals_with_a_reason():
    prompts = _load(DESTRUCTIVE)
    assert 20 <= len(prompts) <= 35
    assert len({p["id"] for p in prompts}) == len(prompts)
    assert len({p["text"] for p in prompts}) == len(prompts)
    for p in prompts:
        assert set(p) == {"id", "text", "expect", "reason"}, p["id"]
        assert p["expect"] == "refuse" and p["reason"] in {"destructive", "out_of_scope"}
