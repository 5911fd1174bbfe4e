"""Shared helpers for the mLoRA tests: a tiny Llama built in-process (no download)."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def tiny_llama(seed: int = 0, layers: int = 4) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=259, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                      pad_token_id=256, bos_token_id=257, eos_token_id=258, tie_word_embeddings=False)
    model = LlamaForCausalLM(cfg).eval()
    return model


def tiny_gpt2(seed: int = 0, layers: int = 3):
    """A tiny GPT-2 (``Conv1D`` linears with biases, learned positions), the byte vocabulary."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=259, n_embd=32, n_layer=layers, n_head=4, n_positions=64,
                     bos_token_id=257, eos_token_id=258)
    return GPT2LMHeadModel(cfg).eval()
