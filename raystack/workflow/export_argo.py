"""Export the IR to an Argo Workflows manifest that runs (the original Couler target). Pure.

Every step is a ``container`` template running ``python -m raystack.workflow.argo_step`` in
the project's image (``DEFAULT_IMAGE``, built from the repository's Dockerfile; ``image=`` for
another). Literal parameters are typed Argo input parameters holding JSON (an int stays an
int, a list a list); outputs travel as Argo artifacts: the step's output as a file in a data
format (``result``, a directory with ``data`` and ``format``) plus its scalars as an output
parameter (``value``) for ``when`` expressions. A reference to an upstream output becomes an
input artifact taken from that task, a list of references one input artifact per element.
The ``main`` DAG carries dependencies, ``when`` on upstream values, ``retryStrategy``,
``activeDeadlineSeconds`` and resources; exit handlers run under ``onExit``; a bounded loop
runs inside its step's container, as it does on Ray.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

import yaml

from raystack.workflow.argo_step import IN_DIR, OUT_DIR, RESULT, VALUE
from raystack.workflow.ir import (Condition, Ref, StepSpec, WorkflowIR, as_ref, is_ref,
                                  iter_refs, topo_order)

DEFAULT_IMAGE = "raystack:0.1.0"        # docker build -t raystack:0.1.0 .  (the repo's Dockerfile)
_ARGO_OPS = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _name(step_id: str) -> str:
    """An Argo/DNS-safe name for a step id."""
    n = re.sub(r"[^a-z0-9-]+", "-", step_id.lower()).strip("-")
    return n[:60] or "step"


def _value_expr(ref: Ref) -> str:
    task = _name(ref.step)
    if ref.key is None:
        return f"fromJSON(tasks['{task}'].outputs.parameters.value)"
    return f"jsonpath(tasks['{task}'].outputs.parameters.value, '$.{ref.key}')"


def _when(conds: list[Condition]) -> str | None:
    parts = []
    for c in conds:
        lhs = _value_expr(c.ref)
        if c.op == "truthy":
            expr = f"{lhs} == true"
        elif c.op == "falsy":
            expr = f"{lhs} == false"
        else:
            expr = f"{lhs} {_ARGO_OPS[c.op]} {json.dumps(c.value)}"
        parts.append(f"!({expr})" if c.negate else expr)
    return "{{=" + " && ".join(parts) + "}}" if parts else None


def _inputs(step: StepSpec) -> tuple[list[tuple[str, Any]], list[tuple[str, Ref]]]:
    """(literal params, artifact inputs as (argument name, ref)) of a step."""
    literals, arts = [], []
    for k, v in step.params.items():
        if is_ref(v):
            arts.append((k, as_ref(v)))
        elif isinstance(v, list) and v and all(is_ref(x) for x in v):
            arts += [(f"{k}[{i}]", as_ref(x)) for i, x in enumerate(v)]
        elif any(True for _ in iter_refs(v)):
            raise ValueError(f"step {step.id!r}: parameter {k!r} mixes references and literals; "
                             "Argo export needs a reference or a list of references")
        else:
            literals.append((k, v))
    return literals, arts


def _art_name(arg: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", arg.lower()).strip("-")


def _template(step: StepSpec, image: str, workflow: str, allow: Sequence[str]) -> dict:
    literals, arts = _inputs(step)
    args = ["-m", "raystack.workflow.argo_step", "--fn", step.fn, "--step", step.id,
            "--workflow", workflow]
    params = []
    for k, v in literals:
        params.append({"name": f"p-{_art_name(k)}", "value": json.dumps(v)})
        args += ["--param", f"{k}={{{{inputs.parameters.p-{_art_name(k)}}}}}"]
    in_arts = []
    for arg, _ref in arts:
        path = f"{IN_DIR}/{_art_name(arg)}"
        in_arts.append({"name": _art_name(arg), "path": path})
        args += ["--input", f"{arg}={path}"]
    if step.loop is not None:
        lp = step.loop
        args += ["--loop", json.dumps({"max_iterations": lp.max_iterations, "carry": lp.carry,
                                       "until_key": lp.until_key, "until_op": lp.until_op,
                                       "until_value": lp.until_value})]
    for m in allow:
        args += ["--allow", m]
    t: dict[str, Any] = {"name": _name(step.id), "inputs": {}, "outputs": {
        "artifacts": [{"name": RESULT, "path": f"{OUT_DIR}/{RESULT}"}],
        "parameters": [{"name": "value", "valueFrom": {"path": f"{OUT_DIR}/{VALUE}"}}]},
        "container": {"image": image, "command": ["python"], "args": args}}
    if params:
        t["inputs"]["parameters"] = params
    if in_arts:
        t["inputs"]["artifacts"] = in_arts
    if not t["inputs"]:
        del t["inputs"]
    res = {}
    if step.resources.get("num_cpus"):
        res["cpu"] = str(step.resources["num_cpus"])
    if step.resources.get("num_gpus"):
        res["nvidia.com/gpu"] = str(int(step.resources["num_gpus"]))
    if step.resources.get("memory"):
        res["memory"] = str(int(step.resources["memory"]))
    if res:
        t["container"]["resources"] = {"requests": res, "limits": dict(res)}
    if step.retries:
        t["retryStrategy"] = {"limit": str(step.retries), "retryPolicy": "Always"}
    if step.timeout_s:
        t["activeDeadlineSeconds"] = int(step.timeout_s)
    return t


def _source_expr(step_id: str, by_id: dict[str, StepSpec]) -> str:
    """The expression of a task's output artifact; for a step that hands its input on when
    skipped (``passthrough``), that input's when the task was Skipped."""
    own = f"tasks['{_name(step_id)}'].outputs.artifacts['{RESULT}']"
    s = by_id.get(step_id)
    if s is None or s.passthrough is None:
        return own
    upstream = _source_expr(s.params[s.passthrough].step, by_id)
    return f"(tasks['{_name(step_id)}'].status == 'Skipped' ? {upstream} : {own})"


def _artifact_arg(arg: str, ref: Ref, by_id: dict[str, StepSpec]) -> dict:
    src = by_id.get(ref.step)
    if src is not None and src.passthrough is not None:
        return {"name": _art_name(arg), "fromExpression": _source_expr(ref.step, by_id)}
    return {"name": _art_name(arg), "from": f"{{{{tasks.{_name(ref.step)}.outputs.artifacts.{RESULT}}}}}"}


def _task(step: StepSpec, with_deps: bool = True, by_id: dict[str, StepSpec] | None = None) -> dict:
    literals, arts = _inputs(step)
    task: dict[str, Any] = {"name": _name(step.id), "template": _name(step.id)}
    arguments: dict[str, Any] = {}
    if literals:
        arguments["parameters"] = [{"name": f"p-{_art_name(k)}", "value": json.dumps(v)}
                                   for k, v in literals]
    if arts:
        arguments["artifacts"] = [_artifact_arg(arg, ref, by_id or {}) for arg, ref in arts]
    if arguments:
        task["arguments"] = arguments
    deps = [_name(d) for d in step.deps()]
    if deps and with_deps:
        task["dependencies"] = deps
    w = _when(step.when)
    if w:
        task["when"] = w
    return task


def to_argo(ir: WorkflowIR, image: str = DEFAULT_IMAGE, namespace: str | None = None,
            allow: Sequence[str] = ()) -> dict:
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
                            "templates": [{"name": "main", "dag": {"tasks": [_task(s, by_id=by_id) for s in main]}}]}
    spec["templates"] += [_template(s, image, ir.name, allow) for s in main + exits]
    if exits:
        spec["onExit"] = "exit-handler"
        tasks = []
        for s in exits:
            t = _task(s, with_deps=False, by_id=by_id)
            if s.exit == "failure":
                t["when"] = "{{workflow.status}} != Succeeded"
            elif s.exit == "success":
                t["when"] = "{{workflow.status}} == Succeeded"
            tasks.append(t)
        spec["templates"].append({"name": "exit-handler", "steps": [[t] for t in tasks]})
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": meta,
            "spec": spec}


def to_argo_yaml(ir: WorkflowIR, image: str = DEFAULT_IMAGE, namespace: str | None = None,
                 allow: Sequence[str] = ()) -> str:
    """The Argo manifest as YAML text (stable key order, for golden files)."""
    return yaml.safe_dump(to_argo(ir, image, namespace, allow), sort_keys=False, width=100)
