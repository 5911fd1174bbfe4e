"""A config as people read it: commented YAML and Markdown tables, from the field declarations.

`configs/<part>.yaml`, ``raystack <part> --print-config`` and the config tables in
`docs/<part>.md` are all generated here from the one source, the :func:`raystack.config.option`
declarations (default, one-line doc, range) of each part's dataclasses, so they cannot drift
apart; `tests/foundation/test_config_files.py` compares the files with these functions.
"""
from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal, Sequence

from raystack.config import dump_yaml, field_bounds, field_doc

COMMENT_COLUMN = 40  # YAML comments start here (or two spaces after a longer line)


def scalar(value: Any) -> str:
    """One YAML scalar or flow collection, readable back by any YAML 1.1 or 1.2 loader."""
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:  # 1e-05 -> 1.0e-05 (YAML 1.1 needs the dot)
            mantissa, exp = text.split("e")
            text = f"{mantissa}.0e{exp}"
        return text
    if isinstance(value, (list, tuple, dict)):
        return dump_yaml(_plain(value), default_flow_style=True, width=10**6).strip()
    text = dump_yaml(value, default_flow_style=True, width=10**6)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return str(value) if hasattr(value, "__fspath__") else value


def _with_comment(line: str, doc: str) -> str:
    if not doc:
        return line
    return f"{line.ljust(max(COMMENT_COLUMN, len(line) + 2))}# {doc}"


def _yaml_lines(obj: Any, indent: int, out: list[str], docs: bool, first_prefix: str = "") -> None:
    pad = " " * indent
    for i, f in enumerate(dataclasses.fields(obj)):
        lead = (first_prefix if i == 0 and first_prefix else pad)
        value = getattr(obj, f.name)
        doc = field_doc(f) if docs else ""
        key = f"{lead}{f.name}:"
        if dataclasses.is_dataclass(value):
            out.append(_with_comment(key, doc))
            _yaml_lines(value, indent + 2, out, docs)
        elif isinstance(value, (list, tuple)) and value and all(dataclasses.is_dataclass(v) for v in value):
            out.append(_with_comment(key, doc))
            for k, item in enumerate(value):  # each item's fields are explained once, on the first
                _yaml_lines(item, indent + 4, out, docs and k == 0, first_prefix=f"{pad}  - ")
        else:
            out.append(_with_comment(f"{key} {scalar(value)}", doc))


def render_yaml(obj: Any, header: Sequence[str] = ()) -> str:
    """``obj`` as YAML with every field on its own line, commented with its doc; ``header``
    lines go first as comments. `load_config(type(obj), text)` reads it back equal."""
    out = [f"# {h}" if h else "#" for h in header]
    _yaml_lines(obj, 0, out, docs=True)
    return "\n".join(out) + "\n"


# -- Markdown ------------------------------------------------------------------------------

def _allowed(tp: Any, f: dataclasses.Field) -> str:
    bounds = field_bounds(f)
    if bounds is not None:
        return bounds.text()
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    literal = tp if typing.get_origin(tp) is Literal else next(
        (a for a in args if typing.get_origin(a) is Literal), None)
    if literal is not None:
        return ", ".join(str(a) for a in typing.get_args(literal))
    return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table_rows(cls: type, default: Any, prefix: str, rows: list[str]) -> None:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        path = f"{prefix}{f.name}"
        value = getattr(default, f.name)
        tp = hints[f.name]
        item = typing.get_args(tp)[0] if typing.get_origin(tp) is list and typing.get_args(tp) else None
        if dataclasses.is_dataclass(value):
            _table_rows(type(value), value, f"{path}.", rows)
        elif item is not None and dataclasses.is_dataclass(item):
            shown = f"{len(value)} entries" if value else "none"
            rows.append(f"| `{path}` | {shown} | | {_cell(field_doc(f))} |")
            _table_rows(item, item(), f"{path}[].", rows)
        else:
            rows.append(f"| `{path}` | `{_cell(scalar(value))}` | {_cell(_allowed(tp, f))} | "
                        f"{_cell(field_doc(f))} |")


def render_table(cls: type) -> str:
    """A Markdown table of every field of ``cls``: dotted name, default, allowed values, doc
    (``list[]`` rows describe each item of a list of sections)."""
    rows = ["| field | default | allowed | meaning |", "| --- | --- | --- | --- |"]
    _table_rows(cls, cls(), "", rows)
    return "\n".join(rows) + "\n"
