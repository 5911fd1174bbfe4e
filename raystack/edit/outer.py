"""The outer optimizer: Nesterov SGD on θ_sync, with the averaged pseudo-gradient as gradient."""
from __future__ import annotations

import torch


def nesterov_step(theta: torch.Tensor, momentum: torch.Tensor, delta: torch.Tensor,
                  lr: float, mu: float, nesterov: bool = True) -> None:
    """Update ``theta`` and ``momentum`` in place with gradient ``delta``.

    m ← μ·m + Δ;  θ ← θ − lr·(Δ + μ·m) (Nesterov) or θ ← θ − lr·m (heavy ball).
    With lr = 1 and μ = 0 this is θ ← θ − Δ, i.e. plain averaging (Post Local SGD).
    """
    delta = delta.to(device=theta.device, dtype=theta.dtype)
    momentum.mul_(mu).add_(delta)
    if nesterov:                      # one temporary, the same rounding as lr·(Δ + μ·m)
        step = torch.mul(momentum, mu).add_(delta).mul_(lr)
        theta.sub_(step)
    else:
        theta.sub_(torch.mul(momentum, lr))
