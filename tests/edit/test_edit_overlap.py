"""The overlapped outer update, compressed pseudo-gradients and the penalty, through the rank code.

Replicas run as threads over an in-process comm, on the tiny Llama of the equivalence tests.
"""
import json
from pathlib import Path

import pytest
import torch
from torch import nn

from raystack.config import load_config
from raystack.edit.config import EDiTConfig
from raystack.edit.localcomm import run_in_threads
from raystack.edit.replica import EDiTRank
from raystack.edit.shard import Block
from test_edit_equivalence import ReplicaBatches, run, tiny_llama

torch.set_num_threads(1)
GOLDEN = Path(__file__).parent / "golden" / "edit_870b627.json"


BASE = {"mode": "edit", "inner": {"optimizer": "adamw", "lr": 0.01, "weight_decay": 0.1, "grad_clip": 1.0,
                                   "lr_warmup_steps": 2},
        "sync": {"warmup_steps": 2, "h": 3}, "penalty": {"warmup_syncs": 0, "clip": 0.5}}


def _overrides(extra: dict) -> dict:
    out = {k: dict(v) for k, v in BASE.items() if isinstance(v, dict)}
    out["mode"] = BASE["mode"]
    for k, v in extra.items():
        out[k] = {**out.get(k, {}), **v} if isinstance(v, dict) else v
    return out


def _config(extra: dict) -> EDiTConfig:
    return load_config(EDiTConfig, {"model": "tiny-1m", "steps": 12, **_overrides(extra)})


def _record(extra: dict) -> list[dict]:
    """Per-step losses and fixed random projections of the final parameters, every rank (the
    golden file's format)."""
    out = []
    for params, losses, r in run(_overrides(extra), steps=12):
        g = torch.Generator().manual_seed(7)
        proj = [[float(p.reshape(-1) @ torch.randn(p.numel(), generator=g, dtype=p.dtype)) for _ in range(2)]
                for p in params]
        out.append({"losses": losses, "projections": proj, "syncs": r.counters.syncs, "outliers": r.counters.outliers})
    return out


GOLDEN_CASES = {"edit_r2_s1": {"ranks": 2}, "edit_r4_s2": {"ranks": 4, "shards": 2},
                "edit_r3_s1_spike": {"ranks": 3, "simulate": {"spike_replica": 2, "spike_start": 8, "spike_steps": 2,
                                                              "spike_lr_mult": 30.0}}}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_overlap_zero_equals_todays_edit_step_for_step(case):
    """τ = 0 reproduces EDiT as it was before the overlapped update existed (commit 870b627:
    AdamW, warm-up, penalty with clipping, S = 2, a spiking replica): every rank's loss at every
    step, and its final parameters."""
    golden = json.loads(GOLDEN.read_text())["cases"][case]
    got = _record({**GOLDEN_CASES[case], "sync": {"overlap_steps": 0}})
    for want, have in zip(golden, got):
        assert have["syncs"] == want["syncs"] and have["outliers"] == want["outliers"]
        assert len(have["losses"]) == len(want["losses"]) == 12
        for step, (a, b) in enumerate(zip(want["losses"], have["losses"])):
            # a few fp32 ulps (one ulp of a loss near 5 is 4.8e-7): the BLAS kernels' rounding may
            # differ from run to run; any change to the update itself moves the loss by far more
            assert abs(a - b) <= 1e-6 * max(1.0, abs(a)), (case, step, a, b)
        for pa, pb in zip(want["projections"], have["projections"]):
            for a, b in zip(pa, pb):
                assert abs(a - b) <= 1e-5 * max(1.0, abs(a)), (case, a, b)


def _params(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("tau", [1, 2])
def test_overlapped_update_lands_tau_steps_late_and_keeps_the_local_steps(tau):
    """With plain averaging (outer lr 1, no momentum, no penalty), a sync started at step s is
    applied in the forward of step s + τ + 1; until then each replica trains on alone, and the
    update keeps those steps: θ_i ← mean_j θ_j(s) + (θ_i(s + τ) − θ_i(s))."""
    cfg = _config({"ranks": 2, "steps": 9, "sync": {"h": 4, "overlap_steps": tau}, "penalty": {"enabled": False},
                   "outer": {"lr": 1.0, "momentum": 0.0}})

    def rank_fn(comm):
        r = EDiTRank(cfg, tiny_llama(), comm, ReplicaBatches(comm.rank, 0, 1))
        while not r.maybe_sync():        # warm-up (2 steps), then 4 local steps: the sync at s = 6
            r.train_step()
        at_sync = _params(r.model)
        for _ in range(tau):
            r.train_step()
            assert r.outer.pending       # not applied yet: the all-reduce hides behind these steps
        before = _params(r.model)
        r.flush()                         # apply now (what the next forward would do first)
        return at_sync, before, _params(r.model)
    (s0, b0, a0), (s1, b1, a1) = run_in_threads(2, rank_fn)
    for i, (s_i, b_i, a_i) in enumerate(((s0, b0, a0), (s1, b1, a1))):
        for x0, x1, si, bi, ai in zip(s0, s1, s_i, b_i, a_i):
            assert not torch.allclose(bi, si)                       # the replica trained on
            expect = (x0 + x1) / 2 + (bi - si)
            assert torch.allclose(ai, expect, atol=2e-6, rtol=0), (i, float((ai - expect).abs().max()))


@pytest.mark.parametrize("tau", [1, 2])
def test_eager_update_trains_the_tau_steps_from_the_own_estimate_then_takes_the_average(tau):
    """Eager updates with outer lr 0.5, no momentum, no penalty: at the sync point (step s) a
    replica moves at once to its own estimate θ_sync − 0.5·Δ_i = (θ_sync + θ_i(s)) / 2, trains τ
    steps from there, and the average's update then replaces the estimate, keeping those steps:
    θ_i ← (θ_sync + mean_j θ_j(s)) / 2 + (θ_i(s + τ) − estimate_i)."""
    cfg = _config({"ranks": 2, "steps": 9, "sync": {"h": 4, "overlap_steps": tau, "overlap_eager": True},
                   "penalty": {"enabled": False}, "outer": {"lr": 0.5, "momentum": 0.0}})

    def rank_fn(comm):
        r = EDiTRank(cfg, tiny_llama(), comm, ReplicaBatches(comm.rank, 0, 1))
        while True:
            r.train_step()
            if r.counters.step == cfg.sync.warmup_steps:
                start = _params(r.model)   # θ_sync: the synchronous warm-up's end, the same on both
            at_sync = _params(r.model)
            if r.maybe_sync():
                break
        estimate = _params(r.model)
        for _ in range(tau):
            r.train_step()
            assert r.outer.pending
        before = _params(r.model)
        r.flush()
        return start, at_sync, estimate, before, _params(r.model)
    out = run_in_threads(2, rank_fn)
    for i, (start, at_sync, estimate, before, after) in enumerate(out):
        for k, (x, s_i, e_i, b_i, a_i) in enumerate(zip(start, at_sync, estimate, before, after)):
            assert torch.allclose(e_i, (x + s_i) / 2, atol=2e-6, rtol=0), (i, k)
            mean_at_sync = (out[0][1][k] + out[1][1][k]) / 2
            expect = (x + mean_at_sync) / 2 + (b_i - e_i)
            assert torch.allclose(a_i, expect, atol=2e-6, rtol=0), (i, k, float((a_i - expect).abs().max()))


def _same_data_run(sync: dict, shards: int) -> list:
    """Two replicas fed the same batches (so the same pseudo-gradients): losses and final params."""
    cfg = _config({"ranks": 2 * shards, "shards": shards, "steps": 14, "sync": {"h": 4, **sync}})

    def rank_fn(comm):
        r = EDiTRank(cfg, tiny_llama(), comm, ReplicaBatches(0, comm.rank % shards, shards))
        losses = []
        while not r.done:
            losses.append(r.train_step())
            r.maybe_sync()
        r.flush()
        return losses, _params(r.model), r.counters.syncs
    return run_in_threads(cfg.ranks, rank_fn)


@pytest.mark.parametrize("shards", [1, 2])
def test_eager_update_with_equal_pseudo_gradients_is_edit_step_for_step(shards):
    """When every replica's pseudo-gradient is the same, a replica's own estimate is the outer
    update, so the eager overlapped update (τ = 2, Nesterov, the penalty's clipping; S ranks per
    replica) trains exactly as EDiT does (τ = 0), loss for loss; the plain overlapped update does
    not."""
    edit = _same_data_run({"overlap_steps": 0}, shards)
    eager = _same_data_run({"overlap_steps": 2, "overlap_eager": True}, shards)
    late = _same_data_run({"overlap_steps": 2}, shards)
    assert edit[0][2] == eager[0][2] >= 2
    for (la, pa, _), (lb, pb, _) in zip(edit, eager):
        for a, b in zip(la, lb):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(a)), (la, lb)
        for x, y in zip(pa, pb):
            assert torch.allclose(x, y, atol=1e-5, rtol=0), float((x - y).abs().max())
    assert max(abs(a - b) for a, b in zip(edit[0][0], late[0][0])) > 1e-4


@pytest.mark.parametrize("tau", [0, 2])
def test_a_spiking_replica_is_flagged_and_down_weighted_through_the_rank_code(tau):
    """Three replicas; replica 2 gets shuffled tokens and a 30x learning rate for two steps after
    the penalty's warm-up. At the next sync every rank's penalty drops it (weight 0) on the blocks
    it flags and gives it less than a third on the others; the clean replicas share the rest."""
    cfg = _config({"ranks": 3, "steps": 15, "sync": {"h": 3, "overlap_steps": tau},
                   "penalty": {"warmup_syncs": 2, "z_threshold": 3.0},
                   "simulate": {"spike_replica": 2, "spike_start": 11, "spike_steps": 2, "spike_lr_mult": 30.0}})

    def rank_fn(comm):
        r = EDiTRank(cfg, tiny_llama(), comm, ReplicaBatches(comm.rank, 0, 1))
        sync_steps, decided = [], []
        decide = r.outer.decide

        def record(rows, steps=None):      # decisions come at once, or (τ > 0) in the background
            decide(rows, steps)
            decided.append([(d.weights, d.outliers) for d in r.outer.last_decisions])
        r.outer.decide = record
        while not r.done:
            r.train_step()
            if r.maybe_sync():
                sync_steps.append(r.counters.step)
        return dict(zip(sync_steps, decided)), r.counters.outliers
    out = run_in_threads(3, rank_fn)
    verdicts = out[0][0]
    assert all(o[0] == verdicts for o in out)          # every rank took the same decisions
    for step in (5, 8, 11):                             # before the spike: everyone kept, ~1/3 each
        for weights, outliers in verdicts[step]:
            assert outliers == [] and all(0.2 < w < 0.5 for w in weights)
    spiked = verdicts[14]                               # the sync right after steps 11-12
    flagged = [b for b, (_, outliers) in enumerate(spiked) if outliers == [2]]
    assert len(flagged) >= len(spiked) // 2, spiked
    for weights, outliers in spiked:
        assert weights[2] == 0.0 if outliers == [2] else weights[2] < 1 / 3
        assert weights[0] + weights[1] == pytest.approx(1.0 - weights[2])
    assert out[0][1] >= len(flagged)


class _Linear(nn.Module):
    """A crafted model whose loss is linear in its parameters: every step's gradient is the same
    constant, so each replica's pseudo-gradient is exactly η·H·c_i whatever θ is."""

    def __init__(self, sizes):
        super().__init__()
        self.parts = nn.ModuleList(nn.Module() for _ in sizes)
        for part, n in zip(self.parts, sizes):
            part.w = nn.Parameter(torch.zeros(n))


class _Constant:
    def next_batch(self):
        return torch.zeros(1, 2, dtype=torch.long)

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


def _linear_run(compression: str, feedback: bool, coefs: list[list[torch.Tensor]], syncs: int):
    H, lr = 4, 0.05
    cfg = load_config(EDiTConfig, {
        "model": "tiny-1m", "ranks": 2, "mode": "post_local_sgd", "steps": H * syncs,
        "inner": {"optimizer": "sgd", "lr": lr, "weight_decay": 0.0, "grad_clip": 0.0, "lr_warmup_steps": 0},
        "sync": {"h": H, "warmup_steps": 0, "compression": compression, "error_feedback": feedback}})

    def rank_fn(comm):
        model = _Linear([c.numel() for c in coefs[comm.rank]])
        blocks = [Block(f"part{i}", part, [part.w]) for i, part in enumerate(model.parts)]

        def loss_fn(m, batch):
            return sum((part.w * c).sum() for part, c in zip(m.parts, coefs[comm.rank]))
        r = EDiTRank(cfg, model, comm, _Constant(), blocks=blocks, loss_fn=loss_fn)
        thetas = []
        while not r.done:
            r.train_step()
            if r.maybe_sync():
                thetas.append([t.clone() for t in r.theta_sync])
        return thetas, r.report().wire_bytes["outer"]
    return run_in_threads(2, rank_fn), H * lr


def test_int8_with_error_feedback_stays_within_one_quantisation_step_of_fp32():
    """Crafted so int8 alone loses information: each 1024-element quantisation block has one
    large pseudo-gradient entry and many 300-600x smaller ones, below half an int8 step, which
    int8 rounds to zero at every sync. With error feedback what is lost is carried over and sent
    later: θ_sync stays within one quantisation step (η·H·max|c| / 127) of the fp32 run at every
    sync. Without it the small entries never move and the gap grows past that bound."""
    g = torch.Generator().manual_seed(3)
    coefs = []
    for replica in range(2):
        parts = []
        for n in (3000, 700):
            c = 0.00175 * (1 + torch.rand(n, generator=g))      # small: below half an int8 step
            c[::1024] = 1.0                                      # one large entry per int8 block
            parts.append(c)
        coefs.append(parts)
    syncs = 20
    fp32, step = _linear_run("none", False, coefs, syncs)       # per rank: (θ_sync at each sync, bytes)
    ef, _ = _linear_run("int8", True, coefs, syncs)
    plain, _ = _linear_run("int8", False, coefs, syncs)
    bound = step * max(float(c.abs().max()) for parts in coefs for c in parts) / 127
    for k in range(syncs):
        gap = max(float((a - b).abs().max()) for a, b in zip(ef[0][0][k], fp32[0][0][k]))
        assert gap <= bound, (k, gap, bound)
        assert all(torch.equal(a, b) for a, b in zip(ef[0][0][k], ef[1][0][k]))   # replicas agree
    drift = max(float((a - b).abs().max()) for a, b in zip(plain[0][0][-1], fp32[0][0][-1]))
    assert drift > 3 * bound, (drift, bound)
    # fp32: a ring all-reduce of 4 bytes an element; int8: 1 byte an element plus a scale per 1024
    elements = sum(c.numel() for c in coefs[0])
    assert fp32[0][1] == syncs * 4 * elements
    assert ef[0][1] == syncs * (elements + 4 * (3 + 1))
