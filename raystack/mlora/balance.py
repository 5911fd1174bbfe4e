"""Automatic stage balancing: split a model's layer sequence into contiguous pipeline stages.

The model is seen as a sequence of units (embedding, decoder layers, final norm + head), each
with a cost: its parameter count, or a measured forward+backward time. :func:`partition`
chooses the contiguous split into ``D`` stages that minimises the largest stage cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import nn

from raystack.models.layout import layout_of


@dataclass(frozen=True)
class StagePlan:
    """Stage ``i`` owns units ``bounds[i][0] .. bounds[i][1] - 1``; ``costs[i]`` its total cost."""

    bounds: list[tuple[int, int]]
    costs: list[float]

    @property
    def imbalance(self) -> float:
        """Largest stage cost over the mean (1.0 is perfect)."""
        mean = sum(self.costs) / len(self.costs)
        return max(self.costs) / mean if mean else 1.0


def partition(costs: Sequence[float], num_stages: int) -> StagePlan:
    """Contiguous split of ``costs`` into ``num_stages`` non-empty parts minimising the max part.

    Exact dynamic programme, O(D * n^2); n is the number of layers, so this is instant.
    """
    n = len(costs)
    if not 1 <= num_stages <= n:
        raise ValueError(f"cannot split {n} units into {num_stages} stages")
    prefix = [0.0]
    for c in costs:
        prefix.append(prefix[-1] + float(c))
    inf = float("inf")
    # best[k][i]: minimal max cost splitting the first i units into k stages
    best = [[inf] * (n + 1) for _ in range(num_stages + 1)]
    cut = [[0] * (n + 1) for _ in range(num_stages + 1)]
    best[0][0] = 0.0
    for k in range(1, num_stages + 1):
        for i in range(k, n + 1):
            for j in range(k - 1, i):
                v = max(best[k - 1][j], prefix[i] - prefix[j])
                if v < best[k][i]:
                    best[k][i], cut[k][i] = v, j
    bounds = []
    i = n
    for k in range(num_stages, 0, -1):
        j = cut[k][i]
        bounds.append((j, i))
        i = j
    bounds.reverse()
    return StagePlan(bounds, [prefix[b] - prefix[a] for a, b in bounds])


def model_units(model: nn.Module) -> list[tuple[str, list[nn.Module]]]:
    """The pipeline units of a causal LM, in order: ``embed``, ``layer.0`` ... ``layer.{n-1}``,
    ``head`` (final norm + lm_head); see :mod:`raystack.models.layout`."""
    return layout_of(model).units(model)


def param_costs(model: nn.Module) -> list[float]:
    """Parameter count of each unit (tied weights counted where used)."""
    return [float(sum(p.numel() for m in mods for p in m.parameters())) for _, mods in model_units(model)]


def measured_costs(model: nn.Module, batch: int = 4, seq: int = 64, repeats: int = 3,
                   timer: Callable[[], float] = time.perf_counter) -> list[float]:
    """Median forward+backward seconds of each unit on a random batch (base weights frozen,
    gradients taken with respect to the unit's input, as in LoRA training)."""
    layout = layout_of(model)
    ids = torch.randint(0, model.config.vocab_size, (batch, seq))
    pos = torch.arange(seq).unsqueeze(0)
    out = []
    for name, mods in model_units(model):
        times = []
        for _ in range(repeats):
            h = layout.embed(model, ids, pos).detach().requires_grad_(True)
            t0 = timer()
            if name == "embed":
                y = layout.embed(model, ids, pos).sum() + h.sum()
            elif name == "head":
                y = layout.head(model, h).sum()
            else:
                y = layout.run_layer(mods[0], h, layout.layer_inputs(model, h, pos)(int(name.split(".")[1]))).sum()
            y.backward()
            times.append(timer() - t0)
        out.append(sorted(times)[len(times) // 2])
    return out
