"""Steps said in another order than they run, put in the order they run: a step in an "after" /
"once" clause after its main clause ("plot the totals from s.csv after dropping duplicates"), a
main clause after a fronted "before" clause, a table transform said to come "first" (or rows said
to be ignored) after the steps that read the table, the one split of a request said after its
trainings, and a load said after the steps that read it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from raystack.workflow.catalog import CATALOG, SPLIT, TABLE
from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.text import Text

if TYPE_CHECKING:
    from raystack.workflow.nl.rules import Action

SOURCES = ("load_data", "make_dataset", "load_checkpoint", "load_adapters")   # read data, change nothing
# words between "after"/"once" and the step its clause names ("once it is evaluated")
SUBORDINATE_SKIP = {"the", "a", "an", "it", "they", "its", "their", "has", "have", "is", "are", "been",
                    "being", "was", "were", "all", "data", "model"}
# punctuation inside one clause ("logistic w/ lr = 0.01, 0.03 on x.csv after ...")
IN_CLAUSE_PUNCT = {",", "=", "/", "(", ")"}
# words that join steps of one clause ("after cleaning + a split")
COORDINATORS = {"+", "&", "and", "a", "an", "the", "plus"}
# steps that prepare the data a model step uses: what an "after" clause names
PREPARING_STEPS = {"load_data", "make_dataset", "clean_data", "dedup", "impute", "normalize", "sample",
                   "split_data", "join", "concat", "aggregate"}


def subordinate(t: Text, actions: list[Action]) -> None:
    """A step in a clause opened by "after" / "once" that follows its main clause ("fit a
    model after the bad rows have been removed", "deploy it once it is evaluated") runs
    before the main clause's step."""
    for i in range(1, len(actions)):
        a = actions[i]
        j = a.lo - 1
        while j > 0 and t.tokens[j].low in SUBORDINATE_SKIP and not t.tokens[j].used:
            j -= 1
        if t.tokens[j].low not in ("after", "once") or t.tokens[j].used:
            continue
        main = [k for k in range(i) if actions[k].sentence == a.sentence and actions[k].lo < j   # "score x.csv with a
                and (not actions[k].prepositional or actions[k].entry not in SOURCES)       # knn after normalizing"
                and actions[k].step.exit is None]
        if not main or any(x.kind == "punct" and x.text not in IN_CLAUSE_PUNCT for x in t.tokens[actions[main[-1]].lo:j]):
            continue
        t.tokens[j].used = "order"
        chain = [a]     # "after cleaning + a 75/25 split": the clause's coordinated steps move with it
        for b in actions[i + 1:]:
            gap = [x for x in t.tokens[chain[-1].trig_end:b.lo] if x.used != chain[-1].entry]
            if b.sentence != a.sentence or b.entry not in PREPARING_STEPS or b.lo < chain[-1].trig_end \
                    or any(x.low not in COORDINATORS for x in gap):
                break
            chain.append(b)
        # ("plot the total sales per region from s.csv after dropping duplicates", "a chart of the median
        # delay by courier, using x.parquet after removing ..."): the main clause's steps said in one
        # phrase (no comma between) all run after the clause's, not only its last
        at = main[-1]
        for k in reversed(main[:-1]):
            if any(x.kind == "punct" and x.text not in ("=", "/") for x in t.tokens[actions[k].lo:actions[at].lo]) \
                    or actions[k].entry in SOURCES:
                break
            at = k
        while actions[at].entry in SOURCES and at < main[-1]:
            at += 1
        for k, c in enumerate(chain):
            actions.remove(c)
            actions.insert(at + k, c)


def fronted_before(t: Text, actions: list[Action]) -> None:
    """"Before training a knn on x.csv, normalize the features": a sentence opened by a
    "before" clause runs its main clause (after the comma) first; the files the clause reads
    stay ahead of both."""
    for j, tok in enumerate(t.tokens):
        if tok.low != "before" or tok.used or (j and t.tokens[j - 1].text not in (".", ";", "!", ":")):
            continue
        comma = next((k for k in range(j + 1, len(t.tokens)) if t.tokens[k].text in (",", ".", ";")), None)
        if comma is None or t.tokens[comma].text != ",":
            continue
        sentence = next((a.sentence for a in actions if a.lo > j), None)
        clause = [a for a in actions if a.sentence == sentence and j < a.lo < comma and a.entry not in SOURCES]
        main = [a for a in actions if a.sentence == sentence and a.lo > comma]
        if not clause or not main:
            continue
        tok.used = "order"
        _run_before(actions, main, clause[0])


def _run_before(actions: list[Action], moved: list[Action], anchor: Action) -> None:
    """Reorder ``actions`` in place: ``moved``, in their order, right before ``anchor``."""
    for a in moved:
        actions.remove(a)
    at = actions.index(anchor)
    actions[at:at] = moved


def search_named_before(t: Text, actions: list[Action]) -> None:
    """"Could you tune a linear model for y on x.parquet? Before the sweep: dedupe, median-fill the
    gaps, 20% holdout.": a sentence opened by "before the sweep", the search said before named
    again (``search.search_said_again`` marks it), runs its steps ahead of that search."""
    for j, tok in enumerate(t.tokens):
        if tok.low != "before" or tok.used != "order" or j + 2 >= len(t.tokens) or t.tokens[j + 2].used != "tune":
            continue
        tuned = next((a for a in reversed(actions) if a.lo < j and a.step is not None and a.step.tune is not None), None)
        sentence = next((a.sentence for a in actions if a.lo > j), None)
        moved = [a for a in actions if a.sentence == sentence and a.lo > j and a.entry not in SOURCES]
        if tuned is not None and moved:
            _run_before(actions, moved, tuned)


def before_that(t: Text, actions: list[Action]) -> None:
    """"Please tune a linear regression for y on t.parquet, ... Before that, min-max scale x only, and
    split 75/25.": a sentence opened by "before that" runs its steps ahead of the steps of the
    sentence before it (the files that sentence reads stay first)."""
    for j, tok in enumerate(t.tokens[:-2]):
        if tok.low != "before" or tok.used or t.tokens[j + 1].low not in ("that", "this", "then") \
                or (j and t.tokens[j - 1].text not in (".", ";", "!", ":")) or t.tokens[j + 2].text not in (",", ":"):
            continue
        sentence = next((a.sentence for a in actions if a.lo > j), None)
        moved = [a for a in actions if a.sentence == sentence and a.lo > j and a.entry not in SOURCES]
        earlier = [a for a in actions if a.lo < j and a.entry not in SOURCES]
        if sentence is None or not moved or not earlier:
            continue
        t.mark(t.tokens[j:j + 3], "order")
        _run_before(actions, moved, next(a for a in earlier if a.sentence == earlier[-1].sentence))


IGNORE_VERBS = {"ignore", "disregard", "exclude", "skip"}   # rows said to be left out of the whole analysis


def done_first(t: Text, actions: list[Action]) -> None:
    """"Train a model on x.csv. Make sure the data is deduplicated first", "train ..., but first
    remove rows with nulls": a table transform said to come first, written after the steps that
    use the table, runs before them (right after the table is made)."""
    for a in list(actions):
        if a.entry not in L.TABLE_TRANSFORMS:
            continue
        first = next((k for k in range(a.lo + 1, a.hi) if t.tokens[k].low in ("first", "beforehand")
                      and not (k + 1 < len(t.tokens) and t.tokens[k + 1].kind in ("num", "pct"))), None)   # "the first 100 rows"
        if first is None and a.lo >= 2 and t.tokens[a.lo - 1].low == "first" and t.tokens[a.lo - 2].low == "but":
            first = a.lo - 1
        # ("What's the mean basket per store? Ignore rows where store_id is blank."): rows to ignore, said
        # in a sentence of their own after the steps, are ignored by them all
        ignored = first is None and t.tokens[a.lo].low in IGNORE_VERBS and (a.lo == 0 or t.tokens[a.lo - 1].text in ".!?") \
            and not any(b.sentence == a.sentence for b in actions if b is not a)
        if first is None and not ignored:
            continue
        i = actions.index(a)
        users = [b for b in actions[:i] if b.entry not in SOURCES and not b.prepositional]
        if not users:
            continue
        if ignored:
            actions.remove(a)
            actions.insert(actions.index(users[0]), a)
            continue
        t.tokens[first].used = "order"
        if first and t.tokens[first - 1].low == "but":
            t.tokens[first - 1].used = "order"
        if a.lo and t.tokens[a.lo - 1].low == "but" and not t.tokens[a.lo - 1].used:
            t.tokens[a.lo - 1].used = "order"    # "train a knn on x.csv, but normalize the data first"
        actions.remove(a)
        actions.insert(actions.index(users[0]), a)


# steps that use a model, or pick one, between a training and the split said after it
MODEL_USES = ("train_model", "evaluate_model", "select_best", "plot", "save_report", "write_table", "export_model",
              "deploy_model", "notify")


def split_said_after(actions: list[Action]) -> None:
    """"Train a logistic regression on credit.csv ... Evaluate on a 20% holdout.", "Could you
    compare a kNN and a logistic regression on loans.csv? Use a 25% test split": the one split
    of a request, said after the trainings that need it (no split before them, nothing but
    models used between), is the split they train on: it runs before the first of them."""
    splits = [a for a in actions if a.entry == "split_data"]
    if len(splits) != 1:
        return
    split = splits[0]
    i = actions.index(split)
    trains = [k for k, a in enumerate(actions[:i]) if a.entry == "train_model"]
    if not trains or split.has_file or split.step.map is not None or split.step.when is not None \
            or any(a.entry not in MODEL_USES and a.entry not in SOURCES for a in actions[trains[0]:i]):
        return
    actions.remove(split)
    actions.insert(trains[0], split)


def source_said_after(actions: list[Action]) -> None:
    """"What's the total area by city? Use x.csv.", "Compute stats; the data is in x.csv": a
    table load said in a sentence of its own after the steps that read a table, when nothing
    before it makes one (no load, no generated data), is what they read: it runs first. A load
    that shares its sentence with a step, or comes after another source, stays where it is."""
    for i, a in enumerate(actions):
        if a.entry != "load_data" or not i or any(b.sentence == a.sentence for b in actions if b is not a):
            continue
        before = actions[:i]
        if any(b.entry in SOURCES for b in before):
            return
        needs = {k for spec in CATALOG[before[0].entry].inputs.values() for k in spec.rstrip("*").split("|")}
        if not needs & {TABLE, SPLIT}:
            return
        actions.insert(0, actions.pop(i))
        return
