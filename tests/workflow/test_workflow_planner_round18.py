"""The rule planner and the table steps on an eighteenth round: a median per group ("the median
price per city", "group by city and compute the median price", "the medians per region") was
refused, since the aggregate step computed only a sum, mean, count, min or max; the step computes
an exact median now (pyarrow's group-by has only an approximate one) and the planner maps the
words to it. Plans are run on real CSV files."""

from __future__ import annotations

import pyarrow as pa
import pytest

from raystack.workflow.nl import PlanRefused

from planner_util import csv_workdir, kinds as _kinds, of_kind, plan as _plan


@pytest.fixture()
def shops(tmp_path, monkeypatch):
    """shops.csv: city a has four prices (one blank), b two, c only a blank."""
    return csv_workdir(tmp_path, monkeypatch, "shops.csv", "id,city,price,area",
                       ["1,a,10,50", "2,a,40,60", "3,b,5,10", "4,a,,70", "5,a,20,80", "6,b,9,30", "7,a,30,90", "8,c,,20"])


def test_the_aggregate_step_computes_an_exact_median_per_group_skipping_blanks():
    from raystack.workflow.table_steps import aggregate
    table = pa.table({"city": ["a", "a", "b", "a", "c", "a"], "price": [1, None, 5, 4, None, 10],
                      "area": [1.5, 2.5, 3.0, 10.0, 1.0, 2.0]})
    out = aggregate(table, "city", "median").to_pydict()
    assert out["city"] == ["a", "b", "c"]
    assert out["price"] == [4.0, 5.0, None]        # a: 1, 4, 10 (the blank skipped); c: nothing
    assert out["area"] == [2.25, 3.0, 1.0]         # a: four values, the mean of the middle two
    by_two = aggregate(pa.table({"s": ["x", "x", "y"], "m": [1, 1, 2], "v": [1.0, 3.0, 7.0]}), ["s", "m"], "median")
    assert by_two.to_pydict() == {"s": ["x", "y"], "m": [1, 2], "v": [2.0, 7.0]}


@pytest.mark.parametrize("text", [
    "Load shops.csv and compute the median price per city.",
    "Give me the median price per city from shops.csv.",
    "Load shops.csv, group by city and compute the median price.",
    "load shops.csv and get the medians per city",
    "Load shops.csv and aggregate the median price by city.",
    "For each city in shops.csv, compute the median price.",
    "For every city in shops.csv, work out the median price",
])
def test_a_median_per_group_is_planned_and_runs(shops, text):
    from raystack.workflow.engine import run_local
    p = _plan(text)
    assert _kinds(p) == ["load_data", "aggregate"], text
    step = of_kind(p, "aggregate")[0]
    assert step.params["by"] == "city" and step.params["agg"] == "median", text
    table = run_local(p.ir).results[step.id].load(None).to_pydict()
    assert dict(zip(table["city"], table["price"])) == {"a": 25.0, "b": 7.0, "c": None}, text
    assert dict(zip(table["city"], table["area"])) == {"a": 70.0, "b": 20.0, "c": 20.0}, text


def test_a_median_of_the_whole_table_stays_the_statistics_and_other_functions_per_group_are_refused(shops):
    assert _kinds(_plan("Load shops.csv and compute the median price.")) == ["load_data", "stats"]
    for text in ("Load shops.csv, group by city and compute the std of price.",
                 "Load shops.csv and aggregate the variance of price by city."):
        with pytest.raises(PlanRefused, match="per group"):
            _plan(text)


@pytest.mark.parametrize("text,agg", [
    ("Load shops.csv and compute the total area in each city", "sum"),
    ("load shops.csv, count rows in every city", "count"),
    ("Using shops.csv, find the lowest price in each city and save it to low.csv", "min"),
    ("I'd like the average price for each of the cities in shops.csv.", "mean"),
    ("shops.csv: mean price across cities", "mean"),
    ("load shops.csv then average price grouped on city", "mean"),
    ("How many rows per city are there in shops.csv?", "count"),
])
def test_a_group_key_said_with_in_each_every_across_or_each_of_the(shops, text, agg):
    """'in each city', 'for every city', 'across cities', 'for each of the cities', 'grouped on
    city', 'how many rows per city' were refused (the key unread), and 'for each of the cities'
    grouped by a column named 'of' (the run failed). A plural key names its singular column."""
    from raystack.workflow.engine import run_local
    p = _plan(text)
    step = of_kind(p, "aggregate")[0]
    assert step.params["by"] == "city" and step.params["agg"] == agg, text
    table = run_local(p.ir).results[step.id].load(None).to_pydict()
    expected = {"sum": {"a": 350, "b": 40, "c": 20}, "count": {"a": 5, "b": 2, "c": 1},
                "min": {"a": 10, "b": 5, "c": None}, "mean": {"a": 25.0, "b": 7.0, "c": None}}[agg]
    column = "area" if agg in ("sum", "count") else "price"    # area has no blanks
    assert dict(zip(table["city"], table[column])) == expected, text


def test_across_the_rows_or_the_samples_is_no_group_key(shops):
    with pytest.raises(PlanRefused):
        _plan("load shops.csv and compute the average price across all rows")
    p = _plan("Load shops.csv, draw samples of 10% and 50%, compute summary statistics across all two samples.")
    assert "aggregate" not in _kinds(p)


@pytest.mark.parametrize("text", ["What's the total area by city? Use shops.csv.",
                                  "what is the average price in each city? data in shops.csv",
                                  "Compute stats; the data is in shops.csv"])
def test_the_data_named_in_a_sentence_after_the_steps_is_loaded_first(shops, text):
    """'Compute stats. Use x.csv.' was refused: the steps before the load had no table. A load
    in a sentence of its own, after the steps that read a table and with nothing before it
    making one, is their data."""
    from raystack.workflow.engine import run_local
    p = _plan(text)
    assert _kinds(p)[0] == "load_data" and of_kind(p, "load_data")[0].params["path"] == "shops.csv", text
    assert not run_local(p.ir).failed, text


def test_a_load_sharing_its_sentence_with_a_step_is_not_moved_first(shops):
    with pytest.raises(PlanRefused, match="plot needs"):
        _plan("Plot price. Then load shops.csv and compute stats.")


def test_a_table_said_before_what_it_holds_and_then_saved_is_written_once(shops):
    """'make a table of the totals per city and save it to t.csv' wrote the totals twice: once
    under the step's default name, once to t.csv."""
    from raystack.workflow.engine import run_local
    for text in ("Load shops.csv, make a table of the totals per city and save it to t.csv",
                 "Load shops.csv and produce a table of average price by city, saved to t.csv."):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "aggregate", "write_table"], text
        assert of_kind(p, "write_table")[0].params["path"] == "t.csv"
        report = run_local(p.ir)
        assert not report.failed and len(report.results) == 3, text
    assert _kinds(_plan("Load shops.csv and produce a table of average price by city.")) == \
        ["load_data", "aggregate", "write_table"]


def test_a_report_said_to_hold_the_statistics_reports_them(shops):
    """'save a report with its statistics to r.json' was refused ('report' read as the verb of
    the statistics, 'save' left over); 'a report of its statistics' too. The statistics run
    first and the report holds them, in the file named."""
    from raystack.workflow.engine import run_local
    for text in ("Load shops.csv and save a report with its statistics to r.json.",
                 "Once shops.csv is loaded and deduplicated, save a report with its statistics to r.json.",
                 "Load shops.csv; then save a report of its statistics."):
        p = _plan(text)
        kinds = _kinds(p)
        assert kinds[-2:] == ["stats", "save_report"], text
        report = of_kind(p, "save_report")[0]
        assert report.params["result"].step == of_kind(p, "stats")[0].id, text
        assert report.params.get("path", "r.json") == "r.json", text
        assert not run_local(p.ir).failed, text


def test_zero_mean_and_unit_variance_is_the_z_score(shops):
    """'scale it to zero mean and unit variance' was refused, the words unread; it is the
    normalize step's default z-score (a mean of 5 is no z-score and stays refused)."""
    for text in ("Load shops.csv and scale it to zero mean and unit variance",
                 "standardize shops.csv to have 0 mean and unit std, then plot price"):
        p = _plan(text)
        assert "normalize" in _kinds(p) and "method" not in of_kind(p, "normalize")[0].params, text
    with pytest.raises(PlanRefused, match="5 mean"):
        _plan("Load shops.csv and scale it to 5 mean and unit variance")


def test_retry_loading_a_file_retries_the_load(shops):
    """'Retry loading x.csv up to 3 times, then compute stats' was refused; once planned, the
    retries went to the statistics, not the load."""
    for text, n in (("Retry loading shops.csv up to 3 times, then compute stats.", 3),
                    ("retry reading shops.csv twice and plot price", 2)):
        p = _plan(text)
        steps = {s.id: s for s in p.ir.steps}
        load = of_kind(p, "load_data")[0]
        assert steps[load.id].retries == n, text
        assert all(s.retries == 0 for s in p.ir.steps if s.id != load.id), text


@pytest.mark.parametrize("text", ["find the duplicates in shops.csv and drop them",
                                  "Check shops.csv for duplicates and remove them",
                                  "look for duplicate rows in shops.csv and get rid of them"])
def test_duplicates_found_and_then_removed_are_deduplicated(shops, text):
    """'check x.csv for duplicates and remove them' was refused ('remove' read as no step)."""
    from raystack.workflow.engine import run_local
    (shops / "shops.csv").write_text("city,price\na,1\na,1\nb,2\n")
    p = _plan(text)
    assert _kinds(p) == ["load_data", "dedup"], text
    table = run_local(p.ir).results[of_kind(p, "dedup")[0].id].load(None)
    assert table.num_rows == 2, text


def test_rows_without_a_value_of_a_column_are_dropped_for_that_column_only(shops):
    """'drop rows without a price' was refused; 'drop rows that are missing a price' dropped
    nothing it could name (refused). Only the rows missing that column go; 'rows without any
    values' is no column and stays refused."""
    from raystack.workflow.engine import run_local
    for text in ("Load shops.csv and drop rows without a price", "Load shops.csv and drop rows that are missing a price",
                 "remove records lacking a price from shops.csv"):
        p = _plan(text)
        step = of_kind(p, "clean_data")[0]
        assert step.params["columns"] == ["price"], text
        assert run_local(p.ir).results[step.id].load(None).num_rows == 6, text   # two blank prices
    with pytest.raises(PlanRefused):
        _plan("drop rows without any values from shops.csv")


def test_a_count_of_a_named_thing_per_group(shops):
    """'how many tickets per agent' was refused; 'how many times per day' is no count of rows
    and stays refused; 'totals per city and per id' may be two breakdowns and stays refused."""
    with pytest.raises(PlanRefused):
        _plan("shops.csv: compute price totals per city and per id")
    p = _plan("The shop rows live in shops.csv; how many shops per city?")
    assert of_kind(p, "aggregate")[0].params["agg"] == "count" and of_kind(p, "aggregate")[0].params["by"] == "city"
    with pytest.raises(PlanRefused):
        _plan("how many times per day does shops.csv log an error")


@pytest.mark.parametrize("text", ["Load shops.csv and plot the totals per city",
                                  "Load shops.csv, then chart the average price per city",
                                  "Can you pull shops.csv, get rid of incomplete rows and chart the counts by city?"])
def test_a_per_group_figure_said_as_what_is_plotted_is_computed_first(shops, text):
    """Silently wrong before: 'plot the totals per city' drew the loaded table and computed the
    totals after it, for nothing. The aggregate is computed first and the chart draws it."""
    from raystack.workflow.engine import run_local
    p = _plan(text)
    kinds = _kinds(p)
    assert kinds.index("aggregate") == kinds.index("plot") - 1, text
    assert of_kind(p, "plot")[0].params["data"].step == of_kind(p, "aggregate")[0].id, text
    assert not run_local(p.ir).failed, text
    # plotted first and aggregated after, when said so, stays in that order
    assert _kinds(_plan("Load shops.csv, plot it, then compute the totals per city")) == ["load_data", "plot", "aggregate"]


def test_the_smallest_and_largest_per_group_are_the_min_and_max(shops):
    for text, agg in (("Given shops.csv, compute the smallest price for every city.", "min"),
                      ("the largest area per city in shops.csv", "max")):
        assert of_kind(_plan(text), "aggregate")[0].params["agg"] == agg, text


@pytest.fixture()
def labelled(tmp_path, monkeypatch):
    """x.csv: two features and a class y a knn fits imperfectly."""
    return csv_workdir(tmp_path, monkeypatch, "x.csv", "id,a,b,y",
                       (f"{i},{(i * 7) % 11},{(i * 3) % 17},{int((i * 5) % 11 > 5)}" for i in range(60)))


@pytest.mark.parametrize("text,metric", [
    ("Train a knn on x.csv and report the accuracy on the test set", "accuracy"),
    ("Train a knn on x.csv and report its test accuracy", "accuracy"),
    ("Split x.csv 70/30, train a logistic model and report the f1 on the held-out part", "f1"),
    ("Train a knn on x.csv and plot the accuracy on the test set", "accuracy"),
])
def test_a_figure_of_the_test_set_is_an_evaluation(labelled, text, metric):
    """Silently wrong before: 'report the accuracy on the test set' reported the training's own
    accuracy, measured on the rows the model was fitted on ('on the test set' was read as a
    description). The model is evaluated on the split's held-out part, and that is reported."""
    from raystack.workflow.engine import run_local
    p = _plan(text)
    kinds = _kinds(p)
    ev = of_kind(p, "evaluate_model")[0]
    assert ev.params["metric"] == metric and kinds.index("evaluate_model") == len(kinds) - 2, text
    consumer = p.ir.steps[-1]
    assert ev.id in {r.step for r in consumer.params.values() if hasattr(r, "step")}, text
    assert not run_local(p.ir).failed, text


def test_an_evaluation_said_already_keeps_the_figure(labelled):
    p = _plan("Train a knn on x.csv, evaluate it, and report the accuracy on the test set")
    assert _kinds(p).count("evaluate_model") == 1 and _kinds(p)[-1] == "save_report"


def test_a_condition_on_the_test_accuracy_tests_an_evaluation_not_the_training(labelled):
    """Silently wrong before: 'if the test accuracy is below 0.8, notify me' after a training
    tested the training's own accuracy. An evaluation measures it; the condition tests that;
    a condition with no test set named still tests the training's figure."""
    from raystack.workflow.engine import run_local
    for text in ("Train a knn on x.csv; if the test accuracy is below 0.8, notify me",
                 "Train a knn on x.csv; if accuracy on the test set is below 0.8, notify me, otherwise deploy it as k1"):
        p = _plan(text)
        ev = of_kind(p, "evaluate_model")[0]
        guarded = of_kind(p, "notify")[0]
        assert guarded.when[0].ref.step == ev.id and guarded.when[0].ref.key == "accuracy", text
        report = run_local(p.ir)
        trained, scored = (report.results[s.id].load(None)["accuracy"] for s in (of_kind(p, "train_model")[0], ev))
        assert trained != scored, "the two figures differ here, so the test tells them apart"
    p = _plan("Train a knn on x.csv; if accuracy is below 0.8, notify me")
    assert "evaluate_model" not in _kinds(p)
    assert of_kind(p, "notify")[0].when[0].ref.step == of_kind(p, "train_model")[0].id


def test_the_original_column_or_values_are_the_loaded_table(shops):
    """Silently wrong before: 'normalize it, and plot the original price column' plotted the
    normalized prices; 'plot the raw values' after a dedup plotted a column named 'raw' (the run
    failed). Both plot the table as loaded."""
    from raystack.workflow.engine import run_local
    for text, column in (("Load shops.csv, normalize it, and plot the original price column.", "price"),
                         ("Load shops.csv, dedup it and plot the raw values", None)):
        p = _plan(text)
        plot = of_kind(p, "plot")[0]
        assert plot.params["data"].step == of_kind(p, "load_data")[0].id, text
        assert plot.params.get("column") == column, text
        assert not run_local(p.ir).failed, text
    p = _plan("Load shops.csv, normalize it, and plot the price column.")
    assert of_kind(p, "plot")[0].params["data"].step == of_kind(p, "normalize")[0].id


def test_an_evaluation_on_the_whole_table_is_refused(labelled):
    """Silently wrong before: 'train a knn on the sample and evaluate it on the full data'
    evaluated on the sample's held-out part; the step scores a split's held-out part only."""
    with pytest.raises(PlanRefused, match="on the full data"):
        _plan("Load x.csv, sample 30 rows, train a knn on the sample and evaluate it on the full data.")


def test_a_file_an_adapter_evaluation_is_said_to_run_on_is_refused(tmp_path, monkeypatch):
    """Silently wrong before: 'fine-tune adapters ..., evaluate them on held_out.jsonl, and plot
    the scores' plotted the file held_out.jsonl (the adapters' evaluation reads no file; the load
    was read by the plot). Refused, saying what the evaluation scores on."""
    monkeypatch.chdir(tmp_path)
    for name in ("sft.jsonl", "held_out.jsonl"):
        (tmp_path / name).write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    for text in ("Fine-tune adapters on sft.jsonl using tiny-1m, evaluate them on held_out.jsonl, and plot the scores.",
                 "Fine-tune a LoRA adapter on sft.jsonl over tiny-20m and evaluate it on held_out.jsonl."):
        with pytest.raises(PlanRefused, match="own held-out examples"):
            _plan(text)
    p = _plan("Fine-tune adapters on sft.jsonl using tiny-1m, evaluate them, and plot the scores.")
    assert _kinds(p) == ["mlora_finetune", "evaluate_adapters", "plot"]


def test_two_functions_per_group_or_a_count_no_step_makes_are_refused(shops):
    """Silently wrong before: 'mean and max price by city' computed the mean alone; 'Count
    duplicates in x.csv' planned the load alone (the words read as a description of the data);
    'summary statistics for every file: a, b, c' grouped a.csv by a column named 'file' ('sum'
    matched inside 'summary'). The first two are refused; the third is the statistics of each."""
    for text, words in (("Quick one: mean and max price by city from shops.csv, please.", "max and mean per group"),
                        ("Count duplicates in shops.csv.", "Count duplicates")):
        with pytest.raises(PlanRefused, match=words):
            _plan(text)
    for name in ("b.csv", "c.csv"):
        (shops / name).write_text((shops / "shops.csv").read_text())
    p = _plan("Compute summary statistics for every file: shops.csv, b.csv, c.csv.")
    assert sorted(_kinds(p)) == ["load_data"] * 3 + ["stats"] * 3
    assert of_kind(_plan("Load shops.csv and summarise the price per city"), "aggregate")[0].params["by"] == "city"


def test_telegraphic_metric_after_a_semicolon_and_a_function_of_a_measure(labelled, shops):
    """'...; knn; recall' (a metric alone ending a semicolon list) was refused; 'grouped by city,
    sum of price, bar chart' refused the measure after 'sum of'."""
    p = _plan("on failure notify 'broke'; x.csv; knn; recall")
    assert of_kind(p, "evaluate_model")[0].params["metric"] == "recall"
    p = _plan("shops.csv grouped by city, sum of price, bar chart")
    assert _kinds(p) == ["load_data", "aggregate", "plot"] and of_kind(p, "aggregate")[0].params["agg"] == "sum"


def test_a_period_said_as_an_adjective_needs_its_key(shops):
    """Silently wrong before: 'the daily totals per product' summed every day together, grouped
    by the product alone. Refused unless a key is the period's column ('hourly totals (by hour)')."""
    for text in ("take shops.csv, get the daily totals per city, and save them as d.parquet",
                 "Load shops.csv and chart the monthly counts by city"):
        with pytest.raises(PlanRefused, match="no key holds the period"):
            _plan(text)
    assert of_kind(_plan("daily totals by day and city from shops.csv"), "aggregate")[0].params["by"] == ["day", "city"]


def test_impute_fills_the_named_column_only_when_a_column_is_said(shops):
    """'fill the gaps in the price column with zeros' filled every column's gaps; the impute
    step takes ``columns`` now, and the planner sets it when a column is named as a column.
    A noun alone ('missing prices') names no column the plan can trust (dev sets say 'missing
    vet fees', 'missing pain scores'): every numeric column's gaps are filled, as before."""
    from raystack.workflow.engine import run_local
    from raystack.workflow.table_steps import impute
    table = pa.table({"a": [1.0, None, 3.0], "b": [None, 2.0, 4.0], "c": ["x", None, "z"]})
    assert impute(table, "zero", ["a"]).to_pydict() == {"a": [1.0, 0.0, 3.0], "b": [None, 2.0, 4.0], "c": ["x", None, "z"]}
    assert impute(table, "mean").to_pydict()["b"] == [3.0, 2.0, 4.0]
    with pytest.raises(ValueError, match="no column 'd'"):
        impute(table, "mean", ["d"])
    with pytest.raises(ValueError, match="'c' is not numeric"):
        impute(table, "mean", ["c"])
    (shops / "gaps.csv").write_text("city,price,area\na,,1\nb,4,\n")
    p = _plan("fill the gaps in the price column of gaps.csv with zeros")
    step = of_kind(p, "impute")[0]
    assert step.params["columns"] == ["price"]
    assert run_local(p.ir).results[step.id].load(None).to_pydict()["area"] == [1, None]
    assert "columns" not in of_kind(_plan("Impute missing prices in gaps.csv with the mean."), "impute")[0].params
