"""The rule planner on what a request's words point at (the ninth round, on requests of the
developer's own wording): which step a retry or a condition guards, which of several results a
pick or a step said of "each" reads, which table a named file, 'it' or "the original data" is,
which model "the knn" is; plans that were returned silently wrong are now right or refused."""

from __future__ import annotations

import pytest

from raystack.workflow.nl import PlanRefused

from planner_util import kinds as _kinds, plan as _plan


def test_retries_targets_purposes_places_and_group_keys_written_another_way(tmp_path):
    """Wordings found trying the planner with requests of my own (2026-12-03), none from a set:
    a retry naming the step ('retry the training') lands on the clause's own step, never on the
    load its preposition named; attempts in all ('trying it up to two times') are one retry; a
    participle states a model's target; 'behind Serve' is where a deploy goes; 'tell me the
    accuracy' reports it; 'save the checkpoint' is what pretraining does; 'by store and month'
    groups by both, and the plan runs."""
    p = _plan("Fit a centroid classifier on wine.csv, retry the training up to 3 times if it fails.")
    assert sorted((d.entry, d.retries) for d in p.draft.steps) == [("load_data", 0), ("split_data", 0),
                                                                   ("train_model", 3)]
    p = _plan("Load iris.csv and train a knn classifier, trying it up to two times if it crashes.")
    assert p.draft.steps[-1].entry == "train_model" and p.draft.steps[-1].retries == 1
    p = _plan("Load weather.parquet, drop rows with nulls, and fit a linear model predicting temperature.")
    assert _kinds(p) == ["load_data", "clean_data", "train_model"]
    p = _plan("Fine-tune adapters for support and sales on tiny-1m, evaluate them and deploy them behind Serve.")
    assert _kinds(p) == ["mlora_finetune", "evaluate_adapters", "serve_adapters"]
    p = _plan("Load x.csv, train a knn model and deploy it with Ray Serve as shop-knn.")
    assert _kinds(p)[-1] == "deploy_model" and p.draft.steps[-1].stated == {"name": "shop-knn"}
    assert _kinds(_plan("Train a logistic regression on churn.csv and tell me the accuracy."))[-1] == "save_report"
    p = _plan("Pretrain tiny-20m with EDiT for 500 steps using 2 replicas and save the checkpoint.")
    assert _kinds(p) == ["edit_pretrain"]
    with pytest.raises(PlanRefused):      # still not a word to drop: there is no step for it
        _plan("Load x.csv and fit a linear model predicting temperature tomorrow using astrology.")
    p = _plan("Load the rows from sales.json, aggregate total amount by store and month, and export the table "
              "to ./agg.csv.")
    agg = next(d for d in p.draft.steps if d.entry == "aggregate")
    assert agg.params["by"] == ["store", "month"]
    assert next(d for d in _plan("Load s.csv, aggregate revenue by region and plot it.").draft.steps
                if d.entry == "aggregate").params["by"] == "region"
    from raystack.workflow.dryrun import dry_run
    assert dry_run(p.ir, str(tmp_path / "dry")).status == "succeeded"


def test_aggregate_groups_by_several_columns():
    import pyarrow as pa
    from raystack.workflow.table_steps import aggregate
    t = pa.table({"store": ["a", "a", "b", "a"], "month": [1, 2, 1, 1], "amount": [1.0, 2.0, 3.0, 4.0]})
    out = aggregate(t, by=["store", "month"])
    rows = sorted(zip(out.column("store").to_pylist(), out.column("month").to_pylist(), out.column("amount").to_pylist()))
    assert rows == [("a", 1, 5.0), ("a", 2, 2.0), ("b", 1, 3.0)]
    with pytest.raises(ValueError, match="no column 'week'"):
        aggregate(t, by=["store", "week"])


def test_the_best_one_named_with_no_metric_is_picked_or_refused_never_dropped():
    """'deploy the best one' after several models deployed each of them (the pick was read as
    filler words: a silently wrong plan); now the pick is a selection, as 'keep the best one' makes
    it. Where no step can pick ('serve the best ones' of an adapter set, 'the best' of one model)
    the request is refused, quoting the pick. A 'for each k in ...' phrase opening a clause after
    ', then' is the map of the step it precedes."""
    p = _plan("Train logistic and knn on x.csv, evaluate them and deploy the best one.")
    assert _kinds(p)[-2:] == ["select_best", "deploy_model"] and p.draft.steps[-1].map is None
    p = _plan("Load x.csv, train linear and knn models, and export the winner to ./m.")
    assert _kinds(p)[-2:] == ["select_best", "export_model"]
    p = _plan("Create 1000 synthetic samples and fit a logistic and a knn classifier on them; evaluate every one "
              "and pick the winner. Deploy the winner.")
    assert _kinds(p).count("select_best") == 1       # 'the winner' again is the one already picked
    for text in ("Evaluate the exported adapters in ./adapters/v2 and serve the best ones.",
                 "Load x.csv, train a knn model and export the best to ./m."):
        with pytest.raises(PlanRefused, match="no step picks 'the best"):
            _plan(text)
    with pytest.raises(PlanRefused, match="no step picks 'only the knn model'"):   # it evaluated both, and
        _plan("Train logistic and knn on x.csv and evaluate only the knn model.")    # trained a third model
    assert _plan("Load x.csv, train knn, and deploy only if accuracy is above 0.8.").draft.steps[-1].when
    p = _plan("Load tickets.csv, then for each k in 2, 4 and 8 train a knn model")
    assert p.draft.steps[-1].map == ("k", [2, 4, 8])


def test_results_deployed_together_get_a_name_each():
    """'deploy them' after two models published both as deployed/model.json, the second over the
    first; each is now deployed under its own name."""
    for text, names in (("Train logistic and knn on x.csv and deploy them.", ["model-1", "model-2"]),
                        ("Train logistic and knn on x.csv and deploy both as shop.", ["shop-1", "shop-2"])):
        deploys = [s for s in _plan(text).ir.steps if s.fn.endswith(":deploy_model")]
        assert [s.params["name"] for s in deploys] == names


def test_a_condition_on_a_tables_own_measure_gets_the_step_that_measures_it(tmp_path):
    """'if the missing share is over 5%, impute' with no statistics step named was refused; the
    statistics step is now added, marked implicit, and the condition reads it. An exit handler
    'whether or not it succeeds' runs always; 'cap it at 6 rounds' bounds a loop."""
    from raystack.workflow.dryrun import dry_run
    p = _plan("Load reviews.csv; if over 10% of values are missing, impute them, otherwise clean it.")
    assert [d.entry for d in p.draft.steps] == ["load_data", "stats", "impute", "clean_data"]
    check = p.draft.steps[1]
    assert check.implicit and p.draft.steps[2].when.step == check.label == p.draft.steps[3].when.step
    assert (p.draft.steps[2].when.metric, p.draft.steps[2].when.op) == ("missing_fraction", ">")
    assert dry_run(p.ir, str(tmp_path / "dry")).status == "succeeded"
    with pytest.raises(PlanRefused, match="no earlier step that reports 'missing_fraction'"):
        _plan("Pretrain tiny-1m with EDiT; if more than 10% of values are missing, notify 'gaps'.")  # no table
    p = _plan("Whether or not it succeeds, clean up the temp files at the end. First load m.csv and train a knn.")
    assert p.draft.steps[0].entry == "cleanup" and p.draft.steps[0].exit == "always"
    p = _plan("Repeat the DLRM training, one epoch at a time, until the AUC is at least 0.78 — cap it at 6 rounds.")
    assert p.draft.steps[0].loop.max_iterations == 6


def test_a_conditional_transform_leaves_the_rest_of_the_pipeline_running(tmp_path, monkeypatch):
    """'if over 10% of values are missing, impute them; then train': when the condition is false
    the training still runs, on the loaded table (it was skipped with the imputation); with an
    else branch ('otherwise clean it') what follows reads whichever branch ran."""
    from raystack.workflow.engine import run_local
    monkeypatch.chdir(tmp_path)
    with open("reviews.csv", "w") as f:       # a third of column a missing: 67 of 600 values, 11%
        f.write("a,b,y\n" + "".join(f"{'' if i % 3 == 0 else i / 200},{(i * 7 % 200) / 200},{i % 2}\n"
                                    for i in range(200)))

    def train_rows(text):
        p = _plan(text)
        rep = run_local(p.ir)
        assert rep.status == "succeeded" and any(s.fn.endswith(":train_model") and s.id in rep.executed
                                                 for s in p.ir.steps)
        split = next(s.id for s in p.ir.steps if s.fn.endswith(":split_data"))
        train = rep.results[split].load(None)["train"]
        return train.num_rows, train.column("a").null_count, rep
    rows, nulls, rep = train_rows("Load reviews.csv; if over 50% of values are missing, impute them. Then train knn.")
    assert "s2" in rep.skipped and rows == 160 and nulls > 0                                # the loaded table
    rows, nulls, _ = train_rows("Load reviews.csv; if over 10% of values are missing, impute them. Then train knn.")
    assert (rows, nulls) == (160, 0)                                                        # imputed
    rows, nulls, _ = train_rows("Load reviews.csv; if over 10% of values are missing, impute them, otherwise clean "
                                "it. Then train knn.")
    assert (rows, nulls) == (160, 0)                                                        # imputed
    rows, nulls, _ = train_rows("Load reviews.csv; if over 50% of values are missing, impute them, otherwise clean "
                                "it. Then train knn.")
    assert rows < 160 and nulls == 0                                                        # cleaned


def test_a_step_said_of_several_tables_runs_on_each_and_coordinated_verbs_share_their_object(tmp_path):
    """'load a.csv and b.csv in parallel, clean both, and join them' cleaned only b.csv and
    joined it with itself (a silently wrong plan): the clean now runs once per table and the join
    reads both results. 'Train and evaluate a knn classifier' trained the default logistic model
    (the knn was read by the evaluation only): the training verb now shares the object."""
    from raystack.workflow.dryrun import dry_run
    p = _plan("Load a.csv and b.csv in parallel, dedup each of them, and join them on id, then compute stats.")
    by = {s.id: s for s in p.ir.steps}
    dedups = [s for s in p.ir.steps if s.fn.endswith(":dedup")]
    assert sorted(by[d.params["data"].step].params["path"] for d in dedups) == ["a.csv", "b.csv"]
    join = next(s for s in p.ir.steps if s.fn.endswith(":join"))
    assert {join.params["left"].step, join.params["right"].step} == {d.id for d in dedups}
    assert dry_run(p.ir, str(tmp_path / "dry")).status == "succeeded"
    p = _plan("Load a.csv and b.csv in parallel, clean both, and join them.")
    assert len([s for s in p.ir.steps if s.fn.endswith(":clean_data")]) == 2
    train = next(s for s in _plan("Train and evaluate a knn classifier on fraud.parquet.").ir.steps
                 if s.fn.endswith(":train_model"))
    assert train.params["model"] == "knn"
    p = _plan("Run EDiT pretraining on tiny-20m for 1000 steps with 4 workers, synchronizing every 32 steps.")
    assert p.ir.steps[0].params["sync"] == {"h": 32}


def test_a_step_that_names_or_points_at_another_table_than_it_would_read_is_refused():
    """'...; then normalize x' after loading x.csv and y.csv read y.csv, and 'in parallel, load
    y.csv and dedup it' deduplicated the other branch's table: both plans ran on the wrong data.
    They are refused, naming the table the words point at; where the words and the wiring agree
    the plan stands."""
    with pytest.raises(PlanRefused, match="'then normalize x' names x.csv"):
        _plan("Load x.csv and, at the same time, load y.csv; then normalize x.")
    # (since the tenth round this one is planned right: the parallel clause, whose load feeds its
    # dedup, runs beside the clause before it, and 'it' is y.csv; tests/workflow/test_workflow_planner_clauses.py)
    p = _plan("Load x.csv and normalize it; in parallel, load y.csv and dedup it.")
    dedup = next(s for s in p.ir.steps if s.fn.endswith(":dedup"))
    assert p.ir.by_id()[dedup.params["data"].step].params["path"] == "y.csv" and dedup.after == []
    p = _plan("Load x.csv and y.csv; join them; train knn on x.csv only.")     # its own load of x.csv
    assert _kinds(p)[-2:] == ["load_data", "train_model"]
    p = _plan("Load x.csv and normalize it while loading y.csv; then join them.")   # y.csv read, not dropped
    assert next(s for s in p.ir.steps if s.fn.endswith(":normalize")).params["data"].step == "s1"


def test_a_model_named_again_is_the_one_trained_and_a_join_reads_the_tables_nothing_else_read():
    """'train a knn on x.csv, evaluate the knn model, and export it' trained a second knn (from
    'the knn model') and exported that one; 'load sales.csv and returns.csv, dedup the returns,
    then join them' joined returns with its own dedup (sales unused). Both silently wrong; now
    the model named again is the trained one, a pick among several models is refused, and a join
    reads the latest tables no step has read yet."""
    p = _plan("Train a knn on x.csv, evaluate the knn model, and export it to ./k.json.")
    trains = [s for s in p.ir.steps if s.fn.endswith(":train_model")]
    assert len(trains) == 1
    by = {s.id: s for s in p.ir.steps}
    export = next(s for s in p.ir.steps if s.fn.endswith(":export_model"))
    assert by[export.params["model"].step].params["model"].step == trains[0].id   # export <- evaluate <- the knn
    with pytest.raises(PlanRefused, match="no step picks 'the knn' of the 2 models"):
        _plan("Train a knn and a centroid model on x.csv, evaluate them with f1, and deploy the knn.")
    p = _plan("Load sales.csv and returns.csv, dedup the returns, then join them on order_id.")
    by = {s.id: s for s in p.ir.steps}
    join = next(s for s in p.ir.steps if s.fn.endswith(":join"))
    assert by[join.params["left"].step].params["path"] == "sales.csv"
    assert by[join.params["right"].step].fn.endswith(":dedup")
    p = _plan("Load x.csv and normalize it, then load y.csv and normalize that too, then join both.")
    join = next(s for s in p.ir.steps if s.fn.endswith(":join"))
    by = {s.id: s for s in p.ir.steps}
    assert {by[by[join.params[k].step].params["data"].step].params["path"] for k in ("left", "right")} == \
        {"x.csv", "y.csv"}


def test_the_original_table_is_read_where_it_is_named_and_a_file_named_is_the_one_read():
    """'sample 20%; compute stats on the full table' computed them on the sample, 'plot the
    original data' plotted the normalized table, and 'train a knn on x.csv and a logistic model on
    y.csv' trained both on y.csv: silently wrong. The table a chain started from is read where the
    words name it; a step wired to another file than the one it names is refused."""
    p = _plan("Load a.csv; sample 20%; compute stats on the full table.")
    assert next(s for s in p.ir.steps if s.fn.endswith(":stats")).params["data"].step == "s1"
    p = _plan("Load x.csv, normalize it, and plot the original data.")
    assert next(s for s in p.ir.steps if s.fn.endswith(":plot")).params["data"].step == "s1"
    with pytest.raises(PlanRefused, match="names x.csv, but it would read the split_data of y.csv"):
        _plan("Load x.csv, then load y.csv; train a knn on x.csv.")
    # each model on the file its words name (it was refused: the second reused the first's split)
    p = _plan("Train a knn on x.csv and a logistic model on y.csv, then deploy the logistic one.")
    by = {s.id: s for s in p.ir.steps}
    trained_on = {s.params["model"]: by[by[s.params["data"].step].params["data"].step].params["path"]
                  for s in p.ir.steps if s.fn.endswith(":train_model")}
    assert trained_on == {"knn": "x.csv", "logistic": "y.csv"}
    deploy = next(s for s in p.ir.steps if s.fn.endswith(":deploy_model"))
    assert by[deploy.params["model"].step].params["model"] == "logistic"


def test_an_evaluation_said_of_several_models_runs_on_each_and_a_retry_lands_on_the_step_it_names():
    """'train a knn ... and a logistic model ..., evaluate each, and keep the better' evaluated
    the logistic model only, and the selection had one candidate; 'retry the load 2 times' set
    the retries on the training. Both silently wrong."""
    p = _plan("Load x.csv, split 75/25, train a knn with k = 4 and a logistic model with lr 0.05, evaluate each "
              "with accuracy, and keep the better.")
    by = {s.id: s for s in p.ir.steps}
    evals = [s for s in p.ir.steps if s.fn.endswith(":evaluate_model")]
    assert sorted(by[e.params["model"].step].params["model"] for e in evals) == ["knn", "logistic"]
    best = next(s for s in p.ir.steps if s.fn.endswith(":select_best"))
    assert sorted(r.step for r in best.params["results"]) == sorted(e.id for e in evals)
    p = _plan("Train a knn on x.csv and then a centroid model, evaluate them both, and deploy the best one.")
    assert _kinds(p)[-2:] == ["select_best", "deploy_model"]
    p = _plan("Load x.csv; train knn with k=3 and knn with k=7; evaluate both; export the better one to ./m.json.")
    assert _kinds(p)[-2:] == ["select_best", "export_model"]
    p = _plan("Load x.csv and train knn; retry the load 2 times.")
    assert [(s.fn.split(":")[1], s.retries) for s in p.ir.steps if s.retries] == [("load_data", 2)]
    with pytest.raises(PlanRefused, match="names a export_model step the plan does not have"):
        _plan("Load x.csv and train knn; retry the export twice.")


def test_retries_said_after_a_preposition_land_on_the_step_not_the_load():
    """Before the ninth round 'train a knn on x.csv with 2 retries' set 2 retries on the load of
    x.csv, not on the training (silently wrong)."""
    for text, n in (("Train a knn on x.csv with 2 retries.", 2),
                    ("Fit a centroid classifier on wine.csv, retry it twice if it fails.", 2)):
        assert [(s.fn.split(":")[1], s.retries) for s in _plan(text).ir.steps if s.retries] == [("train_model", n)]


def test_a_condition_after_its_step_guards_that_step_and_the_untransformed_table_is_read_where_named():
    """'retrain it with lr 0.01 if accuracy is under 0.8, and deploy the final model' put the
    condition on the deploy and retrained always; the condition now guards the retrain, and the
    deploy of 'the final model', which would run only when the retrain did, is refused. 'train
    knn on the unnormalized data' trained on the normalized table (its split now reads the load)."""
    p = _plan("Load x.csv, train knn, and deploy it if accuracy is above 0.8.")
    assert p.draft.steps[-1].entry == "deploy_model" and p.draft.steps[-1].when.op == ">"
    with pytest.raises(PlanRefused, match="'deploy the final model' reads 'retrain it with lr 0.01', which runs only"):
        _plan("Train logistic on x.csv, then retrain it with lr 0.01 if accuracy is under 0.8, and deploy the "
              "final model.")
    p = _plan("Train logistic on x.csv, then retrain it with lr 0.01 if accuracy is under 0.8.")
    retrain = p.draft.steps[-1]
    assert retrain.entry == "train_model" and retrain.params.get("lr") == 0.01 and retrain.when.op == "<"
    p = _plan("Load x.csv, normalize it, then train knn on the unnormalized data.")
    split = next(s for s in p.ir.steps if s.fn.endswith(":split_data"))
    assert split.params["data"].step == "s1"
