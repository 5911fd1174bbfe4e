"""raystack's on-disk caches: where they live, and content hashes of files read only once.

Token shards and weight hashes are keyed by content, so a cache entry is valid wherever it
is found; a file's hash is remembered by (real path, size, modification time), so a corpus or
a base of many gigabytes is hashed once, not in every run and every rank.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

_CHUNK = 1 << 22


def raystack_cache_dir(kind: str) -> Path:
    """raystack's cache for ``kind`` (``tokens``, ``file_hashes``): ``$RAYSTACK_CACHE/<kind>``,
    else ``~/.cache/raystack/<kind>`` (``XDG_CACHE_HOME`` honoured)."""
    root = os.environ.get("RAYSTACK_CACHE") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "raystack")
    return Path(root).expanduser() / kind


def write_json_atomic(path: Path, doc: dict) -> None:
    """Write JSON so that readers see the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file's bytes, remembered on disk by (real path, size, mtime)."""
    real = Path(path).resolve()
    st = real.stat()
    key = f"{real}|{st.st_size}|{st.st_mtime_ns}"
    memo = raystack_cache_dir("file_hashes") / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")
    if memo.is_file():
        try:
            return json.loads(memo.read_text())["sha256"]
        except (OSError, ValueError, KeyError):
            pass
    h = hashlib.sha256()
    with open(real, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    digest = h.hexdigest()
    try:
        write_json_atomic(memo, {"sha256": digest, "file": str(real)})
    except OSError:  # a read-only home: hash again next time
        pass
    return digest
