"""`raystack demo` (= `make demo`): the main job on the embedded local cluster.

One workflow, written with raystack's workflow API, uses every part: EDiT pretraining ->
Tune -> mLoRA fine-tuning -> evaluation -> Ray Serve, and beside it elastic DLRM training with a
real worker kill. Steps are cached: a second run is served from the cache.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

QUICK = {"edit_steps": 40, "mlora_steps": 30, "tune_steps": 10, "tune_lrs": [3e-3, 1e-2],
         "elastic_rows": 30_000, "tasks": ["copy", "arithmetic"]}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=None, metavar="FILE",
                   help="demo YAML (fields of apps.demo.pipeline.DemoConfig; see --print-config)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a demo field, e.g. --set edit_steps=40 (repeatable; VALUE is YAML)")
    p.add_argument("--output-dir", "--out-dir", dest="out_dir", default=None, metavar="DIR",
                   help="where runs, cache and report go (sets out_dir; default runs/demo)")
    p.add_argument("--json", dest="json_path", default=None, metavar="PATH",
                   help="write every step's output as JSON to PATH ('-': standard output)")
    p.add_argument("--print-config", action="store_true",
                   help="print the full demo config with --config/--set/--quick applied, and exit")
    p.add_argument("--address", default=None, help="Ray address (default: RAY_ADDRESS, else embedded)")
    p.add_argument("--quick", action="store_true", help="smaller sizes (a couple of minutes)")
    p.add_argument("--no-cache", action="store_true", help="run every step even if cached")


def run(args) -> int:
    from raystack.config import deep_merge, load_config, parse_overrides

    from raystack.apps.demo.pipeline import DemoConfig, build

    overrides = dict(QUICK) if args.quick else {}
    overrides = deep_merge(overrides, parse_overrides(args.overrides))
    if args.out_dir:
        overrides["out_dir"] = args.out_dir
    cfg = load_config(DemoConfig, args.config, overrides)  # a bad config fails before Ray starts
    if args.print_config:
        from raystack.config_render import render_yaml
        print(render_yaml(cfg, ["raystack demo: every part in one workflow (apps/demo/pipeline.py: DemoConfig)"]),
              end="")
        return 0
    wf = build(cfg)
    ir = wf.build()

    from raystack.actors.workflow.runner import run_workflow
    from raystack.cluster import connect
    from raystack.workflow.cache import ArtifactStore

    t0 = time.time()
    info = connect(args.address, num_cpus=8, log_to_driver=False)
    where = "the embedded local cluster" if info.embedded else info.address
    print(f"raystack demo: workflow {ir.name!r}, {len(ir.main_steps())} steps, on {where}")
    if info.dashboard_url:
        print(f"  dashboard: {info.dashboard_url} (custom metrics: ray_raystack_*)")
    out = Path(cfg.out_dir)
    store = None if args.no_cache else ArtifactStore(str(out / "cache"))
    rep = run_workflow(ir, functions=wf.functions, store=store, progress=True)
    if rep.status != "succeeded":
        for step, err in rep.failed.items():
            print(f"step {step} failed: {err}")
        print(f"finished steps are kept in the cache ({out / 'cache'}); fix and rerun to resume")
        return 1
    outputs = {sid: rep.output(sid) for sid in rep.results}
    from raystack.apps.demo.summary import print_summary, write_report

    print_summary(outputs, rep, time.time() - t0)
    path = write_report(out / "report", outputs, rep, time.time() - t0)
    print(f"\nreport: {path}")
    from raystack.apps.commands.common import write_json

    write_json(args.json_path, {"status": rep.status, "seconds": round(time.time() - t0, 1), "steps": outputs})
    return 0
