"""The artifact store: content-addressed step outputs in a pyarrow filesystem, two levels.

Layout under ``root`` (a local directory, or a URI such as ``s3://bucket/prefix``)::

    <key[:2]>/<key>/data        the output's bytes (formats.py: Parquet, safetensors, JSON...)
    <key[:2]>/<key>/meta.json   format, sha256, size, cost; written last, so it marks a commit
    access/<ns>-<uuid>.json     one access record per use (append-only: writers never collide)
    eviction.json               the eviction policy's state (the Couler clock), kept across runs
    .lock                       serialises compaction and eviction between processes (local)

Writes go to a temporary name first and are renamed into place, so a reader never sees half
an artifact and two processes writing the same key leave one whole copy. Every use appends its
own access record, so concurrent runs lose none; :meth:`ArtifactStore.enforce` merges them
under the lock. In front of the files sits a memory level for small outputs (at most
``memory_item_bytes`` each, ``memory_bytes`` in all; defaults 256 KiB and 64 MiB): a repeated
read of a small artifact in the same process costs no I/O.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import time
import uuid
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Iterator

import pyarrow.fs as pafs

from raystack.workflow.artifacts import Artifact, find_artifacts
from raystack.workflow.eviction import CacheEntry, EvictionPolicy
from raystack.workflow.formats import PICKLE, UnsafeArtifact, deserialize, digest_bytes, serialize

log = logging.getLogger(__name__)

MEMORY_ITEM_BYTES = 256 * 1024        # outputs up to this size are also kept in memory
MEMORY_BYTES = 64 * 1024 * 1024       # the memory level's bound per store object
COMPACT_AFTER = 256                   # access records merged into one past this many


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
    artifacts: list[dict] = field(default_factory=list)   # typed artifacts: files to check


@dataclass(frozen=True)
class AccessRecord:
    """One use of an artifact: when, and the eviction clock at that moment."""

    key: str
    time: float
    clock: float = 0.0
    hits: int = 1


Stamp = tuple  # (size, mtime_ns) of an artifact's data file when its bytes were read


class _MemoryLevel:
    """A bounded LRU of small artifacts' bytes, by key, with the file stamp they came from."""

    def __init__(self, item_bytes: int, total_bytes: int) -> None:
        self.item_bytes, self.total_bytes = item_bytes, total_bytes
        self._items: OrderedDict[str, tuple[ArtifactMeta, bytes, Stamp]] = OrderedDict()
        self._size = 0

    def get(self, key: str) -> tuple[ArtifactMeta, bytes, Stamp] | None:
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
        return hit

    def put(self, meta: ArtifactMeta, data: bytes, stamp: Stamp) -> None:
        if len(data) > self.item_bytes:
            return
        self.drop(meta.key)
        self._items[meta.key] = (meta, data, stamp)
        self._size += len(data)
        while self._size > self.total_bytes and self._items:
            _, (_, old, _) = self._items.popitem(last=False)
            self._size -= len(old)

    def drop(self, key: str) -> None:
        hit = self._items.pop(key, None)
        if hit is not None:
            self._size -= len(hit[1])


def _owned_privately(path: str) -> bool:
    """True when ``path`` is a directory owned by this user that nobody else can write."""
    st = os.stat(path)
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


class ArtifactStore:
    """Content-addressed artifacts in a pyarrow filesystem (a local directory by default).

    ``capacity_bytes`` bounds the store (``None``: unbounded), enforced by :meth:`enforce`.
    ``allow_pickle``: also store outputs that fit no data format as pickle, and read pickled
    artifacts back. Reading a pickle runs code, so anyone who can write the store could run
    code in every later run: it is accepted only for a local directory owned by this user
    that no group or other user can write. Picklable, so Ray tasks write to the same store.
    """

    def __init__(self, root: str, capacity_bytes: int | None = None,
                 filesystem: pafs.FileSystem | None = None, *, allow_pickle: bool = False,
                 memory_item_bytes: int = MEMORY_ITEM_BYTES, memory_bytes: int = MEMORY_BYTES):
        self.uri = str(root)
        self.capacity_bytes = capacity_bytes
        self.allow_pickle = allow_pickle
        self.local = filesystem is None and "://" not in self.uri
        if filesystem is not None:
            self.fs, self.root = filesystem, str(root)
        elif not self.local:
            self.fs, self.root = pafs.FileSystem.from_uri(self.uri)
        else:
            self.fs, self.root = pafs.LocalFileSystem(), os.path.abspath(self.uri)
        self.fs.create_dir(self.root, recursive=True)
        if allow_pickle:
            if not self.local:
                raise ValueError(f"store {self.uri}: allow_pickle needs a local directory "
                                 "(its owner and permissions cannot be checked remotely)")
            if not _owned_privately(self.root):
                raise ValueError(f"store {self.root}: allow_pickle needs a directory owned by "
                                 "you that no group or other user can write (chmod go-w)")
        self._memory = _MemoryLevel(memory_item_bytes, memory_bytes)
        self._opts = (memory_item_bytes, memory_bytes)

    def __reduce__(self):
        return (_rebuild_store, (self.uri, self.capacity_bytes, self.allow_pickle, self._opts))

    # -- files ------------------------------------------------------------------------------
    def _dir(self, key: str) -> str:
        return f"{self.root}/{key[:2]}/{key}"

    def _read(self, path: str) -> bytes:
        with self.fs.open_input_stream(path) as f:
            return f.read()

    def _write_atomic(self, path: str, data: bytes) -> None:
        tmp = f"{path}.tmp-{uuid.uuid4().hex}"
        with self.fs.open_output_stream(tmp) as f:
            f.write(data)
        self.fs.move(tmp, path)

    def _stamp(self, key: str) -> Stamp | None:
        try:
            info = self.fs.get_file_info(f"{self._dir(key)}/data")
        except OSError:
            return None
        return (info.size, info.mtime_ns) if info.type == pafs.FileType.File else None

    def _memory_hit(self, key: str) -> tuple[ArtifactMeta, bytes] | None:
        """The memory level's bytes while the file is the one they were read from."""
        hit = self._memory.get(key)
        if hit is None:
            return None
        if self._stamp(key) != hit[2]:  # rewritten, deleted or evicted by someone else
            self._memory.drop(key)
            return None
        return hit[0], hit[1]

    def meta(self, key: str) -> ArtifactMeta | None:
        """The artifact's metadata, or None when it is not (completely) stored."""
        hit = self._memory.get(key)
        if hit is not None:
            return hit[0]
        try:
            return ArtifactMeta(**json.loads(self._read(f"{self._dir(key)}/meta.json")))
        except (FileNotFoundError, OSError, ValueError, TypeError):
            return None

    def has(self, key: str) -> bool:
        return self.meta(key) is not None

    def put(self, key: str, step: str, value: Any, compute_s: float = 0.0,
            upstream_cost_s: float = 0.0, reuse: int = 1) -> ArtifactMeta:
        """Store a step output under ``key``; returns its metadata (with the digest).

        Raises :class:`raystack.workflow.formats.UnstorableOutput` when the output fits no
        data format and pickle is not allowed.
        """
        fmt, data = serialize(value, allow_pickle=self.allow_pickle)
        d = self._dir(key)
        self.fs.create_dir(d, recursive=True)
        self._write_atomic(f"{d}/data", data)
        m = ArtifactMeta(key=key, step=step, format=fmt, digest=digest_bytes(data),
                         size=len(data), compute_s=compute_s, upstream_cost_s=upstream_cost_s,
                         reuse=reuse, artifacts=[a.to_json() for a in find_artifacts(value)])
        self._write_atomic(f"{d}/meta.json", json.dumps(asdict(m)).encode())
        stamp = self._stamp(key)
        if stamp is not None:
            self._memory.put(m, data, stamp)
        return m

    def _data(self, key: str) -> tuple[ArtifactMeta, bytes]:
        hit = self._memory_hit(key)
        if hit is not None:
            return hit
        m = self.meta(key)
        if m is None:
            raise KeyError(key)
        if m.format == PICKLE and not self.allow_pickle:
            raise UnsafeArtifact(f"artifact {key[:12]} of step {m.step!r} is pickled, and "
                                 "reading a pickle runs code: refused (see docs/workflow.md, "
                                 "'Cache formats')")
        stamp = self._stamp(key)
        try:
            data = self._read(f"{self._dir(key)}/data")
        except (FileNotFoundError, OSError) as e:
            raise CorruptArtifact(f"artifact {key[:12]} of step {m.step!r}: data missing") from e
        if digest_bytes(data) != m.digest:
            raise CorruptArtifact(f"artifact {key[:12]} of step {m.step!r}: digest mismatch")
        if stamp is not None:
            self._memory.put(m, data, stamp)
        return m, data

    def get(self, key: str) -> Any:
        """The stored value; KeyError if absent, CorruptArtifact on a digest mismatch,
        UnsafeArtifact for a pickled artifact in a store that does not allow pickle."""
        m, data = self._data(key)
        return deserialize(m.format, data, allow_pickle=self.allow_pickle)

    def verify(self, key: str) -> bool:
        """True when the artifact exists, is in an allowed format and matches its digest, and
        the files of the typed artifacts it holds are still there, unchanged."""
        m = self.meta(key)
        if m is not None and not all(Artifact.from_json(a).intact() for a in m.artifacts):
            return False
        try:
            self._data(key)
            return True
        except (KeyError, CorruptArtifact, UnsafeArtifact):
            return False

    def delete(self, key: str) -> None:
        self._memory.drop(key)
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

    # -- access log, eviction state, lock -------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """An exclusive lock between processes (local stores; elsewhere a no-op)."""
        if not self.local:
            yield
            return
        import fcntl
        with open(os.path.join(self.root, ".lock"), "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _access_files(self) -> list[str]:
        sel = pafs.FileSelector(f"{self.root}/access", allow_not_found=True)
        return sorted(i.path for i in self.fs.get_file_info(sel)
                      if i.type == pafs.FileType.File and i.path.endswith(".json"))

    def eviction_state(self) -> dict[str, Any]:
        try:
            return json.loads(self._read(f"{self.root}/eviction.json"))
        except (FileNotFoundError, OSError, ValueError):
            return {}

    def touch(self, keys: Iterable[str], now: float | None = None) -> None:
        """Record that these artifacts were used now (a new record; nothing is rewritten)."""
        keys = list(keys)
        if not keys:
            return
        t = time.time() if now is None else now
        clock = float(self.eviction_state().get("clock", 0.0))
        recs = [asdict(AccessRecord(k, t, clock)) for k in keys]
        self.fs.create_dir(f"{self.root}/access", recursive=True)
        name = f"{self.root}/access/{time.time_ns():020d}-{uuid.uuid4().hex}.json"
        self._write_atomic(name, json.dumps(recs).encode())

    def access(self) -> dict[str, AccessRecord]:
        """Every key's merged record: last use, its clock, and the hit count over all records."""
        merged: dict[str, AccessRecord] = {}
        for path in self._access_files():
            try:
                recs = json.loads(self._read(path))
            except (FileNotFoundError, OSError, ValueError):
                continue  # compacted meanwhile: its records are in the merged file
            for r in recs:
                rec = AccessRecord(**r)
                old = merged.get(rec.key)
                if old is None:
                    merged[rec.key] = rec
                else:
                    last = rec if rec.time >= old.time else old
                    merged[rec.key] = AccessRecord(rec.key, last.time, last.clock,
                                                   old.hits + rec.hits)
        return merged

    def compact(self, drop: Iterable[str] = ()) -> None:
        """Merge the access records into one file (under the lock), dropping ``drop`` keys."""
        if not self.local:
            return
        with self.lock():
            files = self._access_files()
            merged = self.access()
            for k in drop:
                merged.pop(k, None)
            self.fs.create_dir(f"{self.root}/access", recursive=True)
            name = f"{self.root}/access/{time.time_ns():020d}-{uuid.uuid4().hex}.json"
            self._write_atomic(name, json.dumps([asdict(r) for r in merged.values()]).encode())
            for p in files:
                self.fs.delete_file(p)

    def enforce(self, policy: EvictionPolicy, protect: Iterable[str] = ()) -> list[str]:
        """Evict artifacts chosen by ``policy`` until the store fits ``capacity_bytes``.

        The policy continues from the state persisted with the store and its new state is
        written back, so ageing carries across runs and processes.
        """
        if self.capacity_bytes is None:
            if len(self._access_files()) > COMPACT_AFTER:
                self.compact()
            return []
        with self.lock():
            policy.load_state(self.eviction_state())
            acc = self.access()
            entries = []
            for m in self.entries():
                a = acc.get(m.key)
                entries.append(CacheEntry(m.key, m.size, m.compute_s + m.upstream_cost_s, m.reuse,
                                          a.time if a else m.created, a.hits if a else 0,
                                          a.clock if a else policy.clock))
            victims = policy.victims(entries, self.capacity_bytes, protect=set(protect))
            for k in victims:
                self.delete(k)
            self._write_atomic(f"{self.root}/eviction.json", json.dumps(policy.state()).encode())
        if victims or len(self._access_files()) > COMPACT_AFTER:
            self.compact(drop=victims)
        return victims


def _rebuild_store(uri: str, capacity: int | None, allow_pickle: bool,
                   opts: tuple[int, int]) -> ArtifactStore:
    return ArtifactStore(uri, capacity, allow_pickle=allow_pickle, memory_item_bytes=opts[0],
                         memory_bytes=opts[1])
