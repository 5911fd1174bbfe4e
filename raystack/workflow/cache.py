"""Cache keys: what makes two executions of a step the same.

key = sha256(code fingerprint, canonical parameters minus ignored ones, digests of the input
artifacts, the cache layout version). The code fingerprint (:mod:`raystack.workflow.codehash`)
covers the step's source, the own code it reaches transitively and the versions of the
libraries it touches. The artifacts themselves live in :mod:`raystack.workflow.store`;
eviction policies in :mod:`raystack.workflow.eviction`; formats in
:mod:`raystack.workflow.formats`.
"""

from __future__ import annotations

import hashlib
from typing import Iterable

CACHE_LAYOUT = "raystack-workflow-2"   # bumped when keys or stored formats change meaning


def cache_key(code_hash: str, params_canonical: str, input_digests: Iterable[str],
              layout: str = CACHE_LAYOUT) -> str:
    """The cache key of one step execution."""
    h = hashlib.sha256()
    for part in (code_hash, params_canonical, *input_digests, layout):
        h.update(part.encode())
        h.update(b"\x00")
    return h.hexdigest()
