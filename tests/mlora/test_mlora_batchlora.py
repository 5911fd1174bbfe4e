"""BatchLoRA: batched adapters give exactly the gradients of separate training."""

from __future__ import annotations

import copy

import pytest
import torch

from raystack.mlora.batchlora import AdapterSpec, BatchLoRAModel, per_adapter_loss, segments_for
from tests.mlora.mlora_helpers import tiny_llama

SPECS = [
    AdapterSpec("a", "lora", r=4, alpha=8, dropout=0.1, target_modules=("q_proj", "v_proj"), seed=1),
    AdapterSpec("b", "dora", r=2, alpha=4, dropout=0.2, target_modules=("q_proj", "o_proj", "down_proj"), seed=2),
    AdapterSpec("c", "lora", r=8, alpha=8, dropout=0.0, target_modules=("k_proj", "up_proj"), seed=3),
]


def _randomise_b(model: BatchLoRAModel, name: str, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for w in model.adapter_weights(name).values():
            w.lora_B.copy_(torch.randn(w.lora_B.shape, generator=g) * 0.1)


def _data(rows: int, seed: int, seq: int = 12) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, 256, (rows, seq + 1), generator=g)
    labels = ids[:, 1:].clone()
    labels[:, :3] = -100
    return ids[:, :-1], labels


def _make(specs, base):
    model = BatchLoRAModel(copy.deepcopy(base)).train()
    for i, s in enumerate(specs):
        model.add_adapter(s)
        _randomise_b(model, s.name, 100 + i)
    return model


def test_batched_gradients_equal_separate_training_with_dropout():
    base = tiny_llama()
    rows = {"a": 3, "b": 2, "c": 4}
    data = {n: _data(r, i) for i, (n, r) in enumerate(rows.items())}
    batched = _make(SPECS, base)
    segs = segments_for([(n, rows[n]) for n in rows])
    ids = torch.cat([data[n][0] for n in rows])
    labels = torch.cat([data[n][1] for n in rows])
    history = []
    for _ in range(2):  # two passes: the dropout streams advance identically
        batched.zero_grad()
        losses = per_adapter_loss(batched(ids, segs), labels, segs)
        sum(losses.values()).backward()
        history.append({k: v.detach() for k, v in losses.items()})
    # separate: rebuild each adapter from scratch and replay both steps alone
    grads_batched = {s.name: [p.grad.clone() for p in batched.adapter_parameters(s.name)] for s in SPECS}
    for i, spec in enumerate(SPECS):
        alone = BatchLoRAModel(copy.deepcopy(base)).train()
        alone.add_adapter(spec)
        _randomise_b(alone, spec.name, 100 + i)
        seg = segments_for([(spec.name, rows[spec.name])])
        for step in range(2):
            alone.zero_grad()
            loss = per_adapter_loss(alone(data[spec.name][0], seg), data[spec.name][1], seg)[spec.name]
            loss.backward()
            assert torch.allclose(loss.detach(), history[step][spec.name], atol=1e-6, rtol=0)
        for gb, ga in zip(grads_batched[spec.name], [p.grad for p in alone.adapter_parameters(spec.name)]):
            assert torch.allclose(gb, ga, atol=1e-6, rtol=0), (spec.name, (gb - ga).abs().max())
        assert any(g.abs().sum() > 0 for g in grads_batched[spec.name])


def test_training_one_adapter_never_changes_another():
    base = tiny_llama()
    model = _make(SPECS[:2], base)
    before = model.adapter_state("b")
    opt = torch.optim.AdamW(model.adapter_parameters("a"), lr=1e-2)
    ids, labels = _data(4, 7)
    segs = segments_for([("a", 4)])
    for _ in range(3):
        opt.zero_grad()
        per_adapter_loss(model(ids, segs), labels, segs)["a"].backward()
        opt.step()
    assert all(p.grad is None for p in model.adapter_parameters("b"))
    after = model.adapter_state("b")
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_rows_without_adapter_and_fresh_adapters_match_base():
    base = tiny_llama()
    model = BatchLoRAModel(copy.deepcopy(base)).eval()
    for s in SPECS:
        model.add_adapter(s)  # B = 0: every adapter starts as the identity
    ids, _ = _data(6, 3)
    ref = base(input_ids=ids).logits
    out = model(ids, segments_for([("a", 2), ("b", 2), ("c", 2)]))
    assert torch.allclose(out, ref, atol=1e-5)
    _randomise_b(model, "a", 5)
    out = model(ids, segments_for([("a", 2)]))
    assert not torch.allclose(out[:2], ref[:2], atol=1e-4)
    assert torch.allclose(out[2:], ref[2:], atol=1e-5)


def test_bad_segments_and_duplicates_rejected():
    model = BatchLoRAModel(tiny_llama())
    model.add_adapter(SPECS[0])
    with pytest.raises(ValueError):
        model.add_adapter(SPECS[0])
    ids, _ = _data(2, 0)
    with pytest.raises(ValueError):
        model(ids, segments_for([("a", 3)]))
