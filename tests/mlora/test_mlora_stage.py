"""Stage model: split stages compose to the whole model; checkpoints resume exactly; memory samples."""

from __future__ import annotations

import copy

import torch

from raystack.mlora.batchlora import AdapterSpec, segments_for
from raystack.mlora.memory import ActivationModel
from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel
from tests.mlora.mlora_helpers import tiny_llama

SPEC = AdapterSpec("a", "dora", r=4, alpha=8, dropout=0.1, target_modules=("q_proj", "down_proj", "lm_head"), seed=1)


def _batch(rows=3, seq=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 256, (rows, seq + 1), generator=g)
    return ids[:, :-1], ids[:, 1:]


def _step(stages, key, ids, labels):
    mb = MicroBatch(key, segments_for([("a", ids.shape[0])]), {"a": float(labels.numel())}, ("a",))
    x = ids
    for i, st in enumerate(stages):
        x = st.forward(mb, x, labels if i == len(stages) - 1 else None)
    g = None
    for st in reversed(stages):
        g = st.backward(mb, g)
    return x["a"]


def test_two_stages_train_like_one_and_resume_exactly():
    base = tiny_llama(layers=4)
    whole = StageModel(copy.deepcopy(base), 0, 6)
    split = [StageModel(copy.deepcopy(base), 0, 3), StageModel(copy.deepcopy(base), 3, 6)]
    assert split[0].base.lm_head is None and split[1].base.model.embed_tokens is None
    optim = OptimSpec("adamw", 1e-2, schedule="cosine", warmup_steps=1, total_steps=6)
    for st in [whole, *split]:
        st.add_adapter(SPEC, optim)
    for k in range(3):
        ids, labels = _batch(seed=k)
        assert abs(_step([whole], ("w", k), ids, labels) - _step(split, ("s", k), ids, labels)) < 1e-5
    merged = {**split[0].adapter_state("a"), **split[1].adapter_state("a")}
    ref = whole.adapter_state("a")
    assert merged.keys() == ref.keys()
    assert all(torch.allclose(merged[k], ref[k], atol=1e-6) for k in ref)

    ckpt = whole.checkpoint("a")  # resume from here in a fresh stage: same trajectory
    resumed = StageModel(copy.deepcopy(base), 0, 6)
    resumed.add_adapter(SPEC, optim)
    resumed.restore("a", ckpt)
    for k in range(3, 5):
        ids, labels = _batch(seed=k)
        _step([whole], ("w", k), ids, labels)
        _step([resumed], ("r", k), ids, labels)
    a, b = whole.adapter_state("a"), resumed.adapter_state("a")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_activation_memory_samples_fit_the_memory_model():
    st = StageModel(tiny_llama(layers=2), 0, 4)
    st.add_adapter(SPEC, OptimSpec())
    model = ActivationModel()
    shapes = [(1, 8), (2, 8), (2, 16), (4, 32), (3, 24), (1, 40)]
    for i, (b, l) in enumerate(shapes):
        ids, labels = _batch(b, l, seed=i)
        _step([st], ("m", i), ids, labels)
    for b, l, nbytes in st.activation_bytes:
        model.observe(b, l, nbytes)
    held_out_ids, held_labels = _batch(6, 48, seed=9)
    _step([st], ("m", 99), held_out_ids, held_labels)
    actual = st.activation_bytes[-1][2]
    assert abs(model.predict(6, 48) - actual) / actual < 0.15


def test_stage_loads_only_its_slice_of_a_checkpoint(tmp_path):
    from raystack.mlora.stage import load_stage_base

    base = tiny_llama(layers=4)
    base.save_pretrained(tmp_path / "ckpt")
    ids, labels = _batch(seed=5)
    whole = StageModel(copy.deepcopy(base), 0, 6)
    parts = [StageModel(load_stage_base(str(tmp_path / "ckpt"), a, b), a, b) for a, b in [(0, 2), (2, 6)]]
    assert sum(p.numel() for p in parts[0].base.parameters()) < sum(p.numel() for p in base.parameters()) / 2
    for st in [whole, *parts]:
        st.add_adapter(SPEC, OptimSpec())
    assert abs(_step([whole], ("w",), ids, labels) - _step(parts, ("p",), ids, labels)) < 1e-5
