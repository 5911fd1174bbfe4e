"""Staggered fragments (``sync.fragments``): each group of blocks synced at its own point of the
window, through the rank code (replicas as threads over an in-process comm, the tiny Llama of
the equivalence tests: 4 blocks, embeddings, 2 layers, norm + head)."""
import copy

import pytest
import torch

from raystack.config import ConfigError, load_config
from raystack.edit.config import EDiTConfig
from raystack.edit.fragments import fragment_due, fragment_offsets, split_fragments
from raystack.edit.localcomm import run_in_threads
from raystack.edit.replica import EDiTRank
from test_edit_equivalence import ReplicaBatches, tiny_llama
from test_edit_overlap import _config, _params

torch.set_num_threads(1)


def test_split_fragments_is_contiguous_and_balances_the_largest_group():
    assert split_fragments([10, 40, 40, 40, 40, 10], 4) == [[0, 1], [2], [3], [4, 5]]
    assert split_fragments([5, 5, 5, 5], 1) == [[0, 1, 2, 3]]
    assert split_fragments([5, 5, 5, 5], 4) == [[0], [1], [2], [3]]
    groups = split_fragments([1, 1, 1, 100, 1, 1], 3)
    assert [b for g in groups for b in g] == list(range(6)) and len(groups) == 3 and all(groups)
    assert max(sum([1, 1, 1, 100, 1, 1][b] for b in g) for g in groups) == 100
    with pytest.raises(ValueError, match="sync.fragments"):
        split_fragments([5, 5], 3)


def test_fragments_sync_at_evenly_spread_points_the_last_at_h():
    assert fragment_offsets(16, 4) == [4, 8, 12, 16]
    assert fragment_offsets(16, 1) == [16]
    assert [fragment_due(k, [4, 8, 12, 16]) for k in range(0, 18, 2)] == [None, None, 0, None, 1, None, 2, None, 3]


def _fragment_run(tau: int, shards: int = 1, steps: int = 10):
    """2 replicas of ``shards`` ranks, h = 4, 2 fragments, plain averaging (outer lr 1, no
    momentum, no penalty): at every sync, each rank's parameters at the sync point, just before
    the update is applied, and right after."""
    cfg = _config({"ranks": 2 * shards, "shards": shards, "steps": steps,
                   "sync": {"h": 4, "fragments": 2, "overlap_steps": tau},
                   "penalty": {"enabled": False}, "outer": {"lr": 1.0, "momentum": 0.0}})

    def rank_fn(comm):
        replica, shard = divmod(comm.rank, shards)
        r = EDiTRank(cfg, tiny_llama(), comm, ReplicaBatches(replica, shard, shards))
        syncs = []
        while not r.done:
            r.train_step()
            if r.maybe_sync():
                at_sync = [[p.detach().clone() for p in b.params] for b in r.blocks]
                for _ in range(tau):
                    if r.done:
                        break
                    r.train_step()
                    r.maybe_sync()
                before = [[p.detach().clone() for p in b.params] for b in r.blocks]
                r.flush()
                after = [[p.detach().clone() for p in b.params] for b in r.blocks]
                syncs.append((r.counters.step, at_sync, before, after))
        return r.fragments, syncs, r.counters.syncs, _params(r.model)
    return cfg, run_in_threads(cfg.ranks, rank_fn)


@pytest.mark.parametrize("tau, shards", [(0, 1), (1, 1), (1, 2)])
def test_each_fragment_syncs_only_its_blocks_at_its_own_point(tau, shards):
    """With 2 fragments over 4 blocks and h = 4 (warm-up 2 steps), fragment 0 syncs at steps 4,
    8 and fragment 1 at 6, 10 (the last, at the end of the run, syncs every block). A fragment's
    blocks land on the replicas' average at its sync point (plus each replica's own τ steps since);
    the other fragment's blocks are left as each replica trained them. With S = 2 ranks per
    replica each rank syncs its shard of every block and the replica's ranks stay equal."""
    cfg, out = _fragment_run(tau, shards)
    (fragments, syncs0, n0, end0), (_, syncs1, n1, end1) = out[0], out[shards]
    assert fragments == [[0, 1], [2, 3]]
    steps = [s for s, *_ in syncs0]
    assert steps == [4 + tau, 6 + tau, 8 + tau, 10][:len(steps)] and n0 == n1 == len(steps) == 4
    for k, ((_, at0, before0, after0), (_, at1, before1, after1)) in enumerate(zip(syncs0, syncs1)):
        synced = set(range(4)) if k == len(syncs0) - 1 else set(fragments[k % 2])
        for b in range(4):
            for x0, x1, b0, b1, a0, a1 in zip(at0[b], at1[b], before0[b], before1[b], after0[b], after1[b]):
                if b in synced:
                    mean = (x0 + x1) / 2
                    assert torch.allclose(a0, mean + (b0 - x0), atol=2e-6, rtol=0), (k, b)
                    assert torch.allclose(a1, mean + (b1 - x1), atol=2e-6, rtol=0), (k, b)
                else:                     # untouched by this sync, and the replicas differ
                    assert torch.equal(a0, b0) and torch.equal(a1, b1), (k, b)
                    assert not torch.allclose(a0, a1), (k, b)
    for x, y in zip(end0, end1):          # the run ends with every block synced
        assert torch.allclose(x, y, atol=1e-6, rtol=0)
    for rank in range(1, shards):         # a replica's ranks hold the same parameters
        for x, y in zip(end0, out[rank][3]):
            assert torch.allclose(x, y, atol=1e-6, rtol=0)


def test_a_run_resumed_mid_window_keeps_the_fragments_schedule():
    """A rank's state taken at step 7 (fragment 0 synced at 4 and 8, fragment 1 at 6 and 10: mid
    window) and loaded into fresh ranks continues exactly as the run it came from (Nesterov,
    the penalty, τ = 1)."""
    cfg = _config({"ranks": 2, "steps": 14, "sync": {"h": 4, "fragments": 2, "overlap_steps": 1}})
    saved = {}

    def straight(comm):
        r = EDiTRank(cfg, tiny_llama(), comm, ReplicaBatches(comm.rank, 0, 1))
        while not r.done:
            r.train_step()
            r.maybe_sync()
            if r.counters.step == 7:
                # applies the update in flight, as a checkpoint does; copied, as writing it does
                saved[comm.rank] = copy.deepcopy(r.state_dict())
        return _params(r.model), r.counters.syncs

    def resumed(comm):
        r = EDiTRank(cfg, tiny_llama(), comm, ReplicaBatches(comm.rank, 0, 1))
        r.load_state_dict(saved[comm.rank])
        while not r.done:
            r.train_step()
            r.maybe_sync()
        return _params(r.model), r.counters.syncs
    want = run_in_threads(2, straight)
    got = run_in_threads(2, resumed)
    for (pw, nw), (pg, ng) in zip(want, got):
        assert nw == ng == 6              # syncs at 4, 6, 8, 10, 12 and the last at 14
        for x, y in zip(pw, pg):
            assert torch.allclose(x, y, atol=1e-6, rtol=0), float((x - y).abs().max())


def test_fragments_with_the_penalty_flag_a_spiking_replica_in_each_fragment():
    """Three replicas, 2 fragments; replica 2 spikes (shuffled tokens, 30x lr) for two steps after
    the penalty's warm-up. Each fragment's next sync drops it on the blocks it flags, and every
    rank takes the same decisions."""
    cfg = _config({"ranks": 3, "steps": 18, "sync": {"h": 4, "fragments": 2, "overlap_steps": 1},
                   "penalty": {"warmup_syncs": 2, "z_threshold": 3.0},
                   "simulate": {"spike_replica": 2, "spike_start": 12, "spike_steps": 2, "spike_lr_mult": 30.0}})

    def rank_fn(comm):
        r = EDiTRank(cfg, tiny_llama(), comm, ReplicaBatches(comm.rank, 0, 1))
        decided = []
        decide = r.outer.decide

        def record(rows, steps=None):
            decide(rows, steps)
            decided.append((r.counters.step, dict(r.outer.round.decisions)))
        r.outer.decide = record
        while not r.done:
            r.train_step()
            r.maybe_sync()
        r.flush()
        return [(s, {b: (d.weights, d.outliers) for b, d in ds.items()}) for s, ds in decided]
    out = run_in_threads(3, rank_fn)
    rounds = [ds for _, ds in out[0]]
    assert all([ds for _, ds in o] == rounds for o in out)      # every rank took the same decisions
    # warm-up 2 steps, then fragment 0 syncs at steps 4, 8, 12, 16, fragment 1 at 6, 10, 14, and
    # the last sync (step 18) covers every block; the spike runs in steps 13-14
    assert [sorted(ds) for ds in rounds] == [[0, 1], [2, 3]] * 3 + [[0, 1], [0, 1, 2, 3]]
    for ds in rounds[:5]:
        assert all(outliers == [] for _, outliers in ds.values())
    for ds in rounds[5:7]:                # each fragment's first sync after the spike
        flagged = [b for b, (_, outliers) in ds.items() if outliers == [2]]
        assert flagged, ds
        for weights, outliers in ds.values():
            assert weights[2] == 0.0 if outliers == [2] else weights[2] < 1 / 3


@pytest.mark.parametrize("sync, field", [
    ({"fragments": 2, "h": 4, "overlap_steps": 2}, "sync.overlap_steps"),   # lands after the next one syncs
    ({"fragments": 5, "h": 4}, "sync.fragments"),                          # more sync points than steps
    ({"fragments": 7, "h": 16}, "sync.fragments"),                         # tiny-1m has 6 blocks (4 layers)
])
def test_bad_fragments_are_named_before_anything_runs(sync, field):
    with pytest.raises(ConfigError) as err:
        load_config(EDiTConfig, {"model": "tiny-1m", "sync": sync})
    assert field in str(err.value), str(err.value)


def test_fragments_need_edit_mode():
    with pytest.raises(ConfigError, match="sync.fragments"):
        load_config(EDiTConfig, {"model": "tiny-1m", "mode": "aedit", "sync": {"fragments": 2}})
    assert load_config(EDiTConfig, {"model": "tiny-1m", "sync": {"fragments": 6, "overlap_steps": 1}}).fragments == 6
