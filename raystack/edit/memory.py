"""What one rank holds in memory: model state counted tensor by tensor, and the process peak.

The model state is counted where it lives on this rank (a sharded parameter, gradient or
optimizer state counts its local shard only), so S ranks sharing a replica show 1/S each.
"""
from __future__ import annotations

import resource
import sys

import torch
from torch import nn


def local_bytes(t: torch.Tensor | None) -> int:
    """Bytes this rank holds for ``t`` (a DTensor's local shard; 0 for None or non-tensors)."""
    if not isinstance(t, torch.Tensor):
        return 0
    to_local = getattr(t, "to_local", None)
    if to_local is not None:
        t = to_local()
    return t.numel() * t.element_size()


def model_state_bytes(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes of parameters, gradients and optimizer state this rank holds right now."""
    params = list(model.parameters())
    opt = sum(local_bytes(v) for state in optimizer.state.values() for v in state.values())
    return {"params": sum(local_bytes(p) for p in params),
            "grads": sum(local_bytes(p.grad) for p in params),
            "optimizer": opt}


def peak_rss_bytes() -> int:
    """The process's peak resident set size so far (whole process: every thread-rank in it)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024      # Linux reports KiB
