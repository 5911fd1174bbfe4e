"""What an EDiT rank reports to the driver, as a typed message (fields may be added here)."""
from __future__ import annotations

from dataclasses import dataclass, field

from raystack.runtime.messages import Message


@dataclass(frozen=True)
class SegmentReport(Message):
    """A rank's counters after a segment (inner steps up to a sync), or at any time."""

    rank: int
    replica: int
    step: int                      # inner steps this rank ran
    syncs: int
    tokens: int
    loss: float                    # the latest inner-step loss (nan before the first step)
    outliers: int                  # (replica, block) pairs dropped by the penalty
    skipped_blocks: int
    sync_seconds: float            # exposed outer-sync time
    dp_seconds: float              # gradient all-reduce time
    compute_seconds: float
    done: bool                     # the step budget is spent (after a final, complete sync)
    extra_state_bytes: int         # θ_sync and momentum this rank keeps
    wall: float                    # time.time() when the report was made
    phases: dict[str, float] = field(default_factory=dict)  # where the exposed sync time went
