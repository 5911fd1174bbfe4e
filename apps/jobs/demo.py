"""`ray job submit -- python -m raystack.apps.jobs.demo ...`: `raystack demo` as a Ray job.

Same arguments and error handling as the command (a bad config: one line, exit 2); the job
connects to the cluster it runs on (Ray Jobs sets RAY_ADDRESS)."""
from __future__ import annotations

import sys

from raystack.apps.cli import run_job


def main(argv: list[str] | None = None) -> int:
    return run_job("demo", argv)


if __name__ == "__main__":
    sys.exit(main())
