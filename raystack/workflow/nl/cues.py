"""Construct cues of one sentence, read before its actions: retries, exit handlers, loops with
their bound, conditions tested on the metric they name, their else branch, parallel groups and
the joins after them, and the sequence words and arrows that order steps.

Each cue marks the words it used and records where it stands, so that the planner can attach
it to the step it belongs to (the step before it, or after it when the cue opens the clause).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.extract import metric_of
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import ARROWS, Text, Token, number, sentences
from raystack.workflow.nl.triggers import AFTER_ARROW

CUE_KINDS = ("retry", "exit", "loop", "cond", "else", "parallel", "join", "seq", "comma")
# the share of missing values compared in any of the comparison wordings ("more than",
# "over", "at least", "under" ...): "if over 30% of the values are missing"
MISSING_OPS = {"more than": ">", "over": ">", "above": ">", "in excess of": ">", "fewer than": "<",
               "less than": "<", "under": "<", "below": "<", "at least": ">=", "no less than": ">=",
               "at most": "<=", "no more than": "<=", "up to": "<=", ">": ">", "<": "<", ">=": ">=", "<=": "<=",
               "≥": ">=", "≤": "<=", "exceed": ">", "exceeds": ">"}
_MISSING_CMP = "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in sorted(MISSING_OPS, key=len, reverse=True))
_OF_VALUES = r"(?:of\s+(?:the\s+|its\s+|their\s+)?(?:values?|rows?|cells?|entries|records?|data)\s+)?"
# each with the comparison ``cmp`` and the share ``v``
MISSING = [
    # ("if those show more than 2% of the cells are empty": what the statistics found)
    # ("..., but only if >5% of values missing": the verb left out)
    rf"\b(?:(?:but\s+)?only\s+if|if|when|provided)\s+(?:(?:those|these|they|it|the\s+(?:stats|statistics|numbers))\s+(?:show|shows|say|says|find|finds|reveal|reveals)\s+(?:that\s+)?)?(?P<cmp>{_MISSING_CMP})\s*(?P<v>PCT\d+)\s+{_OF_VALUES}(?:(?:are|is|turns?\s+out\s+to\s+be)\s+)?(?:missing|empty|blank)\b",
    # "should over 10% of values be missing"
    rf"\bshould\s+(?P<cmp>{_MISSING_CMP})\s+(?P<v>PCT\d+)\s+{_OF_VALUES}(?:be|turn\s+out\s+to\s+be|come\s+back)\s+(?:missing|empty|blank)\b",
    # "Is over 5% of the data missing?"
    rf"\b(?:is|are)\s+(?P<cmp>{_MISSING_CMP})\s+(?P<v>PCT\d+)\s+{_OF_VALUES}(?:missing|empty|blank)(?=\s*\?)",
    # "Over 15% of the values missing? Send ..." (a question opening its clause)
    rf"(?:(?m:^)|(?<=[;:.,)>→?-]\s))(?P<cmp>{_MISSING_CMP})\s+(?P<v>PCT\d+)\s+{_OF_VALUES}(?:(?:are|is)\s+)?(?:missing|empty|blank)(?=\s*[?:,→]|\s*->)",
    # "if the share of missing values is above 5%", "in the event that missing values prove to
    # account for over 5% of all entries", "if missing entries exceed 10% of the data"
    rf"\b{L.IF_CUE}\s+(?:the\s+)?(?:(?:share|proportion|fraction|percentage|rate)\s+of\s+)?(?:missing|empty|blank|null)\s+"
    rf"(?:values|entries|cells|data)\s+(?:(?:proves?|turns?\s+out)\s+to\s+)?(?:(?:is|are|be|accounts?\s+for|account\s+for|"
    rf"makes?\s+up|make\s+up|comes?\s+to)\s+)?(?P<cmp>{_MISSING_CMP})\s+(?P<v>PCT\d+)"
    rf"(?:\s+of\s+(?:all\s+)?(?:the\s+)?(?:entries|values|rows|cells|data|records))?",
    # "should the statistics report over 5% missing values": what the statistics found, said first
    rf"\b{L.IF_CUE}\s+(?:the\s+)?(?:stats|statistics|numbers|summary)\s+(?:show|report|say|find|reveal)s?\s+"
    rf"(?P<cmp>{_MISSING_CMP})\s+(?P<v>PCT\d+)\s+(?:of\s+)?(?:missing|empty|blank|null)\s+(?:values|entries|cells|data)\b",
    # "→ missing > 1%? then ...": the share written as a comparison
    r"(?:(?m:^)|(?<=[;:.,)>→?-]\s))(?:missing|empty|blank|nulls?)(?:\s+(?:share|rate|fraction|ratio))?\s*(?P<cmp>>=|<=|>|<|≥|≤)\s*(?P<v>PCT\d+)(?=\s*[?:,→]|\s*->)",
]


RECENT_METRIC = 8    # tokens back to the metric an "if it's below 5" compares


@dataclass
class Cue:
    kind: str                    # one of CUE_KINDS
    lo: int
    hi: int
    sentence: int
    data: dict = field(default_factory=dict)


def comparison(t: Text, i: int, hi: int) -> tuple[str, float, int] | None:
    """(op, value, end token) of a comparison starting at token i."""
    for pat, op in L.COMPARISONS:
        hit = t.match_at(pat, i, hi)
        if hit is not None:
            m, toks = hit
            v = t.literal(m.group("v"))
            return op, number(float(v.value())), _past_unit(t, toks[-1].i + 1)
    # "isn't at least 0.75", "does not reach 0.9": the opposite comparison
    hit = t.match_at(NOT_LEAD, i, hi)
    if hit is not None and hit[1][-1].i + 1 < hi:
        inner = comparison(t, hit[1][-1].i + 1, hi)
        if inner is not None and (inner[0] in L.NEGATED_OPS or inner[0] == "reach"):
            op, value, end = inner
            return (L.NEGATED_OPS[op] if op != "reach" else "short of"), value, end
    return None


NOT_LEAD = r"(?:(?:is|are|was|were|does|do|did)\s+not|isn't|aren't|wasn't|doesn't|don't|didn't)\b"


# units a threshold may be written in ("RMSE under 6 minutes", "below 6 (minutes)"); the value
# compares as written
VALUE_UNITS = {"minutes", "minute", "mins", "min", "seconds", "second", "secs", "sec", "s", "ms", "hours",
               "hour", "hrs", "h", "days", "day", "points", "pts", "pp", "degrees", "kg", "km", "mm", "cm",
               "euros", "eur", "dollars", "usd"}


def _past_unit(t: Text, end: int) -> int:
    """The token after a threshold's unit, written plain or in parentheses (the caller marks the
    comparison's tokens up to it)."""
    toks = t.tokens
    if end < len(toks) and toks[end].low in VALUE_UNITS and not toks[end].used:
        return end + 1
    if end + 2 < len(toks) and toks[end].text == "(" and toks[end + 1].low in VALUE_UNITS and toks[end + 2].text == ")" \
            and not toks[end + 1].used:
        return end + 3
    return end


def _reach(op: str, metric: str) -> str:
    """"reaches 0.9" is at least 0.9 (at most, for a loss); "falls short of" its opposite."""
    if op == "reach":
        return "<=" if metric in L.LOWER_IS_BETTER else ">="
    if op == "short of":
        return ">" if metric in L.LOWER_IS_BETTER else "<"
    return op


def _retries(t: Text, lo: int, hi: int, si: int) -> list[Cue]:
    out = []
    for pat in L.RETRIES:
        for m, toks in t.finditer(pat, lo, hi, free_only=True):
            g = m.groupdict()
            if g.get("n"):
                n = int(float(t.literal(g["n"]).value()))
            elif g.get("w"):
                n = L.RETRY_WORDS[g["w"]]
            else:
                n = int(float(t.literal(g["t"]).value())) - 1
            skipped = {x.i for x in t.covered(*m.span("sk"))} if "sk" in m.re.groupindex and m.group("sk") else set()
            t.mark([x for x in toks if x.i not in skipped], "retries")
            out.append(Cue("retry", toks[0].i, toks[-1].i + 1, si, {"n": n}))
    return out


def _loop_conditions(t: Text, lo: int, hi: int):
    """(match, tokens, negate) of each loop condition: "until X <op> v", or "repeat while X <op> v"
    (its stopping test is the opposite comparison)."""
    subject = rf"\s+(?:the\s+|its\s+|their\s+|it\s+|model's\s+)?{L.METRIC_MOD}(?P<m>{L.METRIC_RX})\s+{L.METRIC_WHERE}"
    found = [(m, toks, False) for m, toks in t.finditer(rf"\b{L.UNTIL_CUE}{subject}", lo, hi, free_only=True)]
    found += [(m, toks, True) for m, toks in t.finditer(rf"\b{L.WHILE_CUE}{subject}", lo, hi, free_only=True)]
    # "keep training the knn on x.csv while accuracy is below 0.9": the repeating verb, then its
    # object, then the condition
    kept = next(t.finditer(r"\b(?:keep|keeps|keeping)\s+(?:on\s+)?(?:training|re-?training|fitting|re-?fitting|running|going)\b"
                           r"|\brepeat(?:edly)?\b", lo, hi), None)
    if kept is not None:
        found += [(m, toks, True) for m, toks in t.finditer(rf"\b(?:while|(?:for\s+)?as\s+long\s+as){subject}", kept[1][-1].i + 1, hi,
                                                              free_only=True)
                  if not any(f[1][0].i <= toks[0].i < f[1][-1].i + 1 for f in found)]
    return sorted(found, key=lambda f: f[1][0].i)


def _loops(t: Text, lo: int, hi: int, si: int) -> list[Cue]:
    out = []
    found = _loop_conditions(t, lo, hi)
    # ("1 epoch each round; stop at AUC >= 0.8 or after 5 rounds": the sentence before says the round too)
    before = max((a for a, b in sentences(t) if b <= lo), default=lo) if found else lo
    for m, toks, negate in found:
        cmp = comparison(t, toks[-1].i + 1, hi)
        if cmp is None:
            raise PlanRefused([f"the loop condition {t.span_text(toks)!r}... is not a comparison "
                               "with a number"])
        op, value, end = cmp
        metric = metric_of(m.group("m"))
        op = _reach(op, metric)
        if negate:
            if op not in L.NEGATED_OPS:
                raise PlanRefused([f"the loop condition {t.span_text(t.tokens[toks[0].i:end])!r} has no opposite to stop on"])
            op = L.NEGATED_OPS[op]
        t.mark(t.tokens[toks[0].i:end], "loop")
        bound = next(t.finditer(L.BOUND, lo, hi, free_only=True), None)
        if bound is None:     # ("... until the loss is 0.3 or lower; give up after 8 rounds."): the bound opening the next sentence
            nxt = next(((a, b) for a, b in sentences(t) if a >= hi), None)
            bound = t.match_at(L.BOUND, nxt[0], nxt[1]) if nxt is not None else None
            if bound is not None and any(x.used for x in bound[1]):
                bound = None
        if bound is None:
            raise PlanRefused([f"the loop {t.span_text(t.tokens[toks[0].i:end])!r} has no bound; "
                               "say 'at most N times'"], "unbounded")
        bm, btoks = bound
        t.mark(btoks, "loop bound")
        n = next(g for g in (bm.group(f"n{k}") for k in ("", 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)) if g)
        per_round: dict = {}
        for pat, params in L.PER_ROUND.items():
            for m2, toks2 in t.finditer(pat, before, hi, free_only=True):
                said = [float(t.literal(v).value()) for v in re.findall(r"NUM\d+", m2.group(0))]
                if said and (said[0] != int(said[0]) or said[0] < 1):
                    continue      # "0.5 epochs per round" is no count of epochs
                t.mark(toks2, "loop")
                # ("two epochs per round", "2 epochs a round": that many a round)
                per_round.update({**params, "epochs": int(said[0])} if said else params)
        out.append(Cue("loop", toks[0].i, end, si, {"metric": metric, "op": op,
                                                   "value": value, "per_round": per_round,
                                                   "max": int(float(t.literal(n).value()))}))
        for _, toks2 in t.finditer(L.LOOP_WORDS, lo, hi, free_only=True):
            t.mark(toks2, "loop")
        for _, toks2 in t.finditer(L.ROUND_WORDS, 0, len(t.tokens), free_only=True):
            t.mark(toks2, "loop")   # "an epoch per round; keep going until ...": the round is the loop's
    return out


def _held_out(said: str) -> bool:
    """Whether a condition names a figure of held-out data ("if the test accuracy is ...", "if
    accuracy on the test set is ..."), which a training's own figures are not."""
    return re.search(rf"\b{L.HELD_OUT_WORDS}\b", said) is not None


def _cond(t: Text, si: int, start: int, end: int, metric: str, op: str, value: Any, said: str = "") -> Cue:
    """The condition said by tokens [start, end), marked as read; ``said``: the words that name its
    metric, which may say it is a figure of held-out data."""
    t.mark(t.tokens[start:end], "condition")
    return Cue("cond", start, end, si, {"metric": metric, "op": op, "value": value, "held_out": _held_out(said)})


def _other_side(cond: Cue, op: str, value: Any) -> bool:
    """Whether ``op value`` holds exactly where condition ``cond`` fails."""
    return L.NEGATED_OPS.get(cond.data["op"]) == op and float(value) == float(cond.data["value"])


def _conditions(t: Text, lo: int, hi: int, si: int, earlier: list[Cue]) -> list[Cue]:
    out = []
    for pat in MISSING:
        for m, toks in t.finditer(pat, lo, hi, free_only=True):
            out.append(_cond(t, si, toks[0].i, toks[-1].i + 1, "missing_fraction", MISSING_OPS[" ".join(m.group("cmp").split())],
                             number(float(t.literal(m.group("v")).value()))))
    # "if the accuracy is under 0.8"; "if it scores over 80%": the score of the step it names (an
    # evaluation's chosen metric)
    for m, toks in t.finditer(rf"\b{L.IF_CUE}\s+(?:(?:the\s+|its\s+|their\s+|it's\s+|model's\s+|the\s+model's\s+|that\s+|this\s+)?"
                              rf"{L.METRIC_MOD}(?P<m>{L.METRIC_RX})\s+{L.METRIC_WHERE}"
                              r"|(?:it|they|the\s+(?:model|classifier|evaluation|knn|evaluated\s+model))\s+(?:scores?|scored)\b)",
                              lo, hi, free_only=True):
        cmp = comparison(t, toks[-1].i + 1, hi)
        if cmp is None:
            continue
        op, value, end = cmp
        metric = metric_of(m.group("m")) if m.group("m") else "score"
        named = None if m.group("m") else t.match_at(   # "if it scores above 0.75 on f1": that metric
            rf"(?:on|in|for|by)\s+(?:the\s+|its\s+|their\s+)?(?P<m2>{L.METRIC_RX})\b", end, hi)
        if named is not None:
            metric, end = metric_of(named[0].group("m2")), named[1][-1].i + 1
        out.append(_cond(t, si, toks[0].i, end, metric, _reach(op, metric), value, m.group(0)))
    # "provided it scores an AUC of at least 0.75", "if it gets 0.95 accuracy or better": the metric
    # named after the verb, before or after its threshold
    # ("If we get 80% accuracy or more": the writer as the subject)
    for m, toks in t.finditer(rf"\b{L.IF_CUE}\s+(?:it|they|we|the\s+(?:model|classifier|job|run|winner|better(?:\s+one|\s+of\s+the\s+(?:two|pair|NUM\d+))?"
                              # "if the search finds an AUC above 0.8"
                              r"|search|tuning|sweep|(?:best|winning|top)\s+(?:one|configuration|config|trial|run|model|candidate)))\s+"
                              r"(?:scores?|gets?|achieves?|reaches|hits|has|lands|finds|found|returns|turns\s+up)\s+"
                              rf"(?:(?:an?\s+)?(?P<m>{L.METRIC_RX})\s+(?:of\s+)?(?=(?:at|no|not|above|over|below|under|more|less|NUM|PCT|[<>≤≥]))"
                              rf"|(?P<v>NUM\d+|PCT\d+)\s+(?P<m2>{L.METRIC_RX})\s+or\s+(?P<d>better|more|higher|above|worse|less|lower|below)\b)",
                              lo, hi, free_only=True):
        if m.group("m2"):
            metric = metric_of(m.group("m2"))
            up = m.group("d") in ("more", "higher", "above") or (m.group("d") == "better") != (metric in L.LOWER_IS_BETTER)
            out.append(_cond(t, si, toks[0].i, toks[-1].i + 1, metric, ">=" if up else "<=",
                             number(float(t.literal(m.group("v")).value())), m.group(0)))
            continue
        cmp = comparison(t, toks[-1].i + 1, hi)
        if cmp is not None:
            op, value, end = cmp
            metric = metric_of(m.group("m"))
            out.append(_cond(t, si, toks[0].i, end, metric, _reach(op, metric), value, m.group(0)))
    # "If the search ends above 0.8 AUC", "if it finishes under 3.1 val loss": how a run ended, its
    # threshold before the metric
    for m, toks in t.finditer(rf"\b{L.IF_CUE}\s+(?:it|they|we|the\s+(?:model|search|tuning|sweep|run|job|winner|training|classifier))\s+"
                              r"(?:ends?(?:\s+up)?|ended(?:\s+up)?|finish(?:es|ed)?|comes?\s+out|came\s+out|lands?|gets?|scores?|achieves?)\s+"
                              rf"(?P<c>above|over|below|under|at\s+least|at\s+most)\s+(?P<v>NUM\d+|PCT\d+)\s+(?:of\s+)?(?P<m>{L.METRIC_RX})\b",
                              lo, hi, free_only=True):
        out.append(_cond(t, si, toks[0].i, toks[-1].i + 1, metric_of(m.group("m")), MISSING_OPS[" ".join(m.group("c").split())],
                         number(float(t.literal(m.group("v")).value())), m.group(0)))
    # "If it's at least 80% accurate, put it into production": the accuracy, said by its adjective
    for m, toks in t.finditer(rf"\b{L.IF_CUE}\s+(?:it\s*'s|it\s+is|they\s*'re|they\s+are|the\s+model\s+is)\s+"
                              rf"(?P<cmp>{_MISSING_CMP})?\s*(?P<v>PCT\d+|NUM\d+)\s+accurate\b", lo, hi, free_only=True):
        op = MISSING_OPS[" ".join(m.group("cmp").split())] if m.group("cmp") else ">="
        out.append(_cond(t, si, toks[0].i, toks[-1].i + 1, "accuracy", op, number(float(t.literal(m.group("v")).value()))))
    # "Pick the lowest RMSE; if it's below 5, export it": "it" is the one metric the clause before named
    # ("... keep the lowest RMSE. Under 5 → export ...": a bare comparison opening its sentence)
    # ("should it be 0.6 or more, export it": the formal order)
    for m, toks in t.finditer(rf"\b{L.IF_CUE}\s+(?:it\s*'s|it\s+is|that\s*'s|that\s+is)(?=\s)|\bshould\s+(?:it|that)\s+be(?=\s)"
                              rf"|(?:(?<=[.;]\s)|^|{AFTER_ARROW})(?=(?:under|below|over|above|at\s+least|at\s+most|<|>|≤|≥|<=|>=)\s*(?:NUM|PCT)\d+\s*(?:→|->|\?|:))",
                              lo, hi, free_only=True):
        start = toks[0].i if toks else t.token_at(m.start()).i
        cmp = comparison(t, toks[-1].i + 1 if toks else start, hi)
        named = {metric_of(x.low) for x in t.tokens[max(0, start - RECENT_METRIC):start] if re.fullmatch(L.METRIC_RX, x.low)}
        last = next((c for c in reversed(earlier + out) if c.kind == "cond"), None)
        if toks and cmp is not None and last is not None and _other_side(last, *cmp[:2]) \
                and named <= {last.data["metric"]}:
            # "If the RMSE is under 2, deploy it; if it's 2 or more, send 'x'": the other side of
            # the condition just said, an else
            t.mark(t.tokens[start:cmp[2]], "otherwise")
            out.append(Cue("else", start, cmp[2], si))
            continue
        if cmp is None or len(named) != 1:
            continue
        op, value, end = cmp
        metric = named.pop()
        out.append(_cond(t, si, start, end, metric, _reach(op, metric), value, m.group(0)))
    for m, toks in t.finditer(rf"\bunless\s+(?:the\s+|its\s+|their\s+|it's\s+|model's\s+)?{L.METRIC_MOD}"
                              rf"(?P<m>{L.METRIC_RX})\s+{L.METRIC_WHERE}", lo, hi, free_only=True):
        cmp = comparison(t, toks[-1].i + 1, hi)
        if cmp is None or cmp[0] not in L.NEGATED_OPS and cmp[0] != "reach":
            continue
        op, value, end = cmp
        metric = metric_of(m.group("m"))
        out.append(_cond(t, si, toks[0].i, end, metric, L.NEGATED_OPS[_reach(op, metric)], value, m.group(0)))
    # ("Best accuracy over 85%? Export it", "The final RMSE at or below 1.5 -> deploy")
    for m, toks in t.finditer(rf"(?:(?m:^)|(?<=[;:.,)>→|-]\s))(?:the\s+|its\s+)?{L.METRIC_MOD}(?P<m>{L.METRIC_RX})\s+", lo, hi,
                              free_only=True):
        cmp = comparison(t, toks[-1].i + 1, hi)
        if cmp is None:
            continue
        op, value, end = cmp
        nxt = t.tokens[end] if end < len(t.tokens) else None
        if nxt is None or nxt.text not in (*ARROWS, ":", ",", "?", "means"):
            continue          # only a clause of its own: "Recall under 60% -> send 'low'", "... means we deploy it"
        metric = metric_of(m.group("m"))
        if nxt.low == "means":
            end += 2 if end + 1 < len(t.tokens) and t.tokens[end + 1].low in ("we", "you", "i") else 1
        out.append(_cond(t, si, toks[0].i, end, metric, _reach(op, metric), value))
    # "Is the accuracy 80% or more? Then deploy it": a condition asked as a question of its own
    for m, toks in t.finditer(rf"(?:(?m:^)|(?<=[;:.,!)>→-]\s))(?:is|are|was|does|did)\s+(?:the\s+|its\s+|their\s+|our\s+)?"
                              rf"{L.METRIC_MOD}(?P<m>{L.METRIC_RX})\s+{L.METRIC_WHERE}", lo, hi, free_only=True):
        cmp = comparison(t, toks[-1].i + 1, hi)
        if cmp is None or cmp[2] >= len(t.tokens) or t.tokens[cmp[2]].text != "?":
            continue
        op, value, end = cmp
        metric = metric_of(m.group("m"))
        out.append(_cond(t, si, toks[0].i, end, metric, _reach(op, metric), value, m.group(0)))
        so = t.match_at(r"\?\s+(?:if\s+so|if\s+yes|if\s+it\s+is|yes\s*\?)\s*,?", end, min(end + 5, len(t.tokens)))
        if so is not None:      # "Is accuracy below 0.6? If so, send 'bad model'": the answer's words
            t.mark([x for x in so[1] if x.text != "?"], "condition")
    for m, toks in t.finditer(rf"(?:(?m:^)|(?<=[;:.,)>→-]\s))(?P<op>>=|≥|<=|≤|>|<)\s*(?P<v>{L.NUMV})\s+(?P<m>{L.METRIC_RX})(?=\s*[?:→]|\s*->)",
                              lo, hi, free_only=True):      # "≥80% accuracy? deploy as x"
        op = {"≥": ">=", "≤": "<="}.get(m.group("op"), m.group("op"))
        out.append(_cond(t, si, toks[0].i, toks[-1].i + 1, metric_of(m.group("m")), op,
                         number(float(t.literal(m.group("v")).value()))))
    for m, toks in t.finditer(rf"\b{L.ELSE_DIRECTION}", lo, hi, free_only=True):
        t.mark(toks, "otherwise")
        out.append(Cue("else", toks[0].i, toks[-1].i + 1, si, {"direction": next(d for d in ("up", "down", "worse") if m.group(d))}))
    # "...; if not, leave the table alone": no else branch (nothing is run when the condition fails)
    for _, toks in t.finditer(rf"\b{L.ELSE_CUE}\s*,?\s*{NOTHING_ELSE}", lo, hi, free_only=True):
        t.mark(toks, "otherwise: nothing")
    for _, toks in t.finditer(rf"\b{L.ELSE_CUE}\b", lo, hi, free_only=True):
        t.mark(toks, "otherwise")
        out.append(Cue("else", toks[0].i, toks[-1].i + 1, si))
    return out


NOTHING_ELSE = (r"(?:just\s+)?(?:leave\s+(?:it|them|the\s+(?:table|data|rows|file))\s+(?:alone|as\s+(?:it\s+is|they\s+are|is))"
                r"|do\s+nothing|skip\s+(?:it|that|this)|carry\s+on|move\s+on|don't\s+bother"
                # "otherwise nothing further is required", "otherwise the readings are to be left unaltered"
                r"|nothing\s+(?:further|more|else)\s+(?:is\s+)?(?:required|needed|necessary|to\s+be\s+done)"
                r"|(?:the\s+)?(?:table|data|rows|readings|records|values|file)\s+(?:is|are)\s+to\s+be\s+left\s+(?:unaltered|unchanged|as\s+(?:it\s+is|they\s+are)|alone))\b")


def _ternary_else(t: Text, lo: int, hi: int, si: int, cues: list[Cue]) -> list[Cue]:
    """"AUC > 0.72 ? export ./m : notify 'low'": the colon after a condition asked with "?" opens
    its else, as a programmer's conditional expression writes it."""
    out = []
    for c in cues:     # (the "?" ends a sentence: the condition may close the one before)
        if c.kind != "cond" or c.hi >= hi or t.tokens[c.hi].text != "?" or c.hi + 1 < lo:
            continue
        colon = next((x for x in t.tokens[max(lo, c.hi + 1):hi] if x.text == ":" and not x.used), None)
        # (the else is a step: "... : notify 'x'"; "Notify me: 'x'" is the message's colon)
        if colon is not None and any(not x.used and x.kind == "word" for x in t.tokens[c.hi + 1:colon.i]) \
                and colon.i + 1 < hi and t.tokens[colon.i + 1].kind == "word":
            t.mark([colon], "otherwise")
            out.append(Cue("else", colon.i, colon.i + 1, si))
    return out


def read_cues(t: Text, lo: int, hi: int, si: int, earlier: list[Cue]) -> list[Cue]:
    """The construct cues of sentence ``si`` (tokens [lo, hi)), in text order; ``earlier``: the
    sentences' before it."""
    cues = _retries(t, lo, hi, si)
    for pat, kind in L.EXIT_CUES:
        for _, toks in t.finditer(pat, lo, hi, free_only=True):
            if kind == "always" and _stresses_a_bound(t, lo, toks):
                continue        # ("stop after 7 rounds no matter what": the loop's bound, read with it)
            t.mark(toks, "exit")
            cues.append(Cue("exit", toks[0].i, toks[-1].i + 1, si, {"kind": kind}))
    for _, toks in t.finditer(L.JOIN_PHRASES, lo, hi, free_only=True):
        t.mark(toks, "join")
        cues.append(Cue("join", toks[0].i, toks[-1].i + 1, si))
    for _, toks in t.finditer(L.END_PHRASES, lo, hi, free_only=True):
        t.mark(toks, "end")
    cues += _loops(t, lo, hi, si)
    cues += _conditions(t, lo, hi, si, earlier)
    cues += _ternary_else(t, lo, hi, si, earlier[-3:] + cues)
    for _, toks in t.finditer(L.PARALLEL, lo, hi, free_only=True):
        t.mark(toks, "parallel")
        cues.append(Cue("parallel", toks[0].i, toks[-1].i + 1, si))
    for _, toks in t.finditer(L.PURPOSE, lo, hi, free_only=True):
        if toks[0].i == lo:
            t.mark(toks, "purpose")
    for _, toks in t.finditer(L.SEQUENCE, lo, hi, free_only=True):
        t.mark([x for x in toks if x.kind != "punct"], "sequence")  # arrows stay for "report -> x.md"
        cues.append(Cue("seq", toks[0].i, toks[-1].i + 1, si))
    for tok in t.tokens[lo:hi]:
        if tok.text in (",", "(", ")", "—", "–", "-", ":"):
            cues.append(Cue("comma", tok.i, tok.i + 1, si))
    return sorted(cues, key=lambda c: c.lo)


def _stresses_a_bound(t: Text, lo: int, toks: list[Token]) -> bool:
    """"(stop after 7 rounds no matter what)", "round 10 is the last one regardless": the cue
    right after a loop's bound (a comma between at most) stresses the bound."""
    end = toks[0].i - (toks[0].i > lo and t.tokens[toks[0].i - 1].text == ",")
    return any(m_toks[-1].i == end - 1 for _, m_toks in t.finditer(L.BOUND, max(lo, end - 12), end))


def unbounded(t: Text) -> None:
    """Refuse a loop or retry that asks for no limit ("forever", "as many rounds as it takes")."""
    m = re.search(L.UNBOUNDED, t.masked)
    if m:
        raise PlanRefused([f"the request asks for an unbounded loop: {m.group(0)!r}"], "unbounded")
