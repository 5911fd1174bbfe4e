"""How a draft's steps are arranged once each is read: constructs and order.

The rule planner (:mod:`raystack.workflow.nl.rules`) reads each action's step from its words;
:func:`arrange` then, in this order,

1. applies the sentence's construct cues to the steps they govern: exit handlers, retries,
   loops with their bound, conditions (and their else branch), parallel groups;
2. moves a step named in an "after" / "once" clause before its main clause's step, and the
   other steps said in another order than they run (:mod:`raystack.workflow.nl.said_order`);
3. moves producers named after their consumer ("train a model on generated data") before it;
4. sets each step's ``follows``: the order the steps were written in, with parallel groups,
   branches and sources named in a row side by side.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from raystack.workflow.catalog import ADAPTERS, CATALOG, CHECKPOINT, DLRM, MODEL, SPLIT, TABLE
from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.cues import Cue
from raystack.workflow.nl.plan import Cond, DraftStep, LoopSpec, PlanRefused
from raystack.workflow.nl.said_order import (SOURCES, before_that, done_first, fronted_before, search_named_before, source_said_after,
                                             split_said_after, subordinate)
from raystack.workflow.nl.text import ARROWS, Text

if TYPE_CHECKING:
    from raystack.workflow.nl.rules import Action

PER_ROUND_STEPS = ("train_model", "elastic_dlrm")   # steps with a top-level ``epochs`` to run per round


def arrange(t: Text, actions: list[Action], cues: list[Cue]) -> None:
    """Constructs, then order, for ``actions`` (each with its step read); reorders in place."""
    held_out_evaluation(t, actions)
    _apply_cues(t, actions, cues)
    subordinate(t, actions)
    _hoist(t, actions)
    fronted_before(t, actions)
    search_named_before(t, actions)
    before_that(t, actions)
    done_first(t, actions)
    split_said_after(actions)
    source_said_after(actions)
    _order(actions)


def _order(actions: list[Action]) -> None:
    """Steps written one after another run in that order, even when no data passes between
    them; a parallel group's members share what came before and the next step follows them
    all; an else branch follows what its condition's branch followed; items of one phrase
    ("load a.csv and b.csv") run side by side."""
    main = [a for a in actions if a.step.exit is None]
    pred: list[str] = []
    branch_pred: list[str] | None = None
    branch: list[str] = []
    i = 0
    while i < len(main):
        a = main[i]
        group = a.step.concurrent
        members = [a]
        if group:
            while i + len(members) < len(main) and main[i + len(members)].step.concurrent == group:
                members.append(main[i + len(members)])
        if a.step.otherwise and branch_pred is not None:
            follows = list(branch_pred)
        elif a.entry in SOURCES and i and main[i - 1].entry in SOURCES:
            follows = list(main[i - 1].step.follows)   # sources named in a row run side by side
            pred = pred + [st.label for st in [*a.extra, a.step]]
            for st in [*a.extra, a.step]:
                st.follows = follows
            i += 1
            continue
        else:
            follows = list(a.beside.step.follows) if a.beside is not None else list(pred)
            if a.step.when is not None:
                if branch_pred is None:
                    branch_pred, branch = list(pred), []
            else:
                branch_pred = None
        labels: list[str] = []
        for b in members:
            for st in [*b.extra, b.step]:
                st.follows = list(follows)
                labels.append(st.label)
        if a.step.when is not None and not a.step.otherwise:
            branch += labels
        elif a.step.otherwise and branch_pred is not None:
            labels = branch + labels
        pred = labels
        i += len(members)


def _said(a: Action) -> tuple[int, int]:
    """(sentence, token) where a step is asked to run: a question's candidates where a later
    step refers to them ("fit all three (retry each once)"), any other step where it is named."""
    return a.said_at or (a.sentence, a.lo)


def _apply_cues(t: Text, actions: list[Action], cues: list[Cue]) -> None:
    last_when: DraftStep | None = None
    held_out: set[int] = set()      # the conditions said of held-out data
    for c in cues:
        acts = [a for a in actions if _said(a)[0] == c.sentence]
        before = [a for a in acts if _said(a)[1] < c.lo]
        after = [a for a in acts if _said(a)[1] >= c.hi]
        if c.kind == "exit":
            targets = after[:1] if after else before[-1:]
            if not targets:
                raise PlanRefused(["an exit handler cue names no step to run"])
            targets[0].step.exit = c.data["kind"]
        elif c.kind == "retry":
            every = _every_step(t, c)
            if every:    # "every step should retry twice: load ..., split it, train ..."
                for a in actions:   # "every model should be retried twice": the trainings
                    if a.step.exit is None and (every == "step" or a.entry in L.TRAINING_STEPS):
                        a.step.retries = c.data["n"]
                continue
            earlier = [a for a in actions if a.sentence < c.sentence and not a.prepositional]
            # the clause's own step, not a producer read from its preposition ("fit X on f.csv,
            # retry the training ...": the fit, not the load of f.csv)
            named = [a for a in before if not a.prepositional] or before
            last = max(named, key=lambda a: _said(a)[1]) if named else None
            # "train ...; if it fails, retry twice, and then deploy": 'it' is the step said before, not the one after
            back = re.match(r"(?:if|when|should)\s+(?:it|they|that)\b", t.span_text(t.tokens[c.lo:c.hi]).lower())
            tgt = last or (earlier[-1] if back and earlier else after[0] if after else (earlier[-1] if earlier else None))
            kind = _retried_kind(t, c)      # "retry the load 2 times": the step it names
            if kind is not None:
                # "retry the training": a model's, or a part's (a DLRM, a pretraining, a fine-tuning)
                kinds = L.TRAINING_STEPS if kind == "train_model" else L.SAVING_STEPS if kind == "save" else (kind,)
                same = [a for a in actions if a.entry in kinds and a.sentence <= c.sentence and a.lo < c.lo]
                # "Retry the training up to 3 times if it fails: load x.csv, train a knn": said
                # first, of the one step of that kind said after it
                later = [a for a in actions if a.entry in kinds and a.lo >= c.lo]
                if not same and len(later) == 1:
                    same = later
                if not same:
                    raise PlanRefused([f"{t.span_text(t.tokens[c.lo:c.hi])!r} names a {kind} step the plan does not have"])
                tgt = max(same, key=lambda a: (a.sentence, a.lo))
            if tgt is None:
                raise PlanRefused(["retries asked for, but for no step"])
            tgt.step.retries = c.data["n"]
        elif c.kind == "loop":       # the nearest step that reports the metric it waits for
            reports = [a for a in acts if c.data["metric"] in CATALOG[a.entry].metrics]
            near = [a for a in reports if a.lo < c.lo][-1:] or [a for a in reports if a.lo >= c.hi][:1]
            if not near and not before:   # "Elastic DLRM job x, an epoch per round; keep going until AUC ..."
                near = [a for a in actions if a.sentence < c.sentence
                        and c.data["metric"] in CATALOG[a.entry].metrics][-1:]
            tgt = near[0] if near else before[-1] if before else (after[0] if after else None)
            if tgt is None:
                raise PlanRefused(["a loop with no step to repeat"])
            tgt.step.loop = LoopSpec(c.data["metric"], c.data["op"], c.data["value"], c.data["max"])
            for param, value in c.data.get("per_round", {}).items():   # "epoch by epoch"
                if tgt.entry not in PER_ROUND_STEPS:
                    raise PlanRefused([f"{tgt.entry} has no {param!r} per round to set"])
                tgt.step.params.setdefault(param, value)
                tgt.step.stated.setdefault(param, value)
        elif c.kind == "cond":
            else_at = next((e.lo for e in cues if e.kind == "else" and e.lo > c.lo
                            and e.sentence == c.sentence), None)
            fwd = [a for a in after if else_at is None or a.lo < else_at]
            targets = fwd if fwd and (not before or c.lo >= before[-1].hi) else before[-1:]
            if before and else_at is None and _postposed(t, c):
                targets = before[-1:]   # "retrain it with lr 0.01 if accuracy is under 0.8, and deploy ..."
            nxt = [a for a in actions if a.sentence == c.sentence + 1][:1]   # "AUC >= 0.75? -> export it": a question
            if nxt and not fwd and c.hi < len(t.tokens) and t.tokens[c.hi].text == "?" and (
                    not before or c.lo == 0 or t.tokens[c.lo - 1].text in (*ARROWS, ";", ":", "-", "•", "*", ".")):
                targets = nxt     # opening its item ("→ stats → missing > 1%? then ...") guards the step after it
            if not targets:
                raise PlanRefused(["a condition with no step to guard"])
            if c.data["metric"] == "missing_fraction" and else_at is None:
                # "if more than 5% of values are missing, mean-impute, then split and train": the
                # share of gaps guards the fix for them (and a message or report on them), never the
                # steps after it, which it conditioned too (silently wrong)
                cut = next((k for k, a in enumerate(targets) if a.entry not in GAP_STEPS), len(targets))
                targets = targets[:cut] or targets[:1]
            cond = Cond("", c.data["metric"], c.data["op"], c.data["value"])
            if c.data.get("held_out"):
                held_out.add(id(cond))
            for a in targets:
                a.step.when = cond
            last_when = targets[-1].step
            if else_at is not None:
                for a in [a for a in acts if a.lo >= else_at]:
                    a.step.when, a.step.otherwise = cond, True
        elif c.kind == "else":
            if last_when is None and any(x.kind == "exit" and x.data.get("kind") == "failure" and x.sentence == c.sentence
                                         and x.lo < c.lo for x in cues):
                continue    # "if the fine-tune fails, notify 'x', otherwise evaluate ...": the run going on as it does
            if last_when is None:
                raise PlanRefused(["'otherwise' with no condition before it"])
            said, cond = c.data.get("direction"), last_when.when
            if said == "worse":
                said = "up" if cond.metric in L.LOWER_IS_BETTER else "down"
            if said is not None and (said == "up") != (cond.op in ("<", "<=")):
                # "deploy if the RMSE is <= 1.5; if it's lower, ..." names no other side
                raise PlanRefused([f"{t.span_text(t.tokens[c.lo:c.hi])!r} is not the other side of "
                                   f"'{cond.metric} {cond.op} {cond.value}'"])
            if any(a.step.otherwise for a in acts if a.lo >= c.hi):
                continue  # handled with its condition
            nxt = [a for a in actions if a.lo >= c.hi][:1]
            for a in nxt:
                if a.step.when is None:
                    a.step.when, a.step.otherwise = last_when.when, True
        elif c.kind == "parallel":
            _parallel(t, c, cues, before, after, actions)
    _resolve_conditions(actions, held_out)


PREPARING = ("dedup", "clean_data", "impute", "normalize", "sample", "join", "concat")   # steps that make the table others read


def _ends_at_semicolon(t: Text, c: Cue, member: Action) -> bool:
    """Whether the clause of a parallel cue's one member ends at a ';' (more members may follow)."""
    end = next((x for x in t.tokens[member.lo:] if x.kind == "punct" and x.text in ".;!?"), None)
    return end is not None and end.text == ";"


def _parallel(t: Text, c: Cue, cues: list[Cue], before: list[Action], after: list[Action],
              actions: list[Action]) -> None:
    """The steps a parallel cue groups, within its clause (up to a "then", an arrow or the
    sentence's end): "A and B in parallel" the steps before it (back to a comma),
    "in parallel, A and B" / "side by side: A, B" those after it, "A and, in parallel, B"
    the step before it and those after it."""
    seq = [x.lo for x in cues if x.sentence == c.sentence and x.kind in ("seq", "join")]
    commas = [x.lo for x in cues if x.sentence == c.sentence and x.kind == "comma"]
    start = max([x for x in seq if x < c.lo] or [-1])
    end = min([x for x in seq if x >= c.hi] or [10 ** 9])
    ahead = [a for a in after if a.lo < end]
    # "in parallel, A and B, and a report on both once they finish": a step whose own clause
    # ends with the cue that waits for the group comes after the group, not in it
    waits = [x.lo for x in cues if x.sentence == c.sentence and x.kind == "join" and x.lo >= c.hi]
    if waits and len(ahead) > 2 and not any(x.text in ",;" for x in t.tokens[ahead[-1].lo:waits[0]]):
        end = ahead[-1].lo
        ahead = ahead[:-1]
    # "normalize x.csv and, in parallel, compute its stats": the file named in a step's phrase is
    # that step's input, not a step beside the ones after the cue
    behind = [a for a in before if a.lo > start and not (a.entry in SOURCES and a.prepositional and any(
        b.entry not in SOURCES and b.lo < a.lo <= b.trig_end + 2 for b in before))]
    # "load a.csv and b.csv in parallel, join them" / "... in parallel and join them"
    closes = c.hi >= len(t.tokens) or t.tokens[c.hi].kind == "punct" or t.tokens[c.hi].low == "and"
    # "load A and B in parallel, join them": the cue closes its phrase (the commas of a list of
    # values, "train logistic, knn and centroid side by side, evaluate them", are inside it)
    # (so are the commas of a list of files the step reads: "load a.csv, b.csv and c.csv in parallel and stack them")
    if ahead and behind and closes and (behind[-1].step.map is not None or not any(
            x.kind == "punct" and x.used != behind[-1].entry for x in t.tokens[behind[-1].lo:c.lo])):
        ahead = []
    if ahead:
        j = c.lo - 1
        while j > 0 and t.tokens[j].text == ",":
            j -= 1
        mid = bool(behind) and t.tokens[j].low in ("and", "while", "with")
        # "load x.csv and, in parallel, compute stats and plot it": the load is what the steps
        # after the cue read, not a step beside them
        # (or its transform: "drop duplicates, and in parallel compute stats and plot the data")
        mid = mid and not ((behind[-1].entry in SOURCES or behind[-1].entry in PREPARING) and len(ahead) > 1
                           and not _feeds_itself(ahead) and all(not a.has_file for a in ahead))
        group = ([behind[-1]] if mid else []) + ahead
    else:
        cut = max([x for x in seq + commas if behind and x < behind[-1].lo] or [start])
        group = [a for a in behind if a.lo > cut]
        earlier = [a for a in behind if a.lo <= cut and not a.prepositional]
        gap = [x for x in t.tokens[earlier[-1].trig_end:group[0].lo] if x.used not in ("load_data", "path")] if earlier else []
        if len(group) == 1 and gap and all(x.low in (",", "and", "also") for x in gap) and any(x.low == "and" for x in gap) \
                and not _feeds_itself([earlier[-1], *group]):
            group = [earlier[-1], *group]    # "train a knn on x.csv, and also compute stats on it in parallel"
        while len(group) > 1 and _feeds_itself(group):
            # "split x.csv 80/20 and train knn, logistic and centroid side by side": the split
            # feeds the trainings, which are what runs side by side
            group = group[1:]
    # a file or split named inside a member's phrase ("aggregate staff.csv by ...", "on the
    # 80/20 split of songs.csv") is its input, made before the group, not a member
    group = [a for k, a in enumerate(group) if not (
        k and a.prepositional and a.entry in (*SOURCES, "split_data") and group[k - 1].entry not in SOURCES)]
    # "run two branches in parallel: summary stats of the result, and a copy saved as x.parquet":
    # the members listed after the cue's colon run side by side, whatever the chain read before
    listed = bool(ahead) and c.hi < len(t.tokens) and t.tokens[c.hi].text == ":"
    if listed and len(ahead) == 1 and _ends_at_semicolon(t, c, ahead[0]):
        # "In parallel: dedupe it; normalize it.": the members after the colon, one per clause; read
        # apart, the second was chained after the first (silently)
        raise PlanRefused([f"{t.span_text(t.tokens[c.lo:c.hi + 1])!r} lists its steps across ';': list the steps "
                           "that run side by side in one clause ('in parallel: A, and B')"])
    if ahead and _feeds_itself(group) and not listed:
        # "write the stats; in parallel, split it and train a model": the split feeds the
        # training, so the steps are not side by side with each other; the clause runs beside
        # the clause before it, its own steps in order ("A and, independently, B then C": the
        # clause of A, which B's steps run beside)
        prev_start = max([x for x in seq if x < start] or [-1])
        clause = [a for a in before if prev_start < a.lo < start] or (
            [] if before else [a for a in actions if a.sentence == c.sentence - 1])   # "...; in parallel, ..."
        if mid and _feeds_itself(ahead):
            clause, group = [a for a in before if a.lo > prev_start], ahead
        clause = [a for a in clause if a.step.exit is None]
        if clause:
            group[0].beside = clause[0]
            group[0].step.beside = clause[0].step.label
        return
    for a in group:
        if a.step.exit is None:
            a.step.concurrent = f"par{c.sentence}"
            for x in a.extra:
                x.concurrent = a.step.concurrent


EVERY_STEP = r"\b(?:every|each|all(?:\s+(?:the|of\s+the))?|per)\s+(?:(?P<s>steps?|stages?|tasks?)|models?|trainings?|training\s+steps?)\b"


def _every_step(t: Text, c: Cue) -> str | None:
    """Whether a retry cue's clause says it of every step ("every step should retry twice",
    "retry each step up to 3 times", "all steps get 2 retries": "step") or of every training
    ("every model should be retried twice": "model"); None when it says neither."""
    lo = c.lo
    while lo > 0 and t.tokens[lo - 1].text not in (".", ";", ":", ",", "!", "?"):
        lo -= 1
    hi = c.hi
    while hi < len(t.tokens) and t.tokens[hi].text not in (".", ";", ":", ",", "!", "?"):
        hi += 1
    hit = next(t.finditer(EVERY_STEP, lo, hi), None)
    if hit is None:
        return None
    t.mark(hit[1], "retry")
    return "step" if hit[0].group("s") else "model"


def _feeds_itself(group: list[Action]) -> bool:
    """Whether a step of the group reads what an earlier one of it makes, of a new kind (a
    split, then the training on it); two table transforms ("(a) aggregate, (b) sample") may
    run side by side on one table."""
    def feeds(b: Action, a: Action) -> bool:     # a table feeds a training through an implicit split
        made, wanted = CATALOG[b.entry].output, set(CATALOG[a.entry].inputs.values())
        if a.entry == "write_table":   # "compute stats and write them to s.csv": what is written
            wanted = {k for spec in wanted for k in spec.rstrip("*").split("|")} | {made}
        return made in wanted or (made == TABLE and SPLIT in wanted)
    return any(feeds(b, a) and CATALOG[b.entry].output not in CATALOG[b.entry].inputs.values()
               for k, a in enumerate(group) for b in group[:k])


def _resolve_conditions(actions: list[Action], held_out: set[int] = frozenset()) -> None:
    """Each condition tests the last step before it that reports its metric. One said of held-out
    data ("if the test accuracy is under 0.8", ``held_out``: the conditions' ids) never tests a
    training's own figures, which are of the rows it was fitted on: an evaluation of that model
    on its split's held-out part is added to measure it."""
    for i, a in enumerate(actions):
        w = a.step.when
        if w is None or w.step:
            continue
        tested = next((b for b in reversed(actions[:i]) if w.metric in CATALOG[b.entry].metrics
                       and b.step.exit is None and b.step.when is None), None)
        if tested is not None and id(w) in held_out and tested.entry == "train_model":
            label = _implicit_evaluation(actions, i, tested, w.metric)
        else:
            label = tested.step.label if tested is not None else _implicit_check(actions, i, w.metric)
        if label is None:
            raise PlanRefused([f"the condition on {w.metric!r} for {a.entry} has no earlier step "
                               f"that reports {w.metric!r}"])
        cond = Cond(label, w.metric, w.op, w.value)
        for b in actions:
            if b.step.when is w:
                b.step.when = cond


def _retried_kind(t: Text, c: Cue) -> str | None:
    """The kind of step a retry names: "retry the load ...", or "retry loading x.csv" (the verb's
    gerund right after "retry")."""
    toks = t.tokens[c.lo:c.hi]
    for x, y in zip(toks, toks[1:]):
        if (x.low in ("the", "that", "this", "each", "every", "per", "when", "while") or x.low in ("retry", "retrying")) and y.low in L.RETRIED_KINDS \
                and not (y.low == "save" and x.low in ("retry", "retrying")):      # ("retry save ..." is no noun)
            return L.RETRIED_KINDS[y.low]
    return None


# words after which a condition opens a new clause rather than closing the step before it
CONJUNCTIONS = {"and", "then", "but", "so", "or"}


# the steps a condition on the share of missing values may guard: a fix for the gaps, and what is said of them
GAP_STEPS = ("impute", "clean_data", "dedup", "notify", "save_report", "stats")


def _postposed(t: Text, c: Cue) -> bool:
    """A condition written after its step's words with nothing between ("retrain it if accuracy
    is under 0.8") and closed by the sentence's end or by ', and' / ', then' before the next
    step: it guards the step before it, not the one coordinated after it."""
    k = c.lo
    while k < c.hi - 1 and t.tokens[k].low in ("but", "only"):    # "impute it only if ..., then train"
        k += 1
    # ("mean-impute, but only if >5% of values are missing, then ...": "only" after its comma looks back)
    only = any(x.low == "only" for x in t.tokens[c.lo:k])
    before = t.tokens[c.lo - 1] if c.lo else None
    if before is None or (before.kind == "punct" and not (before.text == "," and only)) or before.low in CONJUNCTIONS:
        return False
    if t.tokens[k].low not in ("if", "when", "whenever", "provided", "unless", "should"):
        return False
    j = c.hi
    # (an arrow closes it too: "g.csv -> mean-impute only if ... -> 70/30 -> ...")
    if j >= len(t.tokens) or t.tokens[j].text in (".", ";", "!", *ARROWS):
        return True
    return t.tokens[j].text == "," and j + 1 < len(t.tokens) and t.tokens[j + 1].low in ("and", "then")


def _implicit_evaluation(actions: list[Action], i: int, trained: Action, metric: str) -> str:
    """"train a knn; if the accuracy on the test set is under 0.6, alert me": the model scored on
    its split's held-out part, right before the step the condition guards (a step the condition's
    words name; it tested the training's accuracy, on the rows the model was fitted on); its label."""
    if metric not in CATALOG["evaluate_model"].metrics:
        raise PlanRefused([f"the condition tests the {metric} on held-out data, which no evaluation reports"])
    a = actions[i]
    check = DraftStep(f"{a.step.label}_eval", "evaluate_model", concurrent=a.step.concurrent,
                      inputs={"model": trained.step.label}, span="(the condition's held-out figure)")
    if metric != "score":     # the evaluation's chosen metric, as the condition names it
        check.params["metric"] = check.stated["metric"] = metric
    a.extra = [*a.extra, check]
    return check.label


def _implicit_check(actions: list[Action], i: int, metric: str) -> str | None:
    """"load r.csv, and if the missing share is over 5%, impute": a table's own measure
    (missing share, rows) tested with no step named to measure it gets the summary statistics
    step, implicit, right before the step it guards; its label, or None when no table is made
    before it."""
    if metric not in CATALOG["stats"].metrics or not any(
            CATALOG[b.entry].output == CATALOG["stats"].inputs["data"] for b in actions[:i]):
        return None
    a = actions[i]
    check = DraftStep(f"_check_{a.step.label}", "stats", implicit=True, concurrent=a.step.concurrent,
                      span="(implicit: stats, to measure what the condition tests)")
    a.extra = [*a.extra, check]
    return check.label


def _evaluated_on(t: Text, actions: list[Action], i: int) -> bool:
    """"train a knn and evaluate it on a 20% holdout": the split is the object of the evaluation
    right after a training, so it is the training's split too (the training made its own 80/20
    one, and the 20% one went unread)."""
    if not (i > 1 and actions[i].entry == "split_data" and actions[i - 1].entry == "evaluate_model"
            and actions[i - 2].entry == "train_model" and actions[i - 1].sentence == actions[i].sentence):
        return False
    j = actions[i].zlo - 1
    while j > actions[i - 1].lo and t.tokens[j].low in ("a", "an", "the"):
        j -= 1
    return t.tokens[j].low in ("on", "against", "using", "with")


def _model_evaluated(t: Text, actions: list[Action], i: int) -> bool:
    """"evaluate a knn on iris.csv": a model named as the object of the evaluation just before
    it (by its kind, no verb of its own) is trained first, then evaluated."""
    a = actions[i]
    if not (i and a.entry == "train_model" and a.verbless and actions[i - 1].entry == "evaluate_model"
            and actions[i - 1].sentence == a.sentence):
        return False
    # "how accurate is a knn on x.csv?", "how well does a logistic model do": the question's model
    glue = ("a", "an", "is", "are", "does", "do", "would", "will") if t.tokens[actions[i - 1].lo].low == "how" else ("a", "an")
    return all(x.low in glue for x in t.tokens[actions[i - 1].trig_end:a.lo]) and not any(
        x.low in ("the", "this", "that", "our", "my", "its") for x in t.tokens[a.lo:a.trig_end])   # "the knn": one trained before


def _plotted_transformed(t: Text, actions: list[Action], i: int) -> bool:
    """"plot the normalized price column" with no normalize before: the table is normalized,
    then plotted (the plot drew the raw column, and the normalize ran after it for nothing)."""
    a = actions[i]
    if not (i and a.entry in L.TABLE_TRANSFORMS and actions[i - 1].entry == "plot"
            and actions[i - 1].sentence == a.sentence and t.tokens[a.lo].low.endswith("ed")):
        return False
    return all(x.low in ("the", "its") for x in t.tokens[actions[i - 1].trig_end:a.lo])


# the figures said as the object of the step before them, by the steps that take them
FIGURE_OBJECTS = {"aggregate": ("plot", "write_table", "save_report"), "evaluate_model": ("save_report", "plot", "write_table")}


def _figure_object(t: Text, actions: list[Action], i: int) -> bool:
    """"plot the totals per city", "chart the average price per city", "report the accuracy on
    the test set": a per-group figure (or a held-out score) said as the object of the step just
    before it is computed first (the plot drew the raw table, and the aggregate ran after it
    for nothing; the report showed the training's own accuracy)."""
    a = actions[i]
    if not (i and actions[i - 1].entry in FIGURE_OBJECTS.get(a.entry, ()) and actions[i - 1].sentence == a.sentence):
        return False
    return all(x.low in ("the", "its", "their", "a", "an", "me", "us") for x in t.tokens[actions[i - 1].trig_end:a.lo])


def held_out_for(t: Text, actions: list[Action], k: int) -> bool:
    """Whether action k is "for evaluation" said of the share the split just before it holds
    out, with no model made before it ("hold out 20% for evaluation, train a knn")."""
    a = actions[k]
    return (k > 0 and a.entry == "evaluate_model" and actions[k - 1].entry == "split_data"
            and a.trig_end - a.lo == 1 and t.tokens[a.lo].low in ("evaluation", "evaluating")
            and t.tokens[a.lo - 1].low in ("for", "as")
            and not any(CATALOG[b.entry].output in (MODEL, CHECKPOINT, ADAPTERS, DLRM) for b in actions[:k]))


def held_out_evaluation(t: Text, actions: list[Action]) -> None:
    """"hold out 20% for evaluation, train a knn, and deploy it": the evaluation the share is held
    out for evaluates the model trained next (before any model it was a refusal)."""
    for k in range(len(actions)):
        if not held_out_for(t, actions, k):
            continue
        nxt = next((b for b in actions[k + 1:] if b.entry == "train_model"), None)
        if nxt is not None:
            a = actions.pop(k)
            actions.insert(actions.index(nxt) + 1, a)
        return


def _hoist(t: Text, actions: list[Action]) -> None:
    """Producers named after their consumer ("train a model on generated data with a
    train/test split") move before it, and on before each earlier step that still lacks what they
    make ("train a model on normalized x.csv": the load before the normalize too), never past
    one that has it: "load p.csv, dedup it, and join it with fx.csv" moved the load of fx.csv
    before the join and then before the dedup, which read fx.csv instead of p.csv."""
    changed = True
    guard = 0
    hoisted: set[int] = set()
    # "train a linear regression; evaluate on 20% held out": the evaluation's split is the
    # training's too, across the sentence between them
    evaluated = {id(a) for i, a in enumerate(actions) if _evaluated_on(t, actions, i) or (
        a.prepositional and i > 1 and a.entry == "split_data" and actions[i - 1].entry == "evaluate_model"
        and actions[i - 2].entry == "train_model" and actions[i - 1].sentence == a.sentence)}
    while changed and guard < 20:
        changed, guard = False, guard + 1
        for i, a in enumerate(actions):
            if not a.prepositional and not (a.entry == "split_data" and i and actions[i - 1].entry == "train_model") \
                    and not _evaluated_on(t, actions, i) and not _model_evaluated(t, actions, i) \
                    and not _plotted_transformed(t, actions, i) and not _figure_object(t, actions, i):
                continue
            out = CATALOG[a.entry].output
            for j in range(i - 1, -1, -1):
                b = actions[j]
                if b.sentence != a.sentence and not (id(a) in evaluated and b.entry == "train_model" and j == i - 1):
                    break
                needs = [k for spec in CATALOG[b.entry].inputs.values() for k in spec.rstrip("*").split("|")]
                # a report takes any result: the statistics or score it is said to hold ("a report with its
                # statistics", "report the accuracy on the test set")
                if out in needs or (out == "table" and "split" in needs) or "any" in needs:
                    if id(a) in hoisted and any(CATALOG[x.entry].output == out and not CATALOG[x.entry].inputs
                                                for x in actions[:j]):
                        break      # already before its own step; this one has a source of what it makes
                    actions.insert(j, actions.pop(i))
                    hoisted.add(id(a))
                    changed = True
                    break
            if changed:
                break
