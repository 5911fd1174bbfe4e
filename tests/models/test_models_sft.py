"""mLoRA data with a real tokenizer: templates and chat templates, loss only on the answer,
cut at cutoff_len, padded or packed per micro-batch; bad templates named before Ray starts."""
from __future__ import annotations

import json

import pytest
import torch

from raystack.config import ConfigError
from raystack.data.sft import IGNORE, Example, SFTBatcher, chat_examples, encode, file_examples


def test_templates_and_chat_records_mask_the_prompt_and_end_the_answer(bpe_tokenizer, qa_files):
    tok = bpe_tokenizer
    ex = file_examples(qa_files["train"], "Q: {question}\nA: ", "answer")[0]
    ids, labels = encode(ex, 64, tok)
    prompt = tok(ex.prompt)["input_ids"]
    assert prompt[0] == tok.bos_token_id and ids[:len(prompt)] == prompt
    assert labels[:len(prompt) - 1] == [IGNORE] * (len(prompt) - 1)
    assert labels[len(prompt) - 1:] == [*tok(ex.response, add_special_tokens=False)["input_ids"], tok.eos_token_id]

    chat = chat_examples(qa_files["chat"], tok)[0]
    assert chat.prompt.endswith("<|im_start|>assistant\n") and chat.response.startswith("red<|im_end|>")
    ids, labels = encode(chat, 64, tok)
    answer = [t for t in labels if t != IGNORE]
    assert answer == tok("red<|im_end|>\n", add_special_tokens=False)["input_ids"]
    assert tok.convert_tokens_to_ids("<|im_end|>") in answer
    assert ids[:len(ids) - len(answer) + 1] == tok(chat.prompt, add_special_tokens=False)["input_ids"]
    cut_ids, cut_labels = encode(chat, 5, tok)
    assert len(cut_ids) == len(cut_labels) == 5 and cut_ids == ids[:5]


def test_packed_micro_batches_train_like_padded_ones(qwen2_dir, bpe_tokenizer):
    """A micro-batch packed into rows gives each adapter the same loss and gradients as padded."""
    from raystack.mlora.batchlora import AdapterSpec, segments_for
    from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel
    from raystack.models import build_model

    words = ["red", "sky", "apple", "snow", "leaf", "sand"]
    examples = [Example(f"Q: {w}?\nA: ", " ".join([w] * (i % 3 + 1))) for i, w in enumerate(words)]
    grads = []
    for packing in (False, True):
        batcher = SFTBatcher(examples, 6, 32, tokenizer=bpe_tokenizer, packing=packing)
        ids, labels, positions = batcher.collate(batcher.next_examples())
        assert (positions is not None) == packing and ids.shape[1] <= 32 and (len(ids) < 6) == packing
        stage = StageModel(build_model(qwen2_dir), 0, 5)
        stage.add_adapter(AdapterSpec("a", r=2, alpha=4, target_modules=("q_proj", "down_proj"), seed=1), OptimSpec())
        n = float((labels != IGNORE).sum())
        mb = MicroBatch(("m",), segments_for([("a", len(ids))]), {"a": n}, (), positions)
        loss = stage.forward(mb, ids, labels)["a"]
        stage.backward(mb)
        grads.append((loss, [p.grad.clone() for p in stage.model.adapter_parameters("a") if p.grad is not None]))
    assert abs(grads[0][0] - grads[1][0]) < 1e-5
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(grads[0][1], grads[1][1])) and grads[0][1]


def test_template_fields_are_checked_against_the_dataset_before_anything_starts(tmp_path, qa_files, llama_dir):
    from raystack.mlora.config import load_mlora_config
    from raystack.mlora.trainer import check_config

    def cfg(**dataset):
        return {"base": llama_dir, "adapters": [{"name": "a", "target_modules": ["q_proj"]}],
                "datasets": [{"name": "qa", "path": str(qa_files["train"]), **dataset}],
                "tasks": [{"adapter": "a", "dataset": "qa"}]}

    for dataset, field, words in [({"prompt_template": "Q: {query}\nA: ", "response_field": "answer"},
                                   "datasets[0].prompt_template", ["{query}", "'question'"]),
                                  ({"prompt_template": "{question}"}, "datasets[0].response_field", ["'response'"]),
                                  ({"format": "chat"}, "datasets[0].messages_field", ["'messages'"])]:
        with pytest.raises(ConfigError) as err:
            load_mlora_config(cfg(**dataset))
        assert err.value.field == field and all(w in str(err.value) for w in words)
    chat = cfg(format="chat")
    chat["datasets"][0]["path"] = str(qa_files["chat"])
    with pytest.raises(ConfigError) as err:  # the Llama's Unigram tokenizer has no chat template
        check_config(load_mlora_config(chat))
    assert err.value.field == "datasets[0].format" and "chat template" in str(err.value)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "x", "answer": "y"}) + "\n{not json\n")
    with pytest.raises(ConfigError) as err:
        load_mlora_config({**cfg(prompt_template="{question}", response_field="answer"),
                           "datasets": [{"name": "qa", "path": str(bad), "prompt_template": "{question}",
                                         "response_field": "answer"}]})
    assert err.value.field == "datasets[0].path" and "line 2" in str(err.value)
