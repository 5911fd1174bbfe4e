"""Collectives across real Ray actors: values, byte counts, the network model's delay."""
import time

import pytest
import ray
import torch

from raystack.actors.collective import CommMember, form_comm_group
from raystack.comm import NetworkModel

pytestmark = pytest.mark.cluster


@ray.remote(num_cpus=0.5)
class Member(CommMember):
    def __init__(self):
        torch.set_num_threads(1)

    def all_reduce(self, values, op):
        return self.comm.all_reduce(torch.tensor(values, dtype=torch.float32), op=op).tolist()

    def all_gather(self, values):
        return [t.tolist() for t in self.comm.all_gather(torch.tensor(values, dtype=torch.float32))]

    def broadcast(self, values, src):
        return self.comm.broadcast(torch.tensor(values, dtype=torch.float32), src=src).tolist()

    def async_all_reduce(self, n):
        t = torch.ones(n)
        t0 = time.monotonic()
        handle = self.comm.all_reduce(t, async_op=True)
        issue_s = time.monotonic() - t0
        out = handle.wait()
        total_s = time.monotonic() - t0
        return issue_s, total_s, float(out[0])

    def subgroup_sum(self, ranks, value):
        group = self.comm.subgroup(ranks)
        if group is None:
            return None
        return group.all_reduce(torch.tensor([value])).item()

    def make_subgroup(self, ranks):
        self.sub = self.comm.subgroup(ranks)

    def sub_sum(self, value):
        return self.sub.all_reduce(torch.tensor([value])).item()

    def compressed_sum(self, values, codec_name):
        from raystack.comm.compress import compressed_all_reduce, make_codec
        self.comm.reset_stats()
        codec = make_codec(codec_name)
        x = torch.tensor(values, dtype=torch.float32)
        out = compressed_all_reduce(self.comm, codec.encode(x), codec, x.numel()).wait()
        return out.tolist(), self.comm.stats()["all_gather"]["bytes"]

    def set_network(self, latency_s, bandwidth):
        from raystack.comm import SimulatedLink
        self.comm.network = NetworkModel(latency_s, bandwidth)
        self.comm._link = SimulatedLink(self.comm.network)

    def reset(self):
        self.comm.reset_stats()


@pytest.fixture(scope="module")
def members(ray_cluster):
    actors = [Member.remote() for _ in range(3)]
    form_comm_group(actors, timeout_s=60)
    yield actors
    for a in actors:
        ray.kill(a)


def test_all_reduce_sum_and_avg_values_and_bytes(members):
    ray.get([m.reset.remote() for m in members])
    out = ray.get([m.all_reduce.remote([float(r), 1.0], "sum") for r, m in enumerate(members)])
    assert out == [[3.0, 3.0]] * 3
    out = ray.get([m.all_reduce.remote([float(r), 3.0], "avg") for r, m in enumerate(members)])
    assert out == [[1.0, 3.0]] * 3
    stats = ray.get(members[0].comm_stats.remote())
    # two all-reduces of 8 bytes on a ring of 3: 2 * (2/3 * 8) rounded = 2 * 5
    assert stats["all_reduce"]["count"] == 2
    assert stats["all_reduce"]["bytes"] == 2 * round(2 * 2 / 3 * 8)
    assert stats["all_reduce"]["seconds"] > 0


def test_all_gather_and_broadcast(members):
    gathered = ray.get([m.all_gather.remote([float(r)] * 2) for r, m in enumerate(members)])
    assert all(g == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]] for g in gathered)
    out = ray.get([m.broadcast.remote([float(r + 10)], 2) for r, m in enumerate(members)])
    assert out == [[12.0]] * 3
    stats = ray.get(members[1].comm_stats.remote())
    assert stats["all_gather"]["bytes"] == 2 * 8 and stats["broadcast"]["bytes"] == 4


def test_subgroup_over_some_ranks(members):
    out = ray.get([m.subgroup_sum.remote([0, 2], float(r + 1)) for r, m in enumerate(members)])
    assert out == [4.0, None, 4.0]


def test_a_subgroup_op_whose_peer_never_joins_raises_after_the_groups_timeout(ray_cluster):
    """A rank whose peer left (errored out of another collective) must not wait in a subgroup
    op for torch's 30-minute default: it raises after the group's own timeout, in time for the
    controller to see it alive (a hung survivor is taken for dead and replaced)."""
    pair = [Member.remote() for _ in range(2)]
    try:
        form_comm_group(pair, timeout_s=5)
        ray.get([m.make_subgroup.remote([0, 1]) for m in pair])
        t0 = time.monotonic()
        with pytest.raises(ray.exceptions.RayTaskError, match="(?i)time"):
            ray.get(pair[1].sub_sum.remote(1.0), timeout=120)   # rank 0 never joins
        assert time.monotonic() - t0 < 60
    finally:
        for a in pair:
            ray.kill(a)


def test_network_model_delays_async_completion_without_blocking_issue(members):
    # 1,000,000 floats: each rank sends 2/3 * 4 MB; at 40 MB/s plus 50 ms that is >= 0.116 s.
    ray.get([m.set_network.remote(0.05, 40e6) for m in members])
    try:
        results = ray.get([m.async_all_reduce.remote(1_000_000) for m in members])
        expected = 0.05 + (2 / 3 * 4_000_000) / 40e6
        for issue_s, total_s, value in results:
            assert value == 3.0
            assert total_s >= expected
            assert issue_s < expected / 2  # issuing returned long before the simulated link delivered
    finally:
        ray.get([m.set_network.remote(0.0, float("inf")) for m in members])


def test_compressed_all_reduce_over_gloo_sums_alike_everywhere_and_counts_compressed_bytes(members):
    """int8/fp16 payloads (raw bytes) through a real gloo all-gather: every member decodes and sums
    the same payloads in rank order, so all get the same sum, within one quantisation step per
    member of the exact one; the bytes counted are the payload's, (n-1) times."""
    n = 3000
    values = [[((i * 7 + r * 13) % 101 - 50) / 25.0 for i in range(n)] for r in range(3)]
    exact = [sum(v[i] for v in values) for i in range(n)]
    for name, payload, tol in (("int8", n + 4 * 3, 3 * 2.0 / 127), ("fp16", 2 * n, 3 * 1e-3)):
        out = ray.get([m.compressed_sum.remote(values[r], name) for r, m in enumerate(members)])
        sums = [o[0] for o in out]
        assert sums[0] == sums[1] == sums[2]
        assert max(abs(a - b) for a, b in zip(sums[0], exact)) <= tol
        assert all(o[1] == 2 * payload for o in out)      # all-gather on 3 ranks: 2 x the payload
