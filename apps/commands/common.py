"""The argument shape every part's command shares, and the steps every part runs first.

``raystack <part> --config FILE --set a.b=V ... --output-dir DIR --json PATH --print-config``:
the config is loaded (YAML numbers such as ``2e-4`` read as numbers), the overrides and the
output directory merged in, every bad field named at once; then `preflight_and_connect`
checks the job (files, sizes, the cluster's resources) before an embedded cluster is started,
and only then connects.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from raystack.config import deep_merge, load_config, parse_overrides
from raystack.parts import PARTS, output_override, render_part_yaml

log = logging.getLogger(__name__)


def add_part_arguments(p: argparse.ArgumentParser, part: str, *, suppress_defaults: bool = False,
                       address: bool = True) -> None:
    """``--config``, ``--set`` (repeatable), ``--output-dir``, ``--json``, ``--print-config``
    (and ``--address``). With ``suppress_defaults`` (a sub-command's copy of options its parent
    also has) an option left out keeps the parent's value."""
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress_defaults else value

    field = PARTS[part].output_field
    p.add_argument("--config", default=default(None), metavar="FILE",
                   help=f"YAML config (every field and its default: configs/{part}.yaml)")
    p.add_argument("--set", dest="overrides", action="append", default=default([]), metavar="FIELD=VALUE",
                   help="override a config field, e.g. --set a.b=3 (repeatable; VALUE is YAML)")
    p.add_argument("--output-dir", default=default(None), metavar="DIR", help=f"where outputs go (sets {field})")
    p.add_argument("--json", dest="json_path", default=default(None), metavar="PATH",
                   help="write the run's result as JSON to PATH ('-': standard output)")
    p.add_argument("--print-config", action="store_true", default=default(False),
                   help="print the full config (defaults, --config and --set applied) with comments, and exit")
    if address:
        p.add_argument("--address", default=default(None),
                       help="Ray address (default: RAY_ADDRESS, else an embedded local cluster)")


def part_overrides(part: str, args: argparse.Namespace, extra: dict | None = None) -> dict:
    """The nested overrides of ``--set``, ``--output-dir`` and any command-specific ``extra``."""
    out = parse_overrides(getattr(args, "overrides", None) or [])
    if extra:
        out = deep_merge(out, extra)
    if getattr(args, "output_dir", None):
        out = deep_merge(out, output_override(part, args.output_dir))
    return out


def load_part_config(part: str, args: argparse.Namespace, extra: dict | None = None) -> Any:
    """The part's config from ``--config``, ``--set`` and ``--output-dir``; every bad field is
    named at once (`ConfigError`), before anything starts."""
    return load_config(PARTS[part].config_class(), getattr(args, "config", None), part_overrides(part, args, extra))


def print_config(part: str, cfg: Any) -> int:
    """``--print-config``: the commented YAML of ``cfg`` (what ``configs/<part>.yaml`` holds for
    the defaults)."""
    sys.stdout.write(render_part_yaml(part, cfg))
    return 0


def preflight_and_connect(cfg: Any, address: str | None, **embedded: Any):
    """Preflight the job against the cluster it will run on, then connect. With no address an
    embedded cluster (started with ``embedded`` arguments: num_cpus, resources...) is judged from
    this machine before it starts, so a refused job starts nothing. Returns ClusterInfo."""
    from raystack.cluster import connect, planned_resources
    from raystack.preflight import preflight

    resources = planned_resources(address, num_cpus=embedded.get("num_cpus"),
                                  resources=embedded.get("resources"))
    report = preflight(cfg, resources)
    log.info("preflight passed: %s", report.summary())
    return connect(address, **embedded)


def write_json(path: str | None, result: Any) -> None:
    """``--json PATH``: the run's result as JSON ('-': standard output); written whole or not at all."""
    if not path:
        return
    text = json.dumps(result, indent=2, default=_jsonable)
    if path == "-":
        print(text)
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text + "\n")
    tmp.replace(target)


def _jsonable(value: Any) -> Any:
    import dataclasses

    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy / torch scalars
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)
