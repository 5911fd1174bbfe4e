"""Resource-performance model: NNLS recovers known curves and predicts held-out configs."""
import numpy as np
import pytest

from raystack.elastic.perfmodel import JobConfig, MemoryTrend, PerfModel, features, mape, nnls


def test_nnls_matches_unconstrained_solution_when_it_is_nonnegative():
    rng = np.random.default_rng(0)
    a = rng.random((30, 4))
    x = np.array([1.0, 2.0, 0.5, 3.0])
    assert np.allclose(nnls(a, a @ x), x, atol=1e-8)


def test_nnls_clamps_negative_coefficients_to_zero():
    rng = np.random.default_rng(1)
    a = rng.random((40, 3))
    b = a @ np.array([2.0, -1.0, 1.0])
    x = nnls(a, b)
    assert (x >= 0).all() and x[1] == 0.0
    # and no non-negative x does better (KKT: gradient <= 0 on the zero coordinate)
    assert (a.T @ (b - a @ x))[1] <= 1e-9


def _grid():
    return [JobConfig(w, p, cw, cp) for w in (1, 2, 4, 8, 12) for p in (1, 2, 4)
            for cw in (1, 2) for cp in (1, 2)]


def test_fit_recovers_a_known_curve_and_predicts_held_out_configs():
    true = np.array([0.02, 0.08, 0.01, 0.02, 0.002])
    batch = 512
    pts = [(c, c.workers * batch / float(features(c) @ true)) for c in _grid()]
    train, held = pts[::3] + pts[1::3], pts[2::3]
    m = PerfModel(batch).fit(train)
    assert np.allclose(m.coef, true, rtol=1e-6)
    assert mape(m, held) < 1e-6


def test_fit_with_noise_stays_within_ten_percent_on_held_out():
    rng = np.random.default_rng(2)
    true = np.array([0.02, 0.08, 0.01, 0.02, 0.002])
    pts = [(c, c.workers * 256 / float(features(c) @ true) * rng.normal(1, 0.03))
           for c in _grid()]
    m = PerfModel(256).fit(pts[::3] + pts[1::3])
    assert mape(m, pts[2::3]) < 0.10


def test_fit_needs_two_distinct_configs():
    with pytest.raises(ValueError, match="2 distinct"):
        PerfModel(8).fit([(JobConfig(1, 1), 10.0), (JobConfig(1, 1), 11.0)])


def test_memory_trend_extrapolates_growth():
    t = MemoryTrend([(0, 1.0), (100, 1.5), (200, 2.0)])
    assert t.predict(400) == pytest.approx(3.0)


def test_memory_trend_without_progress_predicts_the_peak_seen():
    """Before any row is committed every sample sits at x = 0: no trend, and no crash in the fit."""
    from raystack.elastic.perfmodel import MemoryTrend

    assert MemoryTrend([(0.0, 1.0), (0.0, 1.5), (0.0, 1.2)]).predict(10_000) == 1.5
    assert MemoryTrend([(0.0, float("nan")), (0.0, 2.0)]).predict(5) == 2.0
    grow = MemoryTrend([(0.0, 1.0), (100.0, 2.0), (200.0, 3.0)])
    assert abs(grow.predict(300.0) - 4.0) < 1e-6
