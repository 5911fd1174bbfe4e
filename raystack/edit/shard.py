"""Blocks of a model and the layout of their shards over the S ranks of a replica.

A block is a module synced as one unit (embeddings, each transformer layer, the head). Its
parameters are viewed as one flat vector of ``numel`` elements, padded to a multiple of S;
rank s owns elements ``[s·c, (s+1)·c)`` with ``c = ceil(numel / S)``. Rank s keeps θ_sync and
the outer momentum of its shard only: 2·P/S extra elements per rank.

How a rank reads and writes its shard of a block depends on who holds the parameters:
:class:`ReplicatedShards` (every rank of a replica holds the whole model) or, with the model
itself sharded by FSDP2, ``raystack.edit.fsdp.FsdpShards``; both follow :class:`BlockShards`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

BlockSpec = tuple[str, nn.Module, list[nn.Module]]    # (name, module whose pre-hook syncs it, owned modules)


@dataclass
class Block:
    """One sync unit: the module whose forward pre-hook syncs it, and the parameters it owns."""

    name: str
    module: nn.Module
    params: list[nn.Parameter]

    @property
    def numel(self) -> int:
        return sum(p.numel() for p in self.params)


def llama_block_specs(model: nn.Module) -> list[BlockSpec]:
    """The sync units of a transformers causal LM (Llama, Qwen2, Mistral, GPT-2: see
    `raystack.models.layout`): embeddings, each decoder layer, final norm + LM head (a unit's
    block is synced in its first module's pre-hook)."""
    from raystack.models.layout import layout_of
    units = layout_of(model, strict=False).units(model)
    return [(name.replace("layer.", "layer"), mods[0], mods) for name, mods in units]


def llama_blocks(model: nn.Module) -> list[Block]:
    """Blocks of a transformers causal LM (Llama, Qwen2, Mistral, GPT-2: see
    `raystack.models.layout`): embeddings, each decoder layer, final norm + head.

    A parameter is owned by the first block that holds it (tied embeddings sync once). Any
    parameter not under those modules joins the head block, so every parameter is synced.
    """
    return partition_blocks(model, llama_block_specs(model))


def partition_blocks(model: nn.Module, specs: list[BlockSpec]) -> list[Block]:
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
def unflatten_into(flat: torch.Tensor, params: list[torch.Tensor]) -> None:
    """Copy a flat vector back into the parameters (or tensors), in order."""
    _scatter(flat, params, torch.Tensor.copy_)


@torch.no_grad()
def add_into(flat: torch.Tensor, params: list[torch.Tensor]) -> None:
    """Add a flat vector to the parameters (or tensors), in order."""
    _scatter(flat, params, torch.Tensor.add_)


def _scatter(flat: torch.Tensor, params: list[torch.Tensor], op) -> None:
    offset = 0
    for p in params:
        n = p.numel()
        op(p, flat[offset:offset + n].view_as(p).to(p.dtype))
        offset += n


class BlockShards(Protocol):
    """This rank's shard of every block's parameters, as flat vectors."""

    def read(self, b: int) -> torch.Tensor:
        """A fresh flat copy of this rank's shard of block b's current parameters."""

    def write(self, b: int, shard: torch.Tensor) -> None:
        """Set this rank's shard of block b (every rank of the replica calls it together)."""

    def add(self, b: int, shard: torch.Tensor) -> None:
        """Add to this rank's shard of block b (every rank of the replica calls it together)."""


class ReplicatedShards:
    """Every rank of a replica holds the whole block; rank s owns slice s of its flat vector.
    A write gathers the S slices over the replica's local link and sets the whole block."""

    def __init__(self, blocks: list[Block], layouts: list[ShardLayout], replica_comm=None) -> None:
        self.blocks, self.layouts, self.replica_comm = blocks, layouts, replica_comm

    def read(self, b: int) -> torch.Tensor:
        flat, lay = flatten(self.blocks[b].params), self.layouts[b]
        if lay.world == 1 and lay.padded == lay.numel:
            return flat                       # flatten already copied: no second copy
        return lay.take(flat)

    def _full(self, b: int, shard: torch.Tensor) -> torch.Tensor:
        full = self.layouts[b].join(self.replica_comm.all_gather(shard)) if self.replica_comm is not None else shard
        return full.to(self.blocks[b].params[0].device)

    def write(self, b: int, shard: torch.Tensor) -> None:
        unflatten_into(self._full(b, shard), self.blocks[b].params)

    def add(self, b: int, shard: torch.Tensor) -> None:
        add_into(self._full(b, shard), self.blocks[b].params)
