"""Part steps on the user's own data (the thirteenth planner round): "pretrain with EDiT on
corpus/" was refused ("no step or parameter for 'corpus/'"), "... using a.jsonl and b.jsonl"
was refused as two tables no step read; "fine-tune adapters using the data in sft.jsonl" was
refused ('sft.jsonl' unplaced). The files or folders named are the pretraining's
``data.paths``, or the fine-tuning's datasets (one file for every adapter, or one each), checked
when the workflow is built (a missing one, or a file type the reader does not take, is an error
naming it before anything runs)."""

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
        "Pretrain with EDiT on a.jsonl and on b.jsonl.": ["a.jsonl", "b.jsonl"],      # the preposition again
        "Pretrain with EDiT on corpus/, on a.jsonl and on b.jsonl.": ["corpus/", "a.jsonl", "b.jsonl"],
        # the folder after the step count ("for ... corpus/" had been read as a table to load)
        "Pretrain with EDiT for 50 steps on corpus/.": ["corpus/"],
        "Pretrain with EDiT for 50 steps on the text files in corpus/.": ["corpus/"],
    }
    for text, paths in cases.items():
        p = _plan(text)
        assert _kinds(p) == ["edit_pretrain"], text
        assert of_kind(p, "edit_pretrain")[0].params["data"]["paths"] == paths, text
        if "50 steps" in text:
            assert of_kind(p, "edit_pretrain")[0].params["steps"] == 50, text
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


def test_the_records_a_fine_tuning_is_said_to_learn_from_are_its_datasets(texts):
    for name in ("sft.jsonl", "a.jsonl", "b.jsonl"):
        (texts / name).write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    p = _plan("Fine-tune adapters on tiny-1m using the data in sft.jsonl.")
    ft = of_kind(p, "mlora_finetune")[0].params
    assert [(d["name"], d["path"]) for d in ft["datasets"]] == [("sft", "sft.jsonl")]
    assert "synthetic" not in ft["datasets"][0] and ft["tasks"][0]["dataset"] == "sft"
    # one file per adapter, in the order named
    p = _plan("Fine-tune adapters named legal and medical on a.jsonl and b.jsonl.")
    ft = of_kind(p, "mlora_finetune")[0].params
    assert [(d["name"], d["path"]) for d in ft["datasets"]] == [("legal", "a.jsonl"), ("medical", "b.jsonl")]
    assert [t["adapter"] for t in ft["tasks"]] == ["legal", "medical"]
    for text, said in (("Fine-tune three adapters on a.jsonl and b.jsonl.", "3 adapters but 2 data files"),
                       ("Fine-tune an adapter on sales.csv.", "not sales.csv"),
                       ("Fine-tune an adapter on missing.jsonl.", "missing.jsonl does not exist")):
        with pytest.raises(PlanRefused, match=said):
            _plan(text)
    # records the prompt template cannot read are named by the config's own check
    (texts / "c.jsonl").write_text('{"text": "hello"}\n')
    with pytest.raises(PlanRefused, match="placeholder {prompt} is not a field of c.jsonl"):
        _plan("Fine-tune an adapter on c.jsonl.")


def test_an_adapter_said_in_the_singular_is_one_adapter(texts):
    """'fine-tune a DoRA adapter of rank 4 on tiny-1m' trained the default config's four
    adapters (copy, reverse, sort, arithmetic) at rank 4, and 'fine-tune an adapter on tiny-1m'
    the default config as it is: "a / an / a single adapter" is one."""
    for text, kind, rank in (("Fine-tune a DoRA adapter of rank 4 on tiny-1m for 25 steps.", "dora", 4),
                             ("Fine-tune an adapter on tiny-1m.", "lora", 16),
                             ("Fine-tune a single LoRA adapter on tiny-1m.", "lora", 16)):
        ft = of_kind(_plan(text), "mlora_finetune")[0].params
        assert [(a["type"], a["r"]) for a in ft["adapters"]] == [(kind, rank)], text
        assert len(ft["datasets"]) == len(ft["tasks"]) == 1, text
    assert len(of_kind(_plan("Fine-tune 2 adapters on tiny-1m."), "mlora_finetune")[0].params["adapters"]) == 2


def test_adapters_given_one_rank_each_and_a_file_named_after_a_task(texts):
    """'two LoRA adapters of rank 8 and 16' was refused ('16' unplaced): a list of ranks is one
    rank per adapter, in order, and a count that disagrees is refused naming both. A data file
    named after a task the catalog lacks ('translate.jsonl') is a file, not that task (it was
    refused as 'no catalog step does translate.jsonl')."""
    for name in ("a.jsonl", "b.jsonl", "translate.jsonl"):
        (texts / name).write_text('{"prompt": "2+2=", "response": "4"}\n' * 4)
    for text in ("Fine-tune two LoRA adapters of rank 8 and 16 on tiny-1m using a.jsonl.",
                 "Fine-tune LoRA adapters with ranks 8 and 16 on tiny-1m using a.jsonl."):
        ft = of_kind(_plan(text), "mlora_finetune")[0].params
        assert [(a["r"], a["alpha"]) for a in ft["adapters"]] == [(8, 16.0), (16, 32.0)], text
        assert [d["path"] for d in ft["datasets"]] == ["a.jsonl", "a.jsonl"], text
    ft = of_kind(_plan("Fine-tune adapters with ranks 4, 8 and 16 on tiny-1m."), "mlora_finetune")[0].params
    assert [a["r"] for a in ft["adapters"]] == [4, 8, 16] and len(ft["tasks"]) == 3
    with pytest.raises(PlanRefused, match=r"2 adapters but 3 ranks \(4, 8, 16\)"):
        _plan("Fine-tune two adapters with ranks 4, 8 and 16 on tiny-1m.")
    ft = of_kind(_plan("Fine-tune adapters on a.jsonl, translate.jsonl and b.jsonl on tiny-1m."),
                 "mlora_finetune")[0].params
    assert [d["path"] for d in ft["datasets"]] == ["a.jsonl", "translate.jsonl", "b.jsonl"]
    with pytest.raises(PlanRefused, match="no catalog step does 'translate'"):
        _plan("Load a.jsonl and translate it.")
