"""`raystack`: one command, a subcommand per part.

Each part lives in `apps/commands/<name>.py` with `add_arguments(parser)` and `run(args) -> int`;
a part that is not built yet says so instead of failing obscurely. The `ray job submit` scripts
(`apps/jobs/*`) run the same parsers through `run_job`, so both report a bad config, a bad
file or an infeasible job the same way: one line on stderr naming the field or file, exit 2.
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
EXIT_USER_ERROR = 2     # bad config, file, address or infeasible job: nothing was started
EXIT_INTERRUPTED = 130


def _load(name: str):
    module = "raystack.apps.commands.head" if name in _HEAD_COMMANDS else f"raystack.apps.commands.{name}"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise


def version_text() -> str:
    """``raystack X (ray Y, torch Z, Python V)`` from the installed distributions."""
    from importlib import metadata

    import raystack

    def dist(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    py = ".".join(map(str, sys.version_info[:3]))
    return f"raystack {raystack.__version__} (ray {dist('ray')}, torch {dist('torch')}, Python {py})"


def _add_command_arguments(p: argparse.ArgumentParser, name: str) -> None:
    mod = _load(name)
    if mod is not None:
        adder = getattr(mod, f"add_{name}_arguments", None) or mod.add_arguments
        adder(p)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="raystack", description="Train large models on cheap, mixed and "
                                     "unreliable clusters, on Ray.")
    parser.add_argument("--log-level", default=None, metavar="LEVEL",
                        help="DEBUG, INFO, WARNING (default, or $RAYSTACK_LOG_LEVEL), ERROR")
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        _add_command_arguments(p, name)
    return parser


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean the user's input cannot run (reported in one line, exit 2)."""
    from raystack.cluster import ClusterUnreachableError, HeadError
    from raystack.config import ConfigError
    from raystack.workflow import WorkflowError

    return (ConfigError, ClusterUnreachableError, HeadError, WorkflowError)


def execute(name: str, args: argparse.Namespace, prog: str | None = None) -> int:
    """Run one command; a user error becomes one line on stderr and exit code 2."""
    prog = prog or f"raystack {name}"
    mod = _load(name)
    if mod is None:
        print(f"{prog}: this part is not built yet.", file=sys.stderr)
        return 3
    runner = getattr(mod, f"run_{name}", None) or mod.run
    try:
        return int(runner(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if isinstance(exc, user_errors()):
            print(f"{prog}: error: {' '.join(str(exc).split())}", file=sys.stderr)
            return EXIT_USER_ERROR
        raise


def run_job(name: str, argv: list[str] | None = None, **defaults) -> int:
    """``python -m raystack.apps.jobs.<name> ...``: the command's own arguments and error
    handling; ``defaults`` change argument defaults for jobs (an explicit flag still wins)."""
    parser = argparse.ArgumentParser(prog=f"python -m raystack.apps.jobs.{name}",
                                     description=SUBCOMMANDS.get(name))
    _add_command_arguments(parser, name)
    if defaults:
        parser.set_defaults(**defaults)
    args = parser.parse_args(argv)
    return execute(name, args, prog=f"raystack.apps.jobs.{name}")


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
        return EXIT_USER_ERROR
    return execute(args.command, args)


if __name__ == "__main__":
    sys.exit(main())
