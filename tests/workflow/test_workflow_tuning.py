"""A tuned step's trial configs without Ray: a range over a whole-number parameter is sampled in
whole numbers (a sampled 7.3 epochs failed in the step; a k of 7.3 meant nothing)."""
from raystack.workflow.ir import TuneSpec
from raystack.workflow.steps import train_model
from raystack.workflow.table_steps import make_dataset, split_data
from raystack.workflow.tuning import integer_params, search_local, trial_configs


def test_a_range_over_an_integer_parameter_is_sampled_in_whole_numbers():
    assert {"k", "epochs", "batch_size"} <= integer_params(train_model) and "lr" not in integer_params(train_model)
    spec = TuneSpec(space={"k": {"min": 1, "max": 20}, "lr": {"min": 0.001, "max": 0.1}}, trials=8, metric="accuracy",
                    mode="max")
    configs = trial_configs(spec, integers=integer_params(train_model))
    assert len(configs) == 8
    assert all(isinstance(c["k"], int) and 1 <= c["k"] <= 20 for c in configs)
    assert all(isinstance(c["lr"], float) for c in configs) and len({c["lr"] for c in configs}) == 8
    # without the step's annotations the range stays continuous, as before
    assert all(isinstance(c["k"], float) for c in trial_configs(spec))


def test_a_search_over_an_epoch_range_runs():
    data = split_data(make_dataset(rows=120, seed=1), seed=1)
    spec = TuneSpec(space={"epochs": {"min": 2, "max": 6}}, trials=3, metric="accuracy", mode="max")
    seen = []

    def call(fn, kwargs):
        seen.append(kwargs["epochs"])
        return fn(**kwargs)
    out, info = search_local(train_model, {"data": data, "model": "logistic"}, spec, call=call)
    assert info["trials"] == 3 and len(seen) == 3 and all(isinstance(e, int) and 2 <= e <= 6 for e in seen)
    assert isinstance(info["best_config"]["epochs"], int) and "accuracy" in out
