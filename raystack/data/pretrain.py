"""Pretraining data at scale: documents tokenized once into token shards, streamed per rank.

`prepare_token_shards` reads the documents as a stream, tokenizes them in batches with the
model's tokenizer (a fast tokenizer spreads each batch over every core in Rust threads),
ends every document with EOS (packing: windows run across documents, EOS marks the seams),
splits documents between training and validation by a hash of their name, and writes the
tokens as Arrow IPC shards of at most `SHARD_TOKENS` tokens. The shards live in a cache
directory keyed by a hash of the content (the files' bytes, the tokenizer, the split), so a
corpus is tokenized once however many runs and ranks read it; writers race safely (the
first to finish renames its directory into place).

`open_token_corpus` memory-maps the shards: each rank's `BatchStream` reads only its own
windows, and no rank holds the corpus in its own memory (the OS page cache shares the
pages between the ranks of a node).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from raystack.config import ConfigError
from raystack.data.cache import file_sha256, raystack_cache_dir, write_json_atomic
from raystack.data.corpus import data_files, is_validation_document, iter_documents, stdlib_files

FORMAT = "raystack-token-shards-1"
SHARD_TOKENS = 1 << 24          # tokens per shard file at most (32-64 MB)
BATCH_CHARS = 1 << 20           # characters tokenized per batch call
MANIFEST = "manifest.json"
SPLITS = ("train", "val")


@dataclass(frozen=True)
class DataSources:
    """Which documents: the user's files (``paths``), else the standard library's sources."""

    paths: tuple[str, ...] = ()
    text_field: str = "text"
    max_bytes: int | None = None   # the standard library corpus only: stop after this many bytes
    val_fraction: float = 0.05

    def files(self) -> list[tuple[str, Path]]:
        """``(name, path)`` of every source file, in reading order."""
        if not self.paths:
            out, total = [], 0
            for key, p in stdlib_files():
                if self.max_bytes is not None and total >= self.max_bytes:
                    break
                out.append((key, p))
                total += p.stat().st_size + 2
            return out
        return [(p.name, p) for given in self.paths for p in data_files(given)]

    def documents(self, files: Sequence[tuple[str, Path]]) -> Iterator[tuple[str, str]]:
        """``(key, text)`` of every document; the key decides its split."""
        if not self.paths:
            for key, p in files:
                yield key, p.read_text(encoding="utf-8", errors="replace")
            return
        counts: dict[str, int] = {}
        for name, p in files:
            for text in iter_documents(p, self.text_field):
                i = counts.get(name, 0)
                counts[name] = i + 1
                yield f"{name}#{i}", text


@dataclass
class TokenCorpus:
    """Training and validation tokens as lists of memory-mapped shards, and their tokenizer."""

    train: list[np.ndarray]
    val: list[np.ndarray]
    tokenizer: Any
    manifest: dict

    @property
    def directory(self) -> str:
        return self.manifest["directory"]

    def __repr__(self) -> str:
        return (f"TokenCorpus(train={sum(map(len, self.train)):,} tokens in {len(self.train)} shards, "
                f"val={sum(map(len, self.val)):,} tokens, {self.directory})")


def content_key(sources: DataSources, files: Sequence[tuple[str, Path]], tokenizer_id: str) -> str:
    """The cache key: the files' names and bytes, the tokenizer, and how documents are split."""
    h = hashlib.sha256(json.dumps({"format": FORMAT, "tokenizer": tokenizer_id, "text_field": sources.text_field,
                                   "val_fraction": sources.val_fraction, "stdlib": not sources.paths}).encode())
    for name, p in files:
        h.update(f"{name}|{file_sha256(p)}\n".encode())
    return h.hexdigest()[:24]


class _ShardWriter:
    """Appends token arrays; writes a shard file each time `SHARD_TOKENS` have gathered."""

    def __init__(self, directory: Path, split: str, dtype: np.dtype) -> None:
        self.directory, self.split, self.dtype = directory, split, dtype
        self.pending: list[np.ndarray] = []
        self.pending_tokens = 0
        self.shards: list[dict] = []
        self.documents = 0

    def add(self, tokens: np.ndarray) -> None:
        self.pending.append(tokens)
        self.pending_tokens += len(tokens)
        self.documents += 1
        if self.pending_tokens >= SHARD_TOKENS:
            self.flush()

    def pop_last(self) -> np.ndarray | None:
        """Take back the last document added, if it is not written yet."""
        if not self.pending:
            return None
        last = self.pending.pop()
        self.pending_tokens -= len(last)
        self.documents -= 1
        return last

    def flush(self) -> None:
        if not self.pending:
            return
        import pyarrow as pa

        tokens = np.concatenate(self.pending).astype(self.dtype, copy=False)
        name = f"{self.split}-{len(self.shards):05d}.arrow"
        table = pa.table({"tokens": pa.array(tokens)})
        with pa.OSFile(str(self.directory / name), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        self.shards.append({"file": name, "tokens": int(len(tokens))})
        self.pending, self.pending_tokens = [], 0


def _batches(docs: Iterator[tuple[str, str]]) -> Iterator[list[tuple[str, str]]]:
    batch, chars = [], 0
    for key, text in docs:
        batch.append((key, text))
        chars += len(text)
        if chars >= BATCH_CHARS:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def prepare_token_shards(sources: DataSources, tokenizer: Any, cache_dir: str | os.PathLike | None = None,
                         progress: bool = False) -> dict:
    """Tokenize the sources once into shards under ``cache_dir`` (default: raystack's cache);
    returns the manifest (a cached one when the same content was tokenized before)."""
    from raystack.models.tokenizer import eos_token_id, tokenizer_fingerprint

    if not 0.0 <= sources.val_fraction < 1.0:
        raise ConfigError("data.val_fraction", f"must be in [0, 1), got {sources.val_fraction}")
    root = Path(cache_dir) if cache_dir else raystack_cache_dir("tokens")
    files = sources.files()
    if not files:
        raise ConfigError("data.paths", "no data files found (expected .txt, .md, .py, .rst, .jsonl, .json or .parquet)")
    key = content_key(sources, files, tokenizer_fingerprint(tokenizer))
    final = root / key
    if (final / MANIFEST).is_file():
        return _manifest(final)
    eos = eos_token_id(tokenizer, "tokenizer")
    dtype = np.dtype(np.uint16 if len(tokenizer) <= np.iinfo(np.uint16).max + 1 else np.uint32)
    tmp = root / f".{key}.{uuid.uuid4().hex[:8]}.tmp"
    tmp.mkdir(parents=True)
    try:
        manifest = _tokenize(sources, files, tokenizer, eos, dtype, tmp, progress)
        manifest.update(key=key, tokenizer=tokenizer_fingerprint(tokenizer))
        write_json_atomic(tmp / MANIFEST, manifest)
        try:
            os.rename(tmp, final)
        except OSError:  # another process wrote the same content first: use theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _manifest(final)


def _tokenize(sources: DataSources, files: Sequence[tuple[str, Path]], tokenizer: Any, eos: int,
              dtype: np.dtype, out: Path, progress: bool) -> dict:
    from tqdm import tqdm

    writers = {s: _ShardWriter(out, s, dtype) for s in SPLITS}
    total_bytes = sum(p.stat().st_size for _, p in files)
    bar = tqdm(total=total_bytes, unit="B", unit_scale=True, desc="tokenizing", disable=not progress)
    t0, tokens = time.perf_counter(), 0
    for batch in _batches(sources.documents(files)):
        ids = tokenizer([text for _, text in batch], add_special_tokens=False,
                        return_attention_mask=False)["input_ids"]
        for (key, _), doc in zip(batch, ids):
            arr = np.asarray([*doc, eos], dtype=dtype)
            split = "val" if is_validation_document(key, sources.val_fraction) else "train"
            writers[split].add(arr)
            tokens += len(arr)
        bar.update(sum(len(text) for _, text in batch))
        bar.set_postfix(tokens_per_s=f"{tokens / max(time.perf_counter() - t0, 1e-9):,.0f}")
    train, val = writers["train"], writers["val"]
    if train.documents == 0:
        raise ConfigError("data", "the corpus has no training text")
    if val.documents == 0:  # tiny corpora: hold out the last training document
        last = train.pop_last() if train.documents > 1 else None
        if last is not None:
            val.add(last)
        elif train.pending:  # a single document: validate on it too
            val.add(np.concatenate(train.pending))
        else:
            raise ConfigError("data.val_fraction", "no document fell into the validation split; raise it")
    for w in writers.values():
        w.flush()
    seconds = time.perf_counter() - t0
    bar.n = total_bytes
    bar.close()
    return {"format": FORMAT, "eos_id": eos, "vocab": len(tokenizer), "dtype": dtype.name, "bytes": total_bytes,
            "documents": sum(w.documents for w in writers.values()), "tokens": tokens, "seconds": seconds,
            "tokens_per_s": tokens / max(seconds, 1e-9),
            **{s: writers[s].shards for s in SPLITS}}


def _manifest(directory: Path) -> dict:
    manifest = json.loads((directory / MANIFEST).read_text())
    manifest["directory"] = str(directory)
    return manifest


def open_shards(manifest: dict, split: str) -> list[np.ndarray]:
    """The split's shards as read-only numpy views of memory-mapped Arrow files (no copy)."""
    import pyarrow as pa

    out = []
    for shard in manifest[split]:
        source = pa.memory_map(str(Path(manifest["directory"]) / shard["file"]), "r")
        reader = pa.ipc.open_file(source)
        out.extend(reader.get_batch(i).column(0).to_numpy(zero_copy_only=True)
                   for i in range(reader.num_record_batches))
    return out


def open_token_corpus(sources: DataSources, model: str, tokenizer: str | None = None,
                      cache_dir: str | os.PathLike | None = None, progress: bool = False) -> TokenCorpus:
    """The corpus tokenized by ``model``'s tokenizer (or ``tokenizer``): prepared if the cache
    does not hold it yet, then memory-mapped."""
    from raystack.models.tokenizer import load_tokenizer

    tok = load_tokenizer(model, tokenizer)
    manifest = prepare_token_shards(sources, tok, cache_dir, progress)
    return TokenCorpus(open_shards(manifest, "train"), open_shards(manifest, "val"), tok, manifest)
