"""Blocks of a model and the layout of their shards over the S ranks of a replica.

A block is a module synced as one unit (embeddings, each transformer layer, the head). Its
parameters are viewed as one flat vector of ``numel`` elements, padded to a multiple of S;
rank s owns elements ``[s·c, (s+1)·c)`` with ``c = ceil(numel / S)``. Rank s keeps θ_sync and
the outer momentum of its shard only: 2·P/S extra elements per rank.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Block:
    """One sync unit: the module whose forward pre-hook syncs it, and the parameters it owns."""

    name: str
    module: nn.Module
    params: list[nn.Parameter]

    @property
    def numel(self) -> int:
        return sum(p.numel() for p in self.params)


def llama_blocks(model: nn.Module) -> list[Block]:
    """Blocks of a transformers causal LM (Llama, Qwen2, Mistral, GPT-2: see
    `raystack.models.layout`): embeddings, each decoder layer, final norm + head.

    A parameter is owned by the first block that holds it (tied embeddings sync once). Any
    parameter not under those modules joins the head block, so every parameter is synced.
    """
    from raystack.models.layout import layout_of
    units = layout_of(model, strict=False).units(model)  # the hook goes on a unit's first module
    specs = [(name.replace("layer.", "layer"), mods[0], mods) for name, mods in units]
    return partition_blocks(model, specs)


def partition_blocks(model: nn.Module, specs: list[tuple[str, nn.Module, list[nn.Module]]]) -> list[Block]:
    """Blocks from ``(name, hook_module, owned_modules)``; leftover parameters go to the last."""
    seen: set[int] = set()
    blocks: list[Block] = []
    for name, hook_module, owned in specs:
        params = []
        for mod in owned:
            for p in mod.parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    params.append(p)
        blocks.append(Block(name, hook_module, params))
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            blocks[-1].params.append(p)
    return [b for b in blocks if b.params]


@dataclass(frozen=True)
class ShardLayout:
    """Which slice of a block's flat vector rank ``rank`` of ``world`` (S) owns."""

    numel: int
    world: int
    rank: int

    @property
    def chunk(self) -> int:
        return math.ceil(self.numel / self.world)

    @property
    def padded(self) -> int:
        return self.chunk * self.world

    @property
    def start(self) -> int:
        return self.rank * self.chunk

    def take(self, flat: torch.Tensor) -> torch.Tensor:
        """This rank's shard of a full flat vector (zero-padded past the end)."""
        if self.padded != self.numel:
            flat = torch.cat([flat, flat.new_zeros(self.padded - self.numel)])
        return flat[self.start:self.start + self.chunk].clone()

    def join(self, shards: list[torch.Tensor]) -> torch.Tensor:
        """The full flat vector from every rank's shard, in rank order."""
        return torch.cat(list(shards))[: self.numel]


def flatten(params: list[nn.Parameter]) -> torch.Tensor:
    """Concatenate parameters into one detached flat vector."""
    return torch.cat([p.detach().reshape(-1) for p in params])


@torch.no_grad()
def unflatten_into(flat: torch.Tensor, params: list[nn.Parameter]) -> None:
    """Copy a flat vector back into the parameters, in order."""
    offset = 0
    for p in params:
        n = p.numel()
        p.copy_(flat[offset:offset + n].view_as(p).to(p.dtype))
        offset += n
