"""`ray job submit -- python -m raystack.apps.jobs.elastic --config dlrm.yaml`: the elastic DLRM job.

Connects to the cluster the job runs on (RAY_ADDRESS is set by Ray Jobs) and runs the same
code as `raystack elastic`."""
from __future__ import annotations

import argparse
import sys

from raystack.apps.commands import elastic


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="raystack.apps.jobs.elastic", description=__doc__)
    elastic.add_arguments(p)
    args = p.parse_args(argv)
    args.sim_nodes = 0 if args.address is None and "--sim-nodes" not in (argv or sys.argv) else args.sim_nodes
    return elastic.run(args)


if __name__ == "__main__":
    sys.exit(main())
