"""A fault of the data stated in a sentence of its own, before or after the step of the plan that
fixes it: "Some rows are duplicated because the scanner double-fires. Please remove the
duplicates." The sentence says why the step is there; a fault no step fixes stays unaccounted
(the request is refused, quoting it)."""

from __future__ import annotations

from raystack.workflow.catalog import CATALOG
from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.scene import ASIDES, ASKING_WORDS, asking_sentences
from raystack.workflow.nl.text import Text
from raystack.workflow.nl.words import is_method

# faults a sentence may state of the data, and the steps that fix each ("Some rows are duplicated.
# Please remove the duplicates.")
FAULT_FIXES = {"duplicated": ("dedup",), "duplicates": ("dedup",), "duplicate": ("dedup",), "dupes": ("dedup",),
               "repeated": ("dedup",), "missing": ("clean_data", "impute"), "blank": ("clean_data", "impute"),
               "blanks": ("clean_data", "impute"), "empty": ("clean_data", "impute"), "null": ("clean_data", "impute"),
               "nulls": ("clean_data", "impute"), "incomplete": ("clean_data", "impute"), "gaps": ("clean_data", "impute")}
MAX_FAULT_SENTENCE = 16      # words of a sentence stating a fault


def fault_statements(t: Text) -> None:
    """"Some rows are duplicated because the scanner double-fires. Please remove the duplicates.": a
    sentence that asks for nothing and states a fault of the data that a step of the plan fixes (a
    dedup for repeated rows, a removal or a fill for gaps) says why that step is there."""
    fixing = {x.used for x in t.tokens if x.used in CATALOG}
    for lo, hi, asks in asking_sentences(t, beside_loads=True):
        toks = [x for x in t.tokens[lo:hi] if x.kind != "punct"]
        faults = [x for x in toks if x.low in FAULT_FIXES and not x.used]
        if asks or not faults or len(toks) > MAX_FAULT_SENTENCE or t.tokens[hi - 1].text in ("?", "!") \
                or not all(any(e in fixing for e in FAULT_FIXES[x.low]) for x in faults):
            continue
        if any(x.kind not in ("word", "path") or (x.used and x.used not in ASIDES and x.used != "load_data")
               or (x.low in ASKING_WORDS and x.low not in FAULT_FIXES and x.low not in ("not", "no"))
               or x.low in L.UNMAPPED_VERBS or is_method(x) for x in toks if x not in faults):
            continue
        t.mark([x for x in toks if not x.used], "context")
