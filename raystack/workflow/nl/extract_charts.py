"""The chart a plot step draws, read from the words of its action: the image file, the chart's
kind (a histogram, bars or a line; kinds the step cannot draw are refused), a metric of an
earlier step's results, or the table column(s) named ("a histogram of price", "plot the amount
and qty columns"); a figure per group, or a name of several words, is refused with what to say
instead."""

from __future__ import annotations

import re

from raystack.workflow.nl.extract import (IMAGE_EXT, Found, _path_param, _search, _set_map,
                                          metric_of)
from raystack.workflow.nl.lexicon import FILLERS, METRIC_RX
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text

# what a plot may be said to draw that is no column: its input, a chart word, a part's figures
PLOTTED_NOUNS = {"it", "them", "this", "that", "these", "those", "everything", "all", "both", "each", "data",
                 "dataset", "table", "tables", "rows", "row", "records", "values", "value", "results", "result",
                 "numbers", "distribution", "distributions", "histogram", "histograms", "chart", "graph", "plot",
                 "figure", "metrics", "metric", "scores", "score", "curve", "curves", "history", "trend",
                 "trends", "progress", "outcome", "outcomes", "findings", "stats", "statistics", "summary",
                 "sample", "samples", "split", "model", "models", "run", "runs", "training", "evaluation",
                 "evaluations", "comparison", "output", "outputs", "columns", "features", "bar", "line",
                 "pie", "scatter", "out", "readings", "measurements", "observations", "points", "entries", "figures",
                 # the table's state, not a column ("plot the raw values", "the original values")
                 "raw", "original", "full", "whole", "entire", "initial", "untouched", "unprocessed",
                 # an aggregate's results named by its function ("graph the tallies", "chart the totals")
                 "totals", "tallies", "counts", "sums", "averages", "means", "medians", "aggregates", "breakdown"}


CHART_KIND = (r"\b(?P<k>line|bar|pie|scatter|box|area|violin|bubble|donut|radar)\s*-?\s*(?:charts?|graphs?|plots?|diagrams?)\b"
              r"|\bas\s+(?:a\s+)?(?P<a>line|bars|histogram)\b|\b(?P<o>over\s+(?:the\s+)?(?:rows|time))\b"
              r"|\b(?P<h>heat\s*-?\s*maps?|scatter\s*-?\s*plots?|boxplots?|pie\s+of)\b")
TWO_COLUMNS = r"\b[a-z_][a-z0-9_]*\s+(?:vs\.?|versus|against)\s+(?:the\s+)?[a-z_][a-z0-9_]*\b"


# what ends a column named after "a histogram of": a clause's end, or where the data comes from
CHART_NAME_END = r"(?=\s*(?:[.,;:!?)]|$|->|=>|→)|\s+(?:and|then|to|into|in|as|from|of|over|per|by|with|for|across)\b" \
                 r"|\s+(?:saved|stored|written|exported)\s+(?:as|to|in|into|at)\b)"   # "a histogram of latency saved as l.png"


def plot(text: Text, lo: int, hi: int, f: Found) -> None:
    _path_param(text, lo, hi, f, "path", IMAGE_EXT, "plot file")
    # the chart's kind: a line chart draws the column in row order ("a line chart of the
    # temperature column" drew its histogram); bars are what "auto" draws for a per-group
    # table; other kinds, and one column against another, no catalog plot draws
    for m, toks in text.finditer(CHART_KIND, lo, hi):
        kind = "line" if m.group("a") == "line" or m.group("o") else "histogram" if m.group("a") == "histogram" \
            else "bar" if m.group("a") else m.group("k")
        if kind not in ("line", "bar", "histogram"):
            raise PlanRefused([f"{text.span_text(toks)!r}: the plot step draws histograms, bar charts and line charts only"])
        text.mark(toks, "chart kind")
        if kind in ("line", "histogram"):   # "as a histogram": what auto would not draw for a per-group table
            f.set("kind", kind)
    for m, toks in text.finditer(TWO_COLUMNS, lo, hi, free_only=True):
        raise PlanRefused([f"{text.span_text(toks)!r}: the plot step draws one column (a histogram, bars or a line), "
                           "not one column against another"])
    m = _search(text, lo, hi, rf"\b(?:(?:the|their|its|of)\s+)?(?P<m>{METRIC_RX})\b(?!\s+(?:of|above|below)|\s+(?:is|are)\s+(?!plotted|charted|graphed|visuali[sz]ed|drawn))", "plot metric")
    if m and metric_of(m.group("m")) not in ("score", "loss", "error"):
        f.set("metric", metric_of(m.group("m")))
    # "plot the price column", "column x", "the amount and qty columns": one plot per column named
    cols: list[str] = []
    # "for each of the columns age and bmi, plot a histogram": the columns named before the chart
    for m, toks in text.finditer(r"\bfor\s+(?:each\s+of\s+|every\s+one\s+of\s+)?(?:the\s+)?(?:columns?|fields?)\s+"
                                 r"(?P<l>[a-z_][a-z0-9_]*(?:\s*,\s*[a-z_][a-z0-9_]*)*\s*,?\s*(?:and|&)\s+[a-z_][a-z0-9_]*)", max(0, lo - 12), hi, free_only=True):
        if any(x.kind == "punct" and x.text in ".;" for x in text.tokens[toks[-1].i:lo]):
            continue
        text.mark(toks, "column")
        cols += [c for c in re.split(r"\s*,\s*(?:(?:and|&)\s+)?|\s*,?\s+(?:and|&)\s+", m.group("l")) if c not in cols]
    for m, _ in text.finditer(r"\b(?:(?:of|for)\s+)?(?:the\s+|its\s+|their\s+)?(?!(?:plot|plots|chart|graph|draw|a|an|the|each|every|one|that|this)\b)"
                              r"(?:(?P<l>[a-z_][a-z0-9_]*(?:\s*,\s*[a-z_][a-z0-9_]*)*\s*,?\s*(?:and|&)\s+[a-z_][a-z0-9_]*)\s+columns"
                              r"|(?P<c>[a-z_][a-z0-9_]*)\s+column)\b|\bcolumn\s+(?P<d>[a-z_][a-z0-9_]*)", lo, hi, free_only=True):
        for span in (("l", "c", "d")):
            if m.group(span):
                text.mark(text.covered(*m.span(span)), "column")
        text.mark(text.covered(m.start(), m.end()), "column")
        named = re.split(r"\s*,\s*(?:(?:and|&)\s+)?|\s*,?\s+(?:and|&)\s+", m.group("l")) if m.group("l") else \
            [m.group("c") or m.group("d")]
        cols += [c for c in named if c not in cols]
    _per_group(text, lo, hi)
    if len(cols) == 1:
        f.set("column", cols[0])
    elif cols:
        _set_map(f, "column", cols)
    if cols:
        return
    # "a histogram of price", "plot petal_length": a word no rule took where the plotted thing is
    # named, said as a column's name, is that column (the plot drew the table's first numeric
    # column whatever the words said); "plot the readings" stays the table's plot
    # "plot temp and hum (side by side)": bare names listed, one chart each (it was refused)
    for m, toks in text.finditer(r"\b(?:plot|plots|chart|graph|visuali[sz]e|histograms?\s+of)\s+(?:the\s+)?"
                                 r"(?P<l>[a-z][a-z0-9_]*(?:\s*,\s*[a-z][a-z0-9_]*)*\s*,?\s*and\s+[a-z][a-z0-9_]*)"
                                 r"(?=\s*(?:[.;!?]|$|->|=>|→)|\s*,?\s+(?:side\s+by\s+side|in\s+parallel|separately|from|in|of)\b)",
                                 lo, hi, free_only=True):
        names = [x for x in text.covered(*m.span("l")) if x.kind == "word" and x.low != "and"]
        if all(x.low not in PLOTTED_NOUNS and x.low not in FILLERS for x in names):
            text.mark(toks, "column")
            _set_map(f, "column", [x.low for x in names])
            return
    # "a chart of the price distribution", "plot the temperature trend": the column before the
    # chart's noun (the plot drew the table's first numeric column)
    for m, toks in text.finditer(r"\b(?:of|plot|plots|chart|graph|show|draw|visuali[sz]e)\s+(?:the\s+|its\s+|their\s+)?(?P<c>[a-z_][a-z0-9_]*)\s+"
                                 r"(?P<n>distribution|histogram|trend|values|curve)\b(?!\s+(?:per|by|for\s+each|across|within)\b)", lo, hi):
        col = next((x for x in toks if x.low == m.group("c") and not x.used), None)
        if col is not None and col.kind == "word" and col.low not in PLOTTED_NOUNS and col.low not in FILLERS:
            text.mark([x for x in toks if not x.used], "column")
            f.set("column", col.low)
            if m.group("n") in ("trend", "curve") and "kind" not in f.params:   # a trend is drawn in row order
                f.set("kind", "line")
            return
    # "a histogram of the trip durations": a name of several words is no column's (it drew the
    # column 'trip'); which one is meant is the user's to say
    for m, toks in text.finditer(rf"\b(?:histogram|distribution|(?:line|bar)\s*-?\s*(?:chart|graph|plot))\s+of\s+(?:the\s+|its\s+|their\s+)?"
                                 rf"(?P<p>[a-z_][a-z0-9_]*(?:\s+[a-z_][a-z0-9_]*)+){CHART_NAME_END}", lo, hi, free_only=True):
        words = m.group("p").split()
        if words[-1] in ("saved", "stored", "written", "exported"):
            continue
        if words[-1] not in PLOTTED_NOUNS and not any(w in PLOTTED_NOUNS or w in FILLERS for w in words[:-1]):
            raise PlanRefused([f"{m.group('p')!r}: the plot draws one column; name it as the table does "
                               f"(e.g. 'a histogram of {'_'.join(words)}')"])
    for m, toks in text.finditer(r"\b(?:histogram|distribution|(?:line|bar)\s*-?\s*(?:chart|graph|plot))\s+of\s+"
                                 r"(?:the\s+|its\s+|their\s+|FILE\d+\s+'?s\s+)?"   # "a histogram of trips.csv's duration"
                                 rf"(?P<c>[a-z_][a-z0-9_]*)\b{CHART_NAME_END}"
                                 r"|\b(?:plot|plots|plotting|chart|graph|visuali[sz]e)\s+(?:the\s+|its\s+|their\s+|FILE\d+\s+'s\s+)?"
                                 r"(?:(?P<u>[a-z][a-z0-9]*_[a-z0-9_]+)\b|(?P<w>[a-z][a-z0-9_]*)(?=\s+as\s+(?:a\s+)?(?:line|bars|histogram)\b"
                                 r"|\s+over\s+(?:the\s+)?(?:rows|time)\b|\s*(?:[.,;:!?]|$|->|=>|→)|\s+(?:and|then|to|into|in|as|from)\b|\s+of\s+FILE\d))", lo, hi):
        name = m.group("c") or m.group("u") or m.group("w")
        col = next((x for x in toks if x.low == name and not x.used), None)
        if col is not None and col.kind == "word" and col.low not in PLOTTED_NOUNS and col.low not in FILLERS:
            text.mark([x for x in toks if not x.used], "column")
            f.set("column", col.low)
            return


def _per_group(text: Text, lo: int, hi: int) -> None:
    """"a bar chart of amount per category": the plot draws a column as it is; a figure per group
    needs the aggregate first (it drew every row's amount)."""
    for m, toks in text.finditer(r"\b(?:of|plot|chart|graph)\s+(?:the\s+)?(?P<c>[a-z_][a-z0-9_]*)(?:\s+column)?\s+"
                                 r"(?P<g>(?:per|by|for\s+each|across)\s+(?:the\s+)?[a-z_][a-z0-9_]*)\b", lo, hi):
        if all(not x.used for x in toks[-2:]):
            raise PlanRefused([f"{m.group('g')!r}: the plot draws a column as it is; to chart a figure per group, "
                               f"aggregate first ('sum {m.group('c')} {m.group('g')}, then plot it')"])
