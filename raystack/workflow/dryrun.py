"""Dry runs: execute every step of a workflow at tiny sizes, in a scratch directory, to show
that a plan runs (not only that it validates) before it touches real data.

The IR is copied with every literal path moved into the dry run's own directory; files the
plan reads are stood in for by small ones of the same kind (a table with the columns the plan
names for joins, groupings and plots; a tiny model checkpoint saved with ``save_pretrained``;
generated Criteo-like Parquet for DLRM data); part steps shrink to tiny sizes
(``RunContext.tiny``). Nothing outside the dry run's directory is read or written.
"""

from __future__ import annotations

import contextlib
import copy
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from raystack.workflow.catalog import entry_for
from raystack.workflow.context import new_context
from raystack.workflow.engine import RunReport, Tuner, run_local
from raystack.workflow.ir import WorkflowIR, is_ref

STAND_IN_ROWS = 1000
_PATH_PARAMS = {"path", "directory", "base", "model"}


def _inside(workdir: Path, p: str) -> str:
    """A path from the plan, re-rooted inside the dry run's directory."""
    q = Path(p.replace("~", "home"))
    return str(workdir / ("_root" + str(q)) if q.is_absolute() else workdir / q)


def _columns_named(ir: WorkflowIR) -> dict[str, str]:
    """Columns the plan names (join keys, group-by, plotted columns, columns whose missing
    values are dropped or that are normalized) -> their role."""
    out = {}
    for s in ir.steps:
        e = entry_for(s.fn)
        name = e.name if e else ""
        if name == "join" and isinstance(s.params.get("on"), str):
            out[s.params["on"]] = "key"
        if name == "aggregate":
            by = s.params.get("by")
            for key in [by] if isinstance(by, str) else by if isinstance(by, list) else []:
                out[key] = "group"
        if name == "plot" and isinstance(s.params.get("column"), str):
            out[s.params["column"]] = "value"
        if name in ("clean_data", "normalize") and isinstance(s.params.get("columns"), list):
            out.update({c: "value" for c in s.params["columns"] if isinstance(c, str)})
        if name == "train_model" and isinstance(s.params.get("target"), str):
            out[s.params["target"]] = "target"
    return out


def stand_in_table(columns: dict[str, str], seed: int = 0, rows: int = STAND_IN_ROWS) -> pa.Table:
    """A small table: features f0..f3, a binary target (``y``, or the target column the plan
    names), a few duplicate rows, plus the other columns the plan names."""
    rng = np.random.default_rng(seed)
    n = rows
    x = rng.normal(size=(n, 4))
    y = (x @ np.array([1.0, -0.5, 0.3, 0.8]) > 0).astype(np.int64)
    cols: dict[str, Any] = {f"f{i}": x[:, i] for i in range(4)}
    for c, role in columns.items():
        if role == "key":
            cols[c] = np.arange(n) % 40
        elif role == "group":
            cols[c] = np.array(["a", "b", "c"])[np.arange(n) % 3]
        elif role != "target":
            cols[c] = rng.normal(size=n)
    cols[next((c for c, role in columns.items() if role == "target"), "y")] = y
    t = pa.table(cols)
    return pa.concat_tables([t, t.slice(0, 5)])


def _write_table(path: str, t: pa.Table) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    low = path.lower()
    if low.endswith(".csv"):
        pacsv.write_csv(t, path)
    elif low.endswith(".tsv"):
        pacsv.write_csv(t, path, pacsv.WriteOptions(delimiter="\t"))
    elif low.endswith((".json", ".jsonl")):
        import json
        with open(path, "w") as f:
            for row in t.to_pylist():
                f.write(json.dumps({k: (None if isinstance(v, float) and v != v else v)
                                    for k, v in row.items()}) + "\n")
    else:
        if not low.endswith((".parquet", ".pq")):
            os.makedirs(path, exist_ok=True)
            path = os.path.join(path, "part-0.parquet")
        pq.write_table(t, path)


def _checkpoint(path: str) -> None:
    from raystack.models import build_model
    if os.path.isfile(os.path.join(path, "config.json")):
        return
    build_model("tiny-1m", seed=0).save_pretrained(path)


def prepare(ir: WorkflowIR, workdir: Path) -> WorkflowIR:
    """The IR with literal paths moved into ``workdir`` and the files it reads stood in for."""
    ir = copy.deepcopy(ir)
    cols = _columns_named(ir)
    asked = [s.params.get("rows") for s in ir.steps
             if (e := entry_for(s.fn)) is not None and e.name == "sample"]
    rows = max([STAND_IN_ROWS] + [2 * int(r) for r in asked if isinstance(r, int)])
    for s in ir.steps:
        e = entry_for(s.fn)
        name = e.name if e else ""
        for k, v in list(s.params.items()):
            if is_ref(v):
                continue
            if k in _PATH_PARAMS and isinstance(v, str) and ("/" in v or "." in v):
                if name == "edit_pretrain" and k == "model" and os.sep not in v and not v.startswith("."):
                    continue  # a built-in model name such as tiny-1m
                s.params[k] = _inside(workdir, v)
            elif name == "load_data" and k == "path" and isinstance(v, list):
                s.params[k] = [_inside(workdir, x) for x in v]
        if name == "load_data":
            paths = s.params.get("path")
            for p in ([paths] if isinstance(paths, str) else paths or []):
                if not os.path.exists(p):
                    _write_table(p, stand_in_table(cols, seed=len(p), rows=rows))
        if name == "load_checkpoint" or (name == "mlora_finetune" and isinstance(s.params.get("base"), str)
                                         and s.params["base"].startswith(str(workdir))):
            _checkpoint(s.params.get("path") or s.params["base"])
        if name == "load_adapters":
            from raystack.workflow.adapter_sets import stand_in_adapter_set
            stand_in_adapter_set(s.params["path"])
        if name == "elastic_dlrm" and isinstance((s.params.get("data") or {}).get("path"), str):
            d = dict(s.params["data"])
            d["path"] = _inside(workdir, d["path"])
            s.params["data"] = d
            if not os.path.exists(d["path"]):
                from raystack.data.criteo import generate
                generate(Path(d["path"]), 2000, 2, 100, 1.1, 0)
    return ir


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def dry_run(ir: WorkflowIR, workdir: str | None = None, *,
            functions: dict[str, Callable] | None = None, allow: Sequence[str] = (),
            tuner: Tuner | None = None) -> RunReport:
    """Run every step of ``ir`` at tiny sizes inside ``workdir`` (a new temporary directory
    when None); returns the run's report (its ``status`` says whether the plan ran)."""
    wd = Path(workdir or tempfile.mkdtemp(prefix=f"raystack-dry-{ir.name[:20]}-")).resolve()
    wd.mkdir(parents=True, exist_ok=True)
    with _cwd(wd):
        moved = prepare(ir, wd)
        moved.functions = ir.functions
        ctx = new_context(ir.name, scratch_root=str(wd / "scratch"), out_dir=str(wd / "out"),
                          tiny=True)
        return run_local(moved, functions, allow=allow, context=ctx, tuner=tuner)
