"""`ray job submit -- python -m raystack.apps.jobs.workflow run FILE --config CFG` (or plan/export).

Same arguments and error handling as `raystack workflow` (a bad config or file: one line, exit
2); `run` connects to the cluster of the job (Ray Jobs sets RAY_ADDRESS)."""
from __future__ import annotations

import sys

from raystack.apps.cli import run_job


def main(argv: list[str] | None = None) -> int:
    return run_job("workflow", argv)


if __name__ == "__main__":
    sys.exit(main())
