"""Text corpora for pretraining: documents from files, and a checkpointable batch stream.

The default corpus is the Python standard library's own source files: real text present on
every machine with Python. A user's own text, JSONL or Parquet files work the same way.
`iter_documents` streams any of them; `stdlib_corpus` / `corpus_from_files` hold their bytes
in memory (small corpora, byte models); `raystack.data.pretrain` tokenizes them once into
token shards. `BatchStream` cuts windows from one token array or from many shards.
"""
from __future__ import annotations

import hashlib
import json
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import torch

from raystack.config import ConfigError
from raystack.data.suffixes import DATA_SUFFIXES, TEXT_SUFFIXES
SEPARATOR = b"\n\n"


@dataclass
class Corpus:
    """Training and validation bytes (np.uint8), split by document."""

    train: np.ndarray
    val: np.ndarray

    def __repr__(self) -> str:
        return f"Corpus(train={len(self.train):,} bytes, val={len(self.val):,} bytes)"


def is_validation_document(key: str, val_fraction: float) -> bool:
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
        (val if is_validation_document(key, val_fraction) else train).append(data + SEPARATOR)
        total += len(data) + len(SEPARATOR)
    if not train:
        raise ConfigError("data", "the corpus has no training text")
    if not val:  # tiny corpora: hold out the last training document
        val.append(train.pop()) if len(train) > 1 else val.append(train[0])
    return Corpus(np.frombuffer(b"".join(train), dtype=np.uint8).copy(),
                  np.frombuffer(b"".join(val), dtype=np.uint8).copy())


def stdlib_files() -> list[tuple[str, Path]]:
    """The standard library's .py sources as ``(key, path)``, sorted by path (a reproducible order)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts and "test" not in p.parts)
    return [(str(p.relative_to(root)), p) for p in files]


def stdlib_corpus(max_bytes: int | None = 4_000_000, val_fraction: float = 0.05) -> Corpus:
    """The standard library's .py sources (sorted by path, so the split is reproducible)."""
    def docs():
        for key, p in stdlib_files():
            try:
                yield key, p.read_bytes()
            except OSError:
                continue
    return _assemble(docs(), val_fraction, max_bytes)


def read_documents(path: str | Path, text_field: str = "text") -> list[str]:
    """The documents in a text file, a JSONL/JSON file, a Parquet file, or a directory of those."""
    return list(iter_documents(path, text_field))


def data_files(path: str | Path) -> list[Path]:
    """The files a data path stands for: itself, or a directory's data files in sorted order."""
    path = Path(path)
    if not path.exists():
        raise ConfigError("data.paths", f"no such file or directory: {path}")
    if path.is_dir():
        return [p for p in sorted(path.rglob("*")) if p.is_file() and p.suffix.lower() in DATA_SUFFIXES]
    return [path]


def iter_documents(path: str | Path, text_field: str = "text") -> Iterator[str]:
    """The documents of ``path`` (see `read_documents`), read as a stream: a JSONL file line by
    line, a Parquet file batch by batch, so a large file is never in memory at once."""
    for p in data_files(path):
        yield from _file_documents(p, text_field)


def _file_documents(path: Path, text_field: str) -> Iterator[str]:
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        yield path.read_text(encoding="utf-8", errors="replace")
    elif suffix == ".jsonl":
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    yield _record_text(_json_line(path, n, line), path, n, text_field)
    elif suffix == ".json":
        try:
            records = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError("data.paths", f"{path} is not valid JSON: {exc}") from None
        if not isinstance(records, list):
            raise ConfigError("data.paths", f"{path} must hold a list of records")
        for n, rec in enumerate(records, 1):
            yield _record_text(rec, path, n, text_field)
    elif suffix == ".parquet":
        yield from _parquet_documents(path, text_field)
    else:
        raise ConfigError("data.paths", f"{path}: unsupported file type {suffix!r}; expected one of {sorted(DATA_SUFFIXES)}")


def _json_line(path: Path, n: int, line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise ConfigError("data.paths", f"{path} line {n} is not valid JSON: {exc}") from None


def _record_text(rec: Any, path: Path, n: int, text_field: str) -> str:
    if not isinstance(rec, dict) or text_field not in rec:
        raise ConfigError("data.text_field", f"{path} record {n} has no field {text_field!r}")
    return str(rec[text_field])


def _parquet_documents(path: Path, text_field: str) -> Iterator[str]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise ConfigError("data.paths", f"{path} is not a readable Parquet file: {exc}") from None
    if text_field not in pf.schema_arrow.names:
        raise ConfigError("data.text_field", f"{path} has no column {text_field!r}; columns: {pf.schema_arrow.names}")
    for batch in pf.iter_batches(columns=[text_field], batch_size=4096):
        yield from (str(v) for v in batch.column(0).to_pylist() if v is not None)


def corpus_from_files(paths: Sequence[str | Path], text_field: str = "text", val_fraction: float = 0.05,
                      max_bytes: int | None = None) -> Corpus:
    """A corpus of the user's own files (see `read_documents` for the formats)."""
    def docs():
        for p in paths:
            for i, doc in enumerate(read_documents(p, text_field)):
                yield f"{Path(p).name}#{i}", doc.encode("utf-8")
    return _assemble(docs(), val_fraction, max_bytes)


class BatchStream:
    """Fixed-length windows of token arrays, in a seeded order, resumable from `state_dict()`.

    ``tokens`` is one array or a list of shards (memory-mapped token shards stay on disk: only
    the windows a rank reads are touched, and a batch is copied out when it is taken). Windows
    never cross a shard boundary. Each epoch shuffles the windows with (seed, epoch); rank r of
    world_size w takes every w-th window, so data-parallel ranks see disjoint data.
    `next_batch()` returns a LongTensor [batch_size, seq_len + 1] (inputs [:, :-1], targets [:, 1:]).
    """

    def __init__(self, tokens: np.ndarray | Sequence[np.ndarray], batch_size: int, seq_len: int, seed: int = 0,
                 rank: int = 0, world_size: int = 1):
        if batch_size < 1 or seq_len < 1:
            raise ConfigError("data", f"batch_size and seq_len must be >= 1, got {batch_size}, {seq_len}")
        if not 0 <= rank < world_size:
            raise ConfigError("data", f"rank must be in [0, {world_size}), got {rank}")
        shards = [tokens] if isinstance(tokens, (np.ndarray, torch.Tensor)) else list(tokens)
        self.shards = [np.asarray(s) for s in shards]  # no copy for arrays and memory maps
        per_shard = [max(len(s) - 1, 0) // seq_len for s in self.shards]
        self._first = np.cumsum([0, *per_shard])  # window index where each shard starts
        n_windows = int(self._first[-1])
        if n_windows < world_size * batch_size:
            total = sum(len(s) for s in self.shards)
            raise ConfigError("data", f"{total:,} tokens make {n_windows} windows of {seq_len}; "
                                      f"need at least {world_size * batch_size}")
        self.batch_size, self.seq_len = batch_size, seq_len
        self.seed, self.rank, self.world_size = seed, rank, world_size
        self.n_windows = n_windows
        self.epoch, self.cursor = 0, 0
        self._order = self._epoch_order()

    def _epoch_order(self) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
        order = torch.randperm(self.n_windows, generator=g)
        return order[self.rank::self.world_size]

    def _window(self, w: int) -> np.ndarray:
        s = int(np.searchsorted(self._first, w, side="right")) - 1
        start = (w - int(self._first[s])) * self.seq_len
        return self.shards[s][start:start + self.seq_len + 1]

    def next_batch(self) -> torch.Tensor:
        if self.cursor + self.batch_size > len(self._order):
            self.epoch += 1
            self.cursor = 0
            self._order = self._epoch_order()
        windows = self._order[self.cursor:self.cursor + self.batch_size].tolist()
        self.cursor += self.batch_size
        return torch.from_numpy(np.stack([self._window(w) for w in windows]).astype(np.int64))

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
