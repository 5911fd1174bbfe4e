"""The rule planner on which steps a clause governs and where files are (the tenth round, on
requests of the developer's own wording, none from a set): a parallel cue after a list of
models, a parallel clause whose steps feed each other, "only if" after its step, files named
in a folder, a file loaded and never read, a chart or a table of several results, and where a
planned step may write. Each was returned silently wrong before (or refused where a plan was
plain); now it is right or refused, saying why."""

from __future__ import annotations

import pyarrow.csv as pacsv
import pytest

from raystack.workflow.nl import PlanRefused

from planner_util import kinds as _kinds, of_kind, plan as _plan, refs as _refs, source_kind


def test_a_parallel_cue_after_a_list_of_models_groups_the_training_only():
    """'train logistic, knn and centroid side by side, evaluate them, keep the best and deploy
    it': the cue closes the training's phrase (its commas list the models). It grouped every
    step after it instead, so the pick read the trained models (training accuracy) and the
    deploy ran once per model: all three were deployed."""
    p = _plan("Load data/iris.csv, split, then train logistic, knn and centroid side by side, evaluate them, "
              "keep the best and deploy it as iris-best.")
    steps = p.ir.by_id()
    deploys = of_kind(p, "deploy_model")
    best = of_kind(p, "select_best")[0]
    assert len(deploys) == 1 and _refs(deploys[0].params["model"]) == [best.id]
    assert all(steps[r].fn.endswith(":evaluate_model") for r in _refs(best.params["results"]))
    assert [d.concurrent is not None for d in p.draft.steps if not d.implicit] == [False, False, True, False,
                                                                                    False, False]


def test_a_parallel_clause_whose_steps_feed_each_other_runs_beside_the_clause_before(tmp_path):
    """'...write them to out/stats.parquet; in parallel, split it 70/30 and train a model': the
    split feeds the training, so the two are not side by side. They were grouped, so the
    training could not read the split beside it and trained on an implicit 80/20 split of its
    own. Now the training reads the 70/30 split and the clause runs beside the statistics (no
    ordering edge after the write). Two table transforms listed side by side stay a group."""
    from raystack.workflow.dryrun import dry_run
    for text in ("Load data/iris.csv, run stats on it and write them to out/stats.parquet; in parallel, split it "
                 "70/30 and train a logistic model.",
                 "Load data/iris.csv. Run stats on it and write them to out/stats.parquet. In parallel, split it "
                 "70/30 and train a logistic model."):
        p = _plan(text)
        split = of_kind(p, "split_data")[0]
        train = of_kind(p, "train_model")[0]
        assert len(of_kind(p, "split_data")) == 1
        assert split.params["test_fraction"] == 0.3 and _refs(train.params["data"]) == [split.id]
        assert split.after == [] and source_kind(p, split, "data") == "load_data"
    assert dry_run(p.ir, str(tmp_path / "dry")).status == "succeeded"
    p = _plan("Load scenes.parquet and clean it. Then, side by side: (a) aggregate by satellite, (b) take a 5% "
              "sample. Once both are done, save a report.")
    grouped = [d.entry for d in p.draft.steps if d.concurrent]
    assert grouped == ["aggregate", "sample"]


def test_only_if_after_its_step_guards_that_step_not_the_next():
    """'impute it only if more than 10% of values are missing, then train': the condition
    guarded the training (and the imputation always ran); 'if' alone was already right."""
    for text in ("Load data/iris.csv and impute it only if more than 10% of values are missing, then train a "
                 "logistic model.",
                 "Load data/iris.csv, impute it if more than 10% of values are missing, then train a logistic model."):
        p = _plan(text)
        guarded = {d.entry: d.when for d in p.draft.steps}
        assert guarded["impute"] is not None and guarded["impute"].metric == "missing_fraction"
        assert guarded["train_model"] is None


def test_files_named_in_a_folder_are_read_from_it(tmp_path, monkeypatch):
    """'customers.csv and orders.csv in data/': the folder was loaded as a third table and the
    join paired orders with it; the customers file, read from the wrong place, went unused."""
    from raystack.workflow.engine import run_local
    p = _plan("I have customers.csv and orders.csv in data/. Merge them on customer_id, total the amount per "
              "customer_id, and write the result to out/totals.csv.")
    loads = {s.id: s.params["path"] for s in of_kind(p, "load_data")}
    assert sorted(loads.values()) == ["data/customers.csv", "data/orders.csv"]
    join = of_kind(p, "join")[0]
    assert sorted(_refs(join.params["left"]) + _refs(join.params["right"])) == sorted(loads)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "customers.csv").write_text("customer_id,region\n1,4\n2,5\n")
    (tmp_path / "data" / "orders.csv").write_text("customer_id,amount\n1,10\n1,5\n2,7\n")
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    totals = rep.results[of_kind(p, "aggregate")[0].id].load(None)
    assert sorted(zip(totals.column("customer_id").to_pylist(), totals.column("amount").to_pylist())) == \
        [(1, 15), (2, 7)]
    p = _plan("Load iris.csv from data/ and train a logistic model.")
    assert next(d for d in p.draft.steps if d.entry == "load_data").params["path"] == "data/iris.csv"


def test_a_file_loaded_and_never_read_is_refused_naming_it():
    """'train a logistic model, evaluate it on data/iris_test.csv': the training's split read
    the evaluation file and data/iris.csv was read by nothing, so the model trained on the test
    file. A file the request names and no step reads is refused, naming it; a plan that only
    loads is left alone."""
    for text in ("Load data/iris.csv, train a logistic model, evaluate it on data/iris_test.csv.",
                 "Load x.csv and normalize it while loading y.csv."):
        with pytest.raises(PlanRefused, match="is named (.*), but no step of the plan reads it"):
            _plan(text)
    assert _kinds(_plan("Load data/iris.csv.")) == ["load_data"]


def test_a_chart_or_a_table_of_several_results_is_one_step_over_them_all(tmp_path, monkeypatch):
    """'evaluate each, and plot their accuracies': three charts of every metric, one per model
    (the plural metric was not read); 'write the scores to a table at out/scores.csv': one
    file per model. Now one chart of the accuracies and one table with a row per model; 'a
    report for each' stays one per result."""
    from raystack.workflow.engine import run_local
    p = _plan("Train a knn on data/digits.csv trying k of 3, 5 and 9, evaluate each, and plot their accuracies.")
    plots = of_kind(p, "plot")
    assert len(plots) == 1 and plots[0].params["metric"] == "accuracy" and len(_refs(plots[0].params["data"])) == 3
    p = _plan("Make a 600-row dataset, split it 70/30, train both a knn and a centroid model concurrently, evaluate "
              "both, and write the scores to a table at out/scores.csv.")
    tables = of_kind(p, "write_table")
    assert len(tables) == 1 and len(_refs(tables[0].params["data"])) == 2
    monkeypatch.chdir(tmp_path)
    rep = run_local(p.ir)
    assert rep.status == "succeeded"
    rows = pacsv.read_csv(rep.results[tables[0].id].load(None).path)
    assert sorted(rows.column("kind").to_pylist()) == ["centroid", "knn"]
    p = _plan("Load data/iris.csv, clean it, and then train a logistic model and a knn; evaluate both and write a "
              "report for each.")
    assert len(of_kind(p, "save_report")) == 2


def test_a_planned_step_never_writes_to_a_system_folder_or_a_hidden_file():
    """'export it to /etc/model.json' was planned as written: the export would have written a
    system folder. A request may not point a writing step at a system folder, a hidden file
    or up out of its output directory; a data volume (/data/...) and relative paths are fine."""
    for where in ("/etc/model.json", "../../model.json", "~/.bashrc", "/root/m.json", "out/.cache/model.json"):
        with pytest.raises(PlanRefused, match="never writes to a system folder, a hidden file") as e:
            _plan(f"Load data/iris.csv, split it, train a logistic model, and export it to {where}.")
        assert e.value.kind == "destructive"
    for where in ("models/iris.json", "/data/models/iris.json", "./out/iris.json"):
        p = _plan(f"Load data/iris.csv, split it, train a logistic model, and export it to {where}.")
        assert next(d for d in p.draft.steps if d.entry == "export_model").params["path"] == where


def test_halves_and_a_sync_interval_said_plainly():
    """'split it in half' was refused; 'a sync every 8 steps' / 'synchronizing every 8 steps'
    was refused (the step count took '8 steps' first)."""
    p = _plan("Make a 500-row dataset, split it in half, train a linear model, and tell me its validation loss.")
    assert next(d for d in p.draft.steps if d.entry == "split_data").params["test_fraction"] == 0.5
    for text in ("Run EDiT pretraining on tiny-1m with 2 workers and a sync every 8 steps.",
                 "Pretrain tiny-1m with EDiT, synchronizing every 8 steps."):
        d = _plan(text).draft.steps[0]
        assert d.entry == "edit_pretrain" and d.params["sync"]["h"] == 8 and "steps" not in d.params


def test_a_before_clause_runs_after_its_main_clause_and_a_transformed_table_named_is_that_table():
    """'Before training a knn on x.csv, normalize the features' trained on the raw table and
    normalized afterwards, for nothing; 'normalize x.csv, then train on the normalized data'
    normalized twice (the participle read as a second step). With no normalize before it,
    'on normalized x.csv' is still the step."""
    p = _plan("Before training a knn on data/iris.csv, normalize the features.")
    assert _kinds(p) == ["load_data", "normalize", "train_model"]
    split = of_kind(p, "split_data")[0]
    assert source_kind(p, split, "data") == "normalize"
    for text, kind in (("Normalize data/iris.csv, then train a logistic model on the normalized data.", "normalize"),
                       ("Clean data/iris.csv, then train a logistic model on the clean table.", "clean_data")):
        assert _kinds(_plan(text)) == ["load_data", kind, "train_model"]
    assert _kinds(_plan("Train a logistic model on normalized data/iris.csv.")) == ["load_data", "normalize",
                                                                                 "train_model"]


def test_two_methods_named_as_alternatives_are_one_run_each():
    """'Pretrain tiny-1m with DiLoCo and with EDiT, and keep the one with the lower validation
    loss' ran DiLoCo only and 'kept' the one run. Methods named as alternatives map over the
    mode; EDiT naming the part ('Use EDiT local SGD to pretrain ... with DiLoCo') does not."""
    p = _plan("Pretrain tiny-1m with DiLoCo and with EDiT, and keep the one with the lower validation loss.")
    assert p.draft.steps[0].map == ("mode", ["diloco", "edit"])
    best = of_kind(p, "select_best")[0]
    assert len(_refs(best.params["results"])) == 2
    assert _plan("Pretrain tiny-1m with EDiT, then with DiLoCo.").draft.steps[0].map == ("mode", ["edit", "diloco"])
    for text, mode in (("Use EDiT local SGD to pretrain tiny-1m with DiLoCo.", "diloco"),
                       ("Pretrain tiny-1m with A-EDiT on 4 ranks.", "aedit")):
        d = _plan(text).draft.steps[0]
        assert d.map is None and d.params["mode"] == mode


def test_parallel_wordings_batch_sizes_and_numbered_sentences():
    """'meanwhile' is a parallel cue (it was refused), and its clause, whose load feeds its
    training, runs beside the pretraining; 'load a.csv and b.csv in parallel and join them'
    grouped the join instead of the loads; 'with batch size 16' / 'in mini-batches of 32 rows'
    were refused; '1. Load x. 2. Remove duplicates.' refused its numbers."""
    p = _plan("Pretrain tiny-1m with EDiT; meanwhile, load data/iris.csv and train a knn.")
    assert _kinds(p) == ["edit_pretrain", "load_data", "train_model"]
    assert all(s.after == [] for s in p.ir.steps)
    p = _plan("Load data/a.csv and data/b.csv in parallel and join them.")
    assert [d.entry for d in p.draft.steps if d.concurrent] == ["load_data", "load_data"]
    for text, size in (("Load data/iris.csv and train a logistic model with batch size 16.", 16),
                       ("Load data/iris.csv and train a logistic model in mini-batches of 32 rows.", 32)):
        assert _plan(text).draft.steps[-1].params["batch_size"] == size
    p = _plan("1. Load data/flights.csv. 2. Remove duplicates. 3. Split 80/20. 4. Train a logistic classifier.")
    assert _kinds(p) == ["load_data", "dedup", "split_data", "train_model"]


def test_models_listed_before_their_verb_an_unplanned_export_and_evaluation_on_training_rows():
    """'for each of logistic, knn and centroid, train and evaluate a model; then pick the best'
    trained the three, then a fourth (default) model that alone was evaluated and 'picked';
    'evaluate it, and export both the model and the report' dropped the export without a word
    (the verb was read as description); 'evaluate it on the training set' scored the held-out
    part. Now: one training per model listed, each evaluated; a refusal quoting 'export'; a
    refusal saying what the evaluation scores."""
    p = _plan("Load data/iris.csv and for each of logistic, knn and centroid, train and evaluate a model; "
              "then pick the best.")
    assert _kinds(p) == ["load_data", "train_model", "evaluate_model", "select_best"]
    assert p.draft.steps[2].map == ("model", ["logistic", "knn", "centroid"])
    best = of_kind(p, "select_best")[0]
    assert len(_refs(best.params["results"])) == 3
    with pytest.raises(PlanRefused, match="'export'"):
        _plan("Load data/iris.csv, split it, train a logistic model, evaluate it, and export both the model and "
              "the report.")
    with pytest.raises(PlanRefused, match="not on the rows it was trained on"):
        _plan("Load data/iris.csv, split, train a logistic model, and evaluate it on the training set.")


def test_a_transform_said_to_come_first_runs_first_and_one_of_several_files_loaded_together_is_not_all():
    """'Train a model on x.csv. Make sure the data is deduplicated first' generated a synthetic
    dataset ('make sure the data') and deduplicated after the training; 'but first remove rows
    with nulls' was refused. 'load iris.csv and wine.csv, normalize the wine data' normalized
    (and trained on) both files: refused, naming the one the words point at."""
    for text, kind in (("Train a logistic model on data/iris.csv. Make sure the data is deduplicated first.", "dedup"),
                       ("Train a logistic model on data/iris.csv, but first remove rows with nulls.", "clean_data"),
                       ("Train a knn on data/iris.csv; normalize it first.", "normalize")):
        p = _plan(text)
        assert _kinds(p) == ["load_data", kind, "train_model"]
        split = of_kind(p, "split_data")[0]
        assert source_kind(p, split, "data") == kind
    with pytest.raises(PlanRefused, match="names data/wine.csv, but it would run on every file loaded together"):
        _plan("Load data/iris.csv and data/wine.csv, normalize the wine data, and train a knn on it.")


def test_a_pick_among_models_is_the_model_that_follows_and_retries_said_of_every_step():
    """'train a logistic model with lr 0.1, 0.3 and 1.0, pick the one with the lowest validation
    loss, evaluate it, and deploy it' evaluated and deployed all three (the pick was read as an
    evaluation, so the steps after it took the trained models); 'every step should retry twice'
    set the retries on the load only; 'report both accuracies in reports/acc.json' wrote one
    report per model."""
    p = _plan("Load data/iris.csv, train a logistic model with lr 0.1, 0.3 and 1.0, pick the one with the lowest "
              "validation loss, evaluate it, and deploy it as iris-best.")
    best = of_kind(p, "select_best")[0]
    evals = of_kind(p, "evaluate_model")
    deploys = of_kind(p, "deploy_model")
    assert len(evals) == 1 and _refs(evals[0].params["model"]) == [best.id]
    assert len(deploys) == 1 and deploys[0].params["name"] == "iris-best"
    p = _plan("Every step should retry twice: load data/iris.csv, split it, train a knn.")
    assert [(d.entry, d.retries) for d in p.draft.steps] == [("load_data", 2), ("split_data", 2), ("train_model", 2)]
    p = _plan("Generate data with 500 rows, train a centroid model and a logistic model on a 80/20 split, and "
              "report both accuracies in reports/acc.json.")
    reports = of_kind(p, "save_report")
    assert len(reports) == 1 and len(_refs(reports[0].params["result"])) == 2
    # the file is where the report goes, not a table to load (it was loaded and fed the split)
    assert reports[0].params["path"] == "reports/acc.json" and not of_kind(p, "load_data")
    assert source_kind(p, of_kind(p, "split_data")[0]) == "make_dataset"


def test_the_same_step_asked_twice_in_sequence_is_two_steps():
    """'Fine-tune adapters on tiny-1m, then fine-tune more adapters on tiny-20m, and evaluate all
    of them' was one fine-tune on tiny-1m (the second phrase merged into the first, its base
    dropped); 'pretrain tiny-1m with EDiT, then pretrain tiny-20m with DiLoCo' ran DiLoCo on both
    models. Two phrases of one kind with a 'then' between are two steps, and an evaluation said
    of all of them runs on each adapter set."""
    p = _plan("Fine-tune adapters on tiny-1m, then fine-tune more adapters on tiny-20m, and evaluate all of them.")
    tunes = {s.id: s.params["base"] for s in of_kind(p, "mlora_finetune")}
    assert sorted(tunes.values()) == ["tiny-1m", "tiny-20m"]
    evals = of_kind(p, "evaluate_adapters")
    assert sorted(_refs(e.params["adapters"])[0] for e in evals) == sorted(tunes)
    p = _plan("Pretrain tiny-1m with EDiT, then pretrain tiny-20m with DiLoCo.")
    runs = [(s.params["model"], s.params.get("mode")) for s in of_kind(p, "edit_pretrain")]
    assert runs == [("tiny-1m", None), ("tiny-20m", "diloco")]


def test_each_model_is_evaluated_on_the_split_it_was_trained_on(tmp_path):
    """'Load a.csv, split it and train logistic. Then load b.csv, split it and train knn.
    Evaluate both models.' scored the a.csv model on b.csv's held-out rows (the latest split)."""
    from raystack.workflow.dryrun import dry_run
    p = _plan("Load data/iris.csv, split it and train logistic. Then load data/wine.csv, split it and train knn. "
              "Evaluate both models.")
    steps = p.ir.by_id()
    for ev in of_kind(p, "evaluate_model"):
        model = steps[_refs(ev.params["model"])[0]]
        assert _refs(ev.params["data"]) == _refs(model.params["data"])
    assert dry_run(p.ir, str(tmp_path / "dry")).status == "succeeded"


def test_a_model_named_again_after_two_trainings_is_the_one_of_that_kind_or_refused():
    """'train a logistic model ..., then a knn with k=4, and deploy the knn as iris-knn' trained
    a third knn and deployed it under the default name (the knn trained without a verb was not
    counted as trained, and 'iris-knn' was read as the third model's kind). Now the deploy
    takes the knn under its name; 'deploy the logistic' there, which the deploy would not read,
    is refused."""
    p = _plan("Load data/iris.csv, train a logistic model with 30 epochs, then a knn with k=4, and deploy the knn "
              "as iris-knn.")
    steps = p.ir.by_id()
    assert len(of_kind(p, "train_model")) == 2
    deploy = of_kind(p, "deploy_model")[0]
    assert deploy.params["name"] == "iris-knn" and steps[_refs(deploy.params["model"])[0]].params["model"] == "knn"
    with pytest.raises(PlanRefused, match="names a model trained before the last one"):
        _plan("Load data/iris.csv, train a logistic model with 30 epochs, then a knn with k=4, and deploy the "
              "logistic as iris-log.")


def test_an_untransformed_table_named_is_read_and_logistic_is_not_log():
    """'normalize it, then train on the un-normalized table' normalized twice and trained on the
    normalized table ('un-normalized' opened a normalize step); 'train a logistic model on the
    result' was refused ('log...' in 'logistic ... the result' read as 'log the results')."""
    for words in ("un-normalized table", "non-normalized data", "unnormalized table"):
        p = _plan(f"Load data/iris.csv, normalize it, then train a logistic model on the {words}.")
        assert len(of_kind(p, "normalize")) == 1
        split = of_kind(p, "split_data")[0]
        assert source_kind(p, split, "data") == "load_data"
    p = _plan("Load data/iris.csv and data/wine.csv, join them on id, and train a logistic model on the result.")
    assert _kinds(p) == ["load_data", "load_data", "join", "train_model"]


def test_all_three_models_are_evaluated_and_the_trained_model_named_is_the_one_trained(tmp_path):
    """'Fit knn with 5 neighbours, a centroid classifier and logistic regression. Evaluate all
    three. Keep the most accurate.' evaluated the last two only (the knn never competed); 'save
    the trained model as models/iris.json' trained a second model and saved that one."""
    from raystack.workflow.dryrun import dry_run
    p = _plan("Load data/iris.csv. Drop duplicate rows. Normalize. Hold out 30%. Fit knn with 5 neighbours, a "
              "centroid classifier and logistic regression. Evaluate all three. Keep the most accurate. Export it "
              "to models/iris_best.json.")
    steps = p.ir.by_id()
    best = of_kind(p, "select_best")[0]
    picked = [steps[steps[r].params["model"].step].params["model"] for r in _refs(best.params["results"])]
    assert sorted(picked) == ["centroid", "knn", "logistic"]
    assert dry_run(p.ir, str(tmp_path / "dry")).status == "succeeded"
    p = _plan("Load data/iris.csv, train a logistic model, and save the trained model as models/iris.json.")
    assert _kinds(p) == ["load_data", "train_model", "export_model"]
    assert next(d for d in p.draft.steps if d.entry == "export_model").params["path"] == "models/iris.json"


def test_an_acting_verb_is_a_step_or_a_refusal_never_dropped():
    """'train a knn and a logistic model, and report them' planned the training and dropped the
    report (the verb was read as description): 'report them' is now one report of both models
    (and an unaccounted export/save/deploy/serve/notify/plot/evaluate verb is refused, as the
    export test above shows for 'export')."""
    p = _plan("Load data/iris.csv, split it, train a knn and a logistic model, and report them.")
    reports = of_kind(p, "save_report")
    assert len(reports) == 1 and len(_refs(reports[0].params["result"])) == 2


def test_a_restriction_to_some_columns_no_step_takes_is_refused():
    """'normalize the petal_length column only' normalized every column and 'train a knn using
    only the petal columns' trained on all of them: a step that takes no column subset refuses
    the request, quoting it. A plot of one column (its own parameter) still plans, and since
    normalize takes `columns` (a later round), "normalize the petal_length column only" scales
    that column alone."""
    with pytest.raises(PlanRefused, match="no step keeps to .*: the steps use every numeric column"):
        _plan("Load data/iris.csv and train a knn using only the petal columns.")
    p = _plan("Load data/iris.csv, normalize the petal_length column only, and train a knn.")
    assert of_kind(p, "normalize")[0].params["columns"] == ["petal_length"]
    p = _plan("Load data/iris.csv and plot a histogram of the petal_length column only.")
    assert p.draft.steps[-1].params["column"] == "petal_length"


def test_the_same_split_named_again_is_the_split_made_before():
    """'also train a knn on the same split' made a second split for the knn."""
    p = _plan("Load data/iris.csv, split it, train a logistic model, and evaluate it; also train a knn on the same "
              "split and evaluate it.")
    splits = [s.id for s in of_kind(p, "split_data")]
    trains = of_kind(p, "train_model")
    assert len(splits) == 1 and all(_refs(s.params["data"]) == splits for s in trains)


def test_a_transformed_table_written_out_is_the_transformed_table():
    """'clean it, and save the cleaned table to out/clean.csv' was refused: the participle
    opened a second clean step and took the write's words."""
    for text, kind in (("Load data/iris.csv, clean it, and save the cleaned table to out/clean.csv.", "clean_data"),
                       ("Load data/iris.csv, normalize it, and write the normalized data to out/n.csv.", "normalize")):
        p = _plan(text)
        assert _kinds(p) == ["load_data", kind, "write_table"]
        write = of_kind(p, "write_table")[0]
        assert source_kind(p, write, "data") == kind


def test_steps_said_parallel_after_the_load_they_read_run_side_by_side():
    """'Load stock.csv and, in parallel, compute stats and draw a histogram of volume' grouped
    the load with the steps after the cue; the group fed itself, so it fell back to the written
    order and the histogram waited for the statistics (the thirteenth round). The load is what
    they read; the two steps after the cue run side by side."""
    p = _plan("Load stock.csv and, in parallel, compute stats and draw a histogram of volume.")
    assert _kinds(p) == ["load_data", "stats", "plot"]
    by_kind = {d.entry: d for d in p.draft.steps}
    assert by_kind["load_data"].concurrent is None
    assert by_kind["stats"].concurrent is not None and by_kind["stats"].concurrent == by_kind["plot"].concurrent
    assert of_kind(p, "plot")[0].after == []
    # two loads said parallel stay two parallel loads
    p = _plan("Read a.parquet and, in parallel, b.csv, then join them.")
    assert [d.concurrent is not None for d in p.draft.steps if d.entry == "load_data"] == [True, True]


def test_a_condition_said_of_the_score_or_negated_tests_that_comparison():
    """'if it scores over 80%, deploy it' and 'if the accuracy isn't at least 0.75, send an alert'
    were refused ('if' and the threshold unplaced) (the thirteenth round). The first tests the
    evaluation's score, the second the opposite comparison; 'does not reach' a loss is above it."""
    cases = {
        "Load a.csv and train a knn; then evaluate it, and if it scores over 80%, deploy it.": ("score", ">", 0.8),
        "Load a.csv, train a knn and evaluate it; if the accuracy is not at least 0.75, send an alert.":
            ("accuracy", "<", 0.75),
        "Load a.csv, train a knn and evaluate it; if the accuracy isn't above 0.75, send an alert.":
            ("accuracy", "<=", 0.75),
        "Load a.csv, train a knn and evaluate it; if the loss does not reach 0.2, send an alert.": ("loss", ">", 0.2),
    }
    for text, (metric, op, value) in cases.items():
        p = _plan(text)
        guarded = [s for s in p.ir.steps if s.when]
        assert len(guarded) == 1 and len(guarded[0].when) == 1, text
        w = guarded[0].when[0]
        assert (w.ref.key, w.op, w.value) == (metric, op, value), text
        assert p.ir.by_id()[w.ref.step].fn.endswith(":evaluate_model"), text


def test_a_model_trained_again_is_the_model_trained_before():
    """'if the training loss is above 0.5, train again with 100 epochs' was refused (a condition
    with no step), and 'train it again with k=9' had no step; the retraining is of the model
    trained before (a knn stays a knn), with what the phrase changes (the thirteenth round)."""
    p = _plan("Train a knn on a.csv; if accuracy is below 0.8, train it again with k=9.")
    first, again = of_kind(p, "train_model")
    assert (again.params["model"], again.params["k"]) == ("knn", 9) and again.when
    p = _plan("Train a logistic model on a.csv; if the training loss is above 0.5, train again with 100 epochs.")
    first, again = of_kind(p, "train_model")
    assert (again.params["model"], again.params["epochs"]) == ("logistic", 100)
    assert (again.when[0].ref.key, again.when[0].op) == ("train_loss", ">")
