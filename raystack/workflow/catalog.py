"""The step catalog: ready steps with a description, typed parameters, and the kinds of
artifacts they consume and produce (used by the natural-language planner to wire edges).

Steps of the other raystack parts (EDiT, mLoRA, elastic DLRM) are referenced by path and run
that part's job entry point; they fail with a clear message when the part is not installed.
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

from raystack.workflow.functions import resolve

_STEPS = "raystack.workflow.steps"
_PARTS = "raystack.actors.workflow.parts"


@dataclass
class ParamSpec:
    """A step parameter: its type, default, and the words that name it in a description."""

    name: str
    type: Any
    default: Any = inspect.Parameter.empty
    aliases: tuple[str, ...] = ()
    choices: tuple[Any, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is inspect.Parameter.empty


@dataclass
class CatalogEntry:
    """One catalog step."""

    name: str
    fn: str                                 # module:qualname
    description: str
    keywords: tuple[str, ...]
    inputs: dict[str, str] = field(default_factory=dict)   # param -> artifact kind consumed
    output: str | None = None               # artifact kind produced
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exit_ok: bool = False                   # usable as an exit handler

    def function(self) -> Callable:
        return resolve(self.fn)

    def params(self) -> dict[str, ParamSpec]:
        """Typed parameters read from the function's signature (data inputs excluded)."""
        fn = self.function()
        hints = typing.get_type_hints(fn)
        out = {}
        for name, p in inspect.signature(fn).parameters.items():
            if name in self.inputs or name == "workflow_status":
                continue
            tp = hints.get(name, Any)
            choices = typing.get_args(tp) if typing.get_origin(tp) is typing.Literal else ()
            out[name] = ParamSpec(name, tp, p.default, self.aliases.get(name, (name,)), choices)
        return out


def _e(name: str, fn: str, description: str, keywords: str, inputs: dict | None = None,
       output: str | None = None, aliases: dict | None = None, exit_ok: bool = False) -> CatalogEntry:
    return CatalogEntry(name, fn, description, tuple(keywords.split()), inputs or {}, output,
                        aliases or {}, exit_ok)


CATALOG: dict[str, CatalogEntry] = {e.name: e for e in [
    _e("make_dataset", f"{_STEPS}:make_dataset", "generate a synthetic dataset table",
       "generate synthetic dataset data table sample rows make create toy",
       output="table", aliases={"rows": ("rows", "samples", "examples"),
                                "features": ("features", "columns"), "seed": ("seed",)}),
    _e("load_csv", f"{_STEPS}:load_csv", "load a CSV file into a table",
       "load read csv file import ingest", output="table", aliases={"path": ("path", "file")}),
    _e("load_parquet", f"{_STEPS}:load_parquet", "load a Parquet file into a table",
       "load read parquet file import ingest", output="table", aliases={"path": ("path", "file")}),
    _e("clean_data", f"{_STEPS}:clean_data", "drop rows with missing values",
       "clean drop missing null nulls nan rows remove", inputs={"data": "table"}, output="table"),
    _e("normalize", f"{_STEPS}:normalize", "standardise feature columns",
       "normalize normalise standardize standardise scale", inputs={"data": "table"},
       output="table"),
    _e("split_data", f"{_STEPS}:split_data", "split a table into train and test sets",
       "split test holdout partition", inputs={"data": "table"}, output="split",
       aliases={"test_fraction": ("test", "test fraction", "holdout"), "seed": ("seed",)}),
    _e("train_model", f"{_STEPS}:train_model", "train a classifier model",
       "train fit learn model classifier regression logistic linear knn centroid",
       inputs={"data": "split"}, output="model",
       aliases={"model": ("model",), "epochs": ("epochs", "epoch", "iterations"),
                "lr": ("lr", "learning rate", "rate")}),
    _e("evaluate_model", f"{_STEPS}:evaluate_model", "evaluate a model on the test set",
       "evaluate score test measure accuracy assess validate",
       inputs={"model": "model", "data": "split"}, output="evaluation",
       aliases={"metric": ("metric",)}),
    _e("select_best", f"{_STEPS}:select_best", "pick the best evaluated model",
       "select pick choose best compare winner top", inputs={"results": "evaluation*"},
       output="evaluation"),
    _e("deploy_model", f"{_STEPS}:deploy_model", "deploy a model by writing it out",
       "deploy publish serve ship release push", inputs={"model": "evaluation|model"},
       output="path", aliases={"name": ("name", "as"), "directory": ("directory", "dir")}),
    _e("save_report", f"{_STEPS}:save_report", "write a result to a JSON report",
       "report save write log record results summary", inputs={"result": "evaluation|model|any"},
       output="path", aliases={"path": ("path", "file", "to")}),
    _e("notify", f"{_STEPS}:notify", "send a notification message",
       "notify notification alert message email tell send", aliases={"message": ("message",)},
       exit_ok=True),
    _e("cleanup", f"{_STEPS}:cleanup", "remove a scratch directory",
       "clean up cleanup remove delete scratch temporary tmp files", exit_ok=True,
       aliases={"directory": ("directory", "dir")}),
    _e("edit_pretrain", f"{_PARTS}:edit_pretrain", "pretrain a language model with EDiT local SGD",
       "pretrain pretraining language model llm edit local sgd tokens",
       output="checkpoint", aliases={"model": ("model",), "steps": ("steps",),
                                      "workers": ("workers", "nodes")}),
    _e("mlora_finetune", f"{_PARTS}:mlora_finetune", "fine-tune LoRA adapters with mLoRA",
       "finetune fine-tune tune lora adapters adapter mlora instruction",
       output="adapters", aliases={"adapters": ("adapters",), "steps": ("steps",)}),
    _e("elastic_dlrm", f"{_PARTS}:elastic_dlrm", "train a DLRM recommendation model elastically",
       "dlrm train recommendation recommender ctr criteo elastic click", output="checkpoint",
       aliases={"steps": ("steps",), "workers": ("workers",)}),
]}


def describe() -> list[dict[str, Any]]:
    """A plain listing of the catalog (name, description, parameters with types and defaults)."""
    rows = []
    for e in CATALOG.values():
        try:
            params = {n: {"type": getattr(p.type, "__name__", str(p.type)),
                          "default": None if p.required else p.default}
                      for n, p in e.params().items()}
        except Exception as exc:  # noqa: BLE001 - a part not installed
            params = {"error": str(exc)}
        rows.append({"name": e.name, "description": e.description, "inputs": e.inputs,
                     "output": e.output, "params": params})
    return rows
