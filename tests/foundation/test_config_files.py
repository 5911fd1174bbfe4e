"""configs/<part>.yaml, --print-config and the docs' config tables come from the field
declarations: every field is in them with its real default, and every number has a range."""
from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from raystack.config import field_bounds, field_doc, load_config, load_yaml
from raystack.config_render import render_table
from raystack.parts import PARTS, render_part_yaml, with_config_table

ROOT = Path(__file__).resolve().parents[2]


def _sections(cls: type) -> list[type]:
    """``cls`` and every config dataclass below it."""
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        out.append(c)
        for tp in typing.get_type_hints(c).values():
            for arg in (tp, *typing.get_args(tp)):
                if dataclasses.is_dataclass(arg) and arg not in out:
                    todo.append(arg)
    return out


@pytest.mark.parametrize("part", sorted(PARTS))
def test_config_file_is_the_generated_defaults(part):
    cls = PARTS[part].config_class()
    path = ROOT / "configs" / f"{part}.yaml"
    assert path.read_text() == render_part_yaml(part), f"run `python -m raystack.parts` to refresh {path}"
    assert load_config(cls, path) == cls()
    text = path.read_text()
    commented = {line.split(":")[0].strip(" -") for line in text.splitlines() if "#" in line.split(":", 1)[-1]}
    for section in _sections(cls):  # every field appears with a comment (lists: on their first item)
        for f in dataclasses.fields(section):
            assert f.name in commented, f"{section.__name__}.{f.name} has no comment in {path}"


@pytest.mark.parametrize("part", sorted(PARTS))
def test_every_field_is_documented_and_every_number_bounded(part):
    for section in _sections(PARTS[part].config_class()):
        hints = typing.get_type_hints(section)
        for f in dataclasses.fields(section):
            assert field_doc(f), f"{section.__name__}.{f.name} has no doc"
            args = {hints[f.name], *typing.get_args(hints[f.name])}
            numeric = args & {int, float} or any(set(typing.get_args(a)) & {int, float} for a in args)
            if numeric:
                b = field_bounds(f)
                assert b is not None and b.low is not None and b.high is not None, \
                    f"{section.__name__}.{f.name} needs a lower and an upper bound"


@pytest.mark.parametrize("part", sorted(PARTS))
def test_docs_table_matches_the_declarations(part):
    doc = (ROOT / "docs" / f"{part}.md").read_text()
    assert with_config_table(doc, part) == doc, f"run `python -m raystack.parts` to refresh docs/{part}.md"
    assert render_table(PARTS[part].config_class()) in doc


def test_print_config_is_the_file_and_applies_overrides(capsys):
    from raystack.apps.cli import main

    assert main(["edit", "--print-config"]) == 0
    assert capsys.readouterr().out == (ROOT / "configs" / "edit.yaml").read_text()
    assert main(["edit", "--print-config", "--set", "inner.lr=2e-4", "--output-dir", "out/x"]) == 0
    shown = load_yaml(capsys.readouterr().out)
    assert shown["inner"]["lr"] == 2e-4 and shown["run"]["out_dir"] == "out/x"
