"""Benchmark of raystack.comm: wrapper overhead, the network model's fidelity, and overlap.

Arms (2 real Ray actors, gloo on CPU, all in one run):
- torch_dist: raw torch.distributed all_reduce (the baseline a user would write by hand);
- raystack_ideal: CommGroup.all_reduce with no network model (overhead over the baseline);
- raystack_simulated: the same with a simulated link (latency, bandwidth): measured op time
  against the model's prediction;
- overlap: compute for about one op's time while an async all-reduce runs on the simulated link.
"""
from __future__ import annotations

import statistics
import time

from common import Report, parse_args

import ray
import torch

from raystack.actors.collective import CommMember, form_comm_group
from raystack.cluster import connect
from raystack.comm import NetworkModel, SimulatedLink, ring_bytes


@ray.remote(num_cpus=1)
class Bench(CommMember):
    def __init__(self):
        torch.set_num_threads(1)

    def raw(self, n, reps):
        import torch.distributed as dist
        t = torch.ones(n)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - t0)
        return times

    def ours(self, n, reps):
        t = torch.ones(n)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            self.comm.all_reduce(t)
            times.append(time.perf_counter() - t0)
        return times

    def set_network(self, latency_s, bandwidth):
        self.comm.network = NetworkModel(latency_s, bandwidth)
        self.comm._link = SimulatedLink(self.comm.network)

    def compute(self, seconds):
        a = torch.randn(256, 256)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            a = torch.tanh(a @ a)
        return time.perf_counter() - t0

    def overlapped(self, n, compute_s):
        t0 = time.perf_counter()
        handle = self.comm.all_reduce(torch.ones(n), async_op=True)
        self.compute(compute_s)
        handle.wait()
        return time.perf_counter() - t0


def main() -> None:
    args = parse_args(__doc__)
    n = 250_000 if args.quick else 2_000_000
    reps = 5 if args.quick else 15
    latency, bandwidth = 0.01, 100e6
    report = Report("comm", args.quick, {"floats": n, "reps": reps, "actors": 2}, out=args.out)
    report.note(f"simulated link: latency {latency * 1e3:.0f} ms, bandwidth {bandwidth / 1e6:.0f} MB/s, FIFO per group")
    connect(num_cpus=2, dashboard=False, log_to_driver=False)
    actors = [Bench.remote() for _ in range(2)]
    form_comm_group(actors)
    ray.get([a.raw.remote(n, 2) for a in actors])  # warm-up
    raw, ours = [], []
    for _ in range(3):  # interleave the arms so drift hits both
        raw += ray.get([a.raw.remote(n, reps) for a in actors])[0]
        ours += ray.get([a.ours.remote(n, reps) for a in actors])[0]
    raw_med, ours_med = statistics.median(raw), statistics.median(ours)
    report.arm("torch_dist", median_s=raw_med)
    report.arm("raystack_ideal", median_s=ours_med)
    report.target("wrapper_overhead", ours_med / raw_med, "<=", 1.15,
                  "CommGroup.all_reduce time over raw torch.distributed (no network model)")

    ray.get([a.set_network.remote(latency, bandwidth) for a in actors])
    predicted = NetworkModel(latency, bandwidth).transfer_time(ring_bytes("all_reduce", 4 * n, 2))
    sim = ray.get([a.ours.remote(n, reps) for a in actors])[0]
    sim_med = statistics.median(sim)
    report.arm("raystack_simulated", median_s=sim_med, predicted_s=predicted)
    report.target("model_error", abs(sim_med / predicted - 1), "<=", 0.10,
                  "relative error of a simulated all-reduce's time against latency + bytes/bandwidth")

    compute_s = predicted
    serial = compute_s + sim_med
    overlapped = statistics.median([ray.get([a.overlapped.remote(n, compute_s) for a in actors])[0] for _ in range(3)])
    report.arm("overlap", compute_s=compute_s, comm_s=sim_med, overlapped_s=overlapped, serial_s=serial)
    report.target("overlap_ratio", overlapped / max(compute_s, sim_med), "<=", 1.2,
                  "compute + async all-reduce wall time over the longer of the two (1.0 = perfect overlap)")
    report.write()
    for a in actors:
        ray.kill(a)


if __name__ == "__main__":
    main()
