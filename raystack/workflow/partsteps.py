"""Catalog steps generated from a part's own config dataclass (EDiTConfig, MLoRAConfig,
ElasticConfig): every config field becomes a typed, documented keyword parameter of the step,
checked by the part's own validation when the workflow is built.

A nested section (``sync``, ``data``, ``resources``...) is one ``dict`` parameter holding that
section's fields; a field left out keeps the part's default. The step's docstring lists every
field with its type, default and the comment beside it in the config's source. The function
that runs the part is supplied by the caller (the part drivers live in ``actors``).
"""

from __future__ import annotations

import dataclasses
import inspect
import io
import tokenize
import typing
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from raystack.config import ConfigError, load_config

OPTION_CHECK = "check"          # step option: validates the literal parameters at build time


@dataclass(frozen=True)
class PartField:
    """One config field as a step parameter."""

    name: str
    type: Any                   # the annotation the step declares (a section: dict)
    default: Any                # the part's default (for the docs)
    doc: str
    section: bool = False       # a nested dataclass, given as a dict of its fields


def field_docs(cls: type) -> dict[str, str]:
    """The trailing ``# comment`` of each field in a dataclass's source (empty when none)."""
    try:
        src = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    docs: dict[str, str] = {}
    names = {f.name for f in dataclasses.fields(cls)}
    line_field: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.NAME and tok.string in names and tok.start[1] == 4:
            line_field.setdefault(tok.start[0], tok.string)
        elif tok.type == tokenize.COMMENT and tok.start[0] in line_field:
            docs[line_field[tok.start[0]]] = tok.string.lstrip("# ").strip()
    return docs


def _as_plain(tp: Any) -> Any:
    """The annotation a step parameter declares for a config type: dataclasses as dicts."""
    if dataclasses.is_dataclass(tp):
        return dict
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (list, tuple) and args and any(dataclasses.is_dataclass(a) for a in args):
        return list[dict]
    return tp


def part_fields(cls: type) -> list[PartField]:
    """The step parameters of a config dataclass, in declaration order."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        tp = hints[f.name]
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        section = dataclasses.is_dataclass(tp)
        doc = docs.get(f.name) or (inspect.getdoc(tp).split("\n")[0] if section and tp.__doc__ else "")
        out.append(PartField(f.name, _as_plain(tp),
                             _plain_default(default), doc, section))
    return out


def _plain_default(v: Any) -> Any:
    if dataclasses.is_dataclass(v):
        return dataclasses.asdict(v)
    if isinstance(v, list):
        return [_plain_default(x) for x in v]
    return v


def config_from_params(cls: type, params: Mapping[str, Any], base: Mapping[str, Any] | None = None):
    """The part's validated config: ``base`` fields, then the step's parameters over them
    (None means "the part's default"). Raises ConfigError naming the field."""
    merged: dict[str, Any] = dict(base or {})
    for k, v in params.items():
        if v is None:
            continue
        if isinstance(v, Mapping) and isinstance(merged.get(k), Mapping):
            merged[k] = {**merged[k], **v}
        else:
            merged[k] = v
    return load_config(cls, merged)


def make_part_step(name: str, module: str, cls: type,
                   run: Callable[..., Any], *, summary: str,
                   inputs: Mapping[str, tuple[Any, str]] | None = None,
                   returns: str = "") -> Callable[..., Any]:
    """A step function ``name(<inputs>, <every field of cls>, run_context=None)`` that builds
    the part's config from its parameters and calls ``run(cfg, inputs, run_context)``.

    ``inputs``: extra parameters (name -> (annotation, doc)) for artifacts from upstream steps;
    they are handed to ``run`` and are not config fields.
    """
    fields = part_fields(cls)
    inputs = dict(inputs or {})
    field_names = [f.name for f in fields if f.name not in inputs]
    # inputs that are also config fields (mLoRA's base): a literal value is a config field
    dual = {f.name for f in fields if f.name in inputs}

    def config_params(values: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: values.get(k) for k in field_names}
        out.update({k: values[k] for k in dual if isinstance(values.get(k), (str, int, float))})
        return out

    def part_step(**kwargs: Any) -> Any:
        ctx = kwargs.pop("run_context", None)
        cfg = config_from_params(cls, config_params(kwargs))
        given = {k: kwargs[k] for k in inputs if kwargs.get(k) is not None}
        return run(cfg, given, ctx)

    params = [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=tp)
              for k, (tp, _) in inputs.items()]
    annotations: dict[str, Any] = {k: tp for k, (tp, _) in inputs.items()}
    lines = [summary]
    if inputs:
        lines += ["", "Inputs:"] + [f"  {k}: {doc}" for k, (_, doc) in inputs.items()]
    lines += ["", f"Parameters (fields of {cls.__name__}; None keeps the part's default):"]
    for f in fields:
        if f.name in inputs:
            continue
        tp = Optional[f.type]
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=tp))
        annotations[f.name] = tp
        kind = "dict of the section's fields" if f.section else _type_text(f.type)
        lines.append(f"  {f.name} ({kind}, default {f.default!r}): {f.doc}".rstrip(": "))
    params.append(inspect.Parameter("run_context", inspect.Parameter.KEYWORD_ONLY, default=None))
    if returns:
        lines += ["", f"Returns {returns}"]
    part_step.__name__ = part_step.__qualname__ = name
    part_step.__module__ = module
    part_step.__doc__ = "\n".join(lines)
    part_step.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    part_step.__annotations__ = annotations

    def check(literals: Mapping[str, Any]) -> None:
        try:
            config_from_params(cls, config_params(literals))
        except ConfigError as e:
            raise ConfigError(f"{name}.{e.field}" if e.field else name, e.message) from None
    part_step.__raystack_step_options__ = {OPTION_CHECK: check}  # type: ignore[attr-defined]
    part_step.__raystack_part__ = cls  # type: ignore[attr-defined]
    return part_step


def _type_text(tp: Any) -> str:
    if typing.get_origin(tp) is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
