"""Scoring a planner on an evaluation set: structural match, executable match, silently wrong.

- structural match: the plan equals the gold (:func:`raystack.workflow.nl.gold.compare`), or
  the planner refused an ``expect: refuse`` prompt;
- executable match: structural match and the plan ran at tiny sizes (:func:`dry_run`);
  part steps (EDiT, mLoRA, Serve, elastic DLRM) run only when ``run_parts`` is true, and a plan
  whose parts were not run counts as executable only in ``executable_validated``;
- silently wrong: a plan returned for a prompt whose gold it does not match, or for a prompt
  that had to be refused. A refusal of a plannable prompt is a miss, not silently wrong.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from raystack.workflow.catalog import entry_for
from raystack.workflow.nl.gold import compare, conventions_for, load_set
from raystack.workflow.nl.plan import Plan, PlanRefused

PART_MODULES = ("raystack.actors.", "raystack.apps.")


@dataclass
class SetScore:
    name: str
    prompts: int = 0
    structural: int = 0
    executable: int = 0
    executable_validated: int = 0        # structural match whose part steps were only validated
    silently_wrong: int = 0
    refused_plannable: int = 0
    seconds: float = 0.0
    wrong: list[dict[str, Any]] = field(default_factory=list)
    failed_runs: list[dict[str, Any]] = field(default_factory=list)

    def rates(self) -> dict[str, float]:
        n = max(self.prompts, 1)
        return {"structural_match": self.structural / n, "executable_match": self.executable / n,
                "executable_or_validated_match": (self.executable + self.executable_validated) / n,
                "silently_wrong": self.silently_wrong / n}


def has_parts(plan: Plan) -> bool:
    return any(s.fn.startswith(PART_MODULES) for s in plan.ir.steps)


def score_set(path: str | Path, plan_fn: Callable[[str], Plan], *, run: bool = True,
              run_parts: bool = False, workdir: str | None = None) -> SetScore:
    """Plan every prompt of the set, compare with gold, dry-run the matches."""
    from raystack.workflow.dryrun import dry_run
    prompts = load_set(path)
    conventions = conventions_for(path)
    sc = SetScore(Path(path).stem, len(prompts))
    ran: dict[str, bool] = {}
    t0 = time.perf_counter()
    for p in prompts:
        try:
            plan = plan_fn(p["text"])
        except PlanRefused:
            if p["expect"] == "refuse":
                sc.structural += 1
                sc.executable += 1
            else:
                sc.refused_plannable += 1
            continue
        if p["expect"] == "refuse":
            sc.silently_wrong += 1
            sc.wrong.append({"id": p["id"], "why": "planned a request that must be refused"})
            continue
        ok, why = compare(plan, p.get("steps") or [], conventions)
        if not ok:
            sc.silently_wrong += 1
            sc.wrong.append({"id": p["id"], "why": why})
            continue
        sc.structural += 1
        if not run:
            continue
        if has_parts(plan) and not run_parts:
            sc.executable_validated += 1      # the plan validated (part configs included)
            continue
        key = plan.ir.to_json()
        if key not in ran:
            rep = dry_run(plan.ir, None if workdir is None else f"{workdir}/{p['id']}")
            ran[key] = rep.status == "succeeded"
            if not ran[key]:
                sc.failed_runs.append({"id": p["id"], "failed": rep.failed})
        sc.executable += ran[key]
    sc.seconds = time.perf_counter() - t0
    return sc


def kinds_used(plan: Plan) -> list[str]:
    return sorted({(entry_for(s.fn).kind if entry_for(s.fn) else s.fn) for s in plan.ir.steps})
