"""The pseudo-gradient penalty, the outer optimizer and the triggers, against hand-computed cases."""
import math

import pytest
import torch

from raystack.edit.outer import nesterov_step
from raystack.edit.penalty import EWMA, PseudoGradientPenalty, clip_coefficient, softmax_weights
from raystack.edit.trigger import StepTrigger, TimeTrigger, accept_sync, in_warmup, split_by_rate


def test_softmax_weights_use_norms_normalised_by_their_mean():
    # norms 1 and 3: mean 2, ĝ = 0.5, 1.5; softmax(-ĝ) = e^-0.5 / (e^-0.5 + e^-1.5)
    w = softmax_weights([1.0, 3.0], temperature=1.0)
    expect = math.exp(-0.5) / (math.exp(-0.5) + math.exp(-1.5))
    assert w[0] == pytest.approx(expect)
    assert sum(w) == pytest.approx(1.0)
    # scale-free: multiplying every norm by 1000 changes nothing (raw softmax would be one-hot)
    assert softmax_weights([1000.0, 3000.0], 1.0) == pytest.approx(w)


def test_equal_norms_give_equal_weights():
    p = PseudoGradientPenalty(num_blocks=1, warmup_syncs=0)
    d = p.decide(0, [2.0, 2.0, 2.0, 2.0])
    assert d.weights == pytest.approx([0.25] * 4)
    assert d.outliers == [] and not d.skip


def test_ewma_mean_and_variance_by_hand():
    e = EWMA(alpha=0.5)
    e.update(2.0)
    assert (e.mean, e.var) == (2.0, 0.0)
    e.update(4.0)          # diff 2, incr 1 -> mean 3, var (1-0.5)*(0 + 2*1) = 1
    assert e.mean == pytest.approx(3.0) and e.var == pytest.approx(1.0)
    assert e.zscore(5.0) == pytest.approx(2.0)


def test_ewma_starts_as_a_plain_mean_and_variance():
    e = EWMA(alpha=0.02)
    for g in (1.0, 2.0, 3.0):
        e.update(g)
    # running mean 2, population variance 2/3 (not the ~0 a bare α=0.02 EWMA would give)
    assert e.mean == pytest.approx(2.0) and e.var == pytest.approx(2 / 3)


def test_no_outliers_during_warmup_then_flagged_after():
    early = PseudoGradientPenalty(num_blocks=1, alpha=0.1, z_threshold=3.0, warmup_syncs=4)
    assert early.decide(0, [1.0, 1.0, 100.0]).outliers == []   # in warm-up: kept
    p = PseudoGradientPenalty(num_blocks=1, alpha=0.1, z_threshold=3.0, warmup_syncs=4)
    for i in range(4):
        assert p.decide(0, [1.0 + 0.01 * i, 1.0 - 0.01 * i, 1.0]).outliers == []
    d = p.decide(0, [1.0, 1.01, 50.0])
    assert d.outliers == [2]
    assert d.weights[2] == 0.0 and sum(d.weights) == pytest.approx(1.0)


def test_warmup_is_configurable_and_counts_syncs():
    p = PseudoGradientPenalty(num_blocks=2, alpha=0.5, warmup_syncs=2)
    p.decide(0, [1.0, 1.1])
    d = p.decide(0, [1.0, 1.1])       # block 0 has seen 1 sync: not armed yet
    assert d.outliers == []
    d = p.decide(0, [1.0, 90.0])      # armed after 2 syncs
    assert d.outliers == [1]
    assert p.decide(1, [1.0, 90.0]).outliers == []   # per block: block 1 is still in warm-up


def test_all_outliers_skip_the_block():
    p = PseudoGradientPenalty(num_blocks=1, alpha=0.5, warmup_syncs=2)
    p.decide(0, [1.0, 1.2])
    p.decide(0, [1.1, 1.0])
    before = p.stats[0].mean
    d = p.decide(0, [80.0, 90.0])
    assert d.skip and d.weights == [0.0, 0.0] and d.outliers == [0, 1]
    assert p.stats[0].mean > before    # a shift shared by every replica is learned...
    for _ in range(20):
        d = p.decide(0, [80.0, 90.0])
    assert not d.skip                  # ...so the block is not frozen for good


def test_a_single_outlier_does_not_move_the_statistics():
    p = PseudoGradientPenalty(num_blocks=1, alpha=0.5, warmup_syncs=2)
    p.decide(0, [1.0, 1.2])
    p.decide(0, [1.1, 1.0])
    mean = p.stats[0].mean
    d = p.decide(0, [1.05, 90.0])
    assert d.outliers == [1]
    assert p.stats[0].mean == pytest.approx(mean + 0.5 * (1.05 - mean), rel=0.3)


def test_nan_norm_is_always_an_outlier():
    p = PseudoGradientPenalty(num_blocks=1, warmup_syncs=100)
    d = p.decide(0, [1.0, float("nan")])
    assert d.outliers == [1] and d.weights == [1.0, 0.0]


def test_aedit_weights_also_by_steps_since_last_sync():
    p = PseudoGradientPenalty(num_blocks=1, warmup_syncs=0)
    d = p.decide(0, [1.0, 1.0], steps=[3, 1])
    assert d.weights == pytest.approx([0.75, 0.25])
    off = PseudoGradientPenalty(num_blocks=1, enabled=False)
    assert off.decide(0, [1.0, 9.0], steps=[2, 2]).weights == pytest.approx([0.5, 0.5])


def test_clip_coefficient():
    assert clip_coefficient(10.0, 5.0) == pytest.approx(0.5)
    assert clip_coefficient(4.0, 5.0) == 1.0
    assert clip_coefficient(100.0, 0.0) == 1.0


def test_penalty_state_roundtrip():
    p = PseudoGradientPenalty(num_blocks=2, alpha=0.3, warmup_syncs=0)
    p.decide(0, [1.0, 2.0]); p.decide(1, [3.0, 4.0])
    q = PseudoGradientPenalty(num_blocks=2, alpha=0.3, warmup_syncs=0)
    q.load_state_dict(p.state_dict())
    assert q.decide(0, [1.0, 7.0]) == p.decide(0, [1.0, 7.0])


def test_nesterov_by_hand_and_plain_averaging():
    theta, m = torch.tensor([1.0]), torch.tensor([0.0])
    nesterov_step(theta, m, torch.tensor([0.5]), lr=0.7, mu=0.9)
    # m = 0.5; θ = 1 - 0.7 * (0.5 + 0.9*0.5) = 0.335
    assert float(m) == pytest.approx(0.5) and float(theta) == pytest.approx(0.335)
    nesterov_step(theta, m, torch.tensor([0.5]), lr=0.7, mu=0.9)
    # m = 0.95; θ = 0.335 - 0.7 * (0.5 + 0.855) = -0.6135
    assert float(m) == pytest.approx(0.95) and float(theta) == pytest.approx(-0.6135)
    theta = torch.tensor([4.0]); nesterov_step(theta, torch.zeros(1), torch.tensor([1.5]), lr=1.0, mu=0.0)
    assert float(theta) == 2.5


def test_step_trigger():
    t = StepTrigger(4)
    assert [t.should_sync(k) for k in (1, 3, 4, 5)] == [False, False, True, True]
    with pytest.raises(ValueError):
        StepTrigger(0)


def test_time_trigger_with_fake_clock():
    now = [100.0]
    t = TimeTrigger(2.0, clock=lambda: now[0])
    assert not t.should_sync(10)
    now[0] = 101.9
    assert not t.should_sync(10)
    now[0] = 102.0
    assert t.should_sync(0)
    t.reset()
    assert not t.should_sync(5)
    t.reset(scale=0.25)             # a shortened last window
    now[0] += 0.5
    assert t.should_sync(1)


def test_min_steps_and_warmup_helpers():
    assert accept_sync([3, 2], 2) and not accept_sync([3, 1], 2)
    assert in_warmup(4, 5) and not in_warmup(5, 5)


def test_time_trigger_step_quota_for_the_last_window():
    now = [0.0]
    t = TimeTrigger(1.0, clock=lambda: now[0])
    t.reset(quota=3)                    # the last window: 3 inner steps, whatever the clock says
    now[0] = 5.0
    assert not t.should_sync(2) and t.should_sync(3)
    t.reset()                           # back to the clock
    assert not t.should_sync(10)


def test_split_by_rate_shares_the_budget_left_by_speed():
    assert split_by_rate(10, [16, 10]) == [6, 4]
    assert sum(split_by_rate(25, [16, 10])) == 25
    assert split_by_rate(7, [3, 3]) == [4, 3]
    assert split_by_rate(1, [16, 10]) == [1, 1]       # every replica runs at least one step


def test_inner_lr_ramps_then_stays_or_decays_by_cosine():
    from raystack.edit.config import InnerConfig
    flat = InnerConfig(lr=1.0, lr_warmup_steps=4)
    assert [flat.lr_at(s, 100) for s in (0, 3, 50, 99)] == [0.25, 1.0, 1.0, 1.0]
    cos = InnerConfig(lr=1.0, lr_warmup_steps=4, lr_decay="cosine", lr_min_ratio=0.1)
    assert cos.lr_at(1, 104) == 0.5                              # the ramp is the same
    assert cos.lr_at(4, 104) == pytest.approx(1.0)               # decay starts after it
    assert cos.lr_at(54, 104) == pytest.approx(0.1 + 0.9 * 0.5)  # half way: cos(pi/2) = 0
    assert cos.lr_at(104, 104) == pytest.approx(0.1)             # ends at lr_min_ratio x lr
