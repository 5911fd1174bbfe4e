"""FSDP-style sharding of a frozen base, for LoRA training on data-parallel workers.

The mLoRA paper measures its pipeline against FSDP; this is that peer. Each of W workers keeps
1/W of every decoder layer's linear weights: the layer's weights flattened into one vector,
padded to a multiple of W and cut into W chunks, as FSDP's flat parameters. A layer's full
weights are all-gathered right before it runs, in the forward and again in the backward, and
freed after (ZeRO-3, FSDP's ``reshard_after_forward=True``; the last layer stays gathered
for the backward that follows at once, as FSDP2 does). The next layer's gather is issued one
layer ahead in both directions, so it overlaps the current layer's compute. The embedding,
norms and head stay replicated (a few MB here). Adapters are replicated too: each worker
trains them on its rows of every batch (:func:`split_rows`) and their gradients are summed
across workers before each optimizer step.

Nothing here starts a process: the all-gather is a callable (``raystack.comm`` in the Ray
workers of ``raystack.actors.mlora_fsdp``, a local stand-in in tests).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Protocol, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from raystack.mlora.batchlora import Segment, dense_weight, is_linear
from raystack.mlora.frozen import FrozenLinear, copy_off_checkpoint
from raystack.mlora.stage import MicroBatch
from raystack.models.layout import layout_of


class Pending(Protocol):
    """An all-gather in flight: ``wait()`` returns every rank's chunk, in rank order."""

    def wait(self) -> list[torch.Tensor]: ...


Gather = Callable[[int, torch.Tensor], Pending]  # (layer index, this rank's chunk) -> in flight


class LayerShard:
    """One decoder layer's linear weights as FSDP keeps them: this rank's chunk of the flat,
    padded vector, and the full vector while the layer is gathered."""

    def __init__(self, index: int, weights: Sequence[torch.Tensor], rank: int, world: int) -> None:
        self.index = index
        self.shapes = [w.shape for w in weights]
        self.offsets = [0]
        for w in weights:
            self.offsets.append(self.offsets[-1] + w.numel())
        self.chunk_numel = math.ceil(self.offsets[-1] / world)
        flat = torch.zeros(self.chunk_numel * world, dtype=weights[0].dtype)
        for w, a, b in zip(weights, self.offsets, self.offsets[1:]):
            flat[a:b] = w.detach().reshape(-1)
        self.chunk = flat[rank * self.chunk_numel:(rank + 1) * self.chunk_numel].clone()
        self.full: torch.Tensor | None = None
        self.pending: Pending | None = None

    def view(self, k: int) -> torch.Tensor:
        """Weight ``k`` of the layer (the layer must be gathered)."""
        assert self.full is not None, f"layer {self.index} is not gathered"
        return self.full[self.offsets[k]:self.offsets[k + 1]].view(self.shapes[k])


class _ShardedLinearFn(torch.autograd.Function):
    """``y = x W^T + b`` with ``W`` from a gathered layer; keeps no weight for the backward,
    which gathers the layer again (gradient for ``x`` only: the base is frozen)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, bias: torch.Tensor | None, module: "ShardedLinear") -> torch.Tensor:
        ctx.module = module
        return F.linear(x, module.weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, None, None]:
        if not ctx.needs_input_grad[0]:
            return None, None, None
        return grad @ ctx.module.backward_weight(), None, None


class ShardedLinear(FrozenLinear):
    """A frozen linear layer whose weight is weight ``k`` of a sharded layer."""

    def __init__(self, owner: "ShardedBase", shard: LayerShard, k: int, bias: torch.Tensor | None) -> None:
        super().__init__()
        self.out_features, self.in_features = shard.shapes[k]
        self._owner, self._shard, self._k = owner, shard, k
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    @property
    def dtype(self) -> torch.dtype:
        return self._shard.chunk.dtype

    @property
    def device(self) -> torch.device:
        return self._shard.chunk.device

    @property
    def weight(self) -> torch.Tensor:
        self._owner.materialise(self._shard.index)
        return self._shard.view(self._k)

    def backward_weight(self) -> torch.Tensor:
        self._owner.enter_backward(self._shard.index)
        return self._shard.view(self._k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ShardedLinearFn.apply(x, self.bias, self)


class ShardedBase:
    """Shards ``model``'s decoder-layer linear weights (``nn.Linear`` or GPT-2's ``Conv1D``,
    kept as [out, in]) across ``world`` ranks in place and gathers them layer by layer as the
    model runs (see the module docstring)."""

    def __init__(self, model: nn.Module, rank: int, world: int, gather: Gather) -> None:
        self.world = world
        self._gather = gather
        self.shards: list[LayerShard] = []
        self.gathers = 0  # all-gathers issued
        self.max_gathered = 0  # most layers held gathered at once
        self._backward_layer: int | None = None
        for i, layer in enumerate(layout_of(model).layers(model)):
            linears = [(name, m) for name, m in layer.named_modules() if is_linear(m) and not isinstance(m, FrozenLinear)]
            shard = LayerShard(i, [dense_weight(m) for _, m in linears], rank, world)
            for k, (name, m) in enumerate(linears):
                parent, _, child = name.rpartition(".")
                setattr(layer.get_submodule(parent) if parent else layer, child, ShardedLinear(self, shard, k, m.bias))
            self.shards.append(shard)
            layer.register_forward_pre_hook(lambda mod, args, i=i: self._before_forward(i))
            layer.register_forward_hook(lambda mod, args, out, i=i: self._after_forward(i))
        copy_off_checkpoint(model)

    @property
    def layer_bytes(self) -> list[int]:
        """Bytes of each layer's gathered weights."""
        return [s.chunk_numel * self.world * s.chunk.element_size() for s in self.shards]

    def _issue(self, i: int) -> None:
        shard = self.shards[i]
        if shard.full is None and shard.pending is None:
            shard.pending = self._gather(i, shard.chunk)
            self.gathers += 1

    def materialise(self, i: int) -> None:
        """Layer ``i``'s full weights, gathered now unless already (or being) gathered."""
        self._issue(i)
        shard = self.shards[i]
        if shard.full is None:
            shard.full = torch.cat(shard.pending.wait())
            shard.pending = None
        self.max_gathered = max(self.max_gathered, sum(s.full is not None for s in self.shards))

    def free(self, i: int) -> None:
        self.shards[i].full = None

    def _before_forward(self, i: int) -> None:
        self._backward_layer = None
        self.materialise(i)
        if i + 1 < len(self.shards):
            self._issue(i + 1)

    def _after_forward(self, i: int) -> None:
        if i + 1 < len(self.shards):  # the last layer's backward comes next: keep it
            self.free(i)

    def enter_backward(self, i: int) -> None:
        """Called by layer ``i``'s linears in the backward: free the layers after it, gather it,
        and issue the gather of the layer before."""
        if self._backward_layer != i:
            self._backward_layer = i
            for j in range(i + 1, len(self.shards)):
                self.free(j)
            if i > 0:
                self._issue(i - 1)
        self.materialise(i)

    def finish(self) -> None:
        """After a step's backward (or after adding DoRA adapters, whose initial magnitudes
        need each layer's weights): free every gathered layer."""
        for i in range(len(self.shards)):
            self.free(i)
        self._backward_layer = None

    def reset_stats(self) -> None:
        self.gathers = self.max_gathered = 0


def split_rows(mb: MicroBatch, ids: torch.Tensor, labels: torch.Tensor, world: int
               ) -> list[tuple[MicroBatch, torch.Tensor, torch.Tensor]]:
    """Data parallelism over a BatchLoRA micro-batch: each rank gets its contiguous share of
    every adapter's rows (losses keep the whole batch's denominators, so the ranks' gradients
    sum to the batch's)."""
    out = []
    for rank in range(world):
        rows, segs, pos = [], [], 0
        for s in mb.segments:
            n = s.end - s.start
            a, b = s.start + n * rank // world, s.start + n * (rank + 1) // world
            if b > a:
                rows.extend(range(a, b))
                segs.append(Segment(s.adapter, pos, pos + b - a, s.length))
                pos += b - a
        index = torch.tensor(rows, dtype=torch.long)
        out.append((MicroBatch((*mb.key, rank), segs, mb.denominators, mb.step_adapters), ids[index], labels[index]))
    return out
