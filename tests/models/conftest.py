"""What users bring, built once per session and offline: text, trained tokenizers, checkpoints.

Two tokenizers trained with the `tokenizers` library on text (a BPE with a ChatML chat
template, as Qwen2's; a Unigram, as sentencepiece models are), neither with a byte alphabet;
a tiny Llama and a tiny Qwen2 (random init) saved with ``save_pretrained`` beside them.
"""
from __future__ import annotations

import json
import random
import sysconfig
from pathlib import Path

import pytest
import torch

from tests.models.models_helpers import CHATML, qa_records, story


@pytest.fixture(scope="session")
def texts() -> list[str]:
    rng = random.Random(0)
    return [story(rng, rng.randint(4, 12)) for _ in range(300)]


@pytest.fixture(scope="session")
def tokenizer_corpus(texts) -> list[str]:
    """What the tokenizers learn from: the stories, the questions, and some Python sources."""
    root = Path(sysconfig.get_paths()["stdlib"])
    sources = [(root / f"{name}.py").read_text() for name in ("textwrap", "string", "shlex", "glob", "fnmatch")]
    return texts + [f"{r['question']} {r['answer']}" for r in qa_records(False) + qa_records(True)] + sources


@pytest.fixture(scope="session")
def bpe_tokenizer(tokenizer_corpus):
    from raystack.data.tokenizer import train_tokenizer

    tok = train_tokenizer(tokenizer_corpus, "bpe", vocab_size=400, extra_special=("<|im_start|>", "<|im_end|>"))
    tok.chat_template = CHATML
    return tok


@pytest.fixture(scope="session")
def unigram_tokenizer(tokenizer_corpus):
    from raystack.data.tokenizer import train_tokenizer

    return train_tokenizer(tokenizer_corpus, "unigram", vocab_size=300)


def save_checkpoint(directory: Path, model: torch.nn.Module, tokenizer) -> str:
    model.save_pretrained(directory)
    if tokenizer is not None:
        tokenizer.save_pretrained(directory)
    return str(directory)


@pytest.fixture(scope="session")
def llama_dir(tmp_path_factory, unigram_tokenizer) -> str:
    """A tiny Llama with the Unigram tokenizer: embeddings exactly the vocabulary's size."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = unigram_tokenizer
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                      tie_word_embeddings=False)
    torch.manual_seed(1)
    return save_checkpoint(tmp_path_factory.mktemp("llama"), LlamaForCausalLM(cfg), tok)


@pytest.fixture(scope="session")
def qwen2_dir(tmp_path_factory, bpe_tokenizer) -> str:
    """A tiny Qwen2 with the BPE tokenizer: tied embeddings padded to a multiple of 64 rows."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tok = bpe_tokenizer
    cfg = Qwen2Config(vocab_size=-(-len(tok) // 64) * 64, hidden_size=48, intermediate_size=96, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, tie_word_embeddings=True)
    torch.manual_seed(2)
    return save_checkpoint(tmp_path_factory.mktemp("qwen2"), Qwen2ForCausalLM(cfg), tok)


@pytest.fixture(scope="session")
def qa_files(tmp_path_factory) -> dict[str, Path]:
    """The question/answer records as JSONL: training, held-out, and chat (``messages``)."""
    d = tmp_path_factory.mktemp("qa")
    out = {}
    for name, records in (("train", qa_records(False)), ("heldout", qa_records(True))):
        out[name] = d / f"{name}.jsonl"
        out[name].write_text("".join(json.dumps(r) + "\n" for r in records))
    out["chat"] = d / "chat.jsonl"
    out["chat"].write_text("".join(json.dumps({"messages": [{"role": "user", "content": r["question"]},
                                                            {"role": "assistant", "content": r["answer"]}]}) + "\n"
                                   for r in qa_records(False)))
    return out
