"""The step catalog: ready steps with a description, typed parameters, the kinds of data they
consume and produce (the planners wire edges by these), the metrics their outputs carry (what a
condition or loop may test), and the canonical kind each maps to in plan evaluation sets.

Steps of the other raystack parts (EDiT, mLoRA, elastic DLRM) are generated from the parts'
config dataclasses (``raystack.actors.workflow.parts``); ``serve_adapters`` deploys with Ray
Serve (``raystack.apps.workflow_serve``). All are referenced by path, imported on use.
"""

from __future__ import annotations

import inspect
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

from raystack.workflow.context import RESERVED_PARAMS
from raystack.workflow.functions import has_side_effect, resolve

_STEPS = "raystack.workflow.steps"
_TABLES = "raystack.workflow.table_steps"
_PARTS = "raystack.actors.workflow.parts"
_SERVE = "raystack.apps.workflow_serve"

# Data kinds that flow between steps (a trailing * on an input: a list of them).
TABLE, SPLIT, MODEL, EVALUATION, STATS, FILE = "table", "split", "model", "evaluation", "stats", "file"
CHECKPOINT, ADAPTERS, DLRM, SERVED = "checkpoint", "adapters", "dlrm_model", "served"

CLASSIFIER_METRICS = ("accuracy", "error", "precision", "recall", "f1", "auc", "loss", "rmse", "score")


@dataclass(frozen=True)
class ParamSpec:
    """A step parameter: its type, default and choices (from the function's signature)."""

    name: str
    type: Any
    default: Any = inspect.Parameter.empty
    choices: tuple[Any, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


@dataclass(frozen=True)
class CatalogEntry:
    """One catalog step."""

    name: str
    fn: str                                   # module:qualname
    kind: str                                 # canonical kind (evaluation sets' vocabulary)
    description: str
    inputs: dict[str, str] = field(default_factory=dict)   # param -> data kind(s) "a|b", "x*"
    output: str | None = None                 # data kind produced
    metrics: tuple[str, ...] = ()             # named metrics of the output
    exit_ok: bool = False                     # usable as an exit handler
    loop_carry: str | None = None             # parameter fed the previous output in a loop
    optional_inputs: tuple[str, ...] = ()     # inputs that may be left unwired

    def function(self) -> Callable:
        return resolve(self.fn)

    @property
    def side_effect(self) -> bool:
        return has_side_effect(self.function())

    def params(self) -> dict[str, ParamSpec]:
        """Typed parameters from the function's signature (data inputs and runner-set
        parameters excluded)."""
        fn = self.function()
        hints = typing.get_type_hints(fn)
        out = {}
        for name, p in inspect.signature(fn).parameters.items():
            if name in self.inputs or name in RESERVED_PARAMS:
                continue
            tp = hints.get(name, Any)
            choices = typing.get_args(tp) if typing.get_origin(tp) is typing.Literal else ()
            out[name] = ParamSpec(name, tp, p.default, choices)
        return out


def _e(name: str, module: str, kind: str, description: str, **kw: Any) -> CatalogEntry:
    return CatalogEntry(name, f"{module}:{name}", kind, description, **kw)


CATALOG: dict[str, CatalogEntry] = {e.name: e for e in [
    _e("make_dataset", _TABLES, "make_dataset", "generate a synthetic table", output=TABLE),
    _e("load_data", _TABLES, "load_data", "load a CSV/Parquet/JSON file", output=TABLE),
    _e("load_checkpoint", _STEPS, "load_checkpoint", "load a saved model checkpoint directory",
       output=CHECKPOINT),
    _e("load_adapters", _STEPS, "load_checkpoint", "load a saved adapter set (the directory mlora_finetune wrote)",
       output=ADAPTERS),
    _e("clean_data", _TABLES, "clean_data", "drop rows with missing values",
       inputs={"data": TABLE}, output=TABLE),
    _e("impute", _TABLES, "impute", "fill missing values (mean, median or zero)",
       inputs={"data": TABLE}, output=TABLE),
    _e("dedup", _TABLES, "dedup", "drop duplicate rows", inputs={"data": TABLE}, output=TABLE),
    _e("normalize", _TABLES, "normalize", "scale numeric columns (z-score or min-max)",
       inputs={"data": TABLE}, output=TABLE),
    _e("sample", _TABLES, "sample", "take a subset of rows (at random, or the first or last ones)",
       inputs={"data": TABLE}, output=TABLE),
    _e("split_data", _TABLES, "split_data", "split a table into train and test sets",
       inputs={"data": TABLE}, output=SPLIT),
    _e("join", _TABLES, "join", "join two tables on a key column",
       inputs={"left": TABLE, "right": TABLE}, output=TABLE),
    _e("concat", _TABLES, "concat", "stack two tables with the same columns (rows of one, then the other)",
       inputs={"first": TABLE, "second": TABLE}, output=TABLE),
    _e("aggregate", _TABLES, "aggregate", "group rows by a column and aggregate",
       inputs={"data": TABLE}, output=TABLE),
    _e("stats", _TABLES, "stats", "summary statistics of a table", inputs={"data": TABLE},
       output=STATS, metrics=("rows", "missing_fraction")),
    _e("train_model", _STEPS, "train_model", "train a small classifier",
       inputs={"data": SPLIT}, output=MODEL, metrics=CLASSIFIER_METRICS + ("train_loss", "val_loss"), loop_carry="init",
       optional_inputs=("init",)),
    _e("evaluate_model", _STEPS, "evaluate_model", "evaluate a model on the test set",
       inputs={"model": MODEL, "data": SPLIT}, output=EVALUATION, metrics=CLASSIFIER_METRICS),
    _e("select_best", _STEPS, "select_best", "pick the best of several evaluations, models or part runs",
       inputs={"results": f"{EVALUATION}|{MODEL}|{CHECKPOINT}|{DLRM}*"}, output=EVALUATION,
       metrics=CLASSIFIER_METRICS + ("val_loss", "train_loss")),
    _e("export_model", _STEPS, "export_model", "write a model to a file (or a part's model files to a directory)",
       inputs={"model": f"{EVALUATION}|{MODEL}|{CHECKPOINT}|{DLRM}|{ADAPTERS}"}, output=FILE),
    _e("deploy_model", _STEPS, "deploy_model", "deploy (publish) a model",
       inputs={"model": f"{EVALUATION}|{MODEL}"}, output=FILE),
    _e("save_report", _STEPS, "save_report", "write a result as a JSON report",
       inputs={"result": "any"}, output=FILE, exit_ok=True),
    _e("write_table", _TABLES, "write_table", "write a table (or scores) to a Parquet, CSV, TSV or JSON-lines file",
       inputs={"data": f"{TABLE}|{EVALUATION}|{STATS}"}, output=FILE),
    _e("plot", _TABLES, "plot", "plot a table column, metrics, or a part's reported metrics to a PNG file",
       inputs={"data": f"{TABLE}|{STATS}|{EVALUATION}|{MODEL}|{CHECKPOINT}|{DLRM}"}, output=FILE),
    _e("notify", _STEPS, "notify", "send a notification message", exit_ok=True),
    _e("cleanup", _STEPS, "cleanup", "remove a directory in the run's scratch space",
       exit_ok=True),
    _e("edit_pretrain", _PARTS, "edit_pretrain", "pretrain a language model with EDiT local SGD",
       output=CHECKPOINT, metrics=("val_loss", "train_loss", "loss", "tokens_per_s")),
    _e("mlora_finetune", _PARTS, "mlora_finetune", "fine-tune LoRA adapters with mLoRA",
       inputs={"base": CHECKPOINT}, output=ADAPTERS, metrics=("loss", "tokens_per_s"),
       optional_inputs=("base",)),
    _e("evaluate_adapters", _PARTS, "evaluate_adapters", "evaluate fine-tuned adapters",
       inputs={"adapters": ADAPTERS}, output=EVALUATION,
       metrics=("token_accuracy", "exact_match", "score")),
    _e("serve_adapters", _SERVE, "serve_adapters", "deploy adapters with Ray Serve",
       inputs={"adapters": ADAPTERS}, output=SERVED),
    _e("elastic_dlrm", _PARTS, "elastic_dlrm", "train a DLRM recommendation model elastically",
       output=DLRM, metrics=("auc", "rows", "samples_per_s")),
    _e("evaluate_dlrm", _PARTS, "evaluate_model", "evaluate a DLRM model on held-out data",
       inputs={"model": DLRM}, output=EVALUATION, metrics=("auc", "logloss", "loss", "score")),
]}

BY_FN: dict[str, CatalogEntry] = {e.fn: e for e in CATALOG.values()}


def entry_for(fn_path: str) -> CatalogEntry | None:
    """The catalog entry whose function is ``fn_path`` (None for other functions)."""
    return BY_FN.get(fn_path)


def describe() -> list[dict[str, Any]]:
    """A plain listing of the catalog (name, kind, description, inputs, output, metrics,
    parameters with types and defaults)."""
    rows = []
    for e in CATALOG.values():
        try:
            params = {n: {"type": _type_name(p.type),
                          "default": None if p.required else _plain(p.default)}
                      for n, p in e.params().items()}
            side = e.side_effect
        except Exception as exc:  # noqa: BLE001 - a part whose dependencies are missing
            params, side = {"error": str(exc)}, False
        rows.append({"name": e.name, "kind": e.kind, "description": e.description,
                     "inputs": e.inputs, "output": e.output, "metrics": list(e.metrics),
                     "side_effect": side, "exit_ok": e.exit_ok, "params": params})
    return rows


def _type_name(tp: Any) -> str:
    """A parameter's type as a reader (or the LLM planner, which is shown this listing) needs
    it: the members of a union, the choices of a Literal, a list's item type ("str | list[str]
    | None", "'sum' | 'mean'"), not only the outer name ("Union", "Literal")."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is type(None):
        return "None"
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin is typing.Union or isinstance(tp, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is not None and args:
        name = getattr(origin, "__name__", None) or str(origin).replace("typing.", "")
        return f"{name}[{', '.join('...' if a is Ellipsis else _type_name(a) for a in args)}]"
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _plain(v: Any) -> Any:
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return repr(v)
