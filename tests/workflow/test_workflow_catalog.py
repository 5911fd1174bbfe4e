"""The step catalog: typed parameters, and the other parts' steps when a part is missing."""

from __future__ import annotations

import importlib.util

import pytest

from raystack.workflow.catalog import CATALOG, describe


def test_every_catalog_step_has_typed_params_and_a_description():
    rows = {r["name"]: r for r in describe()}
    assert set(rows) == set(CATALOG)
    assert rows["split_data"]["params"]["test_fraction"] == {"type": "float", "default": 0.2}
    assert rows["train_model"]["inputs"] == {"data": "split"}
    assert all(r["description"] for r in rows.values())


def test_part_step_without_the_part_raises_a_clear_error(monkeypatch):
    from raystack.actors.workflow import parts
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.startswith("raystack.apps.jobs.") else real(name, *a))
    with pytest.raises(RuntimeError, match="part 'edit' is not installed"):
        parts.edit_pretrain(steps=10)
    with pytest.raises(RuntimeError, match="part 'mlora' is not installed"):
        parts.mlora_finetune()
