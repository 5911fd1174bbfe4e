"""Round 24 of the rule planner: development set 11's remaining misses and development sets 12 and
13 (public-sector memos and tickets; practitioners' terse requests), worked through by class with
wordings varied here, not their prompts. Each case failed on the tree before its change; the
guards say what must stay refused."""
import pytest

from planner_util import drafts as _draft
from planner_util import kinds, of_kind
from planner_util import plan as _plan
from raystack.workflow.nl.plan import PlanRefused

TRAINED = "Load a.csv, split it 80/20, train a linear regression with target y and evaluate it."


# -- silently wrong before ----------------------------------------------------------------------
@pytest.mark.parametrize("said, column", [
    ("fill the missing unit_price values with the median", "unit_price"),
    ("fill unit_price gaps with zeros", "unit_price"),
    ("median-impute unit_price only", "unit_price"),
    ("fill the missing unit_price and qty_sold values with the median", "unit_price,qty_sold"),
    ("median-impute unit_price, qty_sold and tax_rate only", "unit_price,qty_sold,tax_rate"),
])
def test_a_fill_keeps_the_column_named_beside_its_gaps(said, column):
    """"fill the missing inscription_letters values with that column's median" filled every
    column's gaps (the name was read as a word of the step)."""
    p = _plan(f"Load a.csv, {said}, then plot it.")
    assert of_kind(p, "impute")[0].params["columns"] == column.split(",")


def test_a_job_name_holding_as_is_kept_whole():
    """"elastic DLRM class-picks" named the job 's-picks' ("as" read inside the name)."""
    p = _plan("Run the elastic DLRM job glass-picks for 2 epochs, then evaluate it.")
    assert of_kind(p, "elastic_dlrm")[0].params["name"] == "glass-picks"


def test_a_tally_counts():
    """"tally by decision" summed each group (the aggregate's default)."""
    p = _plan("Load a.csv, tally the rows by decision and write it to out/t.csv.")
    assert of_kind(p, "aggregate")[0].params["agg"] == "count"


def test_a_bound_after_for_is_no_or():
    """"for 5 rounds at most" was read as "(f)or 5 rounds", leaving "at most" unread."""
    p = _plan("Load a.csv, split it 80/20, train a logistic model with target y, one epoch a round, keep going while "
              "accuracy < 0.9, for 4 rounds at most.")
    assert _draft(p, "train_model")[0].loop.max_iterations == 4


# -- conditions, exits and reasons ---------------------------------------------------------------
def test_the_other_side_of_a_condition_said_as_a_condition_is_its_else():
    p = _plan(f"{TRAINED} If the RMSE is below 3, deploy it as est; if it's 3 or above, send 'too rough'.")
    (note,) = _draft(p, "notify")
    assert note.otherwise and note.when is not None
    with pytest.raises(PlanRefused):       # not the other side: no else, and no metric named for it
        _plan(f"{TRAINED} If the RMSE is below 3, deploy it as est; if it's 5 or above, send 'too rough'.")


def test_stopping_for_any_reason_is_the_always_exit():
    p = _plan("Load a.csv and sum it by store. When it stops for any reason, clear away the scratch files.")
    assert _draft(p, "cleanup")[0].exit == "always"


def test_a_because_clause_after_a_step_is_a_reason():
    p = _plan("Load a.csv with up to 3 retries because the NAS at the depot is flaky, then plot it.")
    assert _draft(p, "load_data")[0].retries == 3
    with pytest.raises(PlanRefused):       # a reason that names an operation asks for it
        _plan("Load a.csv because we need to deduplicate the orders, then plot it.")


def test_a_sign_off_name_closes_an_email():
    p = _plan("Hi all, could you load a.csv and plot it? Thanks, Priya (garden centre)")
    assert kinds(p) == ["load_data", "plot"]
    with pytest.raises(PlanRefused):       # a name inside the request is no sign-off
        _plan("Load a.csv, Priya, and plot it.")


# -- what the data and the model are ------------------------------------------------------------
def test_a_row_note_after_a_file_describes_it():
    p = _plan("orders.csv (one row per order we've shipped) → sum the weight per depot → plot")
    assert kinds(p) == ["load_data", "aggregate", "plot"]
    with pytest.raises(PlanRefused):       # a restriction in the note is asked for
        _plan("orders.csv (one row per order, only the 2024 ones) → sum the weight per depot → plot")


def test_a_model_that_tells_is_what_the_training_is_for():
    p = _plan("We need a model that tells our fitters how many days a kitchen job will take. Load jobs.csv, split it "
              "80/20 and train a linear regression predicting days.")
    assert kinds(p) == ["load_data", "split_data", "train_model"]


def test_a_trade_before_a_step_noun_and_a_possessive_purpose():
    p = _plan("Garden centre recommender → elastic DLRM job plant-picks → evaluate")
    assert of_kind(p, "elastic_dlrm")[0].params["name"] == "plant-picks"
    p = _plan("For the garden centre's app we want plant suggestions. Train plant-picks, an elastic DLRM, for 2 epochs, "
              "then evaluate it.")
    assert of_kind(p, "elastic_dlrm")[0].params["name"] == "plant-picks"


def test_launching_runs_of_a_named_job():
    p = _plan("Launch two elastic DLRM runs of shoe-picks, at 2 and 4 epochs, then keep whichever has the best AUC.")
    assert _draft(p, "elastic_dlrm")[0].map == ("epochs", [2, 4])
    assert of_kind(p, "elastic_dlrm")[0].params["name"] == "shoe-picks"


# -- settings said in clauses of their own ------------------------------------------------------
def test_a_search_said_over_semicolons():
    p = _plan("a.csv → 80/20 → hyperparameter search over knn (target y): k ∈ {3, 5, 9}; 4 trials; asha; maximise f1")
    t = _draft(p, "train_model")[0].tune
    assert (t.trials, t.scheduler, t.metric, t.mode) == (4, "asha", "f1", "max")


def test_a_jobs_settings_said_over_semicolons():
    p = _plan("elastic DLRM shoe-picks; epochs 2 / 4 / 8 (one run per setting); best-AUC run → export to ./models/s")
    assert _draft(p, "elastic_dlrm")[0].map == ("epochs", [2, 4, 8])


def test_a_dash_between_letters_joins_a_word():
    p = _plan("Load a.csv, min–max scale the features, then plot it.")
    assert of_kind(p, "normalize")[0].params["method"] == "minmax"


def test_join_kinds_said_as_a_note_or_by_what_they_keep():
    p = _plan("a.csv + b.csv joined on id (full outer) → plot")
    assert of_kind(p, "join")[0].params["how"] == "full outer"
    p = _plan("Load a.csv and b.csv and join them on id, keeping every row from both files, then plot it.")
    assert of_kind(p, "join")[0].params["how"] == "full outer"
    with pytest.raises(PlanRefused):       # two kinds said
        _plan("Load a.csv and b.csv and left join them on id, keeping every row from both sides, then plot it.")


# -- practitioners' shorthand (development set 13) ------------------------------------------------
def test_names_in_backticks_are_names_and_commands_in_them_stay_refused():
    """Markdown's inline code around a column or a file was refused as a shell command."""
    p = _plan("Load `a.csv`, drop rows missing `unit_price`, sum it by `depot` and write it to `out/t.csv`.")
    assert of_kind(p, "clean_data")[0].params["columns"] == ["unit_price"]
    assert of_kind(p, "write_table")[0].params["path"] == "out/t.csv"
    for said in ("Load a.csv, then run `rm -rf /tmp/x`.", "Load a.csv and run `reboot` afterwards.",
                 "Load a.csv, then `ls` the folder."):
        with pytest.raises(PlanRefused) as e:
            _plan(said)
        assert e.value.kind == "destructive", said


def test_a_selection_said_top_metric_reads_the_metric():
    """"Take the top-F1 model" selected by the step's default metric."""
    p = _plan("Load a.csv, split it 80/20, fit one kNN classifier per k in 3, 5 and 9 with y as the target. "
              "Take the top-F1 model and deploy it as m.")
    assert of_kind(p, "select_best")[0].params["metric"] == "f1"


def test_who_asks_then_the_subject_as_a_title():
    p = _plan("Payments startup, weekly rollup. Load a.csv, sum the amount per merchant and plot it.")
    assert kinds(p) == ["load_data", "aggregate", "plot"]


@pytest.mark.parametrize("said, share", [("30% goes to test", 0.3), ("a quarter of the rows as test", 0.25)])
def test_a_test_share_said_as_an_item(said, share):
    p = _plan(f"Load a.csv, {said}, then train a knn with target y.")
    assert of_kind(p, "split_data")[0].params["test_fraction"] == share


def test_hpo_with_its_settings_in_any_order():
    p = _plan("a.csv → 80/20 → HPO: kNN, target y, k ∈ {3, 5}, 6 trials, scheduler asha, maximize f1")
    t = _draft(p, "train_model")[0].tune
    assert (t.trials, t.scheduler, t.metric) == (6, "asha", "f1")
    p = _plan("a.csv → 80/20 → hyperparameter search: kNN, target y, k ∈ {3, 5}, 4 trials, scheduler=fifo, max accuracy")
    assert _draft(p, "train_model")[0].tune.scheduler == "fifo"


def test_tail_and_head_rows():
    p = _plan("events.jsonl: tail 100k rows → dedup → plot")
    assert (of_kind(p, "sample")[0].params["rows"], of_kind(p, "sample")[0].params["which"]) == (100000, "last")
    p = _plan("events.jsonl → head 500 rows → plot")
    assert of_kind(p, "sample")[0].params["which"] == "first"


def test_config_style_settings_of_a_job():
    p = _plan("shoe-recs: elastic DLRM shoe-recs, epochs ∈ {1, 2, 4} (retries=1 each) → best by AUC → export ./models/s → "
              "notify 'done'")
    (job,) = _draft(p, "elastic_dlrm")
    assert job.map == ("epochs", [1, 2, 4]) and job.retries == 1
    assert of_kind(p, "export_model")[0].params["path"] == "./models/s"


def test_concat_as_an_item():
    p = _plan("a.csv + b.csv → concat, a first → dedupe → out/ab.parquet")
    assert kinds(p)[:4] == ["load_data", "load_data", "concat", "dedup"]


# -- memos and tickets (development set 12) -------------------------------------------------------
def test_files_listed_bare_with_slashes_are_all_loaded():
    """"a.csv / b.csv / c.csv → ..." loaded only the first file (a verb before them mapped them)."""
    p = _plan("forest.csv / heath.csv / dunes.csv → plot")
    assert _draft(p, "load_data")[0].map == ("path", ["forest.csv", "heath.csv", "dunes.csv"])
    p = _plan("forest.csv / heath.csv / dunes.csv — load each (3 retries apiece, patchy Wi-Fi) → report on all three "
              "events.")
    (load,) = _draft(p, "load_data")
    assert load.map[1] == ["forest.csv", "heath.csv", "dunes.csv"] and load.retries == 3
    assert kinds(p) == ["load_data", "save_report"]


@pytest.mark.parametrize("said, metric, op, value", [
    ("If it gets 0.95 accuracy or better, export it to ./m", "accuracy", ">=", 0.95),
    ("Then, provided it scores an AUC of at least 0.75, export it to ./m", "auc", ">=", 0.75),
    ("If the winning F1 reaches 0.7, export it to ./m", "f1", ">=", 0.7),
    ("AUC 0.75+ → export ./m", "auc", ">=", 0.75),
])
def test_conditions_said_with_the_metric_after_its_verb_or_a_plus(said, metric, op, value):
    p = _plan(f"{TRAINED} {said}; otherwise notify 'low'.")
    when = _draft(p, "export_model")[0].when
    assert (when.metric, when.op, when.value) == (metric, op, value)
    assert _draft(p, "notify")[0].otherwise


def test_a_job_named_between_commas_and_why_it_is_retried():
    p = _plan("Start an elastic DLRM, role-match, for three epochs (our nodes are preemptible, so allow it three retries), "
              "then evaluate it.")
    (job,) = _draft(p, "elastic_dlrm")
    assert (job.params["name"], job.retries) == ("role-match", 3)
    p = _plan("elastic DLRM role-match, 3 epochs, 3 retries (preemptible nodes), then evaluate it")
    assert _draft(p, "elastic_dlrm")[0].retries == 3


def test_to_suggest_is_what_a_recommender_is_for():
    p = _plan("Volunteering centre: we want to suggest roles that suit each new volunteer. Run the elastic DLRM job "
              "role-match for 2 epochs, then evaluate it.")
    assert kinds(p) == ["elastic_dlrm", "evaluate_dlrm"]


def test_a_remark_on_the_rows_just_read():
    p = _plan("Grab the first 500 rows of pairs.csv (those are the hand-checked ones), dedupe them and plot it.")
    assert kinds(p) == ["load_data", "sample", "dedup", "plot"]


def test_models_listed_with_slashes_are_one_comparison():
    """"one model each: logistic / kNN / nearest centroid" chained three trainings one after another."""
    p = _plan("a.csv → 70/30 split → one model each: logistic / kNN / nearest centroid, target y\n• best recall → export to ./m")
    assert _draft(p, "train_model")[0].map == ("model", ["logistic", "knn", "centroid"])
    assert of_kind(p, "select_best")[0].params["metric"] == "recall"


def test_ticket_shorthand_for_names_retries_fills_and_exits():
    p = _plan("hey, q: a.csv → 75/25 split → logistic regression (target = y) → evaluate. if F1 ≥ 0.7, deploy it "
              "(name: enrol-forecast). ta!")
    assert of_kind(p, "deploy_model")[0].params["name"] == "enrol-forecast"
    p = _plan("Steps: 1) load beds.csv 2) overflow_beds gaps = 0 3) sum nights by shelter 4) write /mnt/r/b.csv, retrying "
              "the write twice if needed (unreliable mount) 5) if every step succeeds: notify 'saved'")
    imp = of_kind(p, "impute")[0].params
    assert (imp["columns"], imp["strategy"]) == (["overflow_beds"], "zero")
    assert _draft(p, "write_table")[0].retries == 2 and _draft(p, "notify")[0].exit == "success"
    p = _plan("a.csv; min-max price_usd & qty_sold only; 80/20; kNN (label y), retries 2")
    assert of_kind(p, "normalize")[0].params["columns"] == ["price_usd", "qty_sold"]
    assert _draft(p, "train_model")[0].retries == 2
    p = _plan("a.csv → min-max normalise → 80/20 → kNN, target y")      # the verb after min-max is no column
    assert "columns" not in of_kind(p, "normalize")[0].params


def test_practitioner_settings_bounds_and_shorthand():
    p = _plan("1. a.csv → dedupe\n2. 75/25 split\n3. logistic, target=y → eval\n4. recall ≥ 0.7 → promote to prod as m")
    assert kinds(p) == ["load_data", "dedup", "split_data", "train_model", "evaluate_model", "deploy_model"]
    p = _plan("- EDiT pretrain, base tiny-1m, steps=500 per round\n- loop until val_loss ≤ 2.9, max_rounds=8\n- workers ≤ 6\n"
              "- export ckpt → ./ckpt/lm")
    (pre,) = _draft(p, "edit_pretrain")
    assert pre.loop.max_iterations == 8 and (pre.loop.op, pre.loop.value) == ("<=", 2.9)
    assert pre.bound == {"param": "workers", "op": "<=", "value": 6}
    p = _plan("EDiT-pretrain tiny-1m in 500-step rounds until the val loss reaches 2.9 or less, with a hard stop at 8 rounds.")
    loop = _draft(p, "edit_pretrain")[0].loop
    assert (loop.op, loop.value, loop.max_iterations) == ("<=", 2.9, 8)
    p = _plan("a.csv → 70/30 → centroid, target=y, mem ≤ 32GB → eval")
    assert _draft(p, "train_model")[0].bound == {"param": "memory_gb", "op": "<=", "value": 32}


def test_a_scores_item_in_a_parallel_list_is_written():
    """"simultaneously: scores into out/s.csv and a chart of F1" dropped the write (its file read as the chart's)."""
    p = _plan(f"{TRAINED} Then simultaneously: scores into out/s.csv and a chart of F1.")
    assert of_kind(p, "write_table")[0].params["path"] == "out/s.csv"
    assert kinds(p)[-2:] == ["write_table", "plot"]


def test_notes_exits_bounds_and_copies_said_in_a_memo():
    p = _plan("trays.csv → keep the last 10k rows (new scanners) → median minutes by week → line plot")
    assert of_kind(p, "sample")[0].params == {"data": of_kind(p, "sample")[0].params["data"], "rows": 10000, "which": "last"}
    p = _plan("survey.parquet → dedup → random sample of five thousand rows → stats (county council, roads team)")
    assert of_kind(p, "sample")[0].params["rows"] == 5000
    for said in ("Crash → notify 'x'.", "On a crash → notify 'x'."):
        p = _plan(f"Load a.csv, sum it by store. {said}")
        assert _draft(p, "notify")[0].exit == "failure", said
    p = _plan("Train the elastic DLRM job course-recs, 2 epochs a round, until AUC hits 0.8, with four rounds as the ceiling.")
    assert _draft(p, "elastic_dlrm")[0].loop.max_iterations == 4
    p = _plan("Load a.csv and b.csv, join them on id, then in parallel: summary stats, and a copy written to out/t.parquet.")
    assert of_kind(p, "write_table")[0].params["path"] == "out/t.parquet"
    with pytest.raises(PlanRefused):     # a note that restricts is asked for
        _plan("Load a.csv → keep the last 10k rows (all stores) → plot")
    with pytest.raises(PlanRefused):     # "(twice)" asks for a repeat, never a note (it was dropped, silently)
        _plan("Load a.csv and plot it (twice)")


@pytest.mark.parametrize("said", [
    "Load a.csv, hold out 20% for testing (stratified), then train a knn with target y.",
    "Load a.csv, split it 80/20, then train a knn (distance weighted) with target y.",
    "Load a.csv, sample 500 rows (stratified by region), then plot it.",
    "Load a.csv, split 80/20, train a logistic regression with target y, 3 retries (class weights).",
    "Load a.csv, sum it by store and plot it (log scale).",
    "We need a model that predicts y from the recent rows only. Load a.csv, split it 80/20 and train a knn with target y.",
    "I want a model that tells us which stores sell out, ignoring the old stores. Load a.csv, split it 80/20 and train a "
    "knn with target y.",
    "Load a.csv with up to 3 retries because the data is sorted by date, then plot it.",
])
def test_how_a_step_should_run_is_never_a_note_or_a_purpose(said):
    """Probing this round's notes, reasons and purposes: a word that says how a step should run, or a
    restriction, in the words they read is refused, never dropped."""
    with pytest.raises(PlanRefused):
        _plan(said)


def test_conditional_expressions_and_shares_written_as_comparisons():
    """"→ stats → missing > 1%? then ..." guarded the statistics (the step before the question);
    "AUC > 0.72 ? export ./m : notify 'low'" notified unconditionally (its else read as a step)."""
    p = _plan("a.csv → stats → missing > 1%? then cost_usd nulls := 0 → sum by service → out/s.csv")
    (imp,) = _draft(p, "impute")
    assert imp.when is not None and (imp.when.metric, imp.when.op, imp.when.value) == ("missing_fraction", ">", 0.01)
    assert _draft(p, "stats")[0].when is None and imp.params["columns"] == ["cost_usd"]
    p = _plan("gig-recs — elastic DLRM, epochs ∈ {1, 2} → best by AUC → AUC > 0.72 ? export ./models/g : notify 'low'")
    assert of_kind(p, "elastic_dlrm")[0].params["name"] == "gig-recs"
    assert _draft(p, "notify")[0].otherwise and _draft(p, "export_model")[0].when is not None
    p = _plan(f"{TRAINED} Recall below 0.6? Notify me: 'recall low'.")    # the message's colon is no else
    assert not _draft(p, "notify")[0].otherwise


def test_list_items_practitioners_write():
    p = _plan("- chargers.csv\n- kwh nulls → 0\n- sum kwh per site\n- write out/kwh.csv (2 retries)\n- plot")
    assert of_kind(p, "impute")[0].params["columns"] == ["kwh"]
    assert _draft(p, "write_table")[0].retries == 2 and of_kind(p, "write_table")[0].params["path"] == "out/kwh.csv"
    p = _plan("• otp.csv → sample 5% (random)\n• stats")
    assert of_kind(p, "sample")[0].params["fraction"] == 0.05
    p = _plan("Synthesize 5,000 rows, z-score them, 10% for test, fit logistic regression with target y and evaluate.")
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.1


@pytest.mark.parametrize("said", [
    "Load a.csv, sum the amount by region and plot it (cumulative).",
    "Load a.csv, sum the amount by region and plot it (descending).",
    "Load a.csv, dedupe it on email, then plot it.",
    "Load a.csv, dedup by customer_id, then plot it.",
    "Load a.csv, write it to out/a.parquet (snappy compression).",
    "Load a.csv, write it to out/a.csv (tab separated).",
    "Load a.csv, notify 'done' (urgent).",
    "Load a.csv, sample 100 rows (with replacement), then plot it.",
])
def test_qualifiers_no_step_takes_are_refused(said):
    """Probing after this round's notes: each of these planned before, its qualifier read as a note
    on the data ("(cumulative)", "(snappy compression)") or, for "dedupe it on email", as a
    notification; the step cannot honour them, so they are refused."""
    with pytest.raises(PlanRefused):
        _plan(said)


@pytest.mark.parametrize("said", [
    "Load a.csv, split 80/20, train a knn with target y and evaluate it. If the accuracy is above 0.9 on the weekend "
    "rows, deploy it as m.",
    "Load a.csv, sum the amount by region for the big regions, then plot it.",
    "Load a.csv, compute stats for the premium customers, then plot it.",
])
def test_some_of_the_rows_named_after_a_step_are_refused(said):
    """A third probe pass: "on the weekend rows" and "for the premium customers" were read as a
    description and a purpose (each planned on every row, silently); no step picks rows by what they are."""
    with pytest.raises(PlanRefused):
        _plan(said)


def test_purposes_after_a_dataset_or_a_title_still_plan():
    p = _plan("Make a synthetic dataset with 2,000 rows for the greenhouse sims; scale it; hold out a quarter; fit a "
              "linear model with target y.")
    assert kinds(p)[:2] == ["make_dataset", "normalize"]
