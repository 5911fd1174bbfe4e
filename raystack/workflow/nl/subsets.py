"""Restrictions to some of the results or columns that no step makes: "evaluate the adapters and
serve the best ones", "normalize the petal_length column only". Left as filler words they would
plan the step on all of them, silently; the accounting refuses them, quoting the words."""

from __future__ import annotations

from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.text import Text


# steps that act on what they are given, all of it: "serve the best ones" asks for a pick they do not make
ACTING_STEPS = {"serve_adapters", "deploy_model", "export_model", "write_table", "save_report", "notify",
                "evaluate_adapters", "plot"}
PICK_WORDS = {"best", "top", "winning", "strongest", "better"}


def unselected_subset(t: Text) -> list[str]:
    """"evaluate the adapters and serve the best ones": a pick ('the best ones', 'the top two')
    right after a step that acts on everything it gets, which no rule turned into a selection.
    Left as filler words it would plan a step on all of them, silently."""
    out = []
    for tok in t.tokens:
        if tok.low == "only" and not tok.used and tok.i and t.tokens[tok.i - 1].used in ACTING_STEPS | {"evaluate_model"}:
            # "evaluate only the knn model": a restriction to some of the results, which no step makes
            end = tok.i + 1
            while end < len(t.tokens) and t.tokens[end].kind != "punct" and t.tokens[end].low not in L.CLAUSE_WORDS \
                    and end - tok.i < 5:
                end += 1
            out.append(t.span_text(t.tokens[tok.i:end]))
            continue
        if tok.used or tok.low not in PICK_WORDS:
            continue
        j = tok.i - 1
        while j >= 0 and t.tokens[j].low in ("the", "only", "just", "a", "few"):
            j -= 1
        if j >= 0 and t.tokens[j].used in ACTING_STEPS:
            end = tok.i + 1
            while end < len(t.tokens) and not t.tokens[end].used and t.tokens[end].kind in ("word", "num") \
                    and end - tok.i < 3:
                end += 1
            out.append(t.span_text(t.tokens[j + 1:end]))
    return out


COLUMN_WORDS = {"column", "columns", "feature", "features", "field", "fields", "variables"}


def column_subset(t: Text) -> list[str]:
    """"normalize the petal_length column only", "train a knn using only the petal columns": a
    restriction to some columns, which no catalog step takes (they use every numeric column).
    Left as filler words it would plan the step on all of them, silently."""
    out = []
    for tok in t.tokens:
        if tok.low != "only" or tok.used:
            continue
        near = t.tokens[max(tok.i - 3, 0):tok.i + 5]
        if any(x.low in COLUMN_WORDS and not x.used for x in near):   # a step's own column parameter is fine
            lo = next((x.i for x in near if x.i < tok.i and x.low in ("the", "using", "with", "on")), tok.i)
            hi = next((x.i + 1 for x in near if x.i > tok.i and x.low in COLUMN_WORDS), tok.i + 1)
            out.append(t.span_text(t.tokens[lo:max(hi, tok.i + 1)]))
    return out
