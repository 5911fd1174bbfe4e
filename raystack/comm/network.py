"""A simulated network link: how long moving some bytes takes.

raystack benchmarks run many workers on one machine, where the real link is memory. To study
slow, cross-datacenter links, every collective is delayed as if it ran over a link with fixed
latency and bandwidth. The model is explicit and simple on purpose:

    time(op) = latency_s + bytes_sent_by_this_rank / bandwidth_bytes_per_s

where bytes_sent follows a ring algorithm (see `ring_bytes`). Ops on one group share the link:
they are served one after another (FIFO), so queued async ops finish later, like real traffic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


def ring_bytes(op: str, payload_bytes: int, world_size: int) -> int:
    """Bytes one rank sends for `op` on a ring of `world_size` ranks.

    all_reduce: reduce-scatter + all-gather, 2(n-1)/n of the tensor;
    all_gather: its own shard forwarded n-1 times, (n-1) x the input;
    broadcast: a pipelined ring, about the tensor once.
    """
    n = world_size
    if n <= 1:
        return 0
    if op == "all_reduce":
        return int(round(2 * (n - 1) / n * payload_bytes))
    if op == "all_gather":
        return (n - 1) * payload_bytes
    if op == "broadcast":
        return payload_bytes
    raise ValueError(f"unknown collective {op!r}; expected all_reduce, all_gather or broadcast")


@dataclass(frozen=True)
class NetworkModel:
    """A link of `latency_s` seconds per op and `bandwidth_bytes_per_s` bytes per second.

    The default (0 latency, infinite bandwidth) adds no delay: ops take their real time.
    """

    latency_s: float = 0.0
    bandwidth_bytes_per_s: float = math.inf

    def __post_init__(self) -> None:
        if self.latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {self.latency_s}")
        if not self.bandwidth_bytes_per_s > 0:
            raise ValueError(f"bandwidth_bytes_per_s must be > 0, got {self.bandwidth_bytes_per_s}")

    @property
    def is_ideal(self) -> bool:
        return self.latency_s == 0 and math.isinf(self.bandwidth_bytes_per_s)

    def transfer_time(self, nbytes: int) -> float:
        """Seconds to send `nbytes` over this link (latency included)."""
        if self.is_ideal:
            return 0.0
        return self.latency_s + nbytes / self.bandwidth_bytes_per_s

    @classmethod
    def for_allreduce_ratio(cls, model_bytes: int, world_size: int, step_compute_s: float,
                            ratio: float, latency_s: float = 0.0) -> "NetworkModel":
        """A link on which one all-reduce of `model_bytes` costs `ratio` x `step_compute_s`.

        Used by benchmarks to state "communication is r times computation" explicitly.
        """
        if ratio <= 0 or step_compute_s <= 0:
            raise ValueError("ratio and step_compute_s must be > 0")
        sent = ring_bytes("all_reduce", model_bytes, world_size)
        budget = ratio * step_compute_s - latency_s
        if budget <= 0:
            raise ValueError(f"latency_s={latency_s} alone exceeds the target op time {ratio * step_compute_s}")
        return cls(latency_s=latency_s, bandwidth_bytes_per_s=sent / budget)

    def describe(self) -> dict:
        """A JSON-ready description, for benchmark reports of what was simulated."""
        return {"simulated": not self.is_ideal, "latency_s": self.latency_s,
                "bandwidth_bytes_per_s": None if math.isinf(self.bandwidth_bytes_per_s) else self.bandwidth_bytes_per_s}


class SimulatedLink:
    """FIFO occupancy of one simulated link, on a monotonic clock.

    `reserve(nbytes, now)` returns the time at which an op issued at `now` completes.
    """

    def __init__(self, model: NetworkModel):
        self.model = model
        self.free_at = 0.0

    def reserve(self, nbytes: int, now: float) -> float:
        if self.model.is_ideal:
            return now
        start = max(now, self.free_at)
        self.free_at = start + self.model.transfer_time(nbytes)
        return self.free_at
