"""`raystack edit --config edit.yaml`: EDiT / A-EDiT pretraining on Ray actors."""
from __future__ import annotations

import argparse

from raystack.apps.commands.common import (add_part_arguments, load_part_config, preflight_and_connect,
                                           print_config, write_json)
from raystack.config import parse_overrides


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_part_arguments(p, "edit")


def load_edit_config(path: str | None, overrides: list[str] | None = None):
    """The job's config, validated before anything starts (raises ConfigError)."""
    from raystack.config import load_config
    from raystack.edit.config import EDiTConfig
    return load_config(EDiTConfig, path, parse_overrides(overrides or []) or None)


def run(args) -> int:
    cfg = load_part_config("edit", args)   # a bad config fails here, before Ray
    if args.print_config:
        return print_config("edit", cfg)
    import raystack.edit
    info = preflight_and_connect(cfg, args.address)  # refused jobs start nothing
    print(f"raystack edit: mode={cfg.mode} model={cfg.model} replicas={cfg.replicas} x shards={cfg.shards} "
          f"on {'the embedded local cluster' if info.embedded else info.address}")
    if info.dashboard_url:
        print(f"  dashboard: {info.dashboard_url} (metrics ray_raystack_edit_*)")
    res = raystack.edit.pretrain(cfg, preflight=False)  # preflight_and_connect checked it
    m = res.metrics
    summary = {"steps": int(m["steps"]), "tokens": int(m["tokens"]), "seconds": round(m["seconds"], 1),
               "tokens_per_s": round(m["tokens_per_s"], 1), "train_loss": round(m["train_loss"], 4),
               "val_loss": round(m["val_loss"], 4), "sync_seconds_per_rank": round(m["sync_seconds"], 2),
               "allreduce_seconds_per_rank": round(m["dp_seconds"], 2),
               "outliers": int(m["outliers"]), "replacements": int(m["replacements"]),
               "extra_state_bytes_per_rank": int(m["extra_state_bytes"]), "checkpoint": res.checkpoint}
    print("\n| what | value |\n| --- | --- |")
    for k, v in summary.items():
        print(f"| {k} | {v} |")
    write_json(args.json_path, summary)
    return 0
