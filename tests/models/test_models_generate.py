"""Generation with a KV cache, sampling and stop strings; adapters safe from eviction while in use."""
from __future__ import annotations

import pytest
import torch

from raystack.data.sft import greedy_generate
from raystack.mlora.batchlora import AdapterSpec, BatchLoRAModel, Segment
from raystack.mlora.export import save_peft
from raystack.mlora.serving import AdapterNotFound, LoRAEngine
from raystack.models.generate import SamplingParams, causal_lm_step, generate, generate_text


@pytest.fixture(scope="module")
def qwen2(qwen2_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(qwen2_dir).eval(), AutoTokenizer.from_pretrained(qwen2_dir)


def test_kv_cache_generation_matches_transformers_and_stop_strings_cut_the_stream(qwen2):
    model, tok = qwen2
    prompt = tok("anna paints the small apple")["input_ids"]
    want = model.generate(torch.tensor([prompt]), max_new_tokens=12, do_sample=False, eos_token_id=tok.eos_token_id)
    want_text = tok.decode(want[0, len(prompt):], skip_special_tokens=True)
    params = SamplingParams(max_new_tokens=12)
    out = generate_text(causal_lm_step(model), tok, prompt, params, [tok.eos_token_id])
    assert out.text == want_text and out.completion_tokens == 12 and out.finish_reason == "length"

    stop = want_text[len(want_text) // 2:][:3]
    deltas = list(generate(causal_lm_step(model), tok, prompt, SamplingParams(12, stop=(stop,)), [tok.eos_token_id]))
    assert "".join(d.text for d in deltas) == want_text[:want_text.find(stop)]
    assert deltas[-1].finish_reason == "stop" and all(d.finish_reason is None for d in deltas[:-1])


def test_sampling_follows_temperature_top_p_and_seed(qwen2):
    model, tok = qwen2
    prompt = tok("the quiet garden")["input_ids"]
    run = lambda **kw: generate_text(causal_lm_step(model), tok, prompt, SamplingParams(16, **kw)).text  # noqa: E731
    assert run(temperature=1.0, seed=7) == run(temperature=1.0, seed=7)
    assert len({run(temperature=2.0, seed=s) for s in range(4)}) > 1
    assert run(temperature=1.0, top_p=1e-6, seed=3) == run()  # the nucleus holds only the top token: greedy
    with pytest.raises(ValueError, match="top_p"):
        SamplingParams(top_p=0)


def test_an_adapter_evicted_mid_request_finishes_the_request_then_detaches(tmp_path):
    from raystack.models import build_model
    from raystack.models.tokenizer import load_tokenizer

    base = BatchLoRAModel(build_model("tiny-1m", seed=0))
    spec = AdapterSpec("a", "lora", r=4, alpha=8, target_modules=("lm_head", "v_proj"))
    with torch.no_grad():
        base.add_adapter(spec)
        for w in base.adapter_weights("a").values():
            w.lora_B.normal_(0, 3.0, generator=torch.Generator().manual_seed(0))
    save_peft(tmp_path / "my-adapter", spec, base.adapter_state("a"))
    base.eval()
    want = greedy_generate(lambda ids: base(ids, [Segment("a", 0, ids.shape[0])]), ["rev abc="], 10)[0]
    assert want != greedy_generate(lambda ids: base(ids, []), ["rev abc="], 10)[0]

    engine = LoRAEngine(BatchLoRAModel(build_model("tiny-1m", seed=0)), load_tokenizer("tiny-1m"), tmp_path)
    assert engine.adapter_ids() == ["my-adapter"]  # a directory name with a hyphen
    adapter = engine.load("my-adapter")
    stream = engine.stream(engine.prompt_ids("rev abc="), SamplingParams(10), adapter)
    first = next(stream)
    adapter.evict()  # what Ray Serve's LRU does while the request runs
    assert adapter.name in engine.model.specs  # still attached: the request holds it
    assert first.text + "".join(d.text for d in stream) == want
    assert adapter.name not in engine.model.specs  # detached when the request ended
    with pytest.raises(AdapterNotFound, match="my-adapter"):
        engine.complete(engine.prompt_ids("rev abc="), SamplingParams(4), adapter)
    with pytest.raises(AdapterNotFound, match="'nope'"):
        engine.load("nope")
