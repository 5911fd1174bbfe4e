"""The rule planner on a fifteenth round of requests of the developer's own wording (none from a
set): rows where a named column is missing ("remove rows where age is missing" was refused);
two removals under one verb ("drop nulls and duplicates" was refused); a data file cleaned up
("clean up weather.csv and plot temp" planned the deletion of scratch files, read from the
column 'temp'); a chart of a column in a file ("plot duration from trips.csv" drew the first
numeric column, "a histogram of duration in trips.csv" took the file for the chart's, "a
histogram of the trip durations in trips.csv" drew the column 'trip'); the statistics named in
a list ("a summary of x.csv: row count, means, missing values" was refused). Plans are run on
real CSV files."""

from __future__ import annotations

import pytest

from raystack.workflow.nl import PlanRefused

from planner_util import kinds as _kinds, of_kind, plan as _plan


@pytest.fixture()
def people(tmp_path, monkeypatch):
    """people.csv (age missing in one row, income in another, a duplicated row) and trips.csv."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "people.csv").write_text("person_id,age,income,state\n1,30,50,ny\n2,,60,ca\n3,41,,ca\n"
                                         "4,25,40,ny\n4,25,40,ny\n")
    (tmp_path / "trips.csv").write_text("trip_id,distance,duration\n1,2.5,10\n2,8.0,31\n3,1.2,6\n")
    return tmp_path


def test_rows_where_a_named_column_is_missing_drop_only_those(people):
    from raystack.workflow.dryrun import dry_run
    from raystack.workflow.engine import run_local
    for text in ("Remove rows where age is missing from people.csv, then compute the average income by state.",
                 "Load people.csv and drop rows where age is null.",
                 "Load people.csv and drop the records whose age is empty."):
        p = _plan(text)
        assert of_kind(p, "clean_data")[0].params["columns"] == ["age"], text
    rows = run_local(p.ir).results[of_kind(p, "clean_data")[0].id].load(None).to_pydict()
    assert rows["person_id"] == [1, 3, 4, 4]          # person 3 (no income) kept, person 2 (no age) dropped
    assert dry_run(p.ir, str(people / "dry")).status == "succeeded"
    for text in ("Load people.csv and drop rows where anything is missing.",
                 "Load people.csv and drop rows where any value is missing."):
        assert "columns" not in of_kind(_plan(text), "clean_data")[0].params, text


def test_two_removals_under_one_verb_are_two_steps(people):
    from raystack.workflow.engine import run_local
    for text in ("Load people.csv, drop nulls and duplicates.", "Load people.csv and remove nulls and duplicates.",
                 "Load people.csv, drop nans and dupes."):
        assert _kinds(_plan(text)) == ["load_data", "clean_data", "dedup"], text
    p = _plan("Load people.csv, drop nulls and duplicates.")
    rows = run_local(p.ir).results[of_kind(p, "dedup")[0].id].load(None).to_pydict()
    assert rows["person_id"] == [1, 4]
    assert _kinds(_plan("Load people.csv, drop duplicates.")) == ["load_data", "dedup"]


def test_a_data_file_cleaned_up_is_cleaned_and_nothing_is_deleted(people):
    for text in ("Clean up people.csv and plot income.", "Clean up people.csv."):
        p = _plan(text)
        assert "cleanup" not in _kinds(p) and "clean_data" in _kinds(p), text
    assert of_kind(_plan("Clean up people.csv and plot income."), "plot")[0].params["column"] == "income"
    # a column called temp is a column; the scratch files said so are still cleaned up
    p = _plan("Load people.csv, plot income, then clean up the temp files.")
    assert _kinds(p)[-1] == "cleanup"
    assert "cleanup" not in _kinds(_plan("Load people.csv and plot temp."))


def test_a_chart_of_a_column_in_a_file_loads_it_and_draws_that_column(people):
    from raystack.workflow.engine import run_local
    for text in ("Plot duration from trips.csv.", "Plot the duration in trips.csv.",
                 "Draw a histogram of duration in trips.csv.", "Make a histogram of trips.csv's duration.",
                 "Make a histogram of the duration column in trips.csv."):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "plot"] and of_kind(p, "plot")[0].params["column"] == "duration", text
        assert "path" not in of_kind(p, "plot")[0].params, text
    assert run_local(p.ir).results[of_kind(p, "plot")[0].id].load(None).info["column"] == "duration"
    # a chart's own file after "in" is still where it is written
    assert of_kind(_plan("Load trips.csv and plot duration in out/d.png."), "plot")[0].params["path"] == "out/d.png"
    for text in ("Draw a histogram of the trip durations in trips.csv.",
                 "Load trips.csv and draw a histogram of the trip durations."):
        with pytest.raises(PlanRefused, match="'trip durations': the plot draws one column"):
            _plan(text)
    assert "column" not in of_kind(_plan("Load trips.csv and draw a histogram of the sensor readings."),
                                   "plot")[0].params


def test_the_statistics_named_in_a_list_are_the_statistics(people):
    from raystack.workflow.engine import run_local
    for text in ("I need a quick summary of people.csv: row count, means, missing values.",
                 "Give me summary statistics of people.csv: means, medians and missing values."):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "stats"], text
    st = run_local(p.ir).results[of_kind(p, "stats")[0].id].load(None)
    assert st["rows"] == 5 and st["columns"]["age"]["nulls"] == 1
    with pytest.raises(PlanRefused, match="'mean'"):
        _plan("Load people.csv and compute the mean.")    # of what: no column, no statistics step


def test_a_table_saved_as_a_format_is_written_in_that_format(people):
    """'dedup it and save it as parquet / write it out as csv / to a csv file' were refused
    ('save', 'write' unplaced): a write with no file named writes the step's default file, in the
    format said; for each of several files, one file each."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    from raystack.workflow.engine import run_local
    for text, path in (("Load people.csv, dedup it and save it as parquet.", None),
                       ("Load people.csv, dedup it and write it out as parquet.", None),
                       ("Load people.csv, dedup it and save it as csv.", "table.csv"),
                       ("Load people.csv, dedup it and write it to a csv file.", "table.csv")):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "dedup", "write_table"], text
        assert of_kind(p, "write_table")[0].params.get("path") == path, text
    written = run_local(p.ir).results[of_kind(p, "write_table")[0].id].load(None).path
    assert written.endswith("table.csv") and pacsv.read_csv(written).num_rows == 4
    p = _plan("For each of people.csv and trips.csv, drop duplicates and write them out as parquet.")
    results = run_local(p.ir).results
    files = sorted(results[s.id].load(None).path for s in of_kind(p, "write_table"))
    assert len(set(files)) == 2 and sorted(pq.read_table(f).num_rows for f in files) == [3, 4]


def test_a_dlrm_evaluated_by_its_auc_and_a_transformer_trained_from_scratch(people):
    """'train a DLRM ... and evaluate its AUC' was refused ('AUC' unplaced): the DLRM evaluation
    reports its AUC and log loss (a metric it does not report is still refused). 'train a small
    transformer from scratch on books.txt' was refused as out of scope: it is a pretraining (a
    transformer fitted to a table stays a method the catalog lacks)."""
    (people / "criteo").mkdir()
    for text in ("Train a DLRM on criteo/ and evaluate its AUC.", "Train a DLRM on criteo/ and measure its log loss."):
        assert _kinds(_plan(text)) == ["elastic_dlrm", "evaluate_dlrm"], text
    with pytest.raises(PlanRefused, match="'accuracy'"):
        _plan("Train a DLRM on criteo/ and evaluate its accuracy.")
    (people / "books.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 20)
    p = _plan("Train a small transformer from scratch on books.txt for 100 steps, syncing every 32 steps.")
    pre = of_kind(p, "edit_pretrain")[0].params
    assert (pre["steps"], pre["sync"]["h"], pre["data"]["paths"]) == (100, 32, ["books.txt"])
    with pytest.raises(PlanRefused, match="no catalog step does 'transformer'"):
        _plan("Train a transformer on people.csv.")


@pytest.fixture()
def loans(people):
    """loans.csv: two features and the target column y."""
    rows = [f"{i},{(i * 7) % 11},{(i * 3) % 5},{int((i * 7) % 11 > 5)}" for i in range(40)]
    (people / "loans.csv").write_text("loan_id,income,debt,y\n" + "\n".join(rows) + "\n")
    return people


def test_an_inline_numbered_list_and_a_metric_said_bare(loans):
    """'1) read loans.csv 2) 70/30 split 3) knn with k=7 4) evaluate accuracy ...' was refused
    ('2', '3', '4' unplaced: an item opened by a ratio broke the count), and 'evaluate f1'
    ('f1' unplaced: only 'evaluate its f1' was read)."""
    from raystack.workflow.engine import run_local
    p = _plan("Steps: 1) read loans.csv 2) 70/30 split 3) knn with k=7 4) evaluate accuracy 5) save report to out/loans.json")
    assert _kinds(p) == ["load_data", "split_data", "train_model", "evaluate_model", "save_report"]
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.3 and of_kind(p, "train_model")[0].params["k"] == 7
    assert of_kind(p, "evaluate_model")[0].params["metric"] == "accuracy"
    p = _plan("loans.csv -> dedup -> impute mean -> split 75/25 -> logistic -> evaluate f1")
    ev = of_kind(p, "evaluate_model")[0]
    assert ev.params["metric"] == "f1"
    out = run_local(p.ir).results[ev.id].load(None)
    assert out["metric"] == "f1" and out["score"] == out["f1"]


def test_splits_named_by_both_shares_rows_by_what_they_hold_and_a_file_by_its_origin(loans):
    """'split visits.csv into 90% train and 10% test' was refused ('train', '10% test'
    unplaced); 'drop patients with missing age' ('patients'); 'We have visits.csv from the
    clinic.' ('clinic'); shares that do not add up are refused naming them."""
    for text in ("Split loans.csv into 90% train and 10% test.", "Split loans.csv 90% train / 10% test.",
                 "Split loans.csv into 90% training and 10% test data."):
        assert of_kind(_plan(text), "split_data")[0].params["test_fraction"] == 0.1, text
    with pytest.raises(PlanRefused, match="split 80% / 10%: the parts do not add up to 100"):
        _plan("Split loans.csv into 80% train and 10% test.")
    p = _plan("Load people.csv and drop people with missing age.")
    assert of_kind(p, "clean_data")[0].params["columns"] == ["age"]
    p = _plan("We have people.csv from the clinic. Please dedupe it and give me the descriptive stats.")
    assert _kinds(p) == ["load_data", "dedup", "stats"]
    with pytest.raises(PlanRefused, match="translate"):
        _plan("Load people.csv from the clinic and translate it.")


def test_statistics_asked_several_at_once_or_after_a_removal(people):
    """'What are the mean and max of income in people.csv?' was refused (a question no step
    answered); 'group by state and take the max of income' ('income' unplaced); 'check the row
    count of people.csv after removing duplicates' planned an evaluation of no model (refused)."""
    from raystack.workflow.engine import run_local
    for text in ("What are the mean and max of income in people.csv?",
                 "Load people.csv and compute the mean, min and max of income."):
        assert _kinds(_plan(text)) == ["load_data", "stats"], text
    p = _plan("Read people.csv, group by state and take the max of income.")
    assert of_kind(p, "aggregate")[0].params["agg"] == "max" and of_kind(p, "aggregate")[0].params["by"] == "state"
    p = _plan("Check the row count of people.csv after removing duplicates.")
    assert _kinds(p) == ["load_data", "dedup", "stats"]
    assert run_local(p.ir).results[of_kind(p, "stats")[0].id].load(None)["rows"] == 4


def test_a_chart_wanted_and_saved_and_edit_and_dlrm_wording(people):
    """'I want a histogram of hum from s.csv saved to out/hum.png' was refused ('histogram'),
    and once read, the image was a report of the chart: it is the chart's file. 'with H=8' is the
    sync interval ('H', '8' unplaced); 'Retrain the DLRM' was refused ('Retrain')."""
    from raystack.workflow.engine import run_local
    p = _plan("I want a histogram of income from people.csv saved to out/income.png.")
    assert _kinds(p) == ["load_data", "plot"]
    pl = of_kind(p, "plot")[0]
    assert (pl.params["column"], pl.params["path"]) == ("income", "out/income.png")
    art = run_local(p.ir).results[pl.id].load(None)
    assert art.path.endswith("out/income.png") and art.info["column"] == "income"
    (people / "docs").mkdir()
    (people / "docs" / "a.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 20)
    pre = of_kind(_plan("Run EDiT pretraining on docs/ for 300 steps with H=8."), "edit_pretrain")[0].params
    assert (pre["steps"], pre["sync"]["h"]) == (300, 8)
    (people / "criteo").mkdir()
    p = _plan("Retrain the DLRM on criteo/; if AUC is below 0.7, send an alert saying 'dlrm degraded'.")
    assert _kinds(p) == ["elastic_dlrm", "notify"] and of_kind(p, "notify")[0].when


def test_a_list_of_k_then_a_pick_said_as_a_participle(loans):
    """'train knn models for k in 3, 5 and 7, picking the best' was refused ('3', '5', '7'
    unplaced: the pick's phrase took the list), 'choosing the best' too ('choosing'); 'a
    5-nearest-neighbour model' ('5'); 'evaluate the best configuration' ('configuration')."""
    from raystack.workflow.engine import run_local
    for text in ("Load loans.csv and train knn models for k in 3, 5 and 7, picking the best.",
                 "Load loans.csv, split it, and train knn models for k in 3, 5 and 7, keeping the best.",
                 "Train knn models on loans.csv for k in 3, 5 and 7, choosing the best."):
        p = _plan(text)
        assert [s.params["k"] for s in of_kind(p, "train_model")] == [3, 5, 7], text
        assert len(of_kind(p, "select_best")[0].params["results"]) == 3, text
    best = run_local(p.ir).results[of_kind(p, "select_best")[0].id].load(None)
    assert best["k"] in (3, 5, 7)
    p = _plan("Load loans.csv, split it and train a 5-nearest-neighbour model.")
    assert of_kind(p, "train_model")[0].params == {**of_kind(p, "train_model")[0].params, "model": "knn", "k": 5}
    p = _plan("On loans.csv (after an 80/20 split), tune a knn over k = 3, 5, 7 with 3 trials, maximizing f1, "
              "then evaluate the best configuration.")
    assert _kinds(p)[-1] == "evaluate_model" and of_kind(p, "train_model")[0].tune.space == {"k": [3, 5, 7]}


def test_part_wording_worker_ranges_clock_syncs_retries_and_an_error_handler(people):
    """'with between 2 and 6 workers' for the DLRM was refused as a list of worker counts: it
    starts at 2 and sizes itself up to 6 (EDiT, which runs a fixed number of ranks, refuses a
    range); 'retry the training twice' after a DLRM was refused as naming no model training;
    A-EDiT's 'syncing every 3 seconds' / 'a 3 second sync period' were refused ('second' was
    read as 'secondly'); EDiT, which syncs by steps, refuses a period in seconds; 'on any
    error: message ...' was a message after the last step, not an exit handler."""
    (people / "criteo").mkdir()
    (people / "corpus").mkdir()
    (people / "corpus" / "a.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 20)
    p = _plan("Train the elastic DLRM on criteo/ with between 2 and 6 workers for 3 epochs, evaluate it, and if the "
              "AUC beats 0.72 notify 'ctr model ok'. Retry the training twice on failure.")
    dl = of_kind(p, "elastic_dlrm")[0]
    assert (dl.params["resources"]["initial_workers"], dl.params["resources"]["max_workers"], dl.retries) == (2, 6, 2)
    with pytest.raises(PlanRefused, match="EDiT runs a fixed number of ranks"):
        _plan("Pretrain with EDiT on corpus/ with between 2 and 4 workers.")
    for text in ("Pretrain with A-EDiT on corpus/ for 60 steps, syncing every 3 seconds.",
                 "Pretrain with A-EDiT on corpus/ for 60 steps with a 3 second sync period."):
        pre = of_kind(_plan(text), "edit_pretrain")[0].params
        assert (pre["mode"], pre["sync"]["t_seconds"], pre["steps"]) == ("aedit", 3.0, 60), text
    with pytest.raises(PlanRefused, match="A-EDiT's"):
        _plan("Pretrain with EDiT on corpus/, syncing every 3 seconds.")
    p = _plan("people.csv → drop dupes → fill the blanks → 80/20 → 3-nearest-neighbour kNN → eval. "
              "on any error: message 'pipeline failed'")
    assert of_kind(p, "notify")[0].exit == "failure" and of_kind(p, "train_model")[0].params["k"] == 3


def test_statistics_asked_for_are_computed_or_refused_never_dropped(people):
    """'load x.csv and give me the stats', '... and I want the stats', '... output the
    statistics' planned the load alone: 'stats' was glue, so the statistics asked for were
    dropped silently. They are a statistics step now; named where no rule reads them ('then
    the statistics please'), they are refused, quoted."""
    from raystack.workflow.engine import run_local
    for text in ("Load people.csv and give me the stats.", "Load people.csv and I want the stats.",
                 "Load people.csv and output the statistics.", "Is there any missing data in people.csv? Give me the stats."):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "stats"], text
    assert run_local(p.ir).results[of_kind(p, "stats")[0].id].load(None)["rows"] == 5
    with pytest.raises(PlanRefused, match="no step computes 'statistics'"):
        _plan("Load people.csv, then the statistics please.")
    p = _plan("Compute stats on people.csv and plot the stats.")     # the stats of the plan, charted
    assert _kinds(p) == ["load_data", "stats", "plot"]
    p = _plan("Produce summary statistics for people.csv and store them in out/stats.json.")
    assert _kinds(p) == ["load_data", "stats", "write_table"]


def test_more_wording_of_table_steps(people):
    """Refused or wrong before: 'people.csv in, deduped, out/p.parquet out' loaded out/p.parquet
    and cleaned it (the file said to come out is written); 'chuck out rows with blanks'; 'join
    ... using region' ('region' unplaced; 'using pandas' stays refused); 'group by state and sum
    income' ('income'); 'split it into train and test, fit ... on train and evaluate on test'
    ('train', 'test'); 'Could somebody ...' ('somebody')."""
    import pyarrow.parquet as pq
    from raystack.workflow.engine import run_local
    p = _plan("We'd like the ETL bit done: people.csv in, deduped and cleaned, out/p.parquet out.")
    assert _kinds(p) == ["load_data", "dedup", "clean_data", "write_table"]
    assert of_kind(p, "write_table")[0].params["path"] == "out/p.parquet"
    assert pq.read_table(run_local(p.ir).results[of_kind(p, "write_table")[0].id].load(None).path).num_rows == 2
    assert _kinds(_plan("Load people.csv and chuck out rows with blanks.")) == ["load_data", "clean_data"]
    (people / "states.csv").write_text("state,region\nny,east\nca,west\n")
    p = _plan("Join people.csv to states.csv using state, then group by region and sum income.")
    assert of_kind(p, "join")[0].params["on"] == "state" and of_kind(p, "aggregate")[0].params["by"] == "region"
    with pytest.raises(PlanRefused, match="pandas"):
        _plan("Join people.csv and states.csv using pandas.")
    (people / "scores.csv").write_text("a,b,y\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(20)))
    p = _plan("Split scores.csv into train and test, fit a linear regression on train and evaluate on test.")
    assert _kinds(p) == ["load_data", "split_data", "train_model", "evaluate_model"]
    with pytest.raises(PlanRefused, match="'test'"):     # trained on what it is scored on: not read as a part
        _plan("Split scores.csv into train and test, fit a linear regression on test and evaluate on train.")
    assert _kinds(_plan("Could somebody normalise people.csv and dedup it? Cheers.")) == ["load_data", "normalize", "dedup"]


def test_more_wording_of_models_and_parts(loans):
    """'with k=3 and k=5' (refused: 'k', '5'), 'if it fails, retry 3 times' (the failure clause
    was read as an exit handler), 'data in corpus/' (refused), adapters evaluated 'on exact
    match' (refused)."""
    p = _plan("Fit kNN on loans.csv with k=3 and k=5, compare them on accuracy and keep the winner.")
    assert [s.params["k"] for s in of_kind(p, "train_model")] == [3, 5] and of_kind(p, "select_best")
    p = _plan("Train a logistic model on loans.csv and, if it fails, retry 3 times.")
    assert of_kind(p, "train_model")[0].retries == 3 and not any(s.exit for s in p.ir.steps)
    (loans / "corpus").mkdir()
    (loans / "corpus" / "a.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 20)
    pre = of_kind(_plan("Pretraining job: tiny-1m, EDiT, 4 workers, 500 steps, data in corpus/"), "edit_pretrain")[0].params
    assert (pre["model"], pre["ranks"], pre["steps"], pre["data"]["paths"]) == ("tiny-1m", 4, 500, ["corpus/"])
    (loans / "adapters").mkdir()
    assert _kinds(_plan("Evaluate the adapters in adapters/ on exact match.")) == ["load_adapters", "evaluate_adapters"]


def test_a_workflow_asked_for_by_name_and_tables_stacked_from_one_load(people):
    """'Create a pipeline that loads ...', 'Build a workflow to ...' were refused ('Create',
    'Build'); 'load jan.csv, feb.csv and mar.csv, stack them' was refused (a concat read two of
    the three); '... and write out/q1.parquet.' loaded out/q1.parquet (silently wrong: a file
    after 'write' is where the table goes)."""
    from raystack.workflow.engine import run_local
    for text in ("Create a pipeline that loads people.csv and dedups it.",
                 "Build a workflow to load people.csv and dedup it."):
        assert _kinds(_plan(text)) == ["load_data", "dedup"], text
    for name, rows in (("jan", "1,10\n2,12\n"), ("feb", "2,12\n3,7\n"), ("mar", "4,9\n")):
        (people / f"{name}.csv").write_text("day,sales\n" + rows)
    p = _plan("Load jan.csv, feb.csv and mar.csv, stack them, drop duplicates and write out/q1.csv.")
    assert _kinds(p) == ["load_data", "load_data", "load_data", "concat", "concat", "dedup", "write_table"]
    assert of_kind(p, "write_table")[0].params["path"] == "out/q1.csv"
    out = run_local(p.ir).results[of_kind(p, "dedup")[0].id].load(None).to_pydict()
    assert out["day"] == [1, 2, 3, 4]                  # January's, February's new day, March's, in order
    with pytest.raises(PlanRefused):                   # a join reads two tables: three stay refused
        _plan("Load jan.csv, feb.csv and mar.csv and join them.")


def test_questions_failures_and_metrics_said_in_passing(loans):
    """'What's the row count of x.csv after dropping rows with a missing amount?' (a question no
    step answered), 'Dedup x.csv; if that fails, notify ...' ('if', 'fails'), 'evaluate (rmse)'
    ('rmse'), a list item 'Report RMSE.' ('Report RMSE'), a search's 'metric accuracy'."""
    p = _plan("What's the row count of people.csv after dropping rows with a missing income?")
    assert _kinds(p) == ["load_data", "clean_data", "stats"] and of_kind(p, "clean_data")[0].params["columns"] == ["income"]
    p = _plan("Dedup people.csv; if that fails, notify 'dedup failed'.")
    assert of_kind(p, "notify")[0].exit == "failure"
    p = _plan("loans.csv: normalize, split (70/30), knn (k=5), evaluate (rmse)")
    assert of_kind(p, "evaluate_model")[0].params["metric"] == "rmse"
    p = _plan("1. Read loans.csv\n2. Hold out 25% for testing\n3. Fit a linear regression\n4. Evaluate it\n5. Report RMSE")
    assert _kinds(p)[-1] == "save_report"
    p = _plan("Run a quick tune of a knn on loans.csv: k in [3, 5, 7, 9], 4 trials, metric accuracy.")
    tune = of_kind(p, "train_model")[0].tune
    assert (tune.metric, tune.mode, tune.trials) == ("accuracy", "max", 4)


def test_loops_retries_searches_and_charts_said_other_ways(loans):
    """Refused before: a loop bounded by 'or 5 attempts have been made', 'Loop the training ...',
    'keep going epoch by epoch ..., at most 5 epochs' (a DLRM), 'Every model should be retried
    twice' (retries of every training, not of every step), a learning rate range '(0.01 to
    0.5)', a list of k after a sample of a file ('for k in 1, 3 and 5' was read as sample sizes),
    and 'plot temp and hum' (one chart each)."""
    from raystack.workflow.engine import run_local
    p = _plan("Keep retraining the knn on loans.csv until accuracy exceeds 0.9 or 5 attempts have been made.")
    loop = of_kind(p, "train_model")[0].loop
    assert (loop.max_iterations, loop.until_key, loop.until_op, loop.until_value) == (5, "accuracy", ">", 0.9)
    p = _plan("Loop the logistic training on loans.csv until the loss drops under 0.3 (max 20 iterations).")
    assert of_kind(p, "train_model")[0].loop.max_iterations == 20
    (loans / "criteo").mkdir()
    p = _plan("Train the DLRM on criteo/; keep going epoch by epoch until the AUC reaches 0.75, at most 5 epochs.")
    dl = of_kind(p, "elastic_dlrm")[0]
    assert (dl.loop.max_iterations, dl.params["epochs"]) == (5, 1)
    p = _plan("Every model should be retried twice. Load loans.csv, split it 80/20, train a logistic regression, evaluate it.")
    assert [(s.fn.rsplit(":", 1)[1], s.retries) for s in p.ir.steps if s.retries] == [("train_model", 2)]
    p = _plan("Tune a logistic regression's learning rate (0.01 to 0.5) on loans.csv with 4 trials, minimizing loss.")
    assert of_kind(p, "train_model")[0].tune.space == {"lr": {"min": 0.01, "max": 0.5}}
    p = _plan("Sample 30 rows of loans.csv, then for k in 1, 3 and 5, train knn models and keep the best by accuracy.")
    assert of_kind(p, "sample")[0].params["rows"] == 30 and [s.params["k"] for s in of_kind(p, "train_model")] == [1, 3, 5]
    p = _plan("Load loans.csv, plot income and debt side by side.")
    plots = of_kind(p, "plot")
    assert [s.params["column"] for s in plots] == ["income", "debt"]
    results = run_local(p.ir).results
    assert [results[s.id].load(None).info["column"] for s in plots] == ["income", "debt"]


def test_a_fine_tuning_reads_the_records_named_after_its_adapters_or_its_base(people):
    """'Train LoRA adapters named legal and medical on tiny-1m with legal.jsonl and medical.jsonl'
    and 'Fine-tune adapters on the pretrained checkpoint in ./ckpt using qa.jsonl' were refused
    (the files were loads no step read: the names' "and", or the checkpoint between, hid that
    the files are the fine-tuning's own). A table step after it still reads its own file."""
    for name in ("legal", "medical", "qa"):
        (people / f"{name}.jsonl").write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    ft = of_kind(_plan("Train LoRA adapters named legal and medical on tiny-1m with legal.jsonl and medical.jsonl."),
                 "mlora_finetune")[0].params
    assert [(a["name"], d["path"]) for a, d in zip(ft["adapters"], ft["datasets"])] == [("legal", "legal.jsonl"),
                                                                                       ("medical", "medical.jsonl")]
    (people / "ckpt").mkdir()
    p = _plan("Fine-tune adapters on the pretrained checkpoint in ckpt/ using qa.jsonl, then serve them with Ray Serve.")
    assert _kinds(p) == ["load_checkpoint", "mlora_finetune", "serve_adapters"]
    assert [d["path"] for d in of_kind(p, "mlora_finetune")[0].params["datasets"]] == ["qa.jsonl"]
    p = _plan("Fine-tune adapters on tiny-1m and dedup people.csv.")
    assert _kinds(p) == ["mlora_finetune", "load_data", "dedup"]


def test_what_a_step_cannot_do_is_refused_not_done_otherwise(people):
    """Silently wrong before: 'dedup x.csv without normalizing it' planned the normalize it ruled
    out; 'normalize every column except price' scaled price too; 'fill missing prices with the
    previous value' (and 'with the mode') filled them with the mean; 'normalize with min-max
    scaling' z-scored. The first three are refused naming the words; min-max is the step's own
    ``method`` now, run here onto [0, 1]."""
    from raystack.workflow.engine import run_local
    for text, words in (("Dedup people.csv without normalizing it.", "'without normalizing it'"),
                        ("Load people.csv and normalize every column except income.", "'except income'"),
                        ("Load people.csv and fill missing incomes with the previous value.", "'the previous value'"),
                        ("Impute people.csv with the mode.", "'the mode'")):
        with pytest.raises(PlanRefused, match=words):
            _plan(text)
    p = _plan("Load people.csv, drop nulls, and normalize income and age with min-max scaling.")
    norm = of_kind(p, "normalize")[0]
    assert (norm.params["method"], norm.params["columns"]) == ("minmax", ["income", "age"])
    out = run_local(p.ir).results[norm.id].load(None).to_pydict()
    assert min(out["income"]) == 0.0 and max(out["income"]) == 1.0 and out["person_id"] == [1, 4, 4]
    assert "method" not in of_kind(_plan("Load people.csv and normalize it."), "normalize")[0].params


def test_a_modifier_no_step_honours_is_refused_not_dropped(people):
    """Silently wrong before: 'dedup x.csv on the email column' deduplicated whole rows and sent a
    notification ('email'); 'dedup by email' too; 'aggregate the median amount by region' summed
    it (a median per group is computed now; a standard deviation per group is refused); 'train a knn with distance weighting', 'normalize x.csv including the target',
    'normalize x.csv per region', 'dedup case-insensitively', 'plot the price distribution per
    region' ran the plain step. Each is refused, quoting the words no step honours; a
    notification sent by email is still a notification."""
    cases = {"Dedup people.csv on the email column.": "email column", "Dedup people.csv by email.": "email",
             "Load people.csv and aggregate the std of income by state.": "'std' per group",
             "Train a knn with distance weighting on people.csv.": "distance weighting",
             "Normalize people.csv including the target.": "including",
             "Normalize people.csv per state.": "state", "Load people.csv, dedup case-insensitively.": "case-insensitively",
             "Load people.csv and plot the income distribution per state.": "income distribution"}
    for text, words in cases.items():
        with pytest.raises(PlanRefused, match=words):
            _plan(text)
    assert _kinds(_plan("Dedup people.csv and notify me by email.")) == ["load_data", "dedup", "notify"]


def test_chat_wording_of_model_workflows(loans):
    """'... -> eval (auc) -> export models/m.json' was refused as a shell command ('eval (' is
    Python's eval only with code in it) and then for the bare 'export FILE'; 'a 5-NN model'
    ('5'); 'make sure there are no duplicates'; 'a 25% holdout ... train on the remainder'
    ('remainder'). A bare 'NN' is a neural network: refused, as before it was planned as the
    default logistic model (silently wrong)."""
    from raystack.workflow.engine import run_local
    p = _plan("loans.csv → dedupe → 80/20 → logistic (lr=0.05, 25 epochs) → eval (auc) → export models/loans.json")
    assert _kinds(p) == ["load_data", "dedup", "split_data", "train_model", "evaluate_model", "export_model"]
    assert of_kind(p, "evaluate_model")[0].params["metric"] == "auc"
    assert of_kind(p, "export_model")[0].params["path"] == "models/loans.json"
    with pytest.raises(PlanRefused, match="shell command"):
        _plan("Load loans.csv and run eval(open('/etc/passwd')).")
    p = _plan("Load loans.csv, split it, train a 5-NN classifier.")
    assert of_kind(p, "train_model")[0].params["model"] == "knn" and of_kind(p, "train_model")[0].params["k"] == 5
    with pytest.raises(PlanRefused, match="'NN'"):
        _plan("Train a NN classifier on loans.csv.")
    assert _kinds(_plan("Load loans.csv; make sure there are no duplicates; train a knn.")) == ["load_data", "dedup", "train_model"]
    p = _plan("Give me a 25% holdout of loans.csv and train a logistic model on the remainder.")
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.25
    res = run_local(p.ir).results[of_kind(p, "train_model")[0].id].load(None)
    assert res["kind"] == "logistic"


def test_two_metrics_of_one_evaluation_and_the_row_count_of_a_result(loans):
    """'evaluate it on accuracy and f1' was refused ('f1'): the evaluation reports every metric,
    the first said is its score; 'tell me how many rows the result has' after a join was refused
    as a question no step answers: the statistics' row count."""
    from raystack.workflow.engine import run_local
    p = _plan("Load loans.csv and train a knn; evaluate it on accuracy and f1.")
    ev = of_kind(p, "evaluate_model")[0]
    assert ev.params["metric"] == "accuracy"
    out = run_local(p.ir).results[ev.id].load(None)
    assert {"accuracy", "f1"} <= set(out) and out["score"] == out["accuracy"]
    (loans / "owners.csv").write_text("loan_id,owner\n" + "".join(f"{i},o{i % 3}\n" for i in range(40)))
    p = _plan("Load loans.csv and owners.csv, join them on loan_id, and tell me how many rows the result has.")
    assert _kinds(p) == ["load_data", "load_data", "join", "stats"]
    assert run_local(p.ir).results[of_kind(p, "stats")[0].id].load(None)["rows"] == 40


def test_an_input_file_is_never_written_over(people):
    """'Overwrite people.csv with the deduplicated table' planned the dedup and dropped the
    overwrite ('Overwrite' was read as a description of the file); 'dedup it and write it back
    to people.csv' wrote a copy named like the input in the run's folder. Both are refused:
    outputs never replace an input."""
    with pytest.raises(PlanRefused, match="'Overwrite'"):
        _plan("Overwrite people.csv with the deduplicated table.")
    with pytest.raises(PlanRefused, match="writes people.csv, which the plan reads"):
        _plan("Load people.csv, dedup it, and write it back to people.csv.")
    assert of_kind(_plan("Load people.csv, dedup it and write it to out/p.csv."), "write_table")[0].params["path"] == "out/p.csv"
