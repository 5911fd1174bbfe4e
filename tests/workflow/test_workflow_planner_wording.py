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
