"""The inner optimizer every replica steps on its own data, built from ``InnerConfig``.

One constructor for raystack's ranks and for the baselines the benchmarks pair them with, so
an arm never differs from another by its optimizer kernel. AdamW runs torch's fused kernel
(one kernel over all parameters, on CPU and CUDA) where torch has it for the parameters: on a
small model its per-parameter loop is most of the optimizer step (tiny-20m on one CPU thread:
~55 ms of a ~250 ms step, ~13 ms fused). The fused kernel is not bit-identical to the loop
(it rounds differently in the last bits), so ``inner.fused: false`` keeps the loop.
"""
from __future__ import annotations

from typing import Iterable

import torch

FUSED_DEVICE_TYPES = ("cpu", "cuda")


def fused_supported(params: list[torch.Tensor]) -> bool:
    """Whether torch's fused AdamW runs over ``params``: plain floating-point tensors (not
    DTensor shards, whose optimizer runs torch's default path) on one CPU or CUDA device."""
    if not params:
        return False
    devices = {p.device for p in params}
    return (len(devices) == 1 and next(iter(devices)).type in FUSED_DEVICE_TYPES
            and all(type(p.data) is torch.Tensor and p.is_floating_point() for p in params))


def inner_optimizer(inner, params: Iterable[torch.Tensor]) -> torch.optim.Optimizer:
    """The inner optimizer of ``inner`` (an ``InnerConfig``) over ``params``; AdamW fused when
    ``inner.fused`` says so, or, when it is None, wherever ``fused_supported``."""
    params = list(params)
    if inner.optimizer == "sgd":
        return torch.optim.SGD(params, lr=inner.lr, momentum=inner.momentum, weight_decay=inner.weight_decay)
    fused = fused_supported(params) if inner.fused is None else inner.fused
    return torch.optim.AdamW(params, lr=inner.lr, betas=(inner.beta1, inner.beta2), weight_decay=inner.weight_decay,
                             fused=fused or None)
