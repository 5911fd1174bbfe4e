"""Elastic DLRM (DLRover): pure parts — resource-performance model, three-stage planner,
scale plans, straggler detector, exactly-once shard ledger, flash checkpoint, controller loop,
DLRM pieces and the job-trace simulator. No Ray imports here; :func:`train` runs the job on
Ray through the runtime's part registry (``raystack.actors.elastic``)."""
from __future__ import annotations


def train(cfg=None, *, wait: bool = True, progress: bool = True, callbacks=(), address: str | None = None,
             preflight: bool = True):
    """Train a DLRM on a resource budget: ``cfg`` is an
    :class:`~raystack.elastic.config.ElasticConfig`, a dict or a YAML path, validated first.
    Returns the run's :class:`~raystack.runtime.result.Result` (metrics: auc, lost,
    duplicated, ...; history: one row per poll); with ``wait=False`` a
    :class:`~raystack.runtime.run.Run` whose exit also removes the job's detached actors and
    placement groups."""
    from raystack.runtime.run import run_part
    return run_part("elastic", cfg, wait=wait, progress=progress, callbacks=callbacks, address=address,
                    preflight=preflight)
