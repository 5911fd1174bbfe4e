"""`ray job submit -- python -m raystack.apps.jobs.edit --config edit.yaml`: EDiT as a Ray job."""
from __future__ import annotations

import argparse
import sys

from raystack.apps.commands.edit import add_arguments, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="raystack.apps.jobs.edit", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
