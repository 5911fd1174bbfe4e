"""References to what an earlier step made, said with a step's words: "the normalized data"
after a normalize step is that step's table, "the same split" that split, "evaluate the knn
model" after a knn was trained is that model. Each is marked a reference (no new step), so
a plan does not normalize twice or train a second model that a later step then reads."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.extract import EXTRACTORS, Found
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.reread import CLEANINGS, part_of_split, retraining, split_parts
from raystack.workflow.nl.text import Text

if TYPE_CHECKING:
    from raystack.workflow.nl.rules import Action

# a transform's participle, said of the table it made ("the normalized data", "the clean table")
TRANSFORMED = {"normalize": re.compile(r"normali[sz]ed|standardi[sz]ed|scaled|rescaled|z-scored"),
               "clean_data": re.compile(r"clean|cleaned|cleansed|scrubbed"),
               "dedup": re.compile(r"deduplicated|de-duplicated|deduped|de-duped"),
               "impute": re.compile(r"imputed|filled")}
TABLE_NOUNS = {"data", "dataset", "table", "rows", "version", "copy", "features", "values", "file", "frame"}
MODEL_TAKERS = {"evaluate_model", "deploy_model", "export_model", "select_best", "save_report", "plot"}
REFERENCE_WORDS = {"the", "that", "this", "our", "trained", "fitted", "resulting", "final"}


def table_participle(t: Text, i: int, entry: str) -> bool:
    """Whether token i is ``entry``'s participle said of a table ("cleaned table",
    "normalized data") or of one of its columns ("the normalized price column")."""
    return bool(TRANSFORMED[entry].fullmatch(t.tokens[i].low)) and i + 1 < len(t.tokens) \
        and (t.tokens[i + 1].low in TABLE_NOUNS
             or (i + 2 < len(t.tokens) and t.tokens[i + 1].kind == "word" and t.tokens[i + 2].low == "column"))


def transform_references(t: Text, actions: list[Action]) -> list[Action]:
    """"normalize x.csv, then train a model on the normalized data": "the normalized data"
    after a normalize step is that step's table, not a second normalization (it read as
    one, which normalized the table twice); with no such step before ("on normalized
    x.csv") it is the step. "the same split" after a split is that split."""
    out: list[Action] = []
    for a in actions:
        toks = t.tokens[a.lo:a.trig_end]
        if (a.entry == "split_data" and any(b.entry == a.entry for b in out) and a.lo > 0
                and toks[0].low == "split" and t.tokens[a.lo - 1].low in ("same", "that", "this")):
            t.mark(toks, "reference")    # "train a knn on the same split": the split made before
            continue
        if a.entry == "split_data" and [x.low for x in toks] == ["split"] and part_of_split(t, a.lo, out):
            continue     # "fit a knn on the train split": the part of the split the training reads
        if a.entry == "aggregate" and any(b.entry == "aggregate" for b in out) and a.lo > 0 \
                and t.tokens[a.lo - 1].low in ("the", "this", "that") and toks[0].low in ("aggregate", "aggregates", "aggregated") \
                and (len(toks) == 1 or (toks[0].low == "aggregated" and toks[-1].low in TABLE_NOUNS)):
            t.mark(toks, "reference")    # "aggregate it by city; train a knn on the aggregate": that table
            continue
        participle = a.entry in TRANSFORMED and table_participle(t, a.lo, a.entry)
        # "impute ..., dedup and describe the cleaned table": the table the cleaning steps made
        reference = (participle and any(b.entry == a.entry or (a.entry == "clean_data" and b.entry in CLEANINGS)
                                        for b in out) and a.lo > 0
                     and t.tokens[a.lo - 1].low in ("the", "this", "that"))
        if participle and out and out[-1].entry == "plot" and out[-1].sentence == a.sentence and (
                reference or all(x.low in ("the", "its") for x in t.tokens[out[-1].trig_end:a.lo])):
            out[-1].hi = max(out[-1].hi, a.hi)   # "plot the normalized price column": its column is the plot's
        if reference:
            t.mark(toks, "reference")    # the table made before: no new step
            continue
        out.append(a)
    split_parts(t, out)
    return out


def _inherit(into: Found, said: Found) -> None:
    """The settings ``said`` of one training that ``into`` (the same training, said again) does not
    set itself."""
    for key, value in said.params.items():
        into.params.setdefault(key, value)
    for key, value in said.stated.items():
        into.stated.setdefault(key, value)


def models_named_first(t: Text, actions: list[Action]) -> list[Action]:
    """"for each of logistic, knn and centroid, train and evaluate a model": the models listed
    before a training verb that names none are that training's models (read apart, the
    list was one training and the verb a second one, of the default model, which the
    evaluation and the pick then read)."""
    out: list[Action] = []
    for a in actions:
        prev = out[-1] if out else None
        if (prev is not None and prev.verbless and a.entry == prev.entry == "train_model" and not a.verbless
                and a.sentence == prev.sentence and a.found.map is None and "model" not in a.found.params
                and (prev.found.map is not None or "model" in prev.found.params)
                and all(x.kind == "punct" or x.used or x.low in ("and", "then") for x in t.tokens[prev.trig_end:a.lo])):
            a.found.map = prev.found.map
            _inherit(a.found, prev.found)
            a.lo, a.zlo = prev.lo, min(prev.zlo, a.zlo)
            out[-1] = a
            continue
        out.append(a)
    return out


# glue between a training and the model it is said to use: "a classifier predicting churn with logistic regression"
MODEL_AFTER_GLUE = {"with", "using", "via", "by", "as", "a", "an", "the", "through", "on", "it", "them"}
# ("Build me a model that predicts price from h.csv — linear regression, 20% test": the kind after a dash)
MODEL_AFTER_DASHES = {"—", "–", "--", ":"}


def models_named_after(t: Text, actions: list[Action]) -> list[Action]:
    """"build a classifier predicting churn with logistic regression": the model named after a
    training that names none is that training's model; read apart, it was a second training (of
    the default model, beside the logistic one: silently wrong)."""
    out: list[Action] = []
    for a in actions:
        # (past the load its phrase names: "Train a model for y on x.csv: a knn with k=5")
        prev = next((b for b in reversed(out) if b.entry != "load_data"), None)
        if (prev is not None and a.verbless and a.entry == prev.entry == "train_model" and not prev.verbless
                and a.sentence == prev.sentence and "model" not in prev.found.params and prev.found.map is None
                and ("model" in a.found.params or a.found.map is not None)
                and all(x.kind == "punct" and x.text != "," or x.used not in ("", "sequence") or x.low in MODEL_AFTER_GLUE
                        for x in t.tokens[prev.trig_end:a.lo])
                and any(x.low in MODEL_AFTER_GLUE or x.text in MODEL_AFTER_DASHES for x in t.tokens[prev.trig_end:a.lo])):
            _inherit(prev.found, a.found)
            prev.found.map = a.found.map
            prev.hi = max(prev.hi, a.hi)
            continue
        out.append(a)
    return out


# what a writer says before the model they want: "I want a logistic regression for sold_in_week: ..."
ANNOUNCING = {"want", "wants", "need", "needs", "like", "after"}
# a training said by its verb and a pronoun, or its verb alone, the model named before it: "..., then
# train it", "and train 3 epochs a round"
PRONOUN_TRAINING = re.compile(r"(?:train|fit)(?:\s+(?:it|them))?$")


def _announces(t: Text, a: Action) -> bool:
    """A training named before it is asked for: without a verb ("So a k nearest neighbours
    classifier, nine neighbours, for made_podium."), or as what the writer wants or needs."""
    return a.verbless or any(x.low in ANNOUNCING for x in t.tokens[max(0, a.lo - 4):a.lo])


# settings a training's words give that a part's run takes too
SHARED_SETTINGS = ("epochs", "steps")


def _fold_into_part(t: Text, a: Action, run: Action) -> None:
    """"The elastic DLRM job-match should train 1 epoch each iteration": the training verb is
    the part's run named before it; its settings and bound are that run's."""
    t.relabel(t.tokens[a.lo:a.trig_end], "train_model", run.entry)
    ex = EXTRACTORS.get(run.entry)
    if ex is not None:
        with t.claiming(run.entry):
            ex(t, a.trig_end, a.hi, run.found)
    for key in SHARED_SETTINGS:
        if key in a.found.params:
            run.found.params.setdefault(key, a.found.params[key])
    if run.found.bound is None:
        run.found.bound = a.found.bound


def announced_models(t: Text, actions: list[Action]) -> list[Action]:
    """"I want a logistic regression for sold_in_week: normalise it, split 70/30, and train it",
    "We need a days_to_sale regression built from l.parquet: ..., and try a linear model": the
    model named first is the one the later training verb trains, where that verb stands (after
    the steps that prepare its data). Read apart, they were two trainings, the first before its
    data was prepared (silently wrong), or the verb's words were left unread. A training said
    as "train it" with no model before it, or after that model was used, is refused."""
    out: list[Action] = []
    for a in actions:
        if a.entry != "train_model" or a.verbless or retraining(t, a) \
                or t.match_at(r"(?:again|once\s+more|a\s+second\s+time)\b", a.trig_end, min(len(t.tokens), a.trig_end + 3)):
            out.append(a)       # ("train it again": a second run, reread.retrained_parts)
            continue
        pronoun = PRONOUN_TRAINING.match(t.span_text(t.tokens[a.lo:a.trig_end]).lower()) is not None
        j = next((j for j in range(len(out) - 1, -1, -1) if out[j].entry in L.TRAINING_STEPS), None)
        if pronoun and j is not None and out[j].entry in L.PART_STEPS and not any(b.entry in MODEL_TAKERS for b in out[j + 1:]):
            _fold_into_part(t, a, out[j])     # "billboard-ctr, it's an elastic DLRM model. Train it in rounds ..."
            continue
        k = next((j for j in range(len(out) - 1, -1, -1) if out[j].entry in ("train_model", "tune")), None)
        prev = out[k] if k is not None and out[k].entry == "train_model" else None
        said = t.span_text(t.tokens[a.lo:a.trig_end])
        if pronoun and prev is None:
            raise PlanRefused([f"{said!r}: no model is named before it to train; name the model (\"train a logistic "
                               "regression\")"])
        if pronoun and any(b.entry in MODEL_TAKERS for b in out[k + 1:]):
            raise PlanRefused([f"{said!r} after the model was used: say 'train it again' for a second run, or name "
                               "the model"])
        if prev is None or not (pronoun or _announces(t, prev)):
            out.append(a)
            continue
        before, own = prev.found.params.get("model"), a.found.params.get("model")
        if (before and own and before != own) or (prev.found.map is not None and a.found.map is not None):
            out.append(a)        # two models named: two trainings
            continue
        _inherit(a.found, prev.found)
        if a.found.map is None:
            a.found.map = prev.found.map
        out.remove(prev)
        out.append(a)
    return out


def model_references(t: Text, actions: list[Action]) -> list[Action]:
    """"train a knn on x.csv, evaluate the knn model, and export it": a model named as the
    object of a step that takes a model, after that model was trained, is the trained one;
    read as a new training step it made a second model, which the export then wrote (a
    silently wrong plan). Among several models trained side by side ("deploy the knn" after
    a knn and a centroid) it would be a pick no step makes: refused."""
    out: list[Action] = []
    for k, a in enumerate(actions):
        prev = actions[k - 1] if k else None
        if not (a.entry == "train_model" and a.verbless and prev is not None and prev.entry in MODEL_TAKERS
                and prev.sentence == a.sentence
                and all(x.low in REFERENCE_WORDS for x in t.tokens[prev.trig_end:a.lo])):
            out.append(a)
            continue
        trained = [b for b in out if b.entry == "train_model"]
        if not trained:
            out.append(a)
            continue
        kind, last = a.found.params.get("model"), trained[-1]
        if last.found.map is not None and last.found.map[0] == "model":
            if kind in last.found.map[1]:
                raise PlanRefused([f"no step picks {t.span_text(t.tokens[a.lo:a.trig_end])!r} of the "
                                   f"{len(last.found.map[1])} models trained: the step would take all of them"])
            out.append(a)
        elif kind is None or kind == last.found.params.get("model"):
            # the model trained before: no new step. The words after it ("... as iris-knn")
            # are the taking step's, read again for it (the dropped training had read them)
            for x in t.tokens[a.lo:a.hi]:
                x.used = ""
            t.mark(t.tokens[a.lo:a.trig_end], "reference")
            ex = EXTRACTORS.get(prev.entry)
            if ex is not None:
                with t.claiming(prev.entry):
                    ex(t, a.trig_end, a.hi, prev.found)
            prev.hi = max(prev.hi, a.hi)
        elif any(b.found.params.get("model") == kind for b in trained):
            raise PlanRefused([f"{t.span_text(t.tokens[a.lo:a.trig_end])!r} names a model trained before the "
                               f"last one ({last.found.params.get('model')}), which the step would read: "
                               "name it right after its training"])
        else:
            out.append(a)
    return out


# a step said by its noun after a word of time, once that step is in the plan: "after the plot,
# write the table", "once the export is done, notify me". No new step: the text's order already
# runs what follows after it
STEP_NOUNS = {"plot": {"plot", "chart", "graph", "figure"}, "export_model": {"export"},
              "write_table": {"write", "export"}, "train_model": {"training", "fit"},
              "evaluate_model": {"evaluation", "eval"}, "save_report": {"report"}, "join": {"join"},
              "stats": {"stats", "statistics"}, "deploy_model": {"deployment", "deploy"},
              "tune": {"search", "tuning", "sweep"}}
ORDER_WORDS = {"after", "once", "when", "following"}
DONE = re.compile(r"(?:is|has|'s)\s+(?:done|finished|complete|completed|written|saved|ready|over)|(?:finishes|completes|ends)")


def _order_phrase(t: Text, k: int) -> list | None:
    """The tokens of "after the <noun> (is done)" whose noun is token k, or None when the two
    words before it are no word of time and determiner."""
    if k < 2 or t.tokens[k - 1].low not in ("the", "that", "this") or t.tokens[k - 2].low not in ORDER_WORDS:
        return None
    done = t.match_at(DONE, k + 1, min(len(t.tokens), k + 4))
    return t.tokens[k - 2:k + 1] + (done[1] if done else [])


# a step said in the passive after a word of time ("send 'x' once it is deployed"): that step, done
DONE_PARTICIPLES = {"plotted": "plot", "charted": "plot", "graphed": "plot", "deployed": "deploy_model",
                    "exported": "export_model", "written": "write_table", "saved": "write_table", "trained": "train_model",
                    "evaluated": "evaluate_model", "served": "serve_adapters", "fine-tuned": "mlora_finetune",
                    "pretrained": "edit_pretrain", "loaded": "load_data", "cleaned": "clean_data", "deduplicated": "dedup"}


def _done_phrase(t: Text, a: Action) -> list | None:
    """The tokens of "once it is deployed" / "when they have been plotted" ending at action ``a``'s
    one-word trigger, or None."""
    k = a.lo
    if a.trig_end != k + 1 or DONE_PARTICIPLES.get(t.tokens[k].low) != a.entry:
        return None
    j = k - 1
    if j >= 0 and t.tokens[j].low == "been":
        j -= 1
    if j < 0 or t.tokens[j].low not in ("is", "are", "'s", "has", "have", "was", "were"):
        return None
    j -= 1
    if j < 1 or t.tokens[j].low not in ("it", "they", "that", "this", "everything", "all") or t.tokens[j - 1].low not in ORDER_WORDS:
        return None
    return t.tokens[j - 1:k + 1]


def order_references(t: Text, actions: list[Action]) -> list[Action]:
    """"then plot price; after the plot, write the table": "the plot" after a word of time is
    the plot already planned; read as a step it drew a second plot, which the write then
    followed (silently wrong). So is "send 'x' once it is deployed" (it deployed twice)."""
    out: list[Action] = []
    for a in actions:
        done = _done_phrase(t, a) if any(b.entry == a.entry for b in out) else None
        if done:
            t.mark(done, "reference")
            continue
        said = (_order_phrase(t, a.lo) if a.trig_end == a.lo + 1 and t.tokens[a.lo].low in STEP_NOUNS.get(a.entry, ())
                and any(b.entry == a.entry for b in out) else None)
        # (only the reference: "after the chart, plot quantity" is one plot, said after a chart)
        if said and all(x.kind == "punct" for x in t.tokens[said[-1].i + 1:a.hi]):
            t.mark(said, "reference")
            continue
        out.append(a)
    free_order_references(t, out)
    return out


def free_order_references(t: Text, actions: list[Action]) -> None:
    """"Once the export is done, notify me": the same said where no step's words claimed the
    noun, of a step the plan has before it."""
    for k, x in enumerate(t.tokens):
        kinds = {e for e, nouns in STEP_NOUNS.items() if x.low in nouns}
        if not kinds or x.used or not any(a.entry in kinds and a.trig_end <= k for a in actions):
            continue
        said = _order_phrase(t, k)
        if said and not any(y.used for y in said[:2]):
            _refuse_reordering(t, actions, k, kinds, said)
            t.mark(said, "reference")


# steps that change no table or model: said after "the <step>", where they run matters little
PASS_THROUGH = {"write_table", "plot", "save_report", "notify", "export_model", "deploy_model", "serve_adapters",
                "cleanup", "stats"}


def _refuse_reordering(t: Text, actions: list[Action], k: int, kinds: set[str], said: list) -> None:
    """"join them, count per region and write it; dedupe after the join": the step said after
    "the join" runs where it is said, reading what the steps after the join made (the counts),
    not right after the join (silently wrong); with a write between them, the file holds the
    duplicates. Refused unless only a notification or a clean-up stands between them, or the
    step changes no table or model."""
    cur = next((a for a in actions if a.lo <= k < a.hi), None)
    if cur is None or cur.entry in PASS_THROUGH:
        return
    at = actions.index(cur)
    ref = next((j for j in range(at - 1, -1, -1) if actions[j].entry in kinds), None)
    if ref is None:
        return
    between = [a for a in actions[ref + 1:at] if a.entry not in ("notify", "cleanup")]
    if between:
        raise PlanRefused([f"{t.span_text(said)!r}: the step would run after {between[-1].entry}, not right after "
                           f"the {t.tokens[k].text}; say the steps in the order they run"])


# an earlier one of several models, said by its place: "export the first one", "the first model"
FIRST_ONE = re.compile(r"\b(?:the\s+)?(?:first|earlier|earliest|original|previous|older|initial)\s+"
                       r"(?:one|model|run|training|version|fit)\b")


def first_of_several(t: Text, actions: list[Action]) -> None:
    """"train a knn ..., then train it again ..., and export the first one": the step that takes
    a model reads the last one trained; an earlier one said by its place is a pick no step
    makes (it exported the second model, silently). Refused."""
    trained = 0
    for a in actions:
        if a.entry == "train_model":
            trained += 1
        elif a.entry in MODEL_TAKERS and trained >= 2:
            m = FIRST_ONE.search(t.span_text(t.tokens[a.lo:a.hi]).lower())
            if m:
                raise PlanRefused([f"{m.group(0)!r}: a step takes the last model trained before it; name the one "
                                   "to take right after its training, or pick one by a metric"])
