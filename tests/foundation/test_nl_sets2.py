"""The second pair of NL planner evaluation sets (benchmarks/data/nl_dev2.yaml, nl_heldout2.yaml).

A scorer relies on these files being well-formed gold (README_sets2.md states the format's
conventions), and the integrator relies on the held-out half being exactly what the seeded
split produced: no request moved by hand, none in both halves.
"""
import random
from pathlib import Path

import pytest
import yaml

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
DEV, HELDOUT = DATA / "nl_dev2.yaml", DATA / "nl_heldout2.yaml"
SPLIT_SEED = 20261130
ACCEPTED_DRAW = 44
REQUESTS_PER_HALF = 30
REFUSALS_PER_HALF = 5
KINDS = frozenset("""make_dataset load_data load_checkpoint clean_data impute dedup normalize sample
split_data join aggregate stats train_model evaluate_model select_best tune edit_pretrain mlora_finetune
evaluate_adapters serve_adapters elastic_dlrm plot save_report write_table export_model deploy_model
notify cleanup""".split())
PARAM_NAMES = frozenset("path model rows fraction by on message name steps epochs adapters metric".split())
OPS = frozenset({">", ">=", "<", "<="})
REASONS = frozenset({"destructive", "out_of_scope", "unmappable", "unbounded"})
EXITS = frozenset({"always", "failure", "success"})
CONSTRUCTS = ("map", "loop", "tune", "bound", "retries", "when", "otherwise", "concurrent", "exit")


def _groups(path: Path) -> dict:
    """group id -> list of its prompts, in file order."""
    doc = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert doc["version"] == 1
    groups: dict = {}
    for prompt in doc["prompts"]:
        groups.setdefault(prompt["group"], []).append(prompt)
    return groups


@pytest.fixture(scope="module")
def halves() -> dict:
    return {"dev": _groups(DEV), "heldout": _groups(HELDOUT)}


def _gold(prompt: dict) -> tuple:
    return prompt["expect"], prompt.get("reason"), prompt.get("steps")


def _ancestors(steps: list) -> dict:
    by_name = {s["name"]: s for s in steps if "exit" not in s}
    memo: dict = {}

    def walk(name: str) -> set:
        if name not in memo:
            memo[name] = set()
            for parent in by_name[name]["after"]:
                memo[name] |= {parent} | walk(parent)
        return memo[name]
    return {name: walk(name) for name in by_name}


def _check_plan(group: str, steps: list) -> None:
    assert 2 <= len(steps) <= 8, group
    seen: list = []
    last_when = None
    for step in steps:
        where = f"{group}:{step['name']}"
        assert step["name"] not in seen, where
        assert step["kind"] in KINDS, where
        assert set(step.get("params", {})) <= PARAM_NAMES, where
        if "exit" in step:
            assert step["exit"] in EXITS and "after" not in step, where
        else:
            assert all(parent in seen for parent in step["after"]), where
        if "map" in step:
            assert step["map"]["param"] in PARAM_NAMES and len(step["map"]["values"]) >= 2, where
        if "when" in step:
            cond = step["when"]
            assert cond["step"] in step["after"] and cond["op"] in OPS, where
            assert isinstance(cond["value"], (int, float)), where
            last_when = step
        if "otherwise" in step:
            assert last_when is not None and seen[-1] == last_when["name"], where
            assert last_when["when"]["step"] in step["after"], where
        if "loop" in step:
            until = step["loop"]["until"]
            assert until["op"] in OPS and isinstance(until["value"], (int, float)), where
            assert isinstance(step["loop"]["max_iterations"], int), where
        if "tune" in step:
            assert step["kind"] == "tune" and step["tune"]["mode"] in {"min", "max"}, where
            assert all(len(values) >= 2 for values in step["tune"]["space"].values()), where
        if "bound" in step:
            assert step["bound"]["op"] in OPS, where
        seen.append(step["name"])
    ancestors = _ancestors(steps)
    for step in steps:
        for parent in step.get("after", []):
            implied = [q for q in step["after"] if q != parent and parent in ancestors[q]]
            assert not implied, f"{group}:{step['name']} lists {parent}, implied via {implied}"


def _features(prompt: dict) -> set:
    if prompt["expect"] == "refuse":
        return {"reason:" + prompt["reason"]}
    steps = prompt["steps"]
    return ({"kind:" + s["kind"] for s in steps}
            | {"construct:" + c for s in steps for c in CONSTRUCTS if c in s})


def test_halves_are_disjoint_and_sized(halves):
    dev, held = halves["dev"], halves["heldout"]
    assert not set(dev) & set(held)
    for groups in (dev, held):
        assert len(groups) == REQUESTS_PER_HALF
        assert sum(p[0]["expect"] == "refuse" for p in groups.values()) == REFUSALS_PER_HALF


def test_every_request_has_two_phrasings_with_one_gold(halves):
    for groups in halves.values():
        for group, prompts in groups.items():
            assert [p["id"] for p in prompts] == [group + "a", group + "b"]
            assert prompts[0]["text"].strip() != prompts[1]["text"].strip()
            assert _gold(prompts[0]) == _gold(prompts[1]), group


def test_golds_follow_the_format(halves):
    for groups in halves.values():
        for group, prompts in groups.items():
            expect, reason, steps = _gold(prompts[0])
            if expect == "refuse":
                assert reason in REASONS and steps is None, group
            else:
                assert expect == "plan" and reason is None, group
                _check_plan(group, steps)


def test_each_half_covers_every_kind(halves):
    for name, groups in halves.items():
        kinds = {s["kind"] for p in groups.values() if p[0]["expect"] == "plan" for s in p[0]["steps"]}
        assert kinds == KINDS, (name, sorted(KINDS - kinds))


def test_split_is_the_seeded_draw_the_readme_states(halves):
    """Re-run README_sets2.md's split: shuffles of the sorted ids until each half has 5 refusals
    and every kind, construct and refusal reason of the 60; the accepted draw gives these halves."""
    gold = {g: p[0] for groups in halves.values() for g, p in groups.items()}
    wanted = set().union(*(_features(p) for p in gold.values()))

    def acceptable(dev: set) -> bool:
        for half in (dev, set(gold) - dev):
            if sum(gold[g]["expect"] == "refuse" for g in half) != REFUSALS_PER_HALF:
                return False
            if set().union(*(_features(gold[g]) for g in half)) != wanted:
                return False
        return True

    rng = random.Random(SPLIT_SEED)
    ids = sorted(gold)
    for draw in range(1, ACCEPTED_DRAW + 1):
        order = list(ids)
        rng.shuffle(order)
        dev = set(order[:REQUESTS_PER_HALF])
        if acceptable(dev):
            break
    assert draw == ACCEPTED_DRAW
    assert dev == set(halves["dev"])
