"""`raystack elastic`: train a DLRM with a controller that sizes and heals the job.

With no config it generates a Criteo-like dataset, starts an embedded Ray cluster that
simulates ``--sim-nodes`` nodes with custom resources, and trains within the default budget.
"""
from __future__ import annotations

import argparse
import json
import time

from tqdm import tqdm

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
    from raystack.actors.elastic import ElasticController
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
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(vars(res), fh, indent=2)
    return 0
