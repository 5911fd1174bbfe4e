"""The pseudo-gradient penalty: per-block anomaly elimination, weighting and clipping.

For one block and one sync, replica i has pseudo-gradient Δ_i = θ_sync − θ_i with norm g_i.
1. anomaly elimination: an EWMA of g (mean and variance, per block) gives z = (g − μ)/σ;
   after ``warmup_syncs`` syncs a replica with z > ``z_threshold`` is dropped;
2. weights: w = softmax(−ĝ/τ) over the inliers, ĝ = g / mean(g) (scale-free);
   A-EDiT multiplies by the steps each replica ran since the last sync, then renormalises;
3. clipping of the averaged Δ̄ to norm ≤ φ (:func:`clip_coefficient`);
4. if every replica is an outlier the block skips its outer step (weights all zero); the
   norms still update the EWMA then, so a shift shared by all replicas is learned.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class EWMA:
    """Exponentially weighted running mean and variance of one block's pseudo-gradient norm."""

    alpha: float = 0.02
    mean: float = 0.0
    var: float = 0.0
    count: int = 0

    def zscore(self, g: float) -> float:
        """z = (g − μ)/σ; 0 before any update or while σ is 0."""
        if self.count == 0:
            return 0.0
        std = math.sqrt(self.var)
        if std <= 1e-12:
            return 0.0
        return (g - self.mean) / std

    def update(self, g: float) -> None:
        """Fold one observation in."""
        # rate max(α, 1/(n+1)): a plain running mean/variance until n reaches 1/α, then the
        # EWMA; a bare EWMA starts with σ ≈ 0 and flags every early norm as an outlier
        rate = max(self.alpha, 1.0 / (self.count + 1))
        if self.count == 0:
            self.mean, self.var = g, 0.0
        else:
            diff = g - self.mean
            incr = rate * diff
            self.mean += incr
            self.var = (1.0 - rate) * (self.var + diff * incr)
        self.count += 1


@dataclass
class BlockDecision:
    """What the penalty decided for one block at one sync."""

    weights: list[float]          # per replica, 0 for outliers; sum 1 unless skipped
    outliers: list[int]           # replica indices dropped
    skip: bool                    # every replica was an outlier: no outer step


def softmax_weights(norms: list[float], temperature: float) -> list[float]:
    """softmax(−ĝ/τ) with ĝ = g / mean(g): the weights do not depend on the model's scale."""
    mean = sum(norms) / len(norms)
    scaled = [(-(g / mean) / temperature) if mean > 0 else 0.0 for g in norms]
    top = max(scaled)
    exps = [math.exp(s - top) for s in scaled]
    total = sum(exps)
    return [e / total for e in exps]


@dataclass
class PseudoGradientPenalty:
    """Penalty state for ``num_blocks`` blocks (one EWMA each) and its decision rule.

    Every rank keeps its own copy; the inputs (all replicas' norms) are the same everywhere,
    so the copies stay identical without communication.
    """

    num_blocks: int
    enabled: bool = True
    alpha: float = 0.02
    z_threshold: float = 3.0
    warmup_syncs: int = 10
    temperature: float = 1.0
    clip: float = 5.0
    stats: list[EWMA] = field(default_factory=list)
    syncs: list[int] = field(default_factory=list)      # syncs seen per block (for the warm-up)

    def __post_init__(self) -> None:
        if not self.stats:
            self.stats = [EWMA(self.alpha) for _ in range(self.num_blocks)]
        if not self.syncs:
            self.syncs = [0] * self.num_blocks

    def decide(self, block: int, norms: list[float],
               steps: list[int] | None = None) -> BlockDecision:
        """Weights for one block given each replica's norm (and A-EDiT step counts).

        Updates the block's EWMA with the inliers' norms. With the penalty disabled the
        weights are uniform (or proportional to ``steps``) and nothing is dropped.
        """
        n = len(norms)
        if not self.enabled:
            base = [1.0] * n
            return BlockDecision(_normalise(_times(base, steps)), [], False)
        ewma = self.stats[block]
        armed = self.syncs[block] >= self.warmup_syncs
        self.syncs[block] += 1
        outliers = [i for i, g in enumerate(norms)
                    if (not math.isfinite(g)) or (armed and ewma.zscore(g) > self.z_threshold)]
        inliers = [i for i in range(n) if i not in outliers]
        if not inliers:
            # skip the outer step, but learn the new level: a lasting shift of every replica's
            # norm (e.g. a learning-rate ramp) must not freeze the block for good
            for g in norms:
                if math.isfinite(g):
                    ewma.update(g)
            return BlockDecision([0.0] * n, outliers, True)
        soft = softmax_weights([norms[i] for i in inliers], self.temperature)
        weights = [0.0] * n
        for i, w in zip(inliers, soft):
            weights[i] = w
        weights = _normalise(_times(weights, steps))
        for i in inliers:
            ewma.update(norms[i])
        return BlockDecision(weights, outliers, False)

    def state_dict(self) -> dict:
        """Plain-data state for checkpoints."""
        return {"stats": [(s.mean, s.var, s.count) for s in self.stats], "syncs": list(self.syncs)}

    def load_state_dict(self, state: dict) -> None:
        """Restore from :meth:`state_dict`."""
        self.stats = [EWMA(self.alpha, m, v, c) for m, v, c in state["stats"]]
        self.syncs = list(state["syncs"])


def clip_coefficient(norm: float, max_norm: float) -> float:
    """Δ̄ ← Δ̄·min(1, φ/||Δ̄||); ``max_norm`` <= 0 disables clipping."""
    if max_norm <= 0 or norm <= max_norm:
        return 1.0
    return max_norm / (norm + 1e-12)


def _times(weights: list[float], steps: list[int] | None) -> list[float]:
    if steps is None:
        return list(weights)
    return [w * s for w, s in zip(weights, steps)]


def _normalise(weights: list[float]) -> list[float]:
    total = sum(weights)
    if total <= 0:
        return [0.0] * len(weights)
    return [w / total for w in weights]
