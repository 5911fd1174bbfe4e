"""How step outputs become bytes in the artifact store, and back: data formats only.

Formats: Parquet for Arrow tables and pandas frames, safetensors for tensors and numpy arrays,
JSON for plain values and typed artifacts, and a *bundle* for a dict or list mixing them (a JSON
document whose table and tensor leaves point into Parquet/safetensors blobs appended to it).
Reading any of these runs no code. Pickle is the one format that can run code when read: it is
written and read only when the store was opened with ``allow_pickle=True`` (see
:class:`raystack.workflow.store.ArtifactStore`); otherwise an output that fits no data format is
not stored (the step re-runs next time) and a pickled artifact found in the store is refused.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from raystack.workflow.artifacts import ARTIFACT_TAG, Artifact

PICKLE = "pickle"
DATA_FORMATS = ("parquet", "parquet-pandas", "safetensors-tensor", "safetensors-dict",
                "safetensors-numpy", "json", "bundle")
_BLOB = "$blob"
_HEADER = struct.Struct("<Q")


class UnstorableOutput(TypeError):
    """An output that fits no data format while pickle is not allowed."""


class UnsafeArtifact(Exception):
    """A stored artifact in a format that runs code when read (pickle), refused."""


def _pandas():
    try:
        import pandas as pd
        return pd
    except ImportError:  # pragma: no cover
        return None


def _torch():
    try:
        import torch
        return torch
    except ImportError:  # pragma: no cover
        return None


def _table_bytes(t: pa.Table) -> bytes:
    buf = pa.BufferOutputStream()
    pq.write_table(t, buf)
    return buf.getvalue().to_pybytes()


def _leaf(value: Any) -> tuple[str, bytes] | None:
    """(format, bytes) for a table/tensor/array value, or None for anything else."""
    if isinstance(value, pa.Table):
        return "parquet", _table_bytes(value)
    pd = _pandas()
    if pd is not None and isinstance(value, pd.DataFrame):
        return "parquet-pandas", _table_bytes(pa.Table.from_pandas(value, preserve_index=False))
    torch = _torch()
    if torch is not None and isinstance(value, torch.Tensor):
        from safetensors.torch import save
        return "safetensors-tensor", save({"t": value.detach().cpu().contiguous()})
    if isinstance(value, np.ndarray) and value.dtype != object:
        from safetensors.numpy import save as np_save
        return "safetensors-numpy", np_save({"a": np.ascontiguousarray(value)})
    return None


def _json_equal(v: Any) -> bool:
    try:
        return json.loads(json.dumps(v, allow_nan=False)) == v
    except (TypeError, ValueError):
        return False


class _Bundler:
    """Encodes a nested dict/list of JSON values, artifacts, tables and tensors."""

    def __init__(self) -> None:
        self.blobs: list[tuple[str, bytes]] = []

    def encode(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return v
        if isinstance(v, (np.integer, np.floating)):
            return v.item()
        if isinstance(v, Artifact):
            return v.to_json()
        if isinstance(v, dict):
            if not all(isinstance(k, str) and not k.startswith("$") for k in v):
                raise UnstorableOutput("dict keys must be strings not starting with '$'")
            return {k: self.encode(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [self.encode(x) for x in v]
        leaf = _leaf(v)
        if leaf is None:
            raise UnstorableOutput(f"a value of type {type(v).__name__}")
        self.blobs.append(leaf)
        return {_BLOB: len(self.blobs) - 1, "format": leaf[0]}

    def pack(self, doc: Any) -> bytes:
        head = json.dumps({"doc": doc, "sizes": [len(b) for _, b in self.blobs]},
                          sort_keys=True).encode()
        return _HEADER.pack(len(head)) + head + b"".join(b for _, b in self.blobs)


def _decode(v: Any, blobs: list[tuple[str, bytes]]) -> Any:
    if isinstance(v, dict):
        if _BLOB in v:
            fmt, data = blobs[v[_BLOB]]
            return deserialize(fmt, data)
        if ARTIFACT_TAG in v:
            return Artifact.from_json(v)
        return {k: _decode(x, blobs) for k, x in v.items()}
    if isinstance(v, list):
        return [_decode(x, blobs) for x in v]
    return v


def serialize(value: Any, allow_pickle: bool = False) -> tuple[str, bytes]:
    """(format, bytes) for a step output; UnstorableOutput when only pickle would do and
    ``allow_pickle`` is False."""
    leaf = _leaf(value)
    if leaf is not None:
        return leaf
    torch = _torch()
    if (torch is not None and isinstance(value, dict) and value
            and all(isinstance(k, str) for k in value)
            and all(isinstance(v, torch.Tensor) for v in value.values())):
        from safetensors.torch import save
        return "safetensors-dict", save({k: v.detach().cpu().contiguous() for k, v in value.items()})
    if not isinstance(value, Artifact) and _json_equal(value):
        return "json", json.dumps(value, sort_keys=True).encode()
    try:
        b = _Bundler()
        doc = b.encode(value)
        return "bundle", b.pack(doc)
    except UnstorableOutput as e:
        if not allow_pickle:
            raise UnstorableOutput(
                f"output of type {type(value).__name__} fits no data format (Parquet, "
                f"safetensors, JSON): {e}; it is not cached (see docs/workflow.md, "
                f"'Cache formats' to opt in to pickle)") from None
    try:
        return PICKLE, pickle.dumps(value, protocol=5)
    except (pickle.PicklingError, AttributeError, TypeError):
        from ray import cloudpickle  # closures and local classes
        return PICKLE, cloudpickle.dumps(value)


def deserialize(fmt: str, data: bytes, allow_pickle: bool = False) -> Any:
    """The value stored as ``(fmt, data)``; UnsafeArtifact for pickle unless allowed."""
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
    if fmt == "bundle":
        (n,) = _HEADER.unpack_from(data)
        head = json.loads(data[_HEADER.size:_HEADER.size + n])
        blobs, pos = [], _HEADER.size + n
        for (fmt_i, size) in zip(_blob_formats(head["doc"]), head["sizes"]):
            blobs.append((fmt_i, data[pos:pos + size]))
            pos += size
        return _decode(head["doc"], blobs)
    if fmt == PICKLE:
        if not allow_pickle:
            raise UnsafeArtifact("a pickled artifact runs code when read; refused (the store "
                                 "was not opened with allow_pickle=True)")
        return pickle.loads(data)
    raise ValueError(f"unknown artifact format {fmt!r}")


def _blob_formats(doc: Any) -> list[str]:
    """Blob formats in blob-index order."""
    found: dict[int, str] = {}

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            if _BLOB in v:
                found[v[_BLOB]] = v["format"]
                return
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(doc)
    return [found[i] for i in sorted(found)]


def digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def output_digest(value: Any) -> str:
    """A digest of an output for cache keys downstream, whether or not it can be stored
    (an unstorable value is hashed from its pickle bytes, which are never read back)."""
    try:
        return digest_bytes(serialize(value)[1])
    except UnstorableOutput:
        from ray import cloudpickle
        try:
            return digest_bytes(cloudpickle.dumps(value))
        except Exception:  # noqa: BLE001 - unhashable: a digest that never matches
            return "unhashable-" + digest_bytes(repr((id(value), math.pi)).encode())
