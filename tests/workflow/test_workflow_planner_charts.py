"""Charts asked for by their kind (the thirteenth planner round, requests of the developer's own
wording): a line chart drew the column's histogram, a box plot and "price vs area" drew the
first numeric column's histogram (silently wrong); bar charts of per-group totals drew a
histogram of the totals. The plot step draws a histogram, bars or a line (``kind``; ``auto``
draws bars for a per-group table); the planner reads the kind said, and refuses kinds the step
cannot draw. Plans are run on real CSV files."""

from __future__ import annotations

import pyarrow as pa
import pytest

from raystack.workflow.nl import PlanRefused
from raystack.workflow.table_steps import plot

from planner_util import kinds as _kinds, of_kind, plan as _plan


@pytest.fixture()
def readings(tmp_path, monkeypatch):
    """temps.csv (a reading per hour, three sites) in the working directory."""
    monkeypatch.chdir(tmp_path)
    rows = [f"{h},{site},{15 + h % 7}" for h, site in zip(range(24), ["a", "b", "c"] * 8)]
    (tmp_path / "temps.csv").write_text("hour,site,temperature\n" + "\n".join(rows) + "\n")
    return tmp_path


def test_the_chart_kind_said_is_the_chart_drawn(readings):
    from raystack.workflow.engine import run_local
    p = _plan("Load temps.csv and draw a line chart of the temperature column to out/t.png.")
    assert _kinds(p) == ["load_data", "plot"]
    assert of_kind(p, "plot")[0].params["kind"] == "line"
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    drawn = rep.results[of_kind(p, "plot")[0].id].load(None)
    assert drawn.info["kind"] == "line" and drawn.path.endswith("t.png")
    # the column named after the chart's kind ("a line graph of consumption" was refused)
    line = of_kind(_plan("Load temps.csv and make a line graph of temperature."), "plot")[0]
    assert (line.params["kind"], line.params["column"]) == ("line", "temperature")
    # "as a line", "over time": a line of the column named before them (it was the first numeric
    # column's histogram)
    for text in ("Load temps.csv and plot temperature as a line.", "Load temps.csv and plot temperature over time."):
        line = of_kind(_plan(text), "plot")[0]
        assert (line.params["kind"], line.params["column"]) == ("line", "temperature"), text
    # per-group totals "as a bar chart": one bar per site (the plot drew the totals' histogram)
    p = _plan("Load temps.csv, compute the mean temperature per site, then plot it as a bar chart.")
    assert _kinds(p) == ["load_data", "aggregate", "plot"]
    rep = run_local(p.ir)
    assert rep.results[of_kind(p, "plot")[0].id].load(None).info["kind"] == "bar"
    # a raw column with no kind said stays its histogram
    assert rep.status == "succeeded"
    p = _plan("Load temps.csv and plot the temperature column.")
    assert run_local(p.ir).results[of_kind(p, "plot")[0].id].load(None).info["kind"] == "histogram"
    # "plot temperature": that column ('hour', the first numeric one, was drawn); a word that
    # names the rows themselves ("plot the readings") stays the table's plot
    for text in ("Load temps.csv and plot temperature.", "Load temps.csv, take a 50% sample, then plot temperature to t.png.",
                 "temps.csv => dedup => plot temperature => t.png"):
        p = _plan(text)
        assert of_kind(p, "plot")[0].params["column"] == "temperature", text
        assert run_local(p.ir).results[of_kind(p, "plot")[0].id].load(None).info["column"] == "temperature", text
    assert "column" not in of_kind(_plan("Load temps.csv and plot the readings."), "plot")[0].params
    # "show" / "display" a chart of a column (refused: 'show' unplaced)
    for text in ("Load temps.csv and show the distribution of temperature.", "Load temps.csv and show me a histogram of temperature.",
                 "Load temps.csv and display a bar chart of temperature."):
        assert of_kind(_plan(text), "plot")[0].params["column"] == "temperature", text
    # "as a histogram" was refused ('histogram' unplaced); on per-group totals it is not auto's bars
    p = _plan("Load temps.csv, compute the mean temperature per site, then plot it as a histogram.")
    assert of_kind(p, "plot")[0].params["kind"] == "histogram"
    assert run_local(p.ir).results[of_kind(p, "plot")[0].id].load(None).info["kind"] == "histogram"


def test_a_chart_the_plot_step_cannot_draw_is_refused_naming_it():
    for text, said in (("Load p.csv and draw a scatter plot of price against area.", "scatter plot"),
                       ("Load p.csv, total sales per region, and draw a box plot.", "box plot"),
                       ("Load p.csv and make a pie chart of the sales column.", "pie chart"),
                       ("Load p.csv and draw a heatmap of price.", "heatmap"),
                       ("Load p.csv and plot price vs area.", "price vs area"),
                       # a figure per group with no aggregate: it drew every row's amount
                       ("Draw a bar chart of amount per category from p.csv.", "per category"),
                       ("Load p.csv and plot the amount column by region.", "by region")):
        with pytest.raises(PlanRefused, match=said):
            _plan(text)


def test_auto_draws_bars_for_a_per_group_table_and_a_histogram_otherwise(tmp_path):
    per_region = pa.table({"region": ["n", "s", "e"], "sales": [1.0, 2.0, 3.0]})
    assert plot(per_region, path=str(tmp_path / "a.png")).info["kind"] == "bar"
    repeated = pa.table({"region": ["n", "s"] * 10, "sales": [float(i) for i in range(20)]})
    assert plot(repeated, path=str(tmp_path / "b.png")).info["kind"] == "histogram"
    assert plot(per_region, path=str(tmp_path / "c.png"), kind="line").info["kind"] == "line"
    with pytest.raises(ValueError, match="no column 'price'"):
        plot(per_region, column="price", path=str(tmp_path / "d.png"))


def test_totals_per_group_charted_draw_the_measure_not_an_identifier(tmp_path, monkeypatch):
    """'total the amount by region and chart it as bars' drew the per-region sums of order_id,
    the table's first numeric column: identifiers are not aggregated (a sum of ids is no
    figure), so the chart of the totals draws the amount."""
    from raystack.workflow.engine import run_local
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders.csv").write_text("order_id,region,amount\n1,n,10\n2,s,12\n3,n,5\n")
    p = _plan("Load orders.csv, total the amount by region and chart it as bars.")
    assert _kinds(p) == ["load_data", "aggregate", "plot"]
    rep = run_local(p.ir)
    totals = rep.results[of_kind(p, "aggregate")[0].id].load(None).to_pydict()
    assert dict(zip(totals["region"], totals["amount"])) == {"n": 15, "s": 12} and "order_id" not in totals
    drawn = rep.results[of_kind(p, "plot")[0].id].load(None).info
    assert (drawn["kind"], drawn["column"]) == ("bar", "amount")
    # identifiers alone are still aggregated (a count of rows per group)
    only_ids = pa.table({"region": ["n", "s", "n"], "order_id": [1, 2, 3]})
    from raystack.workflow.table_steps import aggregate
    assert aggregate(only_ids, by="region", agg="count").to_pydict()["order_id"] == [2, 1]
