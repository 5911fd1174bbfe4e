"""The built-in Llama models: named tiny configs built offline from a seed, and the LM loss.

The named configs use the byte vocabulary of `raystack.data.ByteTokenizer`, so they need no
tokenizer file and no download. Local checkpoints and Hub ids load in `raystack.models.load`.
"""
from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedModel

from raystack.config import ConfigError
from raystack.data.tokenizer import ByteTokenizer

# name -> (hidden, layers, heads, intermediate); parameter counts are for the byte vocabulary.
_SIZES = {
    "tiny-1m": (128, 4, 4, 352),      # ~0.87M parameters
    "tiny-20m": (384, 12, 6, 1024),   # ~21M
    "small-50m": (512, 16, 8, 1408),  # ~52M
}
MODEL_NAMES = tuple(_SIZES)


def model_config(name: str, max_position_embeddings: int = 1024) -> LlamaConfig:
    """The LlamaConfig of a named size (see MODEL_NAMES)."""
    if name not in _SIZES:
        raise ConfigError("model", f"unknown model {name!r}; expected one of {list(MODEL_NAMES)} or a checkpoint directory")
    hidden, layers, heads, inter = _SIZES[name]
    tok = ByteTokenizer()
    return LlamaConfig(
        vocab_size=tok.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=heads, intermediate_size=inter,
        max_position_embeddings=max_position_embeddings, rms_norm_eps=1e-5,
        pad_token_id=tok.pad_id, bos_token_id=tok.bos_id, eos_token_id=tok.eos_id,
        tie_word_embeddings=False, attn_implementation="eager",
    )


def builtin_model(name: str, *, seed: int = 0, dtype: torch.dtype = torch.float32) -> PreTrainedModel:
    """A fresh built-in model of a named size, its weights drawn from ``seed``."""
    config = model_config(name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return model.to(dtype)


def count_parameters(model: torch.nn.Module, trainable_only: bool = False) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


def lm_loss(model: torch.nn.Module, batch: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy of a [B, L+1] batch from `BatchStream` (inputs [:, :-1],
    targets [:, 1:]). Computed here rather than via `labels=`, which transformers shifts again."""
    batch = batch.to(next(model.parameters()).device)  # batches come from the CPU data stream
    logits = model(input_ids=batch[:, :-1]).logits
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), batch[:, 1:].reshape(-1))
