"""Every word of a request accounted for: what the rules did not use must be glue, context or a
description, else the request is refused with the words quoted.

After the rules have read steps, parameters and constructs, the words left over are judged by
their place in the sentence, never by a list of accepted phrases:

- fillers (articles, pronouns, politeness, "then") and references to earlier results ("the
  two", "all three") need nothing;
- a lead-in, the words before a colon or a dash that opens what follows ("IoT telemetry:",
  "weekly CTR refresh --"), names the request's context;
- an action's object, the few words right after the phrase that named the step ("dedupe the
  products", "impute missing genotypes"), says what it works on;
- words right before a head noun, a file or a named value describe it ("the telecom churn
  data"); a purpose ("for keyword spotting", "for the recommender") says what the work is for;
- anything else (a verb no step has, a method the catalog lacks) makes the plan a refusal that
  quotes those words: a guess is worse than an honest refusal.
"""

from __future__ import annotations

import re
from typing import Iterable

from raystack.workflow.catalog import CATALOG
from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.asides import (HOW_WORDS, ROW_NOUNS, asks_nothing, channels, flaky_storage, join_reasons, kept_rows, leading_reasons,
                                         notes, notes_inside_file_lists, opening_purposes, plain_notes, purposes, reason_clauses, reasons,
                                         retry_notes, size_reasons)
from raystack.workflow.nl.goals import (SOURCE_WORDS, predict_purposes, question_purposes, table_goals, understanding_goals,
                                        wanted_purposes)
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.said_again import load_participles
from raystack.workflow.nl.scene import (FAULT_NOUNS, context_sentences, courtesies, data_clauses, file_descriptions, heading_sentence,
                                        greeted_introductions, headings, introductions, sender_introductions, lead_ins, origins, preamble, row_notes, settings_opening,
                                        title_clauses)
from raystack.workflow.nl.stated_faults import fault_statements
from raystack.workflow.nl.subsets import column_subset, unselected_subset
from raystack.workflow.nl.text import ARROWS, Text, Token, sentences
from raystack.workflow.nl.words import (BUSINESS_NOUNS, MAX_LEAD_IN, is_free, is_method, is_unknown, is_year, method_near,
                                        names_business, names_data, names_thing)

MAX_DESCRIPTION = 4          # words before a head noun read as its description
MAX_OBJECT = 3               # words after an action's phrase read as its object
# steps whose object is the data they work on ("dedupe the products", "plot the readings"); the
# object of a training, tuning or part step says what it trains and is never waved through
DATA_OBJECT_STEPS = {"dedup", "impute", "clean_data", "normalize", "sample", "stats", "plot",
                     "aggregate", "load_data", "write_table", "save_report", "split_data", "join", "concat"}
OBJECT_STOPS = {"on", "in", "from", "with", "to", "for", "of", "by", "at", "into", "over", "using", "via", "per",
                "including", "within", "across"}
CLAUSE_ENDS = {",", ";", ".", "!", "?", ":", "(", ")", "—", "–", "-", *("->", "=>", "→", "⇒", "⟶")}
# words before a question word that still open the question ("so what is ...?", "tell me which ...?")
QUESTION_OPENERS = {"so", "and", "also", "then", "now", "ok", "okay", "well", "please", "pls", "tell", "show",
                    "me", "us", "i", "want", "to", "know", "wonder", "do", "you", "can", "could"}
# steps that compare results, and the words that say so ("compare the runs and keep the best")
COMPARING_STEPS = {"select_best", "evaluate_model", "evaluate_adapters", "tune"}
COMPARE_WORDS = {"compare", "compares", "comparing", "compared", "comparison", "bake-off", "bakeoff",
                 "shootout", "head-to-head", "against", "versus", "vs", "better", "which", "wins", "win",
                 "works", "work", "performs", "perform", "fares", "worse", "candidate", "candidates", "bases"}
# steps that train or run a model: a task named as the request's subject is theirs to carry out
MODEL_STEPS = {"train_model", "tune", "edit_pretrain", "mlora_finetune", "elastic_dlrm", "load_checkpoint", "load_adapters",
               "evaluate_adapters", "serve_adapters"}
TARGET_VERBS = {"predict", "forecast", "classify", "detect", "estimate", "flag", "identify", "spot"}
TARGET_PARTICIPLES = {"predicting", "forecasting", "classifying", "detecting", "estimating"}
MODEL_HEADS = {"model", "classifier", "regressor", "predictor", "estimator", "regression"}   # "a linear model predicting y"
ENUMERATOR = re.compile(r"^(?:[a-h]|[ivx]{1,3}|\d)$")


def _is_model_word(tok: Token) -> bool:
    return tok.used in MODEL_STEPS or tok.used == "model kind"


def _heads() -> set[str]:
    return {h.rstrip("s") for h in L.HEAD_NOUNS}


# participles that name the data a step works on ("dedup the joined rows", "the missing readings")
OBJECT_PARTICIPLES = {"joined", "merged", "combined", "cleaned", "filtered", "loaded", "imported", "deduplicated",
                      "deduped", "normalized", "normalised", "sampled", "imputed", "scaled", "processed", "missing",
                      "stored", "saved", "collected", "recorded", "logged", "labelled", "labeled", "generated",
                      "existing", "remaining", "incoming", "outstanding", "pending", "trailing", "leading",
                      "training", "testing", "housing", "pricing", "billing", "shipping", "booking", "bookings",
                      "listing", "listings", "rating", "ratings", "reading", "readings", "marketing", "banking",
                      "parking", "clothing", "lending", "funding", "spending", "earnings", "savings", "holdings",
                      # what a chart or report shows ("one chart comparing them")
                      "comparing", "showing", "summarising", "summarizing", "covering", "including", "containing",
                      "describing"}


def objects(t: Text, action_ends: Iterable[tuple[str, int]]) -> None:
    """The few words right after an action's phrase: what the step works on (up to the clause's
    end: punctuation, a word another step used, or "and"/"then" before another step's phrase)."""
    action_ends = list(action_ends)
    entries = {e for e, _ in action_ends}
    starts = {lo for lo, _ in sentences(t)}
    for entry, end in action_ends:
        if entry not in DATA_OBJECT_STEPS:
            continue
        if entry == "load_data" and _embedded_file(t, end, starts):
            # "train a logistic model on x.csv balanced classes": the words are the model's, unread;
            # "... on a.csv alone": the file by itself
            m = t.match_at(r"(?:alone|only|by\s+itself|on\s+its\s+own)\b(?=\s*(?:[.,;:!?)]|$|\s+(?:and|then)\b))", end)
            if m is not None and not any(x.used for x in m[1]):
                t.mark(m[1], "load_data")
            continue
        run: list[Token] = []
        j = end
        while j < len(t.tokens) and len(run) < MAX_OBJECT:
            x = t.tokens[j]
            if x.kind == "punct" or (x.used and x.used not in ("filler", entry)):
                break
            if x.low in OBJECT_STOPS or (x.low in L.CLAUSE_WORDS and not x.used):
                break       # an object never runs across "and" / "then" into the next clause
            if x.low in L.FILLERS or x.used == entry:
                j += 1
                continue
            if not is_unknown(x) or x.low in L.UNSUPPORTED or x.low in L.TASK_NOUNS or x.low in L.CLAUSE_WORDS \
                    or x.low in L.UNMAPPED_VERBS:
                break
            run.append(x)
            j += 1
        nxt = t.tokens[j] if j < len(t.tokens) else None
        ends = nxt is None or nxt.kind == "punct" or (nxt.used and nxt.used not in ("", "filler")) or (
            nxt.low in ("and", "then") and _next_step_phrase(t, j + 1, entries))
        # "dedup rows ignoring case", "sample rows stratified", "plot price sorted": a participle
        # after the step says how it should run, which no parameter reads: never its object
        manner = [x for x in run if (x.low.endswith(("ing", "ed")) and x.low not in OBJECT_PARTICIPLES)
                  or x.low in ("forward", "forwards", "backward", "backwards", "fuzzy", "approximate", "exact")]
        if run and ends and not manner and not (len(run) == 1 and run[0].low.endswith("ly")):   # "dedup case-insensitively": a manner, no object
            said = [x.low for x in t.tokens[run[0].i:j]]
            if any(a in SPLIT_PART_WORDS and b in PART_NOUNS for a, b in zip(said, said[1:])):
                # "then normalize the training part only": a table step reads a whole table (it
                # scaled the table the split read, silently)
                raise PlanRefused([f"{t.span_text(t.tokens[run[0].i:j])!r}: {entry} reads a whole table, not a part of the split; "
                                   "say it before the split"])
            if run[0].i and t.tokens[run[0].i - 1].used == "group key":
                # "the average refund for each reason code": the key read was "reason", the column is
                # named by both words (grouped by "reason", silently)
                key = [x for x in t.tokens[max(0, run[0].i - 3):run[0].i] if x.used == "group key" and x.kind == "word"]
                raise PlanRefused([f"{t.span_text(key[-1:] + run)!r}: a group key is one column; name it as the file "
                                   "does (e.g. with an underscore)"])
            t.mark(run, f"object of {entry}")


SPLIT_PART_WORDS = {"train", "training", "test", "testing", "held-out", "holdout", "validation"}
PART_NOUNS = {"part", "portion", "partition", "half", "split", "set", "rows", "subset"}


def _embedded_file(t: Text, end: int, starts: set[int]) -> bool:
    """Whether the load ending at ``end`` is a file named inside another step's phrase ("on
    x.csv", "impute x.csv"): what follows it belongs to that step, not to the load."""
    path = next((j for j in range(end - 1, max(end - 3, 0), -1) if t.tokens[j].kind == "path"), None)
    if path is None or path < 1:
        return False
    prev = t.tokens[path - 1]
    if prev.used == "load_data" and (path - 1 in starts
                                     or (path >= 2 and t.tokens[path - 2].kind == "punct")):
        return False    # "Using people.csv as input, ...": the clause opens with the load
    return prev.low in ("on", "from", "in", "of", "at", "for", "using", "over", "with", "to") or (
        prev.used in CATALOG and prev.used != "load_data")


TRY_VERBS = {"try", "trying", "test", "testing", "compare", "comparing", "sweep", "sweeping", "explore"}


def tried_values(t: Text) -> None:
    """"Try k = 3, 5 and 7 for a knn", "try learning rates 0.01 and 0.1 with a logistic model": the
    verb and its preposition introduce the training's candidate values, read by its parameters."""
    for x in t.unused():
        if x.low not in TRY_VERBS:
            continue
        j = x.i + 1
        while j < len(t.tokens) and t.tokens[j].used and t.tokens[j].used not in CATALOG:
            j += 1
        values = t.tokens[x.i + 1:j]
        before = [y for y in t.tokens[max(0, x.i - 8):x.i] if y.kind != "punct"]
        if any(v.kind == "num" for v in values) and any(y.used in ("train_model", "model kind") for y in before) \
                and (j >= len(t.tokens) or t.tokens[j].kind == "punct" or t.tokens[j].low in ("and", "then")):
            t.mark([x], "train_model")    # "train a knn on x.csv trying k of 3, 5 and 9, ...": after the training
            continue
        if not any(v.kind == "num" for v in values) or j >= len(t.tokens) or t.tokens[j].used \
                or t.tokens[j].low not in ("for", "with", "on"):
            continue
        k = j + 1
        while k < len(t.tokens) and t.tokens[k].low in ("a", "an", "the") and not t.tokens[k].used:
            k += 1
        if k < len(t.tokens) and t.tokens[k].used in ("train_model", "model kind", "tune"):
            t.mark([x, t.tokens[j]], "train_model")


def _next_step_phrase(t: Text, i: int, entries: set[str]) -> bool:
    """Whether a step's phrase starts at token ``i`` ("then" skipped): "scale the numbers and
    export ...", where "and" closes the object of the step before."""
    while i < len(t.tokens) and t.tokens[i].low == "then":
        i += 1
    return i < len(t.tokens) and t.tokens[i].used in entries


# what the statistics report, named as a list in the statistics' sentence ("a summary of x.csv:
# row count, means, missing values")
REPORTED_STATS = {"mean", "means", "average", "averages", "median", "medians", "min", "mins", "max", "maxes",
                  "minimum", "minimums", "maximum", "maximums", "std", "stdev", "stds", "standard", "deviation",
                  "deviations", "count", "counts", "missing", "null", "nulls", "nan", "nans"}
REPORTED_AFTER = {"missing", "null", "nan", "row", "standard"}    # "missing values", "row count(s)", "standard deviations"


def reported(t: Text, action_ends: Iterable[tuple[str, int]]) -> None:
    """Words naming what the statistics report ("means", "medians", "missing values", "row
    counts"), left over in the sentence of a statistics step, are what it reports."""
    spans = sentences(t)
    for entry, end in action_ends:
        if entry != "stats":
            continue
        lo, hi = next(((a, b) for a, b in spans if a < end <= b), (0, 0))
        for x in t.tokens[lo:hi]:
            prev = t.tokens[x.i - 1].low if x.i else ""
            if is_free(x) and (x.low in REPORTED_STATS or (prev in REPORTED_AFTER
                                                         and x.low in ("values", "value", "count", "counts", "deviations"))):
                t.mark([x], "reported by stats")


# words that take a step back or leave something out (lexicon.NEGATIONS): read as glue, "dedup x.csv
# without normalizing it" planned the normalize it ruled out


def _negations(t: Text) -> None:
    """A negation no rule read (a construct's own, "finishes without errors", is read by its
    cue) is refused with the words it governs: the plan would run what was ruled out."""
    for x in t.tokens:
        if x.low in L.NEGATIONS and (not x.used or x.used.startswith("object of")):
            nxt = t.tokens[x.i + 1:x.i + 3]
            raise PlanRefused([f"{t.span_text([x, *nxt])!r}: a step ruled out, or a part left out, is not "
                               "something a plan can say; name only what should run"])


def targets(t: Text) -> None:
    """"fit a linear regression to predict finish times": what a model step is for, right after
    its phrase, is its target (the words after the verb are then described by it)."""
    for tok in t.tokens[1:-1]:
        verb = t.tokens[tok.i + 1]
        j = tok.i - 1   # "fit a linear regression on houses.csv to predict price": past the model's data
        while j > 1 and (t.tokens[j].used in SOURCE_WORDS or (t.tokens[j].low in ("the", "data", "table")
                                                               and t.tokens[j - 1].used in SOURCE_WORDS)):
            j -= 1
        prev = t.tokens[j]
        model_before = _is_model_word(prev) or (prev.low in MODEL_HEADS and j >= 1
                                                 and _is_model_word(t.tokens[j - 1]))
        if tok.low in ("that", "which") and not tok.used and not verb.used and model_before and \
                verb.low.endswith("s") and verb.low[:-1] in TARGET_VERBS:
            lead = [tok, verb]          # "a model that predicts churn"
        elif tok.low == "to" and not tok.used and not verb.used and verb.low in TARGET_VERBS and model_before:
            lead = [tok, verb]
        elif not tok.used and tok.low in TARGET_PARTICIPLES and model_before:
            lead, verb = [tok], tok     # "fit a linear model predicting temperature"
        else:
            continue
        what = []
        for x in t.tokens[verb.i + 1:verb.i + 1 + MAX_OBJECT]:
            if x.used or x.kind == "punct" or x.low in L.CLAUSE_WORDS or is_method(x) or x.low in L.UNMAPPED_VERBS:
                break
            what.append(x)
        if what:
            t.mark([*lead, *what], "purpose")


OUTPUT_NOUNS = {"report", "plot", "chart", "graph", "histogram", "notification"}   # what a step makes, by name
COUNTED_STEPS = {"loads", "reads", "branches", "subsamples", "lanes", "tracks", "jobs", "tasks"}   # "two loads": the steps named next


# "the Wi-Fi drops out", "nothing drops off either side", "the share drops connections": a drop
# that happens to something, no removal asked for
DROPS = {"drops", "dropped", "dropping"}


def _said_of_a_thing(t: Text, x: Token) -> bool:
    nxt = t.tokens[x.i + 1] if x.i + 1 < len(t.tokens) else None
    return x.low in DROPS and nxt is not None and nxt.low in L.DROPPED_WHAT


def _noun_modifier(t: Text, x: Token) -> bool:
    """"Beehive weight logs": a word that is also an operation, between a free descriptive word
    and a head noun, describes the data ("then filter logs" asks for a filter)."""
    prev = t.tokens[x.i - 1] if x.i else None
    nxt = t.tokens[x.i + 1] if x.i + 1 < len(t.tokens) else None
    return prev is not None and nxt is not None and is_unknown(prev) and prev.low not in L.CLAUSE_WORDS \
        and prev.low not in L.UNMAPPED_VERBS and nxt.low in L.HEAD_NOUNS


def goal(t: Text, ends: list[tuple[str, int]]) -> None:
    """"Predict ride wait times from queues.csv: dedupe -> ... -> linear": a request that opens
    with what its model is for, closed by a colon, names its subject when a step trains a
    model (its file is the load's)."""
    lead = 2 if len(t.tokens) > 2 and t.tokens[0].low in ("can", "could", "would") and \
        t.tokens[1].low in ("you", "we", "i", "u") else 0      # "Can you predict lamp failures from x.csv? ..."
    if len(t.tokens) <= lead or t.tokens[lead].low not in TARGET_VERBS or not any(e in MODEL_STEPS for e, _ in ends):
        return
    words = []
    for tok in t.tokens[lead + 1:lead + MAX_LEAD_IN + 2]:
        if tok.kind == "punct" and tok.text == (":" if not lead else "?"):
            if words and asks_nothing(words):
                t.mark([*t.tokens[:lead + 1], *[x for x in words if is_free(x)]], "purpose")
            return
        if tok.kind not in ("word", "path") or (tok.used and tok.used not in SOURCE_WORDS):
            return
        words.append(tok)


def _counted_noun(t: Text, i: int) -> bool:
    """Whether a plural noun ("logs", "ticket logs") follows at token i, within three words."""
    for x in t.tokens[i:i + 3]:
        if x.kind != "word" or x.low.endswith("est"):    # "the 10 biggest stores" picks, it counts nothing
            return False
        if len(x.low) > 3 and x.low.endswith("s") and not x.low.endswith("ss"):
            return True
    return False


def base_references(t: Text) -> None:
    """"The resulting checkpoint serves as the base on which adapters x and y are fine-tuned": the
    checkpoint just made, as the fine-tuning's base (which the plan's order already gives it)."""
    for _, toks in t.finditer(r"\b(?:the|that|this)\s+(?:resulting\s+|pretrained\s+|finished\s+|new\s+)?(?:checkpoint|model)\s+"
                              r"(?:serves|acts|is\s+used|will\s+serve|will\s+act|will\s+be\s+used)\s+as\s+the\s+base\s+(?:on|for|from)\s+which\b",
                              0, len(t.tokens), free_only=True):
        t.mark(toks, "reference")


def references(t: Text) -> None:
    """Number words that refer back ("the two tables", "all three samples", "the better of
    the two") and list enumerators ("(a)", "(b)")."""
    for tok in t.tokens:
        if tok.used or tok.kind not in ("num", "word"):
            continue
        prev = t.tokens[tok.i - 1] if tok.i else None
        nxt = t.tokens[tok.i + 1] if tok.i + 1 < len(t.tokens) else None
        # "the two tables", "each of the 3 ticket logs": a count of what is named next
        # ("only the 2024 rows" restricts to a year: never a count of tables)
        if tok.kind == "num" and prev is not None and prev.low in ("the", "these", "those", "all", "both", "of") and (
                tok.text.isalpha() or (tok.text.isdigit() and prev.low == "the" and _counted_noun(t, tok.i + 1)
                                       and not is_year(tok))):
            t.mark([tok], "reference")
        elif prev is not None and prev.text == "(" and nxt is not None and nxt.text == ")" \
                and ENUMERATOR.match(tok.low):
            t.mark([prev, tok, nxt], "enumerator")
        elif tok.kind == "num" and tok.text.isalpha() and nxt is not None and nxt.low in COUNTED_STEPS and not nxt.used:
            t.mark([tok, nxt], "count")     # "kick off two loads in tandem", "two parallel branches"
        elif tok.kind == "num" and tok.text.isalpha() and nxt is not None and nxt.low == "parallel" and tok.i + 2 < len(t.tokens) \
                and t.tokens[tok.i + 2].low in COUNTED_STEPS and not t.tokens[tok.i + 2].used:
            t.mark([tok, t.tokens[tok.i + 2]], "count")
    # "a single report covering all three wards": what the report reads, named by a count
    for _, toks in t.finditer(r"(?<=report\s)(?:covering|spanning|on|across)\s+(?:(?:all|both|each\s+of)\s+(?:the\s+)?(?:NUM\d+\s+)?|the\s+NUM\d+\s+)[a-z][\w-]*",
                              0, len(t.tokens)):
        if all(not x.used or x.used == "reference" for x in toks):
            t.mark([x for x in toks if not x.used], "reference")
    # "fine-tune ... on that base", "on top of the chosen base": the model an earlier step made
    for _, toks in t.finditer(r"\b(?:on|onto|over|from)\s+(?:top\s+of\s+)?(?:that|this|the\s+(?:chosen|selected|winning|best|better|resulting))"
                              r"\s+(?:base|bases|base\s+model|checkpoint)\b", 0, len(t.tokens), free_only=True):
        t.mark(toks, "reference")


# verbs that keep, leave or pass over rows: left over, they ask for a step no rule made
KEEP_VERBS = {"keep", "keeps", "keeping", "retain", "retains", "retaining", "leave", "leaves", "leaving",
              "ignore", "ignores", "ignoring", "omit", "omits", "omitting", "skip", "skips", "skipping"}


# verbs that open a request no catalog step makes as said ("Check x.csv for missing values")
ASKING_VERBS = {"check", "inspect", "examine", "verify", "validate", "audit", "scan", "review", "analyze", "analyse",
                "explore", "investigate", "assess", "evaluate", "profile", "look", "study", "test", "compare",
                "count", "list", "find", "identify", "detect", "flag", "measure", "quantify", "tally"}   # "Count duplicates in x.csv"


# verbs that ask for nothing of their own before a file ("Prepare churn.csv by cleaning and normalizing it")
GENERIC_VERBS = {"prepare", "prep", "preprocess", "process", "handle"}


def describes(t: Text, run: list[Token]) -> bool:
    """Words right before a head noun, a file or a named value, or after 'to predict/detect',
    describe the data or the model; they need no step."""
    if len(run) > MAX_DESCRIPTION or any(x.low in L.UNSUPPORTED or x.low in L.CLAUSE_WORDS
                                         or x.low in L.UNMAPPED_VERBS or x.low in KEEP_VERBS for x in run):
        return False    # "keep rows with missing values out": a verb no rule took never describes
    if any(x.low in L.COLUMN_STATS for x in run):
        return False    # "I need the max price from x.csv": a statistic asked for, never a description
    if any(x.low in HOW_WORDS for x in run):
        return False    # "plot it (cumulative)": how a step should run, never a description
    if len(run) == 1 and run[0].low in FAULT_NOUNS:
        return False    # "we have duplicates in x.csv": a fault of the data, which may ask for a cleaning
    if run[-1].low in ("column", "columns") and run[0].i and t.tokens[run[0].i - 1].low in ("on", "by", "the") \
            and any(e in DATA_OBJECT_STEPS for e in (x.used for x in t.tokens[max(0, run[0].i - 6):run[0].i])):
        return False    # "dedup x.csv on the email column": a column the step was said to use, no rule read
    heads = _heads()
    before = t.tokens[run[0].i - 1] if run[0].i else None
    after = t.tokens[run[-1].i + 1:run[-1].i + 3]
    if before is not None and before.low in ("each", "every", "per") and len(after) == 2 \
            and after[0].low in ("in", "of", "from") and after[1].kind == "path":
        return False    # "for each region in x.csv, compute ...": a grouping no rule read
    if before is not None and before.text in ARROWS:
        return False    # "x.csv → unique rows only → ...": what follows an arrow is a step no rule read
    if run[-1].low in OUTPUT_NOUNS and (not after or after[0].kind == "punct" or after[0].low in L.CLAUSE_WORDS):
        return False    # "; report after (a) and (b) are both finished": a step's noun closing its clause asks for it
    if run[0].low in ASKING_VERBS and (before is None or before.kind == "punct"):
        return False    # "Check x.csv for missing values": a request no step makes, not a description
    if before is not None and before.low in ("with", "using", "via") and not before.used:
        return False    # "a knn with distance weighting on x.csv": an option no rule read, not the data
    if before is not None and (before.low in ("by", "per") or (
            before.low in ("and", "or", "&", ",") and before.i and "key" in t.tokens[before.i - 1].used)):
        return False    # "the average price by city and (by) area from x.csv": a key no rule read
    j = run[-1].i + 1
    if j < len(t.tokens) and t.tokens[j].low in ("the", "a", "an"):
        return False    # "frobnicate the rows": words before an article act on what follows, never describe it
    while j < len(t.tokens) and t.tokens[j].text == "(":
        j += 1      # "Satellite scene metadata (scenes.parquet, ...)"
    nxt = t.tokens[j] if j < len(t.tokens) else None
    if any(x.low in L.TASK_NOUNS for x in run):   # "the sentiment model", never "sentiment analysis on x.csv"
        return nxt is not None and nxt.low.rstrip("s") in heads
    if nxt is not None and nxt.kind == "path" and nxt.i == run[-1].i + 1 and run[0].low not in GENERIC_VERBS and (
            before is None or (before.kind == "punct" and before.text not in ("(", "'", '"')) or before.low in ("and", "then", "so", "also", "please")):
        return False    # "Deseasonalize x.csv and ...": a word that opens a clause and acts on a file, no description
    rows = run[-1].low in ROW_NOUNS or (nxt is not None and nxt.low in ROW_NOUNS)
    if rows and before is not None and before.low == "the" \
            and before.i and t.tokens[before.i - 1].low in ("on", "for", "from", "in", "over", "across", "to", "with"):
        return False    # "if the accuracy is above 0.9 on the weekend rows": some of the rows, which no step picks
    if nxt is not None and (nxt.low.rstrip("s") in heads or nxt.kind == "path"):
        return True
    if nxt is not None and nxt.i == run[-1].i + 1 and run[-1].low in BUSINESS_NOUNS and nxt.used in CATALOG:
        return True     # "Toy shop recommender → ...": whose the step's thing is
    if nxt is not None and nxt.low in ("in", "from", "at", "on") and j + 1 < len(t.tokens) and \
            t.tokens[j + 1].kind == "path":
        return True
    prev = t.tokens[run[0].i - 1] if run[0].i else None
    if prev is not None and prev.low in ("predict", "predicting", "detect", "detecting", "classify",
                                         "classifying", "estimate", "identify", "flag", "spot"):
        prev.used = prev.used or "purpose"
        return True
    return run[-1].low.rstrip("s") in heads


def _wanting_to_know(t: Text) -> None:
    """"We need to know how many orders per customer_id ...", "I'd like to see the totals": what the
    writer wants, said before the words of the step that answers it (the verb is glue)."""
    for x in t.unused():
        if x.low in ("know", "see", "find") and x.i >= 2 and t.tokens[x.i - 1].low == "to" \
                and t.tokens[x.i - 2].low in ("want", "need", "like", "love", "wanted", "needed") \
                and x.i + 1 < len(t.tokens) and t.tokens[x.i + 1].used and t.tokens[x.i + 1].used in CATALOG:
            t.mark([x], "request")


def _instead(t: Text) -> None:
    """"if the rmse is above 10, train a knn instead": 'instead' says the conditional step
    replaces what came before; the condition carries that (a step reading "the final model"
    after it is refused by the planner), so the word is the condition's."""
    for tok in t.unused():
        if tok.low != "instead":
            continue
        lo, hi = next((a, b) for a, b in sentences(t) if a <= tok.i < b)
        if any(x.used in ("condition", "otherwise", "exit") for x in t.tokens[lo:hi]):   # ("If it falls below that, send x instead")
            t.mark([tok], "condition")


ANSWERING_STEPS = {"aggregate", "stats"}   # steps whose result is the figure a "what is ...?" asks for
WHAT_GLUE = {"'s", "is", "are", "was", "were", "the", "its", "their", "s"}


def _answered(t: Text, what: Token) -> bool:
    """"What's the average price by city in x.csv?": the words asked about are a step's that
    computes them (the question words are then glue)."""
    j = what.i + 1
    while j < len(t.tokens) and t.tokens[j].low in WHAT_GLUE and not t.tokens[j].used:
        j += 1
    if j < len(t.tokens) and t.tokens[j].used in ANSWERING_STEPS:
        t.mark([y for y in t.tokens[what.i:j] if not y.used], "question")
        return True
    return False


# a step named by its noun in an ordering lead-in: "Before training, normalize x.csv; then fit ..."
NAMED_STEPS = {"training": L.TRAINING_STEPS, "fitting": ("train_model",), "modelling": ("train_model",),
               "modeling": ("train_model",), "splitting": ("split_data",), "evaluation": ("evaluate_model",),
               "evaluating": ("evaluate_model",), "scoring": ("evaluate_model",), "plotting": ("plot",),
               "deployment": ("deploy_model",), "deploying": ("deploy_model",), "export": ("export_model",),
               "exporting": ("export_model",), "pretraining": ("edit_pretrain",), "fine-tuning": ("mlora_finetune",)}


def _named_neighbours(t: Text, ends: list[tuple[str, int]]) -> None:
    """"Before training, normalize x.csv; then fit a knn": a lead-in that names, by its noun, a
    step the request says later ("after": earlier) only says the order the words already give."""
    for x in t.tokens[:-2]:
        if x.low not in ("before", "after") or x.used or (x.i and t.tokens[x.i - 1].kind != "punct"):
            continue
        j = x.i + 1 + (t.tokens[x.i + 1].low == "the")
        noun = t.tokens[j] if j < len(t.tokens) else None
        if noun is None or noun.used or noun.low not in NAMED_STEPS or j + 1 >= len(t.tokens) \
                or t.tokens[j + 1].text != ",":
            continue
        kinds = NAMED_STEPS[noun.low]
        if any(e in kinds and (end > j if x.low == "before" else end <= x.i) for e, end in ends):
            t.mark(t.tokens[x.i:j + 1], "order")


def but_only(t: Text) -> None:
    """"Load a.csv but only trust the last 5,000 rows": "but" before "only" and the step that
    keeps those rows joins the steps, as "and" would."""
    for x in t.unused():
        if x.low == "but" and x.i + 2 < len(t.tokens) and t.tokens[x.i + 1].low in ("only", "just") \
                and t.tokens[x.i + 2].used == "sample":
            t.mark([x], "sequence")


def account(t: Text, action_ends: Iterable[tuple[str, int]], picked: bool = False) -> None:
    """Raise PlanRefused quoting every span no rule accounts for. ``picked``: a step of the plan
    keeps the best of several results (a selection or a search), which 'the best one' may name."""
    # ("append one to the other": a stack of two tables, in the order named)
    ordinal = re.search(r"(?<!waits\s)(?<!wait\s)(?<!depends\s)(?<!depend\s)(?<!relies\s)(?<!\bone\s)\b(?:on|with|using|against|from|to|into)\s+the\s+(?:first|second|third|former|latter|"
                        r"other)(?:\s+one)?\b(?!\s+(?:NUM|PCT)\d+)", t.masked)
    # "dedup the first one and normalize the second": a table named by its place, as a pronoun
    ordinal = ordinal or re.search(r"\bthe\s+(?:first|second|third|former|latter)(?:\s+(?:one|table|file|dataset))?"
                                   r"(?=\s*(?:[,;.!?)]|$|\s+(?:and|then|but|before|after|with|by|on|using)\b))", t.masked)
    if ordinal:  # "train on the first and evaluate on the second": which is which is a guess
        raise PlanRefused([f"cannot tell which step {ordinal.group(0)!r} refers to"])
    # ("a nearest centroid classifier for diagnosis": the column a catalog model learns, named like a task)
    column_learned = any(y.used == "model kind" for y in t.tokens)
    unsupported = [x for x in t.tokens if not x.used.startswith("name:") and x.used not in ("edit_pretrain", "model kind")   # "a GPT from scratch", "a 5-NN"
                   and not (x.used == "target" and column_learned) and x.used != "group key"    # ("count orders per segment": a column)
                   and (is_method(x) or method_near(t, x)) and not names_business(t, x)
                   and not names_thing(t, x)]   # ("because the cluster is spotty": the machines)
    if unsupported:
        raise PlanRefused([f"no catalog step does {t.span_text(r)!r}" for r in t.runs(unsupported)])
    ends = list(action_ends)
    # "write them to a.csv and b.csv": a second destination read as a table to load (the first
    # table was written to a.csv, and b.csv loaded and written there, silently)
    second = [x for x in t.tokens[2:] if x.kind == "path" and x.used == "path"
              and t.tokens[x.i - 1].low in ("and", ",", "&", "or") and t.tokens[x.i - 2].used == "output file"]
    if second:
        raise PlanRefused([f"{t.span_text(t.tokens[x.i - 2:x.i + 1])!r}: a step writes one file; say each "
                           "write with its own file" for x in second])
    owned = [x for x in t.tokens[1:] if x.low == "'s" and not x.used and t.tokens[x.i - 1].kind == "path"]
    if owned:   # "plot houses.csv's price" plotted the first numeric column (the words read as the file's)
        raise PlanRefused([f"{t.span_text(t.tokens[x.i - 1:x.i + 2])!r}: name a file's column as 'the "
                           f"{t.tokens[min(x.i + 1, len(t.tokens) - 1)].text} column of {t.tokens[x.i - 1].text}'"
                           for x in owned])
    subset = [] if picked else unselected_subset(t)
    if subset:
        raise PlanRefused([f"no step picks {q!r}: the step would act on all of them" for q in subset])
    columns = column_subset(t)
    if columns:
        raise PlanRefused([f"no step keeps to {q!r}: the steps use every numeric column" for q in columns])
    targets(t)
    reasons(t)
    reason_clauses(t)
    flaky_storage(t)      # ("a share that drops out now and then": no removal asked for; after the reasons, which own "b/c ...")
    retry_notes(t)
    channels(t, ends)
    but_only(t)
    load_participles(t)
    plain_notes(t)
    notes(t)
    notes_inside_file_lists(t)
    leading_reasons(t)
    kept_rows(t)
    size_reasons(t)
    _named_neighbours(t, ends)
    goal(t, ends)
    predict_purposes(t, ends)
    understanding_goals(t, ends)
    wanted_purposes(t, ends)
    table_goals(t, ends)
    join_reasons(t, ends)
    question_purposes(t, ends)
    tried_values(t)
    file_descriptions(t)
    row_notes(t)
    context_sentences(t)
    fault_statements(t)
    data_clauses(t)
    introductions(t)
    greeted_introductions(t)
    sender_introductions(t)
    settings_opening(t)
    heading_sentence(t)
    courtesies(t)
    lead_ins(t)      # a title may hold a task noun or a word that is also a verb ("Crop yield regression:")
    headings(t)
    title_clauses(t)
    base_references(t)
    verbs = [x for x in t.unused() if x.low in L.UNMAPPED_VERBS and not _noun_modifier(t, x) and not names_data(t, x)
             and not names_thing(t, x) and not _said_of_a_thing(t, x)]
    if verbs:
        raise PlanRefused([f"no catalog step does {t.span_text(r)!r}" for r in t.runs(verbs)])
    # "report how many columns each has": a question no step answers, never glue or a description
    asked = [t.tokens[x.i:x.i + 3] for x in t.unused()
             if x.low == "how" and x.i + 1 < len(t.tokens) and t.tokens[x.i + 1].low in ("many", "much")]
    # "what is the mean temperature in x.csv?", "which rows have missing values?": a question
    # the words of no step answered (loading the file would be all the plan did); "which base
    # is better?" is answered by a step that keeps the best. Only a question word that opens the
    # question: "load x.csv, which has duplicates, and drop them?", "drop what is duplicated?"
    if not picked and not any(e in COMPARING_STEPS for e, _ in ends):
        asked += [t.tokens[x.i:min(x.i + 4, hi)] for lo, hi in sentences(t) if t.tokens[hi - 1].text == "?"
                  for x in t.unused() if lo <= x.i < hi and x.low in ("what", "which")
                  and all(y.low in QUESTION_OPENERS for y in t.tokens[lo:x.i]) and not _answered(t, x)]
    if asked:
        raise PlanRefused([f"no step answers {t.span_text(q)!r}" for q in asked])
    # "drop duplicates and give me stats before and after": one step on two tables, which a
    # step (reading one) cannot be; the words are glue alone, so the plan would drop one
    both = [t.tokens[x.i:x.i + 3] for x in t.unused() if x.low == "before" and x.i + 2 < len(t.tokens)
            and t.tokens[x.i + 1].low in ("and", "&", "/") and t.tokens[x.i + 2].low == "after"]
    if both:
        raise PlanRefused([f"{t.span_text(b)!r}: a step reads one table; say the step once for each (\"compute "
                           "stats, drop duplicates, then compute stats again\")" for b in both])
    if any(e in COMPARING_STEPS for e, _ in ends):   # "compare A and B ... keep the best"
        t.mark([x for x in t.unused() if x.low in COMPARE_WORDS], "compared by a step")
    objects(t, ends)
    _negations(t)
    reported(t, ends)
    opening_purposes(t)
    purposes(t)
    preamble(t)
    origins(t)
    references(t)
    _wanting_to_know(t)
    _instead(t)
    left = [x for x in t.unused() if x.kind != "punct" and x.low not in L.FILLERS]
    bad = [x for x in left if x.kind != "word"]
    unknown = [x for x in left if x not in bad]
    for run in t.runs(unknown):
        if describes(t, run):
            t.mark(run, "description")
        else:
            bad += run
    if bad:
        quoted = [t.span_text(r) for r in t.runs(bad)]
        raise PlanRefused([f"no step or parameter for {q!r}" for q in quoted])
    # "then the statistics please": statistics named with no step computing them were dropped
    # silently (the word is glue only when it refers to a statistics step of the plan)
    asked_stats = [x for x in t.unused() if x.low in ("stats", "statistics")]
    if asked_stats and not any(e == "stats" for e, _ in ends):
        raise PlanRefused([f"no step computes {t.span_text(r)!r}: say 'compute the statistics'" for r in t.runs(asked_stats)])
    tasks = [x for x in t.tokens if x.low in L.TASK_NOUNS and not x.used.startswith("name:")]
    if tasks and not any(e in MODEL_STEPS for e, _ in ends):
        # a task named as the subject ("Sentiment analysis: ...") needs a model that does it
        raise PlanRefused([f"no catalog step does {t.span_text(r)!r}" for r in t.runs(tasks)])
