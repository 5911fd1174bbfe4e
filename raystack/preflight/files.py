"""Open and check the files a job will read, before any actor starts.

Each check reads only what it needs (a header, a footer, the first records) and raises
`PreflightError` naming the config field and the file, in one line: a JSONL file that is
binary or not JSON, a Parquet file that is corrupt, empty or lacks a column, a safetensors
file whose header or size is wrong (truncated, corrupted), a checkpoint directory without its
weights or config.
"""
from __future__ import annotations

import json
import math
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from raystack.config import ConfigError
from raystack.data.suffixes import RECORD_SUFFIXES

HEAD_BYTES = 65_536            # bytes read to tell text from binary
FIRST_RECORDS = 8              # records read from a data file to check its fields
MAX_SAFETENSORS_HEADER = 100 * 2**20   # safetensors refuses larger headers too
SAFETENSORS_DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


class PreflightError(ConfigError):
    """A job cannot run as configured: a file, a size, or the cluster's resources; names the
    config field (and the file) in one line."""


@dataclass(frozen=True)
class WeightsInfo:
    """What a checkpoint's weight files hold, read from their headers."""

    parameters: int
    bytes: int
    files: tuple[str, ...]


def _fail(field: str, message: str) -> PreflightError:
    return PreflightError(field, message)


def check_text_head(path: Path, field: str, what: str = "text") -> bytes:
    """The first bytes of a file that must be UTF-8 text: refuse empty or binary files."""
    try:
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError as exc:
        raise _fail(field, f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not head:
        raise _fail(field, f"{path} is empty")
    if b"\x00" in head:
        raise _fail(field, f"{path} is binary, not {what}")
    try:  # a multi-byte character may be cut at the end of the head
        head[: len(head) - 4 if len(head) == HEAD_BYTES else len(head)].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(field, f"{path} is not UTF-8 {what} (byte {exc.start}: {exc.reason})") from None
    return head


def read_json(path: Path, field: str, kind: type, what: str) -> Any:
    """A whole JSON file that must hold a ``kind`` (``what`` names it in the error)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _fail(field, f"{path} is not valid JSON: {exc}") from None
    except OSError as exc:
        raise _fail(field, f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not isinstance(data, kind):
        raise _fail(field, f"{path} must hold {what}, got {type(data).__name__}")
    return data


def read_first_records(path: Path, field: str, n: int = FIRST_RECORDS) -> list[dict]:
    """The first ``n`` records of a .jsonl, .json (a list of objects) or .parquet file,
    after checking that the file is what its suffix says and not empty."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _parquet_first_rows(path, field, n)
    if suffix not in RECORD_SUFFIXES:
        raise _fail(field, f"{path}: unsupported format {suffix!r}; expected {', '.join(RECORD_SUFFIXES)}")
    check_text_head(path, field, "JSON text")
    records: list[Any] = []
    if suffix == ".json":
        records = read_json(path, field, list, "a JSON list of records")[:n]
    else:
        with path.open(encoding="utf-8", errors="strict") as fh:
            for number, line in enumerate(fh, 1):
                if len(records) >= n:
                    break
                if not line.strip():
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise _fail(field, f"{path} line {number} is not valid JSON: {exc}") from None
    if not records:
        raise _fail(field, f"{path} holds no records")
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise _fail(field, f"{path} record {i + 1} is a {type(rec).__name__}, not an object")
    return records


def _parquet_first_rows(path: Path, field: str, n: int) -> list[dict]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a bad footer
        raise _fail(field, f"{path} is not a readable Parquet file ({_first_line(exc)})") from None
    if pf.metadata.num_rows == 0:
        raise _fail(field, f"{path} is an empty Parquet file (0 rows)")
    try:
        batch = next(pf.iter_batches(batch_size=n))
    except Exception as exc:
        raise _fail(field, f"{path}: its first rows cannot be read ({_first_line(exc)})") from None
    return batch.to_pylist()


def parquet_columns(path: Path, field: str) -> tuple[list[str], int]:
    """(column names, rows) of a Parquet file, from its footer."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:
        raise _fail(field, f"{path} is not a readable Parquet file ({_first_line(exc)})") from None
    return list(pf.schema_arrow.names), pf.metadata.num_rows


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def require_fields(records: Sequence[dict], fields: Sequence[str], path: Path, field: str) -> None:
    """Every record holds every one of ``fields``; the error names the first missing one."""
    for i, rec in enumerate(records):
        for name in fields:
            if name not in rec:
                have = ", ".join(sorted(map(str, rec))) or "none"
                raise _fail(field, f"{path} record {i + 1} has no field {name!r} (fields: {have})")


def check_safetensors(path: Path, field: str) -> WeightsInfo:
    """Check a .safetensors file's header against its size: every tensor's dtype, shape and
    byte range consistent, the ranges covering the data exactly (a truncated or padded file
    fails)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                raise _fail(field, f"{path} is not a safetensors file ({size} bytes, no header)")
            (header_len,) = struct.unpack("<Q", raw)
            if header_len > min(MAX_SAFETENSORS_HEADER, size - 8):
                raise _fail(field, f"{path} is corrupt: header of {header_len} bytes in a file of {size}")
            header = json.loads(fh.read(header_len))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _fail(field, f"{path} is corrupt: its header is not JSON ({exc})") from None
    except OSError as exc:
        raise _fail(field, f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not isinstance(header, dict):
        raise _fail(field, f"{path} is corrupt: its header is not a JSON object")
    data_len, end, params = size - 8 - header_len, 0, 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (a, b) = info["dtype"], info["shape"], info["data_offsets"]
            count = math.prod(int(d) for d in shape)
            expected = count * SAFETENSORS_DTYPE_BYTES[dtype]
        except (KeyError, TypeError, ValueError):
            raise _fail(field, f"{path} is corrupt: bad header entry for tensor {name!r}") from None
        if b - a != expected or a < 0:
            raise _fail(field, f"{path} is corrupt: tensor {name!r} ({dtype} {shape}) spans {b - a} bytes, "
                        f"expected {expected}")
        if b > data_len:
            raise _fail(field, f"{path} is truncated: tensor {name!r} ends at byte {b} of {data_len} data bytes")
        end, params = max(end, b), params + count
    if end != data_len:
        raise _fail(field, f"{path} is corrupt: its tensors cover {end} of its {data_len} data bytes")
    return WeightsInfo(params, data_len, (str(path),))


def check_torch_file(path: Path, field: str) -> None:
    """A ``torch.save`` file (a zip archive): its directory must be readable (not truncated)."""
    try:
        with zipfile.ZipFile(path) as zf:
            if not zf.namelist():
                raise _fail(field, f"{path} is an empty archive")
    except zipfile.BadZipFile:
        raise _fail(field, f"{path} is corrupt or truncated (not a torch.save archive)") from None
    except OSError as exc:
        raise _fail(field, f"{path}: cannot be read ({exc.strerror or exc})") from None


def check_model_dir(path: Path, field: str) -> WeightsInfo | None:
    """A transformers checkpoint directory: config.json parses, the weight files exist and
    their headers agree with their sizes. Returns what the weights hold (None: no weights
    yet, e.g. a config-only directory, or weights in a pickled format that has no header)."""
    config = path / "config.json"
    if not config.is_file():
        raise _fail(field, f"{path} has no config.json; not a transformers checkpoint")
    read_json(config, field, dict, "a JSON object")
    single = path / "model.safetensors"
    if single.is_file():
        return check_safetensors(single, field)
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            raise _fail(field, f"{index} is not a valid safetensors index (no weight_map)") from None
        infos = []
        for name in shards:
            shard = path / name
            if not shard.is_file():
                raise _fail(field, f"{index} lists {name}, which is missing")
            infos.append(check_safetensors(shard, field))
        return WeightsInfo(sum(i.parameters for i in infos), sum(i.bytes for i in infos),
                           tuple(f for i in infos for f in i.files))
    pickled = path / "pytorch_model.bin"
    if pickled.is_file():
        check_torch_file(pickled, field)
        return None
    if not any((path / f).exists() for f in WEIGHT_FILES):
        raise _fail(field, f"{path} has a config.json but no weights ({', '.join(WEIGHT_FILES[:3])})")
    return None
