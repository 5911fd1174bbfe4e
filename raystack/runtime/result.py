"""The one result every part returns (EDiT, mLoRA, elastic, and workflows).

``history`` holds one row per segment / window / poll / step as a pyarrow table;
``to_pandas()`` gives it as a DataFrame. Build one with :func:`history_table` from a list of
row dicts (rows may differ in their keys: missing values become nulls).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import pyarrow


@dataclass(frozen=True)
class Result:
    part: str                    # "edit" | "mlora" | "elastic" | "workflow"
    metrics: dict[str, float]    # final metrics (e.g. val_loss, tokens_per_s, auc, lost, duplicated)
    history: pyarrow.Table       # one row per segment / window / poll / step
    checkpoint: str | None       # where the checkpoint / model was written
    artifacts: dict[str, str]    # name -> path (adapters, reports, ...)
    config: dict                 # the run's full config as a plain dict

    def to_pandas(self):
        """``history`` as a pandas DataFrame."""
        return self.history.to_pandas()


def history_table(rows: Iterable[Mapping[str, Any]]) -> pyarrow.Table:
    """A table of ``rows``: the columns are every key seen, in first-seen order."""
    rows = list(rows)
    columns: dict[str, None] = {}
    for row in rows:
        for key in row:
            columns.setdefault(key, None)
    return pyarrow.table({c: [row.get(c) for row in rows] for c in columns})
