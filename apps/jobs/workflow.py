"""`ray job submit -- python -m raystack.apps.jobs.workflow --config CFG run FILE` (or plan/export).

Connects to the cluster of the job (RAY_ADDRESS) and runs the same code as the command.
"""
from __future__ import annotations

import argparse
import sys

from raystack.apps.commands import workflow as command


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="raystack.apps.jobs.workflow", description=__doc__)
    command.add_arguments(parser)
    args = parser.parse_args(argv)
    from raystack.cluster import connect
    connect()
    return command.run(args)


if __name__ == "__main__":
    sys.exit(main())
