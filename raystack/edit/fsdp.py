"""Full sharding inside a replica with torch FSDP2 (``fully_shard``), one FSDP unit per block.

Each sync block (embeddings, each decoder layer, final norm + LM head) becomes its own FSDP
unit over the replica's S ranks, so a rank holds 1/S of every parameter, its gradient and its
AdamW state, and the shard a rank owns of a block is exactly the block's FSDP local shard: the
layer-wise outer sync reads and writes those local shards in the block's forward pre-hook,
before FSDP gathers the block for its forward (the pre-hook is registered in front of FSDP's).
"""
from __future__ import annotations

import torch
from torch import nn

from raystack.edit.shard import Block, BlockSpec, add_into, unflatten_into


def shard_blocks(model: nn.Module, specs: list[BlockSpec], process_group) -> None:
    """``fully_shard`` each block's owned modules (one unit per block), then the root, over
    the ranks of ``process_group`` (the replica's). Tied parameters across blocks are refused."""
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard

    owner: dict[int, str] = {}
    for name, _, owned in specs:
        for mod in owned:
            for p in mod.parameters():
                if owner.setdefault(id(p), name) != name:
                    raise ValueError(f"full_shard: a parameter is shared by blocks {owner[id(p)]} and {name} "
                                     "(tied embeddings); untie them or set full_shard: false")
    device = next(model.parameters()).device
    mesh = DeviceMesh.from_group(process_group, device_type=device.type)
    for _, _, owned in specs:
        fully_shard(owned if len(owned) > 1 else owned[0], mesh=mesh)
    fully_shard(model, mesh=mesh)


def local_tensor(p: torch.Tensor) -> torch.Tensor:
    """The part of a parameter (or gradient) this rank holds: a DTensor's local shard, else itself."""
    to_local = getattr(p, "to_local", None)
    return to_local() if to_local is not None else p


class FsdpShards:
    """This rank's shard of a block is its FSDP local shards, concatenated (no padding: the
    same shard rank of every replica holds the same shapes)."""

    def __init__(self, blocks: list[Block]) -> None:
        self.blocks = blocks

    def _locals(self, b: int) -> list[torch.Tensor]:
        return [local_tensor(p) for p in self.blocks[b].params]

    def read(self, b: int) -> torch.Tensor:
        return torch.cat([t.detach().reshape(-1) for t in self._locals(b)])

    def write(self, b: int, shard: torch.Tensor) -> None:
        unflatten_into(shard.to(self.blocks[b].params[0].device), self._locals(b))

    def add(self, b: int, shard: torch.Tensor) -> None:
        add_into(shard.to(self.blocks[b].params[0].device), self._locals(b))


def full_tensor(t: torch.Tensor, through_cpu: bool | None = None) -> torch.Tensor:
    """The whole of a parameter or buffer: a DTensor sharded on dim 0 (FSDP2's layout) gathered
    from the replica's ranks (a collective: every rank calls it), else ``t`` itself.

    Over gloo with CUDA tensors (ranks sharing a GPU) DTensor's own gather (an
    all_gather_into_tensor on the CUDA shards) crashed the process with a segmentation fault
    (torch 2.11 on an H200), so there the shards travel as CPU copies through a plain all_gather
    (``through_cpu`` None: decided so; True/False forces it)."""
    if getattr(t, "to_local", None) is None:
        return t
    import torch.distributed as dist
    from torch.distributed.tensor import Shard

    local = t.to_local()
    group = t.device_mesh.get_group()
    if through_cpu is None:
        through_cpu = local.device.type != "cpu" and dist.get_backend(group) == "gloo"
    if not through_cpu or list(t.placements) != [Shard(0)]:
        return t.full_tensor()
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    rows = t.shape[0]
    chunk = -(-rows // world)                      # DTensor's Shard(0): ceil-sized chunks in rank order
    sizes = [max(0, min(chunk, rows - r * chunk)) for r in range(world)]
    if local.shape[0] != sizes[rank]:
        raise RuntimeError(f"shard of {rows} rows on rank {rank} has {local.shape[0]}, expected {sizes[rank]}")
    padded = torch.zeros((chunk, *t.shape[1:]), dtype=local.dtype)
    padded[:sizes[rank]] = local.detach().cpu()
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded, group=group)
    return torch.cat([p[:n] for p, n in zip(parts, sizes)]).to(local.device)
