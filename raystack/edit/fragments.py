"""Staggered fragments (``sync.fragments``): the blocks split into F contiguous groups, each synced
at its own point of the H-step window, so one sync's wire carries about 1/F of the model.

The idea is Streaming DiLoCo's: a fragment's pseudo-gradient still covers H inner steps of
each replica, but the F all-reduces of a window are spread over it instead of sent together,
so a link r times slower than a step needs only about r / F steps of delay (``sync.overlap_steps``)
to hide behind, and a shorter delay costs less loss (docs/edit.md). With F = 1 there is one
fragment, synced every H steps: EDiT as before.
"""
from __future__ import annotations


def split_fragments(sizes: list[int], count: int) -> list[list[int]]:
    """Split blocks (their element counts, in forward order) into ``count`` contiguous, non-empty
    groups whose largest total is as small as possible (the slowest fragment sets the wire time).

    >>> split_fragments([10, 40, 40, 40, 40, 10], 4)
    [[0, 1], [2], [3], [4, 5]]
    """
    if not 1 <= count <= len(sizes):
        raise ValueError(f"sync.fragments must be in [1, {len(sizes)}] (the model's blocks), got {count}")
    lo, hi = max(sizes), sum(sizes)
    while lo < hi:                        # the smallest cap that still fits in `count` groups
        cap = (lo + hi) // 2
        if len(_greedy(sizes, cap)) <= count:
            hi = cap
        else:
            lo = cap + 1
    groups = _greedy(sizes, lo)
    while len(groups) < count:            # fewer groups fit under the cap: split the largest
        i = max((i for i, g in enumerate(groups) if len(g) > 1), key=lambda i: sum(sizes[b] for b in groups[i]))
        g = groups[i]
        groups[i:i + 1] = [g[:len(g) // 2], g[len(g) // 2:]]
    return groups


def _greedy(sizes: list[int], cap: int) -> list[list[int]]:
    groups: list[list[int]] = [[]]
    total = 0
    for b, n in enumerate(sizes):
        if groups[-1] and total + n > cap:
            groups.append([])
            total = 0
        groups[-1].append(b)
        total += n
    return groups


def fragment_offsets(h: int, count: int) -> list[int]:
    """The step of the window (1..h, counted since the last fragment's sync) at which each
    fragment syncs: evenly spread, the last one at h (where EDiT syncs every block)."""
    if not 1 <= count <= h:
        raise ValueError(f"sync.fragments must be in [1, h={h}], got {count}")
    return [round((f + 1) * h / count) for f in range(count)]


def fragment_due(steps_since_sync: int, offsets: list[int]) -> int | None:
    """The fragment whose sync is due after ``steps_since_sync`` steps of the window, or None."""
    for f, at in enumerate(offsets):
        if steps_since_sync == at:
            return f
    if steps_since_sync > offsets[-1]:    # past the window's end (a resumed run): the last one
        return len(offsets) - 1
    return None
