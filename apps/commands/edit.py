"""`raystack edit --config edit.yaml`: EDiT / A-EDiT pretraining on Ray actors."""
from __future__ import annotations

import argparse
import json

from raystack.config import parse_overrides


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, help="YAML config (default: the embedded default, "
                   "tiny-1m on the standard-library corpus, 2 replicas)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a config field, e.g. --set sync.h=8 --set mode=aedit (repeatable)")
    p.add_argument("--address", default=None, help="Ray address (default: RAY_ADDRESS, else embedded)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def load_edit_config(path: str | None, overrides: list[str] | None = None):
    """The job's config, validated before anything starts (raises ConfigError)."""
    from raystack.config import load_config
    from raystack.edit.config import EDiTConfig
    return load_config(EDiTConfig, path, parse_overrides(overrides or []) or None)


def run(args) -> int:
    cfg = load_edit_config(args.config, args.overrides)   # a bad config fails here, before Ray
    from raystack.actors.edit import run_edit
    from raystack.cluster import connect
    info = connect(args.address)
    print(f"raystack edit: mode={cfg.mode} model={cfg.model} replicas={cfg.replicas} x shards={cfg.shards} "
          f"on {'the embedded local cluster' if info.embedded else info.address}")
    if info.dashboard_url:
        print(f"  dashboard: {info.dashboard_url} (metrics ray_raystack_edit_*)")
    res = run_edit(cfg)
    summary = {"steps": res.steps, "tokens": res.tokens, "seconds": round(res.seconds, 1),
               "tokens_per_s": round(res.tokens_per_s, 1), "train_loss": round(res.train_loss, 4),
               "val_loss": round(res.val_loss, 4), "sync_seconds_per_rank": round(res.sync_seconds, 2),
               "allreduce_seconds_per_rank": round(res.dp_seconds, 2),
               "outliers": res.outliers, "replacements": res.replacements,
               "extra_state_bytes_per_rank": res.extra_state_bytes,
               "wire_bytes_per_rank": res.wire_bytes, "memory_bytes_per_rank": res.memory,
               "checkpoint": res.model_dir}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print("\n| what | value |\n| --- | --- |")
        for k, v in summary.items():
            print(f"| {k} | {v} |")
    return 0
