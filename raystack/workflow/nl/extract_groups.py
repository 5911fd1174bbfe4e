"""What an aggregation request says: the group keys ("per city", "by store and month", "for
each of the cities"), the one function it computes per group (sum, mean, median, count, min or
max) and the measure it names; a second function, a function the step lacks, or a period said
as an adjective with no key that holds it ("the daily totals per product") is refused."""
from __future__ import annotations

import re

from raystack.workflow.nl.extract import Found, _search, consume
from raystack.workflow.nl.lexicon import GROUP_KEY_MARK, NOT_GROUPS
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text

AGG_WORDS = {"sum": "sum", "sums": "sum", "total": "sum", "totals": "sum", "count": "count",
             "counts": "count", "number": "count", "mean": "mean", "means": "mean", "average": "mean",
             "averages": "mean", "avg": "mean", "median": "median", "medians": "median", "min": "min",
             "minimum": "min", "lowest": "min", "smallest": "min", "max": "max", "maximum": "max", "highest": "max",
             "largest": "max",
             # "tally by decision": the rows of each group counted (the step's default would sum them)
             "tally": "count", "tallies": "count", "tallied": "count", "tallying": "count",
             # the passive: "the yield per field is to be summed", "... is averaged"
             "summed": "sum", "totalled": "sum", "totaled": "sum", "averaged": "mean",
             # the function said after the key: "group by region, summing revenue"
             "summing": "sum", "totalling": "sum", "totaling": "sum", "averaging": "mean"}


def singular(word: str) -> str:
    """The singular of a plural noun, by the common English endings (cities, branches, stores)."""
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


AGGREGATES_SAID = "aggregate computes a sum, mean, median, count, min or max of each group"
AGG_RX = r"\b(?P<a>" + "|".join(AGG_WORDS) + r")\b"    # an aggregate's function, said
# a group key said in the plural: "for each of the cities", "across (all the) regions"
PLURAL_KEY_MARK = r"(?:(?:for|in)\s+each\s+of\s+(?:the|its|their)|across(?:\s+(?:all\s+)?(?:the|its|their))?)"


def aggregate(text: Text, lo: int, hi: int, f: Found) -> None:
    _aggregate(text, lo, hi, f)
    if f.params.get("agg") == "count":
        _counted_rows(text, lo, hi)


def _aggregate(text: Text, lo: int, hi: int, f: Found) -> None:
    # "group by region, summing revenue": the measure after the function's gerund
    consume(text, lo, hi, r"(?:(?<=\bsumming\s)|(?<=\baveraging\s)|(?<=\btotalling\s))(?:the\s+)?[a-z_][a-z0-9_]*\b", "measure")
    # what is aggregated, one word or a compound ("the delay minutes per line")
    consume(text, lo, hi, rf"\b(?:the\s+)?(?:[a-z_][a-z0-9_]*\s+){{1,2}}(?=(?:{GROUP_KEY_MARK}|{PLURAL_KEY_MARK})\b)", "measure")
    # a key is no verb of the next step ("total the amounts per country, and get a bar chart")
    # (nor the function: "group by region and count" counts per region)
    key = r"(?!NUM)(?!(?:the|a|an|it|them|then|and|get|make|draw|give|show|plot|save|write|send|create|produce|also|" \
          r"after|afterwards|before|later|next|finally|lastly|" \
          r"compute|train|fit|export|deploy|email|notify|tell|count|sum|total|average|mean|median|max|min)\b)[a-z_][a-z0-9_]*"
    # "how many bookings each castle got": the rows counted per castle
    m = _search(text, lo, hi, r"\beach\s+(?P<c>(?!NUM)[a-z_][a-z0-9_]*)\s+(?:got|had|has|gets|received|made|took|saw|logged|sold|booked)\b",
                "group key")
    if m:
        f.set("by", m.group("c"))
        f.set("agg", "count")
        return
    # "by store and month", "per region, channel and week": every column named is a key
    m = _search(text, lo, hi, rf"\b(?:by|per|grouped\s+by)\s+(?P<c>{key})(?P<more>(?:\s*,\s*{key})*\s*,?\s*(?:and|&)\s+{key})"
                              r"(?=\s*(?:[.;:)]|,\s*(?:and|then)\b|$)|\s+(?:from|in|of)\s+FILE\d+)", "group keys")
    if m:
        f.set("by", [m.group("c")] + re.findall(r"[a-z_][a-z0-9_]*", re.sub(r"\band\b", " ", m.group("more"))))
        return _agg_word(text, lo, hi, f)
    # "for each of the cities", "across regions": the key is said in the plural; the column is
    # the singular ("cities" -> city; a wrong guess is a clear error at run time, naming the column)
    m = _search(text, lo, hi, rf"\b{PLURAL_KEY_MARK}\s+(?!{NOT_GROUPS}\b)(?P<c>[a-z_][a-z0-9_]*[^s]s)\b", "group key")
    if m:
        f.set("by", singular(m.group("c")))
        return _agg_word(text, lo, hi, f)
    # "each region's total revenue": the key said as whose the figure is
    m = _search(text, lo, hi, r"\beach\s+(?!(?:column|field|feature|variable|col)\b)(?P<c>[a-z_][a-z0-9_]*)\s*'s(?=\s+(?:total|average|mean|median|maximum|minimum|max|min|highest"
                              r"|lowest|largest|smallest|count|number)\b)", "group key")
    if m:
        f.set("by", m.group("c"))
        return _agg_word(text, lo, hi, f)
    # "aggregate x.csv by computing the total per city": a gerund after "by" says how, not the key
    m = _search(text, lo, hi, rf"\b(?:{GROUP_KEY_MARK}|across|groupby|group-by)\s+(?!NUM)(?![a-z]+ing\b)(?P<c>[a-z_][a-z0-9_]*)",
                "group key") or \
        _search(text, lo, hi, r"\bper-(?P<c>[a-z_][a-z0-9_]*)\b", "group key")
    if m:
        f.set("by", m.group("c"))
        # "gallery totals (by gallery)": the key said again before the function's noun
        consume(text, max(0, lo - 1), hi, rf"\b{re.escape(m.group('c'))}(?=\s+(?:totals?|sums?|averages?|means?|medians?|counts?)\b)",
                "group key")
    _agg_word(text, lo, hi, f)


# words that pick some of the rows a count counts ("the late deliveries", "failed orders")
ROW_QUALIFIERS = {"late", "early", "open", "closed", "active", "inactive", "new", "old", "overdue", "unpaid", "paid",
                  "missing", "invalid", "valid", "bad", "good", "big", "small", "large", "high", "low", "positive", "negative",
                  "unique", "distinct", "different", "repeat", "returning", "successful", "pending", "fraudulent"}


def _counted_rows(text: Text, lo: int, hi: int) -> None:
    """"count the late deliveries per driver", "the number of unique customers per region": a
    count of some of the rows, or of distinct values, which the count (every row of each group)
    is not; refused, quoting the words."""
    for x in text.tokens[lo:hi]:
        if x.kind == "word" and (x.low in ROW_QUALIFIERS or (x.low.endswith("ed") and x.used in ("measure", "aggregate"))) \
                and x.i + 1 < hi and text.tokens[x.i + 1].kind == "word" and text.tokens[x.i + 1].low.endswith("s") \
                and x.used in ("", "measure", "aggregate"):
            raise PlanRefused([f"{text.span_text(text.tokens[x.i:x.i + 2])!r}: the count counts every row of each group; "
                               "no step picks some of them (or counts distinct values)"])


# a period said as an adjective ("daily totals") and the key columns that hold it
PERIOD_KEYS = {"hourly": ("hour", "hours"), "daily": ("day", "days", "date", "dates"), "weekly": ("week", "weeks"),
               "monthly": ("month", "months"), "quarterly": ("quarter", "quarters"), "yearly": ("year", "years"),
               "annual": ("year", "years")}


def _period_keyed(text: Text, lo: int, hi: int, f: Found) -> None:
    """"the daily totals per product": per product and per day; grouped by the product alone the
    plan summed every day together. Refused unless a key is the period's own column ("hourly
    totals (by hour)")."""
    keys = f.params.get("by")
    keys = [keys] if isinstance(keys, str) else list(keys or [])
    for m, toks in text.finditer(r"\b(?P<p>" + "|".join(PERIOD_KEYS) + r")\b", lo, hi):
        if keys and not any(k in PERIOD_KEYS[m.group("p")] for k in keys):
            raise PlanRefused([f"{m.group('p')!r} figures per {', '.join(keys)}: no key holds the period; "
                               f"group by its column as well (\"by {PERIOD_KEYS[m.group('p')][0]} and {keys[0]}\")"])


def _agg_word(text: Text, lo: int, hi: int, f: Found) -> None:
    _period_keyed(text, lo, hi, f)
    if _search(text, lo, hi, rf"\bhow\s+many\s+(?!{GROUP_KEY_MARK}\b)[a-z_]\w*\b(?:\s+(?:are\s+)?there\b)?", "aggregate"):
        f.set("agg", "count")      # "how many rows per city": the rows of each group counted
        consume(text, lo, hi, r"\b(?:are|is)\s+there\b", "aggregate")
        return
    other = next(text.finditer(r"\b(?:modes?|percentiles?|quantiles?|std|stdev|standard\s+deviations?|variances?)\b", lo, hi), None)
    if other is not None:   # "aggregate the std of amount by region" summed it
        raise PlanRefused([f"{text.span_text(other[1])!r} per group: {AGGREGATES_SAID}"])
    said = {AGG_WORDS[m.group("a")] for m, _ in text.finditer(AGG_RX, lo, hi) if m.group("a") not in ("number", "count", "counts")}
    # ("the mean price per city and the number of listings per city": a count said with its own key
    # beside another function is a second aggregation, which the step dropped)
    keys = sum(1 for _ in text.finditer(rf"\b(?:{GROUP_KEY_MARK})\s+[a-z_]", lo, hi))
    if said and keys > 1 and next(text.finditer(r"\b(?:number\s+of|count|counts)\b", lo, hi), None) is not None:
        said.add("count")
    if len(said) > 1:   # "mean and max price by city": the step computes one function (the max was dropped)
        raise PlanRefused([f"{' and '.join(sorted(said))} per group: the aggregate computes one function; "
                           "say one aggregation for each"])
    m = _search(text, lo, hi, AGG_RX, "aggregate")
    if m:
        f.set("agg", AGG_WORDS[m.group("a")])
        # "group by country and sum amount": the measure right after the function (the step
        # aggregates every numeric column, the one named among them)
        consume(text, lo, hi, r"(?<=\b" + m.group("a") + r" )(?:of\s+)?(?:the\s+)?[a-z_][a-z0-9_]*\b(?=\s*(?:[.,;:!?)]|$|\s+(?:and|then)\b))",
                "measure")
