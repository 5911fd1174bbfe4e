"""Typed configuration: load YAML files or dicts into dataclasses, validated up front.

Every job in raystack has one config dataclass tree. Its fields are declared with
:func:`option` (default, one-line doc, allowed range); the docs, the commented YAML files in
``configs/`` and ``--print-config`` are generated from those declarations
(:mod:`raystack.config_render`). A config is checked whenever it is made: `load_config` from a
YAML path or a dict, or the dataclass constructor itself for classes deriving from
:class:`ConfigBase` (``EDiTConfig(mode="edti")`` raises). Checking covers every field's type
(converting where lossless: int -> float, an integral float -> int, a mapping -> a nested
config), NaN/inf, the declared range, and the ``validate()`` method of each dataclass that has
one (cross-field rules). All problems are collected and raised at once as one `ConfigError`
naming each dotted field, with "did you mean" for misspelt fields and choices.
"""
from __future__ import annotations

import contextvars
import dataclasses
import difflib
import functools
import math
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Sequence, TypeVar, Union

import yaml

T = TypeVar("T")

DOC = "doc"          # field metadata key: one line saying what the field holds
BOUNDS = "bounds"    # field metadata key: the allowed range of a number (or of each item)


class ConfigError(ValueError):
    """One or more config values are missing, unknown or wrong.

    ``field`` is the dotted path of the first problem, ``problems`` every (field, message)
    pair; ``str()`` is one line naming them all."""

    def __init__(self, field: str, message: str, problems: Sequence[tuple[str, str]] | None = None):
        self.field = field
        self.message = message
        self.problems = list(problems) if problems else [(field, message)]
        super().__init__(_describe(self.problems))

    def __reduce__(self):  # keep every field through pickling and copying (Ray, Tune)
        return (type(self), (self.field, self.message, self.problems))


def _describe(problems: Sequence[tuple[str, str]]) -> str:
    parts = [f"{f}: {m}" if f else m for f, m in problems]
    text = parts[0] if len(parts) == 1 else f"{len(parts)} problems: " + "; ".join(parts)
    return " ".join(text.split())  # one line, whatever the messages held


class Problems:
    """Collects (field, message) pairs so that every bad field is reported at once."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, field: str, message: str) -> None:
        if all(f != field for f, _ in self.items):  # one message per field: the first found
            self.items.append((field, message))

    def add_error(self, exc: ConfigError, prefix: str = "") -> None:
        """Add every problem of ``exc``, its fields taken relative to ``prefix``."""
        for f, m in exc.problems:
            self.add(_join(prefix, f), m)

    def __bool__(self) -> bool:
        return bool(self.items)

    def error(self, cls: type[ConfigError] = ConfigError) -> ConfigError:
        return cls(self.items[0][0], self.items[0][1], self.items)

    def raise_if_any(self, cls: type[ConfigError] = ConfigError) -> None:
        if self.items:
            raise self.error(cls)


def _join(prefix: str, field: str) -> str:
    if not prefix:
        return field
    if not field:
        return prefix
    return f"{prefix}{field}" if field.startswith("[") else f"{prefix}.{field}"


# -- field declarations ---------------------------------------------------------------------

@dataclass(frozen=True)
class Bounds:
    """An interval for a number: ``low``/``high`` with inclusive flags (None: unbounded)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def contains(self, x: float) -> bool:
        if self.low is not None and (x < self.low or (self.low_open and x == self.low)):
            return False
        if self.high is not None and (x > self.high or (self.high_open and x == self.high)):
            return False
        return True

    def text(self) -> str:
        lo = "-inf" if self.low is None else _num(self.low)
        hi = "inf" if self.high is None else _num(self.high)
        return f"{'(' if self.low_open or self.low is None else '['}{lo}, {hi}" \
               f"{')' if self.high_open or self.high is None else ']'}"


def _num(x: float) -> str:
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}".replace(",", "_") if abs(x) >= 100_000 else str(int(x))
    return f"{x:g}"


def option(default: Any = dataclasses.MISSING, doc: str = "", *, factory: Any = dataclasses.MISSING,
           ge: float | None = None, gt: float | None = None, le: float | None = None,
           lt: float | None = None) -> Any:
    """A config field: its default (or ``factory``), a one-line ``doc`` and, for numbers (or
    lists/dicts of numbers, item by item), the allowed range ``ge``/``gt`` .. ``le``/``lt``."""
    meta: dict[str, Any] = {DOC: doc}
    if any(b is not None for b in (ge, gt, le, lt)):
        meta[BOUNDS] = Bounds(low=gt if gt is not None else ge, high=lt if lt is not None else le,
                              low_open=gt is not None, high_open=lt is not None)
    if factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def field_doc(f: dataclasses.Field) -> str:
    return f.metadata.get(DOC, "")


def field_bounds(f: dataclasses.Field) -> Bounds | None:
    return f.metadata.get(BOUNDS)


# -- checking -------------------------------------------------------------------------------

_DEFER_CHECKS: contextvars.ContextVar[bool] = contextvars.ContextVar("raystack_defer_checks", default=False)


class ConfigBase:
    """Base of every part's config dataclasses: constructing one checks it (the whole tree
    below it), raising one `ConfigError` that names every bad field."""

    def __post_init__(self) -> None:
        if not _DEFER_CHECKS.get():
            check_config(self)


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    """A dataclass's resolved field annotations (resolved once per class)."""
    return typing.get_type_hints(cls)


def did_you_mean(word: Any, choices: Iterable[Any]) -> str:
    """`` (did you mean 'x'?)`` when ``word`` is close to one of ``choices``, else ``""``."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, [c for c in choices if isinstance(c, str)], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


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


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _got(value: Any) -> str:
    return f"got {type(value).__name__} {_shown(value)}"


def _convert(value: Any, tp: Any, field: str) -> Any:
    """Check `value` against annotation `tp`, converting where it is lossless (int -> float)."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin is Literal:
        choices = typing.get_args(tp)
        if any(value == c and type(value) is type(c) for c in choices):
            return value
        raise ConfigError(field, f"expected {_type_name(tp)}, got {_shown(value)}{did_you_mean(value, choices)}")
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
        if len(errors) == 1:  # Optional[X]: X's own message is the clearest
            raise ConfigError(field, errors[0].message.replace("expected ", "expected null or ", 1))
        raise ConfigError(field, f"expected {_type_name(tp)}, {_got(value)}")
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(field, f"expected a mapping for {tp.__name__}, {_got(value)}")
        problems = Problems()
        obj = _build(tp, value, field, problems)
        problems.raise_if_any()
        return obj
    if origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(field, f"expected {_type_name(tp)}, {_got(value)}")
        args = typing.get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                raise ConfigError(field, f"expected {len(args)} items, got {len(value)}")
            return tuple(_convert(v, a, f"{field}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
        item = args[0] if args else Any
        items = [_convert(v, item, f"{field}[{i}]") for i, v in enumerate(value)]
        if all(a is b for a, b in zip(items, value)) and type(value) is (tuple if origin is tuple or tp is tuple else list):
            return value
        return tuple(items) if (origin is tuple or tp is tuple) else items
    if origin in (dict, typing.Mapping) or tp is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(field, f"expected {_type_name(tp)}, {_got(value)}")
        args = typing.get_args(tp)
        kt, vt = args if args else (Any, Any)
        return {_convert(k, kt, f"{field}.{k}"): _convert(v, vt, f"{field}.{k}") for k, v in value.items()}
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(field, f"expected float, {_got(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(field, f"must be a finite number, got {value}")
        if isinstance(value, int) and abs(value) > 2**63:
            raise ConfigError(field, f"must be a finite number of sane size, got {_shown(value)}")
        return float(value)
    if tp is int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)  # 1e6 in YAML is a float; as an int it loses nothing
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(field, f"expected int, {_got(value)}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(field, f"expected bool, {_got(value)}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(field, f"expected str, {_got(value)}")
        if "\x00" in value:  # no name, path or id may hold one (the OS refuses it in paths)
            raise ConfigError(field, f"must not contain a NUL character, got {_shown(value)}")
        return value
    if tp is Path:
        if not isinstance(value, (str, Path)):
            raise ConfigError(field, f"expected a path string, {_got(value)}")
        return Path(value)
    if isinstance(tp, type) and not isinstance(value, tp):
        raise ConfigError(field, f"expected {_type_name(tp)}, {_got(value)}")
    return value


def _check_bounds(f: dataclasses.Field, value: Any, path: str, problems: Problems) -> None:
    bounds = field_bounds(f)
    if bounds is None or value is None:
        return
    if isinstance(value, Mapping):
        items = [(f"{path}.{k}", v) for k, v in value.items()]
    elif isinstance(value, (list, tuple)):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    else:
        items = [(path, value)]
    for where, x in items:
        if isinstance(x, (int, float)) and not isinstance(x, bool) and not bounds.contains(x):
            problems.add(where, f"must be in {bounds.text()}, got {_shown(x)}")


def _dataclass_type(tp: Any) -> Any:
    """The dataclass in ``tp`` (``X`` or ``Optional[X]``), else None."""
    if dataclasses.is_dataclass(tp):
        return tp
    if typing.get_origin(tp) in (Union, types.UnionType):
        found = [a for a in typing.get_args(tp) if dataclasses.is_dataclass(a)]
        return found[0] if len(found) == 1 else None
    return None


def _build(cls: type[T], data: Mapping[str, Any], prefix: str, problems: Problems) -> T:
    """``cls`` from a mapping, unchecked: unknown and missing fields go to ``problems``;
    nested mappings become nested configs; every value is checked later by `check_config`."""
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    kwargs = {}
    for name, value in data.items():
        path = _join(prefix, str(name))
        if name not in fields:
            problems.add(path, f"unknown field{did_you_mean(name, fields)}; {cls.__name__} has: "
                               f"{', '.join(sorted(fields))}")
            continue
        tp = hints[name]
        child = _dataclass_type(tp)
        item = typing.get_args(tp)[0] if typing.get_origin(tp) is list and typing.get_args(tp) else None
        if child is not None and isinstance(value, Mapping):
            value = _build(child, value, path, problems)
        elif item is not None and dataclasses.is_dataclass(item) and isinstance(value, list):
            value = [_build(item, v, f"{path}[{i}]", problems) if isinstance(v, Mapping) else v
                     for i, v in enumerate(value)]
        kwargs[name] = value
    for n, f in fields.items():
        if n not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            problems.add(_join(prefix, n), "required field is missing")
            kwargs[n] = None
    token = _DEFER_CHECKS.set(True)
    try:
        return cls(**kwargs)
    finally:
        _DEFER_CHECKS.reset(token)


def _check_tree(obj: Any, prefix: str, problems: Problems) -> bool:
    """Types, ranges, then ``validate()`` of every dataclass in the tree (children first).
    Returns whether the subtree's types were all right (``validate()`` runs only then)."""
    hints = _hints(type(obj))
    clean = True
    for f in dataclasses.fields(obj):
        path = _join(prefix, f.name)
        value = getattr(obj, f.name)
        try:
            new = _convert(value, hints[f.name], path)
        except ConfigError as exc:
            problems.add_error(exc)
            clean = False
            continue
        if new is not value:
            object.__setattr__(obj, f.name, new)
        _check_bounds(f, new, path, problems)
        if dataclasses.is_dataclass(new):
            clean &= _check_tree(new, path, problems)
        elif isinstance(new, (list, tuple)):
            for i, item in enumerate(new):
                if dataclasses.is_dataclass(item):
                    clean &= _check_tree(item, f"{path}[{i}]", problems)
    validate = getattr(obj, "validate", None)
    if clean and callable(validate):
        try:
            validate()
        except ConfigError as exc:  # validate() names fields relative to its own dataclass
            problems.add_error(exc, prefix)
    return clean


def check_config(obj: Any) -> Any:
    """Check a config object (types, ranges, cross-field rules) in place; raise one
    `ConfigError` naming every bad field. Returns ``obj``."""
    problems = Problems()
    _check_tree(obj, "", problems)
    problems.raise_if_any()
    return obj


def deep_merge(base: dict, overrides: Mapping[str, Any]) -> dict:
    """``base`` with ``overrides`` merged in, nested mappings key by key."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


# -- YAML -----------------------------------------------------------------------------------

class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, reading ``2e-4`` and ``1e5`` as numbers (YAML 1.2), not strings."""


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting strings such as ``'2e-4'`` that `load_yaml` reads as numbers."""


_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
for _cls in (_Loader, _Dumper):
    _cls.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789."))


def load_yaml(text: str) -> Any:
    """Parse YAML text safely, numbers in exponent form included (``lr: 2e-4`` is 0.0002)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 (a SafeLoader subclass)


def dump_yaml(data: Any, **options: Any) -> str:
    """``yaml.safe_dump`` whose output `load_yaml` reads back equal (``'2e-4'`` stays a string)."""
    return yaml.dump(data, Dumper=_Dumper, **options)


def read_yaml(path: str | Path) -> dict:
    """Read a YAML mapping from `path`, with errors that name the file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("", f"config file not found: {path}")
    try:
        data = load_yaml(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"{path} is not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("", f"{path} must hold a mapping at the top level, got {type(data).__name__}")
    return data


def load_config(cls: type[T], source: str | Path | Mapping[str, Any] | T | None = None,
                overrides: Mapping[str, Any] | None = None) -> T:
    """Build a checked `cls` from a YAML path, a dict, an instance, or None (all defaults).

    `overrides` (a nested dict, e.g. from the command line) is merged over the source. Every
    problem is raised at once, as one `ConfigError`."""
    if isinstance(source, cls):
        source = config_to_dict(source)
    if source is None:
        data: dict = {}
    elif isinstance(source, Mapping):
        data = dict(source)
    else:
        data = read_yaml(source)
    if overrides:
        data = deep_merge(data, overrides)
    problems = Problems()
    obj = _build(cls, data, "", problems)
    _check_tree(obj, "", problems)
    problems.raise_if_any()
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
    path.write_text(dump_yaml(config_to_dict(obj), sort_keys=False))
    return path


def parse_overrides(items: Sequence[str]) -> dict:
    """Command-line ``a.b=VALUE`` items as a nested dict for `load_config`'s ``overrides``
    (each VALUE parsed as YAML, so ``3`` is an int, ``2e-4`` a float and ``[1, 2]`` a list)."""
    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not p for p in key.split(".")):
            raise ConfigError(item, "overrides look like FIELD=VALUE, e.g. sync.h=8")
        if "[" in key:
            raise ConfigError(key, "--set takes dotted field names, not list items; set the whole list "
                                   "(e.g. tasks=[{...}]) or use --config")
        *parents, leaf = key.split(".")
        node = out
        for i, part in enumerate(parents):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(".".join(parents[:i + 1]), f"set both as a value and as a section in --set {item}")
            node = child
        try:
            node[leaf] = load_yaml(value)
        except yaml.YAMLError as exc:
            raise ConfigError(key, f"--set value {value!r} is not valid YAML: {exc}") from None
    return out
