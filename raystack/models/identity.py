"""What a base model is: the name the user gave and a content hash of its weights.

Adapters record both, so a copied adapter directory still names its base the way the user
did (a Hub id, or the path as given), and raystack refuses to attach an adapter to a base
whose weights differ from the ones it was trained on.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from raystack.data.cache import file_sha256
from raystack.models.load import resolve_model

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def tensors_sha256(model: torch.nn.Module) -> str:
    """sha256 over a model's parameters and persistent buffers (names, dtypes, shapes, bytes)."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def base_weights_sha256(name_or_path: str, seed: int = 0) -> str:
    """Content hash of a base's weights: over its weight files for a checkpoint (local or Hub
    snapshot), over the generated tensors for a built-in model (which depend on ``seed``)."""
    source = resolve_model(name_or_path, field="base")
    if source.builtin:
        from raystack.models.llama import builtin_model

        return tensors_sha256(builtin_model(source.given, seed=seed))
    root = Path(source.path)
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    if not files:
        raise FileNotFoundError(f"{name_or_path}: no weight files ({', '.join(WEIGHT_SUFFIXES)}) in {root}")
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.name}|{file_sha256(p)}\n".encode())
    return h.hexdigest()
