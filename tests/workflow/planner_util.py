"""Helpers the planner's test modules share."""
from __future__ import annotations

from raystack.workflow.nl.rules import RulePlanner


def plan(text: str):
    """The rule planner's Plan for ``text`` (PlanRefused when it refuses)."""
    return RulePlanner().plan(text)


def kinds(p) -> list[str]:
    """The kinds of the steps the request named (implicit plumbing left out), in draft order."""
    return [d.entry for d in p.draft.steps if not d.implicit]
