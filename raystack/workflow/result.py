"""A workflow run as the runtime's one :class:`~raystack.runtime.result.Result` (part
"workflow"), the same record EDiT, mLoRA and elastic runs return.

- ``metrics``: counts of executed, cached, skipped and failed steps, the step count and the
  run's seconds (``succeeded`` 1.0 or 0.0);
- ``history``: one row per step (id, function, status, seconds, cache key, loop iterations,
  exit kind, error);
- ``artifacts``: the store, the run's scratch and output directories, and each step output
  that is a file (typed artifacts, paths returned by side-effect steps);
- ``config``: the workflow config the run used, with the workflow's name and run id.
"""

from __future__ import annotations

import os
from typing import Any

from raystack.runtime.result import Result, history_table
from raystack.workflow.artifacts import find_artifacts
from raystack.workflow.engine import RunReport
from raystack.workflow.ir import WorkflowIR

PART = "workflow"


def _files(value: Any) -> list[str]:
    paths = [a.path for a in find_artifacts(value)]
    if isinstance(value, str) and os.path.exists(value):
        paths.append(value)
    return paths


def step_rows(rep: RunReport, ir: WorkflowIR) -> list[dict[str, Any]]:
    """One row per step of ``ir``: what happened to it in the run."""
    rows = []
    for s in ir.steps:
        r = rep.exits.get(s.id) or rep.results.get(s.id)
        status = "failed" if s.id in rep.failed else (r.status if r is not None else "not run")
        rows.append({"step": s.id, "fn": s.fn, "status": status,
                     "seconds": float(r.seconds) if r is not None else 0.0,
                     "key": r.key if r is not None else None,
                     "iterations": int(r.iterations) if r is not None else 0,
                     "exit": s.exit, "error": rep.failed.get(s.id)})
    return rows


def workflow_result(rep: RunReport, ir: WorkflowIR, config: dict[str, Any]) -> Result:
    """The Result of a finished run (``config``: the workflow config as a plain dict)."""
    metrics = {"executed": float(len(rep.executed)), "cached": float(len(rep.cached)),
               "skipped": float(len(rep.skipped)), "failed": float(len(rep.failed)),
               "steps": float(len(ir.steps)), "seconds": float(rep.seconds),
               "succeeded": 1.0 if rep.status == "succeeded" else 0.0}
    artifacts: dict[str, str] = {}
    if rep.store is not None:
        artifacts["store"] = rep.store.uri
    if rep.context is not None:
        artifacts["scratch"] = str(rep.context.scratch_dir)
        artifacts["out_dir"] = str(rep.context.out_dir)
    for sid in [*rep.results, *rep.exits]:
        r = rep.exits.get(sid) or rep.results[sid]
        if r.status == "skipped":
            continue
        try:
            value = rep.output(sid)
        except Exception:  # noqa: BLE001 - an output the store no longer holds lists no file
            continue
        for i, path in enumerate(_files(value)):
            artifacts[sid if i == 0 else f"{sid}.{i}"] = path
    cfg = {**config, "workflow": ir.name, "run_id": rep.context.run_id if rep.context else None}
    return Result(PART, metrics, history_table(step_rows(rep, ir)), None, artifacts, cfg)
