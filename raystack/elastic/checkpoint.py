"""Flash checkpoint: copy state in memory in milliseconds, persist it to storage in the background.

``save(state, version)`` deep-copies a dict of numpy arrays (the only blocking part); a
background thread then writes it through the run's :class:`~raystack.runtime.storage.Storage`
(any pyarrow filesystem: never the memory or the disk of the node that may die) as
``<name>/v<version>.npz``, atomically, keeping the newest ``keep`` versions.
``persisted_version`` says which version is safe to rely on; ``load(version)`` reads one back.
"""
from __future__ import annotations

import io
import queue
import threading
import time

import numpy as np

from raystack.runtime.storage import Storage

KEEP_VERSIONS = 3  # versions kept per owner: the one relied on and those being written


def _file(version: int) -> str:
    return f"v{version:010d}.npz"


class FlashCheckpointer:
    """Snapshots of one state owner (e.g. one PS) named ``name``, in ``storage``."""

    def __init__(self, name: str, storage: Storage, keep: int = KEEP_VERSIONS) -> None:
        self.name, self.storage, self.keep = name, storage, keep
        self._q: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._writer, daemon=True)
        self._thread.start()
        self.last_copy_s = 0.0
        self.persisted_version = -1
        self.error: str | None = None

    def save(self, state: dict[str, np.ndarray], version: int) -> float:
        """Copy ``state`` in memory and queue it for persistence; returns the copy seconds."""
        t0 = time.perf_counter()
        snap = {k: np.array(v, copy=True) for k, v in state.items()}
        self.last_copy_s = time.perf_counter() - t0
        self._q.put((version, snap))
        return self.last_copy_s

    def _writer(self) -> None:
        while True:
            version, snap = self._q.get()
            try:
                buf = io.BytesIO()
                np.savez(buf, **snap)
                self.storage.write_bytes(buf.getvalue(), self.name, _file(version))
                self.persisted_version = max(self.persisted_version, version)
                for old in self.versions()[:-self.keep]:
                    self.storage.delete_file(self.name, _file(old))
            except Exception as exc:  # noqa: BLE001 - reported by the owner's stats
                self.error = f"{type(exc).__name__}: {exc}"
            finally:
                self._q.task_done()

    def flush(self) -> int:
        """Wait until every queued snapshot is persisted; returns the newest persisted version."""
        self._q.join()
        return self.persisted_version

    def versions(self) -> list[int]:
        """The versions on storage, oldest first."""
        return sorted(int(n[1:-4]) for n in self.storage.listdir(self.name)
                      if n.startswith("v") and n.endswith(".npz"))

    def load(self, version: int | None = None) -> dict[str, np.ndarray] | None:
        """Snapshot ``version`` (default: the newest on storage), or None if there is none."""
        if version is None:
            have = self.versions()
            if not have:
                return None
            version = have[-1]
        if not self.storage.exists(self.name, _file(version)):
            return None
        with np.load(io.BytesIO(self.storage.read_bytes(self.name, _file(version))), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
