"""Typed artifacts that steps hand to each other: files on disk with a kind and their metrics.

A part step does not return "a dict with a path in it": it returns an :class:`Artifact` whose
``kind`` says what the files are (an EDiT checkpoint, a set of exported adapters, a DLRM model
with its AUC), so that the next step can check what it was given and the cache can check that
the files are still there before it serves the record (a record whose files were deleted is a
miss, not a hit). Artifacts are stored as JSON with their kind: no code runs to read one.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

ARTIFACT_TAG = "$artifact"

# The kinds a step may produce or ask for; a consumer names the kinds it accepts.
EDIT_CHECKPOINT = "edit_checkpoint"      # a transformers model directory (save_pretrained)
ADAPTER_SET = "adapter_set"              # peft adapter directories over one base
DLRM_MODEL = "dlrm_model"                # dense + embedding weights (safetensors) and a spec
TABLE_FILE = "table_file"                # a Parquet/CSV file written for people
REPORT_FILE = "report_file"              # a JSON/Markdown/PNG file written for people
SERVED = "served"                        # a live deployment (Ray Serve app)
KINDS = (EDIT_CHECKPOINT, ADAPTER_SET, DLRM_MODEL, TABLE_FILE, REPORT_FILE, SERVED)


class ArtifactError(ValueError):
    """An artifact of the wrong kind, or whose files are missing."""


@dataclass(frozen=True)
class Artifact:
    """Files a step produced: ``kind``, the main ``path``, named extra ``files`` and ``metrics``.

    ``digests`` (file -> sha256 of its first bytes and size) let a reader tell the files it
    was given from files replaced since; :meth:`intact` checks them.
    """

    kind: str
    path: str
    files: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ArtifactError(f"unknown artifact kind {self.kind!r}; expected one of {KINDS}")

    def __getitem__(self, name: str) -> Any:
        """Metrics and info by name, so conditions can test ``step["auc"]``."""
        if name in self.metrics:
            return self.metrics[name]
        if name in self.info:
            return self.info[name]
        if name == "path":
            return self.path
        raise KeyError(f"{self.kind} artifact has no metric or field {name!r}; it has "
                       f"{sorted(self.metrics) + sorted(self.info)}")

    def all_paths(self) -> list[str]:
        return [self.path, *self.files.values()]

    def intact(self) -> bool:
        """True when every file is still there and unchanged since the artifact was made."""
        if self.kind == SERVED:
            return False  # a deployment cannot be checked from files: always redone
        for p in self.all_paths():
            if not os.path.exists(p):
                return False
        return all(file_digest(p) == d for p, d in self.digests.items())

    def expect(self, *kinds: str, what: str = "input") -> "Artifact":
        """Self, or ArtifactError when it is not one of ``kinds``."""
        if self.kind not in kinds:
            raise ArtifactError(f"{what}: expected a {' or '.join(kinds)} artifact, got {self.kind}")
        return self

    def to_json(self) -> dict:
        return {ARTIFACT_TAG: self.kind, "path": self.path, "files": dict(self.files),
                "metrics": dict(self.metrics), "info": dict(self.info),
                "digests": dict(self.digests)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Artifact":
        return cls(kind=d[ARTIFACT_TAG], path=d["path"], files=dict(d.get("files", {})),
                   metrics=dict(d.get("metrics", {})), info=dict(d.get("info", {})),
                   digests=dict(d.get("digests", {})))


def file_digest(path: str, head_bytes: int = 1 << 20) -> str:
    """sha256 of a file's size and first ``head_bytes`` (directories: of their listing)."""
    h = hashlib.sha256()
    if os.path.isdir(path):
        for root, _, names in sorted(os.walk(path)):
            for n in sorted(names):
                p = os.path.join(root, n)
                h.update(f"{os.path.relpath(p, path)}:{os.path.getsize(p)}\n".encode())
        return h.hexdigest()
    h.update(str(os.path.getsize(path)).encode())
    with open(path, "rb") as f:
        h.update(f.read(head_bytes))
    return h.hexdigest()


def make_artifact(kind: str, path: str, *, files: dict[str, str] | None = None,
                  metrics: Mapping[str, float] | None = None,
                  info: Mapping[str, Any] | None = None) -> Artifact:
    """An artifact over existing files, with their digests taken now."""
    files = dict(files or {})
    paths = [path, *files.values()] if kind != SERVED else []
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise ArtifactError(f"{kind}: files {missing} do not exist")
    return Artifact(kind, path, files, {k: float(v) for k, v in (metrics or {}).items()},
                    dict(info or {}), {p: file_digest(p) for p in paths})


def is_artifact_json(d: Any) -> bool:
    return isinstance(d, dict) and ARTIFACT_TAG in d


def find_artifacts(value: Any) -> list[Artifact]:
    """Every artifact inside an output (itself, or in its dicts and lists)."""
    if isinstance(value, Artifact):
        return [value]
    if isinstance(value, dict):
        return [a for v in value.values() for a in find_artifacts(v)]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in find_artifacts(v)]
    return []
