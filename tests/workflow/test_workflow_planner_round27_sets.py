"""Round 27 of the rule planner, its later passes: development set 18 (written this round, scored
fresh before any rule was made from it) and batteries of requests written here, several phrasings of
one construct each (the formal passive, outputs, a training's model and target, searches, joins).
Each case failed on the tree before the round, unless a guard says what must stay refused or
unchanged."""
import pytest

from planner_util import kinds, of_kind
from planner_util import plan as _plan
from raystack.workflow.nl.plan import PlanRefused


def _cond(step):
    (c,) = step.when
    return c.ref.key, c.op, c.value, c.negate


# -- set 18's first pass ---------------------------------------------------------------------------
@pytest.mark.parametrize("handler, exit", [("On success: 'model evaluated'", "success"), ("on failure: 'run failed'", "failure"),
                                           ("if anything fails: 'run failed'", "failure")])
def test_a_message_alone_after_a_handlers_colon(handler, exit):
    p = _plan(f"Clue LM\ntiny-20m, EDiT pretrain, 500 steps -> plot val_loss -> export to ./ckpt/clue-lm\n{handler}")
    (n,) = of_kind(p, "notify")
    assert n.exit == exit


def test_a_quoted_text_after_another_colon_is_no_message():
    with pytest.raises(PlanRefused):
        _plan("Load a.csv, split 20% off and train a logistic regression for y. Note: 'it is a test'.")


def test_tune_linear_for_a_target():
    p = _plan("f.parquet -> 70/30 -> tune linear for intake_kg: lr ∈ {0.0003, 0.003, 0.03}, 6 trials, ASHA, min RMSE")
    (s,) = [x for x in p.ir.steps if x.tune]
    assert (s.params["model"], s.params["target"]) == ("linear", "intake_kg")


@pytest.mark.parametrize("said", ["g.csv -> column stats -> mean-impute, but only if >5% of values missing -> 70/30 -> "
                                  "nearest-centroid, label germinated -> eval",
                                  "g.csv -> stats -> mean-impute only if more than 5% of values are missing -> 70/30 -> "
                                  "nearest-centroid, label germinated -> eval",
                                  "Load g.csv, compute stats, mean-impute, but only if more than 5% of values are missing, then "
                                  "split 70/30 and train a nearest centroid model for germinated.",
                                  "Load g.csv and compute stats; if more than 5% of values are missing, mean-impute it, and then "
                                  "split 70/30 and train a nearest centroid model for germinated."])
def test_a_share_of_gaps_guards_the_fill_only(said):
    """The condition guarded the split, the training and the evaluation after the fill instead of
    (or besides) the fill (silently wrong)."""
    p = _plan(said)
    assert _cond(of_kind(p, "impute")[0]) == ("missing_fraction", ">", 0.05, False)
    assert not of_kind(p, "split_data")[0].when and not of_kind(p, "train_model")[0].when


def test_the_base_whose_final_validation_loss_is_smaller():
    p = _plan("Pretrain both tiny-1m and tiny-20m with EDiT, 600 steps apiece, and keep the base whose final validation loss is "
              "smaller. On that base, train mLoRA adapters named gallery-tours and access-info.")
    (s,) = of_kind(p, "select_best")
    assert (s.params["metric"], s.params["mode"]) == ("val_loss", "min")


def test_a_formal_passive_pick_split_and_completion():
    p = _plan("The data in leaf_lots.csv is median-imputed and a 25% test share is reserved. Linear regression on moisture_pct "
              "is trained separately with 10, 20 and 40 epochs, and the run whose RMSE is smallest is selected. It is exported "
              "to ./models/leaf-moisture. The scratch directory is cleared on completion in every case.")
    assert kinds(p) == ["load_data", "impute", "split_data", "train_model", "select_best", "export_model", "cleanup"]
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.25
    assert of_kind(p, "select_best")[0].params["metric"] == "rmse"


# -- the formal passive ----------------------------------------------------------------------------
@pytest.mark.parametrize("said, kinds_", [
    ("loans.csv is loaded, duplicate loan records are removed and 25% of the loans are set apart for testing. A logistic "
     "regression for late is trained.", ["load_data", "dedup", "split_data", "train_model"]),
    ("The call survey records (calls.csv) contain duplicates, which are to be removed. A quarter is kept for testing and a "
     "logistic regression for late is trained.", ["load_data", "dedup", "split_data", "train_model"]),
    ("Frames with any missing value were discarded from traces.parquet and a quarter of the frames was reserved as a test "
     "set. A logistic regression for stim is then trained.", ["load_data", "clean_data", "split_data", "train_model"]),
    ("In calls.csv, gaps in no2 are to be replaced by that column's mean. Twenty per cent of the rows are withheld for "
     "testing and a linear regression for o3 is trained.", ["load_data", "impute", "split_data", "train_model"]),
])
def test_steps_in_the_formal_passive(said, kinds_):
    p = _plan(said)
    assert sorted(kinds(p)) == sorted(kinds_)
    assert kinds(p)[-2:] == ["split_data", "train_model"]


def test_a_gap_fill_in_a_named_column_in_the_passive():
    p = _plan("In calls.csv, gaps in no2 are to be replaced by that column's mean. Twenty per cent of the rows are withheld "
              "for testing and a linear regression for o3 is trained.")
    (s,) = of_kind(p, "impute")
    assert (s.params["columns"], s.params["strategy"]) == (["no2"], "mean")
    assert of_kind(p, "split_data")[0].params["test_fraction"] == 0.2


# -- outputs in other words ------------------------------------------------------------------------
FIT = "Load c.csv, split 20% off and train a logistic regression for churn"


@pytest.mark.parametrize("said, kind, param, value", [
    (", then save the model under ./models/churn.", "export_model", "path", "./models/churn"),
    (", then put the model behind an endpoint called churn-api.", "deploy_model", "name", "churn-api"),
    (", then stand it up as a service named churn-api.", "deploy_model", "name", "churn-api"),
    (", evaluate it, then shoot me a message saying churn done.", "notify", "message", "churn done"),
    (", evaluate it, and drop a note in the channel: 'churn done'.", "notify", "message", "churn done"),
])
def test_an_output_in_other_words(said, kind, param, value):
    p = _plan(f"{FIT}{said}")
    assert of_kind(p, kind)[0].params[param] == value


# -- a training's model and target in other places -------------------------------------------------
SPLIT = "Load c.csv and split 20% off"


@pytest.mark.parametrize("said", ["build a classifier predicting churn with logistic regression",
                                  "train a model for churn using a logistic regression",
                                  "fit a classifier on it for churn with logistic regression"])
def test_the_model_named_after_its_training(said):
    """"build a classifier predicting churn with logistic regression": two trainings (a default
    one and the logistic one), both in the plan (silently wrong)."""
    p = _plan(f"{SPLIT}, then {said}.")
    (s,) = of_kind(p, "train_model")
    assert (s.params["model"], s.params["target"]) == ("logistic", "churn")


def test_two_models_named_stay_two_trainings():
    p = _plan(f"{SPLIT}, then train a knn for churn and a logistic regression for churn, and keep the best accuracy.")
    assert len(of_kind(p, "train_model")) == 2


@pytest.mark.parametrize("said", ["then a knn, k of 5, for churn", "then run a k-nearest-neighbour classifier (k=5) targeting churn",
                                  "then fit a knn with churn as the outcome, k = 5"])
def test_a_target_said_after_the_settings_or_as_the_outcome(said):
    """"a knn, k of 5, for churn": the column read as the purpose, the training fitted to the
    default column (silently wrong)."""
    p = _plan(f"{SPLIT}, {said}.")
    (s,) = of_kind(p, "train_model")
    assert (s.params["model"], s.params["k"], s.params["target"]) == ("knn", 5, "churn")


@pytest.mark.parametrize("said", ["fit a logistic regression on it for churn", "train a logistic regression on the training set for churn"])
def test_a_target_after_the_data_it_is_fitted_on(said):
    """"fit a logistic regression on it for churn": the column read as the purpose (no target: silently wrong)."""
    p = _plan(f"{SPLIT}, then {said}.")
    assert of_kind(p, "train_model")[0].params["target"] == "churn"


# -- a search in more words ------------------------------------------------------------------------
@pytest.mark.parametrize("said, metric, mode, trials", [
    ("then tune logistic regression for churn_flag over learning rates 0.001, 0.01 and 0.1 using 6 trials and the ASHA "
     "scheduler, picking the highest AUC", "auc", "max", 6),
    ("and do a grid search over lr = 0.001, 0.01, 0.1 for a logistic regression predicting churn_flag, scoring on recall",
     "recall", "max", 0),
    ("; tune: logistic, target churn_flag, lr ∈ {0.001, 0.01, 0.1}, trials 10, metric auc, mode max, scheduler asha", "auc", "max", 10),
    ("; tune: logistic, target churn_flag, lr ∈ {0.001, 0.01, 0.1}, trials 4, metric accuracy, mode min", "accuracy", "min", 4),
])
def test_a_search_in_more_words(said, metric, mode, trials):
    p = _plan(f"Load c.csv, split 20% off {said}.")
    (s,) = [x for x in p.ir.steps if x.tune]
    assert (s.tune.metric, s.tune.mode, s.tune.trials) == (metric, mode, trials)


# -- tables joined and stacked ---------------------------------------------------------------------
@pytest.mark.parametrize("said", ["Combine jan.csv and feb.csv into one table (same columns), drop duplicate rows and write it to out/q1.csv.",
                                  "Merge jan.csv and feb.csv (identical columns) and write it to out/q1.csv."])
def test_tables_said_to_share_their_columns_are_stacked(said):
    """A join of them, on a guessed key (silently wrong)."""
    p = _plan(said)
    assert of_kind(p, "concat") and not of_kind(p, "join")


def test_tables_merged_on_a_key_stay_joined():
    p = _plan("Merge orders.csv and customers.csv on customer_id and write it to out/q1.csv.")
    assert of_kind(p, "join")[0].params["on"] == "customer_id"


@pytest.mark.parametrize("said", ["Bring in orders.csv and customers.csv, match them up by customer_id, then total the amount per region.",
                                  "Pull orders.csv, attach customers.csv to it on customer_id, and write the result to out/r.csv."])
def test_a_join_in_other_words(said):
    p = _plan(said)
    assert of_kind(p, "join")[0].params["on"] == "customer_id"


def test_rows_kept_with_no_join_kind_said_are_refused():
    """"join them on customer_id (keep every order)": an inner join, which drops orders without a customer (silently wrong)."""
    with pytest.raises(PlanRefused, match="keep every order"):
        _plan("Load orders.csv and customers.csv, join them on customer_id (keep every order), and write the result to out/r.csv.")
    p = _plan("Load orders.csv and customers.csv, left join them on customer_id (keep every order), and write the result to out/r.csv.")
    assert of_kind(p, "join")[0].params["how"] == "left outer"


def test_try_two_models_is_a_map_of_them():
    """"Try logistic regression and a nearest centroid model ...": refused as a value tried with no
    model trained before it."""
    p = _plan("Load s.csv, dedupe it and split 25% off. Try logistic regression and a nearest centroid model to predict "
              "renewed and go with whichever is more accurate.")
    assert [s.params["model"] for s in of_kind(p, "train_model")] == ["logistic", "centroid"]
    assert of_kind(p, "select_best")[0].params["metric"] == "accuracy"
