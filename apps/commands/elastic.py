"""`raystack elastic`: train a DLRM with a controller that sizes and heals the job.

With no config it generates a Criteo-like dataset, starts an embedded Ray cluster that
simulates ``--sim-nodes`` nodes with custom resources, and trains within the default budget.
"""
from __future__ import annotations

import argparse
import time

from tqdm import tqdm

from raystack.apps.commands.common import (add_part_arguments, load_part_config, preflight_and_connect,
                                           print_config, write_json)

SIM_NODE_CPUS = 100.0  # custom resource per simulated node of an embedded cluster (units ask 0.01)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_part_arguments(p, "elastic")
    p.add_argument("--sim-nodes", type=int, default=3,
                   help="simulated nodes of an embedded cluster (custom resources; default 3)")


def run(args) -> int:
    from raystack.actors.elastic import ElasticController
    from raystack.config import ConfigError

    cfg = load_part_config("elastic", args)
    if args.print_config:
        return print_config("elastic", cfg)
    if not 0 <= args.sim_nodes <= 1024:
        raise ConfigError("--sim-nodes", f"must be in [0, 1024], got {args.sim_nodes}")
    import os
    import ray

    embedded = not (args.address or os.environ.get("RAY_ADDRESS") or ray.is_initialized())
    resources = {f"sim_node_{k}": SIM_NODE_CPUS for k in range(args.sim_nodes)}
    if embedded and args.sim_nodes > 0 and cfg.resources.sim_nodes == 0:
        cfg.resources.sim_nodes = args.sim_nodes
    info = preflight_and_connect(cfg, args.address, resources=resources or None)
    print(f"raystack elastic '{cfg.name}' on "
          f"{'the embedded local cluster' if info.embedded else info.address}"
          + (f" ({cfg.resources.sim_nodes} simulated nodes)" if cfg.resources.sim_nodes else ""))
    if info.dashboard_url:
        print(f"  dashboard: {info.dashboard_url} (metrics ray_raystack_elastic_*)")
    t0 = time.time()
    ctl = ElasticController(cfg)
    print(f"  data: {len(ctl.train_files)} training files, {ctl.total_rows} rows, "
          f"{len(ctl.shards)} shards; held out: {ctl.eval_file}")
    r = cfg.resources
    print(f"  budget: {r.max_cpus} CPUs, <= {r.max_workers} workers, <= {r.max_ps} PS "
          f"({'autoscaling' if r.autoscale else 'fixed size'})")
    bar = tqdm(total=ctl.total_rows * cfg.epochs, unit="sample", desc="elastic DLRM")
    seen = {"events": 0}

    def progress(s: dict) -> None:
        bar.update(s["rows_done"] - bar.n)
        c = s["config"]
        if c is not None:
            bar.set_postfix_str(f"{c.workers}w/{c.ps}ps {s['stage']} {s['samples_per_s']:.0f}/s")
        for e in ctl.loop.events[seen["events"]:]:
            tqdm.write(f"  [{e.time - t0:6.1f}s] {e.kind}: {e.detail}")
        seen["events"] = len(ctl.loop.events)

    try:
        res = ctl.run(progress)
    finally:
        bar.close()
        ctl.shutdown()
    print(f"done in {res.seconds:.1f}s: {res.rows} samples ({res.samples_per_s:.0f}/s), "
          f"AUC {res.auc:.4f} on held-out data")
    print(f"  exactly-once audit: {res.lost} lost, {res.duplicated} duplicated samples")
    print(f"  final config: {res.final_config}")
    write_json(args.json_path, vars(res))
    return 0
