import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from raystack.config import ConfigError
from raystack.data import BatchStream, ByteTokenizer, corpus_from_files, read_documents, stdlib_corpus


def test_stdlib_corpus_split_is_deterministic_and_disjoint():
    a, b = stdlib_corpus(max_bytes=500_000), stdlib_corpus(max_bytes=500_000)
    assert np.array_equal(a.train, b.train) and np.array_equal(a.val, b.val)
    assert len(a.val) > 0 and len(a.train) > 10 * len(a.val) / 2
    assert a.train.dtype == np.uint8
    assert bytes(a.val[:200]) not in bytes(a.train)


def test_tokenizer_roundtrip_and_specials():
    tok = ByteTokenizer()
    ids = tok.encode("héllo", bos=True, eos=True)
    assert ids[0] == tok.bos_id and ids[-1] == tok.eos_id and max(ids[1:-1]) < 256
    assert tok.decode(ids) == "héllo"


def test_batch_stream_shapes_resume_and_rank_disjointness():
    tokens = np.arange(10_000, dtype=np.int64) % 256
    s = BatchStream(tokens, batch_size=4, seq_len=16, seed=7)
    first = s.next_batch()
    assert first.shape == (4, 17)
    for _ in range(3):
        s.next_batch()
    state = s.state_dict()
    expected = [s.next_batch() for _ in range(200)]  # crosses epoch boundaries
    resumed = BatchStream(tokens, batch_size=4, seq_len=16, seed=7)
    resumed.load_state_dict(state)
    assert all(torch.equal(x, resumed.next_batch()) for x in expected)
    r0 = BatchStream(tokens, 4, 16, seed=1, rank=0, world_size=2)
    r1 = BatchStream(tokens, 4, 16, seed=1, rank=1, world_size=2)
    assert len(r0._order) + len(r1._order) == r0.n_windows
    assert set(r0._order.tolist()).isdisjoint(r1._order.tolist())


def test_batch_stream_rejects_too_little_data():
    with pytest.raises(ConfigError, match="need at least"):
        BatchStream(np.zeros(50, dtype=np.uint8), batch_size=8, seq_len=16)


def test_read_documents_text_jsonl_parquet_and_directory(tmp_path):
    (tmp_path / "a.txt").write_text("plain text")
    (tmp_path / "b.jsonl").write_text(json.dumps({"text": "one"}) + "\n\n" + json.dumps({"text": "two"}) + "\n")
    pq.write_table(pa.table({"body": ["p1", None, "p2"]}), tmp_path / "c.parquet")
    assert read_documents(tmp_path / "a.txt") == ["plain text"]
    assert read_documents(tmp_path / "b.jsonl") == ["one", "two"]
    assert read_documents(tmp_path / "c.parquet", text_field="body") == ["p1", "p2"]
    assert len(read_documents(tmp_path / "a.txt")) == 1
    corpus = corpus_from_files([tmp_path / "a.txt", tmp_path / "b.jsonl"], val_fraction=0.0)
    assert b"plain text" in bytes(corpus.train) or b"plain text" in bytes(corpus.val)


def test_bad_files_name_the_problem(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{not json}\n')
    with pytest.raises(ConfigError, match="line 2"):
        read_documents(bad)
    with pytest.raises(ConfigError, match="no field 'content'"):
        read_documents(tmp_path / "bad.jsonl" if False else _write(tmp_path / "x.jsonl", '{"text": 1}\n'), text_field="content")
    pq.write_table(pa.table({"x": [1]}), tmp_path / "d.parquet")
    with pytest.raises(ConfigError, match="no column 'text'"):
        read_documents(tmp_path / "d.parquet")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1garbage")
    with pytest.raises(ConfigError, match="not a readable Parquet"):
        read_documents(tmp_path / "broken.parquet")
    with pytest.raises(ConfigError, match="no such file"):
        read_documents(tmp_path / "missing.txt")
    with pytest.raises(ConfigError, match="unsupported file type"):
        read_documents(_write(tmp_path / "e.csv", "a,b\n"))


def _write(path, text):
    path.write_text(text)
    return path
