"""Step functions: their ``module:qualname`` path, code fingerprint and parameter type checks."""

from __future__ import annotations

import hashlib
import importlib
import inspect
import sys
import textwrap
import typing
from typing import Any, Callable

from raystack.workflow.ir import WorkflowError, is_ref, iter_refs


def fn_path(fn: Callable) -> str:
    """The importable ``module:qualname`` of a function."""
    return f"{fn.__module__}:{fn.__qualname__}"


def resolve(path: str, registry: dict[str, Callable] | None = None) -> Callable:
    """The function behind ``module:qualname`` (from ``registry`` first, else by import)."""
    if registry and path in registry:
        return registry[path]
    if ":" not in path:
        raise WorkflowError("", f"step function {path!r} is not of the form 'module:qualname'")
    mod_name, qual = path.split(":", 1)
    try:
        obj: Any = sys.modules.get(mod_name) or importlib.import_module(mod_name)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise WorkflowError("", f"cannot import step function {path!r}: {e}") from e
    return obj


def code_fingerprint(fn: Callable) -> str:
    """A hash of the function's source (or bytecode when the source is unavailable).

    Changes when the step's code changes; independent of line numbers and file location.
    """
    target = inspect.unwrap(fn)
    try:
        src = textwrap.dedent(inspect.getsource(target))
        payload = src.encode()
    except (OSError, TypeError):
        code = getattr(target, "__code__", None)
        payload = (code.co_code + repr(code.co_consts).encode()) if code else repr(target).encode()
    return hashlib.sha256(payload).hexdigest()[:16]


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
            if p.default is p.empty and name not in provided_later:
                raise WorkflowError(step_id, f"missing input {name!r} for {fn.__qualname__}")
            continue
        v = params[name]
        if is_ref(v) or any(True for _ in iter_refs(v)):
            continue
        tp = hints.get(name, p.annotation)
        if not _matches(v, tp):
            raise WorkflowError(step_id, f"parameter {name!r} = {v!r} has type "
                                f"{type(v).__name__}; expected {_type_name(tp)}")
