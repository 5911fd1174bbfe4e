"""Where runs keep their files: one storage location (any pyarrow filesystem), one folder per run.

A real cluster has no shared disk by default, and an actor's working directory is not the
driver's. So every path an actor reads or writes comes from a :class:`Storage`: a filesystem
and a base path, built from a URI (``s3://bucket/prefix``, ``gs://...``, ``file:///abs``, or a
plain local path, made absolute here on the driver). A Storage pickles as its URI, so actors
on other nodes open the same location.

Each run of a part writes under its own run id inside the part's output location
(:func:`open_run`): ``<location>/<run id>/``, with ``<location>/latest`` naming the newest run
for convenience. A fresh run never reads or deletes another run's files; resuming names the
run (its id, or ``latest``). Files are published atomically (written under a temporary name,
then renamed), and every run ends with ``summary.json`` saying how it ended (finished, failed,
interrupted), whatever its outcome.
"""
from __future__ import annotations

import io
import json
import logging
import os
import posixpath
import re
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pyarrow.fs as pafs

logger = logging.getLogger(__name__)

LATEST = "latest"            # the pointer file naming the newest run of a location
SUMMARY = "summary.json"     # how a run ended, written whatever its outcome
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

FINISHED, FAILED, INTERRUPTED = "finished", "failed", "interrupted"  # a run's outcomes


class StorageError(ValueError):
    """A storage location or run that cannot be used (the message names the field and path)."""


def _has_scheme(uri: str) -> bool:
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", uri) is not None


class Storage:
    """A pyarrow filesystem and a base path in it; every method takes paths relative to it."""

    def __init__(self, uri: str | os.PathLike, *, field: str = "storage") -> None:
        uri = str(uri)
        if not uri.strip():
            raise StorageError(f"{field}: expected a directory or a filesystem URI, got an empty string")
        if not _has_scheme(uri):
            uri = str(Path(uri).expanduser().resolve())  # absolute on the driver, never an actor's cwd
        try:
            self.fs, base = pafs.FileSystem.from_uri(uri if _has_scheme(uri) else uri)
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors vary by scheme
            raise StorageError(f"{field}: cannot open {uri!r}: {exc}") from None
        self.uri, self.base, self.field = uri, base.rstrip("/") or "/", field

    def __reduce__(self):
        return (Storage, (self.uri,), {"field": self.field})

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.field = state.get("field", "storage")

    def __repr__(self) -> str:
        return f"Storage({self.uri!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Storage) and other.uri == self.uri

    def __hash__(self) -> int:
        return hash(self.uri)

    # ---- paths ---------------------------------------------------------------------------------
    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, pafs.LocalFileSystem)

    def path(self, *parts: str) -> str:
        """The filesystem path of ``parts`` under the base."""
        return posixpath.join(self.base, *[str(p) for p in parts]) if parts else self.base

    def child(self, *parts: str) -> "Storage":
        """The Storage of a sub-folder."""
        joined = "/".join(str(p).strip("/") for p in parts)
        return Storage(self.uri.rstrip("/") + "/" + joined, field=self.field)

    def local_path(self, *parts: str) -> Path | None:
        """A local ``Path`` for ``parts`` when the storage is a local directory, else None."""
        return Path(self.path(*parts)) if self.is_local else None

    # ---- files ---------------------------------------------------------------------------------
    def exists(self, *parts: str) -> bool:
        return self.fs.get_file_info(self.path(*parts)).type != pafs.FileType.NotFound

    def is_dir(self, *parts: str) -> bool:
        return self.fs.get_file_info(self.path(*parts)).type == pafs.FileType.Directory

    def makedirs(self, *parts: str) -> None:
        self.fs.create_dir(self.path(*parts), recursive=True)

    def listdir(self, *parts: str) -> list[str]:
        """Names directly under ``parts`` (empty if it does not exist)."""
        if not self.is_dir(*parts):
            return []
        infos = self.fs.get_file_info(pafs.FileSelector(self.path(*parts), recursive=False))
        return sorted(posixpath.basename(i.path) for i in infos)

    def read_bytes(self, *parts: str) -> bytes:
        with self.fs.open_input_stream(self.path(*parts)) as f:
            return f.read()

    def write_bytes(self, data: bytes, *parts: str) -> str:
        """Write ``data`` atomically: to a temporary name beside the target, then renamed."""
        target = self.path(*parts)
        parent = posixpath.dirname(target)
        self.fs.create_dir(parent, recursive=True)
        tmp = posixpath.join(parent, f".{posixpath.basename(target)}.{uuid.uuid4().hex[:8]}.tmp")
        with self.fs.open_output_stream(tmp) as f:
            f.write(data)
        self.fs.move(tmp, target)
        return target

    def read_json(self, *parts: str) -> Any:
        return json.loads(self.read_bytes(*parts))

    def write_json(self, obj: Any, *parts: str) -> str:
        return self.write_bytes(json.dumps(obj, indent=1, default=str).encode(), *parts)

    def read_text(self, *parts: str) -> str:
        return self.read_bytes(*parts).decode()

    def delete_dir(self, *parts: str) -> None:
        if self.is_dir(*parts):
            self.fs.delete_dir(self.path(*parts))

    def delete_file(self, *parts: str) -> None:
        if self.exists(*parts):
            self.fs.delete_file(self.path(*parts))

    # ---- folders to and from local disk ----------------------------------------------------------
    def upload(self, local: str | os.PathLike, *parts: str) -> str:
        """Copy a local file or folder to ``parts``, atomically for a folder on a local disk
        (copied under a temporary name, then renamed); returns the target path."""
        local = Path(local)
        target = self.path(*parts)
        if local.is_file():
            return self.write_bytes(local.read_bytes(), *parts)
        tmp = f"{target}.{uuid.uuid4().hex[:8]}.tmp"
        self.fs.create_dir(tmp, recursive=True)
        for f in sorted(local.rglob("*")):
            rel = f.relative_to(local).as_posix()
            if f.is_dir():
                self.fs.create_dir(posixpath.join(tmp, rel), recursive=True)
            else:
                pafs.copy_files(str(f), posixpath.join(tmp, rel), source_filesystem=pafs.LocalFileSystem(),
                                destination_filesystem=self.fs)
        self.publish_dir(tmp, target)
        return target

    def download(self, local: str | os.PathLike, *parts: str) -> Path:
        """Copy the folder (or file) at ``parts`` to a local path; returns it."""
        local = Path(local)
        src = self.path(*parts)
        if self.is_local and not self.is_dir(*parts):
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_bytes(self.read_bytes(*parts))
            return local
        local.mkdir(parents=True, exist_ok=True)
        pafs.copy_files(src, str(local), source_filesystem=self.fs,
                        destination_filesystem=pafs.LocalFileSystem())
        return local

    def publish_dir(self, tmp: str, target: str) -> None:
        """Move a finished folder ``tmp`` into place at ``target`` (both full paths): the old
        folder, if any, is moved aside first and removed after, so a reader sees one whole
        folder or the other."""
        old = None
        if self.fs.get_file_info(target).type != pafs.FileType.NotFound:
            old = f"{target}.{uuid.uuid4().hex[:8]}.old"
            self.fs.move(target, old)
        self.fs.move(tmp, target)
        if old is not None:
            self.fs.delete_dir(old)


def run_id_problem(run_id: str, allow_latest: bool = True) -> str | None:
    """Why ``run_id`` cannot name a run folder (None: it can; empty means a new id)."""
    if run_id == LATEST:
        return None if allow_latest else "'latest' names the newest earlier run, not a new one"
    if not run_id or RUN_ID_PATTERN.match(run_id):
        return None
    return f"expected letters, digits, '.', '_' or '-' (at most 128), got {run_id!r}"


def new_run_id() -> str:
    """A fresh run id: the UTC start time and a random suffix (sorts by time, never collides)."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


@dataclass(frozen=True)
class RunDir:
    """One run's folder: ``storage`` is ``<location>/<run_id>``; ``resumed`` if it existed."""

    location: Storage
    run_id: str
    part: str
    resumed: bool = False

    @property
    def storage(self) -> Storage:
        return self.location.child(self.run_id)

    def path(self, *parts: str) -> str:
        return self.storage.path(*parts)

    def local_path(self, *parts: str) -> Path | None:
        return self.storage.local_path(*parts)

    def tracking_dir(self) -> Path:
        """A local folder for files written by local libraries (TensorBoard event files): the
        run's own folder on a local disk, else a folder under the system's temp directory."""
        local = self.local_path()
        if local is not None:
            return local
        import tempfile
        return Path(tempfile.gettempdir()) / "raystack-runs" / self.part / self.run_id

    def summary(self) -> dict | None:
        """The run's summary.json, if it was written."""
        return self.storage.read_json(SUMMARY) if self.storage.exists(SUMMARY) else None

    def write_summary(self, status: str, *, error: str | None = None,
                      metrics: Mapping[str, float] | None = None, **info: Any) -> str:
        """How the run ended (``finished``, ``failed``, ``interrupted``), written atomically."""
        doc = {"run_id": self.run_id, "part": self.part, "status": status, "error": error,
               "resumed": self.resumed, "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "metrics": dict(metrics or {}), **info}
        return self.storage.write_json(doc, SUMMARY)


def latest_run(location: Storage) -> str | None:
    """The run id ``latest`` names in a location, or None."""
    return location.read_text(LATEST).strip() if location.exists(LATEST) else None


def find_run(location: str | Storage, run_id: str, *, field: str = "out_dir",
             run_id_field: str = "run_id") -> RunDir:
    """The existing run ``run_id`` (or ``latest``) names in ``location``; creates nothing.
    Raises StorageError naming the field when there is none."""
    loc = location if isinstance(location, Storage) else Storage(location, field=field)
    if not run_id:
        raise StorageError(f"{run_id_field}: name the run to resume (a run id in {loc.uri}, or 'latest')")
    rid = latest_run(loc) if run_id == LATEST else run_id
    if rid is None or not RUN_ID_PATTERN.match(rid) or not loc.is_dir(rid):
        have = [n for n in loc.listdir() if loc.is_dir(n)]
        raise StorageError(f"{run_id_field}: no run {run_id!r} in {loc.uri} to resume "
                           f"(runs there: {have[-5:] or 'none'})")
    return RunDir(loc, rid, "", resumed=True)


def open_run(location: str | Storage, part: str, *, run_id: str = "", resume: bool = False,
             field: str = "out_dir", run_id_field: str = "run_id") -> RunDir:
    """The run folder of a part's run inside ``location``.

    Fresh (``resume`` False): ``run_id`` or a new id; a folder that already exists is refused
    (a fresh run never writes into another run's files). Resume: ``run_id`` names the run
    (``latest``: the newest); it must exist. Either way ``latest`` then names this run.
    """
    loc = location if isinstance(location, Storage) else Storage(location, field=field)
    problem = run_id_problem(run_id)
    if problem:
        raise StorageError(f"{run_id_field}: {problem}")
    if resume:
        run = RunDir(loc, find_run(loc, run_id, run_id_field=run_id_field).run_id, part, resumed=True)
    else:
        if run_id == LATEST:
            raise StorageError(f"{run_id_field}: 'latest' names an earlier run; set resume to continue it")
        rid = run_id or new_run_id()
        if loc.exists(rid):
            raise StorageError(f"{run_id_field}: run {rid!r} already exists in {loc.uri}; "
                               "resume it or choose another run id")
        loc.makedirs(rid)
        loc.write_json({"run_id": rid, "part": part,
                        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, rid, "run.json")
        run = RunDir(loc, rid, part)
    loc.write_bytes(run.run_id.encode(), LATEST)
    logger.info("%s run %s in %s%s", part, run.run_id, loc.uri, " (resumed)" if run.resumed else "")
    return run


def torch_bytes(obj: Any) -> bytes:
    """``obj`` serialised with ``torch.save`` (to write through a Storage)."""
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def torch_load_bytes(data: bytes, map_location: Any = None) -> Any:
    import torch

    return torch.load(io.BytesIO(data), weights_only=False, map_location=map_location)
