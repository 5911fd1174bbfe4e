"""`raystack`: one command, a subcommand per part.

Each part lives in `apps/commands/<name>.py` with `add_arguments(parser)` and `run(args) -> int`;
a part that is not built yet says so instead of failing obscurely.
"""
from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = {
    "demo": "the main job: every part in one workflow on the embedded local cluster",
    "up": "start a local Ray head (token auth) for `ray job submit` and the dashboard",
    "down": "stop the head that `raystack up` started, by its process ids",
    "status": "show the cluster raystack would connect to",
    "edit": "EDiT / A-EDiT local-SGD LLM pretraining",
    "mlora": "mLoRA: many LoRA adapters fine-tuned at once, pipelined",
    "elastic": "elastic DLRM training (DLRover)",
    "workflow": "workflows (Couler): run, plan from plain English, export",
}
_HEAD_COMMANDS = {"up", "down", "status"}


def _load(name: str):
    module = "raystack.apps.commands.head" if name in _HEAD_COMMANDS else f"raystack.apps.commands.{name}"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="raystack", description="Train large models on cheap, mixed and "
                                     "unreliable clusters, on Ray.")
    parser.add_argument("--log-level", default=None, metavar="LEVEL",
                        help="DEBUG, INFO, WARNING (default, or $RAYSTACK_LOG_LEVEL), ERROR")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        mod = _load(name)
        if mod is not None:
            adder = getattr(mod, f"add_{name}_arguments", None) or mod.add_arguments
            adder(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from raystack.log import configure_logging
    try:
        configure_logging(args.log_level)
    except ValueError as exc:
        parser.error(f"--log-level: {exc}")
    if args.command is None:
        parser.print_help()
        return 2
    mod = _load(args.command)
    if mod is None:
        print(f"raystack {args.command}: this part is not built yet.", file=sys.stderr)
        return 3
    runner = getattr(mod, f"run_{args.command}", None) or mod.run
    try:
        return int(runner(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from raystack.config import ConfigError
        from raystack.cluster import ClusterUnreachableError
        if isinstance(exc, (ConfigError, ClusterUnreachableError)):
            print(f"raystack {args.command}: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
