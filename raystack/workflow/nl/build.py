"""Draft -> validated IR, shared by the rule planner and the model planner.

Checks every step against the catalog (names, parameters, what a condition or loop may test,
which steps may be exit handlers, deletions confined to the run's scratch space), wires data
edges by the kinds steps produce and consume (inserting a split where a model needs train and
test sets from a table, marked implicit), fans steps out over a map, and builds the IR with
the Python API, so its validation (types, part configs, cycles) applies to every plan.
Anything that does not hold is a :class:`PlanRefused` naming the step and the rule.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import replace
from typing import Any, Iterator

from raystack.workflow.api import Out, Workflow
from raystack.workflow.catalog import ADAPTERS, CATALOG, CHECKPOINT, DLRM, EVALUATION, MODEL, SPLIT, TABLE, CatalogEntry
from raystack.workflow.ir import WorkflowError, WorkflowIR
from raystack.workflow.nl.extract import TABLE_EXT
from raystack.workflow.nl.plan import EXIT_KINDS, Draft, DraftStep, Plan, PlanRefused
from raystack.workflow.nl.safety import outside_run, unsafe_destination
from raystack.workflow.nl.step_values import check_values
from raystack.workflow.nl.table_refs import (check_final_results, check_named_tables, check_no_write_over_input,
                                             check_sources_read, check_unread_transforms, check_written_results, ends_of_one_table,
                                             keep_targets, order_table_sides, upstream)

OPS = ("==", "!=", "<", "<=", ">", ">=")
# A step needing kind K when only kind J exists gets this implicit step inserted after J.
IMPLICIT = {(SPLIT, TABLE): "split_data"}
MAX_MAP_VALUES = 64


def _kinds(spec: str) -> tuple[list[str], bool]:
    many = spec.endswith("*")
    return spec.rstrip("*").split("|"), many


def _check_destination(s: DraftStep) -> None:
    """"export it to /etc/model.json", "save it to ~/.bashrc": a request may not point a step that
    writes at a system folder or a hidden file (relative paths go under the run's output
    directory; an absolute path elsewhere, a data volume, is written as asked)."""
    values = [v for p, v in s.params.items() if p in ("path", "directory")]
    if s.map is not None and s.map[0] in ("path", "directory"):
        values += list(s.map[1])
    for v in values:
        if isinstance(v, str) and unsafe_destination(v):
            raise PlanRefused([f"{s.entry} would write to {v!r}: a planned step never writes to a system "
                               "folder, a hidden file or up out of its output directory"], "destructive")


def check_step(s: DraftStep, known: dict[str, DraftStep]) -> CatalogEntry:
    """The step's catalog entry, or PlanRefused naming what is wrong with the step."""
    e = CATALOG.get(s.entry)
    if e is None:
        raise PlanRefused([f"{s.label}: no catalog step {s.entry!r}"])
    params = e.params()
    for p in s.params:
        if p not in params and p not in e.inputs:
            raise PlanRefused([f"{s.label}: {s.entry} has no parameter {p!r}"])
    if s.exit is not None:
        if s.exit not in EXIT_KINDS:
            raise PlanRefused([f"{s.label}: exit kind {s.exit!r}; expected one of {EXIT_KINDS}"])
        if not e.exit_ok:
            raise PlanRefused([f"{s.label}: {s.entry} cannot run as an exit handler"])
    if s.entry == "cleanup":
        d = str(s.params.get("directory", "tmp"))
        if outside_run(d):
            raise PlanRefused([f"cleanup of {d!r}: a plan may delete only inside the run's "
                               "scratch space (paths outside it are allowed by the workflow "
                               "config's delete_paths, never by a request)"], "destructive")
    if e.side_effect:
        _check_destination(s)
    check_values(s)
    if s.map is not None:
        param, values = s.map
        if param not in params and param not in e.inputs:
            raise PlanRefused([f"{s.label}: cannot map over {param!r}, not a parameter of "
                               f"{s.entry}"])
        if not values or len(values) > MAX_MAP_VALUES:
            raise PlanRefused([f"{s.label}: a map needs 1 to {MAX_MAP_VALUES} values"])
    for c, what in ((s.when, "condition"), (s.loop, "loop")):
        if c is None:
            continue
        if c.op not in OPS:
            raise PlanRefused([f"{s.label}: {what} operator {c.op!r}; expected one of {OPS}"])
    if s.when is not None:
        tested = known.get(s.when.step)
        if tested is None:
            raise PlanRefused([f"{s.label}: the condition tests {s.when.step!r}, which is not "
                               "an earlier step"])
        te = CATALOG[tested.entry]
        if s.when.metric not in te.metrics:
            raise PlanRefused([f"{s.label}: the condition tests {s.when.metric!r}, which "
                               f"{tested.entry} does not report (it reports {list(te.metrics)})"])
    if s.loop is not None:
        if s.loop.metric not in e.metrics:
            raise PlanRefused([f"{s.label}: the loop waits for {s.loop.metric!r}, which "
                               f"{s.entry} does not report (it reports {list(e.metrics)})"])
        if s.loop.max_iterations < 1:
            raise PlanRefused([f"{s.label}: a loop needs a bound"], "unbounded")
        if s.map or s.tune:
            raise PlanRefused([f"{s.label}: a loop cannot also be a map or a tune"])
    if s.tune is not None:
        if e.side_effect:
            raise PlanRefused([f"{s.label}: {s.entry} changes the world and cannot be tuned"])
        bad = [k for k in s.tune.space if k not in params]
        if bad:
            raise PlanRefused([f"{s.label}: cannot tune {bad}, not parameters of {s.entry}"])
        if s.tune.metric not in e.metrics:
            raise PlanRefused([f"{s.label}: tune metric {s.tune.metric!r} is not reported by "
                               f"{s.entry}"])
    if s.retries < 0:
        raise PlanRefused([f"{s.label}: retries must be >= 0"])
    return e


class _Wiring:
    """Data edges by kind, in draft order; inserts implicit conversions."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.out: list[DraftStep] = []
        self.n_implicit = 0

    def producers(self, kinds: list[str], before: int, consumer: DraftStep | None = None) -> list[DraftStep]:
        """Earlier steps making one of ``kinds``; never a member of the consumer's own parallel
        group (steps side by side do not feed each other), nor a step of the other branch of
        the consumer's condition (it does not run when the consumer does)."""
        group = consumer.concurrent if consumer is not None else None
        cond = consumer.when if consumer is not None else None
        return [s for s in self.out[:before] if s.exit is None and not (group and s.concurrent == group)
                and not (cond is not None and s.when == cond and s.otherwise != consumer.otherwise)
                and (self.output(s) in kinds or ("any" in kinds and self.output(s))
                     or (s.entry == "select_best" and EVALUATION in kinds))]   # a pick is a result too

    def output(self, s: DraftStep) -> str | None:
        """What the step makes: its catalog output, except that a selection among part runs makes
        what it selects ("keep the base with the lower val loss" is a checkpoint, the fine-tune's
        base; the best of three DLRM runs is a DLRM model to evaluate; the best of three trained
        models is a model: "pick the one with the lowest val loss, evaluate it" evaluates it)."""
        if s.entry == "select_best" and s.inputs.get("results"):
            src = s.inputs["results"]
            label = src[0] if isinstance(src, list) else src
            chosen = self._wired(label)
            if chosen is not None and self.output(chosen) in (*SELECTED_ARTIFACTS, MODEL):
                return self.output(chosen)
        return CATALOG[s.entry].output

    def wire(self) -> list[DraftStep]:
        for s in self.draft.steps:
            e = CATALOG[s.entry]
            pname, sources = self._each_input(s, e)
            own = [_own_destination(s, e, k) for k in range(len(sources))] if len(sources) > 1 else []
            for k, src in enumerate(sources or [None]):
                one = s if k == 0 else replace(s, label=f"{s.label}{chr(ord('a') + k)}", inputs={},
                                               params=dict(s.params), stated=dict(s.stated), after=list(s.after),
                                               follows=list(s.follows))
                if src is not None:
                    one.inputs[pname] = src
                if own:     # a copy per result: each its own destination
                    one.params.update(own[k])
                self._wire_one(one, e)
                self._regroup_from_source(one)
                self._check_plotted_metric(one)
                self._plotted_column_from_table(one)
                self._evaluate_on_own_split(one)
                self._report_what_was_written(one)
                self.out.append(one)
        return self.out

    def _wired(self, label: str) -> DraftStep | None:
        """The step wired so far under ``label``."""
        return next((x for x in self.out if x.label == label), None)

    def _read_labels(self) -> set[str]:
        """The labels of the steps some step wired so far reads from."""
        return {x for o in self.out for x in o.input_labels()}

    def _each_input(self, s: DraftStep, e: CatalogEntry) -> tuple[str, list[str]]:
        """A step said of several results runs once per result (a copy each, in order), so what
        follows reads every one: "load a.csv and b.csv in parallel, clean both, and join them"
        (it cleaned only the last table, and the join paired it with itself); "train a knn ...
        and a logistic model ..., evaluate each, and keep the better" (it evaluated the last
        model only, and the selection had one candidate). Returns (parameter, sources); no
        sources when the step reads one result."""
        if list(e.inputs) == ["data"] and e.inputs["data"] == TABLE:
            pname, kind, said = "data", TABLE, EACH_TABLE
        elif s.entry in ("evaluate_model", "deploy_model", "export_model"):
            pname, kind, said = "model", MODEL, EACH_MODEL
        elif s.entry in ("evaluate_adapters", "serve_adapters"):   # two fine-tunes, "evaluate all of them"
            pname, kind, said = "adapters", ADAPTERS, EACH_MODEL
        elif s.entry == "save_report":    # "a logistic model and a knn ... report the AUC of each" (the last only)
            pname, kind, said = "result", None, PER_RESULT
        else:
            return "", []
        if pname in s.inputs or s.map is not None or not (said.search(s.span) or (
                kind == TABLE and len(set(TABLE_FILES.findall(s.span.lower()))) > 1)):
            return "", []
        used = self._read_labels()
        fresh = []
        for p in reversed(self.producers([kind] if kind else [EVALUATION, MODEL], len(self.out), s)):   # the latest results nothing reads yet
            if p.label in used:
                break
            fresh.insert(0, p.label)
        if len(fresh) < 2:   # one step (a map, or a load over several files, fans out what follows by itself)
            return "", []
        if s.entry in ("deploy_model", "export_model"):
            # "train a knn and a logistic model, and deploy both": it deployed the last one only
            raise PlanRefused([f"{s.span.strip()!r} is said of {len(fresh)} models, but {s.entry} takes one: "
                               "say it once for each model, with its own name or path"])
        return pname, fresh[-2:] if re.search(r"\bboth\b", s.span, re.I) else fresh

    def _report_what_was_written(self, s: DraftStep) -> None:
        """"save the evaluation as a table in e.parquet and as a report in e.json": the report is
        of what the table holds (it reported the written file: its path and row count)."""
        src = s.inputs.get("result")
        written = self._wired(src) if s.entry == "save_report" and isinstance(src, str) else None
        if written is not None and written.entry == "write_table" and isinstance(written.inputs.get("data"), str):
            s.inputs["result"] = written.inputs["data"]

    def _evaluate_on_own_split(self, s: DraftStep) -> None:
        """"load a.csv, split it and train logistic; then load b.csv, split it and train knn;
        evaluate both models": each model is scored on the held-out part of the split it was
        trained on (the latest split was b.csv's, so the a.csv model was scored on b.csv)."""
        if s.entry != "evaluate_model" or not isinstance(s.inputs.get("model"), str):
            return
        model = self._wired(s.inputs["model"])
        own = model.inputs.get("data") if model is not None and model.entry == "train_model" else None
        split = self._wired(own) if isinstance(own, str) else None
        if split is not None and own != s.inputs.get("data") and self.output(split) == SPLIT:
            s.inputs["data"] = own

    def _plotted_column_from_table(self, s: DraftStep) -> None:
        """A plot of a named column, or of "the data", reads a table: "compute stats and plot the
        temp column" and "compute the stats and make a chart of the data" drew the statistics'
        figures (a dict has no columns); it reads the table the statistics were computed on, and
        still follows them."""
        of_data = s.entry == "plot" and re.search(r"\b(?:of|plot|chart|graph)\s+(?:the\s+|all\s+the\s+)?(?:data|dataset|table|rows|records)\b",
                                                  s.span, re.I) is not None
        # ("compute column statistics, and if ..., write the table to out/x.csv": the data written, not its statistics)
        written = s.entry == "write_table" and re.search(r"\b(?:write|save|store|export|put)\s+(?:the\s+|all\s+the\s+)?(?:data|dataset|table|rows|records)\b",
                                                         s.span, re.I) is not None
        if not written and (s.entry != "plot" or s.params.get("column") is None and (s.map is None or s.map[0] != "column")
                            and not of_data):
            return
        src = self._wired(s.inputs.get("data")) if isinstance(s.inputs.get("data"), str) else None
        if src is None or self.output(src) == TABLE:
            return
        # (a write reads past the statistics only, to a file its name does not call statistics: "write the
        # table to out/flights_stats.parquet" writes them)
        if written and (src.entry != "stats" or re.search(r"stat|summar|profile|describe", str(s.params.get("path", "")), re.I)):
            return
        by_label = {x.label: x for x in self.out}
        up = [x for x in upstream(src, by_label) if self.output(x) == TABLE]
        if not up:
            raise PlanRefused([f"{s.span!r} plots a column, but it reads {src.entry}, which makes no table"])
        s.inputs["data"] = up[0].label
        s.after = list(dict.fromkeys([*s.after, src.label]))

    def _check_plotted_metric(self, s: DraftStep) -> None:
        """A plot of a named metric reads it from a step that reports it ("plot the validation
        loss" after a pretraining run), never from a table that has no such figure."""
        metric = s.params.get("metric") if s.entry == "plot" else None
        if metric is None or "data" not in s.inputs:
            return
        srcs = s.inputs["data"] if isinstance(s.inputs["data"], list) else [s.inputs["data"]]
        by_label = {x.label: x for x in self.out}
        for label in srcs:
            src = by_label.get(label)
            if src is not None and metric not in CATALOG[src.entry].metrics:
                # "train ..., evaluate it and plot the val loss": the training run upstream
                # reports it; the plot reads that run and still follows the evaluation
                up = [x for x in upstream(src, by_label) if metric in CATALOG[x.entry].metrics]
                if isinstance(s.inputs["data"], list) or not up:
                    raise PlanRefused([f"the plot of {metric!r} reads {src.entry}, which does not report it "
                                       f"(it reports {list(CATALOG[src.entry].metrics)})"])
                s.inputs["data"] = up[0].label
                s.after = list(dict.fromkeys([*s.after, src.label]))

    def _regroup_from_source(self, s: DraftStep) -> None:
        """"the average price per city and the count per city too": an aggregate by the same
        key as the aggregate it would read has one row per group to count or sum (it counted 1
        per city); it reads what that aggregate read."""
        if s.entry != "aggregate" or not isinstance(s.inputs.get("data"), str):
            return
        src = self._wired(s.inputs["data"])
        if src is not None and src.entry == "aggregate" and src.params.get("by") is not None \
                and src.params.get("by") == s.params.get("by") and isinstance(src.inputs.get("data"), str):
            s.inputs["data"] = src.inputs["data"]
            s.after = list(dict.fromkeys([*s.after, src.label]))

    def _fresh_table_after(self, split: DraftStep, s: DraftStep) -> bool:
        """Whether a table was made after ``split`` that nothing reads yet, where the split is
        already some model's: a model trained after it trains on that table, not on the split
        made before it from another one. A split no step reads yet stays the next model's."""
        at = self.out.index(split)
        used = self._read_labels()
        if split.label not in used:
            return False   # "split it 70/30, normalize the data, and train": the split asked for is the model's
        made = [p for p in self.producers([TABLE], len(self.out), s) if self.out.index(p) > at]
        return bool(made) and made[-1].label not in used

    def _read_beside(self, s: DraftStep, e: CatalogEntry) -> None:
        """"take the first 20 rows and compute stats; in parallel, take the last 20 rows ...": a
        clause beside the one before reads the table that one read (or the table its source
        made), not what it made from it."""
        beside = self._wired(s.beside) if s.beside else None
        if beside is None or list(e.inputs) != ["data"] or "data" in s.inputs or TABLE not in e.inputs["data"].split("|"):
            return
        read = beside.inputs.get("data") if beside.inputs else beside.label
        src = self._wired(read) if isinstance(read, str) else None
        if src is not None and self.output(src) == TABLE:
            s.inputs["data"] = read

    def _wire_one(self, s: DraftStep, e: CatalogEntry) -> None:
        self._read_beside(s, e)
        tables_used: list[str] = []
        table_inputs = [p for p, spec in e.inputs.items() if spec == TABLE and p not in s.params]
        if len(table_inputs) > 1:  # a join: the last tables made, in the order they were named
            made = self.producers([TABLE], len(self.out))
            # tables nothing reads yet: "load sales.csv and returns.csv, dedup the returns, then
            # join them" joins sales with the deduplicated returns, not returns with its own dedup
            used = self._read_labels()
            leaves = [p for p in made if p.label not in used]
            found = (leaves if len(leaves) >= len(table_inputs) else made)[-len(table_inputs):]
            if len(found) < len(table_inputs):
                raise PlanRefused([f"{s.entry} needs {len(table_inputs)} tables, but only "
                                   f"{len(found)} earlier step(s) make one"])
            for p, src in zip(table_inputs, found):
                s.inputs[p] = src.label
            tables_used = [x.label for x in found]
        for pname, spec in e.inputs.items():
            if pname in s.inputs:
                continue
            kinds, _many = _kinds(spec)
            if pname in s.params:          # given literally (e.g. mLoRA's base path)
                continue
            found = [p for p in self.producers(kinds, len(self.out), s) if p.label not in tables_used]
            if found and kinds == [SPLIT] and s.entry == "train_model" and self._fresh_table_after(found[-1], s):
                found = []   # "a knn on x.csv and a logistic model on y.csv": y's own split, not x's
            if _many and found:  # a list input takes every result since the last such step,
                last = max((i for i, x in enumerate(self.out) if x.entry == s.entry), default=-1)
                since = []           # of the first kind it accepts that has any
                for k in kinds:
                    since = [p for p in found if self.out.index(p) > last and self.output(p) == k]
                    if since:
                        break
                if since:
                    s.inputs[pname] = [p.label for p in since] if len(since) > 1 else since[0].label
                    continue
            if not found:
                conv = next((IMPLICIT[(k, have)] for k in kinds for (need, have) in IMPLICIT
                             if need == k and self.producers([have], len(self.out))), None)
                if conv is not None:
                    src = self.producers([TABLE], len(self.out))[-1]
                    self.n_implicit += 1
                    imp = DraftStep(f"_{conv}{self.n_implicit}", conv, inputs={"data": src.label},
                                    implicit=True, concurrent=src.concurrent if src.concurrent
                                    and s.concurrent else None)
                    self.out.append(imp)
                    found = [imp]
            if not found:
                if pname in e.optional_inputs:
                    continue
                raise PlanRefused([f"{s.entry} needs a {' or '.join(kinds)} input, but no earlier "
                                   f"step makes one" + (f" (in {s.span!r})" if s.span else "")])
            src = found[-1]
            s.inputs[pname] = src.label
            if spec == TABLE:
                tables_used.append(src.label)


# an evaluation said of several models ("evaluate each", "evaluate them both")
EACH_MODEL = re.compile(r"\b(?:both|each(?:\s+of\s+them|\s+one)?|them|all\s+of\s+them|them\s+all|every\s+one|"
                        r"all\s+(?:the\s+)?(?:two|three|four|five|six|NUM\d+|\d+)(?:\s+(?:models|classifiers|of\s+them))?)\b", re.I)
# a one-table step said of several tables ("clean both", "dedup each of them", "normalize them all",
# "dedup x.csv and y.csv separately"); one naming two table files is said of both too
EACH_TABLE = re.compile(r"\b(?:both|each\s+of\s+them|each\s+one|them\s+all|all\s+of\s+them|each\s+table|every\s+table|"
                        r"separately|individually|one\s+by\s+one|"
                        r"(?:of|to|on)\s+each(?!\s+[a-z])|each(?=\s*(?:[,;.]|and\b|then\b|$))|them)\b", re.I)


TABLE_FILES = re.compile(r"[\w./-]+(?:" + "|".join(re.escape(x) for x in TABLE_EXT) + r")\b")

# part artifacts a selection passes on as what they are (a table model's selection stays an evaluation)
SELECTED_ARTIFACTS = (CHECKPOINT, DLRM)


def _cond_ref(outs: dict[str, Any], label: str, metric: str) -> Out:
    o = outs[label]
    if isinstance(o, list):
        if len(o) != 1:
            raise PlanRefused([f"the condition on {metric!r} refers to several results of "
                               f"{label!r}; add a step that selects one"])
        o = o[0]
    return o[metric]


def _check_best_of_several(s: DraftStep, by_label: dict[str, DraftStep], outs: dict[str, Any]) -> None:
    """A selection chooses between several results: "fine-tune rank-8 and rank-16 adapters ...,
    keep the better one" wired the one checkpoint it could read as the only candidate (adapters
    are not among what select_best compares), and "kept" it."""
    results = s.inputs.get("results") if s.entry == "select_best" else None
    labels = results if isinstance(results, list) else [results] if isinstance(results, str) else []
    if not labels or any(by_label[x].tune is not None for x in labels if x in by_label):
        return
    if sum(len(outs[x]) if isinstance(outs.get(x), list) else 1 for x in labels) == 1:
        one = by_label.get(labels[0])
        raise PlanRefused([f"{s.span.strip()!r} keeps the best of one result ({one.entry if one else labels[0]}): "
                           "select_best compares several evaluations, models, checkpoints or DLRM models"])
    # "a knn for y and a logistic regression for z, deploy the better one": scores of two tasks
    targets = {m.params.get("target") for m in map(lambda x: _trained(by_label, x), labels) if m is not None}
    if len(targets) > 1:
        raise PlanRefused([f"{s.span.strip()!r} compares models that predict different columns ({', '.join(sorted(map(str, targets)))}): "
                           "their scores are of different tasks"])


def _trained(by_label: dict[str, DraftStep], label: str) -> DraftStep | None:
    """The training a result comes from: the step itself, or the model an evaluation scored."""
    s = by_label.get(label)
    if s is not None and s.entry == "evaluate_model":
        s = by_label.get(s.inputs.get("model")) if isinstance(s.inputs.get("model"), str) else None
    return s if s is not None and s.entry == "train_model" else None


def build(draft: Draft, name: str = "planned") -> Plan:
    """Wire, check and build a draft into a validated Plan (PlanRefused when it cannot)."""
    if not draft.steps:
        raise PlanRefused(["no step found in the request"], "out_of_scope")
    labels = [s.label for s in draft.steps]
    if len(set(labels)) != len(labels):
        raise PlanRefused([f"duplicate step labels {labels}"])
    known: dict[str, DraftStep] = {}
    for s in draft.steps:
        check_step(s, known)
        known[s.label] = s
    steps = _Wiring(draft).wire()
    check_named_tables(steps)
    check_no_write_over_input(steps)
    order_table_sides(steps)
    ends_of_one_table(steps)
    check_sources_read(steps)
    check_written_results(steps)
    check_unread_transforms(steps)
    keep_targets(steps)
    by_label = {s.label: s for s in steps}
    reaches: dict[str, set[str]] = {}
    for s in steps:  # "then": a step runs after the ones written before it, data or not
        given = set(s.input_labels())
        if s.exit is None:       # an ordering edge only where no data path already orders them
            s.after += [f for f in s.follows if f in by_label and f not in s.after
                        and f not in set().union(given, *(reaches.get(g, set()) for g in given))]
        deps = given | set(s.after) | ({s.when.step} if s.when else set())
        reaches[s.label] = deps.union(*(reaches.get(d, set()) for d in deps))
    handing_on = _handing_on(steps)
    check_final_results(steps, handing_on)
    wf = Workflow(name, description=draft.text)
    outs: dict[str, Any] = {}
    ids: dict[str, list[str]] = {}
    tuned: str | None = None
    for s in steps:
        e = CATALOG[s.entry]
        for lab in [*s.inputs.values(), *s.after]:
            for x in (lab if isinstance(lab, list) else [lab]):
                if x not in outs:
                    raise PlanRefused([f"{s.label}: input from {x!r}, which is not an earlier step"])
        _check_best_of_several(s, by_label, outs)
        try:
            outs[s.label], ids[s.label] = _add(wf, s, e, outs, tuned, handing_on.get(s.label),
                                               gather=_gathers(s, by_label, outs))
        except WorkflowError as err:
            if isinstance(err, PlanRefused):
                raise
            raise PlanRefused([f"{s.label} ({s.entry}): {err.message}"]) from None
        if s.tune is not None:
            tuned = s.label
    try:
        ir: WorkflowIR = wf.build()
    except WorkflowError as err:
        raise PlanRefused([f"the plan does not validate: {err}"]) from None
    return Plan(ir, Draft(draft.text, steps), ids)


@contextlib.contextmanager
def _constructs(wf: Workflow, s: DraftStep, outs: dict[str, Any]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        if s.when is not None:
            ref = _cond_ref(outs, s.when.step, s.when.metric)
            stack.enter_context(wf.when(ref, s.when.op, s.when.value, negate=s.otherwise))
        if s.concurrent:
            stack.enter_context(wf.concurrent(s.concurrent))
        yield


def _best_refs(s: DraftStep, tuned: str | None, outs: dict[str, Any]) -> dict[str, Any]:
    """"retrain with the best k": each such parameter read from the latest tuned step's output."""
    if not s.refs:
        return {}
    if tuned is None:
        raise PlanRefused([f"{s.label}: 'the best {', '.join(s.refs)}' but no earlier step searches for it"])
    src = outs[tuned]
    if isinstance(src, list):
        raise PlanRefused([f"{s.label}: the best {', '.join(s.refs)} of several searches is ambiguous"])
    return {p: src[p] for p in s.refs}


# side-effect steps that publish under a name outside their own step directory: fanned out over
# several results, each item needs its own name, or the last one replaces the others
NAMED_DESTINATIONS = {"deploy_model": ("name", "model")}


def _own_destination(s: DraftStep, e: CatalogEntry, i: int) -> dict[str, Any]:
    """"deploy them" after two models: 'model-1' and 'model-2', not 'model' twice (a file a
    step writes under a relative path goes into that step's own directory already)."""
    if e.name not in NAMED_DESTINATIONS:
        return {}
    param, default = NAMED_DESTINATIONS[e.name]
    return {param: f"{s.params.get(param, default)}-{i + 1}"}


def _is_transform(s: DraftStep) -> bool:
    """A step that turns one table into another (clean, impute, dedup, normalize, sample...)."""
    e = CATALOG[s.entry]
    return (list(e.inputs) == ["data"] and e.inputs["data"] == e.output and isinstance(s.inputs.get("data"), str)
            and s.map is None and s.loop is None)


def _handing_on(steps: list[DraftStep]) -> dict[str, str]:
    """Conditional table transforms: label -> the parameter whose table they hand on when
    skipped, so the steps after them run either way ("if over 5% is missing, impute; then
    train"). An if/else pair of transforms on the same table ("impute them, otherwise clean it")
    is chained, the else branch reading the if branch's output: whichever ran, what follows
    reads its table (the else branch hands on the if branch's table when it is skipped)."""
    out = {}
    for k, s in enumerate(steps):
        if s.when is None or s.otherwise or not _is_transform(s):
            continue
        out[s.label] = "data"
        other = next((o for o in steps[k + 1:] if o.otherwise and o.when is not None and o.when.step == s.when.step), None)
        if other is not None and _is_transform(other) and other.inputs["data"] == s.inputs["data"]:
            other.inputs["data"] = s.label
            out[other.label] = "data"
    return out


# "plot their accuracies", "write the scores to out/s.csv" after several evaluations: one chart,
# one table of them all; "a report for each", "plot each one" stay one per result
GATHERED = re.compile(r"\b(?:their|them|all|both|together|scores|results|accuracies|losses|aucs|metrics|"
                      r"(?:one|a\s+single|single|combined|joint)\s+(?:table|chart|plot|file|report)|over\s+the\s+(?:two|three|four|lot))\b", re.I)
# ("with 2 retries each", "each load should get 2 retries", "let each load retry twice": the retries' "each", not the results')
PER_RESULT = re.compile(r"\b(?<!retries\s)(?<!retry\s)(?:each|every|per|apiece|separately|respectively|individually)\b"
                        r"(?!\s+(?:load|read|write|save|step|training|fit)\s+(?:should\s+|must\s+|will\s+|can\s+|may\s+)?"
                        r"(?:get|gets|have|has|retry|retries|be\s+retried|is\s+retried)\s)", re.I)   # ("let each load retry twice")


def _gathers(s: DraftStep, by_label: dict[str, DraftStep], outs: dict[str, Any]) -> bool:
    """Whether a chart of one metric or a table of scores reads several evaluations (or
    models) at once: one step over all of them, not one per result."""
    if not (s.entry in ("write_table", "save_report") or (s.entry == "plot" and s.params.get("metric"))):
        return False
    src = s.inputs.get(next(iter(CATALOG[s.entry].inputs)))   # their one input: data, or a report's result
    if not isinstance(src, str) or not isinstance(outs.get(src), list) or src not in by_label:
        return False
    # (a report is a JSON of what it is given: "put all three into a single report" over loaded tables too)
    kinds = (EVALUATION, MODEL, TABLE) if s.entry == "save_report" else (EVALUATION, MODEL)
    return (CATALOG[by_label[src].entry].output in kinds
            and bool(GATHERED.search(s.span)) and not PER_RESULT.search(s.span))


def _add(wf: Workflow, s: DraftStep, e: CatalogEntry, outs: dict[str, Any],
         tuned: str | None = None, passthrough: str | None = None, gather: bool = False) -> tuple[Any, list[str]]:
    fn = e.function()
    ins = {p: ([outs[x] for x in lab] if isinstance(lab, list) else outs[lab])
           for p, lab in s.inputs.items()}
    ins.update(_best_refs(s, tuned, outs))
    after = [o for lab in s.after for o in (outs[lab] if isinstance(outs[lab], list) else [outs[lab]])]
    opts: dict[str, Any] = {"span": s.span}
    if passthrough is not None:
        opts["passthrough"] = passthrough
    if s.retries:
        opts["retries"] = s.retries
    if after:
        opts["after"] = after
    with _constructs(wf, s, outs):
        if s.exit is not None:
            kw = {p: (v[0] if isinstance(v, list) and len(v) == 1 else v) for p, v in ins.items()}
            o = wf.on_exit(fn, kind=s.exit, id=s.label, span=s.span, args={**kw, **s.params})
            return o, [o.step_id]
        fan = {p: v for p, v in ins.items() if isinstance(v, list)
               and not e.inputs.get(p, "").endswith("*") and not gather}
        many = {p: v for p, v in ins.items() if e.inputs.get(p, "").endswith("*")}
        for p, v in many.items():  # a list input takes every result, however they were made
            flat = []
            for x in (v if isinstance(v, list) else [v]):
                flat.extend(x if isinstance(x, list) else [x])
            ins[p] = flat
        if s.loop is not None:
            if fan:
                raise PlanRefused([f"{s.label}: a loop over several inputs is not supported"])
            o = wf.loop(fn, max_iterations=s.loop.max_iterations, carry=e.loop_carry,
                        until=(s.loop.metric, s.loop.op, s.loop.value), id=s.label,
                        args={**ins, **s.params}, **opts)
            return o, [o.step_id]
        if s.map is not None:
            if fan:
                raise PlanRefused([f"{s.label}: a map over a step that is already fanned out"])
            param, values = s.map
            o = wf.map(fn, list(values), over=param, id=s.label, tune=s.tune,
                       args={**ins, **s.params}, **opts)
            return o, [x.step_id for x in o]
        if fan:
            n = {len(v) for v in fan.values()}
            if len(n) != 1:
                raise PlanRefused([f"{s.label}: inputs fanned out to different sizes {sorted(n)}"])
            res = []
            with wf.group(f"map:{s.label}"):
                for i in range(n.pop()):
                    kw = {p: (v[i] if p in fan else v) for p, v in ins.items()}
                    res.append(wf.step(fn, id=f"{s.label}[{i}]", tune=s.tune,
                                       args={**kw, **s.params, **_own_destination(s, e, i)}, **opts))
            return res, [x.step_id for x in res]
        o = wf.step(fn, id=s.label, tune=s.tune, args={**ins, **s.params}, **opts)
        return o, [o.step_id]
