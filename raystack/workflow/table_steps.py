"""Catalog steps over tables (pyarrow Tables): make, load, clean, impute, dedup, normalize,
sample, split, join, stack (concat), aggregate, summarise, write and plot.

Steps that write files for people (write_table, plot) are side effects: they run every time
(the cache never stands in for a file someone may have moved or deleted) and write under the
run's output directory unless given an absolute path.
"""

from __future__ import annotations

import json
import os
from typing import Literal, Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from raystack.workflow.api import step
from raystack.workflow.artifacts import REPORT_FILE, TABLE_FILE, Artifact, make_artifact
from raystack.workflow.context import RunContext


def is_numeric(col_type: pa.DataType) -> bool:
    """Whether a column of this type holds numbers (integers or floats): the columns the table
    steps compute on and models train on."""
    return pa.types.is_integer(col_type) or pa.types.is_floating(col_type)


TARGET = "y"
TABLE_SUFFIXES = (".csv", ".parquet", ".pq", ".json", ".jsonl", ".tsv")


def _out_path(path: str, run_context: Optional[RunContext]) -> str:
    """Relative output paths go under the step's own output directory."""
    if os.path.isabs(path) or run_context is None:
        return path
    return os.path.join(run_context.step_dir(), path)


def make_dataset(rows: int = 400, features: int = 6,
                 task: Literal["classification", "regression"] = "classification",
                 noise: float = 0.5, seed: int = 0) -> pa.Table:
    """Generate a synthetic table with feature columns f0..fN and a target column 'y'."""
    if rows < 2 or features < 1:
        raise ValueError(f"make_dataset needs rows >= 2 and features >= 1, got {rows}, {features}")
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, features))
    w = rng.normal(size=features)
    z = x @ w + noise * rng.normal(size=rows)
    y = (z > 0).astype(np.int64) if task == "classification" else z
    cols = {f"f{i}": x[:, i] for i in range(features)}
    cols[TARGET] = y
    return pa.table(cols)


def load_data(path: str) -> pa.Table:
    """Load a CSV, TSV, Parquet, JSON or JSON-lines file into a table (in a CSV or TSV an empty
    cell is a missing value, whatever the column's type)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"data file {path!r} does not exist")
    ext = os.path.splitext(path)[1].lower()
    if ext in (".parquet", ".pq") or os.path.isdir(path):
        return pq.read_table(path)
    if ext in (".csv", ".tsv"):
        # an empty cell is a missing value in every column, text ones included (as pandas reads
        # it): "drop rows with missing values" drops a row whose city is blank
        return pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter="\t" if ext == ".tsv" else ","),
                              convert_options=pacsv.ConvertOptions(strings_can_be_null=True))
    if ext in (".json", ".jsonl"):
        return pajson.read_json(path)
    raise ValueError(f"data file {path!r}: expected one of {TABLE_SUFFIXES}")


def _named_columns(data: pa.Table, columns: Optional[Union[str, list[str]]], step: str) -> list[str]:
    """The columns a step is limited to (None: every column); a name the table lacks is an
    error naming the columns it has."""
    names = data.column_names if columns is None else [columns] if isinstance(columns, str) else list(columns)
    unknown = [n for n in names if n not in data.column_names]
    if unknown:
        raise ValueError(f"{step}: no column {unknown[0]!r}; columns are {data.column_names}")
    return names


def clean_data(data: pa.Table, drop_nulls: bool = True, columns: Optional[list[str]] = None) -> pa.Table:
    """Drop rows with missing values (nulls, and NaN in float columns). ``columns``: only rows
    missing a value in one of these columns are dropped (default: a value in any column)."""
    if not drop_nulls:
        return data
    keep = np.ones(data.num_rows, dtype=bool)
    for name in _named_columns(data, columns, "clean_data"):
        keep &= ~_missing_mask(data.column(name))
    return data if keep.all() else data.filter(pa.array(keep))


def impute(data: pa.Table, strategy: Literal["mean", "median", "zero"] = "mean",
           columns: Optional[list[str]] = None) -> pa.Table:
    """Fill missing numeric values with the column's mean, median or zero. ``columns``: only
    these columns' gaps are filled (default: every numeric column's); a named column that is
    not numeric is an error."""
    named = set(_named_columns(data, columns, "impute"))
    if columns is not None:
        text = [n for n in named if not is_numeric(data.column(n).type)]
        if text:
            raise ValueError(f"impute: column {text[0]!r} is not numeric; impute fills numbers only")
    cols = {}
    for name in data.column_names:
        col = data.column(name)
        if is_numeric(col.type) and name in named:
            a = col.to_numpy(zero_copy_only=False).astype(np.float64)
            known = a[~np.isnan(a)]
            fill = 0.0 if strategy == "zero" or known.size == 0 else (
                float(np.mean(known)) if strategy == "mean" else float(np.median(known)))
            cols[name] = np.where(np.isnan(a), fill, a)
        else:
            cols[name] = col
    return pa.table(cols)


def dedup(data: pa.Table) -> pa.Table:
    """Drop duplicate rows (the first of each kept, order preserved)."""
    keyed = data.append_column("__row", pa.array(np.arange(data.num_rows)))
    first = keyed.group_by(data.column_names, use_threads=False).aggregate([("__row", "min")])
    keep = np.sort(first.column("__row_min").to_numpy())
    return data.take(pa.array(keep))


def normalize(data: pa.Table, target: str = TARGET, columns: Optional[list[str]] = None,
              method: Literal["zscore", "minmax"] = "zscore") -> pa.Table:
    """Scale every numeric feature column (``columns``: only these): ``zscore`` to zero mean and
    unit variance, ``minmax`` onto [0, 1] (a constant column becomes 0)."""
    if method not in ("zscore", "minmax"):
        raise ValueError(f"normalize method must be 'zscore' or 'minmax', got {method!r}")
    chosen = set(_named_columns(data, columns, "normalize"))
    cols = {}
    for name in data.column_names:
        col = data.column(name)
        numeric = is_numeric(col.type)
        if name == target or not numeric or name not in chosen:
            cols[name] = col
            continue
        a = col.to_numpy(zero_copy_only=False).astype(np.float64)
        if method == "minmax":
            low, high = np.nanmin(a), np.nanmax(a)
            cols[name] = (a - low) / (high - low) if high > low else np.zeros_like(a)
        else:
            cols[name] = (a - np.nanmean(a)) / (np.nanstd(a) + 1e-12)
    return pa.table(cols)


def sample(data: pa.Table, fraction: Optional[float] = None, rows: Optional[int] = None,
           seed: int = 0, which: Literal["random", "first", "last"] = "random") -> pa.Table:
    """A subset of the rows: ``fraction`` of them, or ``rows`` of them; drawn at random (without
    replacement, kept in file order) or, with ``which`` "first" / "last", the first or last ones
    in file order (a table shorter than ``rows`` is kept whole, like a head)."""
    if (fraction is None) == (rows is None):
        raise ValueError("sample needs exactly one of fraction or rows")
    if fraction is not None and not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"sample fraction must be in (0, 1], got {fraction}")
    n = rows if rows is not None else int(round(data.num_rows * float(fraction)))
    if which != "random":
        if n < 1:
            raise ValueError(f"the {which} {n} rows of a table: give at least one")
        n = min(n, data.num_rows)
        return data.slice(0, n) if which == "first" else data.slice(data.num_rows - n, n)
    if not 0 < n <= data.num_rows:
        raise ValueError(f"sample of {n} rows from a table of {data.num_rows}")
    idx = np.sort(np.random.default_rng(seed).choice(data.num_rows, size=n, replace=False))
    return data.take(pa.array(idx))


def split_data(data: pa.Table, test_fraction: float = 0.2, seed: int = 0) -> dict[str, pa.Table]:
    """Shuffle and split a table into {'train', 'test'}."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    idx = np.random.default_rng(seed).permutation(data.num_rows)
    n_test = max(1, int(round(data.num_rows * test_fraction)))
    return {"train": data.take(pa.array(idx[n_test:])), "test": data.take(pa.array(idx[:n_test]))}


def join(left: pa.Table, right: pa.Table, on: Optional[str] = None,
         how: Literal["inner", "left outer", "right outer", "full outer"] = "inner") -> pa.Table:
    """Join two tables on a column (default: the one column name they share)."""
    if on is None:
        shared = sorted(set(left.column_names) & set(right.column_names))
        if len(shared) != 1:
            raise ValueError(f"join: name the key column (the tables share {shared})")
        on = shared[0]
    for t, side in ((left, "left"), (right, "right")):
        if on not in t.column_names:
            raise ValueError(f"join: the {side} table has no column {on!r}")
    return left.join(right, keys=on, join_type=how, right_suffix="_right")


def concat(first: pa.Table, second: pa.Table) -> pa.Table:
    """Stack two tables with the same columns: every row of ``first``, then every row of
    ``second`` ("append feb.csv to jan.csv"). Columns are matched by name, in ``first``'s order;
    an integer column stacked on a float one becomes float. Tables whose columns differ are an
    error naming the columns each lacks (a join pairs rows on a key instead)."""
    only_first = [c for c in first.column_names if c not in second.column_names]
    only_second = [c for c in second.column_names if c not in first.column_names]
    if only_first or only_second:
        raise ValueError(f"concat: the tables' columns differ (only in the first: {only_first}; only in the "
                         f"second: {only_second}); stacking needs the same columns, a join pairs rows on a key")
    second = second.select(first.column_names)
    return pa.concat_tables([first, second], promote_options="permissive")


def aggregate(data: pa.Table, by: Optional[Union[str, list[str]]] = None,
              agg: Literal["sum", "mean", "median", "count", "min", "max"] = "sum") -> pa.Table:
    """Group by column ``by`` (a list: by each of them, "by store and month"; none: the first
    text column) and aggregate every numeric column but identifiers (``id``, ``*_id``: a sum of
    order ids is no figure, and a chart of the totals would draw it first), unless identifiers
    are all there is; the columns keep their names (the table of per-city totals still has its
    target ``y``, so a model can be trained on it). Nulls are skipped (a group of nulls only
    gives null); ``median`` is exact: the middle value, or the mean of the two middle ones."""
    if by is None:
        text = [n for n in data.column_names if pa.types.is_string(data.column(n).type)]
        by = text[0] if text else data.column_names[0]
    keys = [by] if isinstance(by, str) else list(by)
    if not keys:
        raise ValueError("aggregate: 'by' names no column")
    _named_columns(data, keys, "aggregate")
    numeric = [n for n in data.column_names if n not in keys and is_numeric(data.column(n).type)]
    numeric = [n for n in numeric if not _identifier(n)] or numeric
    if agg == "median":
        return _group_medians(data, keys, numeric)
    out = data.group_by(keys, use_threads=False).aggregate([(n, agg) for n in numeric])
    return out.rename_columns([c[:-len(agg) - 1] if c.endswith(f"_{agg}") and c[:-len(agg) - 1] in numeric else c
                               for c in out.column_names])


def _group_medians(data: pa.Table, keys: list[str], numeric: list[str]) -> pa.Table:
    """Each group's exact median of each numeric column (pyarrow's hash aggregates have only an
    approximate one): the group's values as lists, one median per list."""
    lists = data.group_by(keys, use_threads=False).aggregate([(n, "list") for n in numeric])
    out = {k: lists.column(k) for k in keys}
    for n in numeric:
        medians = []
        for values in lists.column(f"{n}_list").to_pylist():
            present = [v for v in values if v is not None]
            medians.append(float(np.median(present)) if present else None)
        out[n] = pa.array(medians, type=pa.float64())
    return pa.table(out)


def _identifier(name: str) -> bool:
    """A column that names rows rather than measures them: ``id``, ``order_id``, ``Customer ID``."""
    low = name.lower()
    return low == "id" or low.endswith(("_id", " id", "-id"))


def _missing_mask(col: pa.ChunkedArray) -> np.ndarray:
    """Per row, whether the value is missing: a null, or NaN in a float column."""
    mask = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_floating(col.type):
        mask |= np.isnan(col.fill_null(0.0).to_numpy(zero_copy_only=False))
    return mask


def _missing(col: pa.ChunkedArray) -> int:
    """Nulls, and NaN in a float column."""
    return int(_missing_mask(col).sum())


def _as_table(data: pa.Table | dict | list) -> pa.Table:
    """A table; a metrics dict (an evaluation, summary statistics) or a list of them as rows
    of their scalar values."""
    if isinstance(data, pa.Table):
        return data
    rows = data if isinstance(data, list) else [data]
    plain = [{k: v for k, v in r.items() if isinstance(v, (int, float, str, bool)) and not isinstance(v, bool)}
             for r in rows if isinstance(r, dict)]
    if not plain:
        raise ValueError(f"write_table: expected a table or metrics, got {type(data).__name__}")
    keys = list(dict.fromkeys(k for r in plain for k in r))
    return pa.table({k: [r.get(k) for r in plain] for k in keys})


def stats(data: pa.Table) -> dict:
    """Summary statistics per numeric column (count, nulls, mean, std, min, median, max), the row
    count and the fraction of missing cells (``missing_fraction``)."""
    cells = data.num_rows * max(data.num_columns, 1)
    nulls = sum(_missing(data.column(n)) for n in data.column_names)
    out: dict = {"rows": data.num_rows, "missing_fraction": nulls / cells if cells else 0.0,
                 "columns": {}}
    for name in data.column_names:
        col = data.column(name)
        if not is_numeric(col.type):
            continue
        a = col.to_numpy(zero_copy_only=False).astype(np.float64)
        ok = a[~np.isnan(a)]
        out["columns"][name] = {"count": int(ok.size), "nulls": int(col.null_count),
                                "mean": float(ok.mean()) if ok.size else None,
                                "std": float(ok.std()) if ok.size else None,
                                "min": float(ok.min()) if ok.size else None,
                                "median": float(np.median(ok)) if ok.size else None,
                                "max": float(ok.max()) if ok.size else None}
    return out


@step(side_effect=True)
def write_table(data: pa.Table | dict | list, path: str = "table.parquet",
                run_context: Optional[RunContext] = None) -> Artifact:
    """Write a table (or metrics: an evaluation's scores as one row) to a file in the format its
    extension names: Parquet (``.parquet``, ``.pq``), CSV, TSV, or JSON lines (``.json``,
    ``.jsonl``: one object per row, what :func:`load_data` reads back); returns the file."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in TABLE_SUFFIXES:
        raise ValueError(f"write_table: {path!r} has no table extension; use one of {TABLE_SUFFIXES}")
    data = _as_table(data)
    target = _out_path(path, run_context)
    os.makedirs(os.path.dirname(os.path.abspath(target)) or ".", exist_ok=True)
    if ext in (".csv", ".tsv"):
        pacsv.write_csv(data, target, write_options=pacsv.WriteOptions(delimiter="\t" if ext == ".tsv" else ","))
    elif ext in (".json", ".jsonl"):
        with open(target, "w") as f:
            for row in data.to_pylist():
                f.write(json.dumps(row, default=str) + "\n")
    else:
        pq.write_table(data, target)
    return make_artifact(TABLE_FILE, target, metrics={"rows": data.num_rows})


BAR_LIMIT = 50      # a per-group table of more rows than this is drawn as a histogram by "auto"


@step(side_effect=True)
def plot(data: pa.Table | dict | list | Artifact, column: Optional[str] = None, path: str = "plot.png",
         metric: Optional[str] = None, kind: Literal["auto", "histogram", "bar", "line"] = "auto",
         run_context: Optional[RunContext] = None) -> Artifact:
    """Plot a table column, or a list of numbers / a metrics dict, to a PNG file.

    ``kind``: ``histogram`` (a column's distribution), ``bar`` (one bar per row, labelled by the
    table's first text column: the per-region totals an ``aggregate`` made), ``line`` (the
    column in row order); ``auto`` draws bars for a per-group table (a text column whose values
    are distinct, at most ``BAR_LIMIT`` rows) and a histogram otherwise; a metrics dict is bars and
    a list a line unless ``kind`` says otherwise. ``metric``: the metric of a metrics dict (or of
    each of a list of them, or of each adapter of an adapter evaluation) to chart. The artifact's
    ``info`` says the kind drawn and the column (or metric) charted."""
    if metric is not None:
        data = _metric_values(data, metric)
    elif isinstance(data, Artifact):
        data = dict(data.metrics)      # every figure the part reported
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if isinstance(data, pa.Table):
        labels, values, col = _table_series(data, column)
        if kind == "auto":
            kind = "bar" if labels is not None and len(set(labels)) == len(labels) <= BAR_LIMIT else "histogram"
        if labels is None:
            labels = [str(i) for i in range(len(values))]
    else:
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            labels, values = [str(k) for k in data], [float(v) for v in data.values()]
        else:
            labels, values = [str(i) for i in range(len(data))], [float(v) for v in data]
        col = metric or ""
        if kind == "auto":
            kind = "bar" if isinstance(data, dict) else "line"
    target = _out_path(path, run_context)
    os.makedirs(os.path.dirname(os.path.abspath(target)) or ".", exist_ok=True)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    if kind == "histogram":
        ax.hist(values, bins=30)
        ax.set_xlabel(col)
    elif kind == "bar":
        ax.bar(labels, values)
        ax.set_ylabel(col)
        ax.tick_params(axis="x", labelrotation=45 if len(labels) > 6 else 0)
    elif kind == "line":
        ax.plot(range(len(values)), values)
        ax.set_ylabel(col)
    else:
        raise ValueError(f"plot: kind {kind!r} is none of auto, histogram, bar, line")
    fig.tight_layout()
    fig.savefig(target)
    plt.close(fig)
    return make_artifact(REPORT_FILE, target, info={"kind": kind, "column": col})


def _table_series(data: pa.Table, column: Optional[str]) -> tuple[list[str] | None, list[float], str]:
    """The plotted column's values (``column``, or the first numeric one) and the row labels
    (the first text column's values; None when the table has none)."""
    names = [n for n in data.column_names if pa.types.is_integer(data.column(n).type)
             or pa.types.is_floating(data.column(n).type)]
    col = column or (names[0] if names else None)
    if col is None:
        raise ValueError("plot: the table has no numeric column")
    if col not in data.column_names:
        raise ValueError(f"plot: the table has no column {col!r} (it has {data.column_names})")
    text = [n for n in data.column_names if pa.types.is_string(data.column(n).type)
            or pa.types.is_large_string(data.column(n).type)]
    labels = [str(v) for v in data.column(text[0]).to_pylist()] if text else None
    values = data.column(col).to_numpy(zero_copy_only=False).astype(np.float64).tolist()
    return labels, values, col


def _metric_values(data: pa.Table | dict | list | Artifact, metric: str) -> dict | list:
    """``metric`` of a metrics dict, of each result of a list, of each adapter of an adapter
    evaluation (``{"adapters": {name: {...}}}``), or that a part's artifact reports (an EDiT
    checkpoint's val_loss, a DLRM model's AUC), as {name: value} or [values]."""
    if isinstance(data, Artifact):
        if metric not in data.metrics:
            raise ValueError(f"plot: the {data.kind} reports no metric {metric!r} (it reports {sorted(data.metrics)})")
        return {metric: float(data.metrics[metric])}
    if isinstance(data, list):
        return [float(r[metric]) for r in data if isinstance(r, dict) and metric in r]
    if isinstance(data, dict):
        per = data.get("adapters")
        if isinstance(per, dict):
            key = {"token_accuracy": "token_after", "exact_match": "exact_after"}.get(metric, metric)
            vals = {n: float(v[key]) for n, v in per.items() if isinstance(v, dict) and key in v}
            if vals:
                return vals
        if metric in data:
            return {metric: float(data[metric])}
    raise ValueError(f"plot: the result has no metric {metric!r}")
