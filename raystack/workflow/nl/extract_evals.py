"""The parameters of evaluations and selections, read from the words of their action: which
metric ("evaluate f1", "by AUC", "compare their f1", "knn -> f1"), on which held-out part (never
the rows a model was trained on), and how many held-out items ("on 5000 rows", "on 32 examples")."""

from __future__ import annotations

from typing import Callable

from raystack.workflow.nl.extract import Found, _num, _search, consume, metric_of
from raystack.workflow.nl.lexicon import HELD_OUT_FIGURE, LOWER_IS_BETTER, METRIC_RX
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text


# "the lowest-RMSE one", "highest-AUC run": the comparison and the metric as one word
HYPHENED_BEST = rf"\b(?P<how2>higher|highest|best|better|top|lower|lowest|smaller|smallest|min|max)-(?P<m2>{METRIC_RX})\s+(?:one|model|run|classifier|candidate)\b"


# the words of a pick's direction
LOWER_WORDS = ("lower", "lowest", "smaller", "smallest", "min", "minimum")
HIGHER_WORDS = ("higher", "highest", "larger", "largest", "greater", "max", "maximum")
# a pick's direction said right before its metric, or after it in parentheses ("select on RMSE (smallest)")
_DIRECTIONS = "|".join(LOWER_WORDS + HIGHER_WORDS)
DIRECTION_SAID = rf"\b(?P<d>{_DIRECTIONS})\s+(?:the\s+)?(?:{METRIC_RX})\b|\b(?:{METRIC_RX})\s*\(\s*(?P<d2>{_DIRECTIONS})\s*\)"


def metric_param(param: str = "metric", with_mode: bool = False) -> Callable:
    def ex(text: Text, lo: int, hi: int, f: Found) -> None:
        m = _search(text, lo, hi, rf"\b(?P<how>by|using|on|with|in\s+terms\s+of|via|according\s+to|based\s+on|"
                                  rf"higher|highest|best|better|greater|top|lower|lowest|smaller|smallest|min|max)\s+"
                                  rf"(?:the\s+|its\s+|their\s+)?(?:highest\s+|best\s+|lowest\s+|test\s+)?"
                                  rf"(?P<m>{METRIC_RX})\b"
                                  # "the lowest-RMSE one", "whose validation loss is lower", "ends lower on val loss"
                                  rf"|{HYPHENED_BEST}"
                                  rf"|\bwhose\s+(?:(?:final|last|resulting)\s+)?(?P<m3>{METRIC_RX})\s+(?:is|comes\s+out|ends\s+up|turns\s+out)\s+(?:the\s+)?"
                                  r"(?P<how3>lower|higher|smaller|larger|better|lowest|highest|smallest|largest|best)\b"
                                  rf"|\b(?P<how4>lower|higher|better)\s+on\s+(?:the\s+)?(?P<m4>{METRIC_RX})\b",
                    "metric")
        if with_mode:   # "take the lowest-RMSE one forward": the pick carried on to what follows
            consume(text, lo, hi, r"(?<=\bone\s)forward\b|(?<=\brun\s)forward\b|(?<=\bmodel\s)forward\b", "select_best")
            # "whichever gets the top F1 is kept"; "take the F1 winner"
            consume(text, lo, hi, r"(?<=\s)(?:is|gets)\s+(?:kept|chosen|picked|selected|retained)\b|(?<=\s)winner\b", "select_best")
        if m is None and with_mode:
            m = _search(text, lo, hi, rf"\b(?P<m>{METRIC_RX})(?=\s+winner\b)", "metric", free=False)
        if m is None:   # "; highest-AUC run → ...": the selection's own words name the metric
            m = _search(text, lo, hi, HYPHENED_BEST, "metric", free=False)
        if m is None:   # "compare their f1", "compare auc"
            m = _search(text, lo, hi, rf"(?:(?<=compare\s)|(?<=compares\s)|(?<=comparing\s))(?P<how>their\s+|the\s+|)(?P<m>{METRIC_RX})\b", "metric")
        if m is None and _search(text, lo, hi, r"\b(?:more|most)\s+accurate\b", "metric"):
            f.set(param, "accuracy")
            return
        if m is None and _search(text, lo, hi, r"\b(?:more|most)\s+precise\b", "metric"):    # ("the most precise one")
            f.set(param, "precision")
            return
        if m:
            g = m.groupdict()
            name = metric_of(g.get("m") or g.get("m2") or g.get("m3") or g.get("m4"))
            if name == "score":
                return
            f.set(param, name)
            how = g.get("how") or g.get("how2") or g.get("how3") or g.get("how4")
            if with_mode and how not in LOWER_WORDS + HIGHER_WORDS:
                # ("keep the one with the highest rmse": the direction claimed by the pick's own words)
                said = next(text.finditer(DIRECTION_SAID, lo, hi), None)
                how = (said[0].group("d") or said[0].group("d2")) if said else how
                if said and said[0].group("d2"):      # "select on RMSE (smallest)": the direction's words
                    text.mark([x for x in said[1] if not x.used], "metric")
            if with_mode and (name in ("loss", "error", "logloss") or how in LOWER_WORDS):
                f.params["mode"] = "min"
            elif with_mode and how in HIGHER_WORDS and name in LOWER_IS_BETTER:   # ("the highest rmse": against its usual direction)
                f.params["mode"] = "max"
    return ex


HELD_OUT_PART = (r"\b(?:on|against|over|using)\s+(?:the\s+)?(?:test|held-out|holdout|hold-out|validation|val|eval|evaluation|"
                 r"remaining|unseen)\s+(?:set|split|data|part|portion|rows|fold|share|slice)\b")


def evaluate_model(text: Text, lo: int, hi: int, f: Found) -> None:
    """The metric an evaluation is asked for, and the held-out data it runs on (the split's
    test part, which is what the step evaluates on: "score it on the held-out part")."""
    consume(text, lo, hi, HELD_OUT_PART, "evaluation data")
    m = _search(text, lo, hi, r"\b(?:on|against|over|using)\s+(?:the\s+)?(?:training|train|same|full|whole|entire|complete|"
                              r"original|raw|unsplit)\s+(?:set|split|data|dataset|part|portion|rows|fold|table)\b", "evaluation data")
    if m:   # the step scores the split's held-out part, never the rows the model was fitted on (nor all of them)
        raise PlanRefused([f"{m.group(0)!r}: evaluate_model scores a model on the split's held-out part, "
                           "not on the rows it was trained on"])
    metric_param()(text, lo, hi, f)
    if "metric" not in f.params:     # "the accuracy on the test set", "its test f1": the trigger's own metric
        m = _search(text, lo, hi, HELD_OUT_FIGURE, "metric", free=False)
        if m and metric_of(m.group("m") or m.group("n")) != "score":
            f.set("metric", metric_of(m.group("m") or m.group("n")))
    # "evaluate its rmse", "measure its accuracy on the test set", "evaluate f1": the metric is the evaluation's
    m = None if "metric" in f.params else _search(
        text, lo, hi, rf"\b(?:evaluat\w*|eval|assess\w*|measure|measures|check|checks|test|tests)\s+(?:\(\s*)?(?:(?:its|their|the)\s+)?"
                      rf"(?:test\s+|held-out\s+)?(?P<m>{METRIC_RX})\b", "metric")
    if m and metric_of(m.group("m")) != "score":
        f.set("metric", metric_of(m.group("m")))
    if "metric" not in f.params and _search(text, lo, hi, r"\bhow\s+accurate\b", "metric", free=False):
        f.set("metric", "accuracy")    # "how accurate is a knn on x.csv?"
    if "metric" not in f.params:   # "knn -> f1": a metric alone as an arrow's stage names the evaluation and its metric
        m = next((m for m, toks in text.finditer(rf"(?:->|=>|→|⇒|⟶|,|;)\s+(?P<m>{METRIC_RX})\b", max(lo - 1, 0), hi)
                  if toks[-1].used == "evaluate_model"), None)
        if m and metric_of(m.group("m")) != "score":
            f.set("metric", metric_of(m.group("m")))
    if "metric" in f.params:    # "evaluate it on accuracy and f1": it reports every metric, the first is its score
        for m2, _ in text.finditer(rf"\b(?:{METRIC_RX})\s+(?P<b>(?:and|&|,)\s+(?:the\s+|its\s+)?(?:{METRIC_RX}))\b", lo, hi):
            text.mark([x for x in text.covered(*m2.span("b")) if not x.used], "metric")


def evaluate_dlrm(text: Text, lo: int, hi: int, f: Found) -> None:
    """"evaluate its AUC", "measure the DLRM's log loss": what the evaluation reports (AUC and
    log loss, both always); a metric it does not report stays unaccounted, and is refused."""
    consume(text, lo, hi, r"\b(?:its|their|the)?\s*(?:test\s+|held-out\s+)?(?:auc|roc[\s-]+auc|log[\s-]?loss|logloss)\b", "metric")
    _held_out_count(text, lo, hi, f, "rows", r"rows|samples|examples|records")   # "evaluate it on 5000 rows"


def _held_out_count(text: Text, lo: int, hi: int, f: Found, param: str, nouns: str) -> None:
    """"on 5000 rows", "using at most 50 examples": how many held-out items an evaluation scores
    (``nouns``: what the items are called; the first names them in a refusal)."""
    m = _search(text, lo, hi, r"\b(?:on|over|using|with|for)\s+(?:(?:at\s+most|up\s+to|the\s+first)\s+)?(?P<n>NUM\d+)\s+"
                              rf"(?:held-out\s+|test\s+|validation\s+)?(?:{nouns})\b", param)
    if m:
        n = _num(text, m.group("n"))
        if n != int(n) or n < 1:
            raise PlanRefused([f"{text.span_text(text.covered(*m.span()))!r}: the number of held-out {nouns.split('|')[0].rstrip('s?')}s is a whole "
                               "number of at least 1"])
        f.set(param, int(n))


def evaluate_adapters(text: Text, lo: int, hi: int, f: Found) -> None:
    """"evaluate the adapters on exact match": what the evaluation reports (exact match and token
    accuracy, both always)."""
    consume(text, lo, hi, r"\b(?:(?:on|by|for|with)\s+)?(?:its|their|the)?\s*(?:exact[\s-]+match|token[\s-]+accuracy)\b", "metric")
    _held_out_count(text, lo, hi, f, "max_examples", r"examples?|samples?|prompts?|records?")   # "on 32 examples"
