"""Typed configuration: load YAML files or dicts into dataclasses, validated up front.

Every job in raystack has one config dataclass. `load_config` fills it from a YAML path or a
dict, checks every field's type against the dataclass annotations, and then calls the
`validate()` method of each dataclass that defines one. Any problem raises `ConfigError`
naming the dotted field path and what was expected, before any actor starts.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence, TypeVar, Union

import yaml

T = TypeVar("T")


class ConfigError(ValueError):
    """A config value is missing, unknown or wrong; `field` is the dotted path to it."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)

    def __reduce__(self):  # keep both fields through pickling and copying (Ray, Tune)
        return (type(self), (self.field, self.message))


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(tp))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if tp is type(None):
        return "null"
    return getattr(tp, "__name__", str(tp))


def _convert(value: Any, tp: Any, field: str) -> Any:
    """Check `value` against annotation `tp`, converting where it is lossless (int -> float)."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin is Literal:
        if value in typing.get_args(tp):
            return value
        raise ConfigError(field, f"expected {_type_name(tp)}, got {value!r}")
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, field)
            except ConfigError as exc:
                errors.append(exc)
        raise ConfigError(field, f"expected {_type_name(tp)}, got {type(value).__name__} {value!r}")
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(field, f"expected a mapping for {tp.__name__}, got {type(value).__name__} {value!r}")
        return _build(tp, value, field)
    if origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(field, f"expected {_type_name(tp)}, got {type(value).__name__} {value!r}")
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                raise ConfigError(field, f"expected {len(args)} items, got {len(value)}")
            return tuple(_convert(v, a, f"{field}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
        item = args[0] if args else Any
        items = [_convert(v, item, f"{field}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if (origin is tuple or tp is tuple) else items
    if origin in (dict, typing.Mapping) or tp is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(field, f"expected {_type_name(tp)}, got {type(value).__name__} {value!r}")
        args = typing.get_args(tp)
        kt, vt = args if args else (Any, Any)
        return {_convert(k, kt, f"{field}.{k}"): _convert(v, vt, f"{field}.{k}") for k, v in value.items()}
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(field, f"expected float, got {type(value).__name__} {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(field, f"expected int, got {type(value).__name__} {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(field, f"expected bool, got {type(value).__name__} {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(field, f"expected str, got {type(value).__name__} {value!r}")
        return value
    if tp is Path:
        if not isinstance(value, (str, Path)):
            raise ConfigError(field, f"expected a path string, got {type(value).__name__} {value!r}")
        return Path(value)
    if isinstance(tp, type) and not isinstance(value, tp):
        raise ConfigError(field, f"expected {_type_name(tp)}, got {type(value).__name__} {value!r}")
    return value


def _build(cls: type[T], data: Mapping[str, Any], prefix: str) -> T:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = [k for k in data if k not in fields]
    if unknown:
        where = f"{prefix}.{unknown[0]}" if prefix else str(unknown[0])
        raise ConfigError(where, f"unknown field; {cls.__name__} has: {', '.join(sorted(fields))}")
    kwargs = {}
    for name, value in data.items():
        path = f"{prefix}.{name}" if prefix else name
        kwargs[name] = _convert(value, hints[name], path)
    missing = [
        n for n, f in fields.items()
        if n not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        where = f"{prefix}.{missing[0]}" if prefix else missing[0]
        raise ConfigError(where, "required field is missing")
    return cls(**kwargs)


def _validate_tree(obj: Any, prefix: str = "") -> None:
    """Call `validate()` on every dataclass in the tree, children first, prefixing field paths."""
    if not dataclasses.is_dataclass(obj):
        return
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        path = f"{prefix}.{f.name}" if prefix else f.name
        if dataclasses.is_dataclass(value):
            _validate_tree(value, path)
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                _validate_tree(item, f"{path}[{i}]")
    validate = getattr(obj, "validate", None)
    if callable(validate):
        try:
            validate()
        except ConfigError as exc:
            # validate() names fields relative to its own dataclass; make the path absolute.
            if prefix:
                raise ConfigError(f"{prefix}.{exc.field}" if exc.field else prefix, exc.message) from None
            raise


def _deep_merge(base: dict, overrides: Mapping[str, Any]) -> dict:
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


def read_yaml(path: str | Path) -> dict:
    """Read a YAML mapping from `path`, with errors that name the file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("", f"config file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError("", f"{path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("", f"{path} must hold a mapping at the top level, got {type(data).__name__}")
    return data


def load_config(cls: type[T], source: str | Path | Mapping[str, Any] | None = None,
                overrides: Mapping[str, Any] | None = None) -> T:
    """Build a validated `cls` from a YAML path, a dict, or None (all defaults).

    `overrides` (a nested dict, e.g. from the command line) is merged over the source.
    """
    if source is None:
        data: dict = {}
    elif isinstance(source, Mapping):
        data = dict(source)
    else:
        data = read_yaml(source)
    if overrides:
        data = _deep_merge(data, overrides)
    obj = _build(cls, data, "")
    _validate_tree(obj)
    return obj


def config_to_dict(obj: Any) -> Any:
    """A plain dict/list/scalar tree of a config (Paths become strings), ready for YAML/JSON."""
    if dataclasses.is_dataclass(obj):
        return {f.name: config_to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [config_to_dict(v) for v in obj]
    if isinstance(obj, dict):
        return {k: config_to_dict(v) for k, v in obj.items()}
    if isinstance(obj, Path):
        return str(obj)
    return obj


def save_config(obj: Any, path: str | Path) -> Path:
    """Write a config as YAML; `load_config(type(obj), path)` reads it back equal."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config_to_dict(obj), sort_keys=False))
    return path


def parse_overrides(items: Sequence[str]) -> dict:
    """Command-line ``a.b=VALUE`` items as a nested dict for `load_config`'s ``overrides``
    (each VALUE parsed as YAML, so ``3`` is an int and ``[1, 2]`` a list)."""
    out: dict = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(item, "overrides look like FIELD=VALUE, e.g. sync.h=8")
        key, value = item.split("=", 1)
        *parents, leaf = key.strip().split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = yaml.safe_load(value)
    return out
