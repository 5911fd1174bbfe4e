"""`raystack mlora`: fine-tune many LoRA/DoRA adapters at once on one base, pipelined on Ray."""

from __future__ import annotations

import argparse
import json
import time

from raystack.config import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=None, help="mLoRA YAML (default: 4 adapters on 4 synthetic tasks, tiny base)")
    parser.add_argument("--address", default=None, help="Ray cluster address (default: RAY_ADDRESS or an embedded cluster)")
    parser.add_argument("--stages", type=int, default=None, help="override pipeline.stages")
    parser.add_argument("--steps", type=int, default=None, help="override every task's max_steps")
    parser.add_argument("--output-dir", default=None, help="override output_dir")
    parser.add_argument("--no-eval", action="store_true", help="skip the accuracy before/after report")


def load(args: argparse.Namespace):
    from raystack.mlora.config import load_mlora_config

    overrides: dict = {}
    if args.stages is not None:
        overrides["pipeline"] = {"stages": args.stages}
    if args.output_dir:
        overrides["output_dir"] = args.output_dir
    cfg = load_mlora_config(args.config, overrides or None)
    if args.steps is not None:
        if args.steps < 1:
            raise ConfigError("--steps", "must be >= 1")
        for t in cfg.tasks:
            t.max_steps = args.steps
    return cfg


def run(args: argparse.Namespace) -> int:
    cfg = load(args)  # a bad config fails here, before any actor starts
    from raystack.mlora.trainer import check_config

    check_config(cfg)
    import raystack.mlora
    from raystack.cluster import connect

    info = connect(args.address)
    print(f"[mlora] cluster {info.address}" + (f", dashboard {info.dashboard_url}" if info.dashboard_url else ""))
    t0 = time.perf_counter()
    res = raystack.mlora.finetune(cfg)
    wall = time.perf_counter() - t0
    m = res.metrics
    adapters = {k.split(".", 1)[1]: v for k, v in res.artifacts.items() if k.startswith("adapter.")}
    print(f"[mlora] trained {len(adapters)} adapters in {wall:.1f}s "
          f"({m['tokens_per_s']:.0f} tokens/s, {int(m['restarts'])} stage restarts)")
    summary = {"adapters": adapters, "seconds": wall, "restarts": int(m["restarts"]),
               "final_loss": {k.split(".", 1)[1]: v for k, v in m.items() if k.startswith("loss.")}}
    if not args.no_eval:
        from raystack.mlora.trainer import evaluate_adapters

        acc = evaluate_adapters(cfg, adapters)
        summary["accuracy"] = acc
        print("| adapter | exact match before | after | token accuracy before | after |")
        print("| --- | --- | --- | --- | --- |")
        for name, a in acc.items():
            print(f"| {name} | {a['exact_before']:.2f} | {a['exact_after']:.2f} | "
                  f"{a['token_before']:.2f} | {a['token_after']:.2f} |")
    from pathlib import Path

    out = Path(cfg.output_dir) / "summary.json"
    out.write_text(json.dumps(summary, indent=2))
    print(f"[mlora] summary: {out}")
    return 0
