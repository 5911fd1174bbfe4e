"""How a phrase sits among the words around it, for the rule planner's reading of actions:
a file after another file and "to" (the second side of a join or concat), a part's own data,
two model phrases joined only by list glue, a written table, a named part of an existing split,
and whether "test" / "score" / a bare metric is the evaluation's verb where it stands."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.extract import TABLE_EXT
from raystack.workflow.nl.text import Text, Token
from raystack.workflow.nl.triggers import EVAL_OBJECTS

if TYPE_CHECKING:
    from raystack.workflow.nl.rules import Action

# word stems that name an evaluation wherever they stand ("evalute": a typo users make)
EVAL_STEMS = ("evaluat", "evalut", "assess", "validat", "measur")


def second_side(t: Text, i: int) -> bool:
    """Whether token ``i`` is a file right after another file and "to" / "into" / "onto"
    ("append feb.csv to jan.csv")."""
    return i >= 2 and t.tokens[i].kind == "path" and t.tokens[i - 1].low in ("to", "into", "onto") \
        and t.tokens[i - 2].kind == "path"


def part_data(t: Text, part: Action, a: Action) -> bool:
    """A file or generated rows named as a part's own data ("a DLRM on 50000 generated
    rows", "on the Criteo data in data/criteo/")."""
    if t.tokens[a.lo].low in ("from", "in", "at", "on", "of", "using", "over"):
        return True
    if t.tokens[a.lo].low == "for" and a.lo + 1 < len(t.tokens) and t.tokens[a.lo + 1].kind == "path" \
            and 0 <= a.lo - part.trig_end <= 1:
        return True       # "fine-tune adapters for sft.jsonl and qa.jsonl on tiny-1m": the adapters' data
    # up to the file: "pretrain with EDiT for 50 steps on docs/" ("for ... docs/" read as a load)
    named = next((x.i for x in t.tokens[a.lo:a.trig_end] if x.kind == "path"), a.lo)
    between = t.tokens[part.trig_end:named]
    preps = [n for n, x in enumerate(between) if x.low in ("on", "from", "with", "using", "over")]
    # no clause between, or none after the preposition ("adapters named legal and medical ...
    # with legal.jsonl and medical.jsonl": the names' "and" is no clause)
    return bool(preps) and preps[-1] >= len(between) - 5 and \
        not any(x.kind == "punct" for x in between) and \
        not any(x.low in L.CLAUSE_WORDS for x in between[preps[-1]:])


def coordinated(t: Text, first: Action, second: Action) -> bool:
    """Only list glue between two phrases: "fit a logistic regression and a kNN classifier"."""
    glue = {",", ":", "—", "–", "-", "and", "or", "+", "&", "/", "|", "vs", "versus", "a", "an", "the", "both", "plus", "(", ")",
            "either", "then", "regression", "model", "models", "classifier", "classifiers", "regressor"}
    between = t.tokens[first.trig_end:second.lo]
    # "train three models side by side: knn, ...": the parallel cue inside the list is the list's
    # ("a logistic regression, a k nearest neighbours model and a nearest centroid model": the
    # models listed before it are the list's too)
    return all(x.low in glue or x.used in ("train_model", "parallel", "model kind") or x.kind == "num" for x in between)


def table_result(t: Text, m: re.Match, toks: list[Token], hi: int) -> bool:
    """"store the result as totals.csv", "write the scores to s.parquet": what is written to
    a table file is a table."""
    if re.search(r"\breport\b", m.group(0)):
        return False
    nxt = next((x for x in t.tokens[toks[0].i:min(hi, toks[-1].i + 4)] if x.kind == "path"), None)
    if nxt is None:   # "write the scores to a table"
        return t.match_at(r"(?:to|as|into|in)\s+(?:a\s+|the\s+)?tables?\b", toks[-1].i + 1, hi) is not None
    return nxt.low.endswith((*TABLE_EXT[:4], ".jsonl"))     # (JSON lines: a row per line; a .json is a report)


def names_existing_split(t: Text, tok: Token) -> bool:
    """"evaluate on the test split": the held-out part of a split already made, not a new
    split; its words are a reference."""
    words = t.tokens[max(0, tok.i - 3):tok.i]
    if len(words) < 3 or tok.low != "split" or any(x.used for x in words):
        return False
    prep, art, part = words
    if prep.low in ("on", "against", "using", "with") and art.low == "the" and \
            part.low in ("test", "held-out", "holdout", "validation", "eval", "evaluation"):
        t.mark([art, part, tok], "reference")
        return True
    return False


def split_across_files(t: Text, tok: Token) -> bool:
    """"our counts are split across a.csv and b.csv": where the data lives, not a split to make."""
    prev = t.tokens[tok.i - 1] if tok.i else None
    nxt = t.tokens[tok.i + 1] if tok.i + 1 < len(t.tokens) else None
    return tok.low == "split" and prev is not None and prev.low in ("is", "are", "was", "were", "'re", "'s") \
        and nxt is not None and nxt.low in ("across", "between", "over", "among", "into", "in") \
        and any(x.kind == "path" for x in t.tokens[tok.i + 2:tok.i + 6])


def is_figure(tok: Token) -> bool:
    """Whether an evaluation's trigger starts with the figure it names ("the accuracy on the
    test set", "its test f1"), not with a verb."""
    return bool(re.fullmatch(rf"{L.METRIC_RX}|{L.HELD_OUT_WORDS}", tok.low))


EVAL_RUN_VERBS = ("run", "runs", "running", "do", "does", "doing", "perform", "performs", "performing")


def is_eval_verb(t: Text, tok: Token) -> bool:
    """"test" and "score" are verbs only at the start of a clause or before their object."""
    prev = t.tokens[tok.i - 1] if tok.i else None
    nxt = t.tokens[tok.i + 1] if tok.i + 1 < len(t.tokens) else None
    if nxt is not None and "\n" in t.raw[tok.end:nxt.start]:
        nxt = None      # ("→ eval" ending a line of a numbered list: the next line's marker is no object)
    if tok.low in ("they", "it", "the", "how"):
        return True     # the passive trigger: "they get scored"; a question: "how accurate is ...?"
    if prev is not None and prev.low == "next" and tok.low.startswith(("test", "score")):
        return False    # "predict a student's next test score": a value to come, never a measurement
    if t.match_at(L.HELD_OUT_FIGURE, tok.i) is not None:
        return True     # "the accuracy on the test set", "its test f1": a held-out figure is measured
    if prev is not None and prev.text in (",", ";") and re.fullmatch(L.METRIC_RX, tok.low) and tok.low not in ("score", "scores"):
        # "x.csv, logistic, recall.": a metric ending a list right after the model
        return tok.i >= 2 and t.tokens[tok.i - 2].used in ("model kind", "train_model")
    if tok.low.startswith((*EVAL_STEMS, "eval")) and (nxt is None or nxt.kind == "punct"):
        return True     # a noun ending its clause names the step: "an eval;", "adapter eval ->"
    if tok.low == "test" and prev is not None and prev.low == "to" and nxt is not None and nxt.low in ("on", "with"):
        return False    # "hold back 20% to test on": what the split's share is for
    if tok.i >= 2 and prev.low in ("a", "an") and t.tokens[tok.i - 2].low in EVAL_RUN_VERBS:
        return True     # "then run an eval on it", "do an evaluation": the step, named as a noun after its verb
    if tok.low.startswith(EVAL_STEMS):
        return not (prev is not None and prev.low in ("the", "an", "a", "for", "of"))
    starts = prev is None or prev.kind == "punct" or prev.low in ("and", "then", "also", "to", "next", "finally", "first")
    if tok.low in ("eval", "check") and nxt is not None and re.fullmatch(L.METRIC_RX, nxt.low):
        return starts     # "...; eval f1; deploy", "and check f1 on a 25% holdout": the evaluation of that metric
    if tok.low == "look" and nxt is not None and nxt.low == "at":
        return starts     # "and look at its performance"
    if tok.low in ("show", "tell") and nxt is not None and nxt.low in ("me", "us"):
        return starts     # "Show me how it does on the test data."
    return starts and (nxt is None or nxt.low in EVAL_OBJECTS or nxt.kind == "punct")
