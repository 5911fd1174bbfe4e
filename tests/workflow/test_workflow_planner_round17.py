"""The rule planner on a seventeenth round of requests of the developer's own wording (none from
a set): "fit a linear regression on x.csv to predict price" and "a model that predicts churn" (the
target's words were refused once a file stood between the model and "to predict"); "tell me which
is best" / "show me the best one" after candidates (refused); "with k 3, 5 and 7" (no "="); a retry
said before its step ("Retry the training up to 3 times if it fails: load ..., train ...") or
around its file ("retry the load of x.csv up to 5 times"), and "keep retrying it at most twice"
(refused as an unbounded loop though it names its bound); "fit a logistic model to x.csv" (the
file after "to" was refused as unread); and two plans that were silently wrong: "evaluate the
adapters in a/ on h.jsonl and report exact match" loaded h.jsonl after the evaluation, which
cannot read it, and reported the file; "train a knn on x.csv and write the scores to s.csv" wrote
the loaded table (no step made scores). Plans are run on real CSV files."""

from __future__ import annotations

import pytest

from raystack.workflow.nl import PlanRefused

from planner_util import csv_workdir, kinds as _kinds, of_kind, plan as _plan


@pytest.fixture()
def houses(tmp_path, monkeypatch):
    """houses.csv: a city, two features and the class y; price is a number a regression can fit."""
    return csv_workdir(tmp_path, monkeypatch, "houses.csv", "id,city,price,area,y",
                       (f"{i},{'ab'[i % 2]},{10 + (i * 7) % 11},{50 + (i * 3) % 17},{int((i * 7) % 11 > 5)}" for i in range(40)))


def test_the_column_a_model_predicts_after_its_data(houses):
    from raystack.workflow.engine import run_local
    for text in ("Fit a linear regression on houses.csv to predict price.",
                 "Please fit a linear regression on houses.csv to predict price, and report the rmse.",
                 "Train a model on houses.csv that predicts price."):
        p = _plan(text)
        assert _kinds(p)[:2] == ["load_data", "train_model"], text
        assert of_kind(p, "load_data")[0].params["path"] == "houses.csv"
    p = _plan("Build a model that predicts churn from houses.csv and evaluate it.")
    assert _kinds(p) == ["load_data", "train_model", "evaluate_model"]
    run_local(p.ir)


def test_the_best_candidate_told_or_shown(houses):
    from raystack.workflow.engine import run_local
    for text in ("Train knn models on houses.csv with k=3, 5 and 7 and tell me which is best.",
                 "Train knn models on houses.csv with k 3, 5 and 7 and show me the best one.",
                 "Train knn models on houses.csv with k=3, 5 and 7 and let me know which one did best on f1."):
        p = _plan(text)
        assert [s.params["k"] for s in of_kind(p, "train_model")] == [3, 5, 7], text
        assert _kinds(p)[-1] == "select_best", text
    assert of_kind(p, "select_best")[0].params["metric"] == "f1"
    best = run_local(p.ir).results[of_kind(p, "select_best")[0].id].load(None)
    assert best["k"] in (3, 5, 7) if "k" in best else best["model"]["k"] in (3, 5, 7)


def test_a_retry_said_before_its_step_or_around_its_file(houses):
    p = _plan("Retry the training up to 3 times if it fails: load houses.csv, split 80/20, train a knn.")
    assert _kinds(p) == ["load_data", "split_data", "train_model"]
    assert of_kind(p, "train_model")[0].retries == 3 and of_kind(p, "load_data")[0].retries == 0
    for text in ("Retry the load of houses.csv up to 5 times, then compute stats on it.",
                 "Keep retrying the load of houses.csv up to 5 times, then compute stats on it."):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "stats"], text
        assert of_kind(p, "load_data")[0].params["path"] == "houses.csv"
        assert of_kind(p, "load_data")[0].retries == 5 and of_kind(p, "stats")[0].retries == 0
    p = _plan("Load houses.csv and train a knn, keep retrying it at most twice.")
    assert of_kind(p, "train_model")[0].retries == 2
    with pytest.raises(PlanRefused, match="unbounded"):
        _plan("Load houses.csv and train a knn; keep retrying the training.")


def test_a_model_fitted_to_a_file(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Fit a logistic model to houses.csv with learning rates 0.01, 0.05 and 0.1 and keep whichever scores best on auc.")
    assert _kinds(p) == ["load_data", "train_model", "select_best"]  # one mapped training step
    assert of_kind(p, "load_data")[0].params["path"] == "houses.csv"
    assert [s.params["lr"] for s in of_kind(p, "train_model")] == [0.01, 0.05, 0.1]
    run_local(p.ir)
    # elsewhere a file after "to" is where something is written, never a table read
    p = _plan("Load houses.csv, dedup it and save it to deduped.csv.")
    assert _kinds(p) == ["load_data", "dedup", "write_table"]


def test_an_evaluation_file_no_step_can_read_is_refused_not_reported(houses):
    (houses / "held_out.jsonl").write_text('{"prompt": "2+2=", "response": "4"}\n')
    for text in ("Evaluate the adapters in ./adapters/run1 on held_out.jsonl and report exact match.",
                 "Evaluate the adapters in ./adapters/run1 on held_out.jsonl."):
        with pytest.raises(PlanRefused, match="held_out.jsonl.*evaluate_adapters scores on each task.s own held-out examples; it cannot read a file"):
            _plan(text)
    p = _plan("Load houses.csv and report it.")         # a load the report reads on its own is asked for
    assert _kinds(p) == ["load_data", "save_report"]


def test_scores_written_where_no_step_made_scores_are_refused(houses):
    from raystack.workflow.engine import run_local
    for text in ("Train a knn on houses.csv and write the scores to s.csv.",
                 "Fit a knn to houses.csv and write the scores to s.csv."):
        with pytest.raises(PlanRefused, match="writes scores, but no step before it makes any"):
            _plan(text)
    p = _plan("Train a knn on houses.csv, evaluate it and write the scores to s.csv.")
    assert _kinds(p) == ["load_data", "train_model", "evaluate_model", "write_table"]
    assert of_kind(p, "write_table")[0].params["data"].step == of_kind(p, "evaluate_model")[0].id
    run_local(p.ir)
    p = _plan("Load houses.csv, average the price per city and write the result to avg.csv.")
    assert _kinds(p) == ["load_data", "aggregate", "write_table"]


def test_keys_listed_before_the_file_are_all_grouped_by(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Average price by city and area from houses.csv.")
    assert _kinds(p) == ["load_data", "aggregate"]
    assert of_kind(p, "aggregate")[0].params["by"] == ["city", "area"]
    rows = run_local(p.ir).results[of_kind(p, "aggregate")[0].id].load(None).to_pydict()
    assert len(rows["city"]) == len(set(zip(rows["city"], rows["area"]))) > 2
    # "by city and by area" may be two breakdowns: refused, never the first alone
    with pytest.raises(PlanRefused, match="'area'"):
        _plan("Average price by city and by area from houses.csv.")


def test_one_step_asked_of_the_tables_before_and_after_is_refused(houses):
    for text in ("Read houses.csv, drop duplicates, and give me stats before and after.",
                 "Read houses.csv, drop duplicates, and give me stats before/after."):
        with pytest.raises(PlanRefused, match="a step reads one table; say the step once for each"):
            _plan(text)
    p = _plan("Read houses.csv, compute stats, drop duplicates and compute stats again.")
    assert _kinds(p) == ["load_data", "stats", "dedup", "stats"]


def test_an_order_said_by_a_lead_in_or_but_first(houses):
    from raystack.workflow.engine import run_local
    for text in ("Train a knn on houses.csv, but normalize the data first.",
                 "Before training, normalize houses.csv; then fit a knn and report f1."):
        p = _plan(text)
        assert _kinds(p)[:3] == ["load_data", "normalize", "train_model"], text
        assert of_kind(p, "train_model")[0].params["data"].step != of_kind(p, "load_data")[0].id
    run_local(p.ir)
    p = _plan("Load houses.csv and train a knn. After training, evaluate it on f1.")
    assert _kinds(p) == ["load_data", "train_model", "evaluate_model"]
    with pytest.raises(PlanRefused, match="'training'"):    # no training said: the lead-in names nothing
        _plan("Before training, normalize houses.csv.")


def test_steps_side_by_side_after_the_step_that_feeds_them(houses):
    from raystack.workflow.engine import run_local
    for text in ("Split houses.csv 80/20 and train knn, logistic and nearest centroid side by side. Pick the best by f1.",
                 "Split houses.csv 80/20 and train three models side by side: knn, logistic and nearest centroid. "
                 "Pick the best by f1."):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "split_data", "train_model", "select_best"], text
        split = of_kind(p, "split_data")[0]
        assert split.params["test_fraction"] == 0.2
        trains = of_kind(p, "train_model")
        assert [s.params["model"] for s in trains] == ["knn", "logistic", "centroid"], text
        assert {s.params["data"].step for s in trains} == {split.id}, text   # the 80/20 split, no other
    run_local(p.ir)


def test_a_step_beside_one_named_with_its_file_reads_the_file(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Normalize houses.csv and, in parallel, compute its stats.")
    assert _kinds(p) == ["load_data", "normalize", "stats"]
    load = of_kind(p, "load_data")[0].id
    assert of_kind(p, "stats")[0].params["data"].step == load
    stats = run_local(p.ir).results[of_kind(p, "stats")[0].id].load(None)
    assert stats["rows"] == 40


def test_a_statistic_asked_for_is_computed_never_a_description(houses):
    for text in ("I need the max price from houses.csv.", "I want the average of the price column in houses.csv.",
                 "We need the median area in houses.csv."):
        assert _kinds(_plan(text)) == ["load_data", "stats"], text
    with pytest.raises(PlanRefused, match="highest"):
        _plan("Load the highest paid customers from houses.csv.")


def test_adapters_for_their_files_and_the_base_after_them(houses):
    for name in ("summarize", "translate"):
        (houses / f"{name}.jsonl").write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    p = _plan("Fine-tune adapters for summarize.jsonl and translate.jsonl on tiny-1m with mLoRA, then serve both as multi-task.")
    assert _kinds(p) == ["mlora_finetune", "serve_adapters"]
    ft = of_kind(p, "mlora_finetune")[0].params
    assert ft["base"] == "tiny-1m" and [d["path"] for d in ft["datasets"]] == ["summarize.jsonl", "translate.jsonl"]
    assert of_kind(p, "serve_adapters")[0].params["name"] == "multi-task"


def test_a_load_and_a_notification_after_it(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Load houses.csv and notify me with 'loaded' once it's done.")
    assert _kinds(p) == ["load_data", "notify"]
    note = of_kind(p, "notify")[0]
    assert note.params["message"] == "loaded" and of_kind(p, "load_data")[0].id in note.after
    run_local(p.ir)


def test_a_part_retrained_under_a_condition_is_that_part_again(houses):
    p = _plan("Train the DLRM on data/criteo with 3 workers; if AUC is under 0.7, retrain it with 6 workers.")
    first, again = of_kind(p, "elastic_dlrm")
    assert _kinds(p) == ["elastic_dlrm", "elastic_dlrm"]
    assert again.when[0].ref.step == first.id and again.when[0].ref.key == "auc" and again.when[0].op == "<"
    assert (first.params["resources"]["max_workers"], again.params["resources"]["max_workers"]) == (3, 6)
    assert again.params["data"] == first.params["data"] == {"path": "data/criteo"}
    (houses / "corpus").mkdir()
    (houses / "corpus" / "a.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 50)
    p = _plan("Pretrain tiny-1m with EDiT on ./corpus for 100 steps; if the val loss is above 3, retrain it for 200 steps.")
    first, again = of_kind(p, "edit_pretrain")
    assert (first.params["steps"], again.params["steps"]) == (100, 200) and again.params["model"] == "tiny-1m"


def test_a_training_then_the_model_kind_it_uses_is_one_training(houses):
    from raystack.workflow.engine import run_local
    for text in ("Train a model on houses.csv using logistic regression with a learning rate of 0.05.",
                 "Train the model on houses.csv. Use logistic regression with a learning rate of 0.05."):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "train_model"], text
        assert (of_kind(p, "train_model")[0].params["model"], of_kind(p, "train_model")[0].params["lr"]) == ("logistic", 0.05)
    p = _plan("Train a classifier on houses.csv with a knn, k=5.")
    assert _kinds(p) == ["load_data", "train_model"] and of_kind(p, "train_model")[0].params["k"] == 5
    model = run_local(p.ir).results[of_kind(p, "train_model")[0].id].load(None)
    assert model["kind"] == "knn"
    p = _plan("Train a logistic model on houses.csv, then a knn.")       # two models said: two trainings
    assert [s.params["model"] for s in of_kind(p, "train_model")] == ["logistic", "knn"]


def test_two_files_written_by_one_write_are_refused(houses):
    for text in ("Dedupe houses.csv and write it to a_dedup.csv and b_dedup.csv.",
                 "Load houses.csv and write it to out.csv and b.csv."):
        with pytest.raises(PlanRefused, match="a step writes one file; say each write with its own file"):
            _plan(text)


def test_one_epoch_per_round_of_a_loop():
    p = _plan("Train the elastic DLRM on data/criteo; repeat until AUC is above 0.75, at most 3 rounds, one epoch per round.")
    (run,) = of_kind(p, "elastic_dlrm")
    assert run.params["epochs"] == 1 and run.loop.max_iterations == 3 and run.loop.until_key == "auc"
    with pytest.raises(PlanRefused, match="epoch"):     # (a whole count per round: test_workflow_planner_round23)
        _plan("Train the elastic DLRM on data/criteo; repeat until AUC is above 0.75, at most 3 rounds, 0.5 epochs per round.")


def test_a_failure_retry_naming_its_step_before_it(houses):
    p = _plan("Load houses.csv; if the training fails, retry twice; train a knn.")
    assert of_kind(p, "train_model")[0].retries == 2 and of_kind(p, "load_data")[0].retries == 0
    p = _plan("Load houses.csv and train a knn; if the load fails, retry it 3 times.")
    assert of_kind(p, "load_data")[0].retries == 3 and of_kind(p, "train_model")[0].retries == 0


def test_a_search_range_said_apart_from_its_parameter_is_a_range(houses):
    for text in ("Search for the best k for a knn on houses.csv between 1 and 9 with 3 trials, optimizing f1.",
                 "Search for the best k for a knn on houses.csv, trying values from 1 to 9, with 3 trials, optimizing f1."):
        p = _plan(text)
        tune = of_kind(p, "train_model")[0].tune
        assert tune.space == {"k": {"min": 1.0, "max": 9.0}} and (tune.trials, tune.metric) == (3, "f1"), text
    p = _plan("Tune the learning rate of a logistic model on houses.csv over 0.001, 0.01 and 0.1.")
    assert of_kind(p, "train_model")[0].tune.space == {"lr": [0.001, 0.01, 0.1]}


def test_a_group_key_is_never_the_next_steps_verb(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Load houses.csv, total the prices per city, and get a bar chart of that.")
    assert _kinds(p) == ["load_data", "aggregate", "plot"]
    assert of_kind(p, "aggregate")[0].params["by"] == "city"
    run_local(p.ir)
    p = _plan("Sum the price by city and area in houses.csv.")
    assert of_kind(p, "aggregate")[0].params["by"] == ["city", "area"]


def test_a_step_that_names_its_output_runs_on_the_pick_after_it(houses):
    from raystack.workflow.engine import run_local
    for text, name in (("Train both a knn and a logistic model on houses.csv and deploy whichever has the higher f1.", None),
                       ("Train both a knn and a logistic model on houses.csv and deploy whichever has the higher f1 "
                        "as houses-best.", "houses-best")):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "train_model", "select_best", "deploy_model"], text
        (deploy,) = of_kind(p, "deploy_model")          # once, the pick's model: not one per candidate
        assert deploy.params["model"].step == of_kind(p, "select_best")[0].id
        assert of_kind(p, "select_best")[0].params["metric"] == "f1"
        assert deploy.params.get("name") == name or (name is None and "name" not in deploy.params)
    run_local(p.ir)


def test_results_printed_a_lead_in_and_statistics_of_every_column(houses):
    for text in ("Fit a knn on houses.csv and print its accuracy.", "Fit a knn on houses.csv and show its accuracy.",
                 "As a quick baseline, fit a nearest centroid classifier on houses.csv and print its accuracy."):
        assert _kinds(_plan(text)) == ["load_data", "train_model", "save_report"], text
    p = _plan("Let's compare k=1, k=5 and k=15 for knn on houses.csv and keep the most accurate.")
    assert [s.params["k"] for s in of_kind(p, "train_model")] == [1, 5, 15] and _kinds(p)[-1] == "select_best"
    for text in ("Get the mean and standard deviation of every column in houses.csv.",
                 "Compute the max of all columns in houses.csv."):
        assert _kinds(_plan(text)) == ["load_data", "stats"], text


def test_counted_models_rows_with_a_null_and_what_is_left(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Fit three logistic models on houses.csv for 10, 20 and 40 epochs, and plot their f1 scores.")
    assert [s.params["epochs"] for s in of_kind(p, "train_model")] == [10, 20, 40]
    assert of_kind(p, "plot")[0].params["metric"] == "f1"
    (houses / "gaps.csv").write_text("id,city,price,y\n1,a,10,0\n2,b,,1\n3,a,12,1\n4,,13,0\n5,b,9,1\n")
    for text in ("Load gaps.csv and drop every row with a missing value.",
                 "Load gaps.csv, drop every row that has a null, and count what's left."):
        p = _plan(text)
        assert _kinds(p)[:2] == ["load_data", "clean_data"], text
    assert _kinds(p) == ["load_data", "clean_data", "stats"]
    assert run_local(p.ir).results[of_kind(p, "stats")[0].id].load(None)["rows"] == 3


def test_a_checkpoint_said_to_be_the_base(houses):
    (houses / "ckpt").mkdir()
    (houses / "ckpt" / "config.json").write_text("{}")
    for name in ("qa", "chat"):
        (houses / f"{name}.jsonl").write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    p = _plan("Using the checkpoint in ./ckpt as the base, fine-tune LoRA adapters on qa.jsonl and chat.jsonl, "
              "then evaluate them on exact match.")
    assert _kinds(p) == ["load_checkpoint", "mlora_finetune", "evaluate_adapters"]
    assert of_kind(p, "mlora_finetune")[0].params["base"].step == of_kind(p, "load_checkpoint")[0].id


def test_a_statistic_for_each_group_said_first_is_the_groups_aggregate(houses):
    from raystack.workflow.engine import run_local
    for text, agg in (("For each city in houses.csv, compute the average price.", "mean"),
                      ("Per city in houses.csv, compute the max price.", "max")):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "aggregate"], text
        assert (of_kind(p, "aggregate")[0].params["by"], of_kind(p, "aggregate")[0].params["agg"]) == ("city", agg)
    rows = run_local(p.ir).results[of_kind(p, "aggregate")[0].id].load(None).to_pydict()
    assert sorted(rows["city"]) == ["a", "b"] and max(rows["price"]) == 20


def test_a_request_no_step_makes_is_never_a_description_of_the_data(houses):
    # "Check" read as words describing houses.csv: the plan loaded it and did nothing else
    for text in ("Check houses.csv for missing values.", "Inspect houses.csv for outliers."):
        with pytest.raises(PlanRefused, match="'(Check|Inspect)'"):
            _plan(text)


def test_an_empty_csv_cell_is_a_missing_value_in_a_text_column(houses):
    from raystack.workflow.engine import run_local
    (houses / "blank.csv").write_text("id,city,price,y\n1,a,10,0\n2,,11,1\n3,b,12,1\n")
    p = _plan("Load blank.csv and drop rows with missing values.")
    rows = run_local(p.ir).results[of_kind(p, "clean_data")[0].id].load(None).to_pydict()
    assert rows["id"] == [1, 3]


def test_saved_adapters_served_under_a_name(houses):
    run1 = houses / "adapters" / "run1"
    run1.mkdir(parents=True)
    (run1 / "adapter_config.json").write_text("{}")
    for text, name in (("Serve the adapters in ./adapters/run1 as chat-v2.", "chat-v2"),
                       ("Serve the adapters saved in ./adapters/run1 under the name support-bot.", "support-bot")):
        p = _plan(text)
        assert _kinds(p) == ["load_adapters", "serve_adapters"], text
        serve = of_kind(p, "serve_adapters")[0]
        assert serve.params["name"] == name and serve.params["adapters"].step == p.ir.steps[0].id


def test_a_base_started_from_and_a_metric_reported_as_a_participle(houses):
    (houses / "sft.jsonl").write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    ft = of_kind(_plan("Finetune a rank-8 LoRA on sft.jsonl starting from tiny-20m."), "mlora_finetune")[0].params
    assert ft["base"] == "tiny-20m" and [a["r"] for a in ft["adapters"]] == [8]
    p = _plan("I need a logistic regression trained on houses.csv with a 20% holdout, reporting f1.")
    assert _kinds(p) == ["load_data", "split_data", "train_model", "save_report"]
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.2


def test_a_table_named_by_its_place_is_refused(houses):
    (houses / "b.csv").write_text((houses / "houses.csv").read_text())
    with pytest.raises(PlanRefused, match="cannot tell which step 'the first one' refers to"):
        _plan("Load houses.csv and b.csv. Dedup the first one and normalize the second, then join them on id.")
    assert _kinds(_plan("Load houses.csv and take the first 10 rows.")) == ["load_data", "sample"]


def test_a_step_said_again_by_its_noun_after_before_or_after(houses):
    from raystack.workflow.engine import run_local
    with pytest.raises(PlanRefused, match="'before imputation'"):
        _plan("Impute houses.csv with the mean, then plot the price column before imputation.")
    p = _plan("Impute houses.csv with the mean, then plot the price column after imputation.")
    assert _kinds(p) == ["load_data", "impute", "plot"]                 # imputed once
    assert of_kind(p, "plot")[0].params["data"].step == of_kind(p, "impute")[0].id
    run_local(p.ir)
    p = _plan("Normalize houses.csv and train a knn after normalization.")
    assert _kinds(p) == ["load_data", "normalize", "train_model"]


def test_short_step_words_with_two_letters_swapped(houses):
    from raystack.workflow.nl.spelling import corrected
    for text, kinds in (("Trian a knn on houses.csv and evalute it.", ["load_data", "train_model", "evaluate_model"]),
                        ("Load houses.csv, normalsie it, and trian a logistic regresion.",
                         ["load_data", "normalize", "train_model"]),
                        ("Calculate the averge price per city in houses.csv.", ["load_data", "aggregate"]),
                        ("Dedupe houses.csv and sumarize it.", ["load_data", "dedup", "stats"]),
                        ("Load houses.csv and polt the price column.", ["load_data", "plot"])):
        assert _kinds(_plan(text)) == kinds, text
    # a dropped letter in a short word and a word that is right stay as written ("spilt", a real word a
    # swap makes, was kept as written until round 29: no workflow asks to spill, and "spilt them" was
    # dropped from the plan without a word; it reads as "split" now)
    assert [corrected(w) for w in ("tain", "train", "trains", "model")] == [None] * 4
    assert corrected("spilt") == "split"


def test_a_checkpoint_named_by_the_run_that_made_it_is_no_pretraining(houses):
    (houses / "ckpt" / "base").mkdir(parents=True)
    (houses / "ckpt" / "base" / "config.json").write_text("{}")
    (houses / "sft.jsonl").write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    p = _plan("Fine-tune LoRA adapters on sft.jsonl over the EDiT checkpoint from ./ckpt/base and export them to ./exported.")
    assert _kinds(p) == ["load_checkpoint", "mlora_finetune", "export_model"]     # no EDiT run asked for
    assert of_kind(p, "mlora_finetune")[0].params["base"].step == of_kind(p, "load_checkpoint")[0].id


def test_a_model_exported_without_a_file_goes_to_the_default_one(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Train a knn on houses.csv, evaluate it on recall, and export it if recall is at least 0.05 "
              "else notify 'recall too low'.")
    assert _kinds(p) == ["load_data", "train_model", "evaluate_model", "export_model", "notify"]
    export = of_kind(p, "export_model")[0]
    assert "path" not in export.params and export.when[0].ref.key == "recall" and export.when[0].op == ">="
    written = run_local(p.ir).results[export.id].load(None).path
    assert written.endswith("model.json")


def test_the_test_share_said_as_a_parameter_is_the_split(houses):
    for text, share in (("Train a knn on houses.csv (k=5, test size 0.25).", 0.25),
                        ("Train a logistic regression on houses.csv using a 0.3 test fraction.", 0.3),
                        ("Train a knn on houses.csv with test_size=0.2.", 0.2)):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "split_data", "train_model"], text
        assert of_kind(p, "split_data")[0].params["test_fraction"] == share, text
        assert of_kind(p, "train_model")[0].params["data"].step == of_kind(p, "split_data")[0].id


def test_keep_training_its_object_then_while(houses):
    p = _plan("Keep training the knn on houses.csv while accuracy is below 0.9, up to 4 times.")
    loop = of_kind(p, "train_model")[0].loop
    assert (loop.max_iterations, loop.until_key, loop.until_op, loop.until_value) == (4, "accuracy", ">=", 0.9)


def test_two_steps_joined_by_and_also_run_in_parallel(houses):
    p = _plan("Train a knn on houses.csv, and also compute stats on houses.csv in parallel.")
    assert _kinds(p) == ["load_data", "train_model", "stats"]
    train, stats = of_kind(p, "train_model")[0], of_kind(p, "stats")[0]
    assert train.group is not None and train.group == stats.group          # side by side
    assert stats.params["data"].step == of_kind(p, "load_data")[0].id and train.id not in stats.after


def test_rows_given_or_named_by_what_they_are(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Load houses.csv and give me 3 random rows.")
    assert _kinds(p) == ["load_data", "sample"] and of_kind(p, "sample")[0].params["rows"] == 3
    p = _plan("Take houses.csv, keep only the first 5 houses, and export them as first5.csv.")
    sample = of_kind(p, "sample")[0].params
    assert (sample["which"], sample["rows"]) == ("first", 5) and _kinds(p)[-1] == "write_table"
    assert run_local(p.ir).results[of_kind(p, "sample")[0].id].load(None).num_rows == 5


def test_another_value_tried_under_a_condition_is_the_same_model_again(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Train a knn on houses.csv with k = 3; then, if accuracy < 0.99, try k = 7.")
    first, again = of_kind(p, "train_model")
    assert (first.params["k"], again.params["k"], again.params["model"]) == (3, 7, "knn")
    assert again.when[0].ref.step == first.id and again.when[0].op == "<"
    run_local(p.ir)
    with pytest.raises(PlanRefused, match="no model was trained before it"):
        _plan("Load houses.csv, try k = 7.")


def test_which_duplicate_a_dedup_keeps(houses):
    from raystack.workflow.engine import run_local
    for text in ("Dedup houses.csv keeping the last occurrence.", "Remove duplicate rows from houses.csv, keep the latest."):
        with pytest.raises(PlanRefused, match="dedup keeps the first of each set of duplicate rows"):
            _plan(text)
    (houses / "dupes.csv").write_text("id,city,y\n1,a,0\n1,a,0\n2,b,1\n")
    p = _plan("Dedup dupes.csv, keeping the first occurrence.")
    assert _kinds(p) == ["load_data", "dedup"]
    assert run_local(p.ir).results[of_kind(p, "dedup")[0].id].load(None).to_pydict()["id"] == [1, 2]


def test_words_after_a_file_named_inside_a_step_are_never_the_loads(houses):
    # each was planned without what the words asked (balanced classes, forward filling, ignoring
    # case, cross-validation, weekly groups, the price column, stratification, a log scale)
    for text in ("Train a logistic model on houses.csv balanced classes.", "Impute houses.csv forward.",
                 "Dedup houses.csv ignoring case.", "Evaluate a knn on houses.csv cross validated.",
                 "Compute stats on houses.csv grouped weekly.", "Plot houses.csv price sorted.",
                 "Sample houses.csv stratified.", "Train a knn on houses.csv in under a minute.",
                 "Plot price from houses.csv on a log scale."):
        with pytest.raises(PlanRefused, match="no step or parameter for"):
            _plan(text)
    assert _kinds(_plan("Load houses.csv and scale it.")) == ["load_data", "normalize"]
    assert _kinds(_plan("Plot price from houses.csv.")) == ["load_data", "plot"]


def test_a_file_said_alone_or_as_the_input_is_still_read(houses):
    p = _plan("Using houses.csv as input, drop rows missing price, dedupe, and describe it.")
    assert _kinds(p) == ["load_data", "clean_data", "dedup", "stats"]
    p = _plan("Train a knn on houses.csv trying k of 3, 5 and 9, evaluate each, and plot their accuracies.")
    assert [s.params["k"] for s in of_kind(p, "train_model")] == [3, 5, 9]
    (houses / "b.csv").write_text((houses / "houses.csv").read_text())
    p = _plan("Load houses.csv and b.csv, stack them, then train a knn on the result and a logistic model on houses.csv alone.")
    assert [s.params["model"] for s in of_kind(p, "train_model")] == ["knn", "logistic"]


def test_how_a_step_should_run_is_never_its_object(houses):
    for text in ("Load houses.csv and dedup rows ignoring case.", "Load houses.csv and sample rows stratified.",
                 "Load houses.csv and plot price sorted.", "Load houses.csv and impute values forward.",
                 "Load houses.csv and split it stratified.", "Load houses.csv and dedup it fuzzy matching."):
        with pytest.raises(PlanRefused, match="no step or parameter for"):
            _plan(text)
    assert _kinds(_plan("Load houses.csv and dedup the joined rows.")) == ["load_data", "dedup"]
    (houses / "b.csv").write_text((houses / "houses.csv").read_text())
    p = _plan("Load houses.csv and b.csv, summarise each with descriptive stats, and produce one chart comparing them.")
    assert _kinds(p)[-1] == "plot"


def test_domain_requests_of_this_round(houses):
    from raystack.workflow.engine import run_local
    (houses / "weather.csv").write_text("date,city,rain\n1,a,0.1\n2,b,0.0\n")
    (houses / "trips.csv").write_text("date,driver,km\n1,x,10\n2,y,12\n1,x,10\n")
    # an output file whose name holds a loaded file's name ("trips_weather.csv") named no input
    p = _plan("Transport: join trips.csv and weather.csv on date and write out trips_weather.csv.")
    assert _kinds(p) == ["load_data", "load_data", "join", "write_table"]
    assert of_kind(p, "write_table")[0].params["path"] == "trips_weather.csv"
    run_local(p.ir)
    p = _plan("Fleet telemetry: ingest trips.csv, de-duplicate, roll up km per driver, and write the rollup to driver_km.parquet.")
    assert _kinds(p) == ["load_data", "dedup", "aggregate", "write_table"]
    assert of_kind(p, "write_table")[0].params["data"].step == of_kind(p, "aggregate")[0].id
    p = _plan("Banking: train a knn on houses.csv and raise an alert if accuracy falls below 0.7.")
    assert _kinds(p)[-1] == "notify" and of_kind(p, "notify")[0].when[0].op == "<"
    p = _plan("Healthcare: houses.csv has gaps; fill them with medians, then fit a logistic regression predicting y.")
    assert _kinds(p)[:2] == ["load_data", "impute"] and of_kind(p, "impute")[0].params["strategy"] == "median"
    p = _plan("Gaming: train logistic and knn on houses.csv in parallel, compare auc, keep the winner.")
    assert of_kind(p, "select_best")[0].params["metric"] == "auc"
    p = _plan("Retail: using houses.csv, figure out average price per city and chart it.")
    assert _kinds(p) == ["load_data", "aggregate", "plot"]


def test_domain_requests_of_this_round_second_batch(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Load houses.csv, work out price totals per city and save them to totals.csv.")
    assert _kinds(p) == ["load_data", "aggregate", "write_table"]      # 'store'/'save' as the key's verb, 'city' the key
    assert of_kind(p, "aggregate")[0].params["by"] == "city" and of_kind(p, "aggregate")[0].params["agg"] == "sum"
    (houses / "sales.csv").write_text("store,revenue\na,1\nb,2\na,3\n")
    p = _plan("Load sales.csv, compute the totals per store and save them to t.csv.")
    assert of_kind(p, "aggregate")[0].params["by"] == "store" and _kinds(p)[-1] == "write_table"
    assert run_local(p.ir).results[of_kind(p, "aggregate")[0].id].load(None).to_pydict()["revenue"] == [4, 2]
    p = _plan("Ops: pull houses.csv, sample 50% of rows with seed 11, and draw a histogram of price saved as price.png.")
    assert of_kind(p, "plot")[0].params["column"] == "price" and of_kind(p, "plot")[0].params["path"] == "price.png"
    p = _plan("Biology: train a knn on houses.csv with k ranging from 1 to 3 and report which k is best.")
    assert [s.params["k"] for s in of_kind(p, "train_model")] == [1, 2, 3] and _kinds(p)[-1] == "select_best"
    p = _plan("Maintenance: load houses.csv; retry up to 3 times if the load fails; then compute stats.")
    assert of_kind(p, "load_data")[0].retries == 3
    for name in ("support", "chat"):
        (houses / f"{name}.jsonl").write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    ft = of_kind(_plan("Support: fine-tune two adapters over tiny-1m, one on support.jsonl and one on chat.jsonl, and "
                       "serve them as support-bots."), "mlora_finetune")[0].params
    assert [d["path"] for d in ft["datasets"]] == ["support.jsonl", "chat.jsonl"]


def test_the_aggregate_and_the_whole_file_name_tables_made_before(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Load houses.csv; aggregate it by city; train a knn on the aggregate.")
    assert _kinds(p) == ["load_data", "aggregate", "train_model"]            # aggregated once
    p = _plan("Sample 10 rows of houses.csv and also compute stats of the whole file.")
    assert of_kind(p, "stats")[0].params["data"].step == of_kind(p, "load_data")[0].id
    assert run_local(p.ir).results[of_kind(p, "stats")[0].id].load(None)["rows"] == 40


def test_columns_to_scale_said_with_only_after_them(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Load houses.csv, normalize price and area only, and train a knn.")
    assert of_kind(p, "normalize")[0].params["columns"] == ["price", "area"]
    rows = run_local(p.ir).results[of_kind(p, "normalize")[0].id].load(None).to_pydict()
    assert rows["id"][:3] == [0, 1, 2] and abs(sum(rows["price"])) < 1e-6     # the id column kept as it was


def test_a_figure_in_a_notification_is_refused_and_k_should_be(houses):
    with pytest.raises(PlanRefused, match="a notification sends the text it is given"):
        _plan("Load houses.csv and compute stats; notify me with the row count.")
    p = _plan("Load houses.csv and compute stats; notify me with 'done'.")
    assert _kinds(p) == ["load_data", "stats", "notify"]                    # one statistics step
    p = _plan("Train a knn classifier on houses.csv — k should be 11.")
    assert of_kind(p, "train_model")[0].params["k"] == 11


def test_deleting_a_data_file_is_refused_as_destructive_and_the_best_is_picked_before_export(houses):
    for text in ("Delete houses.csv after training a knn on it.", "Train a knn on houses.csv and then delete houses.csv.",
                 "Remove the file houses.csv when done."):
        with pytest.raises(PlanRefused, match="asks to delete a data file") as err:
            _plan(text)
        assert err.value.kind == "destructive"
    assert _kinds(_plan("Remove duplicates from houses.csv.")) == ["load_data", "dedup"]
    with pytest.raises(PlanRefused, match="'export'"):       # the best of three, with no pick said
        _plan("Train knn models with k 3, 5, 7 on houses.csv and export the best model.")
    p = _plan("Train knn models with k 3, 5, 7 on houses.csv, keep the best and export it.")
    assert _kinds(p) == ["load_data", "train_model", "select_best", "export_model"]
    assert of_kind(p, "export_model")[0].params["model"].step == of_kind(p, "select_best")[0].id


def test_two_aggregations_said_one_after_the_other(houses):
    from raystack.workflow.engine import run_local
    p = _plan("Compute the average price per city in houses.csv and the count per city too.")
    mean, count = of_kind(p, "aggregate")
    load = of_kind(p, "load_data")[0].id
    assert (mean.params["agg"], count.params["agg"]) == ("mean", "count")
    assert mean.params["data"].step == load and count.params["data"].step == load   # counted 1 per city before
    counts = run_local(p.ir).results[count.id].load(None).to_pydict()
    assert sorted(counts["price"]) == [20, 20]
    p = _plan("Load houses.csv, sum price per id, then count rows per city.")
    assert [s.params["by"] for s in of_kind(p, "aggregate")] == ["id", "city"]   # the second was dropped
    p = _plan("Load houses.csv, group it by city, then compute the average price.")
    assert _kinds(p) == ["load_data", "aggregate"] and of_kind(p, "aggregate")[0].params["agg"] == "mean"
