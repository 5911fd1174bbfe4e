"""`raystack workflow run | plan | export | catalog`.

- ``run FILE``: FILE is a Python file defining ``workflow`` (a Workflow or WorkflowIR) or a
  ``build()`` function returning one, or an IR file (.yaml/.json, e.g. from ``plan -o``). An IR
  file names step functions as text: they resolve only from the catalog and the config's
  ``allow_modules``. ``--dry-run`` executes every step at tiny sizes in a scratch directory.
- ``plan "TEXT"``: plan a workflow from plain English; prints which words produced which step
  and the IR (YAML) for review, writes it with ``-o``, runs it with ``--run`` (after a
  confirmation unless ``--yes``) or ``--dry-run``.
- ``export --argo FILE``: the Argo Workflows manifest of a workflow file.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Callable

from raystack.apps.commands.common import (add_part_arguments, load_part_config, preflight_and_connect,
                                           print_config, write_json)


def add_arguments(p: argparse.ArgumentParser) -> None:
    # the shared options are accepted before the action and after it (`workflow run FILE --config CFG`)
    add_part_arguments(p, "workflow")
    sub = p.add_subparsers(dest="wf_command", metavar="ACTION")
    r = sub.add_parser("run", help="run a workflow file on Ray")
    r.add_argument("file", help="Python file (defines `workflow` or `build()`) or IR .yaml/.json")
    add_part_arguments(r, "workflow", suppress_defaults=True)
    r.add_argument("--store", default=None, help="artifact store directory or URI (same as --output-dir)")
    r.add_argument("--no-cache", action="store_true", help="execute every step, store nothing")
    r.add_argument("--dry-run", action="store_true", help="run every step at tiny sizes in a scratch directory")
    pl = sub.add_parser("plan", help="plan a workflow from a plain-English description")
    pl.add_argument("text", help="the description, in quotes")
    add_part_arguments(pl, "workflow", suppress_defaults=True)
    pl.add_argument("-o", "--out", default=None, help="write the IR YAML here (edit it, then `run` it)")
    pl.add_argument("--name", default="planned", help="workflow name (default: planned)")
    pl.add_argument("--run", action="store_true", help="run the plan after showing it")
    pl.add_argument("--dry-run", action="store_true", help="run the plan at tiny sizes in a scratch directory")
    pl.add_argument("--yes", action="store_true", help="do not ask before running")
    ex = sub.add_parser("export", help="export a workflow file for another engine")
    ex.add_argument("--argo", metavar="FILE", required=True, help="workflow file to export as Argo YAML")
    ex.add_argument("-o", "--out", default=None, help="output file (default: stdout)")
    ex.add_argument("--image", default=None, help="container image for the steps (default: the project's image)")
    sub.add_parser("catalog", help="list the ready-made catalog steps")


def load_workflow(path: str) -> tuple[Any, dict[str, Callable]]:
    """(WorkflowIR, functions) from a Python workflow file or an IR YAML/JSON file."""
    from raystack.workflow import Workflow, WorkflowError, WorkflowIR
    p = Path(path)
    if not p.exists():
        raise WorkflowError("", f"workflow file {path!r} does not exist")
    if p.suffix in (".yaml", ".yml", ".json"):
        try:
            return (WorkflowIR.from_yaml(p.read_text()) if p.suffix != ".json"
                    else WorkflowIR.from_json(p.read_text())), {}
        except (ValueError, TypeError) as e:
            if isinstance(e, WorkflowError):
                raise
            raise WorkflowError("", f"{path}: not a workflow IR file: {e}") from None
    if p.suffix != ".py":
        raise WorkflowError("", f"{path!r}: expected a .py, .yaml or .json workflow file")
    name = "raystack_user_wf_" + hashlib.sha256(str(p.resolve()).encode()).hexdigest()[:8]
    spec = importlib.util.spec_from_file_location(name, p)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    sys.path.insert(0, str(p.resolve().parent))
    spec.loader.exec_module(mod)
    obj = getattr(mod, "workflow", None)
    if obj is None and callable(getattr(mod, "build", None)):
        obj = mod.build()
    if isinstance(obj, Workflow):
        return obj.build(), obj.functions
    if isinstance(obj, WorkflowIR):
        return obj, dict(obj.functions)
    raise WorkflowError("", f"{path!r} defines neither `workflow` (Workflow/WorkflowIR) nor `build()`")


def _config(args):
    store = getattr(args, "store", None)
    return load_part_config("workflow", args, {"store": store} if store else None)


def _summary(rep) -> None:
    print(f"workflow {rep.name}: {rep.status} in {rep.seconds:.2f} s - executed {len(rep.executed)}, "
          f"cached {len(rep.cached)}, skipped {len(rep.skipped)}, failed {len(rep.failed)}")
    for sid, err in rep.failed.items():
        print(f"  FAILED {sid}: {err}")


def _validate(ir, functions, cfg) -> None:
    """Names, parameters and part configs checked before anything starts."""
    from raystack.workflow.api import validate
    validate(ir, functions, allow=cfg.allow_modules)


def _run_ir(ir, functions, cfg, no_cache=False, address=None, json_path=None) -> int:
    from raystack.actors.workflow.runner import run_workflow
    _validate(ir, functions, cfg)
    info = preflight_and_connect(cfg, address or cfg.address)
    where = "the embedded local cluster" if info.embedded else info.address
    print(f"running workflow {ir.name!r} ({len(ir.steps)} steps) on {where}")
    if info.dashboard_url:
        print(f"  dashboard (tasks named {ir.name}:<step>): {info.dashboard_url}")
    store = None
    if cfg.cache and not no_cache:
        store = cfg.open_store()
        print(f"  artifact store: {store.uri}")
    ctx = cfg.context(ir.name)
    print(f"  run {ctx.run_id}: scratch {ctx.scratch_dir}, outputs under {ctx.out_dir}")
    rep = run_workflow(ir, functions=functions, store=store, progress=cfg.progress,
                       split_budget=cfg.split_budget, max_runners=cfg.max_runners,
                       eviction=cfg.eviction, allow=cfg.allow_modules, context=ctx)
    _summary(rep)
    write_json(json_path, {"name": rep.name, "status": rep.status, "seconds": rep.seconds,
                           "executed": list(rep.executed), "cached": list(rep.cached),
                           "skipped": list(rep.skipped), "failed": {k: str(v) for k, v in rep.failed.items()},
                           "store": store.uri if store is not None else None})
    return 0 if rep.status == "succeeded" else 1


def _dry_run(ir, functions, cfg, address=None) -> int:
    from raystack.workflow.dryrun import dry_run
    _validate(ir, functions, cfg)
    if any(s.fn.startswith(("raystack.actors.", "raystack.apps.")) for s in ir.steps):
        from raystack.cluster import connect
        connect(address or cfg.address)
    rep = dry_run(ir, functions=functions, allow=cfg.allow_modules)
    print(f"dry run (tiny sizes, in {rep.context.scratch_dir if rep.context else '?'}):")
    _summary(rep)
    return 0 if rep.status == "succeeded" else 1


def run(args) -> int:
    cmd = getattr(args, "wf_command", None)
    if args.print_config:
        return print_config("workflow", _config(args))
    if cmd is None:
        print("usage: raystack workflow {run,plan,export,catalog} ... (see --help)", file=sys.stderr)
        return 2
    from raystack.workflow import WorkflowError
    try:
        cfg = _config(args)
        if cmd == "run":
            ir, fns = load_workflow(args.file)
            if args.dry_run:
                return _dry_run(ir, fns, cfg, args.address)
            return _run_ir(ir, fns, cfg, args.no_cache, args.address, args.json_path)
        if cmd == "plan":
            return _plan(args, cfg)
        if cmd == "export":
            from raystack.workflow.export_argo import DEFAULT_IMAGE, to_argo_yaml
            ir, fns = load_workflow(args.argo)
            _validate(ir, fns, cfg)
            text = to_argo_yaml(ir, image=args.image or DEFAULT_IMAGE)
            if args.out:
                Path(args.out).write_text(text)
                print(f"wrote Argo workflow {args.out}")
            else:
                print(text, end="")
            return 0
        if cmd == "catalog":
            from raystack.workflow.catalog import describe
            for row in describe():
                flag = "  (side effect: never cached)" if row["side_effect"] else ""
                print(f"{row['name']:18s} {row['description']}{flag}")
                for n, p in row["params"].items():
                    print(f"    {n}: {p}")
            return 0
    except WorkflowError as e:  # a ConfigError goes to the CLI's one-line handler (the job scripts' prog too)
        print(f"raystack workflow {cmd}: error: {e}", file=sys.stderr)
        return 2
    return 2


def _plan(args, cfg) -> int:
    from raystack.workflow.nl import PlanRefused
    from raystack.workflow.nl.llm import EndpointError, LLMPlanner
    from raystack.workflow.nl.rules import RulePlanner
    planner: Any = RulePlanner()
    if cfg.llm.url:
        planner = LLMPlanner(cfg.llm.url, cfg.llm.model, os.environ.get(cfg.llm.api_key_env, ""),
                             assist=cfg.llm.assist, timeout_s=cfg.llm.timeout_s,
                             max_repairs=cfg.llm.max_repairs)
    try:
        plan = planner.plan(args.text, name=args.name)
    except PlanRefused as e:
        print(f"cannot plan this request ({e.kind}):", file=sys.stderr)
        for r in e.reasons:
            print(f"  - {r}", file=sys.stderr)
        return 2
    except EndpointError as e:
        print(f"raystack workflow plan: error: {e}", file=sys.stderr)
        return 2
    text = plan.ir.to_yaml()
    print("# which words produced which step" + (" (a model filled what the rules could not)"
                                                  if plan.assisted else "") + ":")
    print("\n".join("#" + line for line in plan.render().splitlines()))
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)
        print(f"# wrote {args.out}: edit it, then `raystack workflow run {args.out}`")
    if args.dry_run:
        return _dry_run(plan.ir, {}, cfg)
    if not args.run:
        return 0
    if not args.yes:
        if not sys.stdin.isatty() or input("run this workflow? [y/N] ").strip().lower() != "y":
            print("not run")
            return 0
    return _run_ir(plan.ir, {}, cfg, address=args.address, json_path=args.json_path)
