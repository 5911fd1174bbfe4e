"""`raystack demo`: the main job on the embedded local cluster.

Today it runs what exists: the foundation, end to end (cluster, collective group over a
simulated slow link, tiny Llama, standard-library corpus, metrics). The workflow that joins
EDiT, mLoRA, elastic DLRM and Tune grows here as those parts land.
"""
from __future__ import annotations

import argparse
import time

from tqdm import tqdm


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--address", default=None, help="Ray address (default: RAY_ADDRESS, else embedded)")
    p.add_argument("--workers", type=int, default=2, help="data-parallel workers (default 2)")
    p.add_argument("--steps", type=int, default=60, help="training steps (default 60)")
    p.add_argument("--latency-ms", type=float, default=5.0, help="simulated link latency (default 5 ms)")
    p.add_argument("--bandwidth-mbps", type=float, default=800.0, help="simulated link bandwidth, Mbit/s (default 800)")


def run(args) -> int:
    import ray

    from actors.collective import form_comm_group
    from actors.dp_worker import DataParallelLMWorker
    from raystack.cluster import connect
    from raystack.comm import NetworkModel
    from raystack.data import stdlib_corpus

    t_start = time.time()
    info = connect(args.address)
    print(f"raystack demo on {'the embedded local cluster' if info.embedded else info.address}")
    if info.dashboard_url:
        print(f"  dashboard: {info.dashboard_url}")
    net = NetworkModel(latency_s=args.latency_ms / 1e3, bandwidth_bytes_per_s=args.bandwidth_mbps * 1e6 / 8)
    print(f"  simulated network between workers: {args.latency_ms} ms latency, {args.bandwidth_mbps} Mbit/s")
    corpus = stdlib_corpus(max_bytes=2_000_000)
    print(f"  corpus: Python standard library sources, {corpus}")
    tokens_ref = ray.put(corpus.train)
    workers = [DataParallelLMWorker.remote("tiny-1m", tokens_ref, 8, 128, 2e-3) for _ in range(args.workers)]
    form_comm_group(workers, network=net)
    val_before = ray.get(workers[0].evaluate.remote(corpus.val))
    chunk, losses, comm = 5, [], None
    with tqdm(total=args.steps, desc="synchronous data parallel (tiny-1m)", unit="step") as bar:
        done = 0
        while done < args.steps:
            n = min(chunk, args.steps - done)
            results = ray.get([w.train.remote(n) for w in workers])
            losses.extend(sum(r["losses"][i] for r in results) / len(results) for i in range(n))
            comm = results[0]["comm"]
            done += n
            bar.update(n)
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
    val_after = ray.get(workers[0].evaluate.remote(corpus.val))
    tokens = sum(r["tokens"] for r in results) * args.steps / n
    elapsed = time.time() - t_start
    print("\n| what | value |\n| --- | --- |")
    print(f"| validation loss | {val_before:.3f} -> {val_after:.3f} |")
    print(f"| train loss (first, last) | {losses[0]:.3f}, {losses[-1]:.3f} |")
    print(f"| tokens trained | {int(tokens):,} |")
    print(f"| all-reduce bytes sent by rank 0 | {comm['bytes']:,} |")
    print(f"| time in all-reduce, rank 0 | {comm['seconds']:.1f} s |")
    print(f"| wall time | {elapsed:.1f} s |")
    print("\nEDiT, mLoRA, elastic DLRM and workflows join this demo as they land (see README).")
    for w in workers:
        ray.kill(w)
    return 0 if val_after < val_before else 1
