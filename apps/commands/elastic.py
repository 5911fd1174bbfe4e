"""`raystack elastic`: train a DLRM with a controller that sizes and heals the job.

With no config it generates a Criteo-like dataset, starts an embedded Ray cluster that
simulates ``--sim-nodes`` nodes with custom resources, and trains within the default budget.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from raystack.apps.commands.common import (add_part_arguments, load_part_config, preflight_and_connect,
                                           print_config, write_json)

SIM_NODE_CPUS = 100.0  # custom resource per simulated node of an embedded cluster (units ask 0.01)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_part_arguments(p, "elastic")
    p.add_argument("--sim-nodes", type=int, default=3,
                   help="simulated nodes of an embedded cluster (custom resources; default 3)")


def run(args) -> int:
    import raystack.elastic
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
    r = cfg.resources
    print(f"  budget: {r.max_cpus} CPUs, <= {r.max_workers} workers, <= {r.max_ps} PS "
          f"({'autoscaling' if r.autoscale else 'fixed size'})")
    # a progress bar, and what the controller changes as it happens
    res = raystack.elastic.train(cfg, preflight=False)  # preflight_and_connect checked it
    m = res.metrics
    final = {k[len("final_"):]: v for k, v in m.items() if k.startswith("final_")}
    print(f"done in {m['seconds']:.1f}s: {int(m['rows'])} samples ({m['samples_per_s']:.0f}/s), "
          f"AUC {m['auc']:.4f} on held-out data (held out: {res.artifacts['eval_file']})")
    print(f"  exactly-once audit: {int(m['lost'])} lost, {int(m['duplicated'])} duplicated samples")
    print(f"  final config: {final}")
    events = json.loads(Path(res.artifacts["events"]).read_text())
    write_json(args.json_path, {**{k: m[k] for k in ("auc", "rows", "seconds", "samples_per_s", "lost",
                                                     "duplicated")},
                                "final_config": final, "events": events, "metrics": m,
                                "checkpoint": res.checkpoint, "artifacts": res.artifacts})
    return 0
