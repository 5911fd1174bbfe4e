"""A hyperparameter search read from the words of a tuned training step (and where a request says
it in two places: :func:`space_said_before`, :func:`search_said_again`): the space (each
parameter named with its values: "lr over 0.001, 0.01 and 0.1", "k ∈ {3, 5, 7}", "batch size 32
or 64", "a learning rate between 1e-4 and 1e-2"), trials ("16 trials", "a three-trial search"),
the metric and its direction ("maximizing AUC", "lowest RMSE wins", "for maximum recall") and
the scheduler when one is named (ASHA, FIFO).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from raystack.workflow.ir import TuneSpec
from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.extract import metric_of
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text, number

if TYPE_CHECKING:
    from raystack.workflow.nl.rules import Action

# parameter words -> the training step's parameter
SPACE_PARAMS = [(r"(?:the\s+)?learning[\s-]+rates?|lrs?|step\s+sizes?", "lr"), (r"(?:the\s+)?batch[\s_-]+sizes?", "batch_size"),
                (r"(?:the\s+)?number\s+of\s+epochs|epochs?|passes", "epochs"),
                (r"k|neighbou?rs?|(?:the\s+)?number\s+of\s+neighbou?rs?", "k")]
_PARAM = "|".join(rf"(?P<p{i}>{p})" for i, (p, _) in enumerate(SPACE_PARAMS))
SPACE_PARAM_RX = "|".join(p for p, _ in SPACE_PARAMS)     # a parameter's name, one word
# ("the learning rate being drawn from 0.001, 0.01 and 0.1", "k taken from 3, 5 and 7")
_JOIN = (r"(?:\s*(?:=|:|∈|in|of|over|from|at|values?|across|among|to|grid|set|tuned|searched|swept|varied|being|drawn|taken|chosen"
         r"|picked|sampled|selected|\(|,)\s*)*\s*")
_RANGE = (r"between\s+(?P<a>NUM\d+)\s+and\s+(?P<b>NUM\d+)|from\s+(?P<c>NUM\d+)\s+to\s+(?P<d>NUM\d+)"
          r"|(?P<e>NUM\d+)\s+to\s+(?P<f>NUM\d+)")     # "learning rate (0.01 to 0.5)"
_MAX = rf"(?:higher|bigger|larger|more)\s+(?:(?:{L.METRIC_RX})\s+)?(?:is|=)\s+better|maximi[sz]\w*|maximum|max|highest|higher|best"
_MIN = rf"(?:lower|smaller|less)\s+(?:(?:{L.METRIC_RX})\s+)?(?:is|=)\s+better|minimi[sz]\w*|minimum|min|lowest|lower|smallest"
METRIC_PHRASES = [
    rf"\bmode\s*(?:=|:)\s*(?P<v>min|max)\s+(?:on|for|of|by)\s+(?P<m>{L.METRIC_RX})\b",  # "mode=min on rmse", Tune's words
    rf"\b(?P<v>(?:higher|bigger|larger|lower|smaller)\s+(?P<m>{L.METRIC_RX})\s+(?:is|=)\s+better)\b",   # "higher accuracy is better"
    # "objective max AUC", "objective: minimum RMSE"
    rf"\bobjective\s*(?:=|:|is)?\s*(?P<v>{_MAX}|{_MIN})\s+(?:the\s+)?(?:validation\s+|test\s+)?(?P<m>{L.METRIC_RX})\b",
    # "optimize for max F1", "optimising for the lowest RMSE"
    rf"\boptimi[sz]\w*\s+(?:for\s+)?(?:the\s+)?(?P<v>{_MAX}|{_MIN})\s+(?:validation\s+|test\s+)?(?P<m>{L.METRIC_RX})\b",
    # "aiming for the highest accuracy", "picking the highest AUC", "scoring on recall"
    rf"\b(?:(?:picking|choosing|selecting|aiming|aim|going|go|looking|searching)\s+for\s+(?:the\s+)?|(?:picking|choosing|selecting|keeping)\s+(?:the\s+)?"
    r"(?=(?:higher|highest|best|lower|lowest|max|min|maximum|minimum|top|smallest)\b)|scor(?:e|ed|ing)\s+(?=(?:on|by)\s))?"
    rf"(?P<v>{_MAX}|{_MIN}|optimi[sz]\w*(?:\s+for)?|objective|by|on|for)\s+(?:the\s+)?(?:validation\s+|test\s+)?"
    rf"(?P<m>{L.METRIC_RX})\b(?:\s*\(\s*(?P<v2>{_MAX}|{_MIN})\s*\))?(?:\s+wins|\s+as\s+(?:the|our|its)\s+(?:goal|objective|aim))?",  # "lowest RMSE as the goal"
    rf"\b(?P<m>{L.METRIC_RX})\s*(?:\(|,|-|—|:)?\s*(?P<v>{_MAX}|{_MIN})\b\s*\)?",
    rf"\b(?:the\s+)?(?P<v>{_MAX}|{_MIN})\s+(?P<m>{L.METRIC_RX})\s+wins\b",
    rf"\b(?P<v>metric|objective|score)\s*(?:=|:|is)?\s*(?P<m>{L.METRIC_RX})\b",   # "metric accuracy": its usual direction
]
SCHEDULER = (r"\b(?:under|with|using|via)?\s*(?:the\s+|plain\s+|an?\s+)?(?:scheduler\s*[:=]?\s*)?(?P<s>asha|hyperband|successive\s+halving|"
             r"early\s+stopping|fifo)\b(?:\s+(?:scheduler|scheduling|schedule))?")    # ("scheduler fifo", "scheduler=asha")


# values a search could try, said somewhere: a list, or a range "NUM to NUM"
VALUES_SAID = rf"{L.NUMLIST}|\bNUM\d+\s+to\s+NUM\d+"


def _values(t: Text, s: str) -> list:
    return [number(float(t.literal(x).value())) for x in re.findall(r"(?:NUM|PCT)\d+", s)]


def read_space(t: Text, lo: int, hi: int) -> dict:
    """Each parameter named in [lo, hi) with its list or range of values."""
    space: dict = {}
    pairs = rf"{L.NUMV}(?:\s*,\s*{L.NUMV})+"        # after its parameter, "k in 1, 15" is a list too
    for m, toks in t.finditer(rf"\b(?:{_PARAM})\b{_JOIN}(?:(?P<l>{L.NUMLIST}|{pairs})|{_RANGE})", lo, hi, free_only=True):
        param = next(SPACE_PARAMS[i][1] for i in range(len(SPACE_PARAMS)) if m.group(f"p{i}"))
        t.mark(toks, "tune space")
        if m.group("l"):
            space[param] = _values(t, m.group("l"))
        else:
            a, b = (float(t.literal(x).value()) for x in (m.group("a") or m.group("c") or m.group("e"),
                                                          m.group("b") or m.group("d") or m.group("f")))
            space[param] = {"min": a, "max": b}
    if not space:  # "tune the learning rate of a logistic model over 0.1, 0.01 and 0.001"
        pm = next(t.finditer(rf"\b(?:{_PARAM})\b", lo, hi, free_only=True), None)
        # "the best k for a knn on x.csv, between 1 and 20": a range said apart from its parameter
        rm = next(t.finditer(rf"\b(?:values?\s+)?(?:{_RANGE})\b", lo, hi, free_only=True), None)
        lm = next(t.finditer(rf"(?P<l>{L.NUMLIST})", lo, hi, free_only=True), None)
        if pm is not None and rm is not None and (lm is None or rm[1][0].i <= lm[1][0].i):
            param = next(SPACE_PARAMS[i][1] for i in range(len(SPACE_PARAMS)) if pm[0].group(f"p{i}"))
            t.mark(pm[1] + rm[1], "tune space")
            g = rm[0]
            a, b = (float(t.literal(x).value()) for x in (g.group("a") or g.group("c") or g.group("e"),
                                                          g.group("b") or g.group("d") or g.group("f")))
            space[param] = {"min": a, "max": b}
        elif pm is not None and lm is not None:
            param = next(SPACE_PARAMS[i][1] for i in range(len(SPACE_PARAMS)) if pm[0].group(f"p{i}"))
            t.mark(pm[1] + lm[1], "tune space")
            space[param] = _values(t, lm[0].group("l"))
    return space


def read_tune(t: Text, lo: int, hi: int, space: dict | None = None, more: tuple[int, int] | None = None) -> TuneSpec:
    """The search in tokens [lo, hi); ``space`` when a map already read it; ``more``: where its
    settings are said again, later ("... Sweep lr over 0.005 and 0.05, 4 trials"), read where
    [lo, hi) does not say them."""
    ranges = [(lo, hi)] + ([more] if more else [])

    def first(pattern: str):
        return next((m for a, b in ranges for m in t.finditer(pattern, a, b, free_only=True)), None)

    space = dict(space or {}) or next((sp for a, b in ranges for sp in [read_space(t, a, b)] if sp), {})
    if not space:
        raise PlanRefused([f"the search in {t.span_text(t.tokens[lo:hi])!r} does not say which "
                           "parameter it tunes over which values"])
    for a, b in ranges:
        for _, toks in t.finditer(r"\b(?:over|across|among|values?|in|search|searching|trying)\b", a, b, free_only=True):
            t.mark(toks, "tune")
        for m, toks in t.finditer(rf"(?<![\w-])(?:{_PARAM})(?![\w-])", a, b, free_only=True):   # "sweep k for a kNN (k = 3/5/9)"
            if next(SPACE_PARAMS[i][1] for i in range(len(SPACE_PARAMS)) if m.group(f"p{i}")) in space:
                t.mark(toks, "tune space")
    trials = 0
    m = first(r"(?:(?:a\s+)?budget\s+of\s+)?(?P<n>NUM\d+)\s*(?:-\s*)?(?:trials?|samples|configurations|configs|runs|tries)\b"
              r"|\b(?:trials|num_samples|n_trials)\s*(?:=|:)?\s*(?P<n2>NUM\d+)\b")    # "trials 10", Tune's words
    if m:
        t.mark(m[1], "trials")
        trials = int(float(t.literal(m[0].group("n") or m[0].group("n2")).value()))
    metric, mode = "accuracy", "max"
    # "mode max", "mode=min": the direction said apart from the metric (Tune's words)
    said_mode = first(r"\bmode\s*(?:=|:)?\s*(?P<d>max|min)\b")
    if said_mode:
        t.mark(said_mode[1], "tune metric")
    for pat in METRIC_PHRASES:
        m = first(pat)
        if m:
            t.mark(m[1], "tune metric")
            metric = metric_of(m[0].group("m"))
            v = (m[0].groupdict().get("v2") or m[0].group("v")).lower()
            if re.fullmatch(_MAX, v):
                mode = "max"
            elif re.fullmatch(_MIN, v):
                mode = "min"
            else:
                mode = said_mode[0].group("d") if said_mode else ("min" if metric in L.LOWER_IS_BETTER else "max")
            break
    sched = "fifo"
    m = first(SCHEDULER)
    if m:
        t.mark(m[1], "scheduler")
        sched = "fifo" if m[0].group("s") == "fifo" else "asha"
    return TuneSpec(space=space, metric=metric, mode=mode, trials=trials, scheduler=sched)


def space_said_before(t: Text, model: Action, a: Action, seqs: list[int]) -> bool:
    """"a linear model whose learning rate (0.0001, 0.001 or 0.01) and epochs (20 or 50) are
    tuned", "a knn for y, with k in 3, 5 and 7 tuned": the values, then "tuned" after them, in
    the model's clause (no "then" between), are that model's search."""
    return [x.low for x in t.tokens[a.lo:a.trig_end]] == ["tuned"] \
        and not any(model.lo < c < a.lo for c in seqs) \
        and next(t.finditer(rf"(?:{SPACE_PARAM_RX})\b[^.;]*?(?:{L.NUMLIST})", model.trig_end, a.lo), None) is not None


def search_said_again(t: Text, before: list[Action], a: Action, actions: list[Action]) -> bool:
    """"Could you tune a linear model for y on x.parquet? ... Sweep lr over 0.005 and 0.05, 4
    trials, minimise RMSE": a search with no model of its own, after a tuned training step whose
    words name no space, is that search's settings said again (read as a second search, the
    first had no space and was refused). The earlier search reads these words too. "The search"
    after it names it again ("the search may be retried twice"; "before the sweep", to order by)."""
    tuned = next((b for b in reversed(before) if b.entry == "train_model"), None)
    if tuned is None or not tuned.found.params.get("_tune"):
        return False
    spaced = VALUES_SAID
    # (its words: to the next step named, past semicolons: "The sweep: lr in 0.005, 0.05; 4 trials")
    said = min([b.lo for b in actions if b.lo > a.lo] or [len(t.tokens)])
    if a.trig_end - a.lo == 1 and a.lo >= 1 and t.tokens[a.lo - 1].low in ("the", "that", "this") \
            and next(t.finditer(spaced, a.lo, said), None) is None:
        if a.lo >= 2 and t.tokens[a.lo - 2].low in ("before", "after"):
            t.mark(t.tokens[a.lo - 2:a.lo], "order")     # "Before the sweep: dedupe, ...": to order by
    elif tuned.sentence == a.sentence or "_tune_again" in tuned.found.params \
            or next(t.finditer(spaced, tuned.zlo, tuned.hi), None) is not None \
            or next(t.finditer(spaced, a.lo, said), None) is None:
        return False
    else:
        tuned.found.params["_tune_again"] = a
    a.entry = "_absorbed"
    return True
