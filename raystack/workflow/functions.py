"""Step functions: their ``module:qualname`` path, which ones a workflow may name, and parameter
type checks.

An IR or plan names functions as text, so naming must not be a way to run arbitrary code:
:func:`resolve` imports a function only from the step catalog's modules or from modules the user
listed (``allow_modules`` in the workflow config, or ``allow=`` in the Python API); any other
``module:function`` (``os:system``) is refused before anything runs. Functions handed over as
objects by a Python workflow (the registry) are the user's own code and need no listing.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import typing
from typing import Any, Callable, Sequence

from raystack.workflow.ir import WorkflowError, is_ref, iter_refs


def fn_path(fn: Callable) -> str:
    """The importable ``module:qualname`` of a function."""
    return f"{fn.__module__}:{fn.__qualname__}"


# The step catalog's modules: importable by name from any workflow.
CATALOG_MODULES = ("raystack.workflow.steps", "raystack.workflow.table_steps",
                   "raystack.actors.workflow.parts", "raystack.apps.workflow_serve")


def permitted(module: str, allow: Sequence[str] = ()) -> bool:
    """True when functions of ``module`` may be imported by name: a catalog module, or one the
    user allowed (an exact module name, or ``pkg.*`` for a package and everything under it)."""
    for a in (*CATALOG_MODULES, *allow):
        if a.endswith(".*"):
            if module == a[:-2] or module.startswith(a[:-1]):
                return True
        elif module == a:
            return True
    return False


def resolve(path: str, registry: dict[str, Callable] | None = None,
            allow: Sequence[str] = ()) -> Callable:
    """The function behind ``module:qualname``: from ``registry`` first, else imported if its
    module is a catalog module or in ``allow``; WorkflowError otherwise."""
    if registry and path in registry:
        return registry[path]
    if not isinstance(path, str) or ":" not in path:
        raise WorkflowError("", f"step function {path!r} is not of the form 'module:qualname'")
    mod_name, qual = path.split(":", 1)
    if not permitted(mod_name, allow):
        raise WorkflowError("", f"step function {path!r} is not in the step catalog and its "
                            f"module {mod_name!r} is not in allow_modules; list the module in "
                            "the workflow config to run its functions")
    if qual.startswith("_") or any(p.startswith("__") for p in qual.split(".")):
        raise WorkflowError("", f"step function {path!r}: private names cannot be steps")
    try:
        obj: Any = sys.modules.get(mod_name) or importlib.import_module(mod_name)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise WorkflowError("", f"cannot import step function {path!r}: {e}") from e
    return obj


def step_options(fn: Callable) -> dict[str, Any]:
    """Options a function was decorated with (``@raystack.workflow.step(...)``)."""
    return dict(getattr(fn, "__raystack_step_options__", {}))


def has_side_effect(fn: Callable) -> bool:
    """True for functions marked as changing the world outside the run."""
    return bool(step_options(fn).get("side_effect", False))


def _matches(value: Any, tp: Any) -> bool:
    """Loose run-time check of a JSON-ish value against a type annotation."""
    if tp is Any or tp is inspect.Parameter.empty or isinstance(tp, (str, typing.TypeVar)):
        return True
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        return any(_matches(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if tp is type(None):
        return value is None
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (list, tuple, set, frozenset):
        if not isinstance(value, (list, tuple)):
            return False
        if args and origin is list:
            return all(_matches(v, args[0]) for v in value if not is_ref(v))
        return True
    if origin is dict:
        return isinstance(value, dict)
    if origin is not None:
        return True
    try:
        return isinstance(value, tp)
    except TypeError:
        return True


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def check_params(step_id: str, fn: Callable, params: dict[str, Any],
                 provided_later: tuple[str, ...] = ()) -> None:
    """Raise WorkflowError if a parameter is unknown, missing or of the wrong type.

    References (step outputs) are checked for presence only: their values exist at run time.
    """
    from raystack.workflow.context import RESERVED_PARAMS
    for name in params:
        if name in RESERVED_PARAMS:
            raise WorkflowError(step_id, f"parameter {name!r} is set by the runner, not by a "
                                "workflow")
    sig = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable forward refs: check presence only
        hints = {}
    has_kwargs = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    for name in params:
        if name not in sig.parameters and not has_kwargs:
            raise WorkflowError(step_id, f"unknown parameter {name!r} for {fn.__qualname__}"
                                f"; it takes {list(sig.parameters)}")
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        if name not in params:
            if p.default is p.empty and name not in provided_later and name not in RESERVED_PARAMS:
                raise WorkflowError(step_id, f"missing input {name!r} for {fn.__qualname__}")
            continue
        v = params[name]
        if is_ref(v) or any(True for _ in iter_refs(v)):
            continue
        tp = hints.get(name, p.annotation)
        if not _matches(v, tp):
            raise WorkflowError(step_id, f"parameter {name!r} = {v!r} has type "
                                f"{type(v).__name__}; expected {_type_name(tp)}")
