"""The rule planner on requests about a table's rows (the twelfth round, requests of the
developer's own wording, none from a set): tables stacked one after the other ("stack them",
"append feb.csv to jan.csv"), which were joined on a key or refused; a file after another file
and "to" / "onto" / "into" is the other side of a join or concat ("join customers.csv to
orders.csv" was refused); the first rows of a file loaded; a chart saved after its data file is
named; a row count asked for; a share held out for the evaluation; "the cleaned file" after a
fill or a dedup; rows where anything is missing; a model tried; a table step naming two files;
the parts of a split named by the steps that read them; a model named as what is evaluated; a
file named in full is not a join or concat made from it; a plotted column said transformed; a
sample drawn at random; the evaluation a share is held out for; a column's average asked for. Each was refused or planned
wrong before; several plans are run on real files."""

from __future__ import annotations

import pyarrow as pa
import pytest

from raystack.workflow.nl import PlanRefused
from raystack.workflow.table_steps import concat, load_data

from planner_util import kinds as _kinds, of_kind, plan as _plan, refs as _refs


@pytest.fixture()
def months(tmp_path, monkeypatch):
    """jan.csv (2 rows) and feb.csv (3 rows, one a copy of a January row), in the working directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jan.csv").write_text("day,sales\n1,10\n2,12\n")
    (tmp_path / "feb.csv").write_text("day,sales\n1,10\n3,7\n4,9\n")
    return tmp_path


def _stacked(p) -> tuple[str, str]:
    c = of_kind(p, "concat")[0]
    paths = {s.id: s.params["path"] for s in of_kind(p, "load_data")}
    return paths[_refs(c.params["first"])[0]], paths[_refs(c.params["second"])[0]]


def test_tables_stacked_or_appended_are_a_concat_not_a_join(months):
    """'load jan.csv and feb.csv, concatenate them' was a join on their shared column: silently
    wrong (a join pairs January's day 1 with February's day 1). 'stack them' and 'union a.csv
    and b.csv' were refused. Each is a concat of the two tables, the one appended to first; run,
    it keeps every row of both, in that order."""
    from raystack.workflow.engine import run_local
    cases = {
        "Load jan.csv and feb.csv, concatenate them and compute stats.": ("jan.csv", "feb.csv"),
        "Load jan.csv and feb.csv and stack them, then dedup.": ("jan.csv", "feb.csv"),
        "Union jan.csv and feb.csv and write the result to out/all.parquet.": ("jan.csv", "feb.csv"),
        "Append feb.csv to jan.csv, then compute stats.": ("jan.csv", "feb.csv"),
        "Append jan.csv onto feb.csv and write it to out/all.csv.": ("feb.csv", "jan.csv"),
        "Join customers.csv to orders.csv on id, then compute stats.": None,     # a file after "to" is a side
    }
    for text, want in cases.items():
        p = _plan(text)
        if want is None:
            assert _kinds(p) == ["load_data", "load_data", "join", "stats"], text
            continue
        assert "join" not in _kinds(p), text
        assert _stacked(p) == want, text
    p = _plan("Load jan.csv and feb.csv, stack them, remove duplicates, and write it to out/all.csv.")
    assert _kinds(p) == ["load_data", "load_data", "concat", "dedup", "write_table"]
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    stacked = rep.results[of_kind(p, "concat")[0].id].load(None)
    assert stacked.column("day").to_pylist() == [1, 2, 1, 3, 4]          # every row, January's first
    assert rep.results[of_kind(p, "dedup")[0].id].load(None).num_rows == 4


def test_three_or_more_tables_stacked_are_a_chain_of_concats_in_the_order_named(months):
    """'stack jan.csv, feb.csv and mar.csv' was refused (a concat reads two tables): a user's
    quarter of monthly files. It is a chain of concats, each stacking the next table under the rows
    so far, in the order named (the table appended to first); run, it keeps every row of each in
    that order, and the steps after it read the whole stack. A join of three tables, or tables
    another step reads too, stays refused."""
    from raystack.workflow.engine import run_local
    (months / "mar.csv").write_text("day,sales\n5,3\n")

    def chain(p) -> list[str]:
        paths = {s.id: s.params["path"] for s in of_kind(p, "load_data")}
        by_id = {s.id: s for s in of_kind(p, "concat")}
        last = next(i for i in by_id if all(_refs(c.params["first"])[0] != i for c in by_id.values()))
        order = []
        while last in by_id:
            order.insert(0, paths[_refs(by_id[last].params["second"])[0]])
            last = _refs(by_id[last].params["first"])[0]
        return [paths[last], *order]

    assert chain(_plan("Append feb.csv and mar.csv to jan.csv.")) == ["jan.csv", "feb.csv", "mar.csv"]
    assert chain(_plan("Concatenate mar.csv, jan.csv and feb.csv, then compute stats.")) == \
        ["mar.csv", "jan.csv", "feb.csv"]
    p = _plan("Stack jan.csv, feb.csv and mar.csv, remove duplicates, and save it as out/q1.csv.")
    assert _kinds(p) == ["load_data"] * 3 + ["concat", "concat", "dedup", "write_table"]
    assert chain(p) == ["jan.csv", "feb.csv", "mar.csv"]
    rep = run_local(p.ir)
    assert rep.status == "succeeded", rep.failed
    dedup = of_kind(p, "dedup")[0]
    stacked = rep.results[_refs(dedup.params["data"])[0]].load(None)
    assert stacked.column("day").to_pylist() == [1, 2, 1, 3, 4, 5]      # every row, in the order named
    assert rep.results[dedup.id].load(None).num_rows == 5
    for text in ("Join jan.csv, feb.csv and mar.csv on day.",
                 "Stack jan.csv, feb.csv and mar.csv, and compute stats on mar.csv."):
        with pytest.raises(PlanRefused):
            _plan(text)


def test_concat_matches_columns_by_name_and_refuses_tables_whose_columns_differ():
    a = pa.table({"day": [1, 2], "sales": [1.5, 2.5]})
    b = pa.table({"sales": [3, 4], "day": [3, 4]})                       # other order, integer sales
    out = concat(a, b)
    assert out.column_names == ["day", "sales"]
    assert out.to_pydict() == {"day": [1, 2, 3, 4], "sales": [1.5, 2.5, 3.0, 4.0]}
    with pytest.raises(ValueError, match=r"only in the first: \['sales'\].*only in the second: \['region'\]"):
        concat(a, pa.table({"day": [1], "region": ["n"]}))


def test_a_load_of_a_file_s_first_or_last_rows_loads_it_then_keeps_them(months):
    """'load the first 500 rows of x.csv' was refused ('500' unplaced): a load, then the subset
    in file order; run, it keeps the file's first rows."""
    from raystack.workflow.engine import run_local
    for text, which, rows in (("Load the first 500 rows of x.csv and train a knn.", "first", 500),
                              ("Read only the first 1000 records from data/sales.csv, then compute stats.", "first", 1000),
                              ("Load the last 200 rows of logs.csv and plot the latency column.", "last", 200)):
        p = _plan(text)
        s = of_kind(p, "sample")[0]
        assert (s.params["which"], s.params["rows"]) == (which, rows), text
        assert p.ir.by_id()[_refs(s.params["data"])[0]].fn.endswith(":load_data"), text
    p = _plan("Load the first 2 rows of feb.csv and write them to out/head.csv.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    assert rep.results[of_kind(p, "sample")[0].id].load(None).column("day").to_pylist() == [1, 3]


def test_a_chart_saved_after_its_data_file_is_named_is_that_chart_s_file():
    """'draw a histogram of price from p.csv and save the chart as out/price.png' was refused
    ('save' unplaced: the data file between the chart and its saving hid the chart): one plot,
    written to that file. A chart saved after other steps names no chart: refused, where the
    words alone would have drawn a second chart of the statistics."""
    for text, column, path in (
            ("Draw a histogram of price from p.csv and save the chart as out/price.png.", "price", "out/price.png"),
            ("Plot the amount column of orders.csv and save the figure to figs/amount.png.", "amount", "figs/amount.png"),
            ("Load p.csv, draw a histogram of price and then save the chart to out/price.png.", "price", "out/price.png")):
        p = _plan(text)
        assert _kinds(p) == ["plot", "load_data"] or _kinds(p) == ["load_data", "plot"], text
        plot = of_kind(p, "plot")[0]
        assert (plot.params["column"], plot.params["path"]) == (column, path), text
    with pytest.raises(PlanRefused, match="no chart is drawn just before it"):
        _plan("Load p.csv, plot the price column, then compute stats and save the chart as out/x.png.")


def test_a_row_count_asked_for_is_the_statistics_and_a_narrowed_count_is_not(months):
    """'count the rows', 'tell me the row count' were refused, and 'how many rows does data/x.csv
    have?' loaded the file and nothing else (the question dropped): the statistics, which hold
    the row count. A count per group stays an aggregate ("the number of records per priority",
    refused before, is one); a count of some rows ('with missing values') is no row count and
    stays refused."""
    from raystack.workflow.engine import run_local
    for text in ("Load x.csv and count the rows.", "Load x.csv and tell me the row count.",
                 "How many rows does data/x.csv have?", "Load x.csv, dedup it and report how many rows are left.",
                 "Load x.csv and give me the number of rows.", "Count the records in logs.parquet."):
        assert _kinds(_plan(text))[-1] == "stats", text
    # "report how many rows each has" loaded both files and nothing else (the words dropped)
    assert len(of_kind(_plan("Load x.csv and y.csv and report how many rows each has."), "stats")) == 2
    with pytest.raises(PlanRefused, match="no step answers 'how many columns'"):   # was planned as the loads alone
        _plan("Load x.csv and y.csv and report how many columns each has.")
    assert _kinds(_plan("Load x.csv and count the rows per city.")) == ["load_data", "aggregate"]
    # "the number of records per priority" was refused: a count per group
    agg = of_kind(_plan("Load tickets.csv and report the number of records per priority."), "aggregate")[0]
    assert (agg.params["by"], agg.params["agg"]) == ("priority", "count")
    for text in ("Load x.csv and count the rows with missing values.",
                 "Load data/iris.csv and tell me how many rows have missing values."):
        with pytest.raises(PlanRefused):
            _plan(text)
    p = _plan("Load jan.csv and feb.csv, stack them, dedup it and tell me how many rows are left.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    assert rep.results[of_kind(p, "stats")[0].id].load(None)["rows"] == 4


def test_a_share_held_out_for_the_evaluation_is_the_training_s_split():
    """'train a knn and evaluate it on a 20% holdout' was refused (the training made its own
    80/20 split, so the 20% one went unread), and 'on a held-out 20%' left its words unplaced:
    the split asked for is made first, the model trains on its train part and is evaluated on
    its test part."""
    for text, share in (("Load x.csv, train a knn and evaluate it on a 20% holdout.", 0.2),
                        ("Load x.csv; train a linear regression; evaluate on 20% held out.", 0.2),   # across a ';'
                        ("Load x.csv, train a knn. Evaluate it on a 25% holdout.", 0.25),
                        ("Train logistic regression on iris.csv and score it on a 30% holdout.", 0.3),
                        ("Load x.csv, train a knn and evaluate it on a held-out 25%.", 0.25),
                        ("Load x.csv, train a knn and evaluate it on a 10% held-out set.", 0.1)):
        p = _plan(text)
        split = of_kind(p, "split_data")
        assert len(split) == 1 and split[0].params["test_fraction"] == share, text
        assert _refs(of_kind(p, "train_model")[0].params["data"]) == [split[0].id], text
        assert _refs(of_kind(p, "evaluate_model")[0].params["data"]) == [split[0].id], text


def test_a_table_cleaned_by_filling_or_dedup_is_the_cleaned_file_written(months):
    """'fill in missing ages with the median, and save the cleaned file as p.csv' was refused
    ('save' unplaced: "cleaned" was read as a second, unasked cleaning step); the imputed table
    is what is written. A normalized table is not "the cleaned data": still refused."""
    from raystack.workflow.engine import run_local
    for text, made in (("Read patients.csv, fill in missing ages with the median, and save the cleaned file as "
                        "patients_clean.csv.", "impute"),
                       ("Load x.csv, dedup it and store the cleaned table in out/x.parquet.", "dedup")):
        p = _plan(text)
        assert _kinds(p) == ["load_data", made, "write_table"], text
        assert _refs(of_kind(p, "write_table")[0].params["data"]) == [of_kind(p, made)[0].id], text
    # "remove duplicates, and write the deduplicated table to ...": refused ('write' unplaced, the
    # participle merged into the dedup before the write could read it)
    p = _plan("Load data/ship.parquet, remove duplicates, and write the deduplicated table to out/ship.parquet.")
    assert _kinds(p) == ["load_data", "dedup", "write_table"]
    assert _refs(of_kind(p, "write_table")[0].params["data"]) == [of_kind(p, "dedup")[0].id]
    with pytest.raises(PlanRefused):
        _plan("Load x.csv, normalize it and save the cleaned data as y.csv.")
    p = _plan("Load feb.csv, drop duplicates and save the cleaned table as out/feb.csv.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    written = load_data(rep.results[of_kind(p, "write_table")[0].id].load(None).path)
    assert written.column("day").to_pylist() == [1, 3, 4]


def test_rows_where_anything_is_missing_are_dropped_and_a_model_tried_is_trained():
    """'drop rows where any value is missing' and 'if accuracy is below 0.8, try a knn instead'
    were refused ('drop', 'try' unplaced): a cleaning step, and a conditional training. Rows
    where one named column is missing were refused while the cleaning dropped a row missing any
    value; it takes ``columns`` now, and drops only those (fifteenth round)."""
    for text in ("Take sensors.parquet, drop rows where any value is missing, then give me summary statistics.",
                 "Take sensors.parquet, drop rows where anything is missing, then give me summary statistics."):
        assert _kinds(_plan(text)) == ["load_data", "clean_data", "stats"], text
    p = _plan("Load x.csv and remove rows where age is missing.")
    assert of_kind(p, "clean_data")[0].params["columns"] == ["age"]
    p = _plan("Fit logistic regression on bank.csv; if accuracy is below 0.8, try a knn instead.")
    knn = [s for s in of_kind(p, "train_model") if s.params.get("model") == "knn"]
    assert len(knn) == 1 and knn[0].when, p.render()


def test_a_table_step_naming_two_files_runs_on_each(months):
    """'dedup x.csv and y.csv separately and then join them on id' deduplicated y.csv only and
    joined raw x.csv with it (silently wrong), and so without 'separately'; 'run stats on a.csv
    and b.csv' was refused. A one-table step whose words name two table files, or say
    "separately" / "one by one", runs once per table; run, the stacked table has each month's
    rows deduplicated on its own."""
    from raystack.workflow.engine import run_local
    for text in ("Dedup x.csv and y.csv separately and then join them on id.",
                 "Dedup x.csv and y.csv and then join them on id."):
        p = _plan(text)
        dedups = of_kind(p, "dedup")
        assert sorted(p.ir.by_id()[_refs(d.params["data"])[0]].params["path"] for d in dedups) == ["x.csv", "y.csv"]
        j = of_kind(p, "join")[0]
        assert {_refs(j.params["left"])[0], _refs(j.params["right"])[0]} == {d.id for d in dedups}, text
    assert _kinds(_plan("Please run stats on data/iris.csv and data/wine.csv.")).count("stats") == 2
    (months / "feb.csv").write_text("day,sales\n1,10\n1,10\n4,9\n")
    p = _plan("Load jan.csv and feb.csv, dedup them one by one, then stack them and write it to out/q.csv.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    assert rep.results[of_kind(p, "concat")[0].id].load(None).column("day").to_pylist() == [1, 2, 1, 4]


def test_the_parts_of_a_split_named_by_the_steps_that_read_them():
    """'train a knn on the training part and evaluate it on the test part', 'fit a knn on the
    train split' were refused ('training part', 'train' unplaced; "the train split" read as a
    second split): the training reads the split's train part and the evaluation its test part,
    as they do. A training said to read the test part (or an evaluation the training part) is
    refused."""
    for text in ("Load x.csv and split it 80/20. Train a knn on the training part and evaluate it on the test part.",
                 "Load x.csv, split it 70/30, fit a knn on the train split and score it on the test split.",
                 "Load x.csv, split it, train a knn on the train portion and evaluate on the held-out portion."):
        p = _plan(text)
        split = of_kind(p, "split_data")
        assert len(split) == 1 and not split[0].id.startswith("_"), text     # the split asked for, no other
        assert _refs(of_kind(p, "train_model")[0].params["data"]) == [split[0].id], text
        assert _refs(of_kind(p, "evaluate_model")[0].params["data"]) == [split[0].id], text
    for text in ("Load x.csv and split it 80/20. Train a knn on the test part and evaluate it on the training part.",
                 "Load x.csv and split it 80/20. Train a knn on the held-out part."):
        with pytest.raises(PlanRefused):
            _plan(text)


def test_a_model_named_as_what_is_evaluated_is_trained_first():
    """'evaluate a logistic regression on x.csv', 'evaluate a knn on a 30% hold-out set' were
    refused (the evaluation came before the model it names): the model is trained, then
    evaluated, on the split asked for. 'evaluate the knn' with none trained stays refused."""
    p = _plan("Load iris.csv and evaluate a knn on a 30% hold-out set.")
    split, train, ev = of_kind(p, "split_data")[0], of_kind(p, "train_model")[0], of_kind(p, "evaluate_model")[0]
    assert split.params["test_fraction"] == 0.3 and train.params["model"] == "knn"
    assert _refs(train.params["data"]) == [split.id] and _refs(ev.params["data"]) == [split.id]
    assert _refs(ev.params["model"]) == [train.id]
    p = _plan("Evaluate a logistic regression on x.csv.")
    train, ev = of_kind(p, "train_model")[0], of_kind(p, "evaluate_model")[0]
    assert train.params["model"] == "logistic" and _refs(ev.params["model"]) == [train.id]
    with pytest.raises(PlanRefused):
        _plan("Load x.csv, evaluate the knn.")


def test_a_file_named_in_full_is_not_a_join_or_concat_made_from_it():
    """'stack a.csv and b.csv; in parallel, compute stats on a.csv' computed the statistics of
    the stacked table (silently wrong: a.csv was made into it, so the check that a step reads
    the file it names let it pass); so for a join. Refused, naming both. A file named by its
    stem after a join ("count events per country") still reads the joined rows."""
    for text in ("Stack a.csv and b.csv; in parallel, compute stats on a.csv.",
                 "Join a.csv and b.csv on id; in parallel, compute stats on a.csv."):
        with pytest.raises(PlanRefused, match="names a.csv, but it would read"):
            _plan(text)
    p = _plan("Load users.csv and events.csv, join them on user_id, count events per country, and plot it.")
    agg = of_kind(p, "aggregate")[0]
    assert _refs(agg.params["data"]) == [of_kind(p, "join")[0].id]


def test_a_plotted_column_said_transformed_is_plotted_after_the_transform():
    """'normalize it, and then plot the normalized price column' normalized the table a second
    time after the plot, which drew the first numeric column; 'plot the normalized price column'
    with no normalize before plotted the raw table, then normalized it for nothing (silently
    wrong). One normalize, before the plot, and the plot draws the price column."""
    for text in ("Load x.csv, normalize it, and then plot the normalized price column.",
                 "Load x.csv and plot the normalized price column."):
        p = _plan(text)
        norm, plot = of_kind(p, "normalize"), of_kind(p, "plot")[0]
        assert len(norm) == 1 and _refs(plot.params["data"]) == [norm[0].id], text
        assert plot.params["column"] == "price", text


def test_a_sample_drawn_at_random_says_how_it_is_drawn():
    """'sample 2,000 rows at random' was refused ('random' unplaced): a drawn sample; 'the first
    100 rows at random' contradicts itself and stays refused."""
    s = of_kind(_plan("Load x.parquet, drop duplicate records, sample 2,000 rows at random, and save the sample "
                      "to s.parquet."), "sample")[0]
    assert s.params["rows"] == 2000 and "which" not in s.params
    with pytest.raises(PlanRefused):
        _plan("Load x.csv and keep the first 100 rows at random.")


def test_the_evaluation_a_share_is_held_out_for_evaluates_the_model_trained_next():
    """'hold out 20% for evaluation, train a knn, and deploy it if its accuracy is above 0.9' was
    refused (the evaluation came before any model): the model trained next is evaluated on the
    held-out share, and the condition reads that evaluation. With an evaluation asked for later
    ("..., and evaluate it") there is one evaluation."""
    p = _plan("Load a.csv and b.csv, stack them, hold out 20% for evaluation, train a knn, and deploy it if its "
              "accuracy is above 0.9.")
    split, train, ev = of_kind(p, "split_data")[0], of_kind(p, "train_model")[0], of_kind(p, "evaluate_model")[0]
    assert split.params["test_fraction"] == 0.2 and _refs(train.params["data"]) == [split.id]
    assert _refs(ev.params["model"]) == [train.id] and _refs(ev.params["data"]) == [split.id]
    deploy = of_kind(p, "deploy_model")[0]
    assert deploy.when and deploy.when[0].ref.step == ev.id
    assert len(of_kind(_plan("Load a.csv, hold out 20% for evaluation, train a knn, and evaluate it."),
                       "evaluate_model")) == 1


def test_a_column_s_average_or_extremes_asked_for_are_the_statistics(months):
    """'compute the average price', 'give me the maximum of amount' were refused: the statistics
    hold each numeric column's mean, median, minimum and maximum. Per group it stays an aggregate; run,
    the statistics hold the asked column's mean."""
    from raystack.workflow.engine import run_local
    for text in ("Load x.csv, dedup, and compute the average price.", "Load x.csv and give me the maximum of amount."):
        assert _kinds(_plan(text))[-1] == "stats", text
    assert _kinds(_plan("Load x.csv and compute the average price per city.")) == ["load_data", "aggregate"]
    p = _plan("Load jan.csv and compute the average sales.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    figures = rep.results[of_kind(p, "stats")[0].id].load(None)
    assert figures["columns"]["sales"]["mean"] == 11.0          # (10 + 12) / 2
    # the median too ('compute the median of price' was refused: the statistics had none)
    p = _plan("Load feb.csv and compute the median of sales.")
    assert _kinds(p) == ["load_data", "stats"]
    rep = run_local(p.ir)
    assert rep.results[of_kind(p, "stats")[0].id].load(None)["columns"]["sales"]["median"] == 9.0   # of 10, 7, 9


def test_a_question_about_a_column_is_answered_by_the_statistics_and_one_no_step_answers_is_refused(months):
    """'what is the mean sales in jan.csv?' was planned as the load alone (the question's words
    were taken for a description), and so were 'which rows of jan.csv have missing values?' and
    'what columns does jan.csv have?': a plan that answers nothing. A column's mean, median or
    extreme asked as a question is the statistics; a question no step answers is refused, quoting
    it; a question a step that keeps the best answers ('which base is better?') still plans."""
    from raystack.workflow.engine import run_local
    for text in ("What is the mean sales in jan.csv?", "what's the median of sales in jan.csv",
                 "Load jan.csv. What is the highest sales?"):
        assert _kinds(_plan(text)) == ["load_data", "stats"], text
    p = _plan("What is the median sales in feb.csv?")
    assert run_local(p.ir).results[of_kind(p, "stats")[0].id].load(None)["columns"]["sales"]["median"] == 9.0
    for text, quoted in (("Which rows of jan.csv have missing values?", "Which rows of jan.csv"),
                         ("What columns does jan.csv have?", "What columns does jan.csv")):
        with pytest.raises(PlanRefused, match=f"no step answers '{quoted}'"):
            _plan(text)
    p = _plan("Which is better on jan.csv, a knn or a logistic regression? Train both and keep the more accurate.")
    assert "select_best" in _kinds(p)
    # a "which" / "what" that opens no question is no question ('which has duplicates' is about the file)
    for text in ("Could you load jan.csv, which has duplicates, and drop them?", "Can you load jan.csv and drop what is duplicated?"):
        assert _kinds(_plan(text)) == ["load_data", "dedup"], text


def test_a_mean_said_after_a_grouping_is_the_aggregate_s_function(months):
    """'group by city and compute the mean price' summed each city's prices (the aggregate's
    default) and took the statistics of the sums; the mean (min, max) said after a grouping is
    what the aggregate computes per group (a median too, since the aggregate computes one), and
    a standard deviation per group, which it does not compute, is refused. The standard
    deviation of a column is in the statistics ('compute the std of price' was refused)."""
    from raystack.workflow.engine import run_local
    (months / "shops.csv").write_text("city,price\na,10\na,20\nb,5\n")
    for text, agg in (("Load shops.csv, group by city and compute the mean price.", "mean"),
                      ("Load shops.csv, group it by city and find the maximum price.", "max")):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "aggregate"], text
        assert of_kind(p, "aggregate")[0].params == {"data": of_kind(p, "aggregate")[0].params["data"],
                                                     "by": "city", "agg": agg}, text
    table = run_local(p.ir).results[of_kind(p, "aggregate")[0].id].load(None).to_pydict()
    assert dict(zip(table["city"], table["price"])) == {"a": 20, "b": 5}
    with pytest.raises(PlanRefused, match="the aggregate computes a sum, mean, median, count, min or max"):
        _plan("Load shops.csv, group by city and compute the std of price.")
    # a function already said stays: the mean of the per-city sums is the statistics
    assert _kinds(_plan("Load shops.csv, sum price per city, then compute the mean price.")) == \
        ["load_data", "aggregate", "stats"]
    for text in ("Load shops.csv and compute the std of price.", "Load shops.csv and compute the standard deviation of price.",
                 "Load shops.csv and give me the avg price."):
        assert _kinds(_plan(text)) == ["load_data", "stats"], text
    # "the max price per city" in one phrase (refused before; the mean and sum were planned)
    p = _plan("Load shops.csv. Compute the max price per city. Save to max.csv.")
    assert _kinds(p) == ["load_data", "aggregate", "write_table"]
    assert of_kind(p, "aggregate")[0].params["agg"] == "max"


def test_rows_missing_a_named_column_are_the_rows_dropped(tmp_path, monkeypatch):
    """'filter out rows with missing amount', 'drop rows with missing values in the amount
    column' dropped every row missing any value (a missing qty too), silently: the cleaning
    takes ``columns``, and the planner reads the column said. Missing values said of no column
    still drop a row missing anything; the dry run's stand-in table has the column named."""
    from raystack.workflow.dryrun import dry_run
    from raystack.workflow.engine import run_local
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders.csv").write_text("order_id,qty,amount\n1,1,10\n2,,12\n3,2,\n4,3,7\n")
    for text in ("Load orders.csv and filter out rows with missing amount.",
                 "Load orders.csv and drop rows with missing values in the amount column.",
                 "Load orders.csv and drop rows with a missing amount.",
                 "Load orders.csv and drop the rows with a missing amount."):     # refused before ('drop' unplaced)
        p = _plan(text)
        assert of_kind(p, "clean_data")[0].params["columns"] == ["amount"], text
    rows = run_local(p.ir).results[of_kind(p, "clean_data")[0].id].load(None).to_pydict()
    assert rows["order_id"] == [1, 2, 4]              # order 2 (no qty) kept, order 3 (no amount) dropped
    assert dry_run(p.ir, str(tmp_path / "dry")).status == "succeeded"
    p = _plan("Load orders.csv and drop rows with missing values.")
    assert "columns" not in of_kind(p, "clean_data")[0].params
    assert run_local(p.ir).results[of_kind(p, "clean_data")[0].id].load(None).to_pydict()["order_id"] == [1, 4]


def test_a_normalize_said_of_named_columns_scales_only_those(tmp_path, monkeypatch):
    """'normalize the price column', 'normalize price and area' scaled every numeric column (the
    second was refused): the step takes ``columns``, and the planner reads the bare names said.
    'normalize it / the features / the expression values' stays every feature column."""
    from raystack.workflow.dryrun import dry_run
    from raystack.workflow.engine import run_local
    monkeypatch.chdir(tmp_path)
    (tmp_path / "houses.csv").write_text("price,area,rooms,y\n10,50,2,0\n20,70,3,1\n30,90,4,0\n")
    for text, cols in (("Load houses.csv and normalize the price column.", ["price"]),
                       ("Read houses.csv and normalize price and area.", ["price", "area"]),
                       ("Load houses.csv, normalize price, dedup, and write it to n.csv.", ["price"])):
        p = _plan(text)
        assert of_kind(p, "normalize")[0].params["columns"] == cols, text
    p = _plan("Read houses.csv and normalize price and area.")
    out = run_local(p.ir).results[of_kind(p, "normalize")[0].id].load(None).to_pydict()
    assert out["rooms"] == [2, 3, 4] and abs(sum(out["price"])) < 1e-9 and abs(sum(out["area"])) < 1e-9
    assert dry_run(p.ir, str(tmp_path / "dry")).status == "succeeded"
    for text in ("Load houses.csv, normalize it and train a knn.", "Load houses.csv and normalize the features.",
                 "Load houses.csv and normalize the expression values."):
        assert "columns" not in of_kind(_plan(text), "normalize")[0].params, text
