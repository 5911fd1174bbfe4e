"""Frozen linear layers whose weight is kept some other way than one dense float tensor.

A base model's linear layers never train under LoRA, so they can be stored quantised
(:mod:`raystack.mlora.quantize`) or sharded across workers (:mod:`raystack.mlora.sharding`).
Such a layer subclasses :class:`FrozenLinear`: BatchLoRA wraps it like an ``nn.Linear``
(adapters see ``in_features``, ``out_features``, ``dtype``, ``device``, and DoRA the dense
``weight``), and its forward gives gradients for its input only.
"""

from __future__ import annotations

import torch
from torch import nn


class FrozenLinear(nn.Module):
    """Base class: ``y = x W^T + b`` with a frozen ``W`` stored by the subclass."""

    in_features: int
    out_features: int

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the layer computes in (and adapters on it train in)."""
        raise NotImplementedError

    @property
    def device(self) -> torch.device:
        raise NotImplementedError

    @property
    def weight(self) -> torch.Tensor:
        """The dense ``[out, in]`` weight, materialised on demand (DoRA's column norm needs it)."""
        raise NotImplementedError


def dtype_device(linear: nn.Module) -> tuple[torch.dtype, torch.device]:
    """The compute dtype and device of an ``nn.Linear`` or a :class:`FrozenLinear`."""
    if isinstance(linear, FrozenLinear):
        return linear.dtype, linear.device
    return linear.weight.dtype, linear.weight.device


def copy_off_checkpoint(model: nn.Module) -> None:
    """Copy every parameter into the process's own memory. A stage loaded from a safetensors
    file maps it: while any tensor maps the file, the pages of weights since replaced (by
    quantised or sharded forms) stay resident too (a 4-layer stage held 613 MB, not 417 MB)."""
    for p in model.parameters():
        p.data = p.data.clone()
