"""The simulated link between pipeline stages: transfers arrive when the link would deliver them."""

from __future__ import annotations

import time

import torch

from raystack.comm.network import NetworkModel
from raystack.mlora.link import InboundLink, Transfer


def test_transfers_wait_for_the_link_in_order_and_plain_tensors_pass():
    link = InboundLink(NetworkModel(latency_s=0.01, bandwidth_bytes_per_s=4e6))
    x = torch.zeros(50_000)  # 200 kB: 0.06 s with the latency
    t0 = time.monotonic()
    sent = [Transfer.send(x), Transfer.send(x)]
    call1 = time.monotonic() - t0
    assert link.receive(sent[0]) is x
    first = time.monotonic() - t0
    link.receive(sent[1])  # queued behind the first on the same link
    both = time.monotonic() - t0
    # at least the link's time (a busy host only sleeps longer): 0.06 s, then 0.12 s in all
    assert 0.059 <= first < 2.0 and 0.119 <= both < 2.0
    # the receiver waited for what the link still owed when each call came: 0.06 s less the
    # time before the first call, then 0.12 s less the time before the second (a host that
    # wakes late from the first sleep leaves less, or nothing, to wait for the second)
    owed = max(0.06 - call1, 0.0) + max(0.12 - first, 0.0)
    assert link.bytes == 400_000 and owed - 0.005 <= link.waited_s <= both
    assert link.receive(x) is x and link.receive(None) is None  # data from the driver, the last stage
    ideal = InboundLink(NetworkModel())
    ideal.receive(Transfer.send(x))
    assert ideal.waited_s == 0.0
