"""The FSDP peer's sharded base: exact against one process, and only a layer or two gathered."""

from __future__ import annotations

import copy

import pytest
import torch

from mlora_helpers import tiny_gpt2, tiny_llama
from raystack.mlora.batchlora import AdapterSpec, is_linear, segments_for
from raystack.mlora.sharding import ShardedBase, ShardedLinear, split_rows
from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel
from raystack.models.layout import layout_of

SPECS = {"llama": [AdapterSpec("a", r=4, alpha=8, target_modules=("q_proj", "v_proj", "down_proj"), seed=1),
                   AdapterSpec("b", "dora", r=2, alpha=4, target_modules=("o_proj", "up_proj"), seed=2)],
         "gpt2": [AdapterSpec("a", r=4, alpha=8, target_modules=("c_attn", "c_proj"), seed=1),  # Conv1D layers
                  AdapterSpec("b", "dora", r=2, alpha=4, target_modules=("c_fc",), seed=2)]}
LAYERS, STEPS, WORLD = 3, 2, 2


class _Done:
    def __init__(self, parts):
        self.parts = parts

    def wait(self):
        return [p.clone() for p in self.parts]


def _batch(step):
    g = torch.Generator().manual_seed(step)
    ids, labels = torch.randint(0, 256, (5, 12), generator=g), torch.randint(0, 256, (5, 12), generator=g)
    segs = segments_for([("a", 3), ("b", 2)])
    denominators = {s.adapter: float((s.end - s.start) * 12) for s in segs}
    return MicroBatch((step,), segs, denominators), ids, labels


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_sharded_workers_train_adapters_as_one_process_holding_at_most_two_layers(family):
    base = (tiny_llama if family == "llama" else tiny_gpt2)(layers=LAYERS)
    specs = SPECS[family]
    units = LAYERS + 2
    whole = StageModel(copy.deepcopy(base), 0, units)
    chunks = {}
    ranks, shardings = [], []
    for rank in range(WORLD):
        model = copy.deepcopy(base)
        shardings.append(ShardedBase(model, rank, WORLD, lambda i, chunk: _Done([chunks[(i, r)] for r in range(WORLD)])))
        ranks.append(StageModel(model, 0, units))
        for i, shard in enumerate(shardings[-1].shards):
            chunks[(i, rank)] = shard.chunk
    first = layout_of(ranks[0].base).layers(ranks[0].base)[0]  # every linear of a layer is sharded
    assert {type(m) for m in first.modules() if is_linear(m)} == {ShardedLinear}
    assert all(s.chunk.numel() * WORLD >= s.offsets[-1] for s in shardings[0].shards)
    for st in [whole, *ranks]:
        for spec in specs:
            st.add_adapter(spec, OptimSpec("sgd", lr=0.05))  # linear in the gradient: no Adam amplification of rounding
    for sb in shardings:  # DoRA's initial magnitudes needed every layer's weights
        sb.finish()
        sb.reset_stats()
    for step in range(STEPS):
        mb, ids, labels = _batch(step)
        whole.train_step([(MicroBatch(mb.key, mb.segments, mb.denominators, ("a", "b")), ids, labels)])
        for st, sb, part in zip(ranks, shardings, split_rows(mb, ids, labels, WORLD)):
            st.forward(*part)
            st.backward(part[0])
            sb.finish()
            assert all(s.full is None for s in sb.shards)  # nothing stays gathered between steps
        for spec in specs:  # the all-reduce of the adapters' gradients
            for ps in zip(*(st.model.adapter_parameters(spec.name) for st in ranks)):
                total = sum(p.grad for p in ps)
                for p in ps:
                    p.grad = total.clone()
        for st in ranks:
            st.step_adapters(["a", "b"])
    for spec in specs:
        ref = whole.model.adapter_state(spec.name)
        for st in ranks:
            got = st.model.adapter_state(spec.name)
            assert max(float((got[k] - ref[k]).abs().max()) for k in ref) < 1e-5, spec.name
    for sb in shardings:
        # each layer gathered for the forward and again for the backward, but the last layer once
        assert sb.gathers == STEPS * (2 * LAYERS - 1)
        assert sb.max_gathered <= 2  # the running layer and the one prefetched


def test_split_rows_gives_each_rank_its_share_of_every_adapter():
    mb, ids, labels = _batch(0)
    parts = split_rows(mb, ids, labels, 2)
    assert [[(s.adapter, s.end - s.start) for s in p[0].segments] for p in parts] == [[("a", 1), ("b", 1)],
                                                                                       [("a", 2), ("b", 1)]]
    assert torch.equal(torch.cat([parts[0][1][:1], parts[1][1][:2]]), ids[:3])
    assert all(p[0].denominators == mb.denominators for p in parts)
