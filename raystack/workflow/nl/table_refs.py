"""Which table or result a step's words point at, checked against what the wiring gave it
(pure; raises PlanRefused or moves an input): a file named by its stem or in full, 'it' for the
table made just before, "the original / raw / full / unnormalized data" for the table a chain
started from, and "the final model" for whatever a conditional step may not have made."""

from __future__ import annotations

import os
import re

from raystack.workflow.catalog import CATALOG, TABLE
from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.plan import DraftStep, PlanRefused

# a result named as whatever the steps before ended with ("deploy the final model")
FINAL_RESULT = re.compile(r"\b(?:final|latest|resulting|whichever|last)\b", re.I)
# the table a chain started from, named as such ("compute stats on the full table")
ORIGINAL_TABLE = re.compile(r"\b(?:original|raw|full|whole|entire|complete|untouched|initial|source|unmodified|unprocessed|"
                            r"(?:un-?|non-?|not\s+)(?:normali[sz]|clean|dedup(?:licat)?|imput|sampl|filter|transform|scal)ed)\s+"
                            r"(?:data|dataset|table|file|rows|csv|[a-z_]\w*\s+column|columns|values)\b"
                            r"|\b(?:on|using)\s+all\s+of\s+(?:it|them)\b|\b(?:on|using)\s+all\s+(?:the\s+)?(?:data|rows)\b", re.I)


def loaded_paths(steps: list[DraftStep]) -> dict[str, str]:
    """label -> path of each load of one named file (not a map over files)."""
    return {s.label: str(s.params["path"]) for s in steps
            if s.entry == "load_data" and isinstance(s.params.get("path"), str)}


def check_named_tables(steps: list[DraftStep]) -> None:
    """The table a step's words point at is the one it reads. "...; then normalize x" after
    loading x.csv and y.csv (a file named by its stem), "train a knn on x.csv and a logistic model
    on y.csv" (a file named in full): wired to another table the plan would run on the wrong
    data, so it is refused, naming both. "the original data", "the full table", "the raw file":
    the table the chain started from, not its latest form (the input is moved there)."""
    by_label = {s.label: s for s in steps}
    loads = loaded_paths(steps)
    for s in steps:
        src = s.inputs.get("data")
        if s.entry == "load_data" or not isinstance(src, str):
            continue
        if ORIGINAL_TABLE.search(s.span) and _reads_one(s):
            root = _chain_source(by_label, src)
            if root is not None and TABLE in CATALOG[s.entry].inputs["data"].rstrip("*").split("|"):
                s.inputs["data"] = src = root
            elif root is not None and by_label[src].implicit and by_label[src].entry == "split_data" and not any(
                    x is not s and src in x.input_labels() for x in steps):
                by_label[src].inputs["data"] = root   # "train knn on the unnormalized data": its split
            elif root is not None and by_label[src].entry == "split_data" and by_label[src].inputs.get("data") != root:
                # "normalise it, split it, and train a knn on the unnormalised data": the split it would
                # read holds the transformed rows (or another training's sample)
                raise PlanRefused([f"{s.span!r} names the table before its changes, but it would read the split of "
                                   f"{by_label[by_label[src].inputs['data']].span!r}; split that table in its own clause"])
        named = [lab for lab, path in loads.items() if _names_file(s.span, path, by_stem=_reads_one(s))]
        # a file named in full is that file's table, not a join or concat made from it ("count
        # events per country" after joining users and events reads the joined rows)
        if len(named) != 1 or _made_from(by_label, src, named[0]) and (
                _one_table_chain(by_label, src, named[0]) or not _names_file(s.span, loads[named[0]], by_stem=False)):
            continue
        origin = _chain_source(by_label, src)
        reads = repr(by_label[src].span) if not by_label[src].implicit else \
            f"the {by_label[src].entry} of {loads.get(origin, 'another table') if origin else 'another table'}"
        raise PlanRefused([f"{s.span!r} names {loads[named[0]]}, but it would read {reads}; "
                           "say which table it reads in its own clause"])
    many = {s.label: [str(x) for x in s.map[1]] for s in steps if s.entry == "load_data" and s.map is not None
            and s.map[0] == "path"}
    for s in steps:   # "load iris.csv and wine.csv, normalize the wine data": one of a load's several files
        src = s.inputs.get("data")
        origin = _chain_source(by_label, src) if isinstance(src, str) and s.entry != "load_data" else None
        if origin not in many:
            continue
        named = [path for path in many[origin] if _names_file(s.span, path)]
        if len(named) == 1:
            raise PlanRefused([f"{s.span!r} names {named[0]}, but it would run on every file loaded together "
                               f"({', '.join(many[origin])}); load that file in its own clause"])
    for k, s in enumerate(steps):   # "load y.csv and dedup it": 'it' is the table made just before
        src = s.inputs.get("data")
        if s.implicit or not isinstance(src, str) or not _reads_one(s) \
                or not re.search(r"\b(?:it|this|that)\b", s.span, re.I):
            continue
        nearest = next((p for p in reversed(steps[:k]) if p.exit is None and not p.implicit
                        and CATALOG[p.entry].output == TABLE and p.when is None), None)
        if nearest is not None and nearest.label != src and CATALOG[by_label[src].entry].output == TABLE \
                and not _made_from(by_label, src, nearest.label):
            raise PlanRefused([f"{s.span!r}: 'it' is {nearest.span!r} just before, but the step would read "
                               f"{by_label[src].span!r}; say which table it reads"])


# "join customers onto orders", "merge the returns into sales", "append feb.csv to jan.csv": the
# table named second is the base
INTO_BASE = re.compile(r"\b(?:onto|into|to)\b", re.I)
# a join's "to" names the right side, as in SQL ("left join orders to customers" keeps every
# order); "onto" / "into" name the base, as "append feb.csv to jan.csv" does for a stack
JOIN_INTO_BASE = re.compile(r"\b(?:onto|into)\b", re.I)


def order_table_sides(steps: list[DraftStep]) -> None:
    """A join's left table (a concat's first) is the one its words name first ("left join orders
    with customers"), or the one named after "onto" / "into" / "to" ("join customers onto
    orders", "append feb.csv to jan.csv"), 'it' standing for the other table ("left join it with
    fx.csv"), not the one loaded first: its inputs are swapped to match. A left or right join
    whose words name one table, or a table it does not read, is refused: which side keeps
    every row would be a guess."""
    by_label = {s.label: s for s in steps}
    loads = loaded_paths(steps)
    for s in list(steps):   # a copy: a concat of several tables adds the rest of its chain
        if s.entry not in L.TWO_TABLE_SIDES:
            continue
        first_side, second_side = L.TWO_TABLE_SIDES[s.entry]
        left, right = s.inputs.get(first_side), s.inputs.get(second_side)
        if not isinstance(left, str) or not isinstance(right, str):
            continue
        named = sorted((pos, lab) for lab, path in loads.items()
                       if (pos := _named_at(s.span, path, [p for p in loads.values() if p != path])) is not None)
        outer = s.params.get("how") in ("left outer", "right outer")
        sources = (_chain_source(by_label, left), _chain_source(by_label, right))
        it = re.search(r"\b(?:it|this|that)\b", s.span, re.I)
        if len(named) == 1 and it is not None and named[0][1] in sources:
            # "left join it with fx.csv": 'it' is the other table, where the words say it
            named = sorted([*named, (it.start(), sources[1] if sources[0] == named[0][1] else sources[0])])
        if len(named) < 2 and s.entry == "concat" and re.search(L.NAMED_SIDES, s.span, re.I):
            # "glue the march file onto the end of the jan one": a side named by a word no file's
            # name holds alone; stacking in another order would be a guess
            raise PlanRefused([f"{s.span!r}: cannot tell which loaded files these words name; name the files"])
        if not named and _stack_loaded_together(s, steps, by_label):
            continue
        if len(named) == 1 and s.entry == "join" and named[0][1] in sources and _side_said(s, named[0][0]):
            # "left join on charger_id (chargers = left side)": the one table named, and its side
            if (_side_said(s, named[0][0]) == "left") != (sources[0] == named[0][1]):
                s.inputs[first_side], s.inputs[second_side] = right, left
            continue
        kept = re.search(r"\bkeep(?:ing|s)?\s+(?:all|every|each)(?:\s+the)?\s+\w+", s.span, re.I)
        if len(named) == 1 and outer and named[0][1] in sources and kept is not None and kept.start() <= named[0][0] < kept.end():
            # "left join on patient_id (keep all visits)": the one table named is the side the join keeps
            keeps_left = s.params.get("how") == "left outer"
            if (sources[0] == named[0][1]) != keeps_left:
                s.inputs[first_side], s.inputs[second_side] = right, left
            continue
        if len(named) < 2:
            if outer and named:
                raise PlanRefused([f"{s.span!r} names only {loads[named[0][1]]}: say which table is the left one"])
            continue
        (pos_a, first), (pos_b, second) = named[0], named[1]
        if len(named) > 2:
            if _stack_in_order(s, steps, named, by_label):
                continue
            raise PlanRefused([f"{s.span!r} names {len(named)} tables; a {s.entry} reads two"])
        if (JOIN_INTO_BASE if s.entry == "join" else INTO_BASE).search(s.span[pos_a:pos_b]):
            first, second = second, first
        if sources == (second, first):
            s.inputs[first_side], s.inputs[second_side] = right, left
        elif sources != (first, second):
            raise PlanRefused([f"{s.span!r} names {loads[first]} and {loads[second]}, but it would {s.entry} "
                               f"{loads.get(sources[0] or '', by_label[left].span)!r} with "
                               f"{loads.get(sources[1] or '', by_label[right].span)!r}; say which tables it reads"])


SIDE_SAID = re.compile(r"\s*(?:=|is|as|on)\s*(?:the\s+)?(?P<side>left|right)(?:[\s-]+(?:side|table|one|hand\s+side))?\b", re.I)


def _side_said(s: DraftStep, pos: int) -> str | None:
    """"chargers = left side", "chargers as the left table": the side said of the table named at
    ``pos`` of the step's words (None: none said there)."""
    word = re.match(r"[\w.-]+", s.span[pos:])
    m = SIDE_SAID.match(s.span, pos + len(word.group(0))) if word else None
    return m.group("side").lower() if m else None


def _stack_loaded_together(s: DraftStep, steps: list[DraftStep], by_label: dict[str, DraftStep]) -> bool:
    """"load jan.csv, feb.csv and mar.csv, stack them": the tables of one load phrase, in the
    order named, are the concat's chain (it read the last two)."""
    if s.entry != "concat":
        return False
    left = by_label.get(str(s.inputs.get("first")))
    if left is None or left.entry != "load_data":
        return False
    together = [x for x in steps if x.entry == "load_data" and x.span == left.span]
    if len(together) < 3 or not _stack_in_order(s, steps, list(enumerate(x.label for x in together)), by_label):
        return False
    s.follows = [lab for lab in s.follows if lab not in {x.label for x in together} or lab in s.input_labels()]
    return True


def _stack_in_order(s: DraftStep, steps: list[DraftStep], named: list[tuple[int, str]],
                    by_label: dict[str, DraftStep]) -> bool:
    """"stack jan.csv, feb.csv and mar.csv", "append feb.csv and mar.csv to jan.csv": a concat of
    more than two loaded tables is a chain of concats, each stacking the next table under the
    rows so far, in the order the words name them (the table named after "to" / "onto" / "into"
    first). Whether it could be: not for a conditional, mapped or looped concat, nor for tables
    another step reads as well (which of their forms is stacked would be a guess)."""
    labels = [lab for _, lab in named]
    if s.entry != "concat" or s.when is not None or s.map is not None or s.loop is not None \
            or any(by_label[lab].entry != "load_data" for lab in labels) \
            or not set(s.input_labels()) <= set(labels) \
            or any(x is not s and set(x.input_labels()) & set(labels) for x in steps):
        return False
    into = INTO_BASE.search(s.span)
    if into is not None:
        labels = [lab for pos, lab in named if pos > into.start()] + [lab for pos, lab in named if pos < into.start()]
    readers = [x for x in steps if s.label in x.input_labels()]
    s.inputs = {"first": labels[0], "second": labels[1]}
    at, last = steps.index(s), s.label
    for n, lab in enumerate(labels[2:], 2):
        link = DraftStep(f"{s.label}_{n}", "concat", inputs={"first": last, "second": lab}, span=s.span,
                         follows=[last], concurrent=s.concurrent)
        at += 1
        steps.insert(at, link)
        last = link.label
    for x in readers:
        x.inputs = {k: ([last if v == s.label else v for v in lab] if isinstance(lab, list) else
                        last if lab == s.label else lab) for k, lab in x.inputs.items()}
    return True


def check_unread_transforms(steps: list[DraftStep]) -> None:
    """"split it 70/30, normalize the data, and train a knn": the normalized table was read by
    nothing (the training read the split made before it), so the plan would train on the
    unnormalized rows. A table transform whose table no step reads, with steps after it that
    read other data, is refused, saying which step reads what."""
    read = {lab for s in steps for lab in s.input_labels()}
    by_label = {s.label: s for s in steps}
    for k, s in enumerate(steps):
        src = s.inputs.get("data")
        if s.entry not in (*L.TABLE_TRANSFORMS, "split_data") or s.implicit or s.label in read or s.map is not None \
                or not isinstance(src, str) or s.when is not None or s.concurrent:
            continue
        # later steps on the table it transformed, not said to want it untransformed nor to
        # run beside it ("normalize it; in parallel, compute stats"); for a split, the models
        # and evaluations it was made for ("train ...; evaluate on a 30% test split": the
        # training made its own 80/20 split, and the 30% one went unread; "train ..., then
        # normalize it; evaluate on a 30% test split": the split of the normalized rows went
        # unread as well, while the model read the table they came from)
        others = steps[k + 1:] if s.entry != "split_data" else steps[:k] + steps[k + 1:]
        sources = {src} if s.entry != "split_data" or src not in by_label else \
            {src} | {u.label for u in upstream(by_label[src], by_label)}
        later = [x for x in others if not x.implicit and x.exit is None and not CATALOG[x.entry].side_effect
                 and sources & {u.label for u in upstream(x, by_label)} and not ORIGINAL_TABLE.search(x.span)
                 and not x.concurrent and x.beside is None and x.when is None
                 and (s.entry != "split_data" or x.entry in ("train_model", "evaluate_model"))]
        if later:
            what = "a split" if s.entry == "split_data" else "a table"
            raise PlanRefused([f"{s.span!r} makes {what} no step reads ({later[0].span!r} reads data made "
                               "without it); say which step should read it, or do it earlier"])


def keep_targets(steps: list[DraftStep]) -> None:
    """"normalize it, and fit a linear regression with power as the target": a normalize before
    the training leaves the column the model predicts as it is (it kept only ``y`` unscaled, and
    would have scaled the labels the model learns); the one target a request names is every
    model's it trains."""
    by_label = {s.label: s for s in steps}
    # "train a logistic model with sold as the label; if accuracy is below 0.8, retrain it": the
    # one target a request names is every model's (the retraining learned a column y the table lacks)
    named = {s.params["target"] for s in steps if s.entry == "train_model" and s.params.get("target")}
    if len(named) == 1:
        for s in steps:
            if s.entry == "train_model":
                s.params.setdefault("target", next(iter(named)))
    for s in steps:
        if s.entry == "train_model" and s.params.get("target"):
            for u in upstream(s, by_label):
                if u.entry == "normalize":
                    u.params.setdefault("target", s.params["target"])


def ends_of_one_table(steps: list[DraftStep]) -> None:
    """"take the first 20 rows and compute stats, and separately take the last 20 rows": the
    second end is of the table the first was taken from (the last 20 of the first 20 are the
    same rows), unless the words say it is of that part ("the last 5 rows of it")."""
    by_label = {s.label: s for s in steps}
    for s in steps:
        src = by_label.get(s.inputs.get("data")) if isinstance(s.inputs.get("data"), str) else None
        if s.entry != "sample" or not s.params.get("which") or src is None or src.entry != "sample" \
                or not src.params.get("which") or OF_THAT.search(s.span):
            continue
        s.inputs["data"] = src.inputs["data"]


OF_THAT = re.compile(r"\b(?:of|from)\s+(?:it|them|those|these|that|this|the\s+(?:sample|subset|result|part))\b", re.I)


# what a file is called by a word of its name: "the autumn file", "the spring one"
FILE_NOUNS = r"(?:file|one|table|log|export|sheet)"


def _named_at(span: str, path: str, others: list[str] = ()) -> int | None:
    """Where the words first name the file, in full, by its stem, or as "the <word> file" by a
    word of its name that no other file's name (``others``) holds; None when they do not."""
    name = os.path.basename(path).lower()
    stem = os.path.splitext(name)[0]
    by_stem = "" if stem in L.FILLERS else rf"|\b{re.escape(stem)}\b(?![.\w-])"    # "a.csv": "a" is no name
    theirs = {w for o in others for w in re.split(r"[_\W]+", os.path.splitext(os.path.basename(o).lower())[0])}
    parts = [w for w in re.split(r"[_\W]+", stem) if len(w) >= 3 and w.isalpha() and w not in theirs and w not in L.FILLERS]
    by_part = "".join(rf"|\bthe\s+{re.escape(w)}\s+{FILE_NOUNS}\b" for w in parts) if others else ""
    m = re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-]){by_stem}{by_part}", span.lower())
    return m.start() if m else None


CONDITIONAL_MAKERS = ("train_model", "edit_pretrain", "mlora_finetune", "elastic_dlrm")


def check_final_results(steps: list[DraftStep], handing_on: dict[str, str]) -> None:
    """"retrain it if accuracy is under 0.8, and deploy the final model": the final model is the
    retrained one or, when the condition is false, the first; a step reading the conditional
    step's output would run only when it ran, so the plan is refused, saying so."""
    by_label = {s.label: s for s in steps}
    for s in steps:
        if s.when is not None or s.exit is not None:
            continue
        for lab in s.input_labels():
            src = by_label.get(lab)
            # (a model a conditional training makes is the final one whether "final" is said or not:
            # "if the accuracy is below 0.7 retrain it; then export it")
            if src is not None and src.when is not None and lab not in handing_on \
                    and (FINAL_RESULT.search(s.span) or src.entry in CONDITIONAL_MAKERS):
                raise PlanRefused([f"{s.span!r} reads {src.span!r}, which runs only when its condition holds: "
                                   "say what it reads otherwise"])


WRITING_STEPS = ("write_table", "export_model", "save_report", "plot")


def check_no_write_over_input(steps: list[DraftStep]) -> None:
    """"dedup x.csv and write it back to x.csv": a run writes its outputs in its own folder and
    never over a file it reads (an output named like an input would be a second copy elsewhere,
    not what was asked), so the plan is refused, naming the file."""
    inputs = set(loaded_paths(steps).values())
    for s in steps:
        path = s.params.get("path")
        if s.entry in WRITING_STEPS and isinstance(path, str) and path in inputs:
            raise PlanRefused([f"{s.span!r} writes {path}, which the plan reads: outputs never replace an "
                               "input; name another file"])


# what a write says it writes that only an evaluation (or statistics) makes
WRITTEN_RESULTS = re.compile(r"\b(?:scores?|metrics?|accuracy|accuracies|predictions?|evaluations?|f1|auc)\b")
RESULT_STEPS = ("evaluate_model", "evaluate_dlrm", "evaluate_adapters", "stats", "select_best")


def check_written_results(steps: list[DraftStep]) -> None:
    """"train a knn on x.csv and write the scores to s.csv": no step made scores (training makes
    a model, which a table file cannot hold), so the write would copy the loaded table; refused,
    saying what to add."""
    by_label = {s.label: s for s in steps}
    order = {s.label: k for k, s in enumerate(steps)}
    for k, s in enumerate(steps):
        if s.entry != "write_table" or not WRITTEN_RESULTS.search(s.span.lower()):
            continue
        src = [by_label[lab] for lab in s.inputs.values() if isinstance(lab, str) and lab in by_label]
        models = [j for j, m in enumerate(steps[:k]) if m.entry == "train_model"]
        if src and models and all(x.entry not in RESULT_STEPS and order[x.label] < models[-1] for x in src):
            raise PlanRefused([f"{s.span!r} writes scores, but no step before it makes any: it would write "
                               f"the table of {src[0].span!r} (evaluate the model first)"])


# the evaluations that read no table, and what they score on
FILELESS_EVALUATIONS = {"evaluate_adapters": "each task's own held-out examples",
                        "evaluate_dlrm": "the DLRM run's own held-out rows"}


def check_sources_read(steps: list[DraftStep]) -> None:
    """"train a logistic model, evaluate it on b.csv": the load of b.csv was read by the
    training's split and the file loaded first by nothing, so the model trained on the
    evaluation file. A file the request names and no step reads means the plan does something
    else than asked with it: refused, naming the file. A request that only loads is left alone."""
    if len([s for s in steps if not s.implicit]) < 2 or all(
            s.entry in ("load_data", "load_checkpoint", "load_adapters", "notify") for s in steps):
        return      # "load x.csv and notify me once it's loaded": a load and what is said of it
    named = [s for s in steps if not s.implicit]
    for p, s in zip(named, named[1:]):   # "evaluate them on held_out.jsonl, and plot the scores"
        if s.entry == "load_data" and p.entry in FILELESS_EVALUATIONS and re.match(r"(?:on|against|using|with|over)\b", s.span):
            raise PlanRefused([f"{s.params.get('path') or s.span!r}: {p.entry} scores on "
                               f"{FILELESS_EVALUATIONS[p.entry]}; it cannot read a file"])
    read = {lab for s in steps for lab in s.input_labels()}
    # "evaluate the adapters on h.jsonl and report exact match": a file loaded after another step
    # ran and read by a report alone was meant for that step, which cannot read it; the report
    # would show the file, not the result asked for
    reported_only = {lab for lab in read
                     if all(r.entry == "save_report" for r in steps if lab in r.input_labels())}
    for k, s in enumerate(steps):
        if s.entry == "load_data" and s.label in reported_only and not s.implicit and any(
                not p.implicit and p.entry not in ("load_data", "load_checkpoint", "load_adapters", "make_dataset")
                for p in steps[:k]):
            read.discard(s.label)
    for s in steps:
        if s.entry in ("load_data", "load_checkpoint", "load_adapters") and s.label not in read and not s.implicit:
            what = s.params.get("path") or s.span
            raise PlanRefused([f"{what!r} is named ({s.span!r}), but no step of the plan reads it: "
                               "say which step should"])


def _chain_source(by_label: dict[str, DraftStep], label: str) -> str | None:
    """The load (or generated table) a chain of one-table steps started from."""
    while label in by_label:
        s = by_label[label]
        if s.entry in ("load_data", "make_dataset"):
            return label
        src = s.inputs.get("data")
        if not isinstance(src, str) or not _reads_one(s):
            return None
        label = src
    return None


def upstream(step: DraftStep, by_label: dict[str, DraftStep]) -> list[DraftStep]:
    """The steps ``step`` reads from, directly or not, nearest first (by data edges)."""
    out: list[DraftStep] = []
    frontier = [step]
    while frontier:
        nxt = []
        for x in frontier:
            for label in x.input_labels():
                up = by_label.get(label) if isinstance(label, str) else None
                if up is not None and up not in out:
                    out.append(up)
                    nxt.append(up)
        frontier = nxt
    return out


def _made_from(by_label: dict[str, DraftStep], label: str, origin: str) -> bool:
    """Whether step ``label``'s output was made, directly or not, from step ``origin``'s."""
    return label == origin or (label in by_label and any(x.label == origin for x in upstream(by_label[label], by_label)))


def _one_table_chain(by_label: dict[str, DraftStep], label: str, origin: str) -> bool:
    """Whether step ``label``'s table was made from step ``origin``'s by one-table steps only:
    a join or a concat of it with another table is not that file's table any more ("stack a.csv
    and b.csv; in parallel, compute stats on a.csv" read the stacked table)."""
    while label != origin:
        s = by_label.get(label)
        if s is None or s.entry in L.TWO_TABLE_STEPS:
            return False
        src = s.inputs.get("data")
        if not isinstance(src, str):
            return True     # made from the file some other way (a model's, a selection's): as before
        label = src
    return True


def _names_file(span: str, path: str, by_stem: bool = True) -> bool:
    """Whether a step's words name the file: in full ("x.csv"), or by its stem ("normalize x",
    "the wine data") when ``by_stem``."""
    text, name = span.lower(), os.path.basename(path).lower()
    words = set(re.findall(r"[a-z0-9_\-]+", text)) - L.FILLERS
    # in full, as a name of its own ("trips_weather.csv" does not name weather.csv)
    named = re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w-])", text) is not None
    return named or (by_stem and os.path.splitext(name)[0] in words)


def _reads_one(s: DraftStep) -> bool:
    """Whether the step reads one input, ``data`` (a table transform, a split, a training...)."""
    return list(CATALOG[s.entry].inputs) == ["data"]
