"""Parameters of the cleaning steps read from their words: which column's gaps impute fills
and with what, which duplicate dedup keeps, which rows clean_data drops. A fill, a kept copy
or a column the step cannot honour is a refusal that quotes the words, never a silent default."""

from __future__ import annotations

import re

from raystack.workflow.nl.extract import Found, _num, _search, consume
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text


# ways to fill a gap the impute step does not have (it fills with a column's mean, median or 0)
OTHER_FILLS = (r"\b(?:(?:the\s+)?(?:previous|last|next|prior|preceding|following)\s+(?:value|row|observation|reading|entry|one)"
               r"|forward[\s-]?fill\w*|ffill|back(?:ward)?[\s-]?fill\w*|bfill|interpolat\w*|(?:the\s+)?mode|most\s+frequent\s+\w+)\b")


def impute(text: Text, lo: int, hi: int, f: Found) -> None:
    # "fill the gaps in the price column", "impute missing values in the age column": that column
    # only (the step filled every column's gaps). A column named only by a noun ("missing vet
    # fees") is no column name the plan can trust: every column's gaps are filled, as before.
    m = _search(text, lo, hi, r"\b(?:in|of|for|from)\s+(?:the\s+)?(?!(?:FILE|NUM)\d)(?P<c>[a-z_]\w*)\s+column\b", "impute")
    if m:
        f.set("columns", [m.group("c")])
    consume(text, lo, hi, r"\b(?:missing|null|nan|empty|blank)\s+[a-z_]\w*", "impute")
    other = next(text.finditer(OTHER_FILLS, lo, hi), None)
    if other is not None:   # "fill missing prices with the previous value" filled them with the mean
        raise PlanRefused([f"{text.span_text(other[1])!r}: impute fills a gap with its column's mean, median or zero"])
    m = _search(text, lo, hi, r"(?:with|using|by)\s+(?:the\s+)?(?:column\s+|feature\s+|per-column\s+)?"
                              r"(?P<s>means?|medians?|zeros?|averages?|NUM\d+)", "strategy")
    if m is None:    # "impute gaps (median)", "median imputation", "median-fill", "zero-fill" (zero reads as a number)
        m = _search(text, lo, hi, r"\b(?P<s>means?|medians?|zeros?|averages?)\b|(?P<z>NUM\d+)(?=\s*-?\s*fill)", "strategy")
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


def clean_data(text: Text, lo: int, hi: int, f: Found) -> None:
    # "rows with missing values in the amount column", "rows with a missing amount", "rows where
    # age is missing": only those rows go (the step dropped a row missing anything, silently)
    m = _search(text, lo, hi, r"\b(?:where|whose|in\s+which)\s+(?:the\s+)?(?P<c>[a-z_]\w*)(?:\s+column)?\s+(?:is|are)\s+"
                              r"(?:missing|null|empty|blank|nan|na)\b", "clean") or \
        _search(text, lo, hi, r"\b(?:missing|nulls?|nans?|empty|blank)\s+(?:values?\s+|entries\s+|cells\s+)?(?:in|of|for|from)\s+(?:the\s+)?"
                              r"(?P<c>[a-z_]\w*)(?:\s+column)?\b", "clean") or \
        _search(text, lo, hi, rf"\b(?:missing|null|nan|empty|blank)\s+(?!{MISSING_NOUNS}\b)(?!(?:a|an|any)\s)(?P<c>[a-z_]\w*)(?:\s+column)?\b", "clean") or \
        _search(text, lo, hi, rf"\b(?:rows|records|entries)\s+(?:that\s+(?:are|is)\s+missing|missing|without|lacking|with\s+no)\s+(?:a\s+|an\s+|any\s+)"
                              rf"(?!{MISSING_NOUNS}\b)(?P<c>[a-z_]\w*)(?:\s+column)?\b", "clean")  # "rows without a price"
    # "rows missing a value in court or start_hour", "rows where court or start_hour is empty": any of them
    cols = r"(?P<l>[a-z_]\w*(?:\s*,\s*[a-z_]\w*)*\s*,?\s+(?:or|and)\s+[a-z_]\w*)(?:\s+columns?)?"
    several = _search(text, lo, hi, rf"\b(?:missing|without|lacking)\s+(?:a\s+|any\s+)?(?:value|values|entry|entries)\s+(?:in|for)\s+"
                                    rf"(?:the\s+|either\s+)?{cols}\b", "clean") or \
        _search(text, lo, hi, rf"\b(?:where|whose|in\s+which)\s+(?:the\s+|either\s+)?{cols}\s+(?:is|are)\s+"
                              r"(?:missing|null|empty|blank|nan|na)\b", "clean")
    if several:
        f.set("columns", re.split(r"\s*,\s*|\s*,?\s+(?:or|and)\s+", several.group("l").strip()))
    elif m and m.group("c") not in ("the", "a", "an", "any", "each", "every", "all", "anything", "something"):
        f.set("columns", [m.group("c")])
    consume(text, lo, hi, r"\b(?:missing|null|nan|empty|incomplete|blank)\s+[a-z_]\w*", "clean")
    # "drop patients with missing age": the rows, by what they record
    consume(text, lo, hi, r"\b(?!(?:the|a|an|any|all|and|or)\b)[a-z]+(?=\s+(?:with|that\s+have|having)\s+(?:a\s+|an\s+|any\s+|no\s+)?(?:missing|null|nan|empty|blank)\b)", "clean")
