"""Round 23 of the rule planner: development set 11's misses, worked through by class (wordings
varied here, not its prompts), and late additions of round 22 (a conditional imputation on the
share of empty cells, a list of columns missing a value, "Base: A or B?"). Each case failed on the
tree before its change; the guards say what must stay refused."""
import pytest

from planner_util import drafts as _draft
from planner_util import kinds, of_kind
from planner_util import plan as _plan
from raystack.workflow.nl.plan import PlanRefused


# -- silently wrong before ----------------------------------------------------------------------
def test_a_tune_keeps_a_target_said_before_a_dash():
    """"kNN search, target rush — k in 3/7/11" tuned with no target ("target rush" was a title)."""
    p = _plan("orders.csv: 80/20; kNN search, target late — k in 3/7/11, 6 trials, asha, max accuracy.")
    assert of_kind(p, "train_model")[0].params["target"] == "late"


def test_an_item_between_dashes_is_a_step():
    """"shouts.csv – rows with gaps removed – 80/20 – logistic ..." dropped the 80/20 split."""
    p = _plan("calls.csv – rows with gaps removed – 75/25 – logistic, predicting urgent – evaluate – report")
    assert kinds(p) == ["load_data", "clean_data", "split_data", "train_model", "evaluate_model", "save_report"]
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.25


def test_a_file_after_write_and_a_colon_is_written_not_loaded():
    """"→ evaluate → write scores: out/s.csv" loaded out/s.csv as a new input and wrote that."""
    p = _plan("a.csv → 80/20 → knn (target y) → evaluate → write scores: out/scores.csv")
    assert kinds(p) == ["load_data", "split_data", "train_model", "evaluate_model", "write_table"]
    assert of_kind(p, "write_table")[0].params["path"] == "out/scores.csv"


def test_success_after_a_fully_successful_run_is_the_success_exit():
    p = _plan("Load a.csv and sum it by store. Send 'totals in' after a fully successful run.")
    assert of_kind(p, "notify")[0].exit == "success"


def test_a_trade_named_cleaning_is_no_cleaning_step():
    """"Gutter cleaning business: ..." planned a clean_data step from the title."""
    p = _plan("Window cleaning business: load rounds.csv, sum the minutes per street and plot it.")
    assert kinds(p) == ["load_data", "aggregate", "plot"]


def test_the_column_in_the_column_mean_is_no_column_name():
    """"fill the blanks with the mean for the column" imputed a column named 'the'."""
    for said in ("swap any blanks for the column mean", "fill the blanks with the mean for the column"):
        p = _plan(f"Load a.csv, {said}, then plot it.")
        assert "columns" not in of_kind(p, "impute")[0].params, said


def test_each_read_names_the_loads_a_retry_is_for():
    """"Read them all, retrying each read up to 3 times (...), put together one report" gave the
    retries to the report once the remark was read."""
    p = _plan("Results are in a.csv, b.csv and c.csv. Read them all, retrying each read up to 3 times (the club Wi-Fi is "
              "patchy), put together one report covering the three events.")
    assert _draft(p, "load_data")[0].retries == 3 and _draft(p, "save_report")[0].retries == 0


def test_a_join_kind_said_with_as_is_one_join():
    """"Join a.csv to b.csv on id as an inner join" planned two joins."""
    p = _plan("Load a.csv and b.csv, join a.csv to b.csv on id as an inner join, then plot it.")
    assert [s.params.get("how") for s in of_kind(p, "join")] == ["inner"]


# -- wordings of the steps and their settings --------------------------------------------------------
def test_targets_said_as_labels():
    p = _plan("jobs.csv → 75/25 → linear regression, label lead_weeks → evaluate")
    assert of_kind(p, "train_model")[0].params["target"] == "lead_weeks"
    p = _plan("Load a.csv, split it 80/20, then train a logistic regression whose label is all_weather.")
    assert of_kind(p, "train_model")[0].params["target"] == "all_weather"
    p = _plan("a.csv → 80/20 → linear regression (minutes is the target) → evaluate")
    assert of_kind(p, "train_model")[0].params["target"] == "minutes"


def test_loops_with_epochs_per_round_and_their_bounds():
    p = _plan("Load a.csv, split it 80/20, train a logistic model with target y, two epochs per round, until the val loss "
              "goes below 0.25 or 12 rounds have run.")
    (train,) = _draft(p, "train_model")
    assert train.params["epochs"] == 2 and train.loop.max_iterations == 12
    p = _plan("Train the elastic DLRM on data/criteo; repeat until AUC is above 0.75, at most 3 rounds, 2 epochs per round.")
    assert of_kind(p, "elastic_dlrm")[0].params["epochs"] == 2    # (round 17 refused any count but one)
    p = _plan("Pretrain tiny-20m with EDiT in 300-step chunks, stopping when the validation loss gets below 2.7 or after "
              "6 chunks.")
    assert _draft(p, "edit_pretrain")[0].loop.max_iterations == 6


def test_split_shares_said_otherwise():
    for said in ("keep 20% unseen for testing", "put 20% of the jobs to one side for testing",
                 "test on a 20% slice", "hold out 20% to test with"):
        p = _plan(f"Load a.csv, {said}, and train a knn with target y.")
        assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.2, said
    p = _plan("Load a.csv, set a quarter of the orders aside as the test set, and train a knn with target y.")
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.25


def test_cleaning_counting_and_stacking_words():
    p = _plan("We hire out marquees. Can you scrap the repeats in jobs.csv and count how many bookings each marquee got?")
    assert kinds(p) == ["load_data", "dedup", "aggregate"]
    agg = of_kind(p, "aggregate")[0].params
    assert (agg["by"], agg["agg"]) == ("marquee", "count")
    p = _plan("Load a.csv, count the rows per decision and plot it.")     # a column, not a decision tree
    assert of_kind(p, "aggregate")[0].params["by"] == "decision"
    with pytest.raises(PlanRefused):
        _plan("Load a.csv and train a decision tree with target y.")
    p = _plan("Dry run: two thousand made-up rows; 75/25; linear regression with target y.")
    assert of_kind(p, "make_dataset")[0].params["rows"] == 2000
    p = _plan("a.csv — blanks → 0, 70/30, logistic with target y")
    assert of_kind(p, "impute")[0].params["strategy"] == "zero"
    p = _plan("Load a.csv → min-max scale age and mobility_score only → plot")
    assert of_kind(p, "normalize")[0].params["columns"] == ["age", "mobility_score"]


def test_maps_over_batch_sizes():
    p = _plan("Load a.csv, split it 80/20 and train a linear regression predicting minutes, once for each batch size: "
              "8, 32 and 128.")
    assert _draft(p, "train_model")[0].map == ("batch_size", [8, 32, 128])


def test_choosing_the_best_said_otherwise():
    p = _plan("Run EDiT pretraining on tiny-1m and on tiny-20m for 100 steps and carry on with the one whose validation "
              "loss is lower.")
    assert of_kind(p, "select_best")[0].params["metric"] == "val_loss"
    p = _plan("EDiT 100 steps on tiny-1m and on tiny-20m → keep whichever base ends lower on val loss")
    assert of_kind(p, "select_best")[0].params["metric"] == "val_loss"
    p = _plan("Load a.csv, split it 80/20, fit both logistic regression and nearest centroid predicting y, and whichever "
              "of the two scores the better F1 should go live as risk-flag.")
    assert of_kind(p, "select_best")[0].params["metric"] == "f1"
    p = _plan("a.csv, 70/30, then logistic vs nearest-centroid, label y; higher F1 gets deployed under risk-flag.")
    assert kinds(p)[-2:] == ["select_best", "deploy_model"]


def test_conditions_said_of_what_came_just_before():
    p = _plan("Load a.csv, split it 80/20 and fit knn models with k = 3, 5 and 7 predicting y. Pick the lowest RMSE; if "
              "it's below 5, export it to ./m, and otherwise send 'too noisy'.")
    export = of_kind(p, "export_model")[0]
    assert export.when[0].op == "<" and export.when[0].value == 5 and export.when[0].ref.key == "rmse"
    p = _plan("Load a.csv, split it 80/20, train a knn with target y and evaluate it. If it's at least 80% accurate, "
              "deploy it as m; if it's less accurate than that, export it to ./d.")
    deploy = of_kind(p, "deploy_model")[0]
    assert deploy.when[0].ref.key == "accuracy" and deploy.when[0].op == ">=" and deploy.when[0].value == 0.8
    assert of_kind(p, "export_model")[0].when[0].negate
    p = _plan("Load a.csv and compute the stats. If they show that over 5% of the cells are blank, throw out the "
              "incomplete rows; if not, leave the table alone. Then sum it by store.")
    assert of_kind(p, "clean_data")[0].when[0].ref.key == "missing_fraction"
    assert len(of_kind(p, "clean_data")) == 1 and kinds(p) == ["load_data", "stats", "clean_data", "aggregate"]


def test_bounds_retries_and_exits_said_otherwise():
    p = _plan("Train the elastic DLRM toy-picks for 2 epochs, and don't let it grow beyond 6 workers.")
    assert of_kind(p, "elastic_dlrm")[0].params["resources"]["max_workers"] == 6
    p = _plan("Use mLoRA to fine-tune adapters a and b from ./ckpt/base, keeping it to 2 GPUs, and retry once if the job "
              "dies.")
    (ft,) = _draft(p, "mlora_finetune")
    assert ft.bound["param"] == "gpus" and ft.bound["value"] == 2 and ft.retries == 1
    p = _plan("Load a.csv, split it 80/20, train a knn with target y, keeping memory to 16 GB or less.")
    assert _draft(p, "train_model")[0].bound == {"param": "memory_gb", "op": "<=", "value": 16}
    for said, kind in (("In case the run errors out, send 'x'.", "failure"), ("Failure → notify 'x'.", "failure"),
                       ("Scratch files removed at the finish — also when it fails.", "always"),
                       ("At the end, succeeded or failed, scratch cleanup.", "always")):
        p = _plan(f"Load a.csv → sum by store. {said}")
        assert p.ir.steps[-1].exit == kind, said


def test_reasons_and_purposes():
    p = _plan("Load a.csv and b.csv and do a full outer join on id so nothing from either file is lost, then plot it.")
    assert of_kind(p, "join")[0].params["how"] == "full outer"
    p = _plan("Right-join a.csv with b.csv on id, so every costume shows up even if nobody ever hired it, then plot it.")
    assert kinds(p) == ["load_data", "load_data", "join", "plot"]
    p = _plan("We run student halls and want a help-desk bot. Fine-tune adapters rent-faq and laundry with mLoRA on "
              "./ckpt/base.")
    assert kinds(p) == ["load_checkpoint", "mlora_finetune"]
    p = _plan("Rugby club question: can we predict which players pick up an injury? Load a.csv, split it 70/30 and train "
              "a logistic regression predicting injured.")
    assert kinds(p) == ["load_data", "split_data", "train_model"]
    p = _plan("Load a.csv, split it 75/25, train a knn with target y, evaluate it and export it to ./d for later review.")
    assert kinds(p)[-1] == "export_model"


def test_late_additions():
    """A year the data goes back to in a context sentence, a remark after a file, a selection said
    without a verb as an item (it had been read as a description and dropped), "retried up to twice"."""
    p = _plan("Every launch since 2015 is logged in shouts.csv. Drop rows with missing fields and plot it.")
    assert kinds(p) == ["load_data", "clean_data", "plot"]
    p = _plan("Random 20% sample of jobs.csv (the full file's too big) → stats → report")
    assert kinds(p) == ["load_data", "sample", "stats", "save_report"]
    p = _plan("Train the elastic DLRM class-picks at 3, 6 and 9 epochs; highest-AUC run → export to ./m.")
    assert of_kind(p, "select_best")[0].params["metric"] == "auc"
    p = _plan("Load a.csv, split it 80/20 and train knn models with k = 3, 5 and 7 predicting y, each retried up to "
              "twice.")
    assert _draft(p, "train_model")[0].retries == 2
    with pytest.raises(PlanRefused):     # a year read as a count of tables had let "only the 2024 rows" pass
        _plan("Load a.csv (it's only the 2024 rows) and plot it.")


def test_a_target_said_in_parentheses_is_the_target():
    p = _plan("Load a.csv, split it 80/20 and train a knn (the target is y).")
    assert of_kind(p, "train_model")[0].params["target"] == "y"


def test_a_reason_that_holds_a_step_word_keeps_the_step():
    p = _plan("Load a.csv and b.csv and left join them on id, so all the rows get deduplicated.")
    assert "dedup" in kinds(p)


@pytest.mark.parametrize("text", [
    "Load a.csv and sum it by store. We want to spot which columns matter most.",
    # a remark in parentheses never sets or restricts: probes of the remark rule found both dropped
    "Load a.csv, split it 80/20 and train a knn with target y (the data is only from 2024).",
    "Load a.csv, split it 80/20 and fit a decision model with target y.",
    "Load a.csv and train a knn with target y, 0.5 epochs per round, until accuracy is over 0.9, at most 3 rounds.",
])
def test_what_stays_refused(text):
    with pytest.raises(PlanRefused):
        _plan(text)
