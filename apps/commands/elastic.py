"""`raystack elastic`: train a DLRM with a controller that sizes and heals the job.

With no config it generates a Criteo-like dataset, starts an embedded Ray cluster that
simulates ``--sim-nodes`` nodes with custom resources, and trains within the default budget.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from raystack.config import parse_overrides


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, help="YAML config (default: built-in, generated data)")
    p.add_argument("--address", default=None, help="Ray address (default: RAY_ADDRESS, else embedded)")
    p.add_argument("--sim-nodes", type=int, default=3,
                   help="simulated nodes of an embedded cluster (custom resources; default 3)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a config field, e.g. --set data.generate_rows=50000 (YAML value)")
    p.add_argument("--json", default=None, help="write the result as JSON here")


def run(args) -> int:
    import raystack.elastic
    from raystack.cluster import connect
    from raystack.config import load_config
    from raystack.elastic.config import ElasticConfig

    cfg = load_config(ElasticConfig, args.config, parse_overrides(args.set))
    resources = {f"sim_node_{k}": 100.0 for k in range(args.sim_nodes)}
    info = connect(args.address, resources=resources or None)
    if info.embedded and args.sim_nodes > 0 and cfg.resources.sim_nodes == 0:
        cfg.resources.sim_nodes = args.sim_nodes
    print(f"raystack elastic '{cfg.name}' on "
          f"{'the embedded local cluster' if info.embedded else info.address}"
          + (f" ({cfg.resources.sim_nodes} simulated nodes)" if cfg.resources.sim_nodes else ""))
    if info.dashboard_url:
        print(f"  dashboard: {info.dashboard_url} (metrics ray_raystack_elastic_*)")
    r = cfg.resources
    print(f"  budget: {r.max_cpus} CPUs, <= {r.max_workers} workers, <= {r.max_ps} PS "
          f"({'autoscaling' if r.autoscale else 'fixed size'})")
    res = raystack.elastic.train(cfg)  # a progress bar, and what the controller changes as it happens
    m = res.metrics
    final = {k[len("final_"):]: v for k, v in m.items() if k.startswith("final_")}
    print(f"done in {m['seconds']:.1f}s: {int(m['rows'])} samples ({m['samples_per_s']:.0f}/s), "
          f"AUC {m['auc']:.4f} on held-out data (held out: {res.artifacts['eval_file']})")
    print(f"  exactly-once audit: {int(m['lost'])} lost, {int(m['duplicated'])} duplicated samples")
    print(f"  final config: {final}")
    if args.json:
        events = json.loads(Path(res.artifacts["events"]).read_text())
        with open(args.json, "w") as fh:
            json.dump({**{k: m[k] for k in ("auc", "rows", "seconds", "samples_per_s", "lost", "duplicated")},
                       "final_config": final, "events": events, "metrics": m, "checkpoint": res.checkpoint,
                       "artifacts": res.artifacts}, fh, indent=2)
    return 0
