"""`ray job submit -- python -m raystack.apps.jobs.mlora --config mlora.yaml`: the mLoRA command as a Ray job.

Connects to the cluster the job runs on (RAY_ADDRESS is set by Ray Jobs), then runs exactly
what `raystack mlora` runs.
"""

from __future__ import annotations

import argparse
import sys

from raystack.apps.commands import mlora


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="raystack.apps.jobs.mlora", description=__doc__)
    mlora.add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return mlora.run(args)
    except ValueError as exc:  # ConfigError included: name the bad field, no traceback
        print(f"mlora job: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
