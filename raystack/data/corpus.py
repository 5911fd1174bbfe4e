"""Byte-level text corpora for pretraining, and a checkpointable batch stream.

The default corpus is the Python standard library's own source files: real text present on
every machine with Python. A user's own text, JSONL or Parquet files work the same way.
"""
from __future__ import annotations

import hashlib
import json
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch

from raystack.config import ConfigError

TEXT_SUFFIXES = {".txt", ".md", ".py", ".rst"}
DATA_SUFFIXES = TEXT_SUFFIXES | {".jsonl", ".json", ".parquet"}
SEPARATOR = b"\n\n"


@dataclass
class Corpus:
    """Training and validation bytes (np.uint8), split by document."""

    train: np.ndarray
    val: np.ndarray

    def __repr__(self) -> str:
        return f"Corpus(train={len(self.train):,} bytes, val={len(self.val):,} bytes)"


def _is_validation(key: str, val_fraction: float) -> bool:
    """Deterministic, machine-independent split: a document's key hashed to [0, 1)."""
    h = int.from_bytes(hashlib.sha1(key.encode("utf-8")).digest()[:8], "big")
    return h / 2**64 < val_fraction


def _assemble(docs: Iterable[tuple[str, bytes]], val_fraction: float, max_bytes: int | None) -> Corpus:
    if not 0.0 <= val_fraction < 1.0:
        raise ConfigError("val_fraction", f"must be in [0, 1), got {val_fraction}")
    train, val, total = [], [], 0
    for key, data in docs:
        if max_bytes is not None and total >= max_bytes:
            break
        (val if _is_validation(key, val_fraction) else train).append(data + SEPARATOR)
        total += len(data) + len(SEPARATOR)
    if not train:
        raise ConfigError("data", "the corpus has no training text")
    if not val:  # tiny corpora: hold out the last training document
        val.append(train.pop()) if len(train) > 1 else val.append(train[0])
    return Corpus(np.frombuffer(b"".join(train), dtype=np.uint8).copy(),
                  np.frombuffer(b"".join(val), dtype=np.uint8).copy())


def stdlib_corpus(max_bytes: int | None = 4_000_000, val_fraction: float = 0.05) -> Corpus:
    """The standard library's .py sources (sorted by path, so the split is reproducible)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts and "test" not in p.parts)

    def docs():
        for p in files:
            try:
                yield str(p.relative_to(root)), p.read_bytes()
            except OSError:
                continue
    return _assemble(docs(), val_fraction, max_bytes)


def read_documents(path: str | Path, text_field: str = "text") -> list[str]:
    """The documents in a text file, a JSONL/JSON file, a Parquet file, or a directory of those."""
    path = Path(path)
    if not path.exists():
        raise ConfigError("data.paths", f"no such file or directory: {path}")
    if path.is_dir():
        out: list[str] = []
        for p in sorted(path.rglob("*")):
            if p.is_file() and p.suffix in DATA_SUFFIXES:
                out.extend(read_documents(p, text_field))
        return out
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return [path.read_text(encoding="utf-8", errors="replace")]
    if suffix in (".jsonl", ".json"):
        return _read_json_docs(path, text_field)
    if suffix == ".parquet":
        import pyarrow.parquet as pq
        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise ConfigError("data.paths", f"{path} is not a readable Parquet file: {exc}") from None
        if text_field not in table.column_names:
            raise ConfigError("data.text_field", f"{path} has no column {text_field!r}; columns: {table.column_names}")
        return [str(v) for v in table.column(text_field).to_pylist() if v is not None]
    raise ConfigError("data.paths", f"{path}: unsupported file type {suffix!r}; expected one of {sorted(DATA_SUFFIXES)}")


def _read_json_docs(path: Path, text_field: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError("data.paths", f"{path} is not valid JSON: {exc}") from None
        if not isinstance(records, list):
            raise ConfigError("data.paths", f"{path} must hold a list of records")
    else:
        records = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ConfigError("data.paths", f"{path} line {n} is not valid JSON: {exc}") from None
    out = []
    for n, rec in enumerate(records, 1):
        if not isinstance(rec, dict) or text_field not in rec:
            raise ConfigError("data.text_field", f"{path} record {n} has no field {text_field!r}")
        out.append(str(rec[text_field]))
    return out


def corpus_from_files(paths: Sequence[str | Path], text_field: str = "text", val_fraction: float = 0.05,
                      max_bytes: int | None = None) -> Corpus:
    """A corpus of the user's own files (see `read_documents` for the formats)."""
    def docs():
        for p in paths:
            for i, doc in enumerate(read_documents(p, text_field)):
                yield f"{Path(p).name}#{i}", doc.encode("utf-8")
    return _assemble(docs(), val_fraction, max_bytes)


class BatchStream:
    """Fixed-length windows of a token array, in a seeded order, resumable from `state_dict()`.

    Each epoch shuffles the window starts with (seed, epoch); rank r of world_size w takes every
    w-th window, so data-parallel ranks see disjoint data. `next_batch()` returns a LongTensor of
    shape [batch_size, seq_len + 1] (inputs are [:, :-1], targets [:, 1:]).
    """

    def __init__(self, tokens: np.ndarray, batch_size: int, seq_len: int, seed: int = 0,
                 rank: int = 0, world_size: int = 1):
        if batch_size < 1 or seq_len < 1:
            raise ConfigError("data", f"batch_size and seq_len must be >= 1, got {batch_size}, {seq_len}")
        if not 0 <= rank < world_size:
            raise ConfigError("data", f"rank must be in [0, {world_size}), got {rank}")
        n_windows = (len(tokens) - 1) // seq_len
        if n_windows < world_size * batch_size:
            raise ConfigError("data", f"{len(tokens):,} tokens make {n_windows} windows of {seq_len}; "
                                      f"need at least {world_size * batch_size}")
        self.tokens = torch.from_numpy(np.asarray(tokens).astype(np.int64))
        self.batch_size, self.seq_len = batch_size, seq_len
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.n_windows = n_windows
        self.epoch, self.cursor = 0, 0
        self._order = self._epoch_order()

    def _epoch_order(self) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        order = torch.randperm(self.n_windows, generator=g)
        return order[self.rank::self.world_size]

    def next_batch(self) -> torch.Tensor:
        if self.cursor + self.batch_size > len(self._order):
            self.epoch += 1
            self.cursor = 0
            self._order = self._epoch_order()
        starts = self._order[self.cursor:self.cursor + self.batch_size] * self.seq_len
        self.cursor += self.batch_size
        idx = starts[:, None] + torch.arange(self.seq_len + 1)[None, :]
        return self.tokens[idx]

    def skip(self, batches: int) -> None:
        """Advance past ``batches`` batches without building them (a replacement rank takes
        up its data position)."""
        for _ in range(batches):
            if self.cursor + self.batch_size > len(self._order):
                self.epoch += 1
                self.cursor = 0
                self._order = self._epoch_order()
            self.cursor += self.batch_size

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "cursor": self.cursor, "seed": self.seed, "rank": self.rank,
                "world_size": self.world_size}

    def load_state_dict(self, state: dict) -> None:
        self.seed, self.rank, self.world_size = state["seed"], state["rank"], state["world_size"]
        self.epoch, self.cursor = state["epoch"], state["cursor"]
        self._order = self._epoch_order()
