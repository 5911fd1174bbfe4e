"""What a request asks for that no catalog step makes: a model's figures beyond its metrics (a
confusion matrix, an ROC or precision-recall curve, feature importances, SHAP values). Refused
up front: read as words of other steps, "plot the confusion matrix" drew the evaluation's
metrics and "plot the ROC curve" a column named roc of the loaded table."""

from __future__ import annotations

import re

from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text

FIGURES_NO_STEP_MAKES = re.compile(
    r"\bconfusion\s+matri(?:x|ces)\b|\broc\s+curves?\b|\bprecision[\s-]+recall\s+curves?\b|\bpr\s+curves?\b"
    r"|\bfeature\s+importances?\b|\bshap\s+values?\b|\bcalibration\s+(?:curves?|plots?)\b|\bresidual\s+plots?\b")


def figures_no_step_makes(t: Text) -> None:
    """Refuse a request that names a model's figure no step computes."""
    figure = FIGURES_NO_STEP_MAKES.search(t.masked)
    if figure:
        raise PlanRefused([f"no catalog step makes {figure.group(0)!r}: an evaluation reports its metrics, and a plot "
                           "draws a column or those metrics"])
