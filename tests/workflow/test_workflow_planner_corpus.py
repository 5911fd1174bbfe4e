"""A pretraining on the user's own text (the thirteenth planner round): "pretrain with EDiT on
corpus/" was refused ("no step or parameter for 'corpus/'"), "... using a.jsonl and b.jsonl"
was refused as two tables no step read. The files or folders named are the run's
``data.paths``, checked when the workflow is built (a missing one, or a file type the corpus
reader does not take, is an error naming it before anything runs)."""

from __future__ import annotations

import pytest

from raystack.workflow.nl import PlanRefused

from planner_util import kinds as _kinds, of_kind, plan as _plan


@pytest.fixture()
def texts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 20)
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text('{"text": "hello world"}\n' * 5)
    return tmp_path


def test_the_text_a_pretraining_is_said_to_read_is_its_corpus(texts):
    cases = {
        "Pretrain a small language model with EDiT on corpus/ for 200 steps.": ["corpus/"],
        "Pretrain with EDiT on the text files in corpus/.": ["corpus/"],
        "Pretrain a model with edit using a.jsonl and b.jsonl.": ["a.jsonl", "b.jsonl"],
    }
    for text, paths in cases.items():
        p = _plan(text)
        assert _kinds(p) == ["edit_pretrain"], text
        assert of_kind(p, "edit_pretrain")[0].params["data"]["paths"] == paths, text
    # the checkpoint is still what a fine-tuning after it starts from
    p = _plan("Pretrain with EDiT on corpus/ for 100 steps, then fine-tune an adapter on it.")
    assert _kinds(p) == ["edit_pretrain", "mlora_finetune"]
    assert of_kind(p, "mlora_finetune")[0].params["base"].step == of_kind(p, "edit_pretrain")[0].id


def test_a_corpus_that_is_missing_or_of_a_type_the_reader_does_not_take_is_refused_naming_it(texts):
    with pytest.raises(PlanRefused, match="no such file or directory: wiki/"):
        _plan("Pretrain with EDiT on wiki/ for 100 steps.")
    (texts / "sales.csv").write_text("a,b\n1,2\n")
    with pytest.raises(PlanRefused, match="not sales.csv"):
        _plan("Pretrain with EDiT on sales.csv.")
