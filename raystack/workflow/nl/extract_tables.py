"""Parameters of the two-table steps read from their words: a join's key and kind ("left join
... on id", "(full outer)", "keeping every row from both sides"), a stack's sides and the order the
words give them ("concat, EU first", "put the market hall rows underneath the high street ones");
which loaded file is which side is checked against the wiring later (``table_refs``)."""

from __future__ import annotations

import os
import re

from raystack.workflow.nl.extract import TABLE_EXT, Found, _search, consume
from raystack.workflow.nl.triggers import ARROW
from raystack.workflow.nl.lexicon import NAMED_SIDES
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text


JOIN_KINDS = {"left": "left outer", "right": "right outer", "inner": "inner", "outer": "full outer", "full": "full outer"}
# "keeping every row from both sides": what a full outer join does
# ("keep everything from both sides even if it doesn't match")
KEEP_BOTH_SIDES = (r"\b(?:keeping|keep|keeps|to\s+keep|retaining|retain)\s+(?:(?:every|each|all(?:\s+the)?|the)\s+(?:rows?|records?|entries|entry)|everything"
                   r"|(?:the\s+|all\s+(?:the\s+)?)?unmatched\s+(?:rows|records|entries))\s+"     # "(keep unmatched rows from both)"
                   r"(?:from|of|on|in)\s+both(?:\s+(?:sides|files|tables|inputs))?\b"
                   r"(?:\s*,?\s*even\s+(?:if|when|where)\s+(?:it|they|there)\s+(?:doesn't|don't|does\s+not|do\s+not|isn't|is\s+no|are\s+no)"
                   r"\s+(?:a\s+)?(?:match|matches|match\s+up)\b)?")


def join(text: Text, lo: int, hi: int, f: Found) -> None:
    # "using cell_id": a column-like name (an underscore, or an id) after "using"/"via" is the key
    m = _search(text, lo, hi, r"\b(?:on|keys?\s*[:=]?|using\s+(?:the\s+)?(?:key|column)|by\s+(?:the\s+)?(?:key|column)|(?<=\bup\s)by"
                              r"|(?:using|via|by)(?=\s+(?:the\s+)?[a-z0-9]*(?:_[a-z0-9]+|id)\b)"
                              # "join a.csv to b.csv using region, then ...": a bare name that ends the clause
                              r"|(?:using|via)(?=\s+(?:the\s+)?(?!(?:pandas|polars|spark|pyspark|ray|sql|duckdb|dask|python)\b)[a-z][a-z0-9]*(?:\s+(?:column|key|field))?\s*(?:[.,;:]|$|\s+(?:and|then)\b)))\s+(?:the\s+)?(?:column\s+|key\s+|field\s+)?(?P<c>[a-z_][a-z0-9_]*)"
                              r"(?:\s+(?:column|key|field))?", "join key")
    if m is None:   # "using order_id as the key", "with region as the join column"
        m = _search(text, lo, hi, r"\b(?:using|with|taking)\s+(?:the\s+)?(?P<c>[a-z_][a-z0-9_]*)\s+(?:column\s+)?as\s+(?:the\s+)?"
                                  r"(?:join\s+|merge\s+)?(?:key|column)\b", "join key")
    if m and m.group("c") not in ("the", "it", "them", "a"):
        f.set("on", m.group("c"))
        consume(text, lo, hi, r"\bas\s+(?:the\s+)?(?:join\s+|merge\s+)?(?:key|column)\b", "join key")
    # ("... on id (a left join)": the join's own word in the note says its kind)
    # ("(left join, keep all visits)": the note goes on after the kind)
    m = _search(text, lo, hi, r"\b(?P<h>left|right|inner|outer|full)(?:[\s-]+outer)?(?:[\s-]+(?:join|merge)(?=\s*[),;])|(?=[\s-]+(?:join|merge)))"
                              r"|(?<=\(\s)(?P<h2>left|right|inner|outer|full)(?:[\s-]+outer)?(?=\s*\)|\s*,\s*keys?\b)"    # "(full outer)", "(inner, key id)"
                              r"|\b(?P<h3>full|left|right|inner|outer)(?:[\s-]+outer)?(?=\s+on\s+[a-z_])"    # "full-outer on transect_id"
                              # "join a.csv with b.csv on user_id, inner, then ...": the kind said after the key
                              r"|(?<=,\s)(?P<h4>full|left|right|inner|outer)(?:[\s-]+outer)?(?=\s*(?:,|;|\.|$))",
                "join kind")
    both = _search(text, lo, hi, KEEP_BOTH_SIDES, "join kind")
    consume(text, lo, hi, r"(?<=\s)(?:=|is|as|on)\s+(?:the\s+)?(?:left|right)(?:[\s-]+(?:side|table|one|hand\s+side))?\b(?=\s*\))",
            "table side")   # "(chargers = left side)": which table is which (table_refs)
    if m and m.group("h2"):
        text.mark([x for x in text.tokens[lo:hi] if x.text in "()" and not x.used
                   and any(y.used == "join kind" for y in text.tokens[max(0, x.i - 1):x.i + 2])], "join kind")
    said = (m.group("h") or m.group("h2") or m.group("h3") or m.group("h4")) if m else None
    if both and said is not None and JOIN_KINDS[said] != "full outer":
        # "a left join keeping every row from both sides" says two kinds
        raise PlanRefused([f"{text.span_text(text.tokens[lo:hi])!r}: keeping every row of both sides is a full outer "
                           "join, not the kind named"])
    if both:
        f.set("how", "full outer")
    if not said and not both:
        # "join them on customer_id (keep every order)": rows kept that only an outer join keeps, with
        # no kind said (the join was inner, dropping the orders without a customer: silently wrong)
        keep = next(text.finditer(r"\b(?:keep|keeping|keeps|retain|retaining)\s+(?:every|each|all(?:\s+the)?)\s+[a-z_]\w*", lo, hi), None)
        if keep is not None:
            raise PlanRefused([f"{text.span_text(keep[1])!r}: say which join keeps them ('a left join' keeps every row "
                               "of the first table, 'a full outer join' every row of both)"])
    if said:
        f.set("how", JOIN_KINDS[said])
        if said == "inner":   # "(inner join, deliveries without a match are dropped)": what the kind does, said
            consume(text, lo, hi, r"\b[a-z_]\w*\s+(?:without|with\s+no|lacking)\s+(?:a\s+)?(?:match|matching\s+[a-z_]\w*|counterpart)\s+"
                                  r"(?:are|is|get|gets|will\s+be)\s+(?:dropped|removed|discarded|lost|left\s+out)\b", "join kind")
        if said in ("left", "right"):   # "so that no booking is dropped", "keeping every booking": why
            consume(text, lo, hi, r"\b(?:so\s+(?:that\s+)?no\s+[a-z_]\w*\s+(?:is|gets|are|get)\s+(?:dropped|lost)"
                                  r"|(?:keeping|keeps|to\s+keep|(?<=,\s)keep)\s+(?:every|each|all(?:\s+the)?)\s+[a-z_]\w*"
                                  # "... even when there's no matching customer", "... even without a match"
                                  r"(?:\s+(?:even\s+)?(?:when|if|where)\s+there\s*(?:'s|is|are)\s+no\s+(?:matching\s+|corresponding\s+)?[a-z_]\w*"
                                  r"|\s+(?:even\s+)?(?:without|with\s+no)\s+(?:a\s+)?(?:match(?:ing\s+[a-z_]\w*)?|corresponding\s+[a-z_]\w*))?)\b",
                    "join kind")
    _mark_sides(text, lo, hi)


def _mark_sides(text: Text, lo: int, hi: int) -> None:
    """"join orders with customers", "stack jan and feb": the loaded files named by their stems
    are the step's two sides (which side is which is checked against the wiring,
    table_refs.order_table_sides)."""
    stems = {os.path.splitext(os.path.basename(x.text.lower()))[0] for x in text.tokens
             if x.kind == "path" and x.low.endswith(TABLE_EXT)}
    text.mark([x for x in text.tokens[lo:hi] if not x.used and x.kind == "word" and x.low in stems], "table side")


def concat(text: Text, lo: int, hi: int, f: Found) -> None:
    _mark_sides(text, lo, hi)
    consume(text, lo, hi, r"\b(?:row-?wise|by\s+rows|vertically|on\s+top\s+of\s+(?:each\s+other|one\s+another))\b", "concat")
    consume(text, lo, hi, NAMED_SIDES, "table side")
    consume(text, lo, hi, r"\binto\s+(?:one|a\s+single|a)\s+(?:combined\s+)?table\b", "concat")    # "stack the two into one table"
    consume(text, lo, hi, r"\bby\s+(?:putting|placing|setting|stacking)\s+one\s+(?:under|below|beneath|after|on\s+top\s+of)\s+the\s+other\b",
            "concat")
    _stack_order(text, lo, hi)


ROWS_OF = r"(?:(?:one|ones|rows|records|entries|file|table|data)\s+)?"


def _stack_order(text: Text, lo: int, hi: int) -> None:
    """"concat, EU first", "stack the EU rows on top of the US ones": the table stacked on top
    (and the one under it), named by a word of its file's name; the stack follows the order the
    files are named in, so the words must name them in that order."""
    # ("first" is read as a sequence word before any step's words; "us" as a pronoun)
    found = next(((m, toks) for m, toks in text.finditer(
        rf"\b(?:the\s+)?(?P<w>[a-z][\w-]*|NUM\d+)\s+{ROWS_OF}(?:(?:appended|stacked)\s+)?(?:first\b|(?:on\s+top\s+of|above|over|before|ahead\s+of"
        r"|(?P<under>underneath|under|below|beneath|after|(?<=\s)(?:to|onto)(?=\s+\S+\s*(?:[,;.)]|$))))\s+"
        r"(?:(?:the\s+)?(?:[a-z][\w-]*\s+)?(?P<v>[a-z][\w-]*|NUM\d+)\s+(?:one|ones|rows|records|entries|file|table|data)\b"
        # ("stack 2025 under 2024", "h2 appended beneath h1": the names alone, the item ending there)
        rf"|(?P<bare>[a-z][\w-]*|NUM\d+)(?=\s*(?:\n|$|[,;.)]|{ARROW}))))", lo, hi) if all(x.used in ("", None, "sequence", "concat") for x in toks)), None)
    if found is None:
        return
    m, toks = found
    if m.group("under") in ("to", "onto") and (toks[0].i == 0 or text.tokens[toks[0].i - 1].low not in ("append", "appends")):
        return      # ("append south to north": the side appended, right after the verb; any other "to" is no stack's)
    text.mark([x for x in toks if x.used != "concat"], "order")    # (the step's own words stay its own)
    loads = [re.split(r"[\W_]+", x.low.rsplit(".", 1)[0]) for x in text.tokens[:lo] if x.kind == "path" and x.used == "path"]
    # ("(2024 first)": a year of the files' names)
    under = m.group("v") or m.group("bare")
    named = [text.literal(w).text if w.startswith("NUM") else w for w in [m.group("w")] + [under] * bool(under)]
    if m.group("under"):    # "the market hall rows underneath the high street ones": the other one on top
        named.reverse()
    if [[k for k, parts in enumerate(loads) if w in parts] for w in named] != [[k] for k in range(len(named))]:
        raise PlanRefused([f"{text.span_text(toks)!r}: name the tables in the order they are stacked in, the one on top first"])
