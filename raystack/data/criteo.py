"""Criteo-like click data as Parquet: a synthetic generator and a reader for real Criteo files.

Schema (one file or many): ``sample_id`` int64 (global row id, used for exactly-once audits),
``label`` float32, ``I1..I13`` float32 (dense counts), ``C1..C26`` int64 (categorical ids,
already hashed into ``[0, vocab)``). The generator draws Zipf-distributed ids and labels from
a planted logistic model (per-id weights, dense weights, one pairwise interaction), so AUC
measures whether a model learned something. ``convert_criteo_tsv`` turns the real Criteo TSV
(label, 13 ints, 26 hex strings, tab-separated, blanks allowed) into the same schema.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

N_DENSE, N_CAT = 13, 26
DENSE = [f"I{i}" for i in range(1, N_DENSE + 1)]
CAT = [f"C{i}" for i in range(1, N_CAT + 1)]
COLUMNS = ["sample_id", "label", *DENSE, *CAT]


class DataError(ValueError):
    """A data file is missing, unreadable or has the wrong columns; names the file."""


@dataclass(frozen=True)
class Batch:
    sample_id: np.ndarray  # int64 [n]
    label: np.ndarray  # float32 [n]
    dense: np.ndarray  # float32 [n, 13], log1p-transformed
    cat: np.ndarray  # int64 [n, 26]

    def __len__(self) -> int:
        return len(self.label)

    def slice(self, a: int, b: int) -> "Batch":
        return Batch(self.sample_id[a:b], self.label[a:b], self.dense[a:b], self.cat[a:b])


def _zipf_ids(rng: np.random.Generator, n: int, vocab: int, s: float) -> np.ndarray:
    p = 1.0 / np.arange(1, vocab + 1) ** s
    perm = rng.permutation(vocab)  # popular ids are scattered over the table
    return perm[rng.choice(vocab, size=n, p=p / p.sum())]


MANIFEST = "manifest.json"  # what `generate` wrote: its parameters and each file's size and digest


def _generated_paths(out: Path, rows: int, files: int) -> list[tuple[Path, int]]:
    sizes = [rows // files + (1 if i < rows % files else 0) for i in range(files)]
    return [(out / f"part-{i:05d}.parquet", n) for i, n in enumerate(sizes)]


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def generated_is_current(out_dir: str | Path, rows: int, files: int, vocab: int, zipf_s: float,
                         seed: int) -> bool:
    """Whether ``out_dir`` holds exactly the dataset `generate` would write for these arguments:
    the manifest's parameters match and every file's size and SHA-256 digest match it (a
    truncated or edited file does not)."""
    out = Path(out_dir)
    try:
        manifest = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    params = {"rows": rows, "files": files, "vocab": vocab, "zipf_s": zipf_s, "seed": seed}
    if not isinstance(manifest, dict) or manifest.get("params") != params:
        return False
    recorded = {f.get("name"): f for f in manifest.get("files", []) if isinstance(f, dict)}
    for path, n in _generated_paths(out, rows, files):
        entry = recorded.get(path.name)
        if entry is None or entry.get("rows") != n or not path.is_file() \
                or path.stat().st_size != entry.get("bytes") or _digest(path) != entry.get("sha256"):
            return False
    return True


def generate(out_dir: str | Path, rows: int = 100_000, files: int = 4, vocab: int = 1000,
             zipf_s: float = 1.1, seed: int = 0, row_group: int = 4096) -> list[tuple[str, int]]:
    """Write ``rows`` synthetic samples as ``files`` Parquet files; returns ``[(path, rows)]``.

    Deterministic in ``seed``. An existing dataset is reused only if `generated_is_current`
    (every file's digest matches the manifest); otherwise it is written again."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    targets = _generated_paths(out, rows, files)
    if generated_is_current(out, rows, files, vocab, zipf_s, seed):
        return [(str(p), n) for p, n in targets]
    (out / MANIFEST).unlink(missing_ok=True)  # the files are rewritten: the old manifest no longer holds
    for old in out.glob(".generated-*"):  # markers of earlier releases
        old.unlink()
    rng = np.random.default_rng(seed)
    w_cat = rng.normal(0, 0.6, size=(N_CAT, vocab))
    w_dense = rng.normal(0, 0.4, size=N_DENSE)
    w_pair = rng.normal(0, 0.5, size=(vocab,))
    base = 0
    entries = []
    for path, n in targets:
        dense = rng.lognormal(1.0, 1.2, size=(n, N_DENSE)).astype(np.float32)
        dense[rng.random((n, N_DENSE)) < 0.05] = 0.0
        cat = np.stack([_zipf_ids(rng, n, vocab, zipf_s) for _ in range(N_CAT)], axis=1)
        logit = (np.log1p(dense) - 1.2) @ w_dense + w_cat[np.arange(N_CAT), cat].sum(1) / 2.0
        logit += w_pair[cat[:, 0]] * w_pair[cat[:, 1]] - 1.0
        label = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float32)
        cols = {"sample_id": np.arange(base, base + n, dtype=np.int64), "label": label}
        cols.update({c: dense[:, i] for i, c in enumerate(DENSE)})
        cols.update({c: cat[:, i].astype(np.int64) for i, c in enumerate(CAT)})
        tmp = path.with_name(path.name + ".tmp")
        pq.write_table(pa.table(cols), tmp, row_group_size=row_group)
        tmp.replace(path)
        entries.append({"name": path.name, "rows": n, "bytes": path.stat().st_size, "sha256": _digest(path)})
        base += n
    manifest = {"params": {"rows": rows, "files": files, "vocab": vocab, "zipf_s": zipf_s, "seed": seed},
                "files": entries}
    tmp = out / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1))
    tmp.replace(out / MANIFEST)
    return [(str(p), n) for p, n in targets]


def list_files(paths: list[str] | str) -> list[tuple[str, int]]:
    """``[(path, rows)]`` for Parquet files or directories of them; DataError if unreadable."""
    import pyarrow.parquet as pq

    items = [paths] if isinstance(paths, str) else list(paths)
    files: list[Path] = []
    for p in map(Path, items):
        if p.is_dir():
            files += sorted(p.glob("*.parquet"))
        elif p.exists():
            files.append(p)
        else:
            raise DataError(f"{p}: no such file or directory")
    if not files:
        raise DataError(f"no Parquet files in {items}")
    out = []
    for f in files:
        try:
            meta = pq.ParquetFile(f)
        except Exception as exc:
            raise DataError(f"{f}: not a readable Parquet file ({exc})") from exc
        missing = set(COLUMNS) - set(meta.schema_arrow.names)
        if missing:
            raise DataError(f"{f}: missing columns {sorted(missing)}")
        out.append((str(f), meta.metadata.num_rows))
    return out


def read_rows(path: str, start: int, end: int, vocab: int) -> Batch:
    """Rows ``[start, end)`` of one Parquet file (only the row groups that overlap are read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        f = pq.ParquetFile(path)
        groups, first, offset = [], None, 0
        for g in range(f.num_row_groups):
            n = f.metadata.row_group(g).num_rows
            if offset + n > start and offset < end:
                groups.append(g)
                first = offset if first is None else first
            offset += n
        t = f.read_row_groups(groups, columns=COLUMNS) if groups else None
    except Exception as exc:
        raise DataError(f"{path}: cannot read rows {start}:{end} ({exc})") from exc
    if t is None or first is None:
        raise DataError(f"{path}: rows {start}:{end} out of range")
    t = t.slice(start - first, end - start)
    if not isinstance(t, pa.Table) or t.num_rows != end - start:
        raise DataError(f"{path}: expected {end - start} rows at {start}, got {t.num_rows}")
    dense = np.stack([t.column(c).to_numpy() for c in DENSE], axis=1).astype(np.float32)
    cat = np.stack([t.column(c).to_numpy() for c in CAT], axis=1).astype(np.int64) % vocab
    return Batch(t.column("sample_id").to_numpy().astype(np.int64),
                 t.column("label").to_numpy().astype(np.float32),
                 np.log1p(np.maximum(dense, 0.0)), cat)


def convert_criteo_tsv(tsv: str | Path, out_dir: str | Path, vocab: int = 1 << 20,
                       rows_per_file: int = 1_000_000, first_id: int = 0) -> list[tuple[str, int]]:
    """Convert a real Criteo TSV (e.g. ``day_0`` or ``train.txt``) into Parquet in our schema.

    Blank dense values become 0; categorical hex strings are hashed ``int(x, 16) % vocab``
    (blank -> 0). A malformed line raises DataError naming the file and line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[tuple[str, int]] = []
    rows: list[list] = []

    def flush() -> None:
        if not rows:
            return
        arr = list(zip(*rows))
        n = len(rows)
        cols = {"sample_id": np.arange(first_id + sum(r for _, r in written),
                                       first_id + sum(r for _, r in written) + n, dtype=np.int64),
                "label": np.array(arr[0], dtype=np.float32)}
        cols.update({c: np.array(arr[1 + i], dtype=np.float32) for i, c in enumerate(DENSE)})
        cols.update({c: np.array(arr[14 + i], dtype=np.int64) for i, c in enumerate(CAT)})
        path = out / f"part-{len(written):05d}.parquet"
        pq.write_table(pa.table(cols), path, row_group_size=4096)
        written.append((str(path), n))
        rows.clear()

    with open(tsv, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 1 + N_DENSE + N_CAT:
                raise DataError(f"{tsv}:{lineno}: expected {1 + N_DENSE + N_CAT} tab-separated "
                                f"fields, got {len(parts)}")
            try:
                rows.append([float(parts[0])] + [float(x) if x else 0.0 for x in parts[1:14]]
                            + [int(x, 16) % vocab if x else 0 for x in parts[14:]])
            except ValueError as exc:
                raise DataError(f"{tsv}:{lineno}: {exc}") from exc
            if len(rows) >= rows_per_file:
                flush()
    flush()
    return written


def auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (rank statistic, ties averaged)."""
    labels = np.asarray(labels).astype(bool)
    scores = np.asarray(scores, dtype=float)
    pos, neg = labels.sum(), (~labels).sum()
    if pos == 0 or neg == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    s = scores[order]
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[labels].sum() - pos * (pos + 1) / 2) / (pos * neg))
