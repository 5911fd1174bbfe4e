"""SFT data: files with prompt templates, synthetic tasks, resumable batches."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from raystack.data.sft import (IGNORE, SFTBatcher, encode, file_examples, synthetic_examples, SYNTHETIC_TASKS)
from raystack.data.tokenizer import ByteTokenizer

RECORDS = [{"q": "2+2", "a": "4"}, {"q": "capital of France", "a": "Paris"}]


@pytest.mark.parametrize("fmt", ["json", "jsonl", "parquet"])
def test_file_formats_with_template(tmp_path, fmt):
    path = tmp_path / f"d.{fmt}"
    if fmt == "json":
        path.write_text(json.dumps(RECORDS))
    elif fmt == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in RECORDS))
    else:
        pq.write_table(pa.Table.from_pylist(RECORDS), path)
    ex = file_examples(path, "Q: {q}\nA: ", "a")
    assert [(e.prompt, e.response) for e in ex] == [("Q: 2+2\nA: ", "4"), ("Q: capital of France\nA: ", "Paris")]


def test_template_missing_field_and_bad_format(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text(json.dumps({"q": "x", "a": "y"}))
    with pytest.raises(ValueError, match="'question'"):
        file_examples(p, "{question}", "a")
    with pytest.raises(ValueError, match="unsupported"):
        file_examples(tmp_path / "d.csv" if (tmp_path / "d.csv").write_text("x") else None)


def test_synthetic_tasks_are_correct_and_deterministic():
    for task in SYNTHETIC_TASKS:
        a, b = synthetic_examples(task, 20, seed=1), synthetic_examples(task, 20, seed=1)
        assert a == b and a != synthetic_examples(task, 20, seed=2)
    for e in synthetic_examples("reverse", 5):
        assert e.response == e.prompt[4:-1][::-1]
    for e in synthetic_examples("arithmetic", 5):
        x, y = e.prompt[4:-1].split("+")
        assert int(e.response) == int(x) + int(y)


def test_loss_only_on_response_and_batches_resume():
    tok = ByteTokenizer()
    ex = synthetic_examples("copy", 1)[0]
    ids, labels = encode(ex, 64)
    assert labels.count(IGNORE) == len(ex.prompt)  # targets of bos + prompt[:-1] positions
    assert [t for t in labels if t != IGNORE] == tok.encode(ex.response) + [tok.eos_id]
    b1 = SFTBatcher(synthetic_examples("sort", 10), batch_size=4, cutoff_len=16, seed=3)
    first = [b1.next_batch() for _ in range(3)]
    state = b1.state_dict()
    rest = [b1.next_batch() for _ in range(4)]
    b2 = SFTBatcher(synthetic_examples("sort", 10), batch_size=4, cutoff_len=16, seed=3)
    b2.load_state_dict(state)
    again = [b2.next_batch() for _ in range(4)]
    assert all((x[0] == y[0]).all() and (x[1] == y[1]).all() for x, y in zip(rest, again))
    assert not (first[0][0].shape == rest[0][0].shape and (first[0][0] == rest[0][0]).all())
