"""Parameters of the cleaning steps read from their words: which column's gaps impute fills
and with what, which duplicate dedup keeps, which rows clean_data drops, which columns normalize
scales and how. A fill, a kept copy
or a column the step cannot honour is a refusal that quotes the words, never a silent default."""

from __future__ import annotations

import re

from raystack.workflow.nl.extract import Found, _num, _search, consume
from raystack.workflow.nl.lexicon import ANY_ROW, FILLERS, GAPS_AFTER, LACKING, PRESENT, ROW_NOUN, SNAKE_COLUMN, ZERO_GAP
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text, Token


# ways to fill a gap the impute step does not have (it fills with a column's mean, median or 0)
OTHER_FILLS = (r"\b(?:(?:the\s+)?(?:previous|last|next|prior|preceding|following)\s+(?:value|row|observation|reading|entry|one)"
               r"|forward[\s-]?fill\w*|ffill|back(?:ward)?[\s-]?fill\w*|bfill|interpolat\w*|(?:the\s+)?mode|most\s+frequent\s+\w+)\b")


GAP_NOUNS = {"gaps", "gap", "blanks", "nulls", "nans", "holes"}
SKIPPED = 3          # words a fill's own phrase passes over ("fill the X gaps")


def _identifier(x: Token) -> bool:
    """A word written as a column name is (snake_case: "inscription_letters")."""
    return x.kind == "word" and "_" in x.text.strip("_") and re.fullmatch(r"[A-Za-z_]\w*", x.text) is not None


LIST_GLUE = (",", "and", "&")
ITEM_OPENERS = ("-", "•", "*", "→", "->", ";", ":")


def _names_gap_column(text: Text, k: int, start: int, hi: int) -> bool:
    """Token ``k`` names the column a fill's gaps are in: a word written as a column name (or a plain
    word opening its item: "- kwh nulls → 0", never the fill's own verb: "; replace nulls with ...")
    right after the fill's own words ("median-impute q30_percent") or right before its gaps ("fill
    inscription_letters gaps")."""
    x = text.tokens[k]
    before = text.tokens[k - 1] if k > 0 else None
    after = text.tokens[k + 1] if k + 1 < hi else None
    by_gaps = after is not None and after.low in GAP_NOUNS
    opens_item = before is not None and before.kind == "punct" and before.text in ITEM_OPENERS
    if x.used not in ("", "impute", text.claim) or not (
            _identifier(x) or (x.kind == "word" and not x.used and x.low not in FILLERS and opens_item and by_gaps)):
        return False
    return (k > start and before.used == "impute") or (by_gaps and after.used == "impute") or _after_gaps(text, k)


def _after_gaps(text: Text, k: int) -> bool:
    """"the gaps in income_k", "missing values of q30_percent": a word written as a column name
    after the gaps and "in" (or "of", "for")."""
    return k >= 2 and _identifier(text.tokens[k]) and text.tokens[k - 1].low in ("in", "of", "for") \
        and text.tokens[k - 2].low in GAP_NOUNS | {"values", "entries", "cells"} and text.tokens[k - 2].used == "impute"


def _gap_columns(text: Text, lo: int, hi: int) -> list[str]:
    """"fill the missing inscription_letters values", "fill the missing a_b and c_d values": the
    columns named beside the gaps, read here or inside the step's own words, which end just before
    ``lo`` ("fill X gaps"); none when no one word names one."""
    start = max(0, lo - SKIPPED)
    named = [x for k, x in enumerate(text.tokens[start:hi], start) if _names_gap_column(text, k, start, hi)]
    if len(named) != 1:
        return []
    k = named[0].i + 1
    while k + 1 < len(text.tokens) and text.tokens[k].low in LIST_GLUE and _identifier(text.tokens[k + 1]) \
            and not text.tokens[k + 1].used:
        named += [text.tokens[k], text.tokens[k + 1]]
        k += 2
    text.mark(named + [text.tokens[named[0].i - 1]] * _after_gaps(text, named[0].i), "impute")
    if k < len(text.tokens) and text.tokens[k].low in ("only", "alone") and not text.tokens[k].used:
        text.mark([text.tokens[k]], "impute")     # "median-impute q30_percent only"
    return [x.text for x in named if x.low not in LIST_GLUE]


def impute(text: Text, lo: int, hi: int, f: Found) -> None:
    # "fill the gaps in the price column", "impute missing values in the age column": that column
    # only (the step filled every column's gaps). A column named only by a noun ("missing vet
    # fees") is no column name the plan can trust: every column's gaps are filled, as before.
    # ("the average of each column" names no column)
    m = _search(text, lo, hi, r"\b(?:in|of|for|from)\s+(?:the\s+)?(?!(?:FILE|NUM)\d)(?!(?:each|every|any|all|its|a|an|the|one|that|this)\b)"
                              r"(?P<c>[a-z_]\w*)\s+column\b", "impute")
    if m is None:    # "gaps in no2_ppb are ...": one column-like name (an underscore or a digit) after the gaps and "in"
        m = _search(text, lo, hi, r"(?:(?<=gaps\s)|(?<=blanks\s)|(?<=values\s)|(?<=nulls\s))in\s+(?:the\s+)?"
                                  r"(?P<c>[a-z][a-z0-9]*(?:_[a-z0-9_]+|\d[a-z0-9_]*))\b(?:\s+column)?(?!\s*(?:,|and\b|&|or\b))", "columns")
    if m is None:    # "mean-fill no2_ppb": the column right after the verb, a name with an underscore
        m = _search(text, lo, hi, r"(?<=-fill\s)(?:the\s+)?(?P<c>[a-z][a-z0-9]*_[a-z0-9_]*)\b(?:\s+column\b)?", "columns")
    if m is None:    # "where feed_kg is empty, put 0", "empty salt_t cells", "billable_h nulls set to 0"
        m = _search(text, lo, hi, rf"(?<=where\s)(?:the\s+)?(?P<c>{SNAKE})(?=\s+(?:is|are)\s+{ZERO_GAP})"
                                  rf"|(?<=\s){ZERO_GAP}\s+(?P<c2>{SNAKE})\b(?:\s+(?:values?|cells?|entries|fields?)\b)?(?!\s*(?:,|&|and\b|or\b))"
                                  rf"|\b(?P<c3>{SNAKE})(?=\s+{GAPS_AFTER}\b)", "columns", free=False)
    if m:
        f.set("columns", [next(v for v in m.groups() if v)])
    consume(text, lo, hi, r"\b(?:missing|null|nan|empty|blank)\s+[a-z_]\w*", "impute")
    if not m:
        columns = _gap_columns(text, lo, hi)
        if columns:
            f.set("columns", columns)
    other = next(text.finditer(OTHER_FILLS, lo, hi), None)
    if other is not None:   # "fill missing prices with the previous value" filled them with the mean
        raise PlanRefused([f"{text.span_text(other[1])!r}: impute fills a gap with its column's mean, median or zero"])
    m = _search(text, lo, hi, r"(?:(?:with|using|by|to|as|put|use|enter|insert|write|make\s+it)\s+|(?:→|->|=>|:?\s*=)\s*)(?:the\s+|(?:that|this|its|each|the)\s+column\s*'s\s+)?(?:column\s+|feature\s+|per-column\s+)?"
                              r"(?P<s>means?|medians?|zeros?|averages?|NUM\d+)", "strategy")
    if m is None:    # "impute gaps (median)", "median imputation", "median-fill", "zero-fill", "zero out" (zero reads as a number)
        # (never the verb: "a missing salt_t means nothing was spread")
        m = _search(text, lo, hi, r"\b(?P<s>mean(?!s\s+(?:nothing|that|the|a|an|no|it|its|they|there|we)\b)s?|medians?|zeros?|averages?)\b"
                                  r"|(?P<z>NUM\d+)(?=\s*-?\s*fill|\s+out\b)", "strategy")
    if m:
        s = m.group("s") or m.groupdict().get("z")
        if s.startswith("NUM"):
            if _num(text, s) != 0:
                raise PlanRefused([f"impute with {text.literal(s).text}: only mean, median or zero"])
            s = "zero"
        s = {"average": "mean", "averages": "mean", "means": "mean", "medians": "median",
             "zeros": "zero"}.get(s, s)
        f.set("strategy", s)


def dedup(text: Text, lo: int, hi: int, f: Found) -> None:
    """What kind of duplicates ("exact duplicate readings"): the step's own words; which of the
    copies stays: the first ("keeping the first occurrence"), the only one the step keeps."""
    consume(text, lo, hi, r"\b(?:exact|identical|full|complete|redundant|repeated|duplicated?)\b", "dedup")
    # "dedupe it on email", "dedup on customer_id": a key the step does not take (it compares whole rows)
    keyed = next(text.finditer(r"\b(?:de-?dup\w*|(?:drop|remove)\s+(?:the\s+)?duplicates)(?:\s+(?:it|them|the\s+(?:rows|table|data)))?\s+"
                               r"(?:on|by|using|per)\s+(?:the\s+)?(?!FILE|NUM|PCT|then\b|and\b)[a-z_][\w-]*", lo, min(len(text.tokens), lo + 6)), None)
    if keyed is not None:
        raise PlanRefused([f"{text.span_text(keyed[1])!r}: dedup drops rows duplicated in every column; it takes no key"])
    # "find the duplicates in x.csv and drop them": the removal of what was found
    consume(text, lo, hi, r"\b(?:rows|records|entries)?\s*(?:and\s+)?(?:then\s+)?(?:get\s+rid\s+of|remove|drop|delete|discard|strip|toss)\s+"
                          r"(?:them|those|these|any|all\s+of\s+them)\b", "dedup")
    keep = r"\b(?:keep|keeping|keeps|retain|retaining|leaving)\s+(?:only\s+)?(?:the\s+)?(?P<w>first|last|latest|newest|most\s+recent|earliest)" \
           r"(?:\s+(?:occurrence|occurrences|one|ones|row|rows|copy|copies|entry|entries|record|records))?\b"
    for m, toks in text.finditer(keep, lo, hi):
        if any(x.used and x.used not in ("sequence", text.claim) for x in toks):
            continue      # ("first" reads as an order cue before any step's words are read)
        if m.group("w") not in ("first", "earliest"):
            raise PlanRefused([f"{text.span_text(toks)!r}: dedup keeps the first of each set of duplicate rows"])
        text.mark(toks, "dedup")


# what rows are said to miss that is no column ("missing values", "null entries", "blank fields")
MISSING_NOUNS = r"(?:values?|data|rows?|entries|entry|fields?|cells?|records?|ones|info|information|readings?|labels?)"
SNAKE = SNAKE_COLUMN    # a column named as code names it ("lap_time")


def clean_data(text: Text, lo: int, hi: int, f: Found) -> None:
    # "remove rows containing nulls": the rows, said before what they hold
    consume(text, lo, hi, r"\b(?:rows|records|entries|lines)\s+(?:containing|holding|with|that\s+(?:have|contain))"
                          r"(?=\s+(?:any\s+|a\s+)?(?:nulls?|nans?|blanks?|gaps|missing|empty)\b)", "clean")
    # "rows with missing values in the amount column", "rows with a missing amount", "rows where
    # age is missing": only those rows go (the step dropped a row missing anything, silently)
    cols = r"(?P<l>[a-z_]\w*(?:\s*,\s*[a-z_]\w*)*\s*,?\s+(?:or|and)\s+[a-z_]\w*)(?:\s+columns?)?"
    # "any row with a blank length_m or panels": any of them (read first: "blank length_m" alone names one)
    listed = _search(text, lo, hi, rf"\b(?:with|having)\s+(?:a|an|any)\s+(?:missing|null|empty|blank)\s+{cols}\b", "clean")
    m = None if listed else _search(text, lo, hi, r"\b(?:where|whose|in\s+which|for\s+which)\s+(?:the\s+)?(?P<c>[a-z_]\w*)(?:\s+column)?\s+"
                              r"(?:is|are|was|were)\s+(?:missing|null|empty|blank|nan|na|not\s+recorded|absent|not\s+given)\b", "clean") or \
        _search(text, lo, hi, r"\b(?:keep|keeps|keeping|retain|retaining)(?:\s+only|\s+just)?(?:\s+the)?\s+(?:rows|records|entries|cases)\s+(?:where|whose|in\s+which)\s+"
                              rf"(?:the\s+)?(?P<c>[a-z_]\w*)(?:\s+column)?\s+(?:is|are)\s+{PRESENT}", "clean") or \
        _search(text, lo, hi, r"\b(?:missing|nulls?|nans?|empty|blank)\s+(?:values?\s+|entries\s+|cells\s+)?(?:in|of|for|from)\s+(?:the\s+)?"
                              r"(?P<c>[a-z_]\w*)(?:\s+column)?\b", "clean") or \
        _search(text, lo, hi, rf"\b(?:missing|null|nan|empty|blank)\s+(?!{MISSING_NOUNS}\b)(?!(?:a|an|any|the)\s)"
                              r"(?!(?:and|or|then|but|so|to|in|from|with|of|for|before|after|once|if|when)\b)(?P<c>[a-z_]\w*)(?:\s+column)?\b",
                "clean") or \
        _search(text, lo, hi, rf"\b(?:readings|samples|observations|measurements|{ROW_NOUN}|{ANY_ROW}|(?<=any\s)(?:row|record|entry)"
                              rf"|(?<=every\s)(?:row|record|entry))\s+{LACKING}\s+"
                              rf"(?:(?:a\s+|an\s+|any\s+|the\s+)(?:recorded\s+|valid\s+)?(?!{MISSING_NOUNS}\b)(?P<c>[a-z_]\w*)"
                              rf"|(?:recorded\s+|valid\s+)?(?P<s>{SNAKE}))(?:\s+(?:column|value|values|entry|field|time|date))?\b",
                "clean")  # "rows without a price", "admissions with no discharge_ward value" (a column's own name)
    # "rows missing a value in court or start_hour", "rows where court or start_hour is empty": any of them
    several = listed or _search(text, lo, hi, rf"\b(?:missing|without|lacking)\s+(?:a\s+|any\s+)?(?:value|values|entry|entries)\s+(?:in|for)\s+"
                                    rf"(?:the\s+|either\s+)?{cols}\b", "clean") or \
        _search(text, lo, hi, rf"\b(?:where|whose|in\s+which)\s+(?:the\s+|either\s+)?{cols}\s+(?:is|are)\s+"
                              r"(?:missing|null|empty|blank|nan|na)\b", "clean")
    if several:
        f.set("columns", re.split(r"\s*,\s*|\s*,?\s+(?:or|and)\s+", several.group("l").strip()))
    elif m and (named := m.groupdict().get("c") or m.groupdict().get("s")) not in (
            "the", "a", "an", "any", "each", "every", "all", "anything", "something"):
        f.set("columns", [named])
    consume(text, lo, hi, r"\b(?:missing|null|nan|empty|incomplete|blank)\s+[a-z_]\w*", "clean")
    # "drop patients with missing age": the rows, by what they record
    consume(text, lo, hi, r"\b(?!(?:the|a|an|any|all|and|or)\b)[a-z]+(?=\s+(?:with|that\s+have|having)\s+(?:a\s+|an\s+|any\s+|no\s+)?(?:missing|null|nan|empty|blank)\b)", "clean")


# what a normalize is said to scale that is no column name: the table, or every feature
SCALED_NOUNS = {"it", "them", "this", "that", "everything", "all", "data", "dataset", "table", "tables", "features",
                "feature", "columns", "column", "values", "inputs", "input", "variables", "numbers", "numeric",
                "numerical", "both", "each", "result", "rows", "readings", "measurements", "normalization",
                "normalisation", "scaling", "standardization", "standardisation", "rescaling"}


def _unit_scale(text: Text, lo: int, hi: int) -> bool:
    """"to zero mean and unit variance", "to have 0 mean and std 1"-like wording of a z-score:
    the words marked when the figures are 0 and 1."""
    for m, toks in text.finditer(r"\b(?:to\s+(?:have\s+)?)?(?P<z>NUM\d+)\s+mean\s+(?:and|&|,)\s+(?:unit|(?P<u>NUM\d+))\s+"
                                 r"(?:variance|std|standard\s+deviation)\b", lo, hi):
        if _num(text, m.group("z")) == 0 and (m.group("u") is None or _num(text, m.group("u")) == 1):
            text.mark(toks, "method")
            return True
    # "normalise price and qty to unit variance": the z-score's spread said alone
    for _, toks in text.finditer(r"\b(?:to|with)\s+unit\s+(?:variance|std|standard\s+deviation)\b", lo, hi, free_only=True):
        text.mark(toks, "method")
        return True
    return False


def _unit_range(text: Text, lo: int, hi: int) -> bool:
    """"to 0..1", "onto the [0, 1] range", "between 0 and 1", "to 0-1": the unit interval a
    min-max scaling maps onto (another range is no step's)."""
    for m, toks in text.finditer(r"\b(?:to|into|onto|in|within|between)\s+(?:the\s+|a\s+)?(?:range\s+)?\[?\s*(?P<a>NUM\d+)\s*"
                                 r"(?:\.\.|–|—|,|to|and)?\s*(?P<b>NUM\d+)\s*\]?(?:\s+(?:range|interval|scale))?", lo, hi):
        a, b = _num(text, m.group("a")), _num(text, m.group("b"))
        if a == 0 and b in (1, -1) and (b == 1 or text.literal(m.group("b")).text.startswith("-")):
            # ("to the 0-1 range" where the step's words end at the numbers: its noun after them)
            after = text.tokens[toks[-1].i + 1:toks[-1].i + 2]
            text.mark(toks + [x for x in after if x.low in ("range", "interval", "scale") and not x.used], "method")
            return True
        raise PlanRefused([f"{text.span_text(toks)!r}: the normalize step scales to zero mean and unit variance "
                           "or, min-max, onto [0, 1]"])
    return False


def normalize(text: Text, lo: int, hi: int, f: Found) -> None:
    """"normalize the price column", "scale price and area": only those columns (the step scaled
    every numeric column); "normalize the features / it / the data" stays every column."""
    # "min-max scaling", "min-max normalise": onto [0, 1] (it z-scored whatever was said)
    if _search(text, lo, hi, r"\bmin\s*-?\s*max\b", "method", free=False):
        f.set("method", "minmax")
    elif _unit_range(text, lo, hi):     # "rescale to 0..1", "into [0, 1]", "between 0 and 1": min-max
        f.set("method", "minmax")
    else:   # "to zero mean and unit variance": what the default z-score does (no method set, as for "z-score")
        _unit_scale(text, lo, hi)
    # "every column except price": the step scales the columns named, never all but some
    but = next(text.finditer(r"\b(?:except|excluding|besides|other\s+than|but\s+not)\b(?:\s+(?:for\s+)?(?:the\s+)?[a-z_]\w*)?", lo, hi), None)
    if but is not None:
        raise PlanRefused([f"{text.span_text(but[1])!r}: normalize scales the columns it is given; name the ones to scale"])
    names_rx = r"(?P<l>(?!(?:FILE|NUM|PCT|QUOTE)\d)[a-z_]\w*(?:\s*,\s*[a-z_]\w*)*(?:\s*,?\s*(?:and|&)\s+[a-z_]\w*)?)"
    found = next(text.finditer(r"\b(?:normali[sz]\w*|standardi[sz]\w*|re-?scal\w*|scale|scales|z-?scor\w*|min-?max(?!\s+(?:normali|standardi|scal|re-?scal)))\s+(?:the\s+|its\s+)?(?P<just>(?:just|only)\s+)?"
                               r"(?:the\s+)?" + names_rx +   # "normalize only the a and b columns"
                               r"(?:\s+columns?)?(?P<only>\s+only)?\b(?=\s*(?:[.,;:!?()]|$|->|=>|→)|\s+(?:and|then|before|after|so|to|in|from|on|with|using|of)\b)",
                               lo, hi), None) or next(text.finditer(   # "the price and area columns are normalised"
        r"\b(?:the\s+)?" + names_rx + r"\s+columns\s+(?:are|get|should\s+be|will\s+be|must\s+be)\s+(?:normali[sz]ed|standardi[sz]ed|scaled|rescaled|z-scored)\b",
        lo, hi), None)   # a bare name, not "the expression values", "the drone flight logs"
    if found is None:
        return
    m, toks = found
    for group in ("only", "just"):   # "normalize income and debt only", "scale just price": those, as any list names
        if m.groupdict().get(group):
            text.mark(text.covered(*m.span(group)), "normalize")
    names: list[Token] = []
    for x in text.covered(*m.span("l")):
        if x.kind != "word" or x.low in ("and", "&"):
            continue
        if x.used and x.used != text.claim:
            break       # "normalize price and dedup": the next step's verb ends the list
        names.append(x)
    if not names or any(x.low in SCALED_NOUNS or x.low in FILLERS for x in names):
        return
    glue = [x for x in text.covered(*m.span("l")) if x.i < names[-1].i and x.low in ("and", "&", ",")]
    after = [x for x in toks if x.i > names[-1].i and x.low in ("column", "columns")]
    if len(names) == 1 and [x.low for x in after] == ["columns"] and not _identifier(names[0]):
        # "normalize the sensor columns": a kind of column, not one named "sensor" (the run failed on it)
        raise PlanRefused([f"{text.span_text(text.tokens[names[0].i:after[0].i + 1])!r}: say which columns these are, "
                           "by name (\"normalize temp and humidity\")"])
    text.mark(names + glue + after, "columns")
    f.set("columns", [x.low for x in names])
