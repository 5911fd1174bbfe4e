"""mLoRA on a user's Qwen2 checkpoint and JSONL file, then Ray Serve through the OpenAI routes:
the adapter lowers the answer loss as plain transformers + peft measure it, loads anywhere peft
runs, and is served with the base's tokenizer beside an adapter peft trained, concurrently."""
from __future__ import annotations

import json
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest
import torch

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
peft = pytest.importorskip("peft")
PROMPT = "Q: {question}\nA: "


@pytest.fixture(scope="module")
def trained(ray_cluster, tmp_path_factory, qwen2_dir, qa_files):
    """One pipeline run: a LoRA adapter learns the training questions (2 stages, packed rows)."""
    from raystack.actors.mlora import LoRAPipeline
    from raystack.mlora.config import load_mlora_config

    out = tmp_path_factory.mktemp("mlora")
    cfg = load_mlora_config({
        "base": qwen2_dir, "output_dir": str(out),
        "datasets": [{"name": "qa", "path": str(qa_files["train"]), "prompt_template": PROMPT,
                      "response_field": "answer"}],
        "adapters": [{"name": "qa", "r": 8, "alpha": 16, "lr": 2e-2, "seed": 1,
                      "target_modules": ["q_proj", "v_proj", "up_proj", "down_proj", "lm_head"]}],
        "tasks": [{"adapter": "qa", "dataset": "qa", "batch_size": 12, "micro_batch_size": 6, "max_steps": 24,
                   "cutoff_len": 32, "packing": True}],
        "pipeline": {"stages": 2, "window_steps": 12}})
    pipe = LoRAPipeline(cfg, progress=False)
    try:
        result = pipe.run()
    finally:
        pipe.shutdown()
    return result.adapters["qa"]


def _answer_loss(model, tok, records) -> float:
    """Mean loss on the answer tokens (prompt masked), with plain transformers."""
    losses = []
    with torch.no_grad():
        for r in records:
            prompt = tok(PROMPT.format(**r))["input_ids"]
            answer = tok(r["answer"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            ids = torch.tensor([prompt + answer])
            labels = torch.tensor([[-100] * len(prompt) + answer])
            losses.append(float(model(input_ids=ids, labels=labels).loss))
    return sum(losses) / len(losses)


def test_the_adapter_lowers_answer_loss_and_loads_in_peft_anywhere(trained, tmp_path, qwen2_dir, qa_files):
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from raystack.mlora.batchlora import BatchLoRAModel, segments_for
    from raystack.mlora.export import base_reference, load_peft_adapter
    from tests.models.models_helpers import qa_records

    config = json.loads((shutil.copytree(trained, tmp_path / "copied") / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == qwen2_dir and config["peft_version"] == peft.__version__
    with safe_open(str(tmp_path / "copied" / "adapter_model.safetensors"), "pt") as f:
        assert f.metadata()["raystack.base_sha256"] == base_reference(qwen2_dir).sha256
    tuned = peft.AutoPeftModelForCausalLM.from_pretrained(str(tmp_path / "copied")).eval()  # finds its base
    tok = AutoTokenizer.from_pretrained(tmp_path / "copied")  # the base's tokenizer, saved beside the adapter
    assert tok.get_vocab() == AutoTokenizer.from_pretrained(qwen2_dir).get_vocab()
    base = AutoModelForCausalLM.from_pretrained(qwen2_dir).eval()
    heldout = qa_records(held_out=True)
    before, after = _answer_loss(base, tok, heldout), _answer_loss(tuned, tok, heldout)
    assert after < before - 1.0, (before, after)

    ours = BatchLoRAModel(AutoModelForCausalLM.from_pretrained(qwen2_dir)).eval()
    load_peft_adapter(ours, trained, "qa", base_sha256=base_reference(qwen2_dir).sha256)
    ids = torch.tensor([tok(PROMPT.format(**r))["input_ids"][:10] for r in heldout[:3]])
    assert (ours(ids, segments_for([("qa", 3)])) - tuned(input_ids=ids).logits).abs().max() < 1e-4


def _peft_chat_adapter(directory, qwen2_dir, qa_files) -> None:
    """An adapter trained by peft itself, on the chat records (a few steps)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from raystack.data.sft import IGNORE, chat_examples, collate, encode

    tok = AutoTokenizer.from_pretrained(qwen2_dir)
    model = peft.get_peft_model(AutoModelForCausalLM.from_pretrained(qwen2_dir),
                                peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], use_rslora=True))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-2)
    ids, labels = collate([encode(e, 48, tok) for e in chat_examples(qa_files["chat"], tok)], tok.pad_token_id)
    for _ in range(8):
        logits = model(input_ids=ids).logits
        torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE).backward()
        opt.step()
        opt.zero_grad()
    model.save_pretrained(str(directory))


def _expected(qwen2_dir, adapter_dir, prompt_ids, stop_ids, max_new_tokens) -> tuple[str, int]:
    """Greedy text (and its token count) from transformers + peft (no raystack code)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(qwen2_dir)
    model = AutoModelForCausalLM.from_pretrained(qwen2_dir)
    if adapter_dir is not None:
        model = peft.PeftModel.from_pretrained(model, str(adapter_dir))
    out = model.eval().generate(torch.tensor([prompt_ids]), max_new_tokens=max_new_tokens, do_sample=False,
                                eos_token_id=stop_ids, pad_token_id=tok.pad_token_id)
    return tok.decode(out[0, len(prompt_ids):], skip_special_tokens=True), out.shape[1] - len(prompt_ids)


def _post(url: str, body: dict) -> tuple[int, dict | str]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            raw = r.read().decode()
            return r.status, (json.loads(raw) if not body.get("stream") else raw)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_serve_answers_openai_requests_for_both_adapters_concurrently(trained, tmp_path, qwen2_dir, qa_files):
    from ray import serve
    from transformers import AutoTokenizer

    from raystack.apps.serve_lora import app_builder

    adapters = tmp_path / "adapters"
    shutil.copytree(trained, adapters / "qa-lora")
    _peft_chat_adapter(adapters / "peft-chat", qwen2_dir, qa_files)
    tok = AutoTokenizer.from_pretrained(qwen2_dir)
    eos, im_end = tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")
    question = "Which color does the plum have?"
    completion_ids = tok(PROMPT.format(question=question))["input_ids"]
    messages = [{"role": "user", "content": "What color is the snow?"}]
    chat_ids = tok(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
                   add_special_tokens=False)["input_ids"]
    want_completion = _expected(qwen2_dir, adapters / "qa-lora", completion_ids, [eos], 8)[0]
    want_chat = _expected(qwen2_dir, adapters / "peft-chat", chat_ids, [eos, im_end], 8)[0]
    assert want_completion and want_chat  # both adapters answer something
    assert _expected(qwen2_dir, None, tok("anna paints")["input_ids"], [eos], 100)[1] == 100  # runs long

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(app_builder({"base": qwen2_dir, "adapters_dir": str(adapters)}), name="lora", route_prefix="/")
        url = f"http://127.0.0.1:{port}/v1"
        done: dict[str, tuple[float, object]] = {}

        def call(key, path, body):
            status, out = _post(f"{url}/{path}", body)
            done[key] = (time.perf_counter(), status, out)

        slow = threading.Thread(target=call, args=("long", "completions", {
            "model": qwen2_dir, "prompt": "anna paints", "max_tokens": 100, "temperature": 0}))
        slow.start()
        time.sleep(0.5)  # the long generation is under way on the replica
        workers = [threading.Thread(target=call, args=args) for args in [
            ("completion", "completions", {"model": "qa-lora", "prompt": PROMPT.format(question=question),
                                           "max_tokens": 8, "temperature": 0}),
            ("chat", "chat/completions", {"model": "peft-chat", "messages": messages, "max_tokens": 8,
                                          "temperature": 0})]]
        for w in workers:
            w.start()
        for w in [*workers, slow]:
            w.join(timeout=180)
        assert done["completion"][1] == 200 and done["completion"][2]["choices"][0]["text"] == want_completion
        assert done["chat"][1] == 200
        assert done["chat"][2]["choices"][0]["message"] == {"role": "assistant", "content": want_chat}
        assert done["long"][1] == 200 and done["long"][2]["usage"]["completion_tokens"] == 100
        assert max(done["completion"][0], done["chat"][0]) < done["long"][0]  # served while the long one ran

        status, events = _post(f"{url}/completions", {"model": "qa-lora", "prompt": PROMPT.format(question=question),
                                                       "max_tokens": 8, "temperature": 0, "stream": True})
        chunks = [json.loads(line[6:]) for line in events.split("\n\n") if line.startswith("data: {")]
        assert status == 200 and events.rstrip().endswith("data: [DONE]") and len(chunks) > 1
        assert "".join(c["choices"][0]["text"] for c in chunks) == want_completion
        status, err = _post(f"{url}/completions", {"model": "no-such-adapter", "prompt": "x"})
        assert status == 404 and "no-such-adapter" in err["error"]["message"]
        with urllib.request.urlopen(f"{url}/models", timeout=60) as r:
            assert {m["id"] for m in json.loads(r.read())["data"]} == {qwen2_dir, "qa-lora", "peft-chat"}
    finally:
        serve.shutdown()
