"""`ray job submit -- python -m raystack.apps.jobs.elastic --config dlrm.yaml`: the elastic DLRM job.

Same arguments and error handling as `raystack elastic` (a bad config: one line, exit 2); the
job connects to the cluster it runs on (Ray Jobs sets RAY_ADDRESS), so it simulates no nodes
unless `--sim-nodes` is given."""
from __future__ import annotations

import sys

from raystack.apps.cli import run_job


def main(argv: list[str] | None = None) -> int:
    return run_job("elastic", argv, sim_nodes=0)


if __name__ == "__main__":
    sys.exit(main())
