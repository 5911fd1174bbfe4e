"""Ready-made steps for the catalog: load, clean, split, train and evaluate simple models,
select, deploy, report. Tables are pyarrow Tables; models are small numpy models as dicts."""

from __future__ import annotations

import json
import os
from typing import Any, Literal, Optional

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

MODEL_KINDS = ("linear", "logistic", "knn", "centroid")


def make_dataset(rows: int = 400, features: int = 6, task: Literal["classification", "regression"] = "classification",
                 noise: float = 0.5, seed: int = 0) -> pa.Table:
    """Generate a synthetic table with feature columns f0..fN and a target column 'y'."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, features))
    w = rng.normal(size=features)
    z = x @ w + noise * rng.normal(size=rows)
    y = (z > 0).astype(np.int64) if task == "classification" else z
    cols = {f"f{i}": x[:, i] for i in range(features)}
    cols["y"] = y
    return pa.table(cols)


def load_csv(path: str) -> pa.Table:
    """Load a CSV file into a table."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"CSV file {path!r} does not exist")
    return pacsv.read_csv(path)


def load_parquet(path: str) -> pa.Table:
    """Load a Parquet file into a table."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"Parquet file {path!r} does not exist")
    return pq.read_table(path)


def clean_data(data: pa.Table, drop_nulls: bool = True) -> pa.Table:
    """Drop rows with missing values."""
    return data.drop_null() if drop_nulls else data


def normalize(data: pa.Table, target: str = "y") -> pa.Table:
    """Standardise every feature column to zero mean and unit variance."""
    cols = {}
    for name in data.column_names:
        a = data.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
        cols[name] = a if name == target else (a - a.mean()) / (a.std() + 1e-12)
    return pa.table(cols)


def split_data(data: pa.Table, test_fraction: float = 0.2, seed: int = 0) -> dict[str, pa.Table]:
    """Shuffle and split a table into {'train', 'test'}."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    idx = np.random.default_rng(seed).permutation(data.num_rows)
    n_test = max(1, int(round(data.num_rows * test_fraction)))
    return {"train": data.take(pa.array(idx[n_test:])), "test": data.take(pa.array(idx[:n_test]))}


def _xy(t: pa.Table, target: str = "y") -> tuple[np.ndarray, np.ndarray]:
    x = np.stack([t.column(c).to_numpy(zero_copy_only=False).astype(np.float64)
                  for c in t.column_names if c != target], axis=1)
    return x, t.column(target).to_numpy(zero_copy_only=False).astype(np.float64)


def _predict(model: dict, x: np.ndarray) -> np.ndarray:
    kind = model["kind"]
    if kind in ("linear", "logistic"):
        z = x @ np.asarray(model["w"]) + model["b"]
        return (z > (0.0 if kind == "logistic" else 0.5)).astype(float)
    if kind == "centroid":
        c = np.asarray(model["centroids"])
        return np.argmin(((x[:, None, :] - c[None]) ** 2).sum(-1), axis=1).astype(float)
    if kind == "knn":
        xs, ys = np.asarray(model["x"]), np.asarray(model["y"])
        d = ((x[:, None, :] - xs[None]) ** 2).sum(-1)
        nn = np.argsort(d, axis=1)[:, : model["k"]]
        return (ys[nn].mean(axis=1) > 0.5).astype(float)
    raise ValueError(f"unknown model kind {kind!r}; expected one of {MODEL_KINDS}")


def train_model(data: dict, model: Literal["linear", "logistic", "knn", "centroid"] = "logistic",
                epochs: int = 20, lr: float = 0.1, init: Optional[dict] = None) -> dict:
    """Train a small classifier on data['train']; returns the model with its train accuracy.

    ``init`` (a previous model of the same kind) continues training, for loops.
    """
    x, y = _xy(data["train"])
    if model == "linear":
        a = np.c_[x, np.ones(len(x))]
        sol = np.linalg.lstsq(a, y, rcond=None)[0]
        m: dict[str, Any] = {"kind": "linear", "w": sol[:-1].tolist(), "b": float(sol[-1])}
    elif model == "logistic":
        w = np.asarray(init["w"]) if init and init.get("kind") == "logistic" else np.zeros(x.shape[1])
        b = float(init["b"]) if init and init.get("kind") == "logistic" else 0.0
        for _ in range(epochs):
            p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
            w -= lr * x.T @ (p - y) / len(y)
            b -= lr * float((p - y).mean())
        m = {"kind": "logistic", "w": w.tolist(), "b": b}
    elif model == "knn":
        m = {"kind": "knn", "x": x[:200].tolist(), "y": y[:200].tolist(), "k": 5}
    elif model == "centroid":
        m = {"kind": "centroid", "centroids": [x[y == c].mean(axis=0).tolist() for c in (0.0, 1.0)]}
    else:
        raise ValueError(f"unknown model {model!r}; expected one of {MODEL_KINDS}")
    m["epochs"] = int((init or {}).get("epochs", 0)) + epochs
    m["score"] = float((_predict(m, x) == y).mean())
    return m


def evaluate_model(model: dict, data: dict, metric: Literal["accuracy", "error"] = "accuracy") -> dict:
    """Score a model on data['test']; returns {'model', 'kind', 'score', 'metric'}."""
    x, y = _xy(data["test"])
    acc = float((_predict(model, x) == y).mean())
    return {"model": model, "kind": model["kind"], "metric": metric,
            "score": acc if metric == "accuracy" else 1.0 - acc}


def select_best(results: list, mode: Literal["max", "min"] = "max") -> dict:
    """The evaluation result with the best score."""
    if not results:
        raise ValueError("select_best needs at least one result")
    pick = max if mode == "max" else min
    return pick(results, key=lambda r: r["score"])


def deploy_model(model: dict, name: str = "model", directory: str = "deployed") -> str:
    """Write the model (or an evaluation holding one) as JSON; returns the file path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{name}.json")
    with open(path, "w") as f:
        json.dump(model.get("model", model), f)
    return path


def save_report(result: Any, path: str = "report.json") -> str:
    """Write a result as a JSON report; returns the path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, default=str, indent=1)
    return path


def notify(message: str = "workflow finished", workflow_status: str = "") -> str:
    """Print a notification line (with the run's status when used as an exit handler)."""
    line = f"[raystack workflow] {message}" + (f" ({workflow_status})" if workflow_status else "")
    print(line, flush=True)
    return line


def cleanup(directory: str = "tmp", workflow_status: str = "") -> str:
    """Remove a scratch directory if it exists; returns what was done."""
    import shutil
    if os.path.isdir(directory):
        shutil.rmtree(directory)
        return f"removed {directory}"
    return f"nothing to remove at {directory}"
