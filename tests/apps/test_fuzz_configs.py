"""Fuzz every part's config (hypothesis: random types, signs, sizes, NaN, unknown fields).

Each input is either accepted (its commented YAML reads back equal, and a few accepted ones
really run on tiny sizes, leaving no actor or placement group behind) or refused with one
`ConfigError` line naming the fields, before Ray starts (through the real CLI and job script,
exit code 2, no Ray session created). The many examples go through validation and preflight
only (no Ray); the runs and the subprocesses are few, to fit the test budget.
"""
from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raystack.config import ConfigError, config_to_dict, load_config, load_yaml
from raystack.config_render import render_yaml
from raystack.parts import PARTS
from raystack.preflight import ClusterResources, preflight

ROOT = Path(__file__).resolve().parents[2]
GB = 1e9
# the cluster the validation phase judges against (no Ray): the shared test cluster's shape
TEST_CLUSTER = ClusterResources(cpus=4, gpus=0, memory_bytes=16 * GB, node_cpus=4, node_gpus=0,
                                node_memory_bytes=16 * GB, where="the fuzz cluster")
FUZZ = settings(max_examples=250, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

WILD = st.one_of(
    st.integers(min_value=-2**70, max_value=2**70),
    st.sampled_from([0, -1, 1, 2, 3, 2**31, 10**9, 10**18]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.5, 1e-12, 0.5, 0.999, 1.0, 1.5, 7.0, 1e9, float("nan"), float("inf"), float("-inf")]),
    st.text(max_size=10),
    st.sampled_from(["", "edit", "edti", "auto", "cuda", "lora", "dora", "x\x00y", "2e-4", "couler", "adamw", "sgd"]),
    st.none(),
    st.booleans(),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


def tiny(part: str, tmp: Path) -> dict:
    """A config of each part that runs in seconds on the shared 4-CPU test cluster."""
    if part == "edit":
        return {"ranks": 2, "steps": 4, "sync": {"h": 2, "warmup_steps": 1},
                "data": {"max_bytes": 100_000, "batch_size": 2, "seq_len": 32, "eval_batches": 1},
                "run": {"out_dir": str(tmp / "edit"), "checkpoint_every": 0, "eval_every": 0, "cpus_per_rank": 0.5}}
    if part == "mlora":
        return {"output_dir": str(tmp / "mlora"), "eval": False,
                "datasets": [{"name": "rev", "synthetic": "reverse", "num_examples": 32, "eval_examples": 4}],
                "adapters": [{"name": "rev_lora", "r": 4, "alpha": 8.0, "target_modules": ["q_proj", "v_proj"]}],
                "tasks": [{"adapter": "rev_lora", "dataset": "rev", "batch_size": 4, "micro_batch_size": 2,
                           "max_steps": 3, "cutoff_len": 24}],
                "pipeline": {"stages": 2, "window_steps": 3}}
    if part == "elastic":
        return {"name": "fuzz", "work_dir": str(tmp / "elastic"), "poll_s": 0.2, "measure_s": 1.0, "settle_s": 0.5,
                "data": {"generate_rows": 2000, "generate_files": 2, "vocab": 50, "rows_per_shard": 500,
                         "eval_rows": 500, "out_dir": str(tmp / "criteo")},
                "model": {"dim": 4, "bottom": [8], "top": [8], "batch_size": 128},
                "resources": {"autoscale": False, "max_workers": 1, "max_ps": 1, "initial_workers": 1,
                              "initial_ps": 1}}
    return {"store": str(tmp / "store"), "progress": False}


def full(part: str, data: dict) -> dict:
    """Every field of the part's config, ``data`` applied: what the fuzz mutates."""
    return config_to_dict(load_config(PARTS[part].config_class(), data))


def paths(tree, prefix=()):
    """Every path into a nested dict/list, containers included."""
    out = []
    if isinstance(tree, dict):
        for k, v in tree.items():
            out.append((*prefix, k))
            out += paths(v, (*prefix, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out.append((*prefix, i))
            out += paths(v, (*prefix, i))
    return out


def dict_paths(tree, prefix=()):
    return [p for p in [prefix, *paths(tree, prefix)] if isinstance(_get(tree, p[len(prefix):]), dict)]


def _get(tree, path):
    for k in path:
        tree = tree[k]
    return tree


@st.composite
def mutated(draw, base: dict, fields=None) -> dict:
    """``base`` with 1-3 of its values replaced by wild ones, or a misspelt or unknown field
    added; with ``fields``, only those values change, half the time to a value near the old."""
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        if fields is None and draw(st.integers(0, 5)) == 0:
            where = draw(st.sampled_from(dict_paths(data)))
            known = list(_get(data, where)) or ["x"]
            name = draw(st.one_of(st.text(min_size=1, max_size=6),
                                  st.sampled_from(known).map(lambda k: str(k)[:-1] + "_")))
            _get(data, where)[name] = draw(WILD)
            continue
        path = draw(st.sampled_from(fields or paths(data)))
        try:
            parent = _get(data, path[:-1])
            old = parent[path[-1]]
            parent[path[-1]] = draw(near(old) if fields is not None and draw(st.booleans()) else
                                    st.one_of(WILD, near(old)))
        except (KeyError, IndexError, TypeError):  # an earlier mutation replaced the parent
            continue
    return data


def near(old):
    """Values of the old one's type near it: 0, negated, halved, doubled, flipped."""
    if isinstance(old, bool):
        return st.just(not old)
    if isinstance(old, (int, float)):
        return st.sampled_from([0, -old, old / 2 if isinstance(old, float) else old // 2, old * 2, old + 1])
    return st.just(old)


def judge(part: str, data: dict):
    """('accepted', cfg) or ('refused', error); anything else raised is a bug."""
    cls = PARTS[part].config_class()
    try:
        cfg = load_config(cls, data)
        preflight(cfg, TEST_CLUSTER)
    except ConfigError as exc:
        text = str(exc)
        assert "\n" not in text and exc.problems and all(m for _, m in exc.problems), text
        return "refused", exc
    assert load_config(cls, load_yaml(render_yaml(cfg))) == cfg  # --print-config of it reads back
    return "accepted", cfg


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.parametrize("part", sorted(PARTS))
def test_every_input_is_accepted_or_refused_with_named_fields(part, work):
    """Many examples through validation and preflight: no crash, no other error type."""
    seen = {"accepted": 0, "refused": 0}

    @FUZZ
    @given(mutated(config_to_dict(load_config(PARTS[part].config_class(), tiny(part, work)))))
    def check(data):
        verdict, _ = judge(part, data)
        seen[verdict] += 1

    check()
    print(part, seen)
    assert seen["refused"] > 0 and seen["accepted"] > 0, seen


# -- accepted inputs really run -----------------------------------------------------------------

RUN_FIELDS = {  # fields whose any accepted value keeps the run tiny
    "edit": [("mode",), ("inner", "optimizer"), ("inner", "lr"), ("inner", "momentum"), ("inner", "grad_clip"),
             ("outer", "lr"), ("outer", "momentum"), ("outer", "nesterov"), ("penalty", "enabled"),
             ("penalty", "temperature"), ("penalty", "clip"), ("sync", "layerwise"), ("sync", "prefetch"),
             ("run", "seed")],
    "mlora": [("adapters", 0, "type"), ("adapters", 0, "alpha"), ("adapters", 0, "dropout"), ("adapters", 0, "lr"),
              ("adapters", 0, "optimizer"), ("adapters", 0, "schedule"), ("adapters", 0, "warmup_steps"),
              ("tasks", 0, "priority"), ("pipeline", "balance"), ("seed",)],
    "elastic": [("model", "lr_dense"), ("model", "lr_sparse"), ("faults", "straggler_factor"),
                ("faults", "max_relaunches"), ("faults", "max_shard_failures")],
    "workflow": [("cache",), ("eviction",), ("capacity_mb",), ("split_budget",), ("progress",)],
}


def _leftovers() -> tuple[set, set]:
    """Alive actors and placement groups not removed, from the GCS (the session cluster runs
    without a dashboard, which the ray.util.state API needs)."""
    import ray
    from ray._private import state

    actors = {a for a, info in state.actors().items() if info["State"] != "DEAD"}
    groups = {g for g, info in ray.util.placement_group_table().items() if info["state"] != "REMOVED"}
    return actors, groups


def run_tiny(part: str, cfg, tmp: Path) -> None:
    """Run an accepted config through the part's Python entry point."""
    if part == "edit":
        import raystack.edit
        res = raystack.edit.pretrain(cfg, progress=False)
        assert res.metrics["steps"] > 0
    elif part == "mlora":
        import raystack.mlora
        res = raystack.mlora.finetune(cfg, progress=False)
        assert {k for k in res.artifacts if k.startswith("adapter.")} == {"adapter.rev_lora"}
    elif part == "elastic":
        import raystack.elastic
        res = raystack.elastic.train(cfg, progress=False)
        assert res.metrics["lost"] == 0 and res.metrics["duplicated"] == 0
    else:
        from raystack.apps.commands.workflow import _run_ir
        from raystack.workflow import Workflow
        from raystack.workflow import steps as S
        wf = Workflow("fuzz")
        data = wf.step(S.make_dataset, id="data", rows=40)
        wf.step(S.split_data, id="split", data=data)
        assert _run_ir(wf.build(), wf.functions, cfg) == 0


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.parametrize("part", sorted(PARTS))
def test_accepted_inputs_run_on_tiny_sizes_and_leave_nothing(part, ray_cluster, work, capsys):
    base = full(part, tiny(part, work / f"run-{part}"))
    found: list = []

    @settings(max_examples=60, deadline=None, derandomize=True, database=None)
    @given(mutated(base, RUN_FIELDS[part]))
    def pick(data):
        verdict, cfg = judge(part, data)
        if verdict == "accepted" and not found and data != base:
            found.append(cfg)

    pick()
    assert found, "no fuzzed input of this part was accepted"
    before = _leftovers()
    run_tiny(part, found[0], work)
    actors, groups = _leftovers()
    assert actors <= before[0] and groups <= before[1], (actors - before[0], groups - before[1])


# -- refused inputs, through the real entry points ----------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("part, entry", [("edit", "raystack.apps.cli"), ("elastic", "raystack.apps.jobs.elastic")])
def test_refused_inputs_exit_2_in_one_line_before_ray_starts(part, entry, work, tmp_path):
    picked: list = []

    @settings(max_examples=40, deadline=None, derandomize=True, database=None)
    @given(mutated(full(part, tiny(part, work))))
    def pick(data):
        verdict, _ = judge(part, data)
        if verdict == "refused" and len(picked) < 1:
            try:
                picked.append(yaml.safe_dump(data))
            except yaml.YAMLError:
                pass

    pick()
    config = tmp_path / "fuzzed.yaml"
    config.write_text(picked[0])
    env = {**os.environ, "RAY_TMPDIR": str(tmp_path / "raytmp")}
    env.pop("RAY_ADDRESS", None)
    argv = [part] if entry.endswith("cli") else []
    proc = subprocess.run([sys.executable, "-m", entry, *argv, "--config", str(config)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    err = proc.stderr.strip()
    assert proc.returncode == 2 and err.splitlines() == [err], proc.stderr
    assert err.startswith(f"{'raystack ' + part if entry.endswith('cli') else entry}: error: ")
    assert not (tmp_path / "raytmp").exists()  # no Ray session was ever started
