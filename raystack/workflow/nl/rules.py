"""The offline rule planner: plain English to a draft, every word accounted for.

1. :func:`raystack.workflow.nl.safety.screen` refuses destructive requests outright.
2. Per sentence, construct cues are found first (exit handlers, conditions and their else
   branch, loops with their bound, retries, "in parallel"), then *actions*: phrases that name a
   catalog step ("drop duplicate rows", "fit a knn classifier", "pretrain an LLM with EDiT").
   Each action owns the words up to the next action or cue; its extractor reads parameters
   there (:mod:`raystack.workflow.nl.extract`).
3. Words no rule used must be fillers, or describe the data or model right before a head noun
   ("the telecom churn data", "a fraud classifier"). Anything else makes the plan a refusal
   that quotes the words: a guess is worse than an honest refusal.
4. The draft goes to :func:`raystack.workflow.nl.build.build` (wiring, checks, the IR).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from raystack.workflow.catalog import CATALOG
from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.accounting import account
from raystack.workflow.nl.arrange import SOURCES, arrange
from raystack.workflow.nl.build import build
from raystack.workflow.nl.corrections import corrected
from raystack.workflow.nl.cues import Cue, read_cues, unbounded
from raystack.workflow.nl.destinations import destinations, json_tables
from raystack.workflow.nl.dictation import spelled_paths
from raystack.workflow.nl.extract import EXTRACTORS, TABLE_EXT, Found, metric_of, resource_bound
from raystack.workflow.nl.extract_groups import AGG_WORDS, AGGREGATES_SAID
from raystack.workflow.nl.names import adapter_names
from raystack.workflow.nl.phrases import (coordinated, is_eval_verb, is_figure, names_existing_split, part_data, second_side,
                                         split_across_files, table_result)
from raystack.workflow.nl.plan import Draft, DraftStep, Plan, PlanRefused
from raystack.workflow.nl.questions import criteria, defer_candidates, fill_from_question, questions
from raystack.workflow.nl.reread import (CLEANINGS, evaluation_held_out_for, grouped_first, pick_first, reread, retrained_parts,
                                         retraining)
from raystack.workflow.nl.safety import screen
from raystack.workflow.nl.courtesy import trim_courtesies
from raystack.workflow.nl.said_again import each_named_file, join_kind_notes, one_load_per_file, split_named_again
from raystack.workflow.nl.search import SPACE_PARAM_RX, VALUES_SAID, read_tune, search_said_again, space_said_before
from raystack.workflow.nl.stated_targets import stated_target
from raystack.workflow.nl.step_references import (TRANSFORMED, announced_models, first_of_several, model_references,
                                             models_named_after, models_named_first, order_references, table_participle, transform_references)
from raystack.workflow.nl.text import ARROWS, Text, sentences
from raystack.workflow.nl.schedules import scheduled
from raystack.workflow.nl.triggers import COMPILED, MODEL_KIND, PREPOSITIONS
from raystack.workflow.nl.unmade import figures_no_step_makes

PARTS = L.PART_STEPS
# a reminder that the file named is loaded first, said beside the step that reads it
LOADED_FIRST = r"\b(?:after|once|but)\s+(?:loading|reading|you\s+load|we\s+load|you\s+read|we\s+read)\s+(?:it|them)\b"
# a directory that holds a checkpoint by its name ("./ckpt/x", "runs/checkpoints/latest")
CHECKPOINT_PATH = re.compile(r"(?:^|/|\.)(?:ckpts?|checkpoints?)(?:/|$|[-_])")
# steps that take a trained model as their object ("evaluate the knn model", "deploy the knn")
# the best of several results named with no metric where it is used ("deploy the best one")
BEST_PLAIN = (r"\bthe\s+(?:best|better|winning|top|strongest|(?:best|top|highest|better)[\s-](?:performing|scoring))(?:\s+(?:one|model|run|candidate|version))?\b"
              r"(?!\s*(?:-|ones|models|runs|NUM|two|three|four|five)\b)|\bthe\s+winner\b")
VERBLESS_MODEL = re.compile(rf"(?:(?:a|the|final|plain|simple)\s+)*{MODEL_KIND}\b")


# steps that use a cluster's workers, GPUs or memory: what a resource bound limits
COMPUTE_STEPS = {"train_model", "tune", "edit_pretrain", "mlora_finetune", "elastic_dlrm"}


@dataclass
class Action:
    entry: str
    lo: int                      # first token of the trigger
    hi: int                      # one past the action's last token (set per sentence)
    trig_end: int
    sentence: int
    prepositional: bool = False
    has_file: bool = False
    extra: list = field(default_factory=list)   # steps made before this one from its words
    zlo: int = -1                # first token of the action's words (its trigger, or the sentence start)
    found: Found = field(default_factory=Found)
    step: DraftStep | None = None
    verbless: bool = False       # named by a noun phrase only ("logistic regression", "kNN")
    beside: Action | None = None  # "...; in parallel, split and train": the clause's first step runs beside this one
    said_at: tuple[int, int] | None = None   # (sentence, token) where a question's candidates are asked to run ("fit all three")
    files_end: int = -1          # a load's files listed "a.csv / b.csv / c.csv": one past the last


FIT_VERBS = {"fit", "fits", "fitted", "fitting", "refit", "refits"}   # "fit a logistic model to x.csv"
WRITE_VERBS = {"save", "write", "store", "export", "dump", "persist", "output"}


def _keyed(t: Text, a: Action) -> bool:
    """Whether an aggregate's phrase names its own group key ("... per store", "by region")."""
    words = [x.low for x in t.tokens[a.lo:a.trig_end]]
    return any(w in ("per", "by") and k + 1 < len(words) for k, w in enumerate(words))


def _settings_end(t: Text, spans: list[tuple[int, int]], actions: list[Action], a: Action) -> int:
    """Where the words of a tune or a part's job end: its own clause, and the clauses after it,
    split off by semicolons, that name no step ("lr in {0.01, 0.1}; six trials; fifo; minimize
    rmse", "elastic DLRM x; epochs 3 / 6 / 9"), or, after its title's colon, the bullets under it
    that name no step ("recs (elastic DLRM):\n- epochs=1\n- max 12 workers")."""
    end = a.hi
    listed = end > 0 and t.tokens[end - 1].text == ":"
    for si in range(a.sentence + 1, len(spans)):
        lo, hi = spans[si]
        broken = "\n" in t.raw[t.tokens[lo - 1].end:t.tokens[lo].start]
        bullet = listed and broken and t.tokens[lo].text in ("-", "*", "•")
        if lo != end or any(b.sentence == si for b in actions) or not (bullet or (t.tokens[lo - 1].text == ";" and not broken)):
            break
        end = hi
    return end


def _tune_end(t: Text, spans: list[tuple[int, int]], actions: list[Action], a: Action) -> int:
    """Where a search's words end: its settings (``_settings_end``), or, when they name no space, on
    to its sentence's end past commas, while no other step is named ("tune a knn for y, trying k of
    5, 9 and 15 across 8 trials, minimising RMSE")."""
    end = _settings_end(t, spans, actions, a)
    if next(t.finditer(VALUES_SAID, a.zlo, end, free_only=True), None) is not None:
        return end
    stop = min([b.lo for b in actions if b.lo >= end] + [spans[a.sentence][1]])
    return max(end, stop)


# what is said to be saved somewhere already ("a base checkpoint saved at ./ckpt/b")
SAVED_THINGS = {"checkpoint", "checkpoints", "ckpt", "weights", "model", "adapters", "base"}


class RulePlanner:
    """The default offline planner (no model, no network)."""

    def plan(self, text: str, name: str = "planned") -> Plan:
        """A validated Plan for ``text``, or PlanRefused saying why not."""
        return build(self.draft(text), name)

    def draft(self, text: str) -> Draft:
        if not text or not text.strip():
            raise PlanRefused(["the request is empty"], "out_of_scope")
        t = Text.parse(corrected(spelled_paths(trim_courtesies(screen(text)))))
        unbounded(t)
        figures_no_step_makes(t)
        t.named["adapters"] = adapter_names(t)
        actions: list[Action] = []
        cues: list[Cue] = []
        spans = sentences(t)
        for si, (lo, hi) in enumerate(spans):
            s_cues = read_cues(t, lo, hi, si, cues)
            s_actions = self._actions(t, lo, hi, si, s_cues)
            cues += s_cues
            actions += s_actions
        actions = destinations(t, evaluation_held_out_for(t, order_references(t, transform_references(
            t, split_named_again(t, reread(t, actions))))))
        if not actions:
            raise PlanRefused([f"no workflow step in {text.strip()[:80]!r}"], "out_of_scope")
        scheduled(t, spans, {a.sentence for a in actions})
        asked = questions(t, spans)
        criteria(t, asked)
        actions = defer_candidates(t, actions, asked)
        self._resolve_context(t, actions, cues)
        json_tables(t, actions)
        for a, b in zip(actions, actions[1:]):   # "notify me with the row count": a figure in a message
            if a.entry == "notify" and b.entry in ("stats", "aggregate", "evaluate_model") and b.sentence == a.sentence \
                    and [x.low for x in t.tokens[a.trig_end:b.lo]] == ["with"]:
                raise PlanRefused([f"{t.span_text(t.tokens[a.lo:b.trig_end])!r}: a notification sends the text it is "
                                   "given, not a figure a step computes; report the figure instead"])
        retrained = retrained_parts(t, actions)
        pick_first(t, actions)
        grouped_first(t, actions)
        for k, a in enumerate(actions):
            with t.claiming(a.entry):
                if a.found.params.pop("_tune", False):
                    again = a.found.params.pop("_tune_again", None)     # (the search's settings, said later)
                    a.found.params["_tune"] = read_tune(t, a.zlo, _tune_end(t, spans, actions, a), more=None if again is None
                                                        else (again.zlo, _tune_end(t, spans, actions, again)))
                ex = EXTRACTORS.get(a.entry)
                if ex is not None:
                    end = self._shared_object_end(t, actions, k)
                    # "elastic DLRM x; epochs 3 / 6 / 9; ...", "model = knn; k = 7; target = churned": its settings
                    if (a.entry in PARTS or a.entry == "train_model") and end == a.hi:
                        end = _settings_end(t, spans, actions, a)
                    end = max(end, a.files_end)     # ("a.csv / b.csv / c.csv → ...": every file, named bare)
                    ex(t, a.zlo, end, a.found)
                if a.found.bound is None and not CATALOG[a.entry].side_effect:
                    resource_bound(t, a.zlo, a.hi, a.found)
        stated_target(t, actions)      # "We want to predict alpha_acid. ... fit a linear regression."
        self._bound_sentences(t, spans, actions)
        actions = each_named_file(t, actions)
        self._bounds_to_compute(actions)
        actions = model_references(t, announced_models(t, models_named_after(t, models_named_first(t, actions))))
        first_of_several(t, actions)      # "train ..., train it again ..., export the first one"
        if any(a.entry == "load_data" for a in actions):   # "(after loading it, obviously)": that load
            for _, toks in t.finditer(LOADED_FIRST, 0, len(t.tokens), free_only=True):
                t.mark(toks, "load_data")
        for a, run in retrained:     # what the retraining does not change is the first run's
            for key, value in run.found.params.items():
                a.found.params.setdefault(key, value)
        fill_from_question(t, actions, asked, EXTRACTORS)
        one_load_per_file(actions)
        steps = self._steps(t, actions, cues)
        # (a selection made from an export's words, "export whichever has the better F1", is a step of the plan too)
        ends = [(e, a.trig_end) for a in actions for e in [*(x.entry for x in a.extra if x.entry == "select_best"), a.entry]]
        account(t, ends, picked=any(e == "select_best" for e, _ in ends) or any(a.step.tune is not None for a in actions))
        return Draft(text.strip(), steps)

    # -- actions ------------------------------------------------------------------------------
    def _actions(self, t: Text, lo: int, hi: int, si: int, cues: list[Cue]) -> list[Action]:
        found: list[Action] = []
        for entry, rx in COMPILED:
            for m, toks in t.finditer(rx, lo, hi, free_only=True):
                if entry == "evaluate_model" and not is_eval_verb(t, toks[0]):
                    continue
                if entry == "evaluate_model" and is_figure(toks[0]) and any(b.entry == "evaluate_model" and b.lo < toks[0].i
                                                                            for b in found):
                    continue   # "evaluate it, and report the accuracy on the test set": that evaluation's figure
                if entry == "split_data" and (names_existing_split(t, toks[0]) or split_across_files(t, toks[0])):
                    continue
                if entry == "save_report" and toks[0].low in ("saved", "stored", "kept") and toks[0].i >= 2 \
                        and (t.tokens[toks[0].i - 1].low in SAVED_THINGS or t.tokens[toks[0].i - 1].low in ("is", "was")
                             and t.tokens[toks[0].i - 2].low in SAVED_THINGS):
                    continue    # "a base checkpoint saved at ./ckpt/b": where it is, no report
                # ("...; → out/x.csv; ...": an arrow after a semicolon points from the step before it; a
                # pipe chains steps as an arrow does: "rentals.csv | dedup | mean by station | out/m.csv")
                if entry == "load_data" and len(toks) == 1 and toks[0].i and t.tokens[toks[0].i - 1].text in (*ARROWS, "|") \
                        and (any(b.lo < toks[0].i and b.sentence == si and b.entry not in SOURCES for b in found) or (
                            toks[0].i >= 2 and t.tokens[toks[0].i - 2].text == ";"
                            and any(x.used in CATALOG and x.used not in SOURCES for x in t.tokens[:toks[0].i]))):
                    # "... -> line chart -> out/x.parquet": where the chain ends is written, never a new input
                    if not toks[0].low.endswith((*TABLE_EXT[:4], ".jsonl")):   # (JSON lines: a table, never a model)
                        continue
                    written_end = True
                else:
                    written_end = False
                out_file = next((x for x in reversed(toks) if x.kind == "path"), None)
                if entry == "write_table" and not (out_file and out_file.low.endswith(TABLE_EXT[:4])) and not (
                        out_file is None and re.search(r"\b(?:tables?|parquet|csv)\b", m.group(0))):
                    continue
                if entry == "export_model" and out_file is not None and out_file.low.endswith(TABLE_EXT[:4]):
                    continue
                if entry in TRANSFORMED and self._written_table(t, toks, entry, found):
                    continue  # "clean it, and save the cleaned table to c.csv": the write's object
                if entry in TRANSFORMED and (re.match(r"(?:un|non)-", toks[0].low) or (
                        toks[0].i and t.tokens[toks[0].i - 1].low in ("not", "non", "un"))):
                    continue  # "the un-normalized table": the table before the step, not the step
                if entry == "notify" and re.fullmatch(r"QUOTE\d+", m.group(0)) and not (
                        toks[0].i >= 2 and t.tokens[toks[0].i - 2].used in ("exit", "condition", "otherwise")):
                    continue  # a quoted text after a colon is a message only after a handler's or condition's cue
                if entry == "train_model" and VERBLESS_MODEL.match(m.group(0)) and any(
                        b.entry in ("train_model", "tune") and b.lo <= toks[0].i < b.trig_end for b in found):
                    continue  # a model word inside another training phrase ("train a logistic model")
                if entry == "load_data" and len(toks) == 1 and toks[0].i >= 2 and t.tokens[toks[0].i - 1].text == ":" \
                        and any(x.low in WRITE_VERBS and not (x.i and t.tokens[x.i - 1].low in L.NOUN_DETERMINERS)
                                for x in t.tokens[max(0, toks[0].i - 4):toks[0].i - 1]):
                    continue    # "write scores: out/s.csv": where the write goes, never a new input ("its own export: a.csv" is)
                if entry == "load_checkpoint" and any(x.low in WRITE_VERBS for x in t.tokens[max(lo, toks[0].i - 3):toks[0].i]):
                    continue    # "save the checkpoint in ./ckpt/run1": where it is written, never a base to load
                if entry in ("load_data", "load_checkpoint", "load_adapters") and "FILE" in m.group(0) and any(
                        x.kind == "path" and x.used and x.used != entry for x in toks):
                    continue
                if entry == "load_data" and toks[0].low == "to" and not any(
                        b.entry == "train_model" and b.sentence == si and t.tokens[b.lo].low in FIT_VERBS
                        and 0 <= toks[0].i - b.trig_end <= 4 and all(
                            x.kind == "word" and x.used in ("", "train_model", "model kind")
                            for x in t.tokens[b.trig_end:toks[0].i]) for b in found):
                    continue
                if entry == "load_data" and second_side(t, toks[0].i) and not any(
                        b.entry in L.TWO_TABLE_STEPS and b.sentence == si and b.lo < toks[0].i for b in found):
                    continue  # "copy a.csv to b.csv": a file after another one and "to" is no input
                if entry == "load_data" and "FILE" in m.group(0) and not any(
                        x.kind == "path" and (x.low.endswith(TABLE_EXT) or "." not in x.text.rsplit("/", 1)[-1])
                        for x in toks):
                    continue
                if written_end or (entry == "save_report" and table_result(t, m, toks, hi)):
                    entry_here = "write_table"
                elif entry == "load_data" and out_file is not None and CHECKPOINT_PATH.search(out_file.low) \
                        and not out_file.low.endswith(TABLE_EXT):
                    entry_here = "load_checkpoint"   # "./ckpt/base is loaded": a checkpoint, never a table
                else:
                    entry_here = entry
                skipped = set()
                if "sk" in rx.groupindex and m.group("sk"):
                    skipped = {x.i for x in t.covered(*m.span("sk"))}
                mark = [x for x in toks if x.i not in skipped   # a file inside a write phrase is its destination
                        or (x.kind == "path" and entry_here in ("write_table", "export_model", "save_report"))]
                t.mark(mark, entry_here)
                entry_found = entry_here
                j = toks[0].i - 1
                while j > lo and t.tokens[j].low in ("a", "an", "the", "some", "our", "my", "its", "their"):
                    j -= 1  # "on a synthetic dataset": the preposition before the article
                prev = t.tokens[j].low if j >= lo and toks[0].i > lo else ""
                act = Action(entry_found, toks[0].i, hi, toks[-1].i + 1, si,
                             prepositional=prev in PREPOSITIONS or toks[0].low in PREPOSITIONS
                             or (entry_found == "load_data" and (len(toks) == 1 or toks[0].low == "to")))
                act.has_file = any(x.kind == "path" for x in toks)
                # "save the trained model as m.json": a model named by its training, not a new one
                act.verbless = entry == "train_model" and (bool(VERBLESS_MODEL.match(m.group(0))) or (
                    toks[0].low in ("trained", "fitted", "learned") and toks[0].i > 0
                    and t.tokens[toks[0].i - 1].low in ("the", "this", "that", "our", "my")))
                found.append(act)
        found.sort(key=lambda a: a.lo)
        join_kind_notes(t, found)
        for k in range(len(found) - 1, 0, -1):  # "train a DLRM on the data in data/criteo/"
            a = found[k]
            # past the base checkpoint named in the part's phrase ("fine-tune adapters on the
            # checkpoint in ./ckpt using qa.jsonl")
            j = k - 1
            while j > 0 and found[j].entry == "load_checkpoint" and found[j].prepositional:
                j -= 1
            if a.entry in ("load_data", "make_dataset") and found[j].entry in PARTS and \
                    found[j].sentence == a.sentence and part_data(t, found[j], a):
                t.relabel(t.tokens[a.lo:a.trig_end], a.entry)
                del found[k]
                # "pretrain with EDiT on a.jsonl and b.jsonl": a pretraining (or a fine-tuning, one
                # file per adapter) reads every file listed
                while k < len(found) and found[j].entry in ("edit_pretrain", "mlora_finetune") \
                        and found[k].entry == "load_data" \
                        and found[k].sentence == a.sentence and a.has_file and found[k].has_file \
                        and all(x.low in ("and", ",", "one", "another") for x in t.tokens[a.trig_end:found[k].lo]):
                    a = found.pop(k)
                    t.relabel(t.tokens[a.lo:a.trig_end], a.entry)
        self._aggregate_function(t, found)
        merged: list[Action] = []
        for a in found:  # several phrases of one step ("use EDiT local SGD to pre-train an LLM")
            if a.entry in PARTS and len(merged) > 1 and merged[-2].entry == a.entry and merged[-1].prepositional \
                    and merged[-1].entry in SOURCES and merged[-2].sentence == a.sentence \
                    and not any(x.kind == "punct" and x.text not in ("(", ")") for x in t.tokens[merged[-2].lo:a.lo]):
                continue  # "fine-tune two adapters on the checkpoint in ./ckpt with mLoRA": one step
            if merged and a.entry == merged[-1].entry == "load_data" and a.has_file and merged[-1].has_file \
                    and [x.text for x in t.tokens[max(merged[-1].files_end, merged[-1].trig_end):a.lo]] == ["/"]:
                merged[-1].files_end = a.trig_end
                continue  # "read a.csv / b.csv / c.csv": one load over the files (a map)
            # "fine-tune adapters on tiny-1m, then fine-tune more on tiny-20m": the verb said again
            # after a "then" is a second run, not more words of the first
            # "take the first 200 rows, then keep the last 5 rows of it": two subsets, two verbs
            sequenced = bool(merged) and not a.verbless and (
                t.tokens[a.lo].low == t.tokens[merged[-1].lo].low or a.entry == "sample"
                # "sum revenue per store, then count stores per region": each phrase with its own key
                or (a.entry == "aggregate" and all(_keyed(t, b) for b in (a, merged[-1])))) \
                and any(c.kind == "seq" and merged[-1].trig_end <= c.lo < a.lo for c in cues)
            if merged and merged[-1].entry == a.entry and not sequenced and (
                    a.entry not in ("load_data", "train_model", "evaluate_model", "notify")
                    or (a.entry == "load_data" and not (a.has_file and merged[-1].has_file))
                    or (a.entry == "train_model" and a.verbless and coordinated(t, merged[-1], a))
                    or (a.entry not in ("load_data", "train_model", "evaluate_model", *L.TWO_TABLE_STEPS) and not a.has_file
                        and all(x.low in ("a", "an", "the", "me", "us", "with")
                                for x in t.tokens[merged[-1].trig_end:a.lo]))):
                continue
            said = self._table_said_then_saved(merged, a)
            if said is not None:      # "produce a table of the totals per city, saved to t.csv": one table written
                merged.remove(said)
            merged.append(a)
        # a file named inside another step's phrase ("split iris.csv 70/30", "roll up the logs in
        # q.parquet by query_id"): the load owns its own words, the rest stays its verb's
        embedded = {id(a) for k, a in enumerate(merged) if self._embedded(a, merged[k - 1] if k else None)}
        bounds = sorted({a.lo for a in merged if id(a) not in embedded}
                        | {c.lo for c in cues if c.kind in ("cond", "else", "exit")} | {hi})
        for k, a in enumerate(merged):
            if id(a) in embedded:  # a bare file name: its own word only, the rest stays its verb's
                a.hi, a.zlo = a.trig_end, a.lo
                continue
            a.hi = next(b for b in bounds if b > a.lo)
            a.zlo = lo if k == 0 else self._phrase_start(t, a, merged[k - 1])
            # the phrase before ends where this one starts ("sample 2000 rows of x.csv, then for k
            # in 1, 3 and 5, train ...": past the file named inside it, the list is the training's)
            before = next((b for b in reversed(merged[:k]) if id(b) not in embedded), None)
            if before is not None and before.hi > a.zlo:
                before.hi = a.zlo
        for k, a in enumerate(merged):   # "read a.parquet and, in parallel, b.csv": two loads
            if a.entry == "load_data" and id(a) not in embedded:
                inner = [b for b in merged[k + 1:] if id(b) in embedded and b.entry == "load_data" and b.lo < a.hi]
                if inner:
                    a.hi = inner[0].lo
        return merged

    @staticmethod
    def _embedded(a: Action, prev: Action | None) -> bool:
        """A source named inside the phrase of the step before it ("split iris.csv 70/30", "roll
        up the logs in q.parquet by query_id", "tune a knn on the split of g.csv: k = ...",
        "fine-tune adapters on the checkpoint in ./ckpt with mLoRA"), or the statistics a report
        holds ("save a report with its statistics to r.json"): it owns its own words only, the
        rest stays the verb's."""
        if a.entry == "load_data":
            return a.trig_end - a.lo == 1 or (prev is not None and a.trig_end - a.lo == 2 and a.prepositional
                                               and prev.entry in (*L.DATA_VERB_STEPS, "train_model", "tune"))
        if a.entry == "stats":   # "save a report with its statistics to r.json": what the report holds
            return prev is not None and a.prepositional and prev.entry == "save_report" and prev.sentence == a.sentence
        return (prev is not None and a.prepositional and a.entry in ("load_checkpoint", "split_data")
                and prev.sentence == a.sentence and prev.entry in (*PARTS, "train_model", "tune"))

    @staticmethod
    def _phrase_start(t: Text, a: Action, prev: Action) -> int:
        """Where an action's noun phrase starts: its modifiers before the trigger belong to it
        ("an 80/20 train/test split", "20% held out", "a one-epoch elastic DLRM run")."""
        j, lead = a.lo - 1, []
        if a.prepositional:
            return a.lo
        each = RulePlanner._for_each_start(t, a, prev)
        if each is not None:
            return each
        while j >= max(prev.trig_end, a.lo - 4):
            x = t.tokens[j]
            if x.used or x.kind == "punct" or x.low in L.CLAUSE_WORDS or x.low in PREPOSITIONS \
                    or x.low in ("for", "to", "by", "into", "per") or re.fullmatch(L.METRIC_RX, x.low) \
                    or (x.kind == "word" and x.low in L.FILLERS and x.low not in ("a", "an", "the", "some")):
                break
            lead.append(x)
            j -= 1
        if not lead:
            return a.lo
        if lead[-1].low in ("a", "an", "the", "some") or any(x.kind in ("num", "pct", "ratio") for x in lead):
            return lead[-1].i
        return a.lo

    @staticmethod
    def _written_table(t: Text, toks: list, entry: str, found: list[Action]) -> bool:
        """Whether a transform's participle is the object of a write after that transform was
        asked for ("clean it, and save the cleaned table to c.csv"): the words stay free for the
        write, which reads the transformed table. A table "cleaned" by filling its gaps or
        dropping its duplicates is cleaned too ("fill in missing ages, and save the cleaned file
        as p.csv")."""
        i = toks[0].i
        done = CLEANINGS if entry == "clean_data" else (entry,)
        # ("save a cleaned copy to out/x.csv": the copy of the table made before)
        if not (i >= 2 and t.tokens[i - 1].low in ("the", "a") and t.tokens[i - 2].low in WRITE_VERBS
                and (table_participle(t, i, entry) or (i + 1 < len(t.tokens) and t.tokens[i + 1].low == "copy"
                                                       and TRANSFORMED[entry].fullmatch(t.tokens[i].low)))):
            return False
        # asked for before: found already, or named by a phrase of its kind not read yet ("remove
        # duplicates, and write the deduplicated table to x.parquet")
        return any(a.entry in done and a.lo < i for a in found) or any(
            next(t.finditer(rx, 0, i - 2), None) is not None for e, rx in COMPILED if e in done)

    @staticmethod
    def _shared_object_end(t: Text, actions: list[Action], k: int) -> int:
        """Where step k reads its parameters up to: its own words, or, for a training verb
        coordinated with the evaluation right after it ("train and evaluate a knn classifier"),
        the evaluation's words too (the object they share: the knn is what is trained)."""
        a = actions[k]
        nxt = actions[k + 1] if k + 1 < len(actions) else None
        if a.entry != "train_model" or nxt is None or nxt.entry != "evaluate_model" or nxt.sentence != a.sentence \
                or a.verbless or not all(x.low in ("and", "&", "+") for x in t.tokens[a.trig_end:nxt.lo]):
            return a.hi
        return nxt.hi

    @staticmethod
    def _for_each_start(t: Text, a: Action, prev: Action) -> int | None:
        """", then for each k in 2, 4 and 8 train ...", "and for k from 3 to 5 train ...": a 'for
        each/every X in ...' or 'for k in / from ...' phrase right before the step's words is the
        step's own (its map), wherever the clause opens."""
        gap = t.tokens[prev.trig_end:a.lo]
        if gap and gap[-1].low in ("and", "then"):   # "train knn models for k in 3, 5, 7 and keep the best":
            return None                              # the phrase ends the clause before
        for n, x in enumerate(gap[:-1]):
            # a model's k or learning rate maps a training, never the step after it ("train knn
            # models for k in 3, 5 and 7, picking the best": the list is the training's)
            named = a.entry in ("train_model", "tune") and gap[n + 1].low in ("k", "lr") and n + 2 < len(gap) and \
                gap[n + 2].low in ("in", "from", "=", "between", "ranging", "over")     # "for k from 3 to 5 train"
            if x.low == "for" and (gap[n + 1].low in ("each", "every") or named) and not x.used:
                rest = gap[n + 2:]
                if rest and not any(y.used or y.low in L.CLAUSE_WORDS and y.low != "and"
                                    or (y.kind == "punct" and y.text != ",") for y in rest):
                    return x.i
        return None

    @staticmethod
    def _table_said_then_saved(merged: list[Action], a: Action) -> Action | None:
        """"make a table of the totals per city and save it to t.csv": the table said before
        what it holds and the file it is saved to are one write (two wrote the same table, once
        under the default name); the earlier write, when only the steps it names ("of the
        totals per city") stand between them in one sentence."""
        if a.entry != "write_table" or not a.has_file:
            return None
        k = next((k for k in range(len(merged) - 1, -1, -1) if merged[k].entry == "write_table"), None)
        if k is None or merged[k].has_file or merged[k].sentence != a.sentence or k == len(merged) - 1:
            return None
        return merged[k] if all(b.prepositional and b.sentence == a.sentence for b in merged[k + 1:]) else None

    @staticmethod
    def _aggregate_function(t: Text, found: list[Action]) -> None:
        """"group by city and compute the mean price": the mean said after a grouping is what the
        aggregate computes per group, not the statistics of its per-group sums (the plan summed
        each city's prices, then took the statistics of the sums). A function the aggregate does
        not compute (a standard deviation per group) is refused."""
        for k in range(len(found) - 1, 0, -1):   # "group x.csv by city and compute ...": past the file's load
            said = found[k]
            grouping = next((b for b in reversed(found[:k]) if b.entry != "load_data"), found[k - 1])
            if said.entry != "stats" or grouping.entry != "aggregate" or said.sentence != grouping.sentence:
                continue
            word = next((x.low for x in t.tokens[said.lo:said.trig_end] if x.low in L.COLUMN_STATS), None)
            if word is None or any(x.low in AGG_WORDS for x in t.tokens[grouping.lo:said.lo]):
                continue   # statistics asked for, or the grouping has its function already
            if word not in AGG_WORDS:
                raise PlanRefused([f"{t.span_text(t.tokens[said.lo:said.trig_end])!r} per group: the {AGGREGATES_SAID}"])
            t.relabel(t.tokens[said.lo:said.trig_end], "stats", "aggregate")
            del found[k]

    def _resolve_context(self, t: Text, actions: list[Action], cues: list[Cue]) -> None:
        """Steps whose name depends on what came before: evaluate/deploy an adapter set or a
        DLRM; a search that tunes the training step named beside it."""
        last_model: str | None = None
        for a in actions:
            if a.entry in L.TRAINING_STEPS:
                last_model = a.entry
            elif a.entry == "load_adapters":       # saved adapters are evaluated and served as fine-tuned ones
                last_model = "mlora_finetune"
            elif a.entry == "evaluate_model" and last_model == "elastic_dlrm":
                a.entry = "evaluate_dlrm"
            elif a.entry == "evaluate_model" and last_model == "mlora_finetune":
                a.entry = "evaluate_adapters"
            elif a.entry == "deploy_model" and last_model == "mlora_finetune":
                a.entry = "serve_adapters"
        seqs = [c.lo for c in cues if c.kind == "seq"]
        for i, a in enumerate(actions):
            if a.entry != "tune":
                continue
            end = min([x for x in seqs if x > a.lo] or [10 ** 9])
            prev = actions[i - 1] if i else None
            if prev is not None and prev.entry == "train_model" and prev.sentence == a.sentence and ((
                    not any(x.kind == "punct" for x in t.tokens[prev.trig_end:a.lo]) and (prev.verbless or all(
                        (x.low in L.FILLERS and x.low not in L.CLAUSE_WORDS) or re.fullmatch(SPACE_PARAM_RX, x.low)
                        for x in t.tokens[prev.trig_end:a.lo]))) or space_said_before(t, prev, a, seqs)):
                # "kNN tuned on k in {...}", "fit kNN w/ k tuned over 3, 5 and 7": one search
                a.lo, a.zlo = prev.lo, min(prev.zlo, a.zlo)
                prev.entry = "_absorbed"
            else:
                nxt = next((b for b in actions[i + 1:] if b.sentence == a.sentence and b.entry == "train_model"
                            and b.lo < end and (b.verbless or not any(
                                x.kind == "punct" for x in t.tokens[a.trig_end:b.lo]))), None)
                if nxt is not None:                              # "tune a knn model over k ..."
                    a.hi = max(a.hi, nxt.hi)
                    nxt.entry = "_absorbed"
                elif search_said_again(t, actions[:i], a, actions):
                    said = next((b for b in reversed(actions[:i]) if b.entry != "_absorbed"), None)
                    if said is not None and said.sentence == a.sentence:     # ("export the search winner to ./m")
                        said.hi = max(said.hi, a.hi)
                    continue
            a.entry = "train_model"
            a.found.params["_tune"] = True
        actions[:] = [a for a in actions if a.entry != "_absorbed"]

    # -- steps ----------------------------------------------------------------------------------
    def _steps(self, t: Text, actions: list[Action], cues: list[Cue]) -> list[DraftStep]:
        steps: list[DraftStep] = []
        joins = [a.lo for a in actions if a.entry in L.TWO_TABLE_STEPS]
        for k, a in enumerate(actions):
            f = a.found
            tune = f.params.pop("_tune", None)
            span = t.span_text([x for x in t.tokens[a.zlo:a.hi] if x.kind != "punct"])
            if a.entry == "load_data" and f.map and f.map[0] == "path" and any(j > a.lo for j in joins) and (
                    len(f.map[1]) == 2 or any(b.entry == "concat" and b.lo > a.lo for b in actions)):
                # "load customers.csv and orders.csv and join them": two tables, not a map ("load
                # jan.csv, feb.csv and mar.csv, stack them": three, a chain of concats)
                *rest, last = f.map[1]
                a.extra = [DraftStep(f"s{k + 1}{chr(ord('a') + n)}", a.entry, {"path": p}, {"path": p}, span=span)
                           for n, p in enumerate(rest)]
                steps.extend(a.extra)
                s = DraftStep(f"s{k + 1}", a.entry, {"path": last}, {"path": last}, span=span)
            else:
                s = DraftStep(f"s{k + 1}", a.entry, dict(f.params), dict(f.stated), map=f.map,
                              tune=tune, bound=f.bound, span=span, refs=dict(f.refs))
            a.step = s
            steps.append(s)
            best = self._best_one(t, a, actions[:k])
            if best is not None:
                a.extra = [*a.extra, best]
        self._retrain_same_model(t, actions)
        arrange(t, actions, cues)
        return [s for a in actions for s in [*a.extra, a.step]]

    @staticmethod
    def _best_one(t: Text, a: Action, before: list[Action]) -> DraftStep | None:
        """"export the run with the best AUC", "the lowest-RMSE one is exported": a selection of
        the several results made before (a map), then the step on the selected one."""
        several = any(b.found.map for b in before) or sum(b.entry == "train_model" for b in before) > 1
        if a.entry not in ("export_model", "deploy_model") or not several:
            return None
        m = next(t.finditer(L.BEST_ONE, a.lo, a.hi), None)
        if m is None:
            # "deploy the best one", "export the winner to ./m": the pick with no metric named,
            # as "keep the best one" makes it (select_best's own metric)
            plain = next(t.finditer(BEST_PLAIN, a.lo, a.hi, free_only=True), None)
            if plain is None or any(b.entry == "select_best" for b in before):   # "pick the winner. Deploy the winner"
                return None
            t.mark(plain[1], a.entry)
            return DraftStep(f"{a.step.label}b", "select_best", {}, {}, span=t.span_text(plain[1]))
        match, toks = m
        said = {k: v for k, v in match.groupdict().items() if v}     # (one alternative's direction and metric)
        metric = metric_of(next(v for k, v in said.items() if k.startswith("m")))
        direction = next(v for k, v in said.items() if k.startswith("d")).lower()
        mode = "min" if direction in ("lowest", "lower", "smallest") else "max" if direction in ("highest", "higher", "largest") else \
            "min" if metric in L.LOWER_IS_BETTER else "max"
        t.mark(toks, a.entry)
        return DraftStep(f"{a.step.label}b", "select_best", {"metric": metric, "mode": mode}, {"metric": metric},
                         span=t.span_text(toks))

    @staticmethod
    def _bound_sentences(t: Text, spans: list[tuple[int, int]], actions: list[Action]) -> None:
        """"...DLRM job, epoch by epoch; max 6 workers.": a bound in a clause of its own is the last
        step's. A part sizes itself from it ("... for 2 epochs. At most 6 workers.": elastic DLRM's
        max workers, EDiT's ranks), so the part's own reader turns a clause that holds only the
        bound into its resources (the bound was kept on the plan and the job ran at its default
        size); "At most 6 workers and 3 epochs." stays refused."""
        for si, (lo, hi) in enumerate(spans):
            if any(a.sentence == si for a in actions):
                continue
            prev = [a for a in actions if a.sentence < si and not a.prepositional]
            if not prev or prev[-1].found.bound is not None or CATALOG[prev[-1].entry].side_effect:
                continue
            last = prev[-1]
            with t.claiming(last.entry):
                resource_bound(t, lo, hi, last.found)
                only_bound = not any(x.used != "resource bound" and x.kind != "punct" and x.low not in L.FILLERS
                                     for x in t.tokens[lo:hi])
                if last.found.bound is not None and last.entry in PARTS and last.entry in EXTRACTORS and only_bound:
                    last.found.bound = None
                    t.relabel(t.tokens[lo:hi], "resource bound")
                    EXTRACTORS[last.entry](t, lo, hi, last.found)
                    if last.found.bound is None:
                        resource_bound(t, lo, hi, last.found)

    @staticmethod
    def _bounds_to_compute(actions: list[Action]) -> None:
        """"kNN on a 5% sample (hold out 20%; cap memory at 8GB)": a resource bound read inside a
        data step's words belongs to the sentence's model step (the one before it, else after)."""
        for k, a in enumerate(actions):
            if a.found.bound is None or a.entry in COMPUTE_STEPS:
                continue
            same = [b for b in actions if b.sentence == a.sentence and b.entry in COMPUTE_STEPS and b.found.bound is None]
            target = next((b for b in reversed(same) if actions.index(b) < k), None) or next(iter(same), None)
            if target is not None:
                target.found.bound, a.found.bound = a.found.bound, None

    @staticmethod
    def _retrain_same_model(t: Text, actions: list[Action]) -> None:
        """"retrain with k = 3", "refit it", "train it again": the model trained before, with what
        the phrase changes."""
        last: str | None = None
        for a in actions:
            if a.entry != "train_model":
                continue
            # ("Try logistic regression and a nearest centroid model ...": the models it tries, a map)
            tried = t.tokens[a.lo].low in ("try", "tries", "trying") and "model" not in a.step.params \
                and not (a.step.map is not None and a.step.map[0] == "model")
            if tried and last is None:   # "try k = 7" with no model trained before: which model is a guess
                raise PlanRefused([f"{t.span_text(t.tokens[a.lo:a.hi])!r} tries a value, but no model was trained "
                                   "before it: say which model"])
            if "model" not in a.step.params and a.step.map is None and last is not None and \
                    (tried or retraining(t, a)):
                a.step.params["model"] = a.step.stated["model"] = last
            last = a.step.params.get("model", last)
