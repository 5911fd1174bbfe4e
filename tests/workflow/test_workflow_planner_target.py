"""The column a model predicts (the thirteenth planner round): ``train_model`` learned only a
column named ``y``, so a user's table (a ``power`` or ``is_fraud`` column) failed at run time
and "to predict the power column" was read as the model's purpose and dropped. The step takes
``target``, the model keeps it (its evaluation scores that column), a normalize before the
training leaves it unscaled, and the planner reads a target said as a column. A purpose said in
words ("to predict finish times") stays a purpose, not a column name guessed; one word that ends
the clause ("to predict churn", "predicting minutes") is the column since round 19."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from raystack.workflow.steps import evaluate_model, split_data, train_model

from planner_util import kinds as _kinds, of_kind, plan as _plan


def _sensors(rows: int = 120) -> pa.Table:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(rows, 2))
    power = (x[:, 0] - 0.5 * x[:, 1] > 0).astype(np.int64)
    return pa.table({"site": ["a", "b", "c"] * (rows // 3), "temp": 20 + 5 * x[:, 0], "wind": 3 + x[:, 1],
                     "power": power})


def test_a_model_learns_the_target_column_named_and_is_scored_on_it():
    parts = split_data(_sensors(), test_fraction=0.25)
    m = train_model(parts, model="knn", target="power")
    assert m["target"] == "power" and len(m["x"][0]) == 2    # temp and wind; the target is no feature
    ev = evaluate_model(m, parts)
    assert ev["accuracy"] > 0.8                               # scored against power, not a column y
    with pytest.raises(ValueError, match="no target column 'y'"):
        train_model(parts)


@pytest.fixture()
def sensors_csv(tmp_path, monkeypatch):
    """sensors.csv (a power label, two readings, a site) in the working directory."""
    monkeypatch.chdir(tmp_path)
    pacsv.write_csv(_sensors(), "sensors.csv")


def test_a_target_said_as_a_column_is_the_column_the_planned_model_learns(sensors_csv):
    from raystack.workflow.engine import run_local
    for text in ("Load sensors.csv, normalize it, and train a logistic model to predict the power column; "
                 "evaluate it on a 25% holdout.",
                 "Load sensors.csv, normalize it, and fit a logistic regression with power as the target, "
                 "then evaluate it on a 25% holdout."):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "normalize", "split_data", "train_model", "evaluate_model"], text
        assert of_kind(p, "train_model")[0].params["target"] == "power", text
        assert of_kind(p, "normalize")[0].params["target"] == "power", text
        rep = run_local(p.ir)
        assert rep.status == "succeeded", rep.failed
        normalized = rep.results[of_kind(p, "normalize")[0].id].load(None)
        assert set(normalized.column("power").to_pylist()) == {0, 1}       # the labels left as they were
        assert rep.results[of_kind(p, "evaluate_model")[0].id].load(None)["accuracy"] > 0.8
    # "a classifier for the delayed column"
    assert of_kind(_plan("Using flights.csv, build a logistic classifier for the delayed column."),
                   "train_model")[0].params["target"] == "delayed"
    # one word right after "predict" ending its clause is the column (round 19: "a linear model
    # predicting minutes, ..."; a table without it fails naming its columns, as a table without
    # y did); a purpose in several words is no column: nothing guessed
    assert of_kind(_plan("Load x.csv and train a logistic model to predict churn."),
                   "train_model")[0].params["target"] == "churn"
    assert "target" not in of_kind(_plan("Load x.csv and train a linear model to predict finish times."),
                                   "train_model")[0].params


def test_the_one_target_a_request_names_is_every_model_s(sensors_csv):
    """'train a logistic model with power as the label; if accuracy is below 0.99, retrain it with
    200 epochs': the retraining learned a column y the table lacks and failed at run time; 'train
    a knn to predict the power column, then train a logistic model, and evaluate both' likewise
    for the second model. The one target a request names is every model's."""
    from raystack.workflow.engine import run_local
    for text in ("Load sensors.csv, normalize it, train a logistic model with power as the label; if accuracy "
                 "is below 0.99, retrain it with 200 epochs.",
                 "Load sensors.csv, normalize it, train a knn to predict the power column, then train a logistic "
                 "model, and evaluate both."):
        p = _plan(text)
        assert [s.params["target"] for s in of_kind(p, "train_model")] == ["power", "power"], text
        rep = run_local(p.ir)
        assert rep.status == "succeeded", (text, rep.failed)


def test_the_metric_an_evaluation_is_said_to_measure_is_its_metric(sensors_csv):
    """'train a linear regression on it and evaluate its rmse' was refused ('rmse' unplaced), and
    so was 'measure its accuracy on the test set': the metric said after the evaluation's verb
    is the evaluation's (its score); run, the score is that metric."""
    from raystack.workflow.engine import run_local
    for text, metric in (("Load sensors.csv, train a linear regression to predict the power column and evaluate its rmse.", "rmse"),
                         ("Load sensors.csv, train a knn with power as the target and measure its accuracy on the test set.",
                          "accuracy")):
        p = _plan(text)
        assert _kinds(p)[-1] == "evaluate_model" and of_kind(p, "evaluate_model")[0].params["metric"] == metric, text
        ev = run_local(p.ir).results[of_kind(p, "evaluate_model")[0].id].load(None)
        assert ev["metric"] == metric and ev["score"] == ev[metric], text
