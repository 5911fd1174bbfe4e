"""What a word of a request is, by its token and place: free (no rule used it), unknown (free and
no filler), part of a title, inside parentheses, or a method the catalog lacks. Shared by the
accounting of leftover words and the readers of what sets the scene."""

from __future__ import annotations

import re

from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.text import Text, Token

MAX_LEAD_IN = 8              # words of a lead-in ("Our HR team wants a quick look:")


def is_free(t: Token) -> bool:
    return not t.used and t.kind != "punct"


def is_unknown(t: Token) -> bool:
    return is_free(t) and t.kind == "word" and t.low not in L.FILLERS


CONDITION_OPENERS = {"when", "whenever", "if", "once", "unless", "until", "should"}


def is_title(words: list[Token], t: Text | None = None) -> bool:
    """Words that can name a request's subject: no method the catalog lacks, and a word that is
    also an operation the catalog lacks ("crop", "filter") only inside a title whose head (its
    last word outside parentheses) is a topic head ("Crop yield regression (agriculture)") --
    "Filter spam emails:" asks for a filter."""
    if not words or len(words) > MAX_LEAD_IN or any(is_method(x) and not (t is not None and names_business(t, x))
                                                    for x in words):
        return False
    if words[0].low in CONDITION_OPENERS or words[0].low in ("target", "label"):
        return False    # "When the boss gets back: send 'done'": a condition, no subject; "target rush —" names a column
    verbs = [x for x in words if x.low in L.UNMAPPED_VERBS]
    if not verbs:
        return True
    outside = [x for x in words if t is None or not in_parentheses(t, x)]
    # the head may itself be such a word when another word leads ("Bakery waste forecast")
    return len(outside) >= 2 and outside[-1].low in L.TOPIC_HEADS and (
        outside[-1] not in verbs or outside[0] not in verbs)


def in_parentheses(t: Text, x: Token) -> bool:
    depth = 0
    for tok in t.tokens[:x.i]:
        depth += (tok.text == "(") - (tok.text == ")")
    return depth > 0


def is_method(x: Token) -> bool:
    """A method or task the catalog lacks, named as such (never accepted as context); a file
    named after one ("translate.jsonl") is a file."""
    return x.kind == "word" and (x.low in L.UNSUPPORTED or any(x.low.startswith(p) for p in L.UNSUPPORTED_PREFIXES))


def method_near(t: Text, x: Token) -> bool:
    """A domain word that names a method next to the word that makes it one ("decision tree",
    "train a tree", "tree model"; "Tree nursery" is a domain)."""
    near = L.METHOD_IF_NEAR.get(x.low, frozenset())
    # (a hyphenated neighbour's parts too: "gradient-boosted trees")
    return any(y.low in near or any(part in near for part in y.low.split("-")) for y in t.tokens[max(0, x.i - 2):x.i + 2]
               if y is not x)


DATA_NOUN_VERBS = ("export", "exports", "dump", "dumps")   # "the CRM export", "last night's dump"
NOUN_PHRASE_OPENERS = ("the", "our", "their", "this", "that", "your", "my", "its", "'s", "a", "an", "two", "three", "several",
                       "both", "these", "those")
# what a named file holds, said of it: "plays.csv has one row per table session.", "bookings.csv
# holds each desk booking and members.csv the member details"
DESCRIBING_VERBS = {"has", "holds", "contains", "lists", "records", "keeps", "tracks", "stores", "logs", "covers",
                    "carries"}
# what a table named by a noun does, said of it: "the export double-writes some rows", "the
# dump is three days old"
DATA_SUBJECT_VERBS = DESCRIBING_VERBS | {"is", "was", "has", "had", "includes", "repeats", "writes", "double-writes",
                                         "comes", "came", "arrives", "sits", "lives", "misses", "drops", "duplicates",
                                         # (plural subjects: "the till exports cover three match days")
                                         "are", "were", "have", "hold", "contain", "cover", "include", "come", "sit", "live",
                                         "list", "repeat", "miss"}


def _phrase_start(t: Text, x: Token, most: int) -> int:
    """The index of the word before the (at most ``most``) descriptive words that precede ``x``
    (-1 at the request's start): the determiner that may open x's noun phrase."""
    k = x.i - 1
    while k >= 0 and x.i - k <= most and is_unknown(t.tokens[k]) and t.tokens[k].low not in L.CLAUSE_WORDS \
            and t.tokens[k].low not in L.UNMAPPED_VERBS:
        k -= 1
    return k


def names_data(t: Text, x: Token) -> bool:
    """"The lens order export sits on a share": a word that is also an operation, heading a
    noun phrase that a determiner opens (one to three descriptive words between), names the
    data ("export the lens orders", "... orders export to out/o.csv" ask for one). So does one
    right after its determiner, or before the file it names, when a verb says what the table
    does ("the export double-writes some rows", "the tray export t.csv holds years")."""
    if x.low not in DATA_NOUN_VERBS:
        return False
    k = _phrase_start(t, x, 3)
    if k < 0 or t.tokens[k].low not in NOUN_PHRASE_OPENERS:
        return False
    after = t.tokens[x.i + 1:x.i + 3]
    if after and after[0].kind == "path":
        after = after[1:]
    said = bool(after) and after[0].low in DATA_SUBJECT_VERBS
    nxt = t.tokens[x.i + 1] if x.i + 1 < len(t.tokens) else None
    return said or (k < x.i - 1 and not (
        nxt is not None and (nxt.kind == "path" or nxt.low in ("to", "into", "it", "them", "the", "as", "under"))))


# nouns that are also verbs no step does ("every submitted label", "sorted by label date")
NOUN_VERBS = {"label", "labels", "forecast", "weight", "mask", "masks", "rank", "sort", "copy", "copies", "extract",
              "upload", "uploads", "download", "downloads", "fix", "fixes",
              "cluster", "clusters", "export", "exports"}   # ("because the cluster is spotty", "the export lagers")


def names_thing(t: Text, x: Token) -> bool:
    """"every submitted label", "sorted by label date": a word that is also an operation, after a
    determiner (or "by") with at most two descriptive words between, and no object after it, is
    a noun."""
    if x.low not in NOUN_VERBS:
        return False
    k = _phrase_start(t, x, 2)
    nxt = t.tokens[x.i + 1] if x.i + 1 < len(t.tokens) else None
    return k >= 0 and t.tokens[k].low in (*NOUN_PHRASE_OPENERS, "every", "each", "any", "by", "per") and not (
        nxt is not None and (nxt.kind == "path" or nxt.low in ("the", "it", "them", "a", "an", "these", "those", "all", "to", "into")))


# what a business is called after what it does: "Translation agency assistant", "a transcription
# service" name the user's trade, never the method
BUSINESS_NOUNS = {"agency", "agencies", "company", "firm", "shop", "studio", "business", "bureau", "office", "service",
                  "services", "team", "desk", "store", "startup", "consultancy", "practice", "centre", "center", "clinic",
                  "club", "school", "charity", "council", "department", "lab", "salon", "garage", "cafe", "hotel", "library",
                  "museum", "yard", "hall", "exchange", "platform", "app", "api", "lender", "provider",
                  "marketplace", "operator", "retailer", "bank", "insurer"}


def is_year(x: Token) -> bool:
    """A number written as a year ("2015", "1998"): a date the data holds, never a count or a setting."""
    return x.kind == "num" and re.fullmatch(r"(?:19|20)\d\d", x.text) is not None


# the last word of a place's or an organisation's name ("Holly Ridge Tree Farm", "Boosting Hill Estate")
NAME_ENDS = BUSINESS_NOUNS | {"farm", "farms", "estate", "mill", "mills", "works", "trust", "society", "co-op", "cooperative",
                              "group", "partners", "ltd", "inc", "railway", "orchard", "nursery", "brewery", "vineyard",
                              "winery", "dairy", "bakery", "hospice", "sanctuary", "park", "market", "quarry"}


def names_business(t: Text, x: Token) -> bool:
    """A method word right before a business noun ("Translation agency") names the trade; one
    inside a capitalised name ending in such a noun ("Holly Ridge Tree Farm") is part of the name."""
    if x.i + 1 < len(t.tokens) and t.tokens[x.i + 1].low in BUSINESS_NOUNS:
        return True
    if not _capitalised(t, x.i) or not _capitalised(t, x.i - 1):
        return False
    end = x.i
    while _capitalised(t, end + 1):
        end += 1
    return end > x.i and t.tokens[end].low in NAME_ENDS


def _capitalised(t: Text, k: int) -> bool:
    """Token k is a word written with a capital (a word of a name)."""
    return 0 <= k < len(t.tokens) and t.tokens[k].kind == "word" and t.tokens[k].text[:1].isupper()
