"""Steps re-read in the light of their place in the request, once every sentence's phrases are
found (before any parameter is read):

- a step word inside the request's title names its subject ("Cyber alert triage:" is no
  notify), when it is a noun of the title's topic head or the body asks for that step again;
- "the data is stored in trips.parquet" as the first step says where the input is: a load, since
  nothing before it made anything to write;
- a load with no file of its own right after a load that named one ("We keep the records in
  cargo.parquet. Load them ...") or after saved adapters refers back to it: one step;
- "evaluate the saved adapters in ./a" loads the adapters, then evaluates them as adapters ("serve
  the adapters in ./a as chat-v2": serves them, named);
- "on the training part", "on the train split" in a training's or an evaluation's phrase is the
  part of the split it reads, not a new split or unaccounted words;
- "hold out 20% for evaluation, ..., and evaluate it": the held-out share's evaluation is the one
  asked for later;
- a step spelled out by what it does, or its cleaning by the cleaning it is ("clean loans.csv
  (drop rows with nulls in price)", "clean it by imputing the median", "train a model on x.csv
  by fitting a knn with k=3", "deduplicate x.csv to remove duplicate rows"): one step, with the
  words of both phrases (a cleaning that dropped every row missing anything, a second model
  trained, silently);
- once every step's phrase is found (``grouped_first``, ``pick_first``, ``retrained_parts``): a
  statistic asked "for each region in x.csv" first is that group's aggregate; "deploy whichever
  has the higher f1 as x" runs the pick first; "retrain it with 6 workers" after a part's run is
  that part again;
- a step's method named with the step's own noun ("join it with b.csv using a left join",
  "normalize x.csv with min-max", "impute x.csv using mean imputation", "split x.csv using an
  80/20 split"): one step, its words read together (each made a second step, silently).
"""

from __future__ import annotations

import re
from typing import Any

from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.arrange import held_out_for
from raystack.workflow.nl.extract import TABLE_EXT
from raystack.workflow.nl.extract_groups import AGG_WORDS
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.scene import title_span
from raystack.workflow.nl.text import Text, sentences
from raystack.workflow.nl.triggers import MODEL_KIND

# "evaluate / serve the saved adapters in ./a": the adapters' own steps, after their load
ADAPTER_ACTS = {"evaluate_model": "evaluate_adapters", "deploy_model": "serve_adapters"}
SAVED_SOURCES = ("load_checkpoint", "load_adapters")   # "load them" after one names its load
STATE_PARTICIPLES = {"stored", "saved", "kept", "held"}    # "the data is stored in x.parquet" says where it is
# steps whose word in a title is a noun modifying its head ("Cyber alert triage", "Churn report
# model"); an operation in a title ("Dedup report:") is still asked for unless the body asks again
TITLE_NOUN_STEPS = ("notify", "save_report", "plot", "stats")
# "train a knn on the training part and evaluate it on the test part": the parts of a split, by
# the step that reads each
SPLIT_ROLES = {"train_model": {"train", "training"},
               "evaluate_model": {"test", "testing", "held-out", "holdout", "validation", "eval", "evaluation",
                                  "remaining", "other"}}
SPLIT_PART = (r"\b(?:on|using|with|against|over)\s+(?:the|its)\s+(?:train|training|test|testing|held-out|holdout|"
              r"validation|eval|evaluation|remaining|other)\s+(?:part|portion|partition|half|subset|share|rows|data)\b")
BARE_PART = (r"\b(?:on|against|using)\s+(?:(?:train|training|test|testing|held-out|holdout)\b(?=\s*(?:[.,;:!?]|$|\s+(?:and|then)\b))"
             r"|the\s+(?:remainder|rest)\b(?:\s+of\s+(?:it|the\s+data))?)")     # "hold out 25% and train on the remainder"
POSSESSIVES = {"the", "our", "my", "those", "these", "its", "their"}
# the data steps whose method may be named with the step's own noun after "with" / "using"
METHOD_NAMED_STEPS = ("normalize", "impute", "dedup", "join", "split_data", "aggregate", "clean_data", "sample", "concat")
METHOD_PREPOSITIONS = {"with", "using", "via", "through", "by"}
# what says the next phrase spells out the step before ("clean it (drop ...)", "clean it by dropping
# ...", "deduplicate x.csv to remove duplicate rows")
RESTATING = {"(", ":", "-", "—", "–", "by", "namely", "i.e.", "ie", "to"}
RESTATED_OBJECT = {"it", "the", "data", "dataset", "table", "up", "them", "a", "model", "first"}
# steps a second phrase of the same kind can spell out; and what a generic cleaning can be spelled out as
SPELLED_STEPS = ("clean_data", "dedup", "impute", "normalize", "train_model", "aggregate", "join", "split_data",
                 "sample", "plot", "stats", "concat")
CLEANINGS = ("clean_data", "impute", "dedup")


def _rename(t: Text, a: Any, entry: str) -> None:
    t.relabel(t.tokens[a.lo:a.trig_end], a.entry, entry)
    a.entry = entry


def _values_tried_in_a_search(t: Text, actions: list) -> list:
    """"tune a knn for y, trying k of 5, 9 and 15 across 8 trials": the values a search tries,
    said after a comma, are its space, not a training of their own."""
    out: list = []
    for a in actions:
        # the search just said: the last step, or the one before the model it names ("tune a knn for y")
        tail = out[-2:] if len(out) > 1 and out[-1].entry == "train_model" and out[-1].sentence == out[-2].sentence else out[-1:]
        prev = tail[0] if tail and tail[0].entry == "tune" else None
        if a.entry == "train_model" and prev is not None and prev.sentence == a.sentence \
                and t.tokens[a.lo].low in ("try", "tries", "trying") and a.lo > 0 and t.tokens[a.lo - 1].text == "," \
                and not any(x.kind == "path" for x in t.tokens[prev.trig_end:a.lo]):
            t.relabel(t.tokens[a.lo:a.trig_end], "train_model")
            continue
        out.append(a)
    return out


def reread(t: Text, actions: list) -> list:
    """``actions`` (the planner's, in text order) after the re-readings above."""
    title = title_span(t)
    if title is not None:
        end, headed = title
        inside = [a for a in actions if a.trig_end <= end and (
            (headed and a.entry in TITLE_NOUN_STEPS) or any(b.entry == a.entry and b.lo >= end for b in actions))]
        for entry in {a.entry for a in inside}:
            t.relabel(t.tokens[:end], entry)
        actions = [a for a in actions if a not in inside]
    if not actions:
        return actions
    first = actions[0]
    words = t.tokens[first.lo:first.trig_end]
    if first.entry in ("write_table", "save_report") and any(x.low in STATE_PARTICIPLES for x in words) \
            and any(x.kind == "path" and x.low.endswith(TABLE_EXT) for x in words):
        _rename(t, first, "load_data")
        first.has_file = True
    actions = [a for k, a in enumerate(actions) if not (
        a.entry == "load_data" and not a.has_file and k and (actions[k - 1].entry in SAVED_SOURCES or (
            actions[k - 1].entry == "load_data" and actions[k - 1].has_file)))]
    actions = _step_named_again(t, _model_named_after(t, _method_named_again(t, _spelled_out(t, actions))))
    actions = _values_tried_in_a_search(t, actions)
    for k in range(len(actions) - 1):
        a, b = actions[k], actions[k + 1]
        if a.entry in ADAPTER_ACTS and b.entry == "load_adapters" and a.sentence == b.sentence and all(
                x.low in POSSESSIVES for x in t.tokens[a.trig_end:b.lo]):
            _rename(t, a, ADAPTER_ACTS[a.entry])
            actions[k], actions[k + 1] = b, a
            # the words after the load's ("... in ./a on exact match") are the evaluation's
            if any(x.kind != "punct" and x.low not in ("and", "then") for x in t.tokens[b.trig_end:b.hi]):
                a.hi, b.hi = max(a.hi, b.hi), b.trig_end
        elif a.entry in ("deploy_model", "export_model") and b.entry == "select_best" and a.sentence == b.sentence \
                and b.lo in (a.lo + 1, a.trig_end):
            # "deploy the most accurate one as delay-knn", "export the most accurate one to ./m": the
            # pick is the step's object, made first (the step ran once per model, the pick after);
            # the words after it ("as delay-knn") are the step's, those the pick reads first its own
            # ("whichever has the higher f1")
            actions[k], actions[k + 1] = b, a
            a.hi = max(a.hi, b.hi)
    return actions


def evaluation_held_out_for(t: Text, actions: list) -> list:
    """"hold out 20% for evaluation, train a knn, and evaluate it": the evaluation the share
    is held out for, before any model, is the one asked for later (with none later, it
    evaluates the model trained next: ``arrange.held_out_evaluation``)."""
    out = list(actions)
    for k, a in enumerate(actions):
        if held_out_for(t, actions, k) and any(b.entry == "evaluate_model" for b in actions[k + 1:]):
            t.mark(t.tokens[a.lo - 1:a.trig_end], "split purpose")
            out.remove(a)
    return out

def part_of_split(t: Text, i: int, before: list) -> bool:
    """Whether token ``i`` ends "on the training part" / "on the test portion" said of the step
    just before it in its sentence, in that step's role: the training reads a split's train
    part, the evaluation its test part (a training "on the test part" would train on what it
    is scored on: its words stay unaccounted, a refusal). Marks the words a reference."""
    if i < 3 or not before:
        return False
    prep, art, role = t.tokens[i - 3:i]
    if prep.low not in ("on", "using", "with", "against", "over") or art.low not in ("the", "its") \
            or any(x.used for x in (prep, art, role)):
        return False
    step = before[-1]
    if step.entry not in SPLIT_ROLES or role.low not in SPLIT_ROLES[step.entry] \
            or not step.lo <= i - 3 < step.hi:      # its preposition inside the step's own phrase
        return False
    t.mark([art, role, t.tokens[i]], "reference")
    step.hi = max(step.hi, i + 1)
    return True


def split_parts(t: Text, actions: list) -> None:
    """"train a knn on the training part and evaluate it on the test part": each part named in
    the phrase of the step that reads it is a reference (``part_of_split``)."""
    for _, part in t.finditer(SPLIT_PART, 0, len(t.tokens), free_only=True):
        part_of_split(t, part[-1].i, [b for b in actions if b.lo < part[0].i])
    # "split it into train and test, fit a model on train and evaluate on test": the part's
    # bare name, after a split, at the end of the phrase of the step that reads it in its role
    for _, part in t.finditer(BARE_PART, 0, len(t.tokens), free_only=True):
        before = [b for b in actions if b.lo < part[0].i]
        step = before[-1] if before else None
        if step is None or not any(b.entry == "split_data" for b in before[:-1]) or step.entry not in SPLIT_ROLES \
                or (part[1].low not in SPLIT_ROLES[step.entry] and part[1].low != "the") or not step.lo <= part[0].i < step.hi:
            continue
        t.mark(part, "reference")


def _last_step(out: list) -> Any:
    """The last action kept that is no load (a file named between two phrases of a step)."""
    return next((b for b in reversed(out) if b.entry != "load_data"), None)


def _spelled_out(t: Text, actions: list) -> list:
    """Merge a step with the next phrase that spells it out (see the module's list): the same
    kind of step takes the words of both; a cleaning spelled out as another cleaning is that one."""
    out: list = []
    for a in actions:
        prev = _last_step(out)
        if prev is not None and prev.sentence == a.sentence and (
                (a.entry == prev.entry and a.entry in SPELLED_STEPS) or (prev.entry == "clean_data" and a.entry in CLEANINGS)):
            between = [x for x in t.tokens[prev.trig_end:a.lo] if not any(
                c.entry == "load_data" and c.lo <= x.i < c.trig_end for c in actions)]
            if any(x.low in RESTATING for x in between) and all(
                    x.low in RESTATING or x.low in RESTATED_OBJECT for x in between):
                t.mark([x for x in between if x.kind != "punct" and not x.used], a.entry)
                if a.entry == prev.entry:
                    prev.hi = max(prev.hi, a.hi)
                else:
                    out[out.index(prev)] = a
                continue
        out.append(a)
    return out


# what joins a training to the model kind said after it ("train a model on x.csv using logistic
# regression", "Train the model on x.csv. Use logistic regression ...", "... It should be a knn")
MODEL_LINKS = {"using", "with", "via", "as", "use", "it", "should", "be", "must", "is", "a", "an", "the", "make", "pick",
               "choose", "go", "for", "please", "and", "."}
MODEL_KIND_RX = re.compile(MODEL_KIND)


def _model_named_after(t: Text, actions: list) -> list:
    """A training that names no model, then the model kind alone ("train a model on x.csv using
    logistic regression with lr 0.05", "Train the model on x.csv. Use a knn."): one training of
    that kind (the kind's phrase was a second training, silently)."""
    out: list = []
    for a in actions:
        prev = _last_step(out)
        if prev is not None and a.entry == prev.entry == "train_model" and a.verbless and not prev.verbless \
                and a.sentence - prev.sentence in (0, 1) and a.found.map is None and prev.found.map is None \
                and not MODEL_KIND_RX.search(" ".join(x.low for x in t.tokens[prev.lo:prev.trig_end])):
            between = [x for x in t.tokens[prev.trig_end:a.lo] if not any(
                c.entry == "load_data" and c.lo <= x.i < c.trig_end for c in actions)]
            if between and all(x.low in MODEL_LINKS or x.used for x in between) \
                    and any(x.low in ("using", "with", "via", "as", "use", "be") for x in between):
                t.mark([x for x in between if not x.used and x.kind != "punct"], "train_model")
                prev.hi = max(prev.hi, a.hi)
                continue
        out.append(a)
    return out


def _step_named_again(t: Text, actions: list) -> list:
    """A step said again by its noun after "before" / "after" ("impute x.csv, then plot income
    after imputation"): after it, the words only order the steps (one step); before it, they
    name the table the step was given, which only the order of the steps can say: refused
    (read as a second step, the table was imputed twice and plotted imputed, silently)."""
    out: list = []
    for a in actions:
        word = t.tokens[a.lo]
        prev = t.tokens[a.lo - 1] if a.lo else None
        if prev is not None and prev.low in ("before", "after") and a.trig_end - a.lo == 1 \
                and word.low.endswith(("ion", "ing")) and any(b.entry == a.entry for b in out):
            if prev.low == "before":
                raise PlanRefused([f"{t.span_text([prev, word])!r}: a step reads the table the steps before it "
                                   "made; to use the table from before a step, say that step first"])
            t.mark([prev, word], "order")
            continue
        out.append(a)
    return out


def _method_named_again(t: Text, actions: list) -> list:
    """Drop a data step's second phrase that names its method after "with" / "using" (see the
    module's list); the first takes the words up to where the second's ended (the dropped
    phrase's own words stay the step's, read by its extractor)."""
    out: list = []
    for a in actions:
        prev = _last_step(out)
        if prev is not None and a.entry == prev.entry and a.entry in METHOD_NAMED_STEPS and a.sentence == prev.sentence:
            lead = t.tokens[max(prev.trig_end, a.lo - 4):a.lo]
            k = max((n for n, x in enumerate(lead) if x.low in METHOD_PREPOSITIONS and not x.used), default=None)
            if k is not None and all(x.kind != "punct" and not x.used for x in lead[k:]):
                prev.hi = max(prev.hi, a.hi)
                continue
        out.append(a)
    return out


# the steps whose name a pick after them ("whichever ...") is written by
NAMING_STEPS = ("deploy_model", "export_model", "serve_adapters")


def grouped_first(t: Text, actions: list) -> None:
    """"For each region in sales.csv, compute the average revenue": a statistic asked for each
    group said first is that group's aggregate (read as the whole table's statistics, the
    grouping was lost)."""
    for a in actions:
        if a.entry != "stats" or not any(x.low in AGG_WORDS for x in t.tokens[a.lo:a.trig_end]):
            continue
        lo = next(s for s, e in sentences(t) if s <= a.lo < e)
        m = t.match_at(r"(?:for\s+(?:each|every)|per)\s+[a-z_][a-z0-9_]*\s+(?:(?:in|of|from)\s+FILE\d+\s*)?,", lo, a.lo)
        if m is not None and all(x.used in ("", "load_data", "path") or x.kind == "punct" for x in m[1]):
            t.relabel(t.tokens[a.lo:a.trig_end], "stats", "aggregate")
            a.entry, a.zlo = "aggregate", lo

def pick_first(t: Text, actions: list) -> None:
    """"deploy whichever has the higher f1 as credit-best": the pick named as the object of a
    step that names what it writes runs first, and that step reads the name after it (the
    step ran once per candidate, before the pick)."""
    for k in range(len(actions) - 1):
        a, b = actions[k], actions[k + 1]
        if a.entry in NAMING_STEPS and b.entry == "select_best" and b.sentence == a.sentence \
                and b.lo == a.trig_end and t.tokens[b.lo].low == "whichever":
            actions[k], actions[k + 1] = b, a
            a.hi = max(a.hi, b.hi)

def retraining(t: Text, a) -> bool:
    """Whether a training's phrase says it again ("retrain", "refit", "train it again")."""
    return bool(re.match(r"re-?(?:train|fit)", t.tokens[a.lo].low) or t.match_at(L.TRAIN_AGAIN, a.lo, a.trig_end))


# a run that goes on from where another stopped: no catalog step does that (each run starts
# from its model's first weights)
CONTINUED = re.compile(r"\b(?:another|more|further|additional|extra)\s+(?:NUM\d+\s+)?(?:steps|epochs|rounds)\b"
                       r"|\bcontinu\w*|\bresum\w*|\bkeep\s+(?:pre)?training\b|\bpick\s+up\s+where\b")


def _part_again(t: Text, actions: list, k: int):
    """"pretrain tiny-20m ...; if the loss is above 3.5, pretrain it for 1,000 steps": the run
    named again by "it" is that run once more (its model kept; read apart, it pretrained the
    default model); "for another 1,000 steps" would go on from its weights, which no step
    does: refused. Returns the first run, or None."""
    a = actions[k]
    run = next((b for b in reversed(actions[:k]) if b.entry == a.entry), None)
    said_it = t.match_at(r"(?:it|that|the\s+(?:same\s+)?model|that\s+model)\b", a.trig_end, min(len(t.tokens), a.trig_end + 3))
    if run is None or said_it is None:
        return None
    if next(t.finditer(CONTINUED, a.lo, a.hi), None) is not None:
        raise PlanRefused([f"{t.span_text(t.tokens[a.lo:a.hi])!r}: a run that goes on from another's weights is no "
                           "step the catalog has (each run starts afresh); say the steps of one run in all"])
    return run


def retrained_parts(t: Text, actions: list) -> list[tuple]:
    """"train the DLRM on data/criteo; if AUC is under 0.7, retrain it with 6 workers": a
    retraining after a part's run is that part run again (read as a small classifier, it
    needed a split no step makes). Returns (retraining, first run) pairs."""
    out = []
    for k, a in enumerate(actions):
        if a.entry in L.PART_STEPS and a.entry != "train_model":
            again = _part_again(t, actions, k)
            if again is not None:
                out.append((a, again))
            continue
        if a.entry != "train_model" or not retraining(t, a):
            continue
        run = next((b for b in reversed(actions[:k]) if b.entry in L.TRAINING_STEPS), None)
        if run is not None and run.entry in L.PART_STEPS:
            t.relabel(t.tokens[a.lo:a.trig_end], "train_model", run.entry)
            a.entry = run.entry
            out.append((a, run))
    return out
