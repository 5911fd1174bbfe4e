"""A simulated link between pipeline stages: activations and gradients delayed as over a network.

On one machine, stage actors hand tensors over through Ray's shared-memory object store. To
study a slow link between devices (the mLoRA paper's setting), the sending stage stamps each
tensor with the time it left (:class:`Transfer`), and the receiving stage delivers it only once
the link, modelled by :class:`raystack.comm.NetworkModel` and served first in first out, would
have carried it (:class:`InboundLink`). One direction of one stage pair is one link. Stamps
use the host's monotonic clock, so the simulation needs the stages on one host.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from raystack.comm.network import NetworkModel, SimulatedLink


@dataclass(frozen=True)
class Transfer:
    """A tensor on its way to the next stage, and when it left the sender."""

    tensor: torch.Tensor
    sent_at: float  # time.monotonic() on the sender

    @classmethod
    def send(cls, tensor: torch.Tensor) -> "Transfer":
        return cls(tensor, time.monotonic())


class InboundLink:
    """The receiving end of one simulated link: waits until a transfer would have arrived."""

    def __init__(self, network: NetworkModel) -> None:
        self._link = SimulatedLink(network)
        self.waited_s = 0.0  # time the receiver spent waiting for the link
        self.bytes = 0

    def receive(self, item: "Transfer | torch.Tensor | None") -> "torch.Tensor | None":
        """The tensor, once delivered (plain tensors, e.g. from the data, pass at once)."""
        if not isinstance(item, Transfer):
            return item
        nbytes = item.tensor.numel() * item.tensor.element_size()
        self.bytes += nbytes
        wait = self._link.reserve(nbytes, item.sent_at) - time.monotonic()
        if wait > 0:
            time.sleep(wait)
            self.waited_s += wait
        return item.tensor
