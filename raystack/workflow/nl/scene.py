"""Words that set the scene rather than ask for steps: the request's title and the lead-ins
before a colon or dash ("IoT telemetry:"), a heading line, a preamble ("Create a pipeline that
..."), sentences of context ("We run a chain of bakeries and keep daily sales in sales.csv."),
and where a named file comes from ("visits.csv from the clinic"). Each marks the words it
accounts for; whatever asks for something is left for the accounting to refuse."""

from __future__ import annotations

import re

from raystack.workflow.catalog import CATALOG
from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.courtesy import COURTESY_SENTENCE
from raystack.workflow.nl.text import ARROWS, UNIT_WORDS, Text, Token, sentences
from raystack.workflow.nl.words import (BUSINESS_NOUNS, DESCRIBING_VERBS, MAX_LEAD_IN, in_parentheses, is_free, is_method, is_title,
                                        is_unknown, is_year, method_near, names_business)

LEAD_IN_ENDS = (":", "—", "–", "-")
TITLE_JOINERS = ("(", ")", "/", "&")   # inside a title's words: "Room inspection pass/fail (hotels):"
TITLE_QUESTION_WORDS = {"which", "what", "whether", "how", "who", "why", "when", "where", "is", "are", "does", "do",
                        "can", "could", "would", "should", "will"}
# glue words elsewhere that belong to a title between its first word and its head: nouns, and a
# possessive ("Cobbler's shop.")
TITLE_GLUE = {"job", "jobs", "data", "model", "pipeline", "workflow", "task", "tasks", "run", "runs", "'s"}
MAX_TITLE = 5                # words of a title closed by a full stop or a comma ("Food delivery ETA.")


def title_span(t: Text) -> tuple[int, bool] | None:
    """(end, headed) for a request's title, tokens [0, end): the words before its first colon
    or dash, when they hold no file, number, filler or other punctuation; ``headed`` when it
    ends in a topic head ("Cyber alert triage:"). A step word inside a headed title ("alert")
    names the subject, never a step; so does one the request's body asks for again ("Bike demand
    tuning: ..., tune a kNN ...")."""
    words: list[Token] = []
    for tok in t.tokens:
        if tok.kind == "punct" and tok.text in TITLE_JOINERS:
            continue
        if tok.kind == "punct":
            if tok.text not in LEAD_IN_ENDS[:3] or not words:
                return None
            outside = [x for x in words if not in_parentheses(t, x)]
            if len(words) > MAX_LEAD_IN or len(outside) < 2 or any(is_method(x) or x.low in L.FILLERS for x in words):
                return None
            return tok.i, outside[-1].low in L.TOPIC_HEADS
        if tok.kind != "word":
            return None
        words.append(tok)
    return None


def _opens_line(t: Text, tok: Token) -> bool:
    """The token is the first of its line (a bullet, when it is a dash)."""
    return tok.i > 0 and "\n" in t.raw[t.tokens[tok.i - 1].end:tok.start]


BULLETS = ("-", "*", "•")
LOAD_WORDS = {"read", "load", "pull", "fetch", "ingest", "import", "open"}


def _bulleted_load(t: Text, start: int, seg: list[Token]) -> bool:
    """"- read every ward file: a.csv, b.csv": a list item that opens with a load's verb asks for
    the load; it is no title."""
    return bool(seg) and seg[0].i == start and start > 0 and t.tokens[start - 1].text in BULLETS \
        and _opens_line(t, t.tokens[start - 1]) and seg[0].low in LOAD_WORDS


# verbs that open a clause asking for their step, never a title
STEP_VERBS = {"train", "run", "launch", "fit", "pretrain", "fine-tune", "finetune", "start", "load", "read", "evaluate",
              "deploy", "export", "tune"}


def lead_ins(t: Text) -> None:
    """The few words before a colon or dash that opens a list or the request ("LLM run:
    ...", "weekly CTR refresh --", "Harvest timing (agriculture):"), back to the clause's start;
    a parenthesis inside them is part of the title."""
    start = 0
    for tok in t.tokens:
        if _opens_line(t, tok) and tok.i > start:
            start = tok.i     # a lead-in is on one line ("... 25 percent\n3) two branches off it:")
        if tok.kind == "punct" and tok.text in TITLE_JOINERS:
            continue
        if tok.kind == "punct" and tok.text in ARROWS and start == 0 and tok.i + 1 < len(t.tokens) \
                and (t.tokens[tok.i + 1].kind == "path" or t.tokens[tok.i + 1].used in CATALOG):
            # "Warehouse picking times -> picks.csv -> ...", "yoga studio LM → EDiT pretraining ..."
            seg = [x for x in t.tokens[:tok.i] if is_free(x)]
            if seg and len(seg) == len([x for x in t.tokens[:tok.i] if x.kind != "punct"]) and is_title(seg, t) \
                    and not any(x.low in L.FILLERS for x in seg):     # a noun phrase, not "frobnicate the rows"
                t.mark(seg, "context")
        if tok.kind == "punct" and (tok.text not in LEAD_IN_ENDS or _opens_line(t, tok)):
            start = tok.i + 1     # ("- 80/20" on a line of its own: a list's bullet, not "dupes out -")
            continue
        if tok.kind == "punct" and tok.i + 1 < len(t.tokens):
            seg = [x for x in t.tokens[start:tok.i] if is_free(x)]
            # a clause inside a sentence that holds a step's words is that step's, never a title ("...,
            # then train a linear model on kg at three learning rates — 0.001, ...": its free words are
            # the step's too); a title opens the request, a line or a sentence ("Cinema recommender: ...")
            inner = start > 0 and t.tokens[start - 1].text in (",", ";") and any(
                x.used in CATALOG for x in t.tokens[start:tok.i])
            # ("Train dataset-recs as an elastic DLRM: ...": a clause that opens with its step's verb asks for it)
            inner = inner or (t.tokens[start].used in CATALOG and t.tokens[start].low in STEP_VERBS)
            # ("→ ≥ 0.7: deploy it": a comparison before its colon is a condition, never a title)
            compared = any(x.text in ("<", ">", "≤", "≥", "<=", ">=") for x in t.tokens[max(0, start - 1):tok.i])
            # ("Dedupe, standardize, 25% test — then kNN": a figure inside a sentence is a step's setting)
            counted = start > 0 and t.tokens[start - 1].text in (",", ";") and tok.text != ":" and any(
                x.kind in ("pct", "ratio") for x in seg)
            if is_title(seg, t) and not inner and not compared and not counted and not _bulleted_load(t, start, seg):
                t.mark(seg, "context")
                t.mark([x for x in t.tokens[start:tok.i] if x.text in TITLE_JOINERS and not x.used], "context")
            start = tok.i + 1


# what a speaker says before naming the subject: "okay,", "okay so this is the", "right, this is our"
TITLE_OPENER = (r"(?:(?:okay|ok|right|alright|so|hi|hey|hello|um|uh)\s*,?\s+)+"
                r"(?P<this>(?:so\s+)?this\s+is\s+(?:the|our)\s+)?|(?P<this2>this\s+is\s+(?:the|our)\s+)")


def title_clauses(t: Text) -> None:
    """A title that opens the request and ends at a full stop ("Food delivery ETA. Load ...") or
    at a comma before the colon that opens the request ("Flight manual QA, tiny-1m vs tiny-20m:
    ..."): a short noun phrase (no filler, no verb the catalog lacks) of free words."""
    # a spoken opening before it: "Okay, hostel no-shows.", "Okay so this is the bar group, we've got ..."
    hit = t.match_at(TITLE_OPENER, 0)
    opener = [x for x in hit[1] if not x.used] if hit and not any(x.used and x.used != "punctuation" for x in hit[1]) else []
    named = hit is not None and bool(hit[0].group("this") or hit[0].group("this2")) and bool(opener)   # "this is the ...,": a title by its own words
    skip = opener[-1].i + 1 if opener else 0
    ends = [x for x in t.tokens[skip:] if x.kind == "punct" and x.text not in ("(", ")")]
    if not ends or ends[0].low not in (".", ",", "?") or ends[0] is t.tokens[-1]:
        return
    if ends[0].text == "?" and any(x.low in TITLE_QUESTION_WORDS for x in t.tokens[skip:ends[0].i]):
        return      # "Which base is better, ...?" asks; "Desk usage by plan?" names the subject
    end, extra = ends[0].i, []
    if ends[0].text == "," and not named:      # "Video game churn, players.csv. Steps: ...": the rest of the clause is used
        close = next((x for x in ends[1:] if x.text != ","), None)
        if close is None:
            return
        rest = t.tokens[ends[0].i + 1:close.i]
        # "Pest control callouts, second-visit classifier. Load ...": a title in two noun phrases
        if close.low == "." and rest and close is not t.tokens[-1] and all(
                x.kind == "word" and is_free(x) and (x.low not in L.FILLERS or (x is not rest[-1] and x.low in TITLE_GLUE))
                and x.low not in L.RESTRICTING for x in rest) \
                and ends[0].i + len(rest) <= MAX_TITLE + 2 and (rest[-1].low in L.TOPIC_HEADS
                                                                 or t.tokens[ends[0].i - 1].low in BUSINESS_NOUNS):
            # ("Crypto exchange, withdrawals risk.": who asks, then the subject)
            extra = rest
        elif not (close.text in LEAD_IN_ENDS[:3] or (close.low == "." and all(
                x.used or x.kind != "word" or x.low in L.FILLERS for x in rest))):
            return
    words = [x for x in t.tokens[skip:end] if x.text not in ("(", ")")]
    # a noun that is also glue elsewhere may modify the head after the title's first word
    # ("Landscaping crew job times.", "Cobbler's shop."); "Job done." and "Run it." are no titles
    if words and len(words) <= MAX_TITLE and all(is_free(x) and x.kind == "word" and (
            x.low not in L.FILLERS or (x is not words[0] and x is not words[-1] and x.low in TITLE_GLUE))
            for x in words) and is_title(words + extra, t):
        t.mark(opener + words + extra + (t.tokens[end:end + 1] if named else []), "context")


def headings(t: Text) -> None:
    """A request's first line, when it is a short title above the lines that ask for steps
    ("Solubility screen" over a bulleted list)."""
    first = [x for x in t.tokens if "\n" not in t.raw[t.tokens[0].start:x.start]]
    # ("Sleep lab: apnea screening": its lead-in already read as a title)
    if not first or len(first) == len(t.tokens) or any(x.used and x.used not in ("punctuation", "context") for x in first):
        return
    words = [x for x in first if is_free(x)]
    if is_title(words, t):
        t.mark(words, "context")


# what opens a sentence that only tells where the data comes from or who the user is ("We run a
# chain of bakeries and keep daily sales in sales.csv.", "Context: churn.csv has one row per
# subscriber.", "Our analysts upload weekly numbers to sales.csv.")
CONTEXT_SUBJECTS = L.SUBJECT_WORDS
CONTEXT_LEADS = {"context", "background", "fyi", "note", "btw", "nb", "setup", "situation"}
# the data's faults: said of the data, they may ask for a cleaning ("We have duplicates in x.csv.")
FAULT_NOUNS = {"duplicates", "dupes", "nulls", "nans", "outliers", "errors"}   # never a description of the data
DATA_FAULTS = FAULT_NOUNS | {"duplicate", "missing", "null", "nan", "empty", "blank", "noisy", "noise", "messy", "dirty",
                             "invalid", "corrupt", "corrupted", "broken", "imbalanced", "unbalanced", "skewed",
                             "incomplete", "gaps", "wrong", "bad"}
# words that ask for something, or say how a step should run: such a sentence is no context
ASKING_WORDS = DATA_FAULTS | {
    "should", "must", "need", "needs", "needed", "only", "just", "want", "wants", "please", "require", "requires",
    "required", "ensure", "make", "avoid", "don't", "dont", "never", "not", "no", "nor", "without", "except",
    "excluding", "unless", "if", "when", "whenever", "until", "before", "after", "once", "while", "target", "label",
    "labels", "predict", "predicts", "column", "columns", "care", "prefer", "prefers", "ignore", "skip", "instead",
    "rather", "also", "then", "let", "lets", "can", "could", "would", "will", "shall", "try", "expect", "expects",
    "hope", "goal", "aim"}
MODEL_WORDS = {"model", "models", "classifier", "classifiers", "knn", "logistic", "linear", "centroid", "regression",
               "regressor", "adapter", "adapters", "lora", "edit", "diloco", "dlrm"}
MAX_CONTEXT = 20   # words of a context sentence
SCENE_ADVERBS = {"sometimes", "often", "usually", "occasionally", "currently", "recently", "lately", "normally",
                 "typically", "unfortunately", "apparently", "historically"}


def asking_sentences(t: Text, beside_loads: bool = False) -> list[tuple[int, int, bool]]:
    """(lo, hi, asks) per sentence, where ``asks``: a word of it names a step (a load too, unless
    ``beside_loads``: a file named in a sentence is the data's load, which asks for nothing);
    none when no sentence asks, as then no sentence is beside a request."""
    out = [(lo, hi, any(x.used in CATALOG and not (beside_loads and x.used == "load_data") for x in t.tokens[lo:hi]))
           for lo, hi in sentences(t)]
    return out if any(asks for _, _, asks in out) else []


# "... and want to predict final_gravity": the goal, when a training learns that column
PREDICT_GOAL = (r"\b(?:and\s+)?(?:(?:we|i)\s+)?(?:want|wants|need|needs|would\s+like|'d\s+like|we'd\s+like|i'd\s+like|hope|aim)\s+to\s+"
                r"(?:predict|forecast|estimate)\s+(?:the\s+|its\s+)?(?P<x>[a-z_][a-z0-9_]*)\b")


def _goals(t: Text, lo: int, hi: int, learned: set[str]) -> set[int]:
    """The tokens of a goal that names a column a training of the plan learns (``learned``)."""
    out: set[int] = set()
    for m, toks in t.finditer(PREDICT_GOAL, lo, hi, free_only=True):
        # ("we'd like to estimate labour" beside a training whose target is labour_hours: the
        # column's first word)
        if m.group("x") in learned or any(c.startswith(m.group("x") + "_") for c in learned):
            out.update(x.i for x in toks)
    return out


def file_descriptions(t: Text) -> None:
    """The words after a named file and a verb of holding, to the end of the clause or its "and"
    (after "and", another named file's words may follow without the verb): none asks for
    anything, names a fault, a model, a metric or a restriction; the file is the data's load."""
    for lo, hi in sentences(t):
        k = lo
        while k < hi - 2:
            path, verb = t.tokens[k], t.tokens[k + 1]
            if path.kind != "path" or verb.low not in DESCRIBING_VERBS or verb.used:
                k += 1
                continue
            j, marked = k + 1, [verb]
            while j < hi:
                run = []
                for x in t.tokens[j + 1:hi]:
                    if x.kind == "punct" or x.low in ("and", "but", "so", "then"):   # another clause may ask
                        break
                    run.append(x)
                if not run or len(run) > MAX_CONTEXT or not all(_describes_data(x) for x in run):
                    marked = []
                    break
                marked += run
                nxt = run[-1].i + 1
                # "... and members.csv the member details": the next file, the verb left out
                if nxt + 2 < hi and t.tokens[nxt].low == "and" and t.tokens[nxt + 1].kind == "path":
                    marked.append(t.tokens[nxt])
                    j = nxt + 1
                    continue
                break
            if marked:
                t.mark(marked, "context")
            k += 2


# "memorial_orders.csv (one row per headstone we've carved)": what a row of the file is, in
# parentheses right after it
ROW_NOTE = (r"\(\s*(?:one|a|an|NUM\d+)\s+(?:row|line|record|entry)\s+(?:per|for\s+each|for\s+every|a)\s+[^()]*\)")


def row_notes(t: Text) -> None:
    for _, toks in t.finditer(ROW_NOTE, 0, len(t.tokens), free_only=True):
        k = next(k for k, x in enumerate(toks) if k >= 3 and x.low in ("per", "each", "every", "a"))
        what = toks[k + 1:-1]
        before = t.tokens[toks[0].i - 1] if toks[0].i else None
        if before is not None and before.kind == "path" and 0 < len(what) <= MAX_CONTEXT \
                and all(_describes_data(x) or x.text in ("'s", "'ve", "'re") for x in what):
            t.mark(toks, "context")


def _asks_or_names_a_model(x: Token) -> bool:
    """A word no scene-setting words hold: one that asks for something, or names a model, a
    method the catalog lacks, a task or a metric."""
    return x.low in ASKING_WORDS or x.low in MODEL_WORDS or x.low in L.UNSUPPORTED or x.low in L.TASK_NOUNS \
        or re.fullmatch(L.METRIC_RX, x.low) is not None


def _describes_data(x: Token) -> bool:
    return x.kind in ("word", "num") and is_free(x) and not _asks_or_names_a_model(x) \
        and x.low not in L.RESTRICTING and x.low not in L.UNMAPPED_VERBS


# glue a heading's noun phrases may hold ("Mortgage analytics at a regional credit union.")
HEADING_GLUE = {"at", "a", "an", "of", "for", "in", "and", "&", "'s", "our", "my"}   # (not "the": "... of the north stores" picks rows)
MAX_HEADING = 10             # words of a heading sentence opening the request
PERIOD_WORDS = {"hourly", "daily", "weekly", "monthly", "quarterly", "yearly", "annual"}
# words that ask, restrict, group or name a fault or a period: a sentence holding one is no heading
NOT_IN_HEADINGS = L.RESTRICTING | L.UNMAPPED_VERBS | L.CLAUSE_WORDS | DATA_FAULTS | PERIOD_WORDS | {"by", "per", "each"}


def heading_sentence(t: Text) -> None:
    """"Mortgage analytics at a regional credit union.", "Home insurance, water-damage claims.",
    "Used-car marketplace, pricing team.": a first sentence of noun phrases only (who writes, what
    about), no verb, figure, grouping or restriction, before the sentences that ask."""
    spans = sentences(t)
    if len(spans) < 2:
        return
    lo, hi = spans[0]
    if t.tokens[hi - 1].low != ".":
        return
    toks = t.tokens[lo:hi - 1]
    words = [x for x in toks if x.text != ","]
    if not words or len(words) > MAX_HEADING or any(x.kind == "punct" and x.text != "," for x in toks):
        return
    if len(words) > 1 and words[1].low in ("the", "a", "an", "our", "my", "their", "its", "this", "these"):
        return      # ("Frobnicate the widgets.": a verb and its object, asked for)
    if all(_heading_word(t, x, first=x is words[0]) for x in words) and sum(x.low not in HEADING_GLUE for x in words) >= 2:
        t.mark(t.tokens[lo:hi], "context")


def _heading_word(t: Text, x: Token, first: bool) -> bool:
    """A word a heading may hold: a free word naming no method, operation, metric, restriction,
    grouping, fault or period; glue only after its first word."""
    if not (is_free(x) and x.kind == "word") or is_method(x) or method_near(t, x) or re.fullmatch(L.METRIC_RX, x.low):
        return False
    if x.low in NOT_IN_HEADINGS:
        return False
    # ("Herd advisory assistant for the dairy cooperative.": who it is for, or where)
    the_for = x.low == "the" and x.i > 0 and t.tokens[x.i - 1].low in ("for", "at") and not first
    return x.low not in L.FILLERS or x.low == "team" or (x.low in HEADING_GLUE and not first) or the_for \
        or (x.low in SIZE_WORDS and _sizes_a_business(t, x))


def _sizes_a_business(t: Text, x: Token) -> bool:
    """A size word before the business it sizes, in the same clause ("Small tea shop", "Small bakery";
    not "Small sample", whose noun is the planner's)."""
    for y in t.tokens[x.i + 1:x.i + 4]:
        if y.kind == "punct":
            return False
        if y.low in BUSINESS_NOUNS or y.low.rstrip("s") in BUSINESS_NOUNS or is_unknown(y):
            return True       # ("Small bakery": a word the planner has no meaning for names the business)
    return False


# how big the writer's business is, opening a heading ("Small tea shop.", "Large hospital trust, pharmacy.")
SIZE_WORDS = {"small", "large", "big", "tiny", "little", "local", "independent", "medium-sized", "mid-sized"}


def settings_opening(t: Text) -> None:
    """"At our sugarhouse the sap records live in ...": where the writer works, opening the
    request (one or two free words after "at our" / "at the")."""
    if len(t.tokens) < 4 or t.tokens[0].low != "at" or t.tokens[1].low not in ("our", "the"):
        return
    words = [x for x in t.tokens[2:4] if x.kind == "word" and is_free(x) and is_unknown(x)]
    nxt = t.tokens[2 + len(words)] if 2 + len(words) < len(t.tokens) else None
    if words and nxt is not None and (nxt.text == "," or nxt.low in ("the", "we", "our", "i")):
        t.mark(t.tokens[:2] + words + ([nxt] if nxt.text == "," else []), "context")


def introductions(t: Text) -> None:
    """"Brewery here.", "Data team here!", "Hey, credit-risk team at a BNPL lender here.": who
    writes, in a first sentence of its own; "As a hospital analyst, I need ...": in a clause with
    "as" that opens the request."""
    # "As a hospital analyst, I need ...", "As the data team at a bakery, we ...": who writes, said in a
    # clause that opens the request, before who it is
    comma = next((x.i for x in t.tokens[:MAX_INTRO + 2] if x.text == ","), None)
    if comma is not None and t.tokens[0].low == "as" and 2 < comma and t.tokens[1].low in ("a", "an", "the", "our", "my") \
            and comma + 1 < len(t.tokens) and t.tokens[comma + 1].low in ("i", "we", "i'm", "we're", "i'd", "we'd") \
            and all(_names_who_writes(x) or x.low in INTRO_GLUE for x in t.tokens[1:comma]):
        t.mark(t.tokens[:comma + 1], "context")
    spans = sentences(t)
    if len(spans) < 2:
        return
    lo, hi = spans[0]
    words = [x for x in t.tokens[lo:hi] if x.kind != "punct"]
    if 2 <= len(words) <= 9 and words[-1].low == "here" and all(is_free(x) and x.kind == "word" and x.low not in L.RESTRICTING
                                                                for x in words):
        t.mark(words, "context")
    # "(Okay so) this is the hop farm, we want to ...": who writes, in the first clause
    opener = next((k for k in range(lo, min(hi, lo + 3)) if [x.low for x in t.tokens[k:k + 2]] == ["this", "is"]), None)
    comma = next((x.i for x in t.tokens[lo:min(hi, lo + 10)] if x.text == ","), None)
    if opener is not None and comma is not None and comma > opener + 2 and all(
            is_free(x) and x.kind == "word" and x.low not in L.RESTRICTING for x in t.tokens[lo:comma]):
        t.mark(t.tokens[lo:comma + 1], "context")


GREETINGS = {"hi", "hello", "hey", "okay", "ok", "right", "morning", "afternoon", "evening", "hiya"}
INTRO_GLUE = {"at", "the", "a", "an", "of", "for", "from", "in", "on", "our", "my", "'s", "and", "&"}
MAX_INTRO = 8                # words of who writes after a greeting


def _names_who_writes(x: Token) -> bool:
    """A word that may name who writes: free, and no method, restriction, operation or fault."""
    return is_free(x) and not is_method(x) and x.low not in L.RESTRICTING and x.low not in L.UNMAPPED_VERBS \
        and x.low not in DATA_FAULTS


def greeted_introductions(t: Text) -> None:
    """"Hi, this is dispatch at the towing company.", "Hi, operations at the security company.":
    a greeting, then who writes (a few free words and their glue, no figure, file, operation or
    restriction), in a first sentence of its own before the sentences that ask."""
    spans = sentences(t)
    if len(spans) < 2:
        return
    lo, hi = spans[0]
    if t.tokens[hi - 1].low != "." or t.tokens[lo].low not in GREETINGS:
        return
    k = lo
    while k < hi and (t.tokens[k].low in GREETINGS or t.tokens[k].text == ","):
        k += 1
    named = [x.low for x in t.tokens[k:k + 2]] in (["this", "is"], ["it", "'s"], ["we", "'re"])
    k += 2 * named
    words = t.tokens[k:hi - 1]
    # who writes, said as such ("this is ...") or with where ("operations at the security company");
    # "Hello, the big stores." may pick rows
    if not 1 <= len(words) <= MAX_INTRO or sum(x.low not in INTRO_GLUE for x in words) < 1 \
            or not (named or any(x.low in ("at", "from") for x in words)):
        return
    if all(x.kind == "word" and _names_who_writes(x) for x in words) \
            and words[0].low not in INTRO_GLUE - {"the", "our", "my", "a", "an"} and words[-1].low not in INTRO_GLUE:
        t.mark([x for x in t.tokens[lo:hi] if not x.used], "context")


def sender_introductions(t: Text) -> None:
    """"From the Regional Electoral Commission's research unit.": who writes, as where the request
    comes from, in a first sentence of its own: an organisation (a possessive, a business noun or
    a capitalised name), no file, figure, operation or restriction."""
    spans = sentences(t)
    if len(spans) < 2:
        return
    lo, hi = spans[0]
    if t.tokens[hi - 1].low != "." or t.tokens[lo].low != "from" or hi - lo < 4:
        return
    words = t.tokens[lo + 1:hi - 1]
    if len(words) > MAX_INTRO + 2 or words[0].low not in ("the", "our", "my"):
        return
    named = any(x.text in ("'s", "’s") or x.low in BUSINESS_NOUNS or (x.text[:1].isupper() and x is not words[0])
                for x in words)
    if named and all((x.kind == "word" or x.text in ("'s", "’s")) and _names_who_writes(x) for x in words):
        t.mark(t.tokens[lo:hi - 1], "context")


LOCATING_VERBS = {"are", "is", "live", "lives", "sit", "sits"}


def _data_is_in(t: Text, lo: int, hi: int) -> bool:
    """"Beehive weight logs are in a.csv, ...", "The loan book is b.parquet; ...": a sentence
    that opens with a noun phrase (a few descriptive words, a determiner first) saying which
    files hold the data."""
    start = lo + (t.tokens[lo].low in ("the", "our", "my", "their", "your"))
    for k in range(start + 1, min(hi - 1, start + 6)):
        verb, nxt = t.tokens[k], t.tokens[k + 1]
        path = nxt if nxt.kind == "path" else t.tokens[k + 2] if nxt.low in ("in", "at") and k + 2 < hi else None
        if verb.low in LOCATING_VERBS and path is not None and path.kind == "path":
            return all(x.kind == "word" and is_free(x) and x.low not in L.FILLERS for x in t.tokens[start:k])
    return False


ASIDES = ("purpose", "reason", "context", "description")


def context_sentences(t: Text) -> None:
    """A sentence that asks for nothing: it names no step (a file in it is the data's load), says
    who the user is or where the data comes from, opens with its subject ("We ...", "Our
    analysts ...", "The file x.csv ...") or a lead-in ("Context:", "FYI"), holds no number, metric,
    model, condition, negation or request word (but a goal that names the column a training
    learns: "... and want to predict final_gravity"), and another sentence asks for the steps."""
    learned = {x.low for x in t.tokens if x.used == "target"}
    for lo, hi, asks in asking_sentences(t, beside_loads=True):
        goal = _goals(t, lo, hi, learned)
        # (words an aside already holds are accounted for: "... and want to estimate how long a call-out will take";
        # a parenthesis inside a sentence naming the data, "a.csv and b.csv (same columns)", as the words in it)
        has_file = any(x.kind == "path" for x in t.tokens[lo:hi])
        # "Fencing installer: we'd like to estimate labour.", "Oyster farm: our counts are ...": a
        # title and its colon before the sentence's subject
        lead = _title_lead(t, lo, hi)
        toks = [x for x in t.tokens[lo:hi] if not (x.kind == "punct" and (x.low in ".:," or (x.text == ";" and x.i == hi - 1)))
                and x.i not in goal
                and x.used not in ASIDES and not (x.text in ("(", ")") and x.i > lo and has_file) and x not in lead]
        if not asks and lead and not toks and goal and t.tokens[hi - 1].text not in ("?", "!"):
            t.mark(lead + [t.tokens[i] for i in sorted(goal)], "context")
            continue
        if asks or not toks or t.tokens[hi - 1].text in ("?", "!"):
            continue
        # ("Background: St Brigid's Hospice loses about one in five of its givers every year."): a
        # sentence its label says is background, whatever its subject, with figures of the scene
        labelled = _background_label(t, lo)
        if any((x.kind not in ("word", "path") and not _a_year(t, x) and not _a_count_of_things(t, x)
                and not (labelled and _a_scene_figure(t, x)))
               or (_asks_or_names_a_model(x) and not names_business(t, x) and not (labelled and x.low in WISHES))
               or x.low.startswith(L.UNSUPPORTED_PREFIXES) for x in toks):
            continue
        if any(x.kind == "path" and not x.used for x in toks):
            continue    # a file no step reads is never scene ("Each region sends its own export: n.csv, ...")
        if labelled:
            free = [x for x in toks if not x.used]
            if free and len(free) <= MAX_LABELLED_CONTEXT and not any(x.low in L.UNMAPPED_VERBS for x in free):
                t.mark(lead + free + [t.tokens[i] for i in sorted(goal)], "context")
            continue
        # ("Hello, we are a spinning mill ...", "Sometimes a lot comes out in the wrong shade."): a
        # greeting, or an adverb of how often or when, before the subject
        greeted = len(toks) > 1 and toks[0].low in ("hi", "hello", "hey", "hiya") and toks[1].low in ("we", "i", "our", "my")
        head = toks[1] if greeted or (len(toks) > 1 and toks[0].low in SCENE_ADVERBS) else toks[0]
        if head.low not in CONTEXT_SUBJECTS | CONTEXT_LEADS and head.kind != "path" and not _data_is_in(t, lo, hi) \
                and not (toks[0].low in SCENE_ADVERBS and head.low in ("a", "an", "the", "some", "our", "my")):
            continue
        free = [x for x in toks if not x.used]
        if free and len(free) <= MAX_CONTEXT:
            t.mark(lead + free + [t.tokens[i] for i in sorted(goal)], "context")


# labels that say a sentence is background ("Background: ...", "Summary: ...", "Context: ...")
BACKGROUND_LABELS = {"background", "context", "summary", "situation", "overview", "fyi"}
MAX_LABELLED_CONTEXT = 40   # words of a labelled background sentence
# what the writer wishes for, said in a background sentence ("the team would like an early warning"):
# the wish, no step (a step the words name is read as one, and the sentence is no background)
WISHES = {"would", "like", "want", "wants", "wanted", "hope", "hopes", "hoping"}


def _background_label(t: Text, lo: int) -> bool:
    """The sentence at ``lo`` opens with a background label and its colon ("Background: ...")."""
    return lo + 2 < len(t.tokens) and t.tokens[lo].low in BACKGROUND_LABELS and t.tokens[lo + 1].text == ":"


def _a_scene_figure(t: Text, x: Token) -> bool:
    """"loses about one in five of its givers", "140 plots and a waiting list of 60": a plain number
    in a background sentence, no setting of a step (no unit word, percentage or ratio near it)."""
    if x.kind != "num":
        return False
    near = [y.low for y in t.tokens[max(0, x.i - 2):x.i + 3] if y is not x]
    return not any(w in UNIT_WORDS or w in ("%", "percent", "per", "cent") for w in near)


def data_clauses(t: Text) -> None:
    """"The loan book is b.parquet; the export ... , so dedupe it": a clause before a semicolon
    that opens its sentence and only says which file holds the data (the file is the load's)."""
    for lo, hi in sentences(t):
        semi = next((x.i for x in t.tokens[lo:hi] if x.text == ";"), None)
        if semi is not None and _data_is_in(t, lo, semi) and all(x.kind == "path" or x.used == "load_data" or is_free(x)
                                                                 for x in t.tokens[lo:semi]):
            t.mark([x for x in t.tokens[lo:semi] if not x.used], "context")


def _a_count_of_things(t: Text, x: Token) -> bool:
    """"I run two phone repair shops": a small whole number of the things the writer has (a plural
    noun within two words after it), never a step's setting (rows, epochs, workers ...)."""
    if x.kind != "num" or (x.val is None and not x.text.replace(",", "").isdigit()):
        return False
    value = float(x.val if x.val is not None else x.text.replace(",", ""))
    after = [y for y in t.tokens[x.i + 1:x.i + 4] if y.kind == "word"]
    plural = next((y for y in after if y.low.endswith("s") and len(y.low) > 3), None)
    # ("a housing association with about 4,000 homes": any size, when it is said to be rough)
    rough = x.i > 0 and t.tokens[x.i - 1].low in ROUGHLY
    return value.is_integer() and 1 < value and (value <= 100 or rough) and plural is not None and plural.low not in UNIT_WORDS \
        and not any(y.low in UNIT_WORDS for y in after[:after.index(plural) + 1])


ROUGHLY = {"about", "around", "roughly", "approximately", "some", "nearly", "almost", "over", "~"}


def _a_year(t: Text, x: Token) -> bool:
    """"Every launch since 2015 is logged in shouts.csv": a year the data goes back to, no setting."""
    return is_year(x) and x.i > 0 and t.tokens[x.i - 1].low in ("since", "from", "in", "until", "till", "back")


def _title_lead(t: Text, lo: int, hi: int) -> list[Token]:
    """The words of a title and its colon that open the sentence [lo, hi) (none: no such title)."""
    colon = next((x for x in t.tokens[lo:min(hi, lo + MAX_LEAD_IN + 1)] if x.text == ":"), None)
    if colon is None or colon.i == lo:
        return []
    words = t.tokens[lo:colon.i]
    if all(is_free(x) and x.kind == "word" for x in words) and is_title(words, t):
        return [*words, colon]
    return []


# the words of a sentence that only greets, thanks, or announces the steps ("Thanks in advance!",
# "Can you help me with something?", "Do the following.", "Nothing fancy.")
COURTESY_WORDS = {
    "thanks", "thank", "you", "in", "advance", "cheers", "much", "appreciated", "a", "lot", "so", "very", "that's",
    "that", "is", "it", "all", "nothing", "fancy", "else", "please", "can", "could", "would", "help", "me", "us",
    "with", "something", "out", "do", "the", "following", "steps", "here", "are", "as", "follows", "hi", "hello",
    "hey", "dear", "team", "regards", "best", "kind", "great", "awesome", "ok", "okay", "go", "quick", "question",
    "hand", "favor", "favour", "really", "just", "i", "have", "for", "ahead", "of", "time", "below", "this", "one", "ta"}


# "A plot of the totals afterwards would be great.": the close of a sentence that asks for a step
COURTESY_TAIL = (r"\b(?:would|will|'d)\s+be\s+(?:great|nice|lovely|ideal|perfect|helpful|good|appreciated|awesome|"
                 r"brilliant|handy|useful)(?=\s*(?:[.!]|$))")


# "If possible: load ...", "..., if you can": a courtesy, no condition
COURTESY_IF = (r"\b(?:if\s+(?:possible|you\s+can|you\s+could|you\s+would|you\s+don't\s+mind|that's\s+(?:ok(?:ay)?|alright|fine|doable)"
               r"|that\s+(?:makes\s+sense|is\s+(?:ok(?:ay)?|alright|fine|doable)))"     # "..., if that makes sense"
               r"|when(?:ever)?\s+(?:you\s+(?:can|get\s+a\s+(?:chance|moment))|convenient|possible))\b")


# "Thanks, Maggie (stonemason's yard)", "Cheers, Tom", "Kind regards, Ana Ruiz": a sign-off closing
# the request, the name after it (one or two capitalised words, then at most a note in parentheses)
SIGN_OFF = r"\b(?:thanks|thank\s+you|many\s+thanks|cheers|regards|kind\s+regards|best\s+regards|best|ta)\s*[,!]?\s*$"


def _sign_off(t: Text) -> None:
    toks = t.tokens
    end = len(toks)
    while end and toks[end - 1].kind == "punct" and toks[end - 1].text in ".!":
        end -= 1
    if end and toks[end - 1].text == ")":          # the note after the name ("(stonemason's yard)")
        opening = next((x.i for x in reversed(toks[:end - 1]) if x.text == "("), None)
        if opening is None or not all(x.used or x.kind == "punct" for x in toks[opening + 1:end - 1]):
            return
        end = opening
    for size in (2, 1):
        name = toks[end - size:end] if end >= size + 1 else []
        if name and all(x.kind == "word" and not x.used and x.text[:1].isupper() and x.text[1:].islower() for x in name) \
                and re.search(SIGN_OFF, " ".join(x.low for x in toks[max(0, end - size - 4):end - size])):
            t.mark(name, "context")
            return


def courtesies(t: Text) -> None:
    """A sentence whose words only greet, thank or announce the steps, beside one that asks for them;
    "... would be great" closing a sentence that asks for something; a sign-off's name; a sentence
    that only excuses or places the request (COURTESY_SENTENCE)."""
    _sign_off(t)
    spans = sentences(t)
    for lo, hi in spans if len(spans) > 1 else []:
        toks = t.tokens[lo:hi]
        if all(not x.used or x.used == "punctuation" for x in toks) and COURTESY_SENTENCE.fullmatch(" ".join(x.low for x in toks)):
            t.mark(toks, "context")
    for lo, hi, asks in asking_sentences(t):
        words = [x for x in t.tokens[lo:hi] if x.kind != "punct"]
        if not asks and words and all(x.kind == "word" and x.low in COURTESY_WORDS for x in words):
            t.mark([x for x in words if not x.used], "context")
        elif asks:
            for _, toks in t.finditer(f"{COURTESY_TAIL}|{COURTESY_IF}", lo, hi, free_only=True):
                t.mark(toks, "context")


# "Create a pipeline that loads x.csv ...", "Build a workflow to ...": the request names the
# workflow it describes
PREAMBLE = (r"\b(?:build|create|make|set\s+up|write|define|design|put\s+together|assemble)\s+(?:me\s+|us\s+)?(?:a|an|the|one)\s+"
            r"(?:simple\s+|small\s+|quick\s+|new\s+|little\s+)?(?:workflow|pipeline|dag|flow)\s+(?:that|which|to|where)?"
            # "My manager wants a chart of ...": who asks, as "I want" says it
            r"|^(?:my|our)\s+(?:manager|boss|team|client|lead|director|analysts?|colleagues?)\s+(?:wants|needs|would\s+like|asked\s+for)\b")


def preamble(t: Text) -> None:
    for _, toks in t.finditer(PREAMBLE, 0, len(t.tokens), free_only=True):
        t.mark(toks, "preamble")


MAX_ORIGIN = 3               # words of where a file comes from ("from the clinic")


def origins(t: Text) -> None:
    """"We have visits.csv from the clinic", "orders.csv from our web shop": where a file named
    comes from, right after it, up to the clause's end, describes it."""
    for tok in t.tokens[1:]:
        if tok.low != "from" or tok.used or t.tokens[tok.i - 1].kind != "path":
            continue
        run, j = [], tok.i + 1
        while j < len(t.tokens) and t.tokens[j].low in ("the", "a", "an", "our", "my", "their", "its"):
            run.append(t.tokens[j])
            j += 1
        words = 0
        while j < len(t.tokens) and is_unknown(t.tokens[j]) and words < MAX_ORIGIN:
            run.append(t.tokens[j])
            words += 1
            j += 1
        nxt = t.tokens[j] if j < len(t.tokens) else None
        if words and (nxt is None or nxt.kind == "punct" or (nxt.low in L.CLAUSE_WORDS and not nxt.used)) \
                and not any(x.low in L.UNSUPPORTED or x.low in L.CLAUSE_WORDS or x.low in L.UNMAPPED_VERBS
                            or x.low in L.TASK_NOUNS for x in run):
            t.mark([tok, *run], "origin")
