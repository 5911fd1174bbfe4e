"""Words that name again what a request said before: a file named inside a later phrase is the
load already made, files listed and then loaded "each one" are one load over all of them, a
join said again in a note gives the kind of the join before it. Each pass rewrites the list of
actions the rule planner read, before their steps are built."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text
from raystack.workflow.nl.words import in_parentheses

if TYPE_CHECKING:
    from raystack.workflow.nl.rules import Action

# a load of the files named before it: "load each one", "read every one of them"
# ("load all four", "read the three files", "read in every one of those", "load both in parallel")
_HOW_MANY = r"(?:two|three|four|five|six|seven|eight|\d+|NUM\d+)"   # (a number masked, as finditer reads it)
EACH_ONE = (r"(?:load|loads|read|reads|open|import|pull)\s+(?:in\s+)?(?:each\s+one|each\s+of\s+(?:them|those|these)|every\s+one(?:\s+of\s+(?:them|those|these))?"
            rf"|all\s+of\s+(?:them|those|these)|them\s+all|each\s+of\s+the\s+{_HOW_MANY}(?:\s+files)?|each"
            rf"|all\s+(?:the\s+)?{_HOW_MANY}(?:\s+(?:files|logs|exports|tables))?|(?:the|those|these)\s+{_HOW_MANY}(?:\s+(?:files|logs|exports|tables))?"
            r"|both(?:\s+(?:files|of\s+them))?|all\s+(?:the\s+)?files)\b")


def join_kind_notes(t: Text, found: list[Action]) -> None:
    """"join a.csv to b.csv on id (a left join)": a join said again in a note, with no file of
    its own, gives the kind of the join before it; it is no second join of that one's result."""
    for k in range(len(found) - 1, 0, -1):
        a = found[k]
        close = next((x.i for x in t.tokens[a.lo:] if x.text == ")"), len(t.tokens))
        # ("join a.csv to b.csv on id as an inner join": the same, said with "as")
        said_as = a.lo >= 2 and t.tokens[a.lo - 1].low in ("a", "an") and t.tokens[a.lo - 2].low == "as"
        if a.entry == "join" and (in_parentheses(t, t.tokens[a.lo]) or said_as) \
                and not any(x.kind == "path" for x in t.tokens[a.lo:close]) \
                and any(b.entry == "join" and b.sentence == a.sentence for b in found[:k]):
            # (its words given back, for the join before to read the kind; "as an ... join" stays said)
            t.relabel([x for x in t.tokens[a.lo:a.trig_end] if not (said_as and x.low in ("join", "merge"))], "join")
            if said_as:
                t.mark(t.tokens[a.lo - 2:a.lo], "join")
            del found[k]


def each_named_file(t: Text, actions: list[Action]) -> list[Action]:
    """"We keep one file per site: a.csv, b.csv and c.csv. Load each one, then put all three
    into a single report": files listed bare and then loaded as "each one" are one load
    over all of them (a map, which what follows reads whole or per file), not a load per
    file of which the report read the last."""
    # (named bare, or the first after the words that say where they are: "... are logged in a.csv, b.csv and c.csv")
    bare = [a for a in actions if a.entry == "load_data" and t.tokens[a.trig_end - 1].kind == "path"
            and sum(x.kind == "path" for x in t.tokens[a.lo:a.trig_end]) == 1
            and list(a.found.params) == ["path"] and a.found.map is None]
    if len(bare) < 2 or len({a.sentence for a in bare}) > 1 or any(
            b.sentence == bare[0].sentence and b not in bare for b in actions) or not all(
            all(x.text in (",", "and", "&", "/") or x.low == "and" for x in t.tokens[a.trig_end:b.lo])
            for a, b in zip(bare, bare[1:])):
        return actions
    later = " ".join(x.low for x in t.tokens[bare[-1].trig_end:])
    lead = _every_file_lead(t, bare[0].lo)
    if not re.search(r"\b" + EACH_ONE, later) and not lead:
        return actions
    t.mark(lead, "load_data")
    each = next(t.finditer(r"\b" + EACH_ONE, bare[-1].trig_end, len(t.tokens), free_only=False), None)
    if each is not None:     # ("Load all four": the load said again, its words the load's)
        t.mark([x for x in each[1] if not x.used], "load_data")
    paths = [a.found.params["path"] for a in bare]
    bare[0].found.params.pop("path")
    bare[0].found.stated.pop("path", None)
    bare[0].found.map = ("path", paths)
    return [a for a in actions if a not in bare[1:]]


# "read every ward file: a.csv, b.csv, c.csv": a load of each file the colon lists
EVERY_FILE = (r"\b(?:load|read|open|import|pull\s+in)\s+(?:every|each|all(?:\s+of)?(?:\s+the)?)\s+(?:[a-z][\w-]*\s+){0,2}"
              r"(?:file|files|log|logs|export|exports|table|tables)\s*:\s*$")


def _every_file_lead(t: Text, first: int) -> list:
    """The words of EVERY_FILE right before the first listed file (none: no such lead)."""
    lo = max(0, first - 8)
    for m, toks in t.finditer(EVERY_FILE, lo, first, free_only=True):
        if toks and toks[-1].i == first - 1:
            return toks
    return []


def one_load_per_file(actions: list[Action]) -> None:
    """"(a) aggregate staff.csv ... (b) stats of staff.csv": a file named again inside a later
    phrase is the load already made."""
    seen: set[str] = set()
    in_map: set[str] = set()
    transformed = False     # a one-table step after the loads, run on each of their files
    owner = None            # the step whose phrase the load is said in: the last step before it that is no load
    for a in list(actions):
        if a.entry != "load_data":
            owner = a
        if a.entry == "load_data" and a.found.map is not None and a.found.map[0] == "path":
            in_map.update(str(p) for p in a.found.map[1])
        transformed = transformed or bool(in_map and a.entry in L.TABLE_TRANSFORMS)
        path = a.found.params.get("path") if a.entry == "load_data" and a.found.map is None else None
        if isinstance(path, str) and path in in_map and a.prepositional and transformed:
            # "load x.csv and y.csv, dedup them, and train a knn on x.csv": a new load of x.csv
            # would train on the raw file, the dedup of it unread
            raise PlanRefused([f"{path} is loaded together with other files and named again by a later step, which "
                               "would read the raw file, not what was done to it; load it in its own clause"])
        side = owner is not None and owner.entry in L.TWO_TABLE_STEPS and owner.sentence == a.sentence
        if isinstance(path, str) and (path in seen or (path in in_map and not transformed and side)) and a.prepositional \
                and a.trig_end - a.lo <= 2:
            # ("load a.csv and b.csv, then append b.csv to a.csv": a side of the stack is a table loaded
            # together before, not a load more and a stack of four)
            actions.remove(a)
        elif isinstance(path, str):
            seen.add(path)


LOAD_PARTICIPLES = {"loaded", "read", "fetched", "pulled", "ingested", "opened"}


def load_participles(t: Text) -> None:
    """"a.csv + b.csv, loaded concurrently": a load verb's participle right after the files it
    loaded (a comma between), before how they are loaded, says the load again."""
    for x in t.unused():
        prev = t.tokens[x.i - 1] if x.i else None
        prev = t.tokens[x.i - 2] if prev is not None and prev.text == "," and x.i >= 2 else prev
        nxt = t.tokens[x.i + 1] if x.i + 1 < len(t.tokens) else None
        if x.low in LOAD_PARTICIPLES and prev is not None and prev.used == "path" and nxt is not None and nxt.used == "parallel":
            t.mark([x], "load_data")


# the words that name a split's test part: "the held-out 10%", "the 10% holdout", "the test set"
HELD_OUT_PART = re.compile(r"\b(?:held[\s-]out|holdout|hold-out|test(?:ing)?\s+(?:set|part|portion|split))\b", re.I)


def _shares(t: Text, a: Action) -> set[float]:
    """The test shares a split's words say, as fractions: "10%" -> 0.1, "90/10" -> 0.9 and 0.1."""
    out: set[float] = set()
    for x in t.tokens[a.lo:max(a.trig_end, a.hi)]:
        if x.kind == "pct":
            out.add(round(float(x.value()), 4))
        elif x.kind == "ratio":     # (its parts, read as split_data's extractor reads them)
            out.update(round(int(p) / 100, 4) for p in re.findall(r"\d+", x.text))
    return out


def split_named_again(t: Text, actions: list[Action]) -> list[Action]:
    """"Split c.csv 90/10, train a logistic model, and evaluate on the held-out 10%": a split's test
    part named again, with "the", after that split, is the part it made, not a second split (read
    as one, the training read data made without it and the request was refused). A share that
    split does not make is refused."""
    out: list[Action] = []
    for a in actions:
        first = next((b for b in out if b.entry == "split_data"), None)
        words = t.tokens[a.lo:a.trig_end]
        definite = (a.lo > 0 and t.tokens[a.lo - 1].low == "the") or (bool(words) and words[0].low == "the")
        if a.entry != "split_data" or first is None or not definite or not HELD_OUT_PART.search(t.span_text(words)):
            out.append(a)
            continue
        said, made = _shares(t, a), _shares(t, first)
        if said and made and not said <= made:
            before = [x for x in t.tokens[first.lo:max(first.trig_end, first.hi)] if x.kind != "punct"]
            raise PlanRefused([f"{t.span_text(words)!r}: the split before ({t.span_text(before)!r}) "
                               "does not hold out that share"])
        t.relabel(words, "split_data", "reference")
        if a.lo and t.tokens[a.lo - 1].low == "the" and not t.tokens[a.lo - 1].used:
            t.mark([t.tokens[a.lo - 1]], "reference")
    return out
