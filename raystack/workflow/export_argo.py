"""Export the IR to an Argo Workflows manifest (the original Couler target). Pure function.

Each step becomes a ``script`` template running its Python function in a container, with
its literal parameters as Argo input parameters; the ``main`` template is a DAG whose tasks
carry ``dependencies``, ``when`` expressions on upstream results, ``retryStrategy``,
``activeDeadlineSeconds`` and resource requests. Exit handlers go under ``onExit``. A bounded
loop runs inside its step's script (as it does on Ray).
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from raystack.workflow.ir import Condition, StepSpec, WorkflowIR, is_ref, iter_refs, topo_order

DEFAULT_IMAGE = "python:3.11-slim"
_ARGO_OPS = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _name(step_id: str) -> str:
    """An Argo/DNS-safe name for a step id."""
    n = re.sub(r"[^a-z0-9-]+", "-", step_id.lower()).strip("-")
    return n[:60] or "step"


def _result(ref_step: str) -> str:
    return "{{tasks.%s.outputs.result}}" % _name(ref_step)


def _when(conds: list[Condition]) -> str | None:
    parts = []
    for c in conds:
        lhs = _result(c.ref.step)
        if c.ref.key is not None:
            lhs = "{{=jsonpath(tasks['%s'].outputs.result, '$.%s')}}" % (_name(c.ref.step), c.ref.key)
        if c.op == "truthy":
            expr = f"{lhs} == true"
        elif c.op == "falsy":
            expr = f"{lhs} == false"
        else:
            expr = f"{lhs} {_ARGO_OPS[c.op]} {json.dumps(c.value)}"
        parts.append(f"!({expr})" if c.negate else expr)
    return " && ".join(parts) if parts else None


def _script(step: StepSpec, image: str) -> str:
    mod, qual = step.fn.split(":", 1)
    lines = [
        "import json, sys",
        f"from {mod} import {qual.split('.')[0]} as _f",
        "params = json.loads(sys.argv[1])",
    ]
    if step.loop is not None:
        lp = step.loop
        x = f"out[{lp.until_key!r}]" if lp.until_key is not None else "out"
        test = {"truthy": f"bool({x})", "falsy": f"not {x}"}.get(
            lp.until_op, f"{x} {lp.until_op} {lp.until_value!r}")
        lines += [f"for _i in range({lp.max_iterations}):", "    out = _f(**params)",
                  f"    if {test}:", "        break"]
        if lp.carry:
            lines.append(f"    params[{lp.carry!r}] = out")
    else:
        lines.append("out = _f(**params)")
    lines.append("print(json.dumps(out, default=str))")
    return "\n".join(lines) + "\n"


def _param_value(v: Any) -> str:
    if is_ref(v):
        from raystack.workflow.ir import as_ref
        return _result(as_ref(v).step)
    if isinstance(v, (list, dict)) and any(True for _ in iter_refs(v)):
        from raystack.workflow.ir import map_refs
        return json.dumps(map_refs(v, lambda r: _result(r.step)))
    return json.dumps(v)


def _template(step: StepSpec, image: str) -> dict:
    t: dict[str, Any] = {
        "name": _name(step.id),
        "inputs": {"parameters": [{"name": "params"}]},
        "script": {"image": image, "command": ["python"],
                   "args": ["{{inputs.parameters.params}}"], "source": _script(step, image)},
    }
    res = {}
    if step.resources.get("num_cpus"):
        res["cpu"] = str(step.resources["num_cpus"])
    if step.resources.get("num_gpus"):
        res["nvidia.com/gpu"] = str(int(step.resources["num_gpus"]))
    if step.resources.get("memory"):
        res["memory"] = str(int(step.resources["memory"]))
    if res:
        t["script"]["resources"] = {"requests": res, "limits": dict(res)}
    if step.retries:
        t["retryStrategy"] = {"limit": str(step.retries), "retryPolicy": "Always"}
    if step.timeout_s:
        t["activeDeadlineSeconds"] = int(step.timeout_s)
    return t


def _task(step: StepSpec) -> dict:
    params = "{" + ", ".join(f"{json.dumps(k)}: {_param_value(v)}"
                             for k, v in step.params.items()) + "}"
    task: dict[str, Any] = {"name": _name(step.id), "template": _name(step.id),
                            "arguments": {"parameters": [{"name": "params", "value": params}]}}
    deps = [_name(d) for d in step.deps()]
    if deps:
        task["dependencies"] = deps
    w = _when(step.when)
    if w:
        task["when"] = w
    return task


def to_argo(ir: WorkflowIR, image: str = DEFAULT_IMAGE, namespace: str | None = None) -> dict:
    """The Argo ``Workflow`` manifest (a dict) for ``ir``."""
    by_id = ir.by_id()
    order = topo_order(ir)
    main = [by_id[s] for s in order if by_id[s].exit is None]
    exits = [by_id[s] for s in order if by_id[s].exit is not None]
    meta: dict[str, Any] = {"generateName": _name(ir.name) + "-",
                            "labels": {"raystack.io/ir-version": str(ir.version)}}
    if namespace:
        meta["namespace"] = namespace
    spec: dict[str, Any] = {"entrypoint": "main",
                            "templates": [{"name": "main", "dag": {"tasks": [_task(s) for s in main]}}]}
    spec["templates"] += [_template(s, image) for s in main + exits]
    if exits:
        spec["onExit"] = "exit-handler"
        tasks = []
        for s in exits:
            t = _task(s)
            t.pop("dependencies", None)
            if s.exit == "failure":
                t["when"] = "{{workflow.status}} != Succeeded"
            elif s.exit == "success":
                t["when"] = "{{workflow.status}} == Succeeded"
            tasks.append(t)
        spec["templates"].append({"name": "exit-handler", "steps": [[t] for t in tasks]})
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": meta,
            "spec": spec}


def to_argo_yaml(ir: WorkflowIR, image: str = DEFAULT_IMAGE, namespace: str | None = None) -> str:
    """The Argo manifest as YAML text (stable key order, for golden files)."""
    return yaml.safe_dump(to_argo(ir, image, namespace), sort_keys=False, width=100)
