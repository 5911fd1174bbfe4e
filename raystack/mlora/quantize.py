"""Quantised frozen bases for LoRA training: int8 weight-only, applied after loading.

:func:`quantize_base` swaps the linear layers (``nn.Linear``, GPT-2's ``Conv1D``) of a loaded
model's decoder layers for :class:`Int8Linear` (symmetric int8 per output row, one float scale
per row: a quarter of the fp32 bytes), after :func:`raystack.mlora.stage.load_stage` loaded
them. The embedding, the norms and ``lm_head`` stay in full precision, as QLoRA leaves
them; adapters train in full precision on top; exported adapters load on the full-precision
base unchanged (they hold only A, B and DoRA magnitudes).

The forward converts an int8 weight into the activations' dtype a block of rows at a time, in a
buffer all the model's int8 layers share (:class:`DequantBuffer`, 8 MB in fp32), and multiplies. On this CPU that ran a 128x1024 by 1024x2816 product in 8.3 ms against 6.3 ms in
fp32, while ``torch.ops.aten._weight_int8pack_mm`` (the int8 weight-only kernel torch ships
for decoding) took 549 ms in fp32 and 13.8 ms with bf16 activations at that size: it is built
for a few rows, not training micro-batches. A fresh dense transient per layer instead of the
shared buffer raised a stage's peak RSS by ~430 MB (glibc kept the freed 9-25 MB blocks
fragmented between saved activations). The backward gives the input's gradient only (the
weight is frozen) and converts the weight again rather than keeping a float copy for it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from raystack.mlora.batchlora import dense_weight, is_linear
from raystack.mlora.frozen import FrozenLinear, copy_off_checkpoint
from raystack.models.layout import layout_of

log = logging.getLogger(__name__)

QUANT_MODES = ("int8",)
INT8_MAX = 127
DEQUANT_BLOCK = 2**21  # weight elements converted at once: 8 MB in fp32 (a 2048x5504 layer is 45 MB)


class DequantBuffer:
    """One reusable dense buffer for the int8 layers of a model: blocks of a weight's rows are
    converted into it right before their product (layers run one at a time in a stage)."""

    def __init__(self, block: int = DEQUANT_BLOCK) -> None:
        self.block = block
        self._buf: torch.Tensor | None = None

    def rows(self, in_features: int) -> int:
        """Weight rows per block."""
        return max(1, self.block // in_features)

    def dense(self, q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Rows ``q * scale`` in ``dtype``, in the buffer (valid until the next call)."""
        buf = self._buf
        if buf is None or buf.numel() < q.numel() or buf.dtype != dtype or buf.device != q.device:
            buf = self._buf = torch.empty(max(q.numel(), 0 if buf is None else buf.numel()), dtype=dtype,
                                          device=q.device)
        return buf[: q.numel()].view(q.shape).copy_(q).mul_(scale.to(dtype)[:, None])


class _Int8LinearFn(torch.autograd.Function):
    """``y = x (q * scale)^T + bias`` with ``q`` int8, a block of output rows at a time;
    gradient for ``x`` only."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, q: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None,
                buffer: DequantBuffer) -> torch.Tensor:
        ctx.save_for_backward(q, scale)
        ctx.buffer = buffer
        step = buffer.rows(q.shape[1])
        if step >= q.shape[0]:
            return F.linear(x, buffer.dense(q, scale, x.dtype), None if bias is None else bias.to(x.dtype))
        y = x.new_empty((*x.shape[:-1], q.shape[0]))
        for a in range(0, q.shape[0], step):
            b = min(a + step, q.shape[0])
            y[..., a:b] = F.linear(x, buffer.dense(q[a:b], scale[a:b], x.dtype),
                                   None if bias is None else bias[a:b].to(x.dtype))
        return y

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, None, None, None, None]:
        q, scale = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None, None, None, None, None
        buffer: DequantBuffer = ctx.buffer
        step = buffer.rows(q.shape[1])
        dx = None
        for a in range(0, q.shape[0], step):
            b = min(a + step, q.shape[0])
            part = grad[..., a:b] @ buffer.dense(q[a:b], scale[a:b], grad.dtype)
            dx = part if dx is None else dx.add_(part)
        return dx, None, None, None, None


class Int8Linear(FrozenLinear):
    """A frozen linear layer stored as int8 with one scale per output row."""

    def __init__(self, qweight: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None,
                 dtype: torch.dtype, buffer: DequantBuffer | None = None) -> None:
        super().__init__()
        self.out_features, self.in_features = qweight.shape
        self.register_buffer("qweight", qweight)
        self.register_buffer("scale", scale)
        self.register_buffer("bias", bias)
        self._dtype = dtype
        self._buffer = buffer or DequantBuffer()

    @classmethod
    def from_linear(cls, linear: nn.Module, buffer: DequantBuffer | None = None) -> "Int8Linear":
        """Quantise ``linear``'s weight (an ``nn.Linear`` or ``Conv1D``, read as [out, in]):
        ``round(w / s)`` with ``s = max|w_row| / 127``."""
        w = dense_weight(linear).detach()
        scale = (w.abs().amax(dim=1).float() / INT8_MAX).clamp(min=torch.finfo(torch.float32).tiny)
        q = torch.round(w.float() / scale[:, None]).clamp(-INT8_MAX, INT8_MAX).to(torch.int8)
        bias = None if linear.bias is None else linear.bias.detach().clone()
        return cls(q, scale, bias, w.dtype, buffer)

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    @property
    def device(self) -> torch.device:
        return self.qweight.device

    @property
    def weight(self) -> torch.Tensor:
        return (self.qweight.to(torch.float32) * self.scale[:, None]).to(self._dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _Int8LinearFn.apply(x, self.qweight, self.scale, self.bias, self._buffer)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8 per-row"


@dataclass(frozen=True)
class QuantReport:
    """What :func:`quantize_base` changed."""

    mode: str
    layers: int  # linear layers swapped
    bytes_before: int  # their weights' bytes in the original dtype
    bytes_after: int  # int8 weights + scales (+ biases)

    @property
    def ratio(self) -> float:
        return self.bytes_after / self.bytes_before if self.bytes_before else 1.0


def quantize_base(model: nn.Module, mode: str = "int8", block: int = DEQUANT_BLOCK) -> QuantReport:
    """Swap every linear layer inside the decoder layers (a pipeline stage's missing layers are
    skipped; any family :mod:`raystack.models.layout` knows) for its quantised form, in place,
    one at a time (``block``: weight elements converted back at once in the forward and
    backward)."""
    if mode not in QUANT_MODES:
        raise ValueError(f"quantize must be one of {list(QUANT_MODES)}, got {mode!r}")
    count = before = after = 0
    buffer = DequantBuffer(block)  # shared by all the model's int8 layers
    for layer in layout_of(model).layers(model):
        for name, module in list(layer.named_modules()):
            if not is_linear(module) or isinstance(module, FrozenLinear):
                continue
            parent_name, _, child = name.rpartition(".")
            parent = layer.get_submodule(parent_name) if parent_name else layer
            q = Int8Linear.from_linear(module, buffer)
            setattr(parent, child, q)
            count += 1
            before += sum(p.numel() * p.element_size() for p in module.parameters())
            after += sum(b.numel() * b.element_size() for b in q.buffers())
    for p in model.parameters():  # what stayed in full precision is frozen too
        p.requires_grad_(False)
    copy_off_checkpoint(model)
    log.info("quantised %d linear layers to %s: %.1f MB -> %.1f MB", count, mode, before / 2**20, after / 2**20)
    return QuantReport(mode, count, before, after)
