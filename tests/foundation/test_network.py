import math

import pytest

from raystack.comm import NetworkModel, SimulatedLink, ring_bytes


def test_ring_bytes_per_op():
    assert ring_bytes("all_reduce", 1000, 4) == 1500
    assert ring_bytes("all_reduce", 1000, 2) == 1000
    assert ring_bytes("all_gather", 1000, 3) == 2000
    assert ring_bytes("broadcast", 1000, 5) == 1000
    assert ring_bytes("all_reduce", 1000, 1) == 0
    with pytest.raises(ValueError, match="unknown collective"):
        ring_bytes("scatter", 1, 2)


def test_transfer_time_is_latency_plus_bytes_over_bandwidth():
    net = NetworkModel(latency_s=0.01, bandwidth_bytes_per_s=1e6)
    assert net.transfer_time(500_000) == pytest.approx(0.51)
    assert NetworkModel().transfer_time(10**12) == 0.0
    with pytest.raises(ValueError):
        NetworkModel(bandwidth_bytes_per_s=0)


def test_for_allreduce_ratio_makes_one_allreduce_cost_r_steps():
    net = NetworkModel.for_allreduce_ratio(model_bytes=4_000_000, world_size=2, step_compute_s=0.1, ratio=4)
    assert net.transfer_time(ring_bytes("all_reduce", 4_000_000, 2)) == pytest.approx(0.4)


def test_link_serves_ops_first_in_first_out():
    link = SimulatedLink(NetworkModel(latency_s=0.0, bandwidth_bytes_per_s=100.0))
    assert link.reserve(100, now=10.0) == pytest.approx(11.0)
    assert link.reserve(100, now=10.5) == pytest.approx(12.0)  # queued behind the first
    assert link.reserve(100, now=20.0) == pytest.approx(21.0)  # link idle again
    assert SimulatedLink(NetworkModel()).reserve(10**9, now=5.0) == 5.0
    assert math.isinf(NetworkModel().bandwidth_bytes_per_s)
