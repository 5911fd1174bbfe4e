"""Adapters peft writes, with every LoRA/DoRA option: the same logits in raystack, or refused by name."""
from __future__ import annotations

import copy

import pytest
import torch

from raystack.mlora.batchlora import BatchLoRAModel, segments_for
from raystack.mlora.export import AdapterFormatError, BaseRef, load_peft_adapter, read_peft, save_peft
from tests.mlora.mlora_helpers import tiny_llama

peft = pytest.importorskip("peft")

ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
SUPPORTED = {
    "rslora": dict(r=4, lora_alpha=16, use_rslora=True, target_modules=["q_proj", "v_proj"]),
    "patterns": dict(r=4, lora_alpha=8, target_modules=ALL, rank_pattern={"q_proj": 2, "model.layers.1.mlp.down_proj": 6},
                     alpha_pattern={"v_proj": 3, "layers.0.self_attn.o_proj": 20}),
    "layers": dict(r=4, lora_alpha=8, target_modules=["q_proj", "up_proj"], layers_to_transform=[1],
                   layers_pattern="layers"),
    "lm_head": dict(r=4, lora_alpha=8, target_modules=["q_proj", "lm_head"]),
    "lora_bias": dict(r=4, lora_alpha=8, target_modules=["k_proj", "down_proj"], lora_bias=True),
    "dora": dict(r=4, lora_alpha=8, target_modules=["q_proj", "up_proj"], use_dora=True, use_rslora=True,
                 rank_pattern={"up_proj": 2}),
    "regex": dict(r=2, lora_alpha=4, target_modules=r".*\.layers\.0\..*(q_proj|gate_proj)"),
}
REFUSED = {
    "bias": (dict(target_modules=["q_proj"], bias="all"), "bias='all'"),
    "modules_to_save": (dict(target_modules=["q_proj"], modules_to_save=["lm_head"]), "modules_to_save"),
    "trainable_tokens": (dict(target_modules=["q_proj"], trainable_token_indices=[3, 5]), "trainable_token_indices"),
    "embedding": (dict(target_modules=["embed_tokens", "q_proj"]), "embed_tokens"),
}


def _peft_adapter(base, directory, options: dict, seed: int = 0):
    """An adapter as peft trains it: created by peft, weights moved off their init, saved."""
    model = peft.get_peft_model(copy.deepcopy(base), peft.LoraConfig(**options))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.requires_grad:
                p.add_(torch.randn(p.shape, generator=g) * (0.05 if "magnitude" in name else 0.2))
    model.save_pretrained(str(directory))
    return model.eval()


@pytest.mark.parametrize("option", sorted(SUPPORTED))
def test_peft_written_adapters_give_peft_logits_in_raystack(tmp_path, option):
    base = tiny_llama(seed=4, layers=2)
    theirs = _peft_adapter(base, tmp_path / option, SUPPORTED[option])
    ids = torch.randint(0, 256, (3, 11), generator=torch.Generator().manual_seed(1))
    want = theirs(input_ids=ids).logits
    ours = BatchLoRAModel(copy.deepcopy(base)).eval()
    load_peft_adapter(ours, tmp_path / option, "x")
    got = ours(ids, segments_for([("x", 3)]))
    assert (got - want).abs().max() < 1e-5
    assert (want - base(input_ids=ids).logits).abs().max() > 1e-3  # the adapter changes the output
    # and raystack writes it back in a form peft reads the same way
    spec, state = read_peft(tmp_path / option, "x")
    again = peft.PeftModel.from_pretrained(copy.deepcopy(base), str(save_peft(tmp_path / "again", spec, state)))
    assert (again.eval()(input_ids=ids).logits - want).abs().max() < 1e-5


@pytest.mark.parametrize("option", sorted(REFUSED))
def test_options_raystack_cannot_reproduce_are_refused_by_name(tmp_path, option):
    options, name = REFUSED[option]
    _peft_adapter(tiny_llama(seed=4, layers=2), tmp_path / option, dict(r=2, lora_alpha=4, **options))
    with pytest.raises(AdapterFormatError, match=name.replace("[", r"\[")):
        load_peft_adapter(BatchLoRAModel(tiny_llama(seed=4, layers=2)), tmp_path / option, "x")


def test_an_adapter_is_refused_on_other_base_weights(tmp_path):
    base = tiny_llama(seed=4, layers=2)
    _peft_adapter(base, tmp_path / "head", SUPPORTED["lm_head"])
    other = tiny_llama(seed=5, layers=2)  # same shapes, other weights: peft's saved head differs
    with pytest.raises(AdapterFormatError, match="lm_head.base_layer.weight differs"):
        load_peft_adapter(BatchLoRAModel(other), tmp_path / "head", "x")

    model = BatchLoRAModel(copy.deepcopy(base))
    spec = read_peft(tmp_path / "head", "x")[0]
    model.add_adapter(spec)
    save_peft(tmp_path / "ours", spec, model.adapter_state("x"), BaseRef("my-base", "a" * 64))
    load_peft_adapter(BatchLoRAModel(copy.deepcopy(base)), tmp_path / "ours", "y", base_sha256="a" * 64)
    with pytest.raises(AdapterFormatError, match="trained on base 'my-base'.*aaaaaaaaaaaa.*bbbbbbbbbbbb"):
        load_peft_adapter(BatchLoRAModel(copy.deepcopy(base)), tmp_path / "ours", "y", base_sha256="b" * 64)
