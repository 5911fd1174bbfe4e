"""What mLoRA's pipeline stages report to the driver, as typed messages."""
from __future__ import annotations

from dataclasses import dataclass, field

from raystack.runtime.messages import Message


@dataclass(frozen=True)
class StageStats(Message):
    """A stage's answer to ``stats``: compute seconds so far, and the activation-memory
    samples ``(rows, seq_len, bytes saved for backward)`` taken since the last call."""

    busy_s: float
    activations: list[tuple[int, int, int]] = field(default_factory=list)
    pid: int = 0
