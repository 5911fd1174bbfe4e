"""Helpers the planner's test modules share."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from raystack.workflow.ir import Ref
from raystack.workflow.nl.rules import RulePlanner


def plan(text: str):
    """The rule planner's Plan for ``text`` (PlanRefused when it refuses)."""
    return RulePlanner().plan(text)


def kinds(p) -> list[str]:
    """The kinds of the steps the request named (implicit plumbing left out), in draft order."""
    return [d.entry for d in p.draft.steps if not d.implicit]


def drafts(p, kind: str) -> list:
    """The plan's draft steps of ``kind`` the request named (a map counted once), in draft order."""
    return [d for d in p.draft.steps if d.entry == kind and not d.implicit]


def of_kind(p, kind: str) -> list:
    """The plan's IR steps that run catalog step ``kind`` (a map's items each), in IR order."""
    return [s for s in p.ir.steps if s.fn.endswith(":" + kind)]


def refs(value) -> list[str]:
    """The IR steps a parameter's value reads (one reference or a list of them)."""
    return [v.step for v in (value if isinstance(value, list) else [value]) if isinstance(v, Ref)]


def source_kind(p, step, param: str = "data") -> str:
    """The catalog kind of the step ``step``'s parameter reads first."""
    return p.ir.by_id()[refs(step.params[param])[0]].fn.rsplit(":", 1)[1]


def csv_workdir(tmp_path: Path, monkeypatch, name: str, header: str, rows: Iterable[str]) -> Path:
    """``tmp_path`` as the working directory, holding the CSV file ``name`` (``header`` and one
    line per row): the files a planned workflow reads by relative path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(header + "\n" + "".join(f"{r}\n" for r in rows))
    return tmp_path
