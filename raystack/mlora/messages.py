"""What mLoRA's pipeline stages report to the driver, as typed messages."""
from __future__ import annotations

from dataclasses import dataclass, field

from raystack.mlora.quantize import QuantReport
from raystack.runtime.messages import Message


@dataclass(frozen=True)
class StageInfo(Message):
    """A started stage's answer to ``ready``: its process, and its memory before any adapter."""

    pid: int
    node_id: str
    runtime_bytes: int  # footprint before the base was loaded (0 on a GPU)
    fixed_bytes: int  # with its base slice loaded (and quantised), no adapter
    capacity_bytes: int  # its device's memory: the host's RAM, or the GPU's
    quantized: QuantReport | None = None  # what int8 quantisation of its slice changed


@dataclass(frozen=True)
class StageStats(Message):
    """A stage's answer to ``stats``: compute seconds so far, the activation-memory samples
    ``(rows, seq_len, bytes saved for backward)`` taken since the last call, and its memory
    (the call starts a new peak window)."""

    busy_s: float
    activations: list[tuple[int, int, int]] = field(default_factory=list)
    pid: int = 0
    peak_bytes: int = 0  # highest footprint since the previous stats() call
    resident_bytes: int = 0  # now, after freed memory went back to the OS
    link_wait_s: float = 0.0  # waiting for the simulated link between stages, in total
