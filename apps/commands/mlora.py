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
    from raystack.actors.mlora import LoRAPipeline
    from raystack.cluster import connect

    info = connect(args.address)
    print(f"[mlora] cluster {info.address}" + (f", dashboard {info.dashboard_url}" if info.dashboard_url else ""))
    t0 = time.perf_counter()
    pipe = LoRAPipeline(cfg)
    try:
        result = pipe.run()
    finally:
        pipe.shutdown()
    wall = time.perf_counter() - t0
    print(f"[mlora] trained {len(result.adapters)} adapters in {wall:.1f}s "
          f"({result.tokens / max(result.seconds, 1e-9):.0f} tokens/s, {result.restarts} stage restarts)")
    summary = {"adapters": result.adapters, "seconds": wall, "restarts": result.restarts,
               "final_loss": {n: (v[-1] if v else None) for n, v in result.losses.items()}}
    if not args.no_eval:
        from raystack.mlora.trainer import evaluate_adapters

        acc = evaluate_adapters(cfg, result.adapters)
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
