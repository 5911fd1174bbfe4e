"""Flash checkpoint: copy state to memory in milliseconds, persist it in the background.

``save`` deep-copies a dict of numpy arrays (the only blocking part), then a background thread
writes it to a shared-memory directory (``/dev/shm``: survives the process, not the node) and
then to a disk directory. ``restore`` returns the newest complete snapshot of the two.
"""
from __future__ import annotations

import os
import queue
import threading
import time
from pathlib import Path

import numpy as np


def _default_shm() -> Path:
    return Path("/dev/shm") if Path("/dev/shm").is_dir() else Path("/tmp")


class FlashCheckpointer:
    """Snapshots of one state owner (e.g. one PS) named ``name``."""

    def __init__(self, name: str, disk_dir: str | Path, shm_dir: str | Path | None = None) -> None:
        self.name = name
        self.disk = Path(disk_dir)
        self.shm = Path(shm_dir) if shm_dir else _default_shm() / "raystack-flash"
        self.disk.mkdir(parents=True, exist_ok=True)
        self.shm.mkdir(parents=True, exist_ok=True)
        self._q: queue.Queue = queue.Queue(maxsize=1)
        self._thread = threading.Thread(target=self._writer, daemon=True)
        self._thread.start()
        self.last_copy_s = 0.0
        self.persisted_version = -1

    def save(self, state: dict[str, np.ndarray], version: int) -> float:
        """Copy ``state`` to memory and queue it for persistence; returns the copy seconds.

        If the writer is still busy with an older snapshot, that one is replaced."""
        t0 = time.perf_counter()
        snap = {k: np.array(v, copy=True) for k, v in state.items()}
        snap["__version__"] = np.array(version)
        self.last_copy_s = time.perf_counter() - t0
        try:
            self._q.get_nowait()
        except queue.Empty:
            pass
        self._q.put(snap)
        return self.last_copy_s

    def _write(self, d: Path, snap: dict) -> None:
        tmp = d / f".{self.name}.tmp.npz"
        with open(tmp, "wb") as fh:
            np.savez(fh, **snap)
        os.replace(tmp, d / f"{self.name}.npz")

    def _writer(self) -> None:
        while True:
            snap = self._q.get()
            if snap is None:
                return
            self._write(self.shm, snap)
            self._write(self.disk, snap)
            self.persisted_version = int(snap["__version__"])

    def flush(self, timeout_s: float = 10.0) -> None:
        """Wait until the queued snapshot is persisted."""
        t0 = time.time()
        while not self._q.empty() and time.time() - t0 < timeout_s:
            time.sleep(0.005)
        time.sleep(0.01)

    def restore(self) -> dict[str, np.ndarray] | None:
        """The newest complete snapshot (shared memory first, disk if newer), or None."""
        best, best_v = None, -1
        for d in (self.shm, self.disk):
            p = d / f"{self.name}.npz"
            if not p.exists():
                continue
            try:
                with np.load(p) as z:
                    snap = {k: z[k] for k in z.files}
            except Exception:
                continue  # a torn write: the other tier has a complete one
            v = int(snap.pop("__version__"))
            if v > best_v:
                best, best_v = snap, v
        if best is not None:
            best["__version__"] = np.array(best_v)
        return best

    def remove(self) -> None:
        for d in (self.shm, self.disk):
            (d / f"{self.name}.npz").unlink(missing_ok=True)
