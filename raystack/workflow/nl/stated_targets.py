"""The column a model predicts, said in a sentence of its own rather than in the training's
phrase: "We want to predict alpha_acid. Load h.csv, fit a linear regression.", "The target is
churned.", "alpha_acid is the thing we're predicting". The column goes to every training that
names none; two different columns said so, or a training that names its own, leave it alone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from raystack.workflow.nl.extract import _PREDICTED
from raystack.workflow.nl.text import Text

if TYPE_CHECKING:
    from raystack.workflow.nl.rules import Action

TRAININGS = ("train_model", "tune")
_COL = _PREDICTED       # a column's name, never a pronoun or a model's own figure ("accuracy")
_END = r"(?=\s*(?:[.,;:!?)]|$)|\s+(?:from|using|with|in|and|so|but|for)\b)"   # "... order_value for our customers"
STATED = [
    # "we want to predict alpha_acid", "we're trying to forecast demand_units"
    rf"\b(?:we|i)\s*(?:want|need|would\s+like|'d\s+like|are\s+trying|'re\s+trying|aim|hope|plan)\s+to\s+"
    rf"(?:predict|forecast|estimate|classify)\s+(?:the\s+)?(?P<c>{_COL}){_END}",
    # "we'd like to know which kids won't sign up again, which is the left_league column", "we want to
    # predict which events go over headcount, the column's over_headcount", "we want to
    # predict which loans pay off within a year, i.e. prepaid_12m", "... which customers churn (the
    # churned column)": the question, then the column that answers it
    rf"\b(?:we|i)\s*(?:want|need|would\s+like|'d\s+like|are\s+trying|'re\s+trying|aim|hope|plan)\s+to\s+"
    rf"(?:predict|forecast|know|find\s+out|spot|flag|tell|see)\s+(?:which|who|whether)\s+(?:[\w'-]+\s+){{1,10}}?"
    rf"(?:\(\s*|,\s*(?:which\s+is|i\.?\s*e\.?|that\s+is|namely|the\s+column\s*(?:'s|is))\s*,?\s*)(?:the\s+|in\s+the\s+)?(?P<c>{_COL})(?:\s+column)?"
    rf"(?:\s*\)|{_END})",
    # "Our hospital wants to forecast length_of_stay", "the clinic would like to predict no_show"
    rf"(?:^|(?<=[.;:!?]\s))(?:our|the)\s+(?:[a-z][\w-]*\s+)?[a-z][\w-]*\s+(?:wants|needs|would\s+like|is\s+trying|aims|hopes|plans)\s+to\s+"
    rf"(?:predict|forecast|estimate|classify)\s+(?:the\s+)?(?P<c>{_COL}){_END}",
    # "our goal is to predict alpha_acid", "the aim is to forecast demand"
    rf"\b(?:our|the)\s+(?:goal|aim|objective|task|idea)\s+is\s+to\s+(?:predict|forecast|estimate|classify)\s+(?:the\s+)?(?P<c>{_COL}){_END}",
    # "Predict no_show: load a.csv, ...", "A model to predict no_show: ...": a request titled by what
    # its model predicts, the colon closing the title
    rf"(?:^|(?<=[.;!?]\s))(?:(?:a|an)\s+(?:model|classifier|regressor|regression)\s+(?:to|that\s+will|which\s+will)\s+)?"
    rf"(?:predict|forecast|estimate|classify)(?:ing)?\s+(?:the\s+)?(?P<c>{_COL})(?=\s*:)",
    # "the answer is in the no_show column", "the outcome is churned"
    rf"\bthe\s+(?:answer|outcome|thing\s+(?:to|we)\s+predict)\s+is\s+(?:in\s+)?(?:the\s+)?(?P<c>{_COL})(?:\s+column)?{_END}",
    # "listings.parquet, target days_to_sale.", "a classifier (label water_claim)": the column named
    # by its role, as a note of its own
    rf"(?:(?<=[.;:,(?!]\s)|(?<=\()|^)(?:the\s+)?(?:target|label)(?:\s+column)?\s*(?:[:=]\s*|is\s+)?(?P<c>{_COL})(?=\s*[.;,)])",
    # "bill_delta_pct regression on meter_reads.parquet.": the column a title names the model of
    r"(?:^|(?<=[.;:]\s))(?P<c>[a-z][a-z0-9]*_[a-z0-9_]+)\s+(?:regression|classification|classifier|prediction|forecast|model)\b",
    # "the target is churned", "the label column is is_fraud"
    rf"\bthe\s+(?:target|label)(?:\s+column)?\s+(?:is|will\s+be|should\s+be)\s+(?P<c>{_COL}){_END}",
    # "alpha_acid is the target", "alpha_acid is the thing we're predicting", "... what we predict"
    rf"(?:^|(?<=[.;:,]\s))(?P<c>{_COL})\s+is\s+(?:the\s+(?:target|label)(?:\s+column)?|(?:the\s+thing|what)\s+"
    rf"(?:we(?:'re|\s+are)\s+(?:predicting|trying\s+to\s+predict|forecasting)|we\s+(?:predict|want\s+to\s+predict)))\b",
]


def stated_target(t: Text, actions: list[Action]) -> None:
    """Set the column said apart as the target of every training that names none."""
    open_ = [a for a in actions if a.entry in TRAININGS and "target" not in a.found.params
             and not (a.found.map and a.found.map[0] == "target")]
    if not open_:
        return
    said = [(m.group("c"), toks) for rx in STATED for m, toks in t.finditer(rx, 0, len(t.tokens), free_only=True)]
    if len({c for c, _ in said}) != 1:
        return
    for _, toks in said:
        t.mark(toks, "target")
    for a in open_:
        a.found.set("target", said[0][0])
