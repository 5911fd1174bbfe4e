"""Models and tokenizers from a built-in name, a local directory or the Hugging Face cache."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
import torch

from raystack.config import ConfigError
from raystack.models import build_model, resolve_model
from raystack.models.tokenizer import load_tokenizer


def test_the_byte_tokenizer_is_saved_as_a_real_tokenizer(tmp_path):
    from transformers import AutoTokenizer

    from raystack.data.tokenizer import ByteTokenizer

    load_tokenizer("tiny-1m").save_pretrained(tmp_path)
    tok, ref = AutoTokenizer.from_pretrained(tmp_path), ByteTokenizer()
    text = "héllo wörld\n\n\tdef f(x): return 日本 <s"
    assert tok(text, add_special_tokens=False)["input_ids"] == ref.encode(text)
    assert tok(text)["input_ids"] == ref.encode(text, bos=True)
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, len(tok)) == (256, 257, 258, 259)
    assert tok.decode(ref.encode(text, eos=True), skip_special_tokens=True) == text


def _hub_cache(root: Path, repo: str, source: str) -> str:
    """The layout huggingface_hub writes: blobs named by hash, a snapshot of links, refs/main."""
    repo_dir = root / f"models--{repo.replace('/', '--')}"
    commit = hashlib.sha1(repo.encode()).hexdigest()
    snapshot = repo_dir / "snapshots" / commit
    (repo_dir / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for f in Path(source).iterdir():
        blob = repo_dir / "blobs" / hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.copy(f, blob)
        (snapshot / f.name).symlink_to(os.path.relpath(blob, snapshot))
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(commit)
    return str(snapshot)


def test_hub_ids_resolve_through_the_cache_and_uncached_ids_are_named(tmp_path, monkeypatch, llama_dir):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    snapshot = _hub_cache(tmp_path / "hub", "acme/tiny-llama", llama_dir)
    source = resolve_model("acme/tiny-llama")
    assert (source.kind, source.given, source.path) == ("hub", "acme/tiny-llama", snapshot)
    ids = torch.randint(0, 300, (2, 9))
    torch.testing.assert_close(build_model("acme/tiny-llama")(input_ids=ids).logits,
                               build_model(llama_dir)(input_ids=ids).logits)
    text = "anna paints the small apple in the garden."
    assert load_tokenizer("acme/tiny-llama")(text)["input_ids"] == load_tokenizer(llama_dir)(text)["input_ids"]
    with pytest.raises(ConfigError) as err:
        resolve_model("acme/not-downloaded", field="base")
    assert err.value.field == "base" and "'acme/not-downloaded'" in str(err.value)
    assert "Hugging Face cache" in str(err.value) and "HF_HUB_OFFLINE" in str(err.value)


def test_a_missing_tokenizer_and_a_vocabulary_too_large_are_named_before_anything_starts(
        tmp_path, llama_dir, bpe_tokenizer):
    from raystack.apps.commands.edit import load_edit_config
    from raystack.mlora.config import load_mlora_config
    from raystack.mlora.trainer import check_config

    weights_only = tmp_path / "weights_only"
    weights_only.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(Path(llama_dir) / name, weights_only / name)
    with pytest.raises(ConfigError) as err:
        load_edit_config(None, [f"model={weights_only}"])
    assert err.value.field == "tokenizer" and "no tokenizer files" in str(err.value)

    bpe_tokenizer.save_pretrained(tmp_path / "bpe")  # 400 tokens; the Llama has 300 embedding rows
    with pytest.raises(ConfigError) as err:
        load_edit_config(None, [f"model={llama_dir}", f"tokenizer={tmp_path / 'bpe'}"])
    assert err.value.field == "tokenizer"
    assert f"{len(bpe_tokenizer):,} tokens" in str(err.value) and "300 embedding rows" in str(err.value)
    cfg = load_mlora_config({"base": llama_dir, "tokenizer": str(tmp_path / "bpe"),
                             "adapters": [{"name": "a", "target_modules": ["q_proj"]}],
                             "datasets": [{"name": "copy", "synthetic": "copy"}],
                             "tasks": [{"adapter": "a", "dataset": "copy"}]})
    with pytest.raises(ConfigError) as err:
        check_config(cfg)
    assert err.value.field == "tokenizer" and "300 embedding rows" in str(err.value)


def test_checkpoints_raystack_wrote_before_it_saved_tokenizers_keep_the_byte_tokenizer(tmp_path):
    build_model("tiny-1m").save_pretrained(tmp_path)
    tok = load_tokenizer(str(tmp_path))
    assert tok("ab", add_special_tokens=False)["input_ids"] == [97, 98] and tok.eos_token_id == 258
