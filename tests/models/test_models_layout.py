"""Every supported family splits into pipeline units that run like the whole model."""
from __future__ import annotations

import copy

import pytest
import torch

from raystack.mlora.batchlora import AdapterSpec, BatchLoRAModel, linear_module_names, segments_for
from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel, load_stage_base
from raystack.models.layout import layout_of


def _tiny(family: str) -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, MistralConfig, \
        MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM

    common = dict(vocab_size=120, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    if family == "llama":
        return LlamaForCausalLM(LlamaConfig(**common)).eval()
    if family == "qwen2":  # its last layer uses sliding-window attention over 4 tokens
        return Qwen2ForCausalLM(Qwen2Config(**common, use_sliding_window=True, sliding_window=4, max_window_layers=2,
                                            tie_word_embeddings=True)).eval()
    if family == "mistral":
        return MistralForCausalLM(MistralConfig(**common, sliding_window=4)).eval()
    return GPT2LMHeadModel(GPT2Config(vocab_size=120, n_embd=32, n_layer=3, n_head=4, n_positions=64,
                                      bos_token_id=0, eos_token_id=1)).eval()


FAMILIES = ["llama", "qwen2", "mistral", "gpt2"]


@pytest.mark.parametrize("family", FAMILIES)
def test_stages_of_every_family_compose_to_the_model(family, tmp_path):
    model = _tiny(family)
    ids = torch.randint(0, 120, (2, 12), generator=torch.Generator().manual_seed(1))
    want = model(input_ids=ids).logits
    # split in memory, and loaded from a save_pretrained checkpoint, one slice per stage
    model.save_pretrained(tmp_path)
    for make in (lambda a, b: copy.deepcopy(model), lambda a, b: load_stage_base(str(tmp_path), a, b)):
        stages = [StageModel(make(a, b), a, b) for a, b in [(0, 2), (2, 4), (4, 5)]]
        h = ids
        with torch.no_grad():
            for st in stages:
                h = st._run(h)
        torch.testing.assert_close(h, want, atol=1e-5, rtol=1e-5)
    layers = layout_of(model).layers(model)  # the middle stage holds its two layers, nothing else
    assert sum(p.numel() for p in stages[1].base.parameters()) == sum(p.numel() for i in (1, 2)
                                                                      for p in layers[i].parameters())


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_packed_rows_attend_within_each_example(family):
    """Two examples packed in one row, positions restarting: the same logits as apart."""
    model = _tiny(family)
    a, b = torch.randint(0, 120, (1, 5)), torch.randint(0, 120, (1, 7))
    stage = StageModel(copy.deepcopy(model), 0, 5)
    with torch.no_grad():
        packed = stage._run(torch.cat([a, b], 1), torch.cat([torch.arange(5), torch.arange(7)]).unsqueeze(0))
        apart = [model(input_ids=x).logits for x in (a, b)]
    torch.testing.assert_close(packed, torch.cat(apart, 1), atol=1e-5, rtol=1e-5)


def test_gpt2_conv1d_layers_take_adapters_that_peft_loads(tmp_path):
    """GPT-2 keeps its weights transposed (Conv1D): LoRA and DoRA still equal peft's."""
    peft = pytest.importorskip("peft")
    from raystack.mlora.export import BaseRef, save_peft

    base = _tiny("gpt2")
    assert {"c_attn", "c_fc", "c_proj"} <= linear_module_names(base)
    ids = torch.randint(0, 120, (2, 9), generator=torch.Generator().manual_seed(2))
    for kind in ("lora", "dora"):
        model = BatchLoRAModel(copy.deepcopy(base))
        spec = AdapterSpec(kind, kind, r=4, alpha=8, target_modules=("c_attn", "c_fc"))
        model.add_adapter(spec)
        with torch.no_grad():
            for w in model.adapter_weights(kind).values():
                w.lora_B.normal_(0, 0.3)
        model.eval()
        ours = model(ids, segments_for([(kind, 2)]))
        out = save_peft(tmp_path / kind, spec, model.adapter_state(kind), BaseRef("gpt2-tiny", None, True))
        theirs = peft.PeftModel.from_pretrained(copy.deepcopy(base), str(out)).eval()(input_ids=ids).logits
        assert (ours - theirs).abs().max() < 1e-4, kind
        assert (ours - base(input_ids=ids).logits).abs().max() > 1e-3


def test_a_gpt2_stage_trains_its_slice():
    base = _tiny("gpt2")
    spec = AdapterSpec("a", "lora", r=2, alpha=4, target_modules=("c_attn", "lm_head"))
    stages = [StageModel(copy.deepcopy(base), 0, 3), StageModel(copy.deepcopy(base), 3, 5)]
    whole = StageModel(copy.deepcopy(base), 0, 5)
    ids = torch.randint(0, 120, (2, 10), generator=torch.Generator().manual_seed(3))
    labels = torch.roll(ids, -1, 1)
    for st in [*stages, whole]:
        st.model.eval()  # GPT-2's own dropout off: the split and the whole see the same numbers
        st.add_adapter(spec, OptimSpec(lr=1e-2))
    mb = MicroBatch(("k",), segments_for([("a", 2)]), {"a": float(labels.numel())}, ("a",))
    x = stages[0].forward(mb, ids)
    loss = stages[1].forward(mb, x, labels)["a"]
    stages[0].backward(mb, stages[1].backward(mb))
    assert abs(loss - whole.train_step([(mb, ids, labels)])["a"]) < 1e-5
    merged = {**stages[0].adapter_state("a"), **stages[1].adapter_state("a")}
    ref = whole.adapter_state("a")
    assert merged.keys() == ref.keys() and all(torch.allclose(merged[k], ref[k], atol=1e-6) for k in ref)


def test_unknown_families_are_refused_by_name():
    from transformers import GPTNeoXConfig

    with pytest.raises(ValueError, match="model_type 'gpt_neox' is not supported"):
        layout_of(GPTNeoXConfig())


@pytest.mark.parametrize("family", ["qwen2", "gpt2"])
def test_edit_blocks_cover_every_parameter_once_in_forward_order(family):
    """EDiT syncs a model block by block: every parameter in exactly one block (tied embeddings
    once), each block's hook module run in order by the model's own forward."""
    from raystack.edit.shard import llama_blocks

    model = _tiny(family)
    blocks = llama_blocks(model)
    owned = [id(p) for b in blocks for p in b.params]
    assert len(owned) == len(set(owned)) == len(list(model.parameters()))
    order: list[str] = []
    handles = [b.module.register_forward_pre_hook(lambda m, a, name=b.name: order.append(name)) for b in blocks]
    model(input_ids=torch.zeros(1, 4, dtype=torch.long))
    for h in handles:
        h.remove()
    assert order == [b.name for b in blocks] and order[0] == "embed" and order[-1] == "head" and len(order) == 5
