"""Bounded-cache eviction: which artifacts to drop so the store fits its capacity.

Pure policies over :class:`CacheEntry` records: LRU, and Couler's score (rebuild cost x reuse /
size with greedy-dual ageing). The policy's state (the Couler clock) is persisted with the store
(:meth:`raystack.workflow.store.ArtifactStore.enforce`), so ageing carries across runs.
:func:`replay` runs a policy over a recorded or simulated access trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# -- eviction policies (pure) --------------------------------------------------------------
@dataclass
class CacheEntry:
    """What a policy knows about a cached artifact."""

    key: str
    size: int
    rebuild_cost_s: float     # seconds to recompute it, its missing upstream included
    reuse: int                # how many downstream steps consume it
    last_access: float
    hits: int = 0
    base: float = 0.0         # Couler: the policy's clock when last used (ages stale entries)


class EvictionPolicy:
    """Chooses which artifacts to evict so the cache fits its capacity."""

    name = "base"

    def state(self) -> dict[str, Any]:
        """What must outlive this object (persisted with the store)."""
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue from a persisted :meth:`state`."""

    @property
    def clock(self) -> float:
        """The ageing clock new entries start from (0 for policies without ageing)."""
        return 0.0

    def order(self, entries: list[CacheEntry]) -> list[CacheEntry]:
        """Entries in eviction order (first evicted first)."""
        raise NotImplementedError

    def victims(self, entries: list[CacheEntry], capacity: int,
                protect: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
        total = sum(e.size for e in entries)
        out = []
        for e in self.order([e for e in entries if e.key not in protect]):
            if total <= capacity:
                break
            out.append(e.key)
            total -= e.size
        return out


class LRUPolicy(EvictionPolicy):
    """Least recently used first."""

    name = "lru"

    def order(self, entries: list[CacheEntry]) -> list[CacheEntry]:
        return sorted(entries, key=lambda e: (e.last_access, e.key))


class CoulerPolicy(EvictionPolicy):
    """Couler's score: keep what is costly to rebuild and reused often, per byte.

    value = rebuild_cost_s * (reuse + hits) / size, the lowest evicted first. So that entries
    nobody asks for any more (e.g. superseded versions) do not stay forever on past hits, the
    score is ``base + value`` where ``base`` is the policy's clock when the entry was last used
    and the clock rises to each evicted entry's score (greedy-dual ageing).
    """

    name = "couler"

    def __init__(self) -> None:
        self._clock = 0.0

    @property
    def clock(self) -> float:
        return self._clock

    def state(self) -> dict[str, Any]:
        return {"policy": self.name, "clock": self._clock}

    def load_state(self, state: dict[str, Any]) -> None:
        if state.get("policy", self.name) == self.name:
            self._clock = float(state.get("clock", 0.0))

    @staticmethod
    def value(e: CacheEntry) -> float:
        return e.rebuild_cost_s * max(e.reuse, 1) / max(e.size, 1)

    def score(self, e: CacheEntry) -> float:
        return e.base + self.value(e)

    def order(self, entries: list[CacheEntry]) -> list[CacheEntry]:
        return sorted(entries, key=lambda e: (self.score(e), e.last_access, e.key))

    def victims(self, entries: list[CacheEntry], capacity: int,
                protect: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
        out = super().victims(entries, capacity, protect)
        by_key = {e.key: e for e in entries}
        for k in out:
            self._clock = max(self._clock, self.score(by_key[k]))
        return out


POLICIES: dict[str, type[EvictionPolicy]] = {"lru": LRUPolicy, "couler": CoulerPolicy}


@dataclass
class TraceAccess:
    """One artifact request in a replayed trace."""

    key: str
    size: int
    compute_s: float
    reuse: int = 1


def replay(trace: list[TraceAccess], capacity: int, policy: EvictionPolicy) -> dict[str, float]:
    """Replay a trace through a cache of ``capacity`` bytes; a miss recomputes the artifact.

    Returns {"recompute_s", "hits", "misses"}.
    """
    cache: dict[str, CacheEntry] = {}
    recompute, hits, misses = 0.0, 0, 0
    for t, a in enumerate(trace):
        clock = policy.clock
        e = cache.get(a.key)
        if e is not None:
            hits += 1
            e.hits += 1
            e.last_access = t
            e.base = clock
            continue
        misses += 1
        recompute += a.compute_s
        if a.size > capacity:
            continue
        cache[a.key] = CacheEntry(a.key, a.size, a.compute_s, a.reuse, t, 0, clock)
        for k in policy.victims(list(cache.values()), capacity, protect={a.key}):
            del cache[k]
    return {"recompute_s": recompute, "hits": hits, "misses": misses,
            "hit_rate": hits / max(1, hits + misses)}

