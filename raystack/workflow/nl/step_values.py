"""Values a step refuses when it runs, said at plan time instead: "a knn with k=0", "sample 150%
of it" planned and failed only when run; now the plan is refused, naming the value."""

from __future__ import annotations

from raystack.workflow.nl.plan import DraftStep, PlanRefused

# values a step refuses when it runs, said at plan time instead: (step, parameter) -> (holds, what)
VALUE_RANGES = {("train_model", "k"): (lambda v: v >= 1 and float(v).is_integer(), "a whole number of neighbours, at least 1"),
                ("train_model", "batch_size"): (lambda v: v >= 1 and float(v).is_integer(), "a whole number, at least 1"),
                ("train_model", "lr"): (lambda v: v > 0, "above 0"),
                ("sample", "fraction"): (lambda v: 0 < v <= 1, "a share above 0 and at most 100%"),
                ("sample", "rows"): (lambda v: v >= 1 and float(v).is_integer(), "a whole number, at least 1"),
                ("split_data", "test_fraction"): (lambda v: 0 < v < 1, "a share between 0 and 100%")}


def check_values(s: DraftStep) -> None:
    """"a knn with k=0", "sample 150% of it": a value the step would refuse when it runs."""
    said = [(p, v) for p, v in s.params.items()] + ([(s.map[0], v) for v in s.map[1]] if s.map else [])
    for p, v in said:
        rule = VALUE_RANGES.get((s.entry, p))
        if rule is not None and isinstance(v, (int, float)) and not isinstance(v, bool) and not rule[0](v):
            raise PlanRefused([f"{s.entry} {p} = {v:g}: it must be {rule[1]}"])
