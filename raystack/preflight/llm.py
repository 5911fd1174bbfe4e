"""The shape of a language model named in a config, read without loading its weights."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from raystack.preflight.files import PreflightError, check_model_dir


@dataclass(frozen=True)
class ModelShape:
    parameters: int
    hidden: int
    layers: int
    heads: int
    vocab: int
    max_positions: int | None   # None: the model has no fixed limit


def model_shape(name_or_dir: str, field: str) -> ModelShape:
    """A built-in model's or a checkpoint directory's shape; a directory's files are checked
    first (config.json, safetensors headers against file sizes)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from raystack.models import MODEL_NAMES, model_config

    weights = None
    if name_or_dir in MODEL_NAMES:
        conf = model_config(name_or_dir)
    else:
        path = Path(name_or_dir)
        weights = check_model_dir(path, field)
        try:
            conf = AutoConfig.from_pretrained(path, local_files_only=True)
        except Exception as exc:  # transformers raises ValueError/OSError/KeyError for bad configs
            raise PreflightError(field, f"{path / 'config.json'} is not a config transformers can load: "
                                        f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    if weights is not None:
        parameters = weights.parameters
    else:
        try:
            with torch.device("meta"):
                parameters = sum(p.numel() for p in AutoModelForCausalLM.from_config(conf).parameters())
        except Exception as exc:
            raise PreflightError(field, f"{name_or_dir}: transformers cannot build this causal LM "
                                        f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None

    def attr(name: str, default: int = 0) -> int:
        value = getattr(conf, name, None)
        return int(value) if isinstance(value, int) and value > 0 else default

    hidden = attr("hidden_size", 1)
    return ModelShape(parameters=parameters, hidden=hidden, layers=attr("num_hidden_layers", 1),
                      heads=attr("num_attention_heads", 1), vocab=attr("vocab_size", 1),
                      max_positions=attr("max_position_embeddings") or None)
