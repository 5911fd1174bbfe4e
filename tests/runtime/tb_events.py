"""Read TensorBoard event files back: the TFRecord framing and the Event protocol buffer."""
from __future__ import annotations

import struct
from pathlib import Path


def read_scalars(log_dir: str | Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar in the event files under ``log_dir``: tag -> [(step, value), ...]."""
    from tensorboardX.proto import event_pb2

    out: dict[str, list[tuple[int, float]]] = {}
    files = sorted(Path(log_dir).rglob("events.out.tfevents.*"))
    assert files, f"no event files under {log_dir}"
    for f in files:
        data = f.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            record = data[pos + 12:pos + 12 + length]  # skip the length's CRC
            pos += 12 + length + 4  # and the record's CRC
            event = event_pb2.Event.FromString(record)
            for v in event.summary.value:
                if v.HasField("simple_value"):
                    out.setdefault(v.tag, []).append((event.step, v.simple_value))
    return out
