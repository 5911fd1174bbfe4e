"""A question that names the candidates ("Which base is better, tiny-1m or tiny-20m? Pretrain
each ...", "Which is better for predicting breakdowns, kNN or logistic regression? Use rides.csv
... and keep the one with the higher F1"): the candidates are run where the request runs or
compares them, never where the question is asked.

- A model named in the question (a verbless ``train_model``) is trained at the step that refers
  back to the candidates ("train both", "fit each"), else right before the step that keeps the
  best of them.
- A step that refers back and names no candidate of its own ("pretrain each with EDiT") reads
  them from the question.
- "train both" with no question naming what to train is no step (its words stay unaccounted).
"""

from __future__ import annotations

import re
from typing import Any, Callable

from raystack.workflow.nl.lexicon import METRIC_RX
from raystack.workflow.nl.text import Text

QUESTION_WORDS = {"which", "whether"}
YES_NO_OPENERS = {"is", "are", "does", "do", "would", "should", "will"}   # with "A or B" in the question
# the steps whose candidates a question can name (a model kind, a base model)
CANDIDATE_STEPS = ("train_model", "edit_pretrain")
REFERRING_ENDS = {"both", "each", "either", "them", "all", "two", "three", "four"}
REFERRING = re.compile(r"\b(?:both|each|either|all\s+of\s+them|them\s+all|all\s+(?:two|three|four))\b")


def questions(t: Text, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The sentences [lo, hi) that ask which candidate is better ("Which base is better, ...?",
    "Is nearest centroid or logistic regression more accurate on lots.csv?")."""
    return [(lo, hi) for lo, hi in spans
            if t.tokens[hi - 1].text == "?" and (any(x.low in QUESTION_WORDS for x in t.tokens[lo:hi])
                                               or ((t.tokens[lo].low in YES_NO_OPENERS or _titled(t, lo, hi))
                                                   and any(x.low == "or" for x in t.tokens[lo:hi])))]


CANDIDATE_TITLES = {"base", "model", "classifier", "regressor", "method", "algorithm"}


def _titled(t: Text, lo: int, hi: int) -> bool:
    """"Base: tiny-1m or tiny-20m?": the candidates after the noun they are candidates for."""
    return hi - lo > 2 and t.tokens[lo].low in CANDIDATE_TITLES and t.tokens[lo + 1].text == ":"


# "which base gives the lower validation loss, ...?": what the question compares the candidates by
CRITERION = (rf"\b(?:gives?|has|have|gets?|reaches|yields?|produces?|scores?|ends\s+up\s+with)\s+(?:the\s+|a\s+)?"
             rf"(?:lower|higher|better|best|lowest|highest|smaller|larger)\s+(?:{METRIC_RX})\b")


def criteria(t: Text, asked: list[tuple[int, int]]) -> None:
    """Mark the words by which a question compares its candidates (the step that keeps the best
    one says the metric again, or its default is the part's)."""
    for lo, hi in asked:
        for _, toks in t.finditer(CRITERION, lo, hi, free_only=True):
            t.mark(toks, "question")


def _inside(a: Any, span: tuple[int, int]) -> bool:
    return span[0] <= a.lo < span[1]


def _refers(t: Text, a: Any) -> bool:
    """The step's phrase ends in a word that refers back to candidates ("train both")."""
    return t.tokens[a.trig_end - 1].low in REFERRING_ENDS


def defer_candidates(t: Text, actions: list, asked: list[tuple[int, int]]) -> list:
    """``actions`` with a question's candidate models moved to where they are trained."""
    out = list(actions)
    for span in asked:
        named = [a for a in out if _inside(a, span) and a.entry == "train_model" and a.verbless]
        if not named:
            continue
        cand = named[0]
        out = [a for a in out if a not in named[1:]]    # "kNN or logistic regression": one map
        later = [a for a in out if a.lo >= span[1]]
        ref = next((a for a in later if a.entry == "train_model" and not a.verbless and _refers(t, a)), None)
        best = next((a for a in later if a.entry == "select_best"), None)
        if ref is not None:
            out[out.index(ref)] = cand          # its words stay the referring step's
            cand.said_at = (ref.sentence, ref.lo)   # its retries and conditions are said there
            del out[next(k for k, a in enumerate(out) if a is cand)]
        elif best is not None:
            out.remove(cand)
            out.insert(out.index(best), cand)
    for a in [a for a in out if a.entry == "train_model" and not a.verbless and _refers(t, a)]:
        if not any(span[0] < a.lo for span in asked):     # "train both" with nothing named to train
            t.relabel(t.tokens[a.lo:a.trig_end], a.entry)
            out.remove(a)
    return out


def fill_from_question(t: Text, actions: list, asked: list[tuple[int, int]],
                       extractors: dict[str, Callable]) -> None:
    """A step that refers back to a question's candidates and names none of its own reads them
    from the question ("Pretrain each with EDiT": the bases the question named)."""
    for span in asked:
        for a in actions:
            if a.lo < span[1] or a.entry not in CANDIDATE_STEPS or "model" in a.found.params or a.found.map:
                continue
            if not _refers(t, a) and not REFERRING.search(" ".join(x.low for x in t.tokens[a.zlo:a.hi])):
                continue
            with t.claiming(a.entry):
                extractors[a.entry](t, span[0], span[1], a.found)
            break
