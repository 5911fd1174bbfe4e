"""Cache keys, the artifact store, eviction policies and the split of large DAGs (no cluster)."""

from __future__ import annotations

import os
import random

import numpy as np
import pyarrow as pa
import pytest
import torch

import wf_toys as T
from raystack.workflow import ArtifactStore, Workflow, run_local
from raystack.workflow.eviction import CacheEntry, CoulerPolicy, LRUPolicy, TraceAccess, replay
from raystack.workflow.store import CorruptArtifact
from raystack.workflow.ir import Ref, StepSpec, WorkflowIR
from raystack.workflow.split import split, sub_workflow


_wf = T.diamond


def test_store_round_trips_formats(tmp_path):
    store = ArtifactStore(str(tmp_path))
    values = {
        "table": pa.table({"a": [1, 2], "b": ["x", "y"]}),
        "tensor": torch.arange(6, dtype=torch.float32).reshape(2, 3),
        "tensors": {"w": torch.ones(2), "b": torch.zeros(3)},
        "array": np.arange(5, dtype=np.int64),
        "json": {"a": [1, 2.5, None, "s"]},
        "bundle": {"train": pa.table({"x": [1.0]}), "n": 3, "w": torch.ones(2)},
    }
    fmts = {}
    for k, v in values.items():
        fmts[k] = store.put(k * 2 + "0" * 8, k, v).format
        got = store.get(k * 2 + "0" * 8)
        if isinstance(v, torch.Tensor):
            assert torch.equal(got, v)
        elif isinstance(v, dict) and k == "tensors":
            assert all(torch.equal(got[n], v[n]) for n in v)
        elif isinstance(v, np.ndarray):
            assert (got == v).all()
        elif k == "bundle":
            assert got["train"] == v["train"] and got["n"] == 3 and torch.equal(got["w"], v["w"])
        else:
            assert got == v
    assert fmts["table"] == "parquet" and fmts["tensor"].startswith("safetensors")
    assert fmts["array"] == "safetensors-numpy" and fmts["json"] == "json"
    assert fmts["bundle"] == "bundle"


def test_corrupted_artifact_detected_and_recomputed(tmp_path):
    store = ArtifactStore(str(tmp_path / "s"))
    ir = _wf(None)
    run_local(ir, store=store)
    # flip bytes of the 'a' artifact
    key = [m for m in store.entries() if m.step == "a"][0].key
    with store.fs.open_output_stream(f"{store._dir(key)}/data") as f:
        f.write(b"[999]")
    with pytest.raises(CorruptArtifact):
        store.get(key)
    rep = run_local(ir, store=store)
    assert rep.executed == ["a"]
    assert rep.output("sum") == 72.0


def test_unchanged_rerun_executes_nothing_and_change_runs_its_cone(tmp_path):
    store = ArtifactStore(str(tmp_path / "s"))
    log = str(tmp_path / "log")
    assert len(run_local(_wf(log), store=store).executed) == 6
    open(log, "w").close()
    rep = run_local(_wf(log), store=store)
    assert rep.executed == [] and open(log).read() == ""
    rep = run_local(_wf(log, factor=3.0), store=store)
    assert sorted(rep.executed) == ["a", "sum", "ta"]
    assert sorted(open(log).read().split()) == ["add", "scale:3.0", "total"]


def test_ignored_input_does_not_change_key(tmp_path):
    store = ArtifactStore(str(tmp_path / "s"))
    run_local(_wf(str(tmp_path / "l1")), store=store)
    assert run_local(_wf(str(tmp_path / "l2")), store=store).executed == []


def test_failed_run_keeps_finished_artifacts_and_resumes(tmp_path):
    store = ArtifactStore(str(tmp_path / "s"))
    counter = str(tmp_path / "c")

    def build():
        wf = Workflow("resume")
        s = wf.step(T.source, id="src", n=3)
        t = wf.step(T.total, id="t", xs=s)
        f = wf.step(T.flaky, id="f", fail_times=1, counter=counter, after=[t])
        wf.step(T.label, id="end", text="x", after=[f])
        return wf.build()
    rep = run_local(build(), store=store)
    assert rep.status == "failed" and "f" in rep.failed
    assert sorted(rep.executed) == ["src", "t"]
    rep = run_local(build(), store=store)
    assert rep.status == "succeeded" and rep.executed == ["f", "end"]


def test_lru_and_couler_orders():
    entries = [CacheEntry("big-cheap", 1000, 0.1, 1, last_access=1),
               CacheEntry("small-costly", 10, 50.0, 3, last_access=0),
               CacheEntry("mid", 100, 1.0, 1, last_access=2)]
    assert LRUPolicy().victims(entries, 1000) == ["small-costly", "big-cheap"]
    assert CoulerPolicy().victims(entries, 1000) == ["big-cheap"]


def test_couler_beats_lru_on_replayed_trace():
    rng = random.Random(0)
    arts = [TraceAccess(f"k{i}", rng.choice([10, 200, 800]), rng.choice([0.2, 2.0, 20.0]),
                        rng.randint(1, 4)) for i in range(60)]
    trace = [arts[min(int(rng.expovariate(0.08)), 59)] for _ in range(3000)]
    lru = replay(trace, 3000, LRUPolicy())
    couler = replay(trace, 3000, CoulerPolicy())
    assert couler["recompute_s"] < lru["recompute_s"]


def test_store_enforce_capacity(tmp_path):
    store = ArtifactStore(str(tmp_path / "s"), capacity_bytes=300)
    for i in range(5):
        store.put(f"{i:02d}" + "f" * 10, f"s{i}", list(range(30)), compute_s=float(i))
    assert sum(m.size for m in store.entries()) > 300
    evicted = store.enforce(CoulerPolicy())
    assert sum(m.size for m in store.entries()) <= 300
    assert evicted[0].startswith("00")  # cheapest to rebuild goes first


def _random_dag(n: int, seed: int) -> WorkflowIR:
    rng = random.Random(seed)
    steps = []
    for i in range(n):
        k = rng.randint(0, 3) if i else 0
        deps = sorted({f"s{rng.randrange(max(0, i - 50), i)}" for _ in range(k)}) if i else []
        steps.append(StepSpec(f"s{i}", "wf_toys:collect", {"values": [Ref(d) for d in deps]}))
    return WorkflowIR("big", steps)


@pytest.mark.parametrize("n,budget", [(2000, 300), (997, 100), (50, 7)])
def test_split_covers_every_step_once_and_respects_dependencies(n, budget):
    ir = _random_dag(n, seed=n)
    parts = split(ir, max_steps=budget)
    all_steps = [s for p in parts for s in p.steps]
    assert sorted(all_steps) == sorted(s.id for s in ir.steps)
    assert len(all_steps) == len(set(all_steps))
    where = {s: p.index for p in parts for s in p.steps}
    by_id = ir.by_id()
    for p in parts:
        assert len(p.steps) <= budget
        pos = {s: i for i, s in enumerate(p.steps)}
        for s in p.steps:
            for d in by_id[s].deps():
                assert where[d] <= p.index
                if where[d] == p.index:
                    assert pos[d] < pos[s]
        assert all(q < p.index for q in p.depends_on)
    assert sub_workflow(ir, parts[0]).steps[0].id == parts[0].steps[0]


# -- code keys, concurrent writers, persisted eviction state, the memory level -------------------
HELPERS = '''
SCALE = 2

def helper_a(x):
    return x * SCALE

def helper_b(x):
    return x + 1
'''
STEPS = '''
import {h} as H
from {h} import helper_b

def step_a(n: int) -> int:
    return H.helper_a(n)

def step_b(n: int) -> int:
    return helper_b(n)

def step_c(a: int, b: int) -> int:
    return a + b

def step_d(n: int) -> int:
    return n
'''


def _modules(tmp_path, monkeypatch):
    import importlib
    tag = f"m{abs(hash(str(tmp_path))) % 10**8}"
    (tmp_path / f"h_{tag}.py").write_text(HELPERS)
    (tmp_path / f"s_{tag}.py").write_text(STEPS.format(h=f"h_{tag}"))
    monkeypatch.syspath_prepend(str(tmp_path))
    h = importlib.import_module(f"h_{tag}")
    s = importlib.import_module(f"s_{tag}")

    def build():
        wf = Workflow("code")
        a = wf.step(s.step_a, id="a", n=3)
        b = wf.step(s.step_b, id="b", n=3)
        wf.step(s.step_c, id="c", a=a, b=b)
        wf.step(s.step_d, id="d", n=1)
        return wf.build()

    def edit(old, new):
        path = tmp_path / f"h_{tag}.py"
        path.write_text(path.read_text().replace(old, new))
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        importlib.reload(h)
        importlib.reload(s)
    return build, edit


def test_an_edit_to_a_helper_invalidates_exactly_its_callers(tmp_path, monkeypatch):
    store = ArtifactStore(str(tmp_path / "store"))
    build, edit = _modules(tmp_path, monkeypatch)
    assert sorted(run_local(build(), store=store).executed) == ["a", "b", "c", "d"]
    assert run_local(build(), store=store).executed == []
    edit("return x * SCALE", "return x * SCALE  # same value, new code")
    rep = run_local(build(), store=store)
    assert rep.executed == ["a"]            # c reads a's unchanged output: still cached
    edit("SCALE = 2", "SCALE = 3")          # a module constant the helper reads
    rep = run_local(build(), store=store)
    assert rep.executed == ["a", "c"] and rep.output("c") == 9 + 4
    edit("return x + 1", "return x + 2")    # reached through `from ... import`
    assert run_local(build(), store=store).executed == ["b", "c"]


def test_library_versions_are_part_of_the_code_key():
    from raystack.workflow.codehash import code_fingerprint, library_version
    assert library_version("numpy").startswith("numpy==")
    fp = code_fingerprint(S_train)
    import raystack.workflow.codehash as ch
    real = ch.library_version
    try:
        ch.library_version = lambda top: f"{top}==9.9.9"
        assert code_fingerprint(S_train) != fp
    finally:
        ch.library_version = real


def _touch_many(root: str, n: int, who: int) -> None:
    store = ArtifactStore(root)
    for i in range(n):
        store.touch([f"k{who}-{i}", "shared"])


def test_two_processes_writing_one_store_lose_no_access_record(tmp_path):
    import multiprocessing as mp
    root = str(tmp_path / "store")
    ArtifactStore(root)
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_touch_many, args=(root, 150, w)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    acc = ArtifactStore(root).access()
    assert acc["shared"].hits == 300
    assert all(acc[f"k{w}-{i}"].hits == 1 for w in range(2) for i in range(150))
    ArtifactStore(root).compact()
    assert ArtifactStore(root).access()["shared"].hits == 300   # merged, not lost


def test_eviction_state_persists_with_the_store(tmp_path):
    root = str(tmp_path / "s")
    store = ArtifactStore(root, capacity_bytes=300)
    for i in range(5):
        store.put(f"{i:02d}" + "f" * 10, f"s{i}", list(range(30)), compute_s=float(i))
    store.enforce(CoulerPolicy())
    clock = store.eviction_state()["clock"]
    assert clock > 0
    again = ArtifactStore(root, capacity_bytes=300)
    policy = CoulerPolicy()
    again.put("99" + "f" * 10, "late", list(range(30)), compute_s=9.0)
    again.enforce(policy)
    assert policy.clock >= clock                     # continued from the stored clock, not 0


def test_small_outputs_are_served_from_memory_until_the_file_changes(tmp_path):
    store = ArtifactStore(str(tmp_path / "s"), memory_item_bytes=10_000)
    store.put("ab" + "c" * 10, "x", {"v": list(range(10))})
    reads = []
    real = store._read
    store._read = lambda p: reads.append(p) or real(p)
    assert store.get("ab" + "c" * 10)["v"][3] == 3 and store.verify("ab" + "c" * 10)
    assert not any(p.endswith("/data") for p in reads)     # the data came from memory
    big = ArtifactStore(str(tmp_path / "s2"), memory_item_bytes=10)
    big.put("cd" + "e" * 10, "y", {"v": list(range(10))})
    big._read = lambda p: reads.append(p) or real(p)
    big.get("cd" + "e" * 10)
    assert any(p.endswith("/data") for p in reads)         # over the threshold: from the store


from raystack.workflow.steps import train_model as S_train  # noqa: E402
