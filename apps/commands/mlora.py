"""`raystack mlora`: fine-tune many LoRA/DoRA adapters at once on one base, pipelined on Ray."""

from __future__ import annotations

import argparse
import time

from raystack.apps.commands.common import (add_part_arguments, load_part_config, preflight_and_connect,
                                           print_config, write_json)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_part_arguments(parser, "mlora")
    parser.add_argument("--stages", type=int, default=None, help="override pipeline.stages")
    parser.add_argument("--steps", type=int, default=None, help="override every task's max_steps (sets steps)")
    parser.add_argument("--no-eval", action="store_true", help="skip the accuracy before/after report")


def load(args: argparse.Namespace):
    """The job's config from the arguments; every bad field named at once (ConfigError)."""
    extra: dict = {}
    if args.stages is not None:
        extra["pipeline"] = {"stages": args.stages}
    if args.steps is not None:
        extra["steps"] = args.steps
    return load_part_config("mlora", args, extra)


def run(args: argparse.Namespace) -> int:
    cfg = load(args)  # a bad config fails here, before any actor starts
    if args.print_config:
        return print_config("mlora", cfg)
    info = preflight_and_connect(cfg, args.address)  # files, sizes, the cluster's resources
    import raystack.mlora

    print(f"[mlora] cluster {info.address}" + (f", dashboard {info.dashboard_url}" if info.dashboard_url else ""))
    t0 = time.perf_counter()
    res = raystack.mlora.finetune(cfg, preflight=False)  # preflight_and_connect checked it
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
    from raystack.runtime.storage import Storage

    out = Storage(res.artifacts["run"]).write_json(summary, "report.json")  # in this run's own folder
    print(f"[mlora] report: {out}")
    write_json(args.json_path, summary)
    return 0
