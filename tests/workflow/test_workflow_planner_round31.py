"""Round 31 of the rule planner: the development sets' refusals nearest to a plan, worked through
by class (a search said twice, its space said before "tuned", values corrected as they are said,
an "otherwise" said as a verb, a success handler in everyday words, zero for a gap with its
reason), each case written here in varied wording, with guards for what must stay refused."""
from __future__ import annotations

import pytest

from planner_util import drafts, kinds, of_kind
from planner_util import plan as _plan
from raystack.workflow.nl.plan import PlanRefused


def _tune(p):
    (step,) = drafts(p, "train_model")
    assert step.tune is not None
    return step.tune


# -- a search said twice: named with its model, its settings in a later sentence -------------------
@pytest.mark.parametrize("text", [
    "Could you tune a linear model that predicts sleep_score from nights.parquet? Sweep lr over 0.005 and 0.05 and "
    "epochs over 10 and 30, 4 trials, ASHA, minimise RMSE.",
    "Tune a linear model for sleep_score on nights.parquet. The sweep: lr in 0.005, 0.05; epochs 10 or 30; 4 trials; "
    "asha; lowest rmse.",
    "I want a tuned linear model for sleep_score from nights.parquet. Search lr over 0.005 and 0.05 and epochs over 10 "
    "and 30 with 4 trials under ASHA, minimising RMSE.",
])
def test_a_search_named_first_reads_its_settings_said_later(text):
    p = _plan(text)
    spec = _tune(p)
    assert spec.space == {"lr": [0.005, 0.05], "epochs": [10, 30]}
    assert (spec.metric, spec.mode, spec.trials, spec.scheduler) == ("rmse", "min", 4, "asha")
    assert drafts(p, "train_model")[0].params["target"] == "sleep_score"


def test_steps_said_before_the_sweep_run_before_it():
    p = _plan("Could you tune a linear model that predicts sleep_score from nights.parquet? Before the sweep: "
              "dedupe, median-fill the gaps, 20% holdout. Sweep lr over 0.005 and 0.05, 4 trials, minimise RMSE. "
              "Export the best to ./models/sleep.")
    assert kinds(p) == ["load_data", "dedup", "impute", "split_data", "train_model", "export_model"]
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.2


def test_a_tuned_model_asked_for_is_a_search():
    """"a tuned knn": a search (refused when it names no space), never an untuned training."""
    p = _plan("I want a tuned knn for churned from x.csv, k in 3, 5, 7")
    assert _tune(p).space == {"k": [3, 5, 7]}
    with pytest.raises(PlanRefused, match="does not say which parameter"):
        _plan("I want a tuned linear model for sleep_score from nights.parquet.")


def test_a_search_with_a_space_of_its_own_is_not_merged_with_a_later_one():
    """Two searches, each with its own space, stay two searches (or a refusal), never one."""
    try:
        p = _plan("Tune a knn for y on x.csv over k in 3, 5 and 7. Then tune a logistic model for y over lr in "
                  "0.01 and 0.1.")
    except PlanRefused:
        return
    tuned = [d for d in drafts(p, "train_model") if d.tune is not None]
    assert len(tuned) == 2


def test_a_search_named_again_by_its_noun_keeps_the_words_around_it():
    p = _plan("Tune a knn for y on x.csv over k in 3, 5 and 7. Then export the search winner to ./models/w")
    assert of_kind(p, "export_model")[0].params["path"] == "./models/w"


@pytest.mark.parametrize("text", [
    "tune a knn for y on x.csv over k in 3, 5 and 7; retry the search twice",
    "tune a knn for y on x.csv over k in 3, 5 and 7; the search may be retried twice",
    "tune a knn for y on x.csv over k in 3, 5 and 7, with 2 retries on the search",
    "load x.csv, tune a knn for y over k in 3, 5 and 7, allow two retries on the search because the cluster is "
    "spotty",
])
def test_retries_of_the_search_are_the_tuned_steps(text):
    p = _plan(text)
    (train,) = of_kind(p, "train_model")
    assert train.retries == 2
    assert _tune(p).space == {"k": [3, 5, 7]}


# -- a space said before "tuned" -----------------------------------------------------------------
@pytest.mark.parametrize("text, space", [
    ("Load d.csv and fit a linear model for y with lr 0.01 / 0.1 tuned over 6 trials", {"lr": [0.01, 0.1]}),
    ("Load d.csv; a knn for y, with k in 3, 5 and 7 tuned, 6 trials, best accuracy", {"k": [3, 5, 7]}),
    ("Load d.csv. Fit a linear model for y whose learning rate (0.0001, 0.001 or 0.01) and epochs (20 or 50) "
     "are tuned: six trials, ASHA, smallest RMSE wins.", {"lr": [0.0001, 0.001, 0.01], "epochs": [20, 50]}),
])
def test_a_space_said_before_tuned_is_the_models_search(text, space):
    p = _plan(text)
    assert _tune(p).space == space
    assert _tune(p).trials == 6


# -- "fine tune" in two words; search, sweep as a product's name -----------------------------------
@pytest.mark.parametrize("text", [
    "take the checkpoint in ./ckpt/base, fine tune mLoRA adapters a1 and a2 from it, then evaluate them",
    "fine tuning of adapters a1 and a2 with mLoRA on ./ckpt/base",
])
def test_fine_tune_in_two_words_is_the_fine_tune(text):
    p = _plan(text)
    assert "mlora_finetune" in kinds(p)
    assert "train_model" not in kinds(p)


def test_a_search_tool_is_what_the_model_is_for_not_a_search():
    p = _plan("For a safety-data-sheet search tool: pretrain tiny-20m using EDiT, 250 steps per chunk, repeating "
              "for as long as validation loss stays above 3.4, for 12 chunks at most and with 4 workers as the upper "
              "limit.")
    (step,) = drafts(p, "edit_pretrain")
    assert step.tune is None
    assert step.loop is not None and (step.loop.metric, step.loop.op, step.loop.value) == ("val_loss", "<=", 3.4)
    assert step.loop.max_iterations == 12
    assert step.bound == {"param": "workers", "op": "<=", "value": 4}


# -- bounds: "as the upper limit", "under 16 GB", gigs ---------------------------------------------
@pytest.mark.parametrize("text, bound", [
    ("run elastic DLRM on clicks.parquet, 8 workers being the maximum", {"param": "workers", "op": "<=", "value": 8}),
    ("load x.csv and train a knn for y with 16 GB as the cap", {"param": "memory_gb", "op": "<=", "value": 16}),
    ("load x.csv and train a knn for y under 16 GB of memory", {"param": "memory_gb", "op": "<=", "value": 16}),
    ("load x.csv and train a knn for y with at most 16 gigs of memory", {"param": "memory_gb", "op": "<=", "value": 16}),
])
def test_a_cap_said_after_its_count_is_a_bound(text, bound):
    p = _plan(text)
    (step,) = [d for d in p.draft.steps if d.bound is not None]
    assert step.bound == bound


# -- values corrected as they are said -----------------------------------------------------------
@pytest.mark.parametrize("text, k", [
    ("load x.csv, train a knn for y with k of five, no actually three, evaluate", 3),
    ("load x.csv, train a knn for y with k of five, no sorry, three", 3),
    ("load x.csv, train a knn for y with k = 9, oops, no, 7", 7),
])
def test_a_value_corrected_as_it_is_said_is_the_correction(text, k):
    assert of_kind(_plan(text), "train_model")[0].params["k"] == k


def test_a_list_corrected_as_it_is_said_is_the_correction():
    p = _plan("load x.csv, tune a knn for y with k in 3, 5 or 7, no, sorry, 3, 5 or 9, 6 trials")
    assert _tune(p).space == {"k": [3, 5, 9]}
    p = _plan("load x.csv, tune a knn for y, k of three, five, seven or nine, sorry, not nine, eleven, eight trials")
    assert _tune(p).space == {"k": [3, 5, 7, 11]}


def test_a_share_a_bound_and_a_path_corrected_as_they_are_said():
    p = _plan("load x.csv, keep twenty percent, no sorry, a quarter of it for testing and train a knn for y")
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.25
    p = _plan("load x.csv and train a knn for y under sixteen gigs of memory, no wait, make that twenty-four gigs")
    assert drafts(p, "train_model")[0].bound == {"param": "memory_gb", "op": "<=", "value": 24}
    p = _plan("load x.csv, sum sales per region and write that to out/a.csv, no sorry, out/b.csv")
    assert of_kind(p, "write_table")[0].params["path"] == "out/b.csv"


@pytest.mark.parametrize("text", [
    "load x.csv, train a knn for y with 5 neighbours, no scaling",
    "load x.csv, no wait, one after another is fine: train a knn for y",
])
def test_no_before_words_that_are_no_value_is_no_correction(text):
    with pytest.raises(PlanRefused):
        _plan(text)


# -- the other side of a condition, said as a verb -------------------------------------------------
@pytest.mark.parametrize("text, other", [
    ("load x.csv, train a logistic regression for y, evaluate. If the F1 is 0.7 or more, deploy it as m1. If it falls "
     "below that figure, please send the message 'not ready' instead.", "notify"),
    ("load x.csv, train a logistic regression for y, evaluate; if the AUC comes in at 0.7 or above, export it to ./m, "
     "and if it's below that, send 'under target'.", "notify"),
    ("load x.csv, train a logistic regression for y, evaluate, and deploy as m1 when F1 is at least 0.7, and if it "
     "misses that, put together a report.", "save_report"),
    ("load x.csv, train a logistic regression for y, evaluate; if the AUC is over 0.8 deploy it as m1, and if it "
     "can't, just send me 'below'", "notify"),
])
def test_the_other_side_of_a_condition_said_as_a_verb_is_its_else(text, other):
    p = _plan(text)
    (guarded,) = [d for d in p.draft.steps if d.when is not None and not d.otherwise]
    (alt,) = [d for d in p.draft.steps if d.otherwise]
    assert alt.entry == other and alt.when == guarded.when


# -- a success handler in everyday words; the join after a parallel pair ---------------------------
@pytest.mark.parametrize("text", [
    "load x.csv, train a knn for y, export it to ./m, and when the job has run cleanly from start to finish, "
    "send 'ready'.",
    "load x.csv, train a knn for y, export it to ./m. When all of the above has completed successfully, send 'ready'.",
    "load x.csv, train a knn for y, export it to ./m, and when it's all done and went fine, post 'ready'",
    "load x.csv, train a knn for y, export it to ./m, and post 'ready' when it has all gone through ok",
])
def test_a_message_after_a_clean_run_is_a_success_handler(text):
    p = _plan(text)
    (note,) = drafts(p, "notify")
    assert note.exit == "success"


def test_a_job_that_has_run_is_no_success_handler():
    """"when the job has run" says nothing of how it ended: no success handler."""
    try:
        p = _plan("load x.csv, train a knn for y, export it to ./m, and when the job has run, send 'ran'.")
    except PlanRefused:
        return
    assert all(d.exit != "success" for d in drafts(p, "notify"))


def test_two_things_side_by_side_then_a_message_when_both_have_finished():
    p = _plan("load x.csv, sum sales per region. Then do two things side by side, save the totals as out/a.csv and "
              "make a graph, and when both of those have finished send 'ready'.")
    assert kinds(p) == ["load_data", "aggregate", "write_table", "plot", "notify"]
    (write,), (chart,), (note,) = of_kind(p, "write_table"), of_kind(p, "plot"), of_kind(p, "notify")
    assert write.id not in chart.after and chart.id not in write.after
    assert {write.id, chart.id} <= set(note.after)


# -- zero for a gap, with why ------------------------------------------------------------------------
@pytest.mark.parametrize("text, column", [
    ("load x.csv. A missing salt_t means nothing was spread, so make it 0. Average salt_t per district", "salt_t"),
    ("load x.csv. A blank days_late means the delivery was on time, so set those cells to 0. Average days_late per "
     "region", "days_late"),
    ("load x.csv. A blank minutes_late counts as 0. Average minutes_late per depot", "minutes_late"),
])
def test_a_gap_that_means_zero_is_filled_with_zero(text, column):
    (imp,) = drafts(_plan(text), "impute")
    assert imp.params == {"columns": [column], "strategy": "zero"}


def test_a_gap_that_means_something_else_is_not_filled_with_its_mean():
    """'means' is the verb here: never the mean strategy."""
    try:
        p = _plan("load x.csv. A missing salt_t means nothing was spread, so make it the median. Average salt_t per "
                  "district")
    except PlanRefused:
        return
    assert of_kind(p, "impute")[0].params.get("strategy") != "mean"


def test_because_the_cluster_is_a_reason_not_a_clustering():
    p = _plan("load x.csv, train a knn for y with 2 retries because the cluster's spotty")
    assert of_kind(p, "train_model")[0].retries == 2
    with pytest.raises(PlanRefused, match="cluster"):
        _plan("load x.csv and cluster the rows")


# -- files listed, then loaded "all four", "the three files", "every one of those" -----------------
@pytest.mark.parametrize("text, n", [
    ("Each city exports its own swap log: a.csv, b.csv, c.csv and d.csv. Load all four (they sit on a flaky SFTP "
     "mirror, so let each load retry twice), build one report over the four cities, then notify 'done'.", 4),
    ("Each region sends its own export: n.csv, s.csv and w.csv. Load the three files (the file share drops "
     "connections, so 3 retries per read), build one combined report", 3),
    ("field_day_north.csv, field_day_south.csv and field_day_east.csv. Read all three (the club's Wi-Fi drops out, "
     "so each read gets two retries) and produce one report covering them.", 3),
])
def test_files_listed_then_loaded_all_together_feed_one_report(text, n):
    p = _plan(text)
    assert len(of_kind(p, "load_data")) == n
    (report,) = of_kind(p, "save_report")
    assert len(report.params["result"]) == n
    assert of_kind(p, "load_data")[0].retries >= 2


def test_a_file_listed_after_a_noun_export_is_loaded_too():
    """"its own export: n.csv, ...": the export is a noun, its file the first of those loaded (it
    was taken for where a write goes, and the first file was dropped, silently)."""
    p = _plan("Each region sends its own export: n.csv, s.csv and w.csv. Load the three files, then one report")
    assert [s.params["path"] for s in of_kind(p, "load_data")] == ["n.csv", "s.csv", "w.csv"]
    p = _plan("load x.csv, sum sales per region, write scores: out/s.csv")
    assert of_kind(p, "write_table")[0].params["path"] == "out/s.csv"


def test_a_file_no_step_reads_is_never_taken_for_the_scene():
    with pytest.raises(PlanRefused, match="n.csv"):
        _plan("Each region sends its own table: n.csv. Load s.csv and w.csv, then one report")


def test_a_report_for_each_file_stays_one_per_file():
    p = _plan("a.csv, b.csv and c.csv. Load each one (let each load retry twice) and write a report for each")
    assert len(of_kind(p, "save_report")) == 3


def test_a_combined_report_is_a_report_not_a_join():
    p = _plan("n.csv, s.csv and w.csv. Load the three files, then one combined report")
    assert "join" not in kinds(p) and kinds(p) == ["load_data", "save_report"]
    p = _plan("load a.csv and b.csv and combine them on id")
    assert "join" in kinds(p)



def test_retries_per_read_are_the_loads():
    """"3 retries per read": the loads' retries (they went to the report after the loads, silently)."""
    p = _plan("n.csv, s.csv and w.csv. Load each one with 3 retries per read, then a report")
    assert all(s.retries == 3 for s in of_kind(p, "load_data"))
    assert all(s.retries == 0 for s in of_kind(p, "save_report"))


@pytest.mark.parametrize("text", [
    "load x.csv, train a knn for y, deploy it as m1. Once the whole run has succeeded, send 'shipped'.",
    "load x.csv, train a knn for y, deploy it as m1, and once everything's succeeded send a message saying model live.",
    "load x.csv, train a knn for y, deploy it as m1. Send 'done' once the full run has succeeded.",
])
def test_a_message_once_the_run_has_succeeded_is_a_success_handler(text):
    (note,) = drafts(_plan(text), "notify")
    assert note.exit == "success"


# -- scratch cleared at the end, in everyday words ---------------------------------------------------
@pytest.mark.parametrize("text", [
    "load x.csv, train a knn for y. Clean scratch on exit, success or failure.",
    "load x.csv, train a knn for y, and no matter what, scratch gets emptied as the last thing",
    "load x.csv, train a knn for y, and scratch gets cleaned up at the end no matter what",
])
def test_scratch_cleared_whatever_happens_is_an_always_handler(text):
    p = _plan(text)
    (clean,) = drafts(p, "cleanup")
    assert clean.exit == "always"
    assert kinds(p)[:2] == ["load_data", "train_model"]


def test_clean_the_data_stays_a_cleaning():
    p = _plan("load x.csv, clean the data and train a knn for y")
    assert "clean_data" in kinds(p) and "cleanup" not in kinds(p)


def test_scratch_cleared_at_the_end_also_on_an_error_is_always():
    """"At the end the scratch must be cleaned, also if there is an error": whatever happens, not
    only on failure."""
    p = _plan("make 800 rows of synthetic data, train nearest centroid, evaluate. At the end the scratch must be "
              "cleaned, also if there is an error.")
    assert drafts(p, "cleanup")[0].exit == "always"
    p = _plan("load x.csv, train a knn for y. Clean up the scratch if there is an error.")
    assert drafts(p, "cleanup")[0].exit == "failure"


# -- a run per value, in spoken lists ------------------------------------------------------------------
@pytest.mark.parametrize("text, k", [
    ("load x.csv, split 80/20, then train k nearest neighbours three times, with k at three, seven and eleven, and "
     "pick whichever of those has the highest AUC", [3, 7, 11]),
    ("load x.csv, split 80/20, train knn with k at 3, 7 and 11, pick the best by AUC", [3, 7, 11]),
])
def test_k_at_a_list_is_a_run_per_k(text, k):
    (train,) = drafts(_plan(text), "train_model")
    assert train.map == ("k", k)


@pytest.mark.parametrize("text, epochs", [
    ("load x.csv, split 75/25, then three linear regressions for fleece_g, five epochs, fifteen epochs and thirty "
     "epochs, and whichever has the smallest RMSE gets exported to ./m", [5, 15, 30]),
    ("load x.csv, split 75/25, train a logistic model for y with 5 epochs or 10 epochs", [5, 10]),
])
def test_epochs_said_with_each_value_are_a_run_per_value(text, epochs):
    (train,) = drafts(_plan(text), "train_model")
    assert train.map == ("epochs", epochs)


# -- the question a model answers, then the column that holds the answer ------------------------------
@pytest.mark.parametrize("text, target", [
    ("We'd like to know which kids won't sign up again, which is the left_league column in registrations.csv. "
     "Remove duplicate rows, keep 25% for testing and train a logistic regression.", "left_league"),
    ("We'd like to know which loans pay off within a year, i.e. prepaid_12m in loan_tape.parquet. Dedupe the tape, "
     "keep a quarter for testing, fit a knn.", "prepaid_12m"),
    ("We want to predict which customers churn (the churned column) from c.csv. Split 80/20 and train a logistic "
     "model.", "churned"),
])
def test_a_question_then_the_column_answering_it_is_the_target(text, target):
    (train,) = drafts(_plan(text), "train_model")
    assert train.params["target"] == target


def test_a_training_naming_its_own_target_keeps_it():
    """Two different columns: the training's own, or a refusal, never the one said apart."""
    try:
        p = _plan("We want to predict which customers churn (the churned column) from c.csv. Split 80/20 and train a "
                  "logistic model for churned_90d.")
    except PlanRefused:
        return
    assert drafts(p, "train_model")[0].params["target"] == "churned_90d"


# -- a training that names no model, then its model after a dash or a colon --------------------------
@pytest.mark.parametrize("text, model", [
    ("Build me a model that predicts price from houses.csv — linear regression, 20% test.", "linear"),
    ("Train a model for y on x.csv: a knn with k=5.", "knn"),
    ("Train a model for y on x.csv with logistic regression", "logistic"),
])
def test_the_model_named_after_a_dash_is_the_trainings_own(text, model):
    """One training of that model (the kind's phrase was a second training, silently)."""
    (train,) = drafts(_plan(text), "train_model")
    assert train.params["model"] == model


# -- everyday requests, a battery of them ------------------------------------------------------------
def test_a_pipe_chain_writes_the_file_at_its_end():
    """"rentals.csv | dedup | mean by station | out/m.csv | bar chart": the file after a pipe, past a
    step, is where the chain writes (it was read as a second input, silently)."""
    p = _plan("data: rentals.csv | dedup | mean by station | out/station_means.csv | bar chart")
    assert kinds(p) == ["load_data", "dedup", "aggregate", "write_table", "plot"]
    assert of_kind(p, "write_table")[0].params["path"] == "out/station_means.csv"
    assert [s.params["path"] for s in of_kind(p, "load_data")] == ["rentals.csv"]


def test_dropping_rows_said_beside_a_load_is_never_a_description():
    """"After loading x.csv and dropping bad rows": a removal no step makes is refused (it was
    waved through as a description of the file, and no rows were dropped)."""
    with pytest.raises(PlanRefused, match="dropping"):
        _plan("After loading sensors.csv and dropping bad rows, compute the max temperature per sensor_id")


def test_if_the_load_of_a_file_fails_retry_it():
    p = _plan("If the load of inventory.csv fails, retry it twice, then compute stats.")
    assert kinds(p) == ["load_data", "stats"]
    assert of_kind(p, "load_data")[0].retries == 2 and of_kind(p, "load_data")[0].params["path"] == "inventory.csv"


def test_limit_it_to_one_gpu_is_a_bound():
    p = _plan("Take ./ckpt/base-lm and fine-tune two adapters, legal and medical, with mLoRA. Limit it to 1 GPU. "
              "Evaluate, then serve only if exact match >= 0.7; if not, write a report.")
    assert drafts(p, "mlora_finetune")[0].bound == {"param": "gpus", "op": "<=", "value": 1}


@pytest.mark.parametrize("said, metric, mode", [("the better accuracy", "accuracy", "max"),
                                                ("the lower rmse", "rmse", "min")])
def test_compare_two_models_and_export_whichever_is_better(said, metric, mode):
    p = _plan("Compare a logistic regression and a nearest centroid classifier on wine.csv for quality_high, 30% "
              f"test, and export whichever has {said} to ./models/wine.")
    (pick,) = of_kind(p, "select_best")
    assert (pick.params["metric"], pick.params["mode"]) == (metric, mode)
    assert len(of_kind(p, "train_model")) == 2


def test_save_the_checkpoint_in_a_folder_is_an_export():
    """"save the checkpoint in ./ckpt/run1" after a pretraining: where it is written, not a base to load."""
    p = _plan("Please pretrain tiny-20m using EDiT on 2 workers for 1000 steps and save the checkpoint in ./ckpt/run1.")
    assert kinds(p) == ["edit_pretrain", "export_model"]
    assert of_kind(p, "export_model")[0].params["path"] == "./ckpt/run1"
    p = _plan("fine-tune adapters a1 and a2 with mLoRA on the checkpoint in ./ckpt/base")
    assert "load_checkpoint" in kinds(p)


def test_records_with_null_values_shall_be_removed():
    p = _plan("The dataset shipments.parquet shall be loaded; records with null weight_kg shall be removed; the mean "
              "delivery_days per carrier shall be computed and stored in out/carrier_days.csv.")
    assert kinds(p) == ["load_data", "clean_data", "aggregate", "write_table"]
    assert drafts(p, "clean_data")[0].params == {"columns": ["weight_kg"]}


@pytest.mark.parametrize("text, share", [
    ("Fit kNN (k = 5) on digits.csv predicting digit, test on 30%, and send me 'digits done' when finished.", 0.3),
    ("train a logistic model for y on x.csv and test it on a quarter of the data", 0.25),
])
def test_test_on_a_share_is_the_split(text, share):
    assert of_kind(_plan(text), "split_data")[0].params["test_fraction"] == share


@pytest.mark.parametrize("kind, how", [("inner", "inner"), ("left", "left outer")])
def test_a_join_kind_said_after_its_key(kind, how):
    p = _plan(f"join users.csv with orders.csv on user_id, {kind}, then count orders by user_id")
    assert of_kind(p, "join")[0].params["how"] == how


def test_a_crash_then_retry_once_is_a_retry():
    p = _plan("Kick off EDiT pretraining of tiny-20m for 400 steps with 2 workers; if it crashes, retry once.")
    assert of_kind(p, "edit_pretrain")[0].retries == 1
    p = _plan("load x.csv, train a knn for y; if it dies, retry it twice")
    assert of_kind(p, "train_model")[0].retries == 2


def test_one_combined_report_on_the_regions_reads_every_file():
    p = _plan("Each region sends its own export: n.csv, s.csv and w.csv. Load the three files (the file share drops "
              "connections, so 3 retries per read), build one combined report on the regions, and message 'ready'.")
    (report,) = of_kind(p, "save_report")
    assert len(report.params["result"]) == 3


@pytest.mark.parametrize("text", [
    "Tune a knn for y on x.csv over k in 3, 5, 7 and compare it with the baseline.",
    "Tune a knn for y on x.csv over k in 3, 5, 7 and compare the results.",
])
def test_a_comparison_no_step_makes_stays_refused_beside_a_search(text):
    """"compare" is waved through only where a step selects among results, never beside a search."""
    with pytest.raises(PlanRefused, match="compare"):
        _plan(text)


# -- failure and success handlers, retries, in more everyday words -----------------------------------
@pytest.mark.parametrize("text", [
    "load x.csv, train a knn for y, and if it stops with an error, message me 'failed'.",
    "load x.csv, train a knn for y. If any stage of this pipeline fails, send 'failed'.",
    "load x.csv, train a knn for y, oh and if anything at all blows up along the way send 'failed'",
    "load x.csv, train a knn for y, send 'done', and if it falls over anywhere send 'failed' instead",
])
def test_a_message_if_the_run_fails_is_a_failure_handler(text):
    (note,) = [d for d in drafts(_plan(text), "notify") if d.params["message"] == "failed"]
    assert note.exit == "failure"


def test_retries_said_with_the_load_after_when():
    p = _plan("please allow three retries when reading generator_fuel.csv. After that, remove duplicated log lines, "
              "reserve 15% as a test portion, then fit a knn for y.")
    (load,) = of_kind(p, "load_data")
    assert load.retries == 3 and load.params["path"] == "generator_fuel.csv"
    assert all(s.retries == 0 for s in p.ir.steps if s is not load)


def test_only_if_everything_was_a_success_is_a_success_handler():
    p = _plan("load x.csv, sum y per z and write it to out/a.csv. At the end, only if everything was success, send "
              "message 'ready'.")
    assert drafts(p, "notify")[0].exit == "success"


@pytest.mark.parametrize("text", [
    "Load x.csv, and then a quarter of it goes to testing, and then train a knn for y",
    "Load x.csv; 25% goes to the test set; train a knn for y",
])
def test_a_share_that_goes_to_testing_is_the_split(text):
    assert of_kind(_plan(text), "split_data")[0].params["test_fraction"] == 0.25


def test_steps_said_as_settings_with_a_colon():
    p = _plan("steps:\n  - load: x.csv\n  - train: knn, target=y\n  - export: ./models/k")
    assert kinds(p) == ["load_data", "train_model", "export_model"]
    assert of_kind(p, "export_model")[0].params["path"] == "./models/k"
    p = _plan("load x.csv, sum y per z, save: out/a.csv")
    assert of_kind(p, "write_table")[0].params["path"] == "out/a.csv"


def test_adapters_that_are_served_if_they_pass():
    p = _plan("load ./ckpt/base and fine-tune adapters a1 and a2 with mLoRA. The adapters are then evaluated. They are "
              "served if their exact match exceeds 0.65; otherwise a report is written instead.")
    assert kinds(p) == ["load_checkpoint", "mlora_finetune", "evaluate_adapters", "serve_adapters", "save_report"]
    (serve,) = drafts(p, "serve_adapters")
    assert (serve.when.metric, serve.when.op, serve.when.value) == ("exact_match", ">", 0.65)


# -- the held-out part named again -------------------------------------------------------------------
@pytest.mark.parametrize("text, share", [
    ("Split customers.csv 90/10, train a logistic model for vip, and evaluate on the held-out 10%.", 0.1),
    ("Load customers.csv, hold out 25%, train a logistic model for vip, and evaluate on the held-out 25%.", 0.25),
])
def test_the_held_out_part_named_again_is_the_splits(text, share):
    """One split, the evaluation on its test part (a second split was read, and the request refused)."""
    p = _plan(text)
    (split,) = of_kind(p, "split_data")
    assert split.params["test_fraction"] == share
    assert kinds(p)[-2:] == ["train_model", "evaluate_model"]


def test_a_held_out_share_the_split_does_not_make_is_refused():
    with pytest.raises(PlanRefused, match="does not hold out that share"):
        _plan("Load customers.csv, split 80/20, train a logistic model for vip, and evaluate on the held-out 30%.")


def test_a_share_in_parentheses_after_the_models_is_the_split():
    p = _plan("Train knn, logistic and nearest centroid on heart.csv for disease (30% test) and deploy the most "
              "accurate one as heart-best.")
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.3
    assert len(of_kind(p, "train_model")) == 3


# -- dictated requests -----------------------------------------------------------------------------------
def test_files_said_aloud_are_paths():
    p = _plan("okay so um load the file returns dot csv, get rid of duplicate rows, and then work out the average "
              "refund_amount for each reason_code, and save that to out slash refunds dot csv")
    assert of_kind(p, "load_data")[0].params["path"] == "returns.csv"
    assert of_kind(p, "write_table")[0].params["path"] == "out/refunds.csv"
    p = _plan("load x.csv, train a knn for y and export it to dot slash models slash knn")
    assert of_kind(p, "export_model")[0].params["path"] == "./models/knn"


def test_a_slash_between_plain_words_is_no_path():
    from raystack.workflow.nl.dictation import spelled_paths
    assert spelled_paths("count the pass slash fail results") == "count the pass slash fail results"


def test_a_spoken_opener_before_the_request_asks_for_nothing():
    p = _plan("right, next one, take orders.parquet, keep thirty percent for testing, train a logistic regression to "
              "predict late_delivery, evaluate it, and if the F1 is at least point seven deploy it as late-flag")
    assert kinds(p) == ["load_data", "split_data", "train_model", "evaluate_model", "deploy_model"]


def test_a_group_key_said_in_two_words_is_refused():
    """"for each reason code": grouped by "reason", silently, before; the column is named by both words."""
    with pytest.raises(PlanRefused, match="reason code"):
        _plan("load returns.csv, compute the average refund amount for each reason code")


def test_min_max_said_aloud_and_a_ratio_corrected_after_actually_no():
    p = _plan("Load fleece_records.csv, drop the duplicates, min max scale age_years and weight_kg, just those two, and "
              "split it seventy thirty, actually no, seventy-five twenty-five, and then train a linear regression for "
              "fleece_g")
    assert drafts(p, "normalize")[0].params["method"] == "minmax"
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.25


@pytest.mark.parametrize("text", [
    "load x.csv, train a knn for y. Scratch cleanup at the end, even if the job blew up.",
    "load x.csv, train a knn for y, and if something breaks somewhere along the way, send 'failed'. Clean scratch "
    "at the end, even if the run crashed.",
])
def test_even_if_the_job_blew_up_is_always(text):
    assert drafts(_plan(text), "cleanup")[0].exit == "always"


def test_a_dlrm_run_per_epoch_count_said_one_at_a_time():
    p = _plan("elastic DLRM on c.parquet, do a run at one epoch, one at three, one at five, pick the best by AUC")
    (job,) = drafts(p, "elastic_dlrm")
    assert job.map == ("epochs", [1, 3, 5])
    assert "select_best" in kinds(p)


def test_restrict_it_to_the_final_rows_is_a_subset():
    p = _plan("Using g.parquet: restrict it to the final 8760 rows, compute stats")
    assert drafts(p, "sample")[0].params == {"which": "last", "rows": 8760}


def test_logistic_on_a_column_named_as_code_is_its_target():
    p = _plan("load kpis.csv, 70/30, logistic on at_risk, evaluate")
    assert drafts(p, "train_model")[0].params == {"model": "logistic", "target": "at_risk"}
    with pytest.raises(PlanRefused):      # a plain word after "on" could name the input ("regress y on x")
        _plan("load kpis.csv, 70/30, logistic on rejected, evaluate")


@pytest.mark.parametrize("text, first", [
    ("Train a knn for y on x.csv. Before that, drop duplicates and split 80/20.", ["dedup", "split_data"]),
    ("Load x.csv and plot price. Before that: remove duplicates.", ["dedup"]),
])
def test_steps_said_before_that_run_before_the_sentence_before(text, first):
    p = _plan(text)
    assert kinds(p)[1:1 + len(first)] == first
