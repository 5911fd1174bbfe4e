"""Where a request's results go, read once its actions are found: a file named after a
report's, a chart's or a write's phrase is the file it writes, not a table to load; a chart
saved after it is drawn is that chart's file; a table or statistics saved to a JSON file is
written as JSON lines, not exported as a model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from raystack.workflow.catalog import CATALOG, STATS, TABLE
from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.extract import IMAGE_EXT
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text

if TYPE_CHECKING:
    from raystack.workflow.nl.rules import Action

# "save the chart as out/p.png": the file of a chart drawn before
SAVED_CHART = r"(?:save|saves|store|stores|write|writes|export|exports|keep|keeps)\s"


def destinations(t: Text, actions: list[Action]) -> list[Action]:
    """"report both accuracies in reports/acc.json": a file after "in" / "into" / "as" /
    "at" that ends a report's, a chart's or a write's phrase is where it writes, not a table
    to load (the load fed the split, so the models trained on the report's own file)."""
    out = list(actions)
    # "draw a histogram of x, then save it to out/x.png" ("... of price from p.csv and save the
    # chart as out/p.png": a data file between is the plot's input): the chart's file
    for k in range(len(out) - 1, 0, -1):
        a, prev = out[k], out[k - 1]
        if a.entry == "plot" and t.match_at(SAVED_CHART, a.lo, a.trig_end) is not None:
            # the chart drawn before, past the loads of its data ("a histogram of price from p.csv")
            drawn = next((b for b in reversed(out[:k]) if not (b.entry == "load_data" and b.prepositional)), None)
            if drawn is not None and drawn.entry == "plot" and drawn.sentence == a.sentence:
                drawn.hi = max(drawn.hi, a.hi)
                del out[k]
                continue
            saved = t.span_text(t.tokens[a.lo:a.hi])   # a chart, then other steps: which one is saved?
            raise PlanRefused([f"{saved!r} saves a chart, but no chart is drawn just before it; say which "
                               "plot writes that file"])
        dest = [x for x in t.tokens[a.lo:a.trig_end] if x.kind == "path"]
        # "plot x and save it to x.png", "a histogram of hum from s.csv saved to out/h.png": the
        # chart drawn before (past the load of its data) writes that image
        drawn = next((b for b in reversed(out[:k]) if not (b.entry == "load_data" and b.prepositional)), prev)
        if drawn.entry == "plot" and a.entry in ("export_model", "write_table", "save_report") and len(dest) == 1 \
                and dest[0].low.endswith(IMAGE_EXT) and drawn.sentence == a.sentence \
                and not any(x.kind == "path" and x.low.endswith(IMAGE_EXT) for x in t.tokens[drawn.lo:a.lo]) \
                and t.match_at(r"(?:(?:save|saves|write|writes|store|stores|put|export)\s+(?:it|this|that|the\s+(?:chart|plot|histogram|figure|graph|image|picture))"
                               r"|saved|written|stored|exported)\s+(?:to|as|in|into|at)\s+FILE\d+", a.lo, a.trig_end) is not None:
            t.relabel(t.tokens[a.lo:a.trig_end], a.entry, "plot")
            dest[0].used = ""
            drawn.hi = max(drawn.hi, a.hi)
            del out[k]
            continue
        maker = next((b for b in reversed(out[:k]) if not (b.entry == "load_data" and b.prepositional)), prev)
        if _written_in_output_folder(t, a, maker):
            # "give me revenue totals by channel in out/rev.csv": a table made just before, put in a
            # file of an output folder, is written there (never a table to load)
            t.relabel(t.tokens[a.lo:a.trig_end], "load_data", "write_table")
            a.entry = "write_table"
            a.prepositional = False
            continue
        if a.entry != "load_data" or not a.prepositional or prev.sentence != a.sentence \
                or prev.entry not in ("save_report", "plot", "write_table") or a.trig_end - a.lo != 2:
            continue
        prep, path = t.tokens[a.lo], t.tokens[a.lo + 1]
        if prep.low not in ("in", "into", "as", "at") or path.kind != "path" \
                or any(x.kind == "path" for x in t.tokens[prev.lo:a.lo]):
            continue
        if prev.entry == "plot" and prep.low == "in" and not path.low.endswith(IMAGE_EXT):
            continue    # "a histogram of duration in trips.csv": the data drawn, not the chart's file
        t.relabel(t.tokens[a.lo:a.trig_end], "load_data")
        path.used = ""
        prev.hi = max(prev.hi, a.hi)
        del out[k]
    return out

# folders results are written to ("out/x.csv", "results/x.parquet"), never data to read
OUTPUT_FOLDERS = ("out/", "output/", "outputs/", "results/", "reports/")
# steps that make a table a file in an output folder would hold
TABLE_MAKERS = (*L.TABLE_TRANSFORMS, "aggregate", "stats", "join", "concat")


def _written_in_output_folder(t: Text, a: Action, prev: Action) -> bool:
    """A load phrase "in <file>" / "into <file>" right after a step that makes a table, in its
    sentence, whose file lies in an output folder and ends the clause."""
    if a.entry != "load_data" or not a.prepositional or prev.sentence != a.sentence or prev.entry not in TABLE_MAKERS \
            or a.trig_end - a.lo != 2:
        return False
    prep, path = t.tokens[a.lo], t.tokens[a.lo + 1]
    end = t.tokens[a.trig_end] if a.trig_end < len(t.tokens) else None
    return prep.low in ("in", "into") and path.kind == "path" and path.low.startswith(OUTPUT_FOLDERS) \
        and path.low.endswith((".csv", ".tsv", ".parquet", ".jsonl", ".json")) and (end is None or end.kind == "punct")


def json_tables(t: Text, actions: list[Action]) -> None:
    """"compute stats and write them to out/stats.json", "dedup it and save it to c.json": a
    JSON file is where a model is exported too, but with no step before it that makes a
    model (or another result an export takes) it is a table written as JSON lines; after a
    model, a table or statistics made last ("train a model, compute stats and save them to
    s.json") is what is written."""
    for k, a in enumerate(actions):
        if a.entry != "export_model":
            continue
        dest = next((x for x in t.tokens[a.lo:a.trig_end] if x.kind == "path"), None)
        if dest is None or not dest.low.endswith((".json", ".jsonl")):
            continue
        last = next((b for b in reversed(actions[:k])   # "train a model on x.csv": the model, not the load
                     if not CATALOG[b.entry].side_effect and not b.prepositional), None)
        if last is not None and CATALOG[last.entry].output in (TABLE, STATS):
            t.relabel(t.tokens[a.lo:a.trig_end], "export_model", "write_table")
            a.entry = "write_table"
