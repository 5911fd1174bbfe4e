"""Straggler detection: a worker slower than ``factor`` x the median of the others."""
from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass
class StragglerDetector:
    """Flags workers whose recent rate (rows/s) is below median(others) / factor.

    ``min_rows`` rows must have been seen from a worker before it can be judged, so a worker
    that just started (and is still importing torch) is not flagged."""

    factor: float = 2.0
    min_rows: int = 1

    def find(self, rates: dict[str, tuple[float, int]]) -> list[str]:
        """``rates`` maps worker id -> (rows per second, rows observed). Returns stragglers."""
        judged = {w: r for w, (r, n) in rates.items() if n >= self.min_rows}
        if len(judged) < 2:
            return []
        out = []
        for w, r in judged.items():
            others = [x for v, x in judged.items() if v != w]
            if r * self.factor < statistics.median(others):
                out.append(w)
        return out
