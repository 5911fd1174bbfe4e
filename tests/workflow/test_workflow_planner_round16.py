"""The rule planner on a sixteenth round of requests of the developer's own wording (none from a
set): a cleaning spelled out by what it does ("clean loans.csv (drop rows with nulls in debt)"
dropped every row missing anything first); a metric alone as an arrow's stage ("knn -> f1" was
refused, then scored accuracy); a sentence after a question ("...? Report f1."); "give me a
histogram of"; an object closed by "and" before another step ("min-max scale the numbers and
export ..."); "make a synthetic regression dataset" (read as training a model); "the mean of each
column grouped by city"; "try k = 3, 5 and 7 for a knn"; "rank-8 and rank-16 adapters" (one adapter
of rank 8); a best kept of one result; "evaluate the adapters on 32 examples"; "compare their f1";
a file's possessive ("plot loans.csv's income" drew the first numeric column; where no step
reads it, it is refused); "make sure there are no duplicates or missing values" (the missing
values were dropped, and "no missing values" alone planned the load only); "describe the cleaned
table" after an imputation (a new cleaning step); "k equal to 15"; "get the first 100 rows";
"evaluate it on a 30% test set"; "tell me the average amount for each region" (a notification was
added); "a chart of the price distribution" (drew the first numeric column); "with 0.2 noise";
"My manager wants ..."; a sentence of context before the request ("We run a chain of bakeries
and keep daily sales in loans.csv." was refused), never one that asks for something or names a
fault of the data; "score x with a knn after normalizing" (normalized after the training); a
sentence that only greets, thanks or announces the steps ("Thanks in advance!", "Do the
following."); a list ending in a metric right after the model ("x.csv: 30% test split,
logistic, recall."); the parts' options said in words ("2 shards per replica and full sharding",
"a 0.5 outer learning rate", "int8 quantization of the base", "evaluate it on 5000 rows": each
was refused), and three record files after a base folder ("over the base in ckpt/ on a.jsonl,
b.jsonl and c.jsonl" read only the first); a step's method named with its own noun ("join it with
b.csv on id using a left join", "impute x using mean imputation", "split x using an 80/20 split"
each made a second step, silently); "the income and debt columns of x.csv" (only the first was
scaled); a step spelled out by what it does ("clean x by imputing the median" dropped rows first,
"train a model on x by fitting a knn with k=3" trained a second model, "deduplicate x to remove
duplicate rows" deduplicated twice); "if it scores above 0.75 on f1" (the metric was refused); questions a step answers ("What's the
average income by city in x.csv?", "How accurate is a knn on x.csv?" were refused); "start by generating 1000 rows"; "knn with k 9";
a deployment named "churn-tuned" (read as a second search); "report the AUC of each" after two
models (the last one only, and a report or chart per result all wrote one file, the last
replacing the others); "combine a.csv and b.csv row-wise" (a join); "group x.csv by city and
compute the average price" (refused; with the file named after "group" it summed per city and took
the statistics of the sums); "using order_id as the key"; "write out joined.csv"; a split written "80-20" or "70:30"; "eval f1"
as a list item; "- report precision" as a bullet; "(rank 4 and rank 8)"; "with 2 to 6 workers";
"train an EDiT model"; "serve them under the name x"; "we report its accuracy"; "check f1 on a 25%
holdout"; terse pipelines ("logistic lr=0.05 epochs=40" read the 0.05 as epochs; "groupby region
sum" summed without a key, silently; "deploy houses-lin"); "train a logistic model for 40 epochs
on x.csv" (the epochs were read as the load's words).
Plans are run on real CSV files."""

from __future__ import annotations

import pytest

from raystack.workflow.nl import PlanRefused

from planner_util import kinds as _kinds, of_kind, plan as _plan


@pytest.fixture()
def loans(tmp_path, monkeypatch):
    """loans.csv: a city, two features (debt missing in two rows) and the target column y."""
    monkeypatch.chdir(tmp_path)
    rows = [f"{i},{'ab'[i % 2]},{(i * 7) % 11},{'' if i in (3, 8) else (i * 3) % 5},{int((i * 7) % 11 > 5)}"
            for i in range(40)]
    (tmp_path / "loans.csv").write_text("loan_id,city,income,debt,y\n" + "\n".join(rows) + "\n")
    return tmp_path


def test_a_cleaning_spelled_out_by_what_it_does_is_one_step(loans):
    from raystack.workflow.engine import run_local
    for text in ("Clean loans.csv (drop rows with nulls in debt), then compute the average income by city.",
                 "Clean loans.csv by dropping rows with nulls in debt, then compute the average income by city.",
                 "Clean loans.csv: drop rows with NaNs in the debt column, then compute the average income by city."):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "clean_data", "aggregate"], text
        assert of_kind(p, "clean_data")[0].params["columns"] == ["debt"], text
    rows = run_local(p.ir).results[of_kind(p, "clean_data")[0].id].load(None).to_pydict()
    assert len(rows["loan_id"]) == 38 and 3 not in rows["loan_id"] and 8 not in rows["loan_id"]


def test_a_metric_alone_as_an_arrow_stage_is_the_evaluation_of_that_metric(loans):
    from raystack.workflow.engine import run_local
    for text, metric in (("loans.csv → dedupe → 80/20 → knn → f1", "f1"),
                         ("loans.csv -> logistic regression -> precision on a 25% holdout", "precision")):
        p = _plan(text)
        assert _kinds(p)[-1] == "evaluate_model", text
        assert of_kind(p, "evaluate_model")[0].params["metric"] == metric, text
    report = run_local(p.ir)
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.25
    evaluation = report.results[of_kind(p, "evaluate_model")[0].id].load(None)
    assert evaluation["metric"] == "precision" and 0.0 <= evaluation["score"] <= 1.0, evaluation


def test_a_sentence_after_a_question_and_a_histogram_given(loans):
    p = _plan("Could you take loans.csv and fit a knn on it? Report f1.")
    assert _kinds(p) == ["load_data", "train_model", "save_report"]
    for text in ("Read loans.csv and give me a histogram of income.", "Load loans.csv and get me a bar chart of city."):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "plot"], text
    assert of_kind(p, "plot")[0].params["column"] == "city"


def test_an_object_closed_by_and_before_the_next_step(loans):
    from raystack.workflow.engine import run_local
    p = _plan("Using loans.csv, min-max scale the numbers and export the table as scaled.csv.")
    assert _kinds(p) == ["load_data", "normalize", "write_table"]
    assert of_kind(p, "normalize")[0].params["method"] == "minmax"
    assert "columns" not in of_kind(p, "normalize")[0].params
    import pyarrow.csv as pacsv
    written = run_local(p.ir).results[of_kind(p, "write_table")[0].id].load(None).path
    scaled = pacsv.read_csv(written).to_pydict()
    assert written.endswith("scaled.csv") and min(scaled["income"]) == 0.0 and max(scaled["income"]) == 1.0


def test_a_synthetic_regression_dataset_is_made_not_trained(loans):
    p = _plan("Make a synthetic regression dataset with 1000 rows and 8 features, train a linear model and report rmse.")
    assert _kinds(p) == ["make_dataset", "train_model", "save_report"]
    made = of_kind(p, "make_dataset")[0].params
    assert (made["rows"], made["features"], made["task"]) == (1000, 8, "regression")
    assert of_kind(p, "train_model")[0].params["model"] == "linear"


def test_the_mean_of_each_column_grouped_by_a_key(loans):
    p = _plan("Load loans.csv and compute the mean of each column grouped by city.")
    assert _kinds(p) == ["load_data", "aggregate"]
    assert of_kind(p, "aggregate")[0].params["by"] == "city" and of_kind(p, "aggregate")[0].params["agg"] == "mean"


def test_values_tried_for_a_model_are_its_candidates(loans):
    from raystack.workflow.engine import run_local
    p = _plan("Try k = 3, 5 and 7 for a knn on loans.csv and keep the best.")
    assert [s.params["k"] for s in of_kind(p, "train_model")] == [3, 5, 7]
    assert _kinds(p)[-1] == "select_best"
    p = _plan("Try learning rates 0.01 and 0.1 for a logistic model on loans.csv and keep the best by f1.")
    assert [s.params["lr"] for s in of_kind(p, "train_model")] == [0.01, 0.1]
    assert of_kind(p, "select_best")[0].params["metric"] == "f1"
    run_local(p.ir)


def test_adapters_of_ranks_written_rank_n_and_a_best_kept_of_one_result(loans):
    (loans / "sft.jsonl").write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    ft = of_kind(_plan("With mLoRA, fine-tune rank-8 and rank-16 adapters on sft.jsonl over tiny-1m."),
                 "mlora_finetune")[0].params
    assert [a["r"] for a in ft["adapters"]] == [8, 16] and len(ft["tasks"]) == 2
    # adapters are not what select_best compares: the one result it found to keep was the base
    (loans / "ckpt").mkdir()
    (loans / "ckpt" / "config.json").write_text("{}")
    with pytest.raises(PlanRefused, match=r"keeps the best of one result \(load_checkpoint\)"):
        _plan("With mLoRA, fine-tune rank-8 and rank-16 adapters on sft.jsonl over the base in ckpt/, "
              "keep the better one and serve it.")
    p = _plan("Fine-tune LoRA adapters on sft.jsonl over tiny-1m with mLoRA and evaluate them on 32 examples.")
    assert of_kind(p, "evaluate_adapters")[0].params["max_examples"] == 32


def test_compare_their_metric_and_keep_the_winner(loans):
    p = _plan("Train knn models on loans.csv with k of 1, 3 and 5, compare their f1, and export the winner to best.json.")
    assert of_kind(p, "select_best")[0].params["metric"] == "f1" and len(of_kind(p, "train_model")) == 3
    assert of_kind(p, "export_model")[0].params["path"] == "best.json"


def test_a_files_possessive_plots_that_column_and_is_refused_where_no_step_reads_it(loans):
    for text in ("Plot loans.csv's income.", "Load loans.csv and plot loans.csv's income."):
        assert of_kind(_plan(text), "plot")[0].params["column"] == "income", text
    with pytest.raises(PlanRefused, match="the income column of loans.csv"):
        _plan("Normalize loans.csv's income and debt columns and plot debt.")


def test_no_duplicates_or_missing_values_are_both_removed(loans):
    from raystack.workflow.engine import run_local
    p = _plan("Start with loans.csv and make sure there are no duplicates or missing values before fitting a logistic model.")
    assert _kinds(p) == ["load_data", "dedup", "clean_data", "train_model"]
    for text in ("Load loans.csv, make sure there are no missing values or duplicates, and train a knn.",
                 "Load loans.csv and make sure there are no missing values."):
        assert "clean_data" in _kinds(_plan(text)), text
    rows = run_local(p.ir).results[of_kind(p, "clean_data")[0].id].load(None).to_pydict()
    assert len(rows["loan_id"]) == 38


def test_the_cleaned_table_after_an_imputation_is_that_table(loans):
    p = _plan("Impute loans.csv using medians, deduplicate, and describe the cleaned table.")
    assert _kinds(p) == ["load_data", "impute", "dedup", "stats"]


def test_k_equal_to_the_first_rows_gotten_and_a_test_set_share(loans):
    p = _plan("Split loans.csv into 85% training and 15% test data and train knn with k equal to 15.")
    assert of_kind(p, "train_model")[0].params["k"] == 15 and of_kind(p, "split_data")[0].params["test_fraction"] == 0.15
    p = _plan("Get the first 10 rows of loans.csv and save them as head.parquet.")
    assert _kinds(p) == ["load_data", "sample", "write_table"]
    assert (of_kind(p, "sample")[0].params["which"], of_kind(p, "sample")[0].params["rows"]) == ("first", 10)
    p = _plan("Train a logistic regression on loans.csv and evaluate it on a 30% test set.")
    assert _kinds(p) == ["load_data", "split_data", "train_model", "evaluate_model"]
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.3


def test_a_figure_told_is_computed_not_notified(loans):
    p = _plan("Could you load loans.csv and tell me the average income for each city?")
    assert _kinds(p) == ["load_data", "aggregate"]
    assert (of_kind(p, "aggregate")[0].params["by"], of_kind(p, "aggregate")[0].params["agg"]) == ("city", "mean")
    assert _kinds(_plan("Train a knn on loans.csv and tell me when it's done.")) == ["load_data", "train_model", "notify"]


def test_the_column_named_before_the_charts_noun_is_drawn(loans):
    from raystack.workflow.engine import run_local
    p = _plan("My manager wants a chart of the income distribution in loans.csv, saved as income_hist.png.")
    assert of_kind(p, "plot")[0].params["column"] == "income"
    assert run_local(p.ir).results[of_kind(p, "plot")[0].id].load(None).info["column"] == "income"
    p = _plan("Load loans.csv and plot the debt trend.")
    assert (of_kind(p, "plot")[0].params["column"], of_kind(p, "plot")[0].params["kind"]) == ("debt", "line")


def test_the_noise_of_generated_data(loans):
    p = _plan("Generate 500 rows of classification data with 4 features and 0.2 noise, then train a logistic model.")
    made = of_kind(p, "make_dataset")[0].params
    assert (made["rows"], made["features"], made["noise"], made["task"]) == (500, 4, 0.2, "classification")


def test_a_sentence_of_context_before_the_request_is_read_as_context(loans):
    cases = {
        "We run a chain of bakeries and keep daily sales in loans.csv. Please compute total income per city.":
            ["load_data", "aggregate"],
        "The file loans.csv contains weekly records from our branches. Drop rows with missing values and plot income.":
            ["load_data", "clean_data", "plot"],
        "We're trying to understand our customers better. Load loans.csv and count rows per city.":
            ["load_data", "aggregate"],
        "Note that loans.csv is large. Take a 5% sample and compute stats.": ["load_data", "sample", "stats"],
    }
    for text, kinds in cases.items():
        assert _kinds(_plan(text)) == kinds, text
    # a sentence that asks for something, or says what is wrong with the data, is never context
    # ("The target is debt." asks for the training's target: round 25 reads it as that, never as context)
    assert of_kind(_plan("The target is debt. Train a knn on loans.csv."), "train_model")[0].params["target"] == "debt"
    for text in ("We only care about the rows from the north. Train a knn on loans.csv.",
                 "Our cluster has 4 GPUs. Train a knn on loans.csv.",
                 "We have duplicates in loans.csv. Train a knn on it.",
                 "Our data is noisy. Train a knn on loans.csv.",
                 "Sort the rows by income. Train a knn on loans.csv."):
        with pytest.raises(PlanRefused):
            _plan(text)


def test_a_model_scored_after_normalizing_is_trained_on_the_normalized_table(loans):
    p = _plan("I'm a data scientist at a bank. We want to score loans.csv with a knn (k=9) after normalizing; report f1.")
    assert _kinds(p) == ["load_data", "normalize", "train_model", "save_report"]
    split = of_kind(p, "split_data")[0]
    assert split.params["data"].step == of_kind(p, "normalize")[0].id
    assert of_kind(p, "save_report")[0].params["result"].step == of_kind(p, "train_model")[0].id


def test_sentences_that_only_greet_thank_or_announce(loans):
    cases = {"Dedup loans.csv and save it to loans_dedup.csv. Thanks in advance!": ["load_data", "dedup", "write_table"],
             "Can you help me with something? Load loans.csv and plot income.": ["load_data", "plot"],
             "Do the following. Load loans.csv. Dedup. Count rows per city.": ["load_data", "dedup", "aggregate"],
             "So basically, take loans.csv, drop rows with nulls, and give me stats. Nothing fancy.":
                 ["load_data", "clean_data", "stats"]}
    for text, kinds in cases.items():
        assert _kinds(_plan(text)) == kinds, text


def test_a_list_ending_in_a_metric_after_the_model_evaluates_it(loans):
    from raystack.workflow.engine import run_local
    for text in ("loans.csv: 30% test split, logistic, recall.", "loans.csv -> logistic -> 30% test -> recall"):
        p = _plan(text)
        assert _kinds(p) == ["load_data", "split_data", "train_model", "evaluate_model"], text
        assert of_kind(p, "evaluate_model")[0].params["metric"] == "recall", text
        assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.3, text
    evaluation = run_local(p.ir).results[of_kind(p, "evaluate_model")[0].id].load(None)
    assert evaluation["metric"] == "recall"
    # metrics listed after a report are the report's, never a second evaluation
    assert _kinds(_plan("Train a logistic model on loans.csv and report accuracy, f1.")) == \
        ["load_data", "train_model", "save_report"]


def test_the_parts_options_said_in_words(loans):
    (loans / "corpus").mkdir()
    (loans / "corpus" / "a.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 20)
    p = _plan("Pretrain with EDiT on corpus/ with 4 ranks, 2 shards per replica and full sharding.")
    edit = of_kind(p, "edit_pretrain")[0].params
    assert (edit["ranks"], edit["shards"], edit["full_shard"]) == (4, 2, True)
    p = _plan("Pretrain tiny-1m with EDiT on corpus/ with an outer learning rate of 0.6 and outer momentum 0.9, "
              "inner lr 0.001.")
    edit = of_kind(p, "edit_pretrain")[0].params
    assert edit["outer"] == {"lr": 0.6, "momentum": 0.9} and edit["inner"] == {"lr": 0.001}
    (loans / "a.jsonl").write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    p = _plan("Fine-tune LoRA adapters on a.jsonl with mLoRA on tiny-1m using int8 quantization of the base.")
    assert of_kind(p, "mlora_finetune")[0].params["quantize"] == "int8"
    (loans / "criteo").mkdir()
    p = _plan("Train a DLRM on criteo/, evaluate it on 5000 rows, and save the report to reports/dlrm.json.")
    assert of_kind(p, "evaluate_dlrm")[0].params["rows"] == 5000
    with pytest.raises(PlanRefused, match=r"'on 0.5 rows': the number of held-out rows is a whole number"):
        _plan("Train a DLRM on criteo/ and evaluate it on 0.5 rows.")


def test_record_files_listed_after_a_base_folder_are_all_read(loans):
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        (loans / name).write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    (loans / "ckpt").mkdir()
    (loans / "ckpt" / "config.json").write_text("{}")
    p = _plan("Fine-tune three LoRA adapters over the base in ckpt/ on a.jsonl, b.jsonl and c.jsonl, then evaluate them.")
    ft = of_kind(p, "mlora_finetune")[0].params
    assert [d["path"] for d in ft["datasets"]] == ["a.jsonl", "b.jsonl", "c.jsonl"] and len(ft["adapters"]) == 3
    assert _kinds(p) == ["load_checkpoint", "mlora_finetune", "evaluate_adapters"]


def test_a_steps_method_named_with_its_own_noun_is_one_step(loans):
    from raystack.workflow.engine import run_local
    (loans / "extra.csv").write_text("loan_id,branch\n" + "\n".join(f"{i},{'xy'[i % 2]}" for i in range(0, 40, 2)) + "\n")
    p = _plan("Load loans.csv and join it with extra.csv on loan_id using a left join, then drop rows with missing values.")
    assert _kinds(p) == ["load_data", "load_data", "join", "clean_data"]
    assert (of_kind(p, "join")[0].params["on"], of_kind(p, "join")[0].params["how"]) == ("loan_id", "left outer")
    cases = {"Impute loans.csv using mean imputation.": ("impute", "strategy", "mean"),
             "Split loans.csv using an 80/20 split and train a knn.": ("split_data", "test_fraction", 0.2),
             "Aggregate loans.csv by city using a sum aggregation.": ("aggregate", "agg", "sum"),
             "Normalize loans.csv with min-max normalization.": ("normalize", "method", "minmax")}
    for text, (kind, param, value) in cases.items():
        p = _plan(text)
        assert len(of_kind(p, kind)) == 1 and of_kind(p, kind)[0].params[param] == value, text
    assert "columns" not in of_kind(_plan("Normalize loans.csv using z-score normalization."), "normalize")[0].params
    p = _plan("Normalize the income and debt columns of loans.csv with min-max, then plot debt.")
    assert of_kind(p, "normalize")[0].params["columns"] == ["income", "debt"]
    scaled = run_local(p.ir).results[of_kind(p, "normalize")[0].id].load(None).to_pydict()
    assert max(scaled["income"]) == 1.0 and max(v for v in scaled["debt"] if v is not None) == 1.0


def test_a_step_spelled_out_by_what_it_does_is_that_step(loans):
    from raystack.workflow.engine import run_local
    p = _plan("Clean loans.csv by imputing missing values with the median.")
    assert _kinds(p) == ["load_data", "impute"] and of_kind(p, "impute")[0].params["strategy"] == "median"
    assert len(run_local(p.ir).results[of_kind(p, "impute")[0].id].load(None).to_pydict()["loan_id"]) == 40
    p = _plan("Train a model on loans.csv by fitting a knn with k=3.")
    assert [(s.params.get("model"), s.params.get("k")) for s in of_kind(p, "train_model")] == [("knn", 3)]
    assert _kinds(_plan("Deduplicate loans.csv to remove duplicate rows.")) == ["load_data", "dedup"]
    with pytest.raises(PlanRefused, match="computing"):     # "by computing": how, never a group key
        _plan("Aggregate loans.csv by computing the total income per city.")


def test_a_score_condition_on_a_named_metric(loans):
    p = _plan("After training a logistic model on loans.csv, evaluate it; if it scores above 0.75 on f1 save the model "
              "to models/loans.json.")
    cond = of_kind(p, "export_model")[0].when[0]
    assert (cond.ref.key, cond.op, cond.value) == ("f1", ">", 0.75)
    assert cond.ref.step == of_kind(p, "evaluate_model")[0].id


def test_questions_a_step_answers(loans):
    from raystack.workflow.engine import run_local
    p = _plan("What's the average income by city in loans.csv?")
    assert _kinds(p) == ["load_data", "aggregate"] and of_kind(p, "aggregate")[0].params["agg"] == "mean"
    assert _kinds(_plan("What are the summary statistics of loans.csv?")) == ["load_data", "stats"]
    p = _plan("How accurate is a knn with k=3 on loans.csv with a 30% holdout?")
    assert _kinds(p) == ["load_data", "split_data", "train_model", "evaluate_model"]
    assert of_kind(p, "evaluate_model")[0].params["metric"] == "accuracy" and of_kind(p, "train_model")[0].params["k"] == 3
    assert run_local(p.ir).results[of_kind(p, "evaluate_model")[0].id].load(None)["metric"] == "accuracy"
    # a question about rows no step computes is still refused
    with pytest.raises(PlanRefused):
        _plan("Which rows of loans.csv have missing values?")


def test_generating_k_without_equals_and_a_name_ending_in_tuned(loans):
    p = _plan("Start by generating 1000 synthetic rows with 5 features. Normalize them. Then split 80/20 and train a "
              "knn with k 9.")
    assert _kinds(p) == ["make_dataset", "normalize", "split_data", "train_model"]
    assert of_kind(p, "train_model")[0].params["k"] == 9
    p = _plan("Tune a logistic model on loans.csv: lr from 0.001 to 0.3, 6 trials, optimize f1. Then retrain with the "
              "best lr and deploy it as loans-tuned.")
    assert of_kind(p, "deploy_model")[0].params["name"] == "loans-tuned"
    assert sum(1 for s in of_kind(p, "train_model") if s.tune is not None) == 1


def test_a_report_of_each_result_is_one_file_per_result(loans):
    import json

    from raystack.workflow.engine import run_local
    p = _plan("Train a logistic model with lr 0.05 and a knn with k 9 on loans.csv. Report the AUC of each.")
    reports = of_kind(p, "save_report")
    assert [r.params["result"].step for r in reports] == [s.id for s in of_kind(p, "train_model")]
    results = run_local(p.ir).results
    written = [results[r.id].load(None).path for r in reports]
    # each report in its own step's folder of the run (both went to ./report.json, the second
    # replacing the first, in the directory the planner was run from)
    assert len(set(written)) == 2 and not (loans / "report.json").exists()
    kinds = sorted(json.loads(open(w).read())["kind"] for w in written)
    assert kinds == ["knn", "logistic"]
    p = _plan("Train a logistic model and a knn on loans.csv and deploy each.")
    assert [s.params["name"] for s in of_kind(p, "deploy_model")] == ["model-1", "model-2"]


def test_row_wise_combining_group_by_a_named_file_and_the_join_key_said_as_a_key(loans):
    from raystack.workflow.engine import run_local
    (loans / "more.csv").write_text((loans / "loans.csv").read_text())
    p = _plan("Combine loans.csv and more.csv row-wise and report the row count.")
    assert _kinds(p) == ["load_data", "load_data", "concat", "stats"]
    assert run_local(p.ir).results[of_kind(p, "stats")[0].id].load(None)["rows"] == 80
    p = _plan("Group loans.csv by city and compute the average income, then draw a bar chart.")
    assert _kinds(p) == ["load_data", "aggregate", "plot"]
    assert (of_kind(p, "aggregate")[0].params["by"], of_kind(p, "aggregate")[0].params["agg"]) == ("city", "mean")
    p = _plan("Merge more.csv into loans.csv using loan_id as the key and write out joined.csv.")
    assert of_kind(p, "join")[0].params["on"] == "loan_id" and of_kind(p, "write_table")[0].params["path"] == "joined.csv"


def test_a_ratio_with_a_dash_or_colon_and_eval_as_a_list_item(loans):
    for text, share in (("Split loans.csv 80-20 and train a logistic model.", 0.2),
                        ("Split loans.csv 70:30 and train a knn.", 0.3)):
        assert of_kind(_plan(text), "split_data")[0].params["test_fraction"] == share, text
    p = _plan("load loans.csv; normalize; knn k=3; eval f1; deploy as loans-knn")
    assert _kinds(p) == ["load_data", "normalize", "train_model", "evaluate_model", "deploy_model"]
    assert of_kind(p, "evaluate_model")[0].params["metric"] == "f1"
    p = _plan("Steps:\n- read loans.csv\n- hold out 20%\n- train a logistic regression\n- report precision")
    assert _kinds(p) == ["load_data", "split_data", "train_model", "save_report"]


def test_more_part_wording(loans):
    (loans / "chat.jsonl").write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    (loans / "corpus").mkdir()
    (loans / "corpus" / "a.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 20)
    (loans / "criteo").mkdir()
    ft = of_kind(_plan("Fine-tune two adapters (rank 4 and rank 8) on chat.jsonl over tiny-20m."), "mlora_finetune")[0]
    assert [a["r"] for a in ft.params["adapters"]] == [4, 8]
    p = _plan("Train an EDiT model on corpus/ with 4 ranks for 50 steps.")
    assert _kinds(p) == ["edit_pretrain"] and of_kind(p, "edit_pretrain")[0].params["ranks"] == 4
    p = _plan("Train a DLRM on criteo/ with 2 to 6 workers.")
    assert of_kind(p, "elastic_dlrm")[0].params["resources"] == {"initial_workers": 2, "max_workers": 6}
    p = _plan("Fine-tune LoRA adapters on chat.jsonl over tiny-1m with mLoRA and serve them under the name support-bot.")
    assert of_kind(p, "serve_adapters")[0].params["name"] == "support-bot"


def test_narrated_steps_and_check_a_metric(loans):
    p = _plan("We load loans.csv, we drop duplicates, then we train a knn with k=5 and we report its accuracy.")
    assert _kinds(p) == ["load_data", "dedup", "train_model", "save_report"]
    p = _plan("Data: loans.csv. Use a knn with k=9 and check f1 on a 25% holdout.")
    assert _kinds(p) == ["load_data", "split_data", "train_model", "evaluate_model"]
    assert of_kind(p, "evaluate_model")[0].params["metric"] == "f1" and of_kind(p, "split_data")[0].params["test_fraction"] == 0.25


def test_terse_pipelines(loans):
    from raystack.workflow.engine import run_local
    p = _plan("loans.csv | dedup | split 80/20 | logistic lr=0.05 epochs=40 | eval auc | export models/loans.json")
    assert _kinds(p) == ["load_data", "dedup", "split_data", "train_model", "evaluate_model", "export_model"]
    train = of_kind(p, "train_model")[0].params
    assert (train["lr"], train["epochs"]) == (0.05, 40) and of_kind(p, "evaluate_model")[0].params["metric"] == "auc"
    p = _plan("loans.csv => groupby city sum => out/agg.parquet")
    assert (of_kind(p, "aggregate")[0].params["by"], of_kind(p, "aggregate")[0].params["agg"]) == ("city", "sum")
    rows = run_local(p.ir).results[of_kind(p, "aggregate")[0].id].load(None).to_pydict()
    assert sorted(rows["city"]) == ["a", "b"]
    p = _plan("loans.csv -> clean -> linear -> rmse -> deploy loans-lin if rmse < 5")
    assert of_kind(p, "deploy_model")[0].params["name"] == "loans-lin"
    assert of_kind(_plan("Train a logistic model for 40 epochs on loans.csv."), "train_model")[0].params["epochs"] == 40
