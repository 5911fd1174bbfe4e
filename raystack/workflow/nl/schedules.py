"""A request to run on a schedule ("every night", "each Monday morning", "on a weekly basis"):
a workflow runs once, when it is submitted, so the plan would have run it once and dropped the
schedule without a word. Refused, naming the words, once the request's steps are found: a
schedule said of the run, in a sentence that names a step ("Every night: load ...", "load
logs.csv every month", "retrain it every week"). A period that groups rows ("the median for every
week"), says how the data was recorded ("a reading every hour") or what the writer does ("every
morning we test the water") is no schedule."""

from __future__ import annotations

import re

from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text

UNITS = (r"(?:night|morning|evening|afternoon|day|weekday|weekend|week|fortnight|month|quarter|year|hour|minute"
         r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)")
SCHEDULE = re.compile(
    rf"\b(?:every|each)\s+(?:single\s+)?(?:(?:NUM\d+|other)\s+)?{UNITS}s?\b(?:\s+(?:morning|evening|night|at\s+NUM\d+))?"
    r"|\bon\s+a\s+(?:daily|weekly|monthly|nightly|hourly|quarterly|yearly|regular)\s+(?:basis|schedule)\b"
    r"|\b(?:schedule|reschedule)\s+(?:it|this|the\s+(?:job|run|workflow|pipeline))\b|\bcron(?:\s+job)?\b"
    r"|(?:^|(?<=[.;]\s))(?:nightly|daily|weekly|monthly|hourly)\s*:")
# words before a period that make it the data's or a grouping ("for every week", "one row every hour")
NOT_A_SCHEDULE_BEFORE = {"for", "per", "by", "in", "of", "across", "within", "row", "rows", "reading", "readings",
                         "record", "records", "entry", "logged", "recorded", "measured", "collected", "taken",
                         "sampled", "arrives", "arrive", "comes", "updated", "exported", "dumped", "written", "once",
                         "sells", "sell", "sold", "has", "have", "had", "about", "around", "roughly", "than"}
# who does something at that time, right after it ("every morning we test the water"): a habit
HABIT_SUBJECTS = {"we", "i", "they", "our", "my", "staff", "someone", "somebody", "the", "it", "he", "she", "you"}
# what a schedule is said of, right before it: the run itself ("run it", "the pipeline") or the file
# it reads ("load logs.csv every month")
RUN_WORDS = {"it", "this", "that", "them", "pipeline", "workflow", "job", "run", "again"}


def _said_of_the_run(t: Text, toks: list) -> bool:
    """The schedule opens its sentence or clause ("Every night: ...", "Every Monday, load ..."), or
    follows the run or the file it reads ("run it every night", "load logs.csv every month"), or
    is no phrase of every or each ("on a weekly basis", "cron")."""
    first = toks[0]
    if first.low not in ("every", "each"):
        return True
    prev = t.tokens[first.i - 1] if first.i else None
    nxt = t.tokens[toks[-1].i + 1] if toks[-1].i + 1 < len(t.tokens) else None
    opens = prev is None or prev.text in (".", ";", ":", "\n", "-", "*", "•") or (prev.text == "," and nxt is not None and nxt.text in (":", ","))
    return (opens and nxt is not None and nxt.text in (":", ",")) or (prev is not None and (prev.kind == "path" or prev.low in RUN_WORDS))


def scheduled(t: Text, spans: list[tuple[int, int]], asking: set[int]) -> None:
    """Refuse a request that asks to run on a schedule (see the module's docstring): a schedule said
    in a sentence that names a step (``asking``: the indices of those sentences); one in a sentence
    that only sets the scene ("we lose one in five givers every year") is the scene's."""
    for m in SCHEDULE.finditer(t.masked):
        toks = t.covered(m.start(), m.end())
        if not toks or not any(lo <= toks[0].i < hi for k, (lo, hi) in enumerate(spans) if k in asking):
            continue
        before = [x.low for x in t.tokens[max(0, toks[0].i - 2):toks[0].i]]
        after = t.tokens[toks[-1].i + 1].low if toks[-1].i + 1 < len(t.tokens) else ""
        if any(w in NOT_A_SCHEDULE_BEFORE for w in before) or after in HABIT_SUBJECTS:
            continue        # ("every morning we test the water ...": what the writer does, not the run)
        if not _said_of_the_run(t, toks):
            continue        # ("the total sales every month": a period of a figure, a grouping)
        raise PlanRefused([f"{t.span_text(toks)!r} asks for a schedule; a workflow runs once, when it is submitted "
                           "(run the submission from cron or a scheduler)"], "out_of_scope")
