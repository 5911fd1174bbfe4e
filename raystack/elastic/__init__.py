"""Elastic DLRM (DLRover): pure parts — resource-performance model, three-stage planner,
scale plans, straggler detector, exactly-once shard ledger, flash checkpoint, controller loop,
DLRM pieces and the job-trace simulator. No Ray imports here."""
