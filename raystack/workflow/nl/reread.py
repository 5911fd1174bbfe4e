"""Steps re-read in the light of their place in the request, once every sentence's phrases are
found (before any parameter is read):

- a step word inside the request's title names its subject ("Cyber alert triage:" is no
  notify), when it is a noun of the title's topic head or the body asks for that step again;
- "the data is stored in trips.parquet" as the first step says where the input is: a load, since
  nothing before it made anything to write;
- a load with no file of its own right after a load that named one ("We keep the records in
  cargo.parquet. Load them ...") or after saved adapters refers back to it: one step;
- "evaluate the saved adapters in ./a" loads the adapters, then evaluates them as adapters.
"""

from __future__ import annotations

from typing import Any

from raystack.workflow.nl.accounting import title_span
from raystack.workflow.nl.extract import TABLE_EXT
from raystack.workflow.nl.text import Text

SAVED_SOURCES = ("load_checkpoint", "load_adapters")   # "load them" after one names its load
STATE_PARTICIPLES = {"stored", "saved", "kept", "held"}    # "the data is stored in x.parquet" says where it is
# steps whose word in a title is a noun modifying its head ("Cyber alert triage", "Churn report
# model"); an operation in a title ("Dedup report:") is still asked for unless the body asks again
TITLE_NOUN_STEPS = ("notify", "save_report", "plot", "stats")
POSSESSIVES = {"the", "our", "my", "those", "these", "its", "their"}


def _rename(t: Text, a: Any, entry: str) -> None:
    t.relabel(t.tokens[a.lo:a.trig_end], a.entry, entry)
    a.entry = entry


def reread(t: Text, actions: list) -> list:
    """``actions`` (the planner's, in text order) after the re-readings above."""
    title = title_span(t)
    if title is not None:
        end, headed = title
        inside = [a for a in actions if a.trig_end <= end and (
            (headed and a.entry in TITLE_NOUN_STEPS) or any(b.entry == a.entry and b.lo >= end for b in actions))]
        for entry in {a.entry for a in inside}:
            t.relabel(t.tokens[:end], entry)
        actions = [a for a in actions if a not in inside]
    if not actions:
        return actions
    first = actions[0]
    words = t.tokens[first.lo:first.trig_end]
    if first.entry in ("write_table", "save_report") and any(x.low in STATE_PARTICIPLES for x in words) \
            and any(x.kind == "path" and x.low.endswith(TABLE_EXT) for x in words):
        _rename(t, first, "load_data")
        first.has_file = True
    actions = [a for k, a in enumerate(actions) if not (
        a.entry == "load_data" and not a.has_file and k and (actions[k - 1].entry in SAVED_SOURCES or (
            actions[k - 1].entry == "load_data" and actions[k - 1].has_file)))]
    for k in range(len(actions) - 1):
        a, b = actions[k], actions[k + 1]
        if a.entry == "evaluate_model" and b.entry == "load_adapters" and a.sentence == b.sentence and all(
                x.low in POSSESSIVES for x in t.tokens[a.trig_end:b.lo]):
            _rename(t, a, "evaluate_adapters")
            actions[k], actions[k + 1] = b, a
    return actions
