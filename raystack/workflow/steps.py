"""Ready-made steps for the catalog: train and evaluate small models, select, export, deploy,
report, notify, clean up, load a checkpoint. Models are small numpy models as JSON dicts; the
table steps live in :mod:`raystack.workflow.table_steps` and are re-exported here.

Steps that change the world outside the run (deploy_model, export_model, save_report, notify,
cleanup) are marked ``side_effect``: they run every time, never from the cache. ``cleanup``
deletes only inside the run's scratch space or a path the user's config allows.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from typing import Any, Literal, Optional

import numpy as np

from raystack.workflow.api import step
from raystack.workflow.artifacts import (EDIT_CHECKPOINT, REPORT_FILE, Artifact,
                                         make_artifact)
from raystack.workflow.context import RunContext, deletable
from raystack.workflow.table_steps import (TARGET, _out_path, aggregate, clean_data, concat, dedup,  # noqa: F401
                                           impute, is_numeric, join, load_data, make_dataset, normalize,
                                           plot, sample, split_data, stats, write_table)

log = logging.getLogger(__name__)

MODEL_KINDS = ("linear", "logistic", "knn", "centroid")
KNN_K = 5
KNN_KEEP = 200          # training rows a knn model keeps
EPS = 1e-12


def _xy(t, target: str = TARGET) -> tuple[np.ndarray, np.ndarray]:
    if target not in t.column_names:
        raise ValueError(f"the table has no target column {target!r}; columns: {t.column_names}")
    feats = [c for c in t.column_names if c != target and is_numeric(t.column(c).type)]
    if not feats:   # text columns (ids, the key of an aggregation) are not features
        raise ValueError(f"the table has no numeric feature column; columns: {t.column_names}")
    x = np.stack([t.column(c).to_numpy(zero_copy_only=False).astype(np.float64) for c in feats], axis=1)
    return x, t.column(target).to_numpy(zero_copy_only=False).astype(np.float64)


KNN_CHUNK = 4096        # query rows per distance block: a block holds KNN_CHUNK x KNN_KEEP floats


def _knn_scores(xs: np.ndarray, ys: np.ndarray, k: int, x: np.ndarray) -> np.ndarray:
    """Mean target of each row's k nearest kept rows (squared Euclidean distance), in blocks of
    KNN_CHUNK rows, so memory stays O(KNN_CHUNK x kept rows) whatever the table's size."""
    k = min(k, len(xs))
    kept_sq = (xs ** 2).sum(1)
    out = np.empty(len(x))
    for lo in range(0, len(x), KNN_CHUNK):
        q = x[lo:lo + KNN_CHUNK]
        # |q - xs|^2 = |q|^2 - 2 q.xs + |xs|^2; |q|^2 is the same for every neighbour of a row
        d = kept_sq[None, :] - 2.0 * (q @ xs.T)
        nn = np.argpartition(d, k - 1, axis=1)[:, :k]
        out[lo:lo + KNN_CHUNK] = ys[nn].mean(axis=1)
    return out


def _scores(model: dict, x: np.ndarray) -> np.ndarray:
    """A score per row, higher meaning class 1 (probabilities for logistic)."""
    kind = model["kind"]
    if kind in ("linear", "logistic"):
        z = x @ np.asarray(model["w"]) + model["b"]
        return 1.0 / (1.0 + np.exp(-z)) if kind == "logistic" else z
    if kind == "centroid":
        c = np.asarray(model["centroids"])
        d = ((x[:, None, :] - c[None]) ** 2).sum(-1)
        return d[:, 0] - d[:, 1]
    if kind == "knn":
        return _knn_scores(np.asarray(model["x"]), np.asarray(model["y"]), int(model["k"]), x)
    raise ValueError(f"unknown model kind {kind!r}; expected one of {MODEL_KINDS}")


def _predict(model: dict, x: np.ndarray) -> np.ndarray:
    threshold = 0.0 if model["kind"] == "centroid" else 0.5
    return (_scores(model, x) > threshold).astype(float)


def _auc(y: np.ndarray, s: np.ndarray) -> float:
    pos, neg = s[y == 1], s[y == 0]
    if not len(pos) or not len(neg):
        return 0.5
    ranks = np.argsort(np.argsort(np.r_[pos, neg])) + 1
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def classification_metrics(model: dict, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """accuracy, error, precision, recall, f1, auc, loss (log loss, or squared error) and rmse
    (of the model's raw score against the target, for regression use)."""
    s = _scores(model, x)
    p = _predict(model, x)
    tp = float(((p == 1) & (y == 1)).sum())
    precision = tp / max(float((p == 1).sum()), 1.0)
    recall = tp / max(float((y == 1).sum()), 1.0)
    acc = float((p == y).mean())
    if model["kind"] == "logistic":
        q = np.clip(s, EPS, 1 - EPS)
        loss = float(-(y * np.log(q) + (1 - y) * np.log(1 - q)).mean())
    else:
        loss = float(((p - y) ** 2).mean())
    return {"accuracy": acc, "error": 1.0 - acc, "precision": precision, "recall": recall,
            "f1": 2 * precision * recall / max(precision + recall, EPS), "auc": _auc(y, s),
            "loss": loss, "rmse": float(np.sqrt(((s - y) ** 2).mean()))}


def _batches(n: int, batch_size: Optional[int], rng: np.random.Generator) -> list[np.ndarray]:
    """Row indices per gradient step of one epoch (all rows at once when batch_size is None)."""
    if batch_size is None or batch_size >= n:
        return [np.arange(n)]
    order = rng.permutation(n)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def train_model(data: dict, model: Literal["linear", "logistic", "knn", "centroid"] = "logistic",
                epochs: int = 20, lr: float = 0.1, k: int = KNN_K, batch_size: Optional[int] = None,
                init: Optional[dict] = None, target: str = TARGET) -> dict:
    """Train a small classifier on data['train']; returns the model with its training metrics
    (accuracy, loss, rmse...; ``score`` is the accuracy; ``train_loss`` the loss, ``val_loss`` the
    loss on data['test'] when the split has one) and the settings it was trained with.
    ``k``: neighbours of a knn model. ``batch_size``: rows per gradient step (logistic, and
    linear, which is solved by least squares when it is None); None: the whole table.
    ``init`` (a previous model of the same kind) continues training, for loops. ``target``: the
    column predicted (every other numeric column is a feature); the model keeps it, so its
    evaluation scores the same column."""
    if epochs < 1 or lr <= 0 or k < 1 or (batch_size is not None and batch_size < 1):
        raise ValueError(f"train_model needs epochs >= 1, lr > 0, k >= 1 and batch_size >= 1, got "
                         f"{epochs}, {lr}, {k}, {batch_size}")
    x, y = _xy(data["train"], target)
    rng = np.random.default_rng(0)
    same = bool(init) and init.get("kind") == model
    if model in ("linear", "logistic") and (model == "logistic" or batch_size is not None):
        w = np.asarray(init["w"]) if same else np.zeros(x.shape[1])
        b = float(init["b"]) if same else 0.0
        for _ in range(epochs):
            for idx in _batches(len(y), batch_size, rng):
                z = x[idx] @ w + b
                p = 1.0 / (1.0 + np.exp(-z)) if model == "logistic" else z
                w = w - lr * x[idx].T @ (p - y[idx]) / len(idx)
                b -= lr * float((p - y[idx]).mean())
        m: dict[str, Any] = {"kind": model, "w": w.tolist(), "b": b}
    elif model == "linear":
        a = np.c_[x, np.ones(len(x))]
        sol = np.linalg.lstsq(a, y, rcond=None)[0]
        m = {"kind": "linear", "w": sol[:-1].tolist(), "b": float(sol[-1])}
    elif model == "knn":
        m = {"kind": "knn", "x": x[:KNN_KEEP].tolist(), "y": y[:KNN_KEEP].tolist(), "k": int(k)}
    elif model == "centroid":
        m = {"kind": "centroid", "centroids": [x[y == c].mean(axis=0).tolist() for c in (0.0, 1.0)]}
    else:
        raise ValueError(f"unknown model {model!r}; expected one of {MODEL_KINDS}")
    m["epochs"] = int((init or {}).get("epochs", 0)) + epochs
    m.update(lr=lr, k=int(k), batch_size=batch_size, target=target)
    m.update(classification_metrics(m, x, y))
    m["score"] = m["accuracy"]
    m["train_loss"] = m["loss"]
    if data.get("test") is not None:   # the held-out split's loss, watched by loops ("until val loss ...")
        xt, yt = _xy(data["test"], target)
        m["val_loss"] = classification_metrics(m, xt, yt)["loss"]
    return m


def evaluate_model(model: dict, data: dict, metric: Literal["accuracy", "error", "f1", "auc", "precision",
                                                              "recall", "loss", "rmse"] = "accuracy",
                   target: Optional[str] = None) -> dict:
    """Score a model on data['test']: every metric, with ``score`` the chosen one. ``target``: the
    column scored against (None: the one the model was trained to predict)."""
    x, y = _xy(data["test"], target or _model_of(model).get("target", TARGET))
    mets = classification_metrics(model, x, y)
    return {"model": model, "kind": model["kind"], "metric": metric, **mets, "score": mets[metric]}


LOWER_IS_BETTER = ("loss", "val_loss", "train_loss", "logloss", "error", "rmse")


def select_best(results: list, metric: str = "score", mode: Optional[Literal["max", "min"]] = None) -> Any:
    """The result with the best ``metric`` (default: its score): evaluations, models, or typed
    artifacts (an EDiT checkpoint by its val_loss, a DLRM by its AUC). ``mode``: max or min;
    None: min for losses and errors, else max."""
    if not results:
        raise ValueError("select_best needs at least one result")
    mode = mode or ("min" if metric in LOWER_IS_BETTER else "max")
    pick = max if mode == "max" else min
    return pick(results, key=lambda r: r[metric])


def _model_of(model: dict) -> dict:
    return model.get("model", model)


@step(side_effect=True)
def export_model(model: Any, path: str = "model.json",
                 run_context: Optional[RunContext] = None) -> Artifact:
    """Write a model (or an evaluation holding one) to a JSON file, or copy a typed artifact's
    files (an EDiT checkpoint, an adapter set, a DLRM model) into the directory ``path``;
    returns the written file or directory."""
    target = _out_path(path, run_context)
    if isinstance(model, Artifact):
        os.makedirs(target, exist_ok=True)
        for src in model.all_paths():
            dst = os.path.join(target, os.path.basename(src.rstrip("/")))
            if os.path.isdir(src):
                shutil.copytree(src, dst, dirs_exist_ok=True)
            elif os.path.exists(src):
                shutil.copy2(src, dst)
        return make_artifact(REPORT_FILE, target, metrics=model.metrics,
                             info={"artifact_kind": model.kind})
    os.makedirs(os.path.dirname(os.path.abspath(target)) or ".", exist_ok=True)
    with open(target, "w") as f:
        json.dump(_model_of(model), f)
    return make_artifact(REPORT_FILE, target, info={"model_kind": _model_of(model).get("kind")})


@step(side_effect=True)
def deploy_model(model: dict, name: str = "model", directory: str = "deployed") -> str:
    """Deploy a model by publishing it as ``<directory>/<name>.json``; returns the file path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{name}.json")
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(_model_of(model), f)
    os.replace(tmp, path)
    return path


@step(side_effect=True)
def save_report(result: Any, path: str = "report.json", run_context: Optional[RunContext] = None) -> Artifact:
    """Write a result as a JSON report; returns the file. A relative path goes under the step's
    own output directory, as every other file a step writes (it was written into the process's
    working directory: two reports of one run, or the same report of a re-run, replaced it)."""
    target = _out_path(path, run_context)
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)

    def plain(v: Any) -> Any:
        if isinstance(v, Artifact):
            return v.to_json()
        return str(v)
    with open(target, "w") as f:
        json.dump(result, f, default=plain, indent=1)
    return make_artifact(REPORT_FILE, target)


@step(side_effect=True)
def notify(message: str = "workflow finished", workflow_status: str = "") -> str:
    """Send a notification: a line in the log (with the run's status as an exit handler)."""
    line = f"[raystack workflow] {message}" + (f" ({workflow_status})" if workflow_status else "")
    log.warning(line)
    return line


@step(side_effect=True)
def cleanup(directory: str = "tmp", run_context: Optional[RunContext] = None) -> str:
    """Remove a directory inside the run's scratch space (or a path the workflow config lists
    in delete_paths); returns what was done."""
    if run_context is None:
        raise PermissionError("cleanup runs only inside a workflow run (it needs the run's "
                              "scratch space to confine deletions)")
    target = deletable(directory, run_context)
    if target.is_dir():
        shutil.rmtree(target)
        return f"removed {target}"
    return f"nothing to remove at {target}"


def load_checkpoint(path: str) -> Artifact:
    """A saved model checkpoint directory (transformers ``save_pretrained`` layout), checked."""
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise FileNotFoundError(f"checkpoint {path!r}: no config.json (expected a directory "
                                "written by save_pretrained)")
    weights = [n for n in os.listdir(path) if n.endswith((".safetensors", ".bin"))]
    if not weights:
        raise FileNotFoundError(f"checkpoint {path!r}: no weight files (*.safetensors)")
    return make_artifact(EDIT_CHECKPOINT, os.path.abspath(path), info={"source": "loaded"})


def load_adapters(path: str) -> Artifact:
    """A saved adapter set: the peft adapter directories ``mlora_finetune`` exported under
    ``path``, with their index (base, adapter names, the mLoRA config), to evaluate or serve."""
    from raystack.workflow.adapter_sets import read_adapter_set
    return read_adapter_set(path)
