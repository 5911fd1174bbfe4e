"""PEFT export: peft loads raystack's adapters and computes the same logits."""

from __future__ import annotations

import copy

import pytest
import torch

from raystack.mlora.batchlora import AdapterSpec, BatchLoRAModel, segments_for
from raystack.mlora.export import load_peft_adapter, read_peft, save_peft
from tests.mlora.mlora_helpers import tiny_llama

peft = pytest.importorskip("peft")


@pytest.mark.parametrize("kind", ["lora", "dora"])
def test_exported_adapter_loads_in_peft_with_same_logits(tmp_path, kind):
    base = tiny_llama(seed=3)
    model = BatchLoRAModel(copy.deepcopy(base))
    spec = AdapterSpec("t", kind, r=4, alpha=12, dropout=0.1, target_modules=("q_proj", "v_proj", "gate_proj"), seed=5)
    model.add_adapter(spec)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():  # as after training: B and the magnitude moved away from their init
        for w in model.adapter_weights("t").values():
            w.lora_B.normal_(0, 0.2, generator=g)
            if w.magnitude is not None:
                w.magnitude.mul_(1 + 0.1 * torch.randn(w.magnitude.shape, generator=g))
    model.eval()
    ids = torch.randint(0, 256, (3, 10), generator=g)
    ours = model(ids, segments_for([("t", 3)]))
    out = save_peft(tmp_path / "t", spec, model.adapter_state("t"), base_name="tiny")
    loaded = peft.PeftModel.from_pretrained(copy.deepcopy(base), str(out)).eval()
    theirs = loaded(input_ids=ids).logits
    assert (ours - theirs).abs().max() < 1e-4
    assert (ours - base(input_ids=ids).logits).abs().max() > 1e-3  # the adapter does something

    again = BatchLoRAModel(copy.deepcopy(base)).eval()
    spec2 = load_peft_adapter(again, out, "t2")
    assert spec2.kind == kind and spec2.r == 4
    assert torch.allclose(again(ids, segments_for([("t2", 3)])), ours, atol=1e-6)


def test_read_peft_rejects_non_adapter_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="adapter_config.json"):
        read_peft(tmp_path, "x")
