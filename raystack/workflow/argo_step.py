"""One workflow step inside an Argo container: ``python -m raystack.workflow.argo_step``.

The exported manifest (:mod:`raystack.workflow.export_argo`) runs this module in every step's
container (the project's image, which has raystack installed). Literal parameters arrive as
Argo input parameters holding JSON (so 3 stays an int and [1, 2] a list); step outputs travel
as Argo artifacts: files in raystack's data formats (Parquet, safetensors, JSON), never pickle.
The function is resolved like any IR's: catalog modules and ``--allow`` modules only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from raystack.workflow.context import new_context
from raystack.workflow.engine import runner_kwargs
from raystack.workflow.formats import deserialize, serialize
from raystack.workflow.functions import resolve
from raystack.workflow.ir import Loop

OUT_DIR = "/tmp/outputs"
IN_DIR = "/tmp/inputs"
RESULT = "result"          # the output artifact: data file with its format beside it
VALUE = "value.json"       # scalars of the output, for Argo `when` expressions


def read_artifact(path: Path) -> Any:
    """An upstream step's output: the directory ``path`` holding ``data`` and ``format``."""
    return deserialize((path / "format").read_text().strip(), (path / "data").read_bytes())


def write_artifact(directory: Path, value: Any) -> None:
    """``directory/result/{data,format}`` and ``directory/value.json`` (the scalars)."""
    fmt, data = serialize(value)
    out = directory / RESULT
    out.mkdir(parents=True, exist_ok=True)
    (out / "data").write_bytes(data)
    (out / "format").write_text(fmt)
    scalars = value if not isinstance(value, dict) else {
        k: v for k, v in value.items() if isinstance(v, (int, float, str, bool)) or v is None}
    if hasattr(value, "metrics"):
        scalars = {**value.metrics, **{k: v for k, v in value.info.items() if isinstance(v, (int, float, str))}}
    try:
        (directory / VALUE).write_text(json.dumps(scalars))
    except TypeError:
        (directory / VALUE).write_text("null")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="raystack.workflow.argo_step")
    p.add_argument("--fn", required=True)
    p.add_argument("--step", required=True)
    p.add_argument("--workflow", default="workflow")
    p.add_argument("--param", action="append", default=[], metavar="NAME=JSON")
    p.add_argument("--input", action="append", default=[], metavar="NAME[INDEX]=PATH")
    p.add_argument("--loop", default=None, help="the step's bounded loop as JSON")
    p.add_argument("--allow", action="append", default=[])
    p.add_argument("--out", default=OUT_DIR)
    a = p.parse_args(argv)
    fn = resolve(a.fn, None, a.allow)
    kwargs: dict[str, Any] = {}
    for item in a.param:
        name, _, text = item.partition("=")
        kwargs[name] = json.loads(text)
    lists: dict[str, dict[int, Any]] = {}
    for item in a.input:
        name, _, path = item.partition("=")
        value = read_artifact(Path(path))
        if name.endswith("]"):
            base, _, idx = name[:-1].partition("[")
            lists.setdefault(base, {})[int(idx)] = value
        else:
            kwargs[name] = value
    for base, items in lists.items():
        kwargs[base] = [items[i] for i in sorted(items)]
    ctx = new_context(a.workflow, out_dir=str(Path(a.out) / "files")).for_step(a.step, None)
    kwargs.update(runner_kwargs(fn, ctx))
    if a.loop:
        lp = Loop(**json.loads(a.loop))
        out = None
        for _ in range(lp.max_iterations):
            out = fn(**kwargs)
            if lp.done(out):
                break
            if lp.carry:
                kwargs[lp.carry] = out
    else:
        out = fn(**kwargs)
    write_artifact(Path(a.out), out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
