"""EDiT data at scale: tokenized once into memory-mapped shards; EDiT pretrains a user's
checkpoint with its own tokenizer and the loss falls on held-out text, as transformers measures it."""
from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from raystack.data import BatchStream
from raystack.data.pretrain import DataSources, open_token_corpus
from tests.models.models_helpers import story


def _files(root, texts):
    root.mkdir()
    (root / "a.txt").write_text(texts[0])
    (root / "b.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[1:40]))
    pq.write_table(pa.table({"text": texts[40:120]}), root / "c.parquet")
    return root


def test_documents_are_tokenized_once_into_memory_mapped_shards(tmp_path, monkeypatch, texts, llama_dir):
    import raystack.data.pretrain as pretrain
    from raystack.models.tokenizer import load_tokenizer

    monkeypatch.setattr(pretrain, "SHARD_TOKENS", 3000)  # several shards from a small corpus
    data = _files(tmp_path / "data", texts)
    sources = DataSources(paths=(str(data),), val_fraction=0.1)
    corpus = open_token_corpus(sources, llama_dir, cache_dir=tmp_path / "cache")
    tok = load_tokenizer(llama_dir)
    docs = texts[:120]
    assert len(corpus.train) > 2 and all(not s.flags.owndata and not s.flags.writeable for s in corpus.train)
    tokens = np.concatenate(corpus.train + corpus.val)
    assert len(tokens) == sum(len(tok(d, add_special_tokens=False)["input_ids"]) + 1 for d in docs)
    assert (tokens == tok.eos_token_id).sum() == len(docs)  # one EOS after every document
    first = tok(texts[0], add_special_tokens=False)["input_ids"]
    assert list(corpus.train[0][:len(first) + 1]) == [*first, tok.eos_token_id]
    assert corpus.manifest["documents"] == len(docs) and 0 < sum(map(len, corpus.val)) < len(tokens) / 3

    again = open_token_corpus(sources, llama_dir, cache_dir=tmp_path / "cache")
    assert again.manifest == corpus.manifest  # read from the cache: not tokenized again
    (data / "a.txt").write_text(texts[0] + " and more")
    changed = open_token_corpus(sources, llama_dir, cache_dir=tmp_path / "cache")
    assert changed.directory != corpus.directory  # keyed by the files' content

    # ranks stream disjoint windows that never cross a shard's end, and resume exactly
    r0, r1 = (BatchStream(corpus.train, 4, 32, seed=3, rank=r, world_size=2) for r in (0, 1))
    assert r0.n_windows == sum((len(s) - 1) // 32 for s in corpus.train)
    assert set(r0._order.tolist()).isdisjoint(r1._order.tolist())
    for _ in range(3):
        r0.next_batch()
    state = r0.state_dict()
    expected = [r0.next_batch() for _ in range(40)]  # across an epoch boundary
    resumed = BatchStream(corpus.train, 4, 32, seed=3, rank=0, world_size=2)
    resumed.load_state_dict(state)
    assert all(torch.equal(x, resumed.next_batch()) for x in expected)


def _heldout_loss(model_dir: str, tokenizer_dir: str, docs: list[str]) -> float:
    """Mean next-token loss on ``docs`` with plain transformers (no raystack code)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    losses = []
    with torch.no_grad():
        for d in docs:
            ids = torch.tensor([tok(d)["input_ids"][:128]])
            losses.append(float(model(input_ids=ids, labels=ids).loss))
    return sum(losses) / len(losses)


@pytest.mark.cluster
def test_edit_pretrains_a_llama_checkpoint_with_its_own_tokenizer(ray_cluster, tmp_path, texts, llama_dir):
    from transformers import AutoTokenizer

    from raystack.actors.edit import run_edit
    from raystack.config import load_config
    from raystack.edit.config import EDiTConfig

    data = _files(tmp_path / "data", texts)
    cfg = load_config(EDiTConfig, {
        "model": llama_dir, "mode": "edit", "ranks": 2, "steps": 16, "sync": {"h": 4, "warmup_steps": 4},
        "inner": {"lr": 1e-2, "lr_warmup_steps": 4}, "penalty": {"warmup_syncs": 1},
        "data": {"paths": [str(data)], "batch_size": 4, "seq_len": 48, "eval_batches": 2,
                 "cache_dir": str(tmp_path / "cache")},
        "run": {"out_dir": str(tmp_path / "run"), "checkpoint_every": 0, "eval_every": 0, "comm_timeout_s": 20.0}})
    result = run_edit(cfg, progress=False)
    rng = random.Random(99)
    heldout = [story(rng, 6) for _ in range(8)]  # text the run never saw
    before = _heldout_loss(llama_dir, llama_dir, heldout)
    after = _heldout_loss(result.model_dir, result.model_dir, heldout)  # the tokenizer saved beside the model
    assert after < before - 1.0, (before, after)
    saved, own = AutoTokenizer.from_pretrained(result.model_dir), AutoTokenizer.from_pretrained(llama_dir)
    assert saved(heldout[0])["input_ids"] == own(heldout[0])["input_ids"]
    assert result.tokens == 2 * 16 * 4 * 48  # tokens of the model's tokenizer, packed: no padding
