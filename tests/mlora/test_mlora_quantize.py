"""int8 frozen bases: logits near fp32's, exact gradients for the adapters, export unchanged."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from raystack.config import ConfigError
from raystack.mlora.batchlora import AdapterSpec, BatchLoRAModel, segments_for
from raystack.mlora.config import load_mlora_config
from raystack.mlora.export import save_peft
from raystack.mlora.quantize import Int8Linear, quantize_base
from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel
from raystack.mlora.trainer import train_single_process
from raystack.models import build_model
from raystack.models.layout import layout_of
from tests.mlora.mlora_helpers import tiny_gpt2

peft = pytest.importorskip("peft")

SPEC = AdapterSpec("a", r=4, alpha=8, dropout=0.1, target_modules=("q_proj", "v_proj", "down_proj"), seed=1)
# GPT-2's Conv1D layers ([in, out] weights, biases), a DoRA adapter among them (it reads the
# dequantised weight through dense_weight)
GPT2_SPECS = (AdapterSpec("a", r=4, alpha=8, dropout=0.1, target_modules=("c_attn", "c_fc"), seed=1),
              AdapterSpec("b", "dora", r=2, alpha=4, target_modules=("c_proj",), seed=2))
# the bound on tiny-1m (random weights): int8 per-row rounding moves each weight by at most
# 1/254 of its row's largest; through 4 layers the logits move by 1.6% of their spread (RMS)
# and the next-token distributions by a KL of 6e-6
LOGIT_RMS_BOUND = 0.04  # RMS(logits_int8 - logits_fp32) / std(logits_fp32)
KL_BOUND = 1e-4


def _batch(rows=4, seq=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (rows, seq), generator=g), torch.randint(0, 256, (rows, seq), generator=g)


def _drift(ref: torch.Tensor, other: torch.Tensor) -> tuple[float, float]:
    rms = float((other - ref).pow(2).mean().sqrt() / ref.std())
    p, q = ref.log_softmax(-1), other.log_softmax(-1)
    return rms, float((p.exp() * (p - q)).sum(-1).mean())


def test_int8_base_logits_within_the_stated_bound_of_fp32():
    fp32 = build_model("tiny-1m").eval()
    int8 = copy.deepcopy(fp32)
    report = quantize_base(int8)
    assert report.layers == 4 * 7 and report.ratio < 0.27  # int8 + one fp32 scale per row
    assert all(isinstance(m, Int8Linear) for layer in int8.model.layers for m in layer.modules()
               if isinstance(m, (nn.Linear, Int8Linear)))
    ids, _ = _batch()
    with torch.no_grad():
        ref, got = fp32(input_ids=ids).logits, int8(input_ids=ids).logits
    rms, kl = _drift(ref, got)
    assert 1e-4 < rms < LOGIT_RMS_BOUND and kl < KL_BOUND


def _int8_and_dense(base, block):
    """``base`` quantised, and a copy whose int8 layers are nn.Linear layers holding the same
    dequantised weights (and biases)."""
    quantize_base(base, block=block)
    dense = copy.deepcopy(base)
    for layer in layout_of(dense).layers(dense):
        for name, m in list(layer.named_modules()):
            if isinstance(m, Int8Linear):
                lin = nn.Linear(m.in_features, m.out_features, bias=m.bias is not None)
                lin.weight = nn.Parameter(m.weight.detach().clone(), requires_grad=False)
                if m.bias is not None:
                    lin.bias = nn.Parameter(m.bias.detach().clone(), requires_grad=False)
                parent, _, child = name.rpartition(".")
                setattr(layer.get_submodule(parent), child, lin)
    return base, dense


@pytest.mark.parametrize("family,block", [("llama", 2**21), ("llama", 1000), ("gpt2", 1000)])
def test_int8_layers_give_adapters_the_gradients_of_their_dequantised_weights(family, block):
    """The int8 layer's own backward (input gradient only) against autograd through nn.Linear
    holding the same, dequantised weights: adapters train identically (Llama: whole layers, and
    blocks of 7 rows of 128 or 2 of 352; GPT-2's Conv1D layers, LoRA and DoRA, in blocks)."""
    int8, dense = _int8_and_dense(build_model("tiny-1m") if family == "llama" else tiny_gpt2(), block)
    specs = (SPEC,) if family == "llama" else GPT2_SPECS
    if family == "gpt2":  # every Conv1D of the blocks became int8: c_attn, c_proj, c_fc, mlp.c_proj
        assert sum(isinstance(m, Int8Linear) for m in int8.modules()) == 3 * 4
    stages = [StageModel(m, 0, layout_of(m).num_units(m)) for m in (int8, dense)]
    for st in stages:
        for spec in specs:
            st.add_adapter(spec, OptimSpec(lr=1e-2))
    segs = segments_for([(spec.name, 4 // len(specs)) for spec in specs])
    for step in range(3):
        ids, labels = _batch(seed=step)
        for st in stages:
            st.train_step([(MicroBatch((step,), segs, {}, tuple(s.name for s in specs)), ids, labels)])
    for spec in specs:
        a, b = (st.model.adapter_state(spec.name) for st in stages)
        assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-5, spec.name
        assert any(not torch.equal(a[k], torch.zeros_like(a[k])) for k in a if k.endswith("lora_B"))


def test_adapters_trained_on_an_int8_base_load_on_the_fp32_base_in_peft(tmp_path):
    build_model("tiny-1m").save_pretrained(tmp_path / "base")  # the user's full-precision checkpoint
    cfg = load_mlora_config({
        "base": str(tmp_path / "base"), "quantize": "int8", "output_dir": str(tmp_path / "run"),
        "datasets": [{"name": "copy", "synthetic": "copy", "num_examples": 32}],
        "adapters": [{"name": "a", "r": 4, "alpha": 8, "lr": 1e-2, "target_modules": ["q_proj", "v_proj", "lm_head"]}],
        "tasks": [{"adapter": "a", "dataset": "copy", "batch_size": 4, "micro_batch_size": 4, "max_steps": 4,
                   "cutoff_len": 16}]})
    stage, jobs = train_single_process(cfg)
    assert isinstance(stage.base.model.layers[0].self_attn.q_proj.base, Int8Linear)
    exported = save_peft(tmp_path / "a", cfg.adapter("a").spec(), stage.model.adapter_state("a"), cfg.base)
    fp32 = build_model(cfg.base).eval()
    on_fp32 = peft.PeftModel.from_pretrained(fp32, str(exported)).eval()
    ids, _ = _batch(seed=9)
    with torch.no_grad():
        theirs = on_fp32(input_ids=ids).logits
        ours = stage.model.eval()(ids, segments_for([("a", 4)]))
        bare = build_model(cfg.base).eval()(input_ids=ids).logits
    assert (theirs - bare).abs().max() > 1e-3  # the trained adapter changes the fp32 model
    rms, kl = _drift(ours, theirs)  # the same adapter on the int8 base vs in peft on fp32
    assert rms < LOGIT_RMS_BOUND and kl < KL_BOUND


def test_unknown_quantisation_is_a_config_error():
    # (the config system's wording for an Optional[Literal] field: null is allowed too)
    with pytest.raises(ConfigError, match="quantize: expected null or one of 'int8', got 'int4'"):
        load_mlora_config({"quantize": "int4"})
    with pytest.raises(ValueError, match="quantize must be one of"):
        quantize_base(BatchLoRAModel(build_model("tiny-1m")).base_model, "nf4")


def test_preflight_counts_an_int8_base_at_a_byte_a_decoder_weight():
    """The preflight's memory estimate follows ``quantize``: a job that fits only with the int8
    base is not refused for the fp32 base's bytes."""
    from raystack.preflight.mlora import preflight_mlora

    fp32 = preflight_mlora(load_mlora_config({"tasks": [{"adapter": "reverse_lora", "dataset": "reverse"}]}))
    int8 = preflight_mlora(load_mlora_config({"quantize": "int8",
                                              "tasks": [{"adapter": "reverse_lora", "dataset": "reverse"}]}))
    model = build_model("tiny-1m")
    layers = sum(p.numel() for p in model.model.layers.parameters())
    # every decoder weight a byte instead of 4 (tiny-1m: the embeddings and head are the rest)
    assert fp32.memory_bytes - int8.memory_bytes == pytest.approx(3.0 * layers, rel=0.01)
