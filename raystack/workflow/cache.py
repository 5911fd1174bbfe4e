"""Step caching: cache keys, the artifact store, and bounded-cache eviction (Couler vs LRU).

Key = sha256(step code fingerprint, canonical parameters minus ignored ones, digests of the
input artifacts, library version). Artifacts live under ``<root>/<key[:2]>/<key>/`` in any
pyarrow filesystem (local directory by default): Parquet for Arrow tables and pandas frames,
safetensors for tensors and numpy arrays, JSON for plain values, pickle otherwise. Each
artifact's ``meta.json`` (written last, so its presence means committed) holds the sha256 of
the data; a mismatch on read means corruption, reported as a miss so the step recomputes.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

LIB_VERSION = "raystack-workflow-1"


def cache_key(code_hash: str, params_canonical: str, input_digests: Iterable[str],
              lib_version: str = LIB_VERSION) -> str:
    """The cache key of one step execution."""
    h = hashlib.sha256()
    for part in (code_hash, params_canonical, *input_digests, lib_version):
        h.update(part.encode())
        h.update(b"\x00")
    return h.hexdigest()


# -- serialisation -------------------------------------------------------------------------
def _is_json_value(v: Any) -> bool:
    try:
        return json.loads(json.dumps(v, allow_nan=False)) == v
    except (TypeError, ValueError):
        return False


def serialize(value: Any) -> tuple[str, bytes]:
    """(format, bytes) for a step output."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover
        pd = None
    if isinstance(value, pa.Table):
        buf = pa.BufferOutputStream()
        pq.write_table(value, buf)
        return "parquet", buf.getvalue().to_pybytes()
    if pd is not None and isinstance(value, pd.DataFrame):
        buf = pa.BufferOutputStream()
        pq.write_table(pa.Table.from_pandas(value, preserve_index=False), buf)
        return "parquet-pandas", buf.getvalue().to_pybytes()
    try:
        import torch
        if isinstance(value, torch.Tensor):
            from safetensors.torch import save
            return "safetensors-tensor", save({"t": value.contiguous()})
        if (isinstance(value, dict) and value and all(isinstance(k, str) for k in value)
                and all(isinstance(v, torch.Tensor) for v in value.values())):
            from safetensors.torch import save
            return "safetensors-dict", save({k: v.contiguous() for k, v in value.items()})
    except ImportError:  # pragma: no cover
        pass
    import numpy as np
    if isinstance(value, np.ndarray) and value.dtype != object:
        from safetensors.numpy import save as np_save
        return "safetensors-numpy", np_save({"a": np.ascontiguousarray(value)})
    if _is_json_value(value):
        return "json", json.dumps(value, sort_keys=True).encode()
    try:
        return "pickle", pickle.dumps(value, protocol=5)
    except (pickle.PicklingError, AttributeError, TypeError):
        from ray import cloudpickle  # closures and local classes
        return "pickle", cloudpickle.dumps(value)


def deserialize(fmt: str, data: bytes) -> Any:
    """The value stored as ``(fmt, data)``."""
    if fmt == "parquet":
        return pq.read_table(pa.BufferReader(data))
    if fmt == "parquet-pandas":
        return pq.read_table(pa.BufferReader(data)).to_pandas()
    if fmt == "safetensors-tensor":
        from safetensors.torch import load
        return load(data)["t"]
    if fmt == "safetensors-dict":
        from safetensors.torch import load
        return load(data)
    if fmt == "safetensors-numpy":
        from safetensors.numpy import load as np_load
        return np_load(data)["a"]
    if fmt == "json":
        return json.loads(data)
    if fmt == "pickle":
        return pickle.loads(data)
    raise ValueError(f"unknown artifact format {fmt!r}")


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class CorruptArtifact(Exception):
    """An artifact whose bytes do not match the digest recorded when it was written."""


@dataclass
class ArtifactMeta:
    key: str
    step: str
    format: str
    digest: str
    size: int
    compute_s: float = 0.0
    upstream_cost_s: float = 0.0
    reuse: int = 1
    created: float = field(default_factory=time.time)


class ArtifactStore:
    """Content-addressed artifacts in a pyarrow filesystem (a local directory by default).

    ``root`` is a local path or a URI (``s3://bucket/prefix``, ``file:///tmp/x``);
    ``capacity_bytes`` bounds the cache (``None``: unbounded), enforced by :meth:`enforce`.
    Picklable, so Ray tasks can write to the same store.
    """

    def __init__(self, root: str, capacity_bytes: int | None = None,
                 filesystem: pafs.FileSystem | None = None):
        self.uri = str(root)
        self.capacity_bytes = capacity_bytes
        if filesystem is not None:
            self.fs, self.root = filesystem, str(root)
        elif "://" in self.uri:
            self.fs, self.root = pafs.FileSystem.from_uri(self.uri)
        else:
            import os
            self.fs, self.root = pafs.LocalFileSystem(), os.path.abspath(self.uri)
        self.fs.create_dir(self.root, recursive=True)

    def __reduce__(self):
        return (ArtifactStore, (self.uri, self.capacity_bytes))

    def _dir(self, key: str) -> str:
        return f"{self.root}/{key[:2]}/{key}"

    def _read(self, path: str) -> bytes:
        with self.fs.open_input_stream(path) as f:
            return f.read()

    def _write(self, path: str, data: bytes) -> None:
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    def meta(self, key: str) -> ArtifactMeta | None:
        """The artifact's metadata, or None when it is not (completely) stored."""
        try:
            return ArtifactMeta(**json.loads(self._read(f"{self._dir(key)}/meta.json")))
        except (FileNotFoundError, OSError, ValueError, TypeError):
            return None

    def has(self, key: str) -> bool:
        return self.meta(key) is not None

    def put(self, key: str, step: str, value: Any, compute_s: float = 0.0,
            upstream_cost_s: float = 0.0, reuse: int = 1) -> ArtifactMeta:
        """Store a step output under ``key``; returns its metadata (with the digest)."""
        fmt, data = serialize(value)
        d = self._dir(key)
        self.fs.create_dir(d, recursive=True)
        self._write(f"{d}/data", data)
        m = ArtifactMeta(key=key, step=step, format=fmt, digest=digest_bytes(data),
                         size=len(data), compute_s=compute_s, upstream_cost_s=upstream_cost_s,
                         reuse=reuse)
        self._write(f"{d}/meta.json", json.dumps(asdict(m)).encode())
        return m

    def get(self, key: str) -> Any:
        """The stored value; raises KeyError if absent, CorruptArtifact on a digest mismatch."""
        m = self.meta(key)
        if m is None:
            raise KeyError(key)
        try:
            data = self._read(f"{self._dir(key)}/data")
        except (FileNotFoundError, OSError) as e:
            raise CorruptArtifact(f"artifact {key[:12]} of step {m.step!r}: data missing") from e
        if digest_bytes(data) != m.digest:
            raise CorruptArtifact(f"artifact {key[:12]} of step {m.step!r}: digest mismatch")
        return deserialize(m.format, data)

    def verify(self, key: str) -> bool:
        """True when the artifact exists and its bytes match its digest."""
        m = self.meta(key)
        if m is None:
            return False
        try:
            return digest_bytes(self._read(f"{self._dir(key)}/data")) == m.digest
        except (FileNotFoundError, OSError):
            return False

    def delete(self, key: str) -> None:
        try:
            self.fs.delete_dir(self._dir(key))
        except (FileNotFoundError, OSError):
            pass

    def entries(self) -> list[ArtifactMeta]:
        """Metadata of every committed artifact."""
        sel = pafs.FileSelector(self.root, recursive=True, allow_not_found=True)
        out = []
        for info in self.fs.get_file_info(sel):
            if info.type == pafs.FileType.File and info.path.endswith("/meta.json"):
                key = info.path.rsplit("/", 2)[-2]
                m = self.meta(key)
                if m is not None:
                    out.append(m)
        return out

    # -- access log and eviction --------------------------------------------------------
    def _access(self) -> dict[str, list[float]]:
        try:
            return json.loads(self._read(f"{self.root}/access.json"))
        except (FileNotFoundError, OSError, ValueError):
            return {}

    def touch(self, keys: Iterable[str], now: float | None = None) -> None:
        """Record that these artifacts were used now (for LRU and hit counts)."""
        acc = self._access()
        t = time.time() if now is None else now
        for k in keys:
            last, hits = acc.get(k, [t, 0])
            acc[k] = [t, hits + 1]
        self._write(f"{self.root}/access.json", json.dumps(acc).encode())

    def enforce(self, policy: "EvictionPolicy", protect: Iterable[str] = ()) -> list[str]:
        """Evict artifacts chosen by ``policy`` until the store fits ``capacity_bytes``."""
        if self.capacity_bytes is None:
            return []
        acc = self._access()
        entries = [CacheEntry(m.key, m.size, m.compute_s + m.upstream_cost_s, m.reuse,
                              acc.get(m.key, [m.created, 0])[0], acc.get(m.key, [0, 0])[1])
                   for m in self.entries()]
        victims = policy.victims(entries, self.capacity_bytes, protect=set(protect))
        for k in victims:
            self.delete(k)
        return victims


# -- eviction policies (pure) --------------------------------------------------------------
@dataclass
class CacheEntry:
    """What a policy knows about a cached artifact."""

    key: str
    size: int
    rebuild_cost_s: float     # seconds to recompute it, its missing upstream included
    reuse: int                # how many downstream steps consume it
    last_access: float
    hits: int = 0
    base: float = 0.0         # Couler: the policy's clock when last used (ages stale entries)


class EvictionPolicy:
    """Chooses which artifacts to evict so the cache fits its capacity."""

    name = "base"

    def order(self, entries: list[CacheEntry]) -> list[CacheEntry]:
        """Entries in eviction order (first evicted first)."""
        raise NotImplementedError

    def victims(self, entries: list[CacheEntry], capacity: int,
                protect: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
        total = sum(e.size for e in entries)
        out = []
        for e in self.order([e for e in entries if e.key not in protect]):
            if total <= capacity:
                break
            out.append(e.key)
            total -= e.size
        return out


class LRUPolicy(EvictionPolicy):
    """Least recently used first."""

    name = "lru"

    def order(self, entries: list[CacheEntry]) -> list[CacheEntry]:
        return sorted(entries, key=lambda e: (e.last_access, e.key))


class CoulerPolicy(EvictionPolicy):
    """Couler's score: keep what is costly to rebuild and reused often, per byte.

    value = rebuild_cost_s * (reuse + hits) / size, the lowest evicted first. So that entries
    nobody asks for any more (e.g. superseded versions) do not stay forever on past hits, the
    score is ``base + value`` where ``base`` is the policy's clock when the entry was last used
    and the clock rises to each evicted entry's score (greedy-dual ageing).
    """

    name = "couler"

    def __init__(self) -> None:
        self.clock = 0.0

    @staticmethod
    def value(e: CacheEntry) -> float:
        return e.rebuild_cost_s * max(e.reuse, 1) / max(e.size, 1)

    def score(self, e: CacheEntry) -> float:
        return e.base + self.value(e)

    def order(self, entries: list[CacheEntry]) -> list[CacheEntry]:
        return sorted(entries, key=lambda e: (self.score(e), e.last_access, e.key))

    def victims(self, entries: list[CacheEntry], capacity: int,
                protect: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
        out = super().victims(entries, capacity, protect)
        by_key = {e.key: e for e in entries}
        for k in out:
            self.clock = max(self.clock, self.score(by_key[k]))
        return out


POLICIES = {"lru": LRUPolicy, "couler": CoulerPolicy}


@dataclass
class TraceAccess:
    """One artifact request in a replayed trace."""

    key: str
    size: int
    compute_s: float
    reuse: int = 1


def replay(trace: list[TraceAccess], capacity: int, policy: EvictionPolicy) -> dict[str, float]:
    """Replay a trace through a cache of ``capacity`` bytes; a miss recomputes the artifact.

    Returns {"recompute_s", "hits", "misses"}.
    """
    cache: dict[str, CacheEntry] = {}
    recompute, hits, misses = 0.0, 0, 0
    for t, a in enumerate(trace):
        clock = getattr(policy, "clock", 0.0)
        e = cache.get(a.key)
        if e is not None:
            hits += 1
            e.hits += 1
            e.last_access = t
            e.base = clock
            continue
        misses += 1
        recompute += a.compute_s
        if a.size > capacity:
            continue
        cache[a.key] = CacheEntry(a.key, a.size, a.compute_s, a.reuse, t, 0, clock)
        for k in policy.victims(list(cache.values()), capacity, protect={a.key}):
            del cache[k]
    return {"recompute_s": recompute, "hits": hits, "misses": misses,
            "hit_rate": hits / max(1, hits + misses)}

