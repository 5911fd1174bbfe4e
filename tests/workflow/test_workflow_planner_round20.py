"""Round 20 of the rule planner: development set 9's misses, worked through by class (wordings
varied here, not its prompts), and the silent drops they showed. Each case failed on the tree
before its change; the guards say what must stay refused or unchanged."""
import pytest

from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.rules import RulePlanner


def _plan(text: str):
    return RulePlanner().plan(text)


def kinds(plan) -> list[str]:
    return [s.fn.split(":")[-1] for s in plan.ir.steps]


def of_kind(plan, kind: str):
    return [s for s in plan.ir.steps if s.fn.endswith(":" + kind)]


# -- a bulleted list: a dash that opens a line is a bullet, never the end of a title ------------------
def test_a_bullet_after_a_line_is_no_lead_in_and_its_items_are_steps():
    """"- dupes out" over "- 80/20" was read as a title ("dupes out -") and both items were
    dropped without a word (an implicit split stood in for the 80/20)."""
    p = _plan("attendance.csv:\n- dupes out\n- 80/20\n- nearest centroid, target absent")
    assert kinds(p) == ["load_data", "dedup", "split_data", "train_model"]
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.2
    assert of_kind(p, "train_model")[0].params["target"] == "absent"
    p = _plan("x.csv:\n1. 70/30\n2. knn, target y")
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.3


def test_a_lead_in_stays_on_its_line():
    """"...25 percent\\n3) two concurrent branches off the sample:" was one title across the list's
    lines, and the sample went unplanned (silently)."""
    p = _plan("dry run:\n1) three thousand synthetic rows\n2) random sample, 25 percent\n"
              "3) two concurrent branches off the sample: stats, and a plot\n4) report when both finish")
    assert kinds(p) == ["make_dataset", "sample", "stats", "plot", "save_report"]
    assert of_kind(p, "sample")[0].params["fraction"] == 0.25


def test_verbless_removals_open_their_item():
    p = _plan("visits.csv: any row with an empty field goes; descriptive stats; report.")
    assert kinds(p) == ["load_data", "clean_data", "stats", "save_report"]
    p = _plan("Load x.csv, duplicates out, then compute stats")
    assert kinds(p) == ["load_data", "dedup", "stats"]
    p = _plan("plays.csv → unique rows only → median by game → report")
    assert kinds(p)[:2] == ["load_data", "dedup"]
    with pytest.raises(PlanRefused, match="keep"):      # "keep ... out" opens with its own verb
        _plan("Load tickets.csv, keep rows with missing values out, and count tickets per priority.")


# -- what a model predicts ----------------------------------------------------------------------------
def test_the_predicted_column_before_a_passive_verb_and_named_like_a_metric():
    p = _plan("quotes.csv is read, a 70/30 split is made, and a logistic model predicting won is trained.")
    assert of_kind(p, "train_model")[0].params["target"] == "won"
    p = _plan("sessions.csv. 75/25 split. kNN with k = 5, predicting score; evaluate.")
    assert of_kind(p, "train_model")[0].params["target"] == "score"
    p = _plan("Load x.csv, split it and fit a linear regression predicting rmse.")
    assert "target" not in of_kind(p, "train_model")[0].params     # a model's figure is never a column


def test_what_the_model_is_for_beside_a_training():
    """A sentence of what the model predicts, a question (no column) or a description of the
    target a training names, is the request's subject."""
    p = _plan("Tool hire shop, predicting which hires come back damaged. hires.csv: remove duplicates, keep 20% "
              "for the test split, then tune logistic regression over lr 0.001, 0.01 or 0.1, six trials, maximise F1.")
    assert kinds(p) == ["load_data", "dedup", "split_data", "train_model"]
    p = _plan("Tailoring shop, trying to predict which jobs come back for a second fitting. From alterations.csv: "
              "split 75/25, then fit a kNN classifier with k = 5 and evaluate it.")
    assert kinds(p) == ["load_data", "split_data", "train_model", "evaluate_model"]
    with pytest.raises(PlanRefused):      # no training: what is predicted is asked for, no step does it
        _plan("Tool hire shop, predicting which hires come back damaged. Load hires.csv and compute stats.")
    with pytest.raises(PlanRefused, match="delete"):    # an operation inside it is asked for
        _plan("Shop, predicting which rows to delete. Load x.csv, split it and fit a logistic model with y as the "
              "target.")
    with pytest.raises(PlanRefused):      # a description that names no target of the plan
        _plan("Bakery, we'd like to predict loaves sold per day. Load sales.csv, split it and fit a linear model.")


# -- exit handlers ------------------------------------------------------------------------------------
@pytest.mark.parametrize("said, exit_", [
    ("If something in the run breaks, notify me: 'failed'.", "failure"),
    ("If any of it crashes, send 'failed'.", "failure"),
    ("Should any step error out, notify 'failed'.", "failure"),
    ("However the run finishes, notify me with 'over'.", "always"),
    ("Good result or bad, send 'over'.", "always"),
    ("Successful or not, send 'over'.", "always"),
    ("Whether it worked or not, send 'over'.", "always"),
    ("If the whole run goes fine, notify 'ok'.", "success"),
])
def test_exit_handlers_said_in_other_words(said, exit_):
    p = _plan(f"Load x.csv and compute stats. {said}")
    assert of_kind(p, "notify")[0].exit == exit_


def test_good_or_bad_inside_a_clause_names_classes_not_an_exit():
    with pytest.raises(PlanRefused, match="bad reviews"):
        _plan("Load reviews.csv, split it and train a logistic classifier for good or bad reviews with label as "
              "the target.")


# -- deploy and notify ---------------------------------------------------------------------------------
def test_put_live_deploys_and_post_sends():
    base = "Load x.csv, split it, train a logistic model with y as the target and evaluate it. "
    for said in ("If accuracy is 0.8 or above, put it live under the name m1.", "Accuracy >= 80%? push it live as m1."):
        p = _plan(base + said)
        assert of_kind(p, "deploy_model")[0].params["name"] == "m1" and of_kind(p, "deploy_model")[0].when
    with pytest.raises(PlanRefused):     # live predictions are inference, which no step does
        _plan(base + "Then make live predictions on new.csv.")
    p = _plan(base + "If F1 is above 0.65, post 'looks usable' to the team.")
    assert of_kind(p, "notify")[0].params["message"] == "looks usable"
    p = _plan(base + "post 'done'.")
    assert of_kind(p, "notify")[0].params["message"] == "done"


def test_a_compound_word_holding_clean_is_no_cleaning():
    """"(for the dry-cleaning counters)" planned a clean_data step nobody asked for."""
    p = _plan("Load tickets.csv, split it and train a logistic model with late as the target (for our dry-cleaning "
              "counters).")
    assert "clean_data" not in kinds(p)


# -- notes, arrows, files -------------------------------------------------------------------------------
def test_a_note_in_parentheses_that_ends_the_request():
    p = _plan("plays.csv → median by game → chart → report (board game cafe)")
    assert kinds(p) == ["load_data", "aggregate", "plot", "save_report"]
    with pytest.raises(PlanRefused):           # a note is no way to ask for something
        _plan("plays.csv → median by game → report (drop refunds)")


def test_what_follows_an_arrow_is_a_step_or_refused():
    """"x.csv → unique rows only → ..." went unplanned as a description of the data."""
    with pytest.raises(PlanRefused, match="frobnicated rows"):
        _plan("x.csv → frobnicated rows → stats")


def test_verbless_writes_after_an_arrow():
    p = _plan("s.jsonl → impute w/ means → 80/20 → logistic, target y → evaluate → scores to out/s.csv")
    assert of_kind(p, "write_table")[0].params["path"] == "out/s.csv"
    p = _plan("repairs.csv → number of repairs by repair_type; → out/counts.csv; notify 'ready'")
    assert kinds(p) == ["load_data", "aggregate", "write_table", "notify"]


def test_what_a_named_file_holds():
    p = _plan("plays.csv has one row per table session. Drop duplicate rows and compute the median length per game.")
    assert kinds(p) == ["load_data", "dedup", "aggregate"]
    p = _plan("bookings.csv holds each desk booking and members.csv the member details. Join bookings with members "
              "on member_id and count bookings per plan.")
    assert kinds(p)[:3] == ["load_data", "load_data", "join"]
    p = _plan("x.csv holds daily prices and plot them.")     # the second clause's step stays a step
    assert kinds(p) == ["load_data", "plot"]


def test_reports_said_as_gathering():
    p = _plan("Make 3,000 synthetic rows, compute stats, and once done pull a report together.")
    assert kinds(p) == ["make_dataset", "stats", "save_report"]


def test_concurrent_as_an_adjective():
    p = _plan("Take a 10% sample of x.csv, then two concurrent branches off the sample: stats, and a plot. "
              "Report when both finish.")
    assert all(s.group for s in of_kind(p, "stats") + of_kind(p, "plot"))


# -- conditions and cleaning subsets ------------------------------------------------------------------
def test_at_or_below_and_a_modified_metric_opening_its_clause():
    base = "Load x.csv, split it, train a linear regression with y as the target and evaluate it. "
    p = _plan(base + "RMSE at or below 1.5 → deploy it as m1; otherwise just produce a report.")
    deploy = of_kind(p, "deploy_model")[0]
    assert deploy.when[0].op == "<=" and deploy.when[0].value == 1.5 and of_kind(p, "save_report")
    p = _plan(base.replace("linear regression", "logistic model") + "Best accuracy over 85%? Export to ./m. "
              "Anything lower: notify 'low'.")
    assert of_kind(p, "export_model")[0].when[0].op == ">" and of_kind(p, "notify")[0].when[0].negate


def test_rows_missing_a_value_in_any_of_several_columns():
    for said in ("drop rows missing a value in court or start_hour", "remove any rows where court or start_hour is empty"):
        p = _plan(f"Load x.csv, {said}, then compute stats.")
        assert of_kind(p, "clean_data")[0].params["columns"] == ["court", "start_hour"]


def test_normalize_only_the_named_columns():
    p = _plan("Load x.csv, normalize only the age_months and hours_booked columns, then compute stats.")
    assert of_kind(p, "normalize")[0].params["columns"] == ["age_months", "hours_booked"]
    p = _plan("Normalize only the price column in houses.csv and plot it.")   # refused before: subset unread
    assert of_kind(p, "normalize")[0].params["columns"] == ["price"]


def test_a_publisher_is_no_deployment():
    """"Publisher here." planned a deploy_model step (publish\\w*)."""
    p = _plan("Publisher here. Load x.csv, split it and train a logistic model with y as the target.")
    assert "deploy_model" not in kinds(p)


def test_the_pick_said_as_a_clause_of_its_own():
    p = _plan("x.csv; 75/25 split; linear regression predicting kg with lr of 0.001, 0.01, 0.1 (one model each); "
              "lowest RMSE is kept and exported to ./models/kg.")
    assert kinds(p)[-2:] == ["select_best", "export_model"]
    p = _plan("EDiT pretraining, 200 steps each, for tiny-1m and tiny-20m -> lower val loss wins -> export to ./ckpt/best")
    assert "select_best" in kinds(p)
    # a search's ", best F1 wins" stays its metric (no pick after it)
    p = _plan("Load x.csv, split it, tune a knn over k = 3, 5 or 7 with 6 trials, best F1 wins; export it to ./m.")
    assert "select_best" not in kinds(p)


def test_a_note_after_a_base_model():
    p = _plan("EDiT pretraining, 200 steps each, for tiny-1m and tiny-20m (jewelry repair bot) -> lower val loss wins "
              "-> export to ./ckpt/best")
    assert "edit_pretrain" in kinds(p)


def test_terse_arrows_fill_gaps_and_name_a_target_before_a_parenthesis():
    p = _plan("lawn.csv; gaps → zeros; 75/25 split; kNN w/ seven neighbours, target minutes (memory limit 4GB); evaluate.")
    assert of_kind(p, "impute")[0].params["strategy"] == "zero"
    assert of_kind(p, "train_model")[0].params["target"] == "minutes"
