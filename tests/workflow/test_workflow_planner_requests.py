"""The rule planner on common table requests it refused (the eleventh round, on requests of the
developer's own wording, none from a set): a join's kind and which table is its left side, a
range of k, a retry said of every step, the first or last rows of a table and "keep only 30%".
Each was refused before, or planned wrong; the table steps they plan are run on real files."""

from __future__ import annotations

import pyarrow as pa
import pytest

from raystack.workflow.nl import PlanRefused
from raystack.workflow.table_steps import join, sample

from planner_util import kinds as _kinds, of_kind, plan as _plan, refs as _refs


def _write(path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture()
def shop(tmp_path, monkeypatch):
    """orders.csv (customer 3 has none) and customers.csv, in the working directory."""
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "orders.csv", "customer_id,amount\n1,10\n1,5\n2,7\n4,9\n")
    _write(tmp_path / "customers.csv", "customer_id,region\n1,4\n2,5\n3,6\n")
    return tmp_path


def _join_of(p):
    j = of_kind(p, "join")[0]
    paths = {s.id: s.params["path"] for s in of_kind(p, "load_data")}
    return paths[_refs(j.params["left"])[0]], paths[_refs(j.params["right"])[0]], j.params.get("how", "inner")


def test_a_join_kind_is_read_and_its_left_side_is_the_table_the_words_name_first(shop):
    """'left join customers with orders' after loading orders.csv first: the left side was the
    table loaded first, so the join kept every order, not every customer (and "left" itself was
    unaccounted, refusing the request). The left table is the one named first, or the one after
    "onto" / "into"; run, the left join keeps customer 3, who has no orders."""
    from raystack.workflow.engine import run_local
    cases = {
        "Load orders.csv and customers.csv, then left join customers with orders on customer_id.":
            ("customers.csv", "orders.csv", "left outer"),
        "Load orders.csv and customers.csv, then left join orders with customers on customer_id.":
            ("orders.csv", "customers.csv", "left outer"),
        "Load orders.csv and customers.csv, then left join orders onto customers on customer_id.":
            ("customers.csv", "orders.csv", "left outer"),
        "Load orders.csv and customers.csv, then merge customers into orders on customer_id.":
            ("orders.csv", "customers.csv", "inner"),
        "Load orders.csv and customers.csv and right join them on customer_id.":
            ("orders.csv", "customers.csv", "right outer"),
        "Load orders.csv and customers.csv, do an inner join on customer_id, then compute stats.":
            ("orders.csv", "customers.csv", "inner"),
        "Load orders.csv and customers.csv, then full outer join them on customer_id.":
            ("orders.csv", "customers.csv", "full outer"),
    }
    for text, want in cases.items():
        assert _join_of(_plan(text)) == want, text
    p = _plan("Load orders.csv and customers.csv, left join customers with orders on customer_id, "
              "and write the result to out/joined.csv.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    joined = rep.results[of_kind(p, "join")[0].id].load(None)
    assert sorted(set(joined.column("customer_id").to_pylist())) == [1, 2, 3]   # every customer, none added
    assert joined.num_rows == 4                                                  # 1 twice, 2 once, 3 with none


def test_a_left_join_naming_one_table_is_refused():
    """Which side keeps every row would be a guess."""
    with pytest.raises(PlanRefused, match="names only customers.csv"):
        _plan("Load orders.csv and customers.csv, then left join customers on customer_id.")


def test_the_join_step_takes_every_kind_it_is_planned_with():
    left = pa.table({"k": [1, 2], "a": [10, 20]})
    right = pa.table({"k": [2, 3], "b": [5, 6]})
    sizes = {how: join(left, right, on="k", how=how).num_rows
             for how in ("inner", "left outer", "right outer", "full outer")}
    assert sizes == {"inner": 1, "left outer": 2, "right outer": 2, "full outer": 3}


def test_a_range_of_k_maps_the_training_over_each_value():
    """'for k from 1 to 5' / 'k between 1 and 5': both ends included, one training each; a range
    past the map's limit or written backwards is refused, saying so."""
    for text in ("Train a knn on iris.csv for k from 1 to 5 and keep the best.",
                 "Train a knn on iris.csv for k between 1 and 5, evaluate each, and keep the best."):
        p = _plan(text)
        trains = of_kind(p, "train_model")
        assert sorted(t.params["k"] for t in trains) == [1, 2, 3, 4, 5], text
        assert _kinds(p)[-1] == "select_best"
    # the map said before the verb, in a later clause ("and for k from 3 to 5 train ...")
    p = _plan("Load ratings.csv, dedup it, and for k from 3 to 5 train a knn on it, then pick the best by accuracy.")
    assert sorted(t.params["k"] for t in of_kind(p, "train_model")) == [3, 4, 5]
    p = _plan("Load ratings.csv, keep only 20% of it, then for k in 2, 4 and 8 train a knn on it.")
    assert sorted(t.params["k"] for t in of_kind(p, "train_model")) == [2, 4, 8]
    with pytest.raises(PlanRefused, match="at most 32"):
        _plan("Train a knn on iris.csv for k from 1 to 100.")
    with pytest.raises(PlanRefused, match="the smaller first"):
        _plan("Train a knn on iris.csv for k from 9 to 3.")


def test_a_retry_said_of_every_step_sets_every_step_s_retries():
    """'retry every step twice' and 'retry each step up to 3 times' were refused; 'with up to 3
    retries per step' gave the retries to the training only."""
    for text, n in (("Load data.csv, dedup it, and train a logistic model on it; retry every step twice.", 2),
                    ("Load data.csv, dedup it, and train a logistic model on it; retry each step up to 3 times.", 3),
                    ("Load data.csv and train a logistic model on it, with up to 3 retries per step.", 3)):
        p = _plan(text)
        named = [d for d in p.draft.steps if not d.implicit]
        assert [d.retries for d in named] == [n] * len(named), text


def test_the_first_or_last_rows_and_a_share_to_keep_are_a_subset(shop):
    """'keep the first 100 rows' (the ordinal was a sequence cue, "100" unaccounted), 'the last
    500 records', 'keep only 30% of it': a subset in file order, or drawn; "30% ... for testing"
    is still no subset (it is a split's wording)."""
    from raystack.workflow.engine import run_local
    want = {"Load events.parquet, keep the first 100 rows and save them to out/head.csv.": {"rows": 100, "which": "first"},
            "Load events.parquet, keep the last 500 records, and compute stats.": {"rows": 500, "which": "last"},
            "Load big.csv, use only the first 50 lines and dedup them.": {"rows": 50, "which": "first"},
            "Load logs.csv, keep only 30% of it, then train a knn on it.": {"fraction": 0.3}}
    for text, params in want.items():
        s = of_kind(_plan(text), "sample")[0]
        assert {k: v for k, v in s.params.items() if k != "data"} == params, text
    with pytest.raises(PlanRefused):
        _plan("Load logs.csv, keep only 30% of it for testing, then train a knn on it.")
    p = _plan("Load shipments.csv and carriers.csv, left join carriers onto shipments on carrier_id, keep only 10% "
              "of the result, and plot the weight column.")
    assert of_kind(p, "sample")[0].params["fraction"] == 0.1
    assert _refs(of_kind(p, "sample")[0].params["data"]) == [of_kind(p, "join")[0].id]
    _write(shop / "orders_all.csv", "n\n" + "".join(f"{i}\n" for i in range(10)))
    p = _plan("Load orders_all.csv, keep the last 3 rows and write them to out/tail.csv.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    assert rep.results[of_kind(p, "sample")[0].id].load(None).column("n").to_pylist() == [7, 8, 9]


def test_the_sample_step_keeps_file_order_and_a_head_of_a_short_table_is_all_of_it():
    t = pa.table({"n": list(range(10))})
    assert sample(t, rows=3, which="first").column("n").to_pylist() == [0, 1, 2]
    assert sample(t, fraction=0.2, which="last").column("n").to_pylist() == [8, 9]
    assert sample(t, rows=50, which="first").num_rows == 10
    drawn = sample(t, rows=4, seed=1).column("n").to_pylist()
    assert drawn == sorted(drawn) and len(set(drawn)) == 4
    with pytest.raises(ValueError, match="sample of 50 rows"):
        sample(t, rows=50)
    with pytest.raises(ValueError, match="fraction"):
        sample(t, fraction=1.5)


def test_a_one_table_step_said_of_each_of_two_loaded_tables_runs_on_each(shop):
    """'load a.csv and b.csv, dedup each (or: dedup them), and join them': the dedup ran on the
    last table only, and the join paired the first table, never deduplicated, with it. Now one
    step per table, and the join reads both."""
    from raystack.workflow.engine import run_local
    for text in ("Load orders.csv and customers.csv, dedup each, and join them on customer_id.",
                 "Load orders.csv and customers.csv, dedup them, and join them on customer_id.",
                 "Load orders.csv and customers.csv, keep the first 2 rows of each, and join them on customer_id."):
        p = _plan(text)
        kind = "dedup" if "dedup" in text else "sample"
        per_table = of_kind(p, kind)
        loads = {s.id for s in of_kind(p, "load_data")}
        assert sorted(r for s in per_table for r in _refs(s.params["data"])) == sorted(loads), text
        j = of_kind(p, "join")[0]
        assert sorted(_refs(j.params["left"]) + _refs(j.params["right"])) == sorted(s.id for s in per_table), text
    _write(shop / "orders.csv", "customer_id,amount\n1,10\n1,10\n2,7\n")
    _write(shop / "customers.csv", "customer_id,region\n1,4\n1,4\n2,5\n")
    p = _plan("Load orders.csv and customers.csv, dedup each, and join them on customer_id.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    assert rep.results[of_kind(p, "join")[0].id].load(None).num_rows == 2


def test_limiting_a_table_to_its_first_rows_plans_and_cutting_them_refuses():
    """'limit it to the first 200 rows' ('to the first' was taken for an ambiguous ordinal
    reference); 'truncate the first 1000 rows' / 'cut the first 10 rows' / 'skip the first 10
    rows' could mean removing them, so they stay refused."""
    s = of_kind(_plan("Load big.csv, limit it to the first 200 rows, then train a knn."), "sample")[0]
    assert (s.params["rows"], s.params["which"]) == (200, "first")
    for text in ("Load big.csv, truncate the first 1000 rows and compute stats.",
                 "Load big.csv, cut the first 10 rows and compute stats.",
                 "Load big.csv, skip the first 10 rows and compute stats.",
                 "Load big.csv, drop the first 3 rows and compute stats."):
        with pytest.raises(PlanRefused):
            _plan(text)


def test_a_plotted_column_named_by_its_name_is_the_column_plotted(shop):
    """'plot column x, then plot column y' and 'plot the price column' drew the table's first
    numeric column (the name was left as the plot's object); 'a histogram of price' and 'the
    distribution of price' were refused. "plot the readings" stays a plot of the table."""
    from raystack.workflow.engine import run_local
    want = {"Load big.csv and plot the price column.": ["price"],
            "Load big.csv and plot a histogram of price.": ["price"],
            "Load big.csv and plot the distribution of price to out/p.png.": ["price"],
            "Load iris.csv and plot petal_length.": ["petal_length"],
            "Load data/a.csv and plot column x, then plot column y.": ["x", "y"],
            "Load sensors.csv and plot the readings.": [None]}
    for text, cols in want.items():
        assert [s.params.get("column") for s in of_kind(_plan(text), "plot")] == cols, text
    _write(shop / "big.csv", "id,price\n1,3.5\n2,4.0\n3,9.0\n")
    p = _plan("Load big.csv, keep the first 2 rows and draw a histogram of the price column.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    assert of_kind(p, "plot")[0].params["column"] == "price"


def test_several_columns_named_for_a_plot_are_one_plot_each_and_a_grouping_key_is_no_notification():
    """'a histogram of the amount column, then another of the qty column' made one plot (of
    amount) and dropped the second; 'visits per page' planned a notification ("page" as a
    verb) and aggregated by nothing."""
    for text in ("Load sales.csv and plot a histogram of the amount column, then another of the qty column.",
                 "Load sales.csv and plot the amount and qty columns."):
        assert [s.params["column"] for s in of_kind(_plan(text), "plot")] == ["amount", "qty"], text
    p = _plan("Read visits.csv, keep the last 1,000 rows, aggregate visits per page and save the table to "
              "out/pages.csv.")
    assert _kinds(p) == ["load_data", "sample", "aggregate", "write_table"]
    assert of_kind(p, "aggregate")[0].params["by"] == "page"


def test_a_table_written_to_a_json_file_is_written_as_json_lines_not_exported(shop):
    """'compute stats and write them to out/stats.json' / 'dedupe it and save it to c.json'
    were refused (a .json file was always a model's export); after a model and then statistics,
    the statistics are what "save them" writes. A model saved as .json stays an export."""
    from raystack.workflow.engine import run_local
    from raystack.workflow.table_steps import load_data
    for text, kind in (("Load orders.csv, compute summary stats and write them to out/stats.json.", "write_table"),
                       ("Load orders.csv, dedupe it, and save it to out/clean.jsonl.", "write_table"),
                       ("Load iris.csv, train a logistic model, compute stats on iris.csv and save them to "
                        "out/s.json.", "write_table"),
                       ("Train a logistic model on iris.csv and save it to models/lr.json.", "export_model")):
        assert _kinds(_plan(text))[-1] == kind, text
    p = _plan("Load orders.csv, dedupe it, and save it to out/clean.json.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    written = load_data(rep.results[of_kind(p, "write_table")[0].id].load(None).path)
    assert written.num_rows == 4 and written.column_names == ["customer_id", "amount"]


@pytest.mark.parametrize("ext", [".csv", ".tsv", ".json", ".jsonl", ".parquet", ".pq"])
def test_write_table_writes_the_format_its_extension_names_and_load_data_reads_it_back(tmp_path, ext):
    """A .tsv was written as Parquet bytes, and so was a .json: neither read back."""
    from raystack.workflow.table_steps import load_data, write_table
    t = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    art = write_table(t, str(tmp_path / f"t{ext}"))
    assert load_data(art.path).to_pylist() == t.to_pylist()
    with pytest.raises(ValueError, match="no table extension"):
        write_table(t, str(tmp_path / "t.txt"))


def test_a_file_named_in_a_later_step_is_loaded_for_that_step_only(shop):
    """'load orders.csv, dedup it, and join it with customers.csv': the load of customers.csv
    (named in the join's words) was moved before the join and then before the dedup too, so
    the dedup read customers.csv and the join paired raw orders with it. 'left join it with
    customers.csv': 'it' is the other side, where the words put it. "Normalize a.csv, then
    normalize b.csv too" was refused for the same reason and now plans."""
    from raystack.workflow.engine import run_local
    for text, how in (("Load orders.csv, dedup it, and join it with customers.csv on customer_id.", "inner"),
                      ("Load orders.csv, dedup it, and left join it with customers.csv on customer_id.", "left outer")):
        p = _plan(text)
        dedup = of_kind(p, "dedup")[0]
        loads = {s.params["path"]: s.id for s in of_kind(p, "load_data")}
        j = of_kind(p, "join")[0]
        assert _refs(dedup.params["data"]) == [loads["orders.csv"]], text
        assert (_refs(j.params["left"]), _refs(j.params["right"]), j.params.get("how", "inner")) == \
            ([dedup.id], [loads["customers.csv"]], how), text
    _write(shop / "orders.csv", "customer_id,amount\n1,10\n1,10\n4,9\n")
    p = _plan("Load orders.csv, dedup it, and left join it with customers.csv on customer_id.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    joined = rep.results[of_kind(p, "join")[0].id].load(None)
    assert sorted(zip(joined.column("customer_id").to_pylist(), joined.column("region").to_pylist())) == \
        [(1, 4), (4, None)]          # the orders deduplicated, each kept, customer 4 unmatched
    p = _plan("Normalize data/a.csv, then normalize data/b.csv too.")
    assert sorted(s.params["path"] for s in of_kind(p, "load_data")) == ["data/a.csv", "data/b.csv"]
    loads = {s.id: s.params["path"] for s in of_kind(p, "load_data")}
    assert sorted(loads[_refs(n.params["data"])[0]] for n in of_kind(p, "normalize")) == ["data/a.csv", "data/b.csv"]


def test_a_model_trained_after_a_new_table_trains_on_that_table():
    """'split it, train a logistic model, then sample 50% of the table and train a knn on that'
    trained the knn on the first split (of the whole table): a table made after a split that
    nothing reads yet is what the next model trains on, through its own split."""
    p = _plan("Load data/iris.csv, split it, train a logistic model, then sample 50% of the table and train "
              "a knn on that.")
    by = p.ir.by_id()
    knn = next(s for s in of_kind(p, "train_model") if s.params["model"] == "knn")
    split = by[_refs(knn.params["data"])[0]]
    assert split.fn.endswith(":split_data") and by[_refs(split.params["data"])[0]].fn.endswith(":sample")


def test_a_column_plotted_after_statistics_is_the_table_s_column_and_top_rows_are_no_head():
    """'compute stats and plot the temp column' plotted the statistics' figures (a dict has no
    columns): the plot reads the table the statistics were computed on. 'count rows per status;
    keep the top 10 rows' would keep the first 10 in table order, not the largest counts: "top"
    says an order no step makes, so it is refused."""
    p = _plan("Load weather.csv and stations.csv, left join stations with weather on station_id, then compute "
              "stats and plot the temp column.")
    plot, join, stats = of_kind(p, "plot")[0], of_kind(p, "join")[0], of_kind(p, "stats")[0]
    assert _refs(plot.params["data"]) == [join.id] and stats.id in plot.after
    with pytest.raises(PlanRefused):
        _plan("Load logs.parquet; count rows per status; keep the top 10 rows; write it to out/top.csv.")


def test_a_comparison_by_a_named_metric_is_the_pick_the_winner_names():
    """'compare them by F1, and export the winner' was refused ('compare', 'F1' unaccounted):
    a comparison of the results by a metric picks by it, and 'the winner' is that pick."""
    p = _plan("Read customers.parquet, train logistic and centroid models, compare them by F1, and export the "
              "winner to models/churn.json.")
    picks = of_kind(p, "select_best")
    assert len(picks) == 1 and picks[0].params["metric"] == "f1" and len(_refs(picks[0].params["results"])) == 2
    assert _refs(of_kind(p, "export_model")[0].params["model"]) == [picks[0].id]


def test_instead_in_a_conditional_clause_is_the_condition_s_word():
    """'if the rmse is above 10, train a knn with k=3 instead' was refused ('instead'
    unaccounted); the conditional training is the plan, and 'instead' outside a condition
    still refuses."""
    p = _plan("Load sales.csv, split it 90/10, train a linear model and evaluate it; if the rmse is above 10, "
              "train a knn with k=3 instead.")
    knn = next(s for s in of_kind(p, "train_model") if s.params["model"] == "knn")
    assert knn.when and knn.when[0].ref.key == "rmse" and knn.when[0].op == ">" and knn.when[0].value == 10
    with pytest.raises(PlanRefused, match="instead"):
        _plan("Load sales.csv, train a linear model instead of a knn.")
    p = _plan("Load x.csv and train knn models for k = 1 to 9, then keep the best by accuracy.")
    assert sorted(t.params["k"] for t in of_kind(p, "train_model")) == list(range(1, 10))


def test_a_removal_of_two_kinds_of_rows_is_two_steps(shop):
    """'remove duplicates and rows with missing values' deduplicated only (the second object was
    taken for the dedup's words): silently wrong. 'drop the nulls and the duplicates' and
    'remove duplicates and nulls' were refused. Each is a dedup and a clean, in the order said."""
    from raystack.workflow.engine import run_local
    for text, order in (("Load bookings.csv, remove duplicates and rows with missing values, then compute stats.",
                         ["dedup", "clean_data"]),
                        ("Load bookings.csv, drop the nulls and the duplicates, then compute stats.",
                         ["clean_data", "dedup"]),
                        ("Load bookings.csv, remove duplicates and nulls, then compute stats.", ["dedup", "clean_data"])):
        assert _kinds(_plan(text)) == ["load_data", *order, "stats"], text
    _write(shop / "bookings.csv", "a,b\n1,2\n1,2\n3,\n4,5\n")
    p = _plan("Load bookings.csv, remove duplicates and rows with missing values, and write it to out/b.csv.")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    assert rep.results[of_kind(p, "clean_data")[0].id].load(None).to_pylist() == [{"a": 1, "b": 2}, {"a": 4, "b": 5}]
    s = of_kind(_plan("Load houses.csv, keep the last 20% of it, and train a linear regression."), "sample")[0]
    assert (s.params["which"], s.params["fraction"]) == ("last", 0.2)


def test_two_ends_of_one_table_are_both_of_that_table_and_a_part_of_a_part_says_so(shop):
    """'take the first 20 rows and compute stats, and separately take the last 20 rows and
    compute stats' took the last 20 of the first 20 (the same rows); 'take the first 200 rows,
    then keep the last 5 rows of it' was refused (the two phrases were merged into one step).
    'In parallel, compute stats and write them to s.csv' wrote the table, not the statistics
    (the group's members were side by side, so the write could not read the stats)."""
    from raystack.workflow.engine import run_local
    _write(shop / "inventory.csv", "n\n" + "".join(f"{i}\n" for i in range(50)))
    p = _plan("Load inventory.csv, take the first 20 rows and compute stats, and separately take the last 20 rows "
              "and compute stats.")
    load = of_kind(p, "load_data")[0]
    assert [_refs(s.params["data"]) for s in of_kind(p, "sample")] == [[load.id], [load.id]]
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    last = rep.results[of_kind(p, "sample")[1].id].load(None)
    assert last.column("n").to_pylist() == list(range(30, 50))
    p = _plan("Load inventory.csv, take the first 200 rows, then keep the last 5 rows of it and compute stats.")
    first, tail = of_kind(p, "sample")
    assert _refs(tail.params["data"]) == [first.id] and (tail.params["which"], tail.params["rows"]) == ("last", 5)
    p = _plan("Load data/iris.csv, normalize it; in parallel, compute stats and write them to out/s.csv.")
    assert _refs(of_kind(p, "write_table")[0].params["data"]) == [of_kind(p, "stats")[0].id]


def test_a_split_asked_for_stays_the_model_s_and_a_transform_nothing_reads_is_refused():
    """'split it 70/30, normalize the data, and train a knn': the round's fresh-table rule
    trained on an implicit 80/20 split of the normalized table (the 70/30 split unread); before
    the round it trained on the 70/30 split of the unnormalized table (the normalize unread).
    Either way part of the request was dropped: it is refused, saying which step reads what. A
    transform said to be skipped ("train on the un-normalized table") and two independent
    chains ("normalize a.csv, then normalize b.csv too") still plan."""
    with pytest.raises(PlanRefused, match="makes a table no step reads"):
        _plan("Load x.csv, split it 70/30, normalize the data, and train a knn.")
    # a split said in the evaluation's words right after the training is the training's split
    # too (the twelfth round; it was refused here: the training made its own and the 30% went
    # unread); with another step between them it still is refused
    p = _plan("Load iris.csv and train logistic regression; evaluate on a 30% test split; write the metrics to "
              "out/m.csv.")
    split = of_kind(p, "split_data")
    assert len(split) == 1 and split[0].params["test_fraction"] == 0.3
    assert _refs(of_kind(p, "train_model")[0].params["data"]) == [split[0].id]
    assert _refs(of_kind(p, "evaluate_model")[0].params["data"]) == [split[0].id]
    with pytest.raises(PlanRefused, match="makes a split no step reads"):
        _plan("Load iris.csv and train logistic regression; compute stats; evaluate on a 30% test split.")
    # a transform after the training and the split of its rows: the model read the raw table and
    # an implicit 80/20 split, and the normalize and the 30% split went unread (silently wrong)
    with pytest.raises(PlanRefused, match="makes a split no step reads"):
        _plan("Load iris.csv, train logistic regression, then normalize it; evaluate on a 30% test split.")
    # words that keep or leave rows out, no step made for them, are no description of the data
    with pytest.raises(PlanRefused, match="keep rows"):
        _plan("Load tickets.csv, keep rows with missing values out, and count tickets per priority.")
    p = _plan("Load data/iris.csv, normalize it, then train a logistic model on the un-normalized table.")
    assert of_kind(p, "normalize") and of_kind(p, "train_model")
    assert len(of_kind(_plan("Normalize data/a.csv, then normalize data/b.csv too."), "normalize")) == 2


def test_a_file_loaded_with_others_and_named_again_is_refused():
    """'load x.csv and y.csv, dedup them, and train a knn on x.csv' loaded x.csv a second time
    and trained on the raw file; the deduplicated x.csv went unread (silently wrong)."""
    with pytest.raises(PlanRefused, match="x.csv is loaded together with other files"):
        _plan("Load x.csv and y.csv, dedup them, and train a knn on x.csv.")


def test_a_chart_saved_to_an_image_file_is_the_chart_s_path():
    """'draw a histogram of the latency_ms column, then save it to out/lat.png' was refused (the
    save was taken for a model's export)."""
    p = _plan("Load metrics.csv and draw a histogram of the latency_ms column, then save it to out/lat.png.")
    assert _kinds(p) == ["load_data", "plot"]
    plot = of_kind(p, "plot")[0]
    assert (plot.params["path"], plot.params["column"]) == ("out/lat.png", "latency_ms")


def test_rows_ignored_or_excluded_are_removed_and_other_ignoring_refuses():
    """'ignore rows with missing values, train a logistic model' trained on every row: the
    words were taken for a description of the data and dropped (silently wrong). Ignoring,
    omitting, skipping or excluding bad rows or duplicates removes them; ignoring anything no
    step removes ("the outliers") is refused."""
    for text, kind in (("Load loans.csv, ignore rows with missing values, train a logistic model, and evaluate it.",
                        "clean_data"),
                       ("Load loans.csv, skip incomplete records and compute stats.", "clean_data"),
                       ("Load loans.csv, exclude duplicates, then train a knn.", "dedup")):
        assert _kinds(_plan(text))[1] == kind, text
    with pytest.raises(PlanRefused, match="ignore"):
        _plan("Load loans.csv, ignore the outliers and compute stats.")


def test_a_split_into_train_and_test_is_no_evaluation():
    """'split it into train and test, train a model' was refused ('test' was taken for an
    evaluation, leaving "train" unaccounted); "train and evaluate a model" still evaluates."""
    p = _plan("Load credit.csv, split it into train and test, train a model, and evaluate it on the test set.")
    assert _kinds(p) == ["load_data", "split_data", "train_model", "evaluate_model"]
    assert "evaluate_model" in _kinds(_plan("Load data/iris.csv and for each of logistic, knn and centroid, train and "
                                            "evaluate a model, then pick the best."))
    p = _plan("Load credit.csv, use 15% of it as a test set, train a knn, evaluate it and report the accuracy.")
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.15
    assert _refs(of_kind(p, "train_model")[0].params["data"]) == [of_kind(p, "split_data")[0].id]


def test_the_evaluation_saved_is_the_evaluation_s_report():
    """'evaluate it with rmse, and save the evaluation to out/eval.json' was refused ('evaluation'
    unplaced; the save was taken for the model's export) (the thirteenth round)."""
    p = _plan("Load rides.csv, train a linear regression, evaluate it with rmse, and save the evaluation to "
              "out/eval.json.")
    assert _kinds(p) == ["load_data", "train_model", "evaluate_model", "save_report"]
    report = of_kind(p, "save_report")[0]
    assert report.params["path"] == "out/eval.json"
    assert _refs(report.params["result"]) == [of_kind(p, "evaluate_model")[0].id]
    # saved both ways: the report is of the evaluation too, not of the table file written
    p = _plan("Load data/iris.csv, train logistic, evaluate it, and save the evaluation as a table in "
              "out/eval.parquet and as a report in reports/eval.json.")
    assert _kinds(p) == ["load_data", "train_model", "evaluate_model", "write_table", "save_report"]
    assert _refs(of_kind(p, "save_report")[0].params["result"]) == [of_kind(p, "evaluate_model")[0].id]

    # a part's figure reported with a modifier ("report the final validation loss" was refused)
    p = _plan("Pretrain tiny-20m with DiLoCo on 2 ranks and report the final validation loss.")
    assert _kinds(p) == ["edit_pretrain", "save_report"]
    assert _refs(of_kind(p, "save_report")[0].params["result"]) == [of_kind(p, "edit_pretrain")[0].id]


def test_a_list_of_k_said_after_the_training_is_one_knn_per_k():
    """'train knn models for k in 3, 5, 7 and keep the best' was refused (the 'for k in' phrase
    was read as the next step's, the selection's), and so were 'k set to 3, 5 and 9' and 'with 3,
    5 and 7 neighbours': one knn per k, then the best kept. 'for each k in 2, 4 and 8 train ...'
    before the training stays the training's."""
    for text, ks in (("Load x.csv, train knn models for k in 3, 5, 7 and keep the best.", [3, 5, 7]),
                     ("Load x.csv and train knn models with k set to 3, 5 and 9, keeping the best.", [3, 5, 9]),
                     ("Load x.csv and train a knn with 3, 5 and 7 neighbours and keep the best.", [3, 5, 7]),
                     ("Load x.csv, then for each k in 2, 4 and 8 train a knn and keep the best.", [2, 4, 8])):
        p = _plan(text)
        assert [s.params["k"] for s in of_kind(p, "train_model")] == ks, text
        assert len(of_kind(p, "select_best")[0].params["results"]) == len(ks), text


def test_a_random_subset_and_its_seed_said_in_other_words(shop):
    """'keep only 3 random rows', 'keep a random 50%', 'randomly pick 2 rows' were refused
    ('keep', 'random 50%', 'randomly' unplaced), and 'sample 50% with seed 7' / 'split it 75/25
    with seed 3' refused the seed: the sample (its seed) and the split's seed. Run on a real file,
    the sample has the rows asked for."""
    from raystack.workflow.engine import run_local
    for text, params in (("Load orders.csv and keep only 3 random rows.", {"rows": 3}),
                         ("Load orders.csv, keep a random 50%, and compute its statistics.", {"fraction": 0.5}),
                         ("Load orders.csv, then randomly pick 2 rows and write them to s.csv.", {"rows": 2}),
                         ("Load orders.csv, sample 50% of the rows with seed 7 and compute statistics.",
                          {"fraction": 0.5, "seed": 7})):
        p = _plan(text)
        got = of_kind(p, "sample")[0].params
        assert {k: got[k] for k in params} == params and got.get("which", "random") == "random", text
    p = _plan("Load orders.csv and keep only 3 random rows.")
    assert run_local(p.ir).results[of_kind(p, "sample")[0].id].load(None).num_rows == 3
    assert of_kind(_plan("Load orders.csv, split it 75/25 with seed 3, and train a knn."), "split_data")[0].params["seed"] == 3
