"""Shard ledger: exactly-once under random pulls, batch commits, deaths, failures and restarts."""
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from raystack.elastic.shards import (ShardFailedError, ShardLedger, StaleLeaseError,
                                     make_shards)

FILES = [("a.parquet", 37), ("b.parquet", 50), ("c.parquet", 13)]
N_ROWS = sum(n for _, n in FILES)

op = st.one_of(
    st.tuples(st.just("pull"), st.integers(0, 3)),
    st.tuples(st.just("apply"), st.integers(0, 3), st.integers(1, 9)),
    st.tuples(st.just("commit"), st.integers(0, 3)),
    st.tuples(st.just("die"), st.integers(0, 3)),
    st.tuples(st.just("fail"), st.integers(0, 3)),
    st.tuples(st.just("restart"),),
)


def _trained_ids(lease, a, b):
    return np.arange(lease.first_id + a - lease.shard_start, lease.first_id + b - lease.shard_start)


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(op, max_size=80), rows_per_shard=st.integers(3, 40))
def test_every_sample_trained_exactly_once(ops, rows_per_shard):
    ledger = ShardLedger(make_shards(FILES, rows_per_shard), max_failures=10_000)
    counts = np.zeros(N_ROWS, dtype=int)
    workers = {}  # w -> [lease, applied, committed]
    for o in ops:
        kind, w = o[0], (o[1] if len(o) > 1 else None)
        state = workers.get(w)
        if kind == "pull" and state is None:
            lease = ledger.pull(f"w{w}")
            if lease is not None:
                workers[w] = [lease, lease.start, lease.start]
        elif kind == "apply" and state is not None:
            lease, applied, _ = state
            new = min(applied + o[2], lease.end)
            counts[_trained_ids(lease, applied, new)] += 1
            state[1] = new
        elif kind == "commit" and state is not None and state[1] > state[2]:
            if ledger.commit(state[0].lease_id, state[1]):
                del workers[w]
            else:
                state[2] = state[1]
        elif kind == "die" and state is not None:
            ledger.release(f"w{w}", applied={state[0].lease_id: state[1]})
            del workers[w]
        elif kind == "fail" and state is not None and state[1] == state[2]:
            ledger.fail(state[0].lease_id, "unreadable")
            del workers[w]
        elif kind == "restart":
            ledger = ShardLedger.from_state_dict(json.loads(json.dumps(ledger.state_dict())))
    for w, (lease, applied, committed) in list(workers.items()):
        if applied > committed:
            ledger.commit(lease.lease_id, applied)
        ledger.release(f"w{w}")
    while (lease := ledger.pull("final")) is not None:
        counts[_trained_ids(lease, lease.start, lease.end)] += 1
        assert ledger.commit(lease.lease_id, lease.end)
    assert ledger.finished
    assert (counts == 1).all(), f"lost {np.sum(counts == 0)}, duplicated {np.sum(counts > 1)}"


def test_stale_commit_after_release_is_rejected():
    ledger = ShardLedger(make_shards(FILES, 10))
    lease = ledger.pull("w0")
    ledger.release("w0")
    with pytest.raises(StaleLeaseError):
        ledger.commit(lease.lease_id, lease.start + 1)


def test_commit_going_backwards_is_rejected():
    ledger = ShardLedger(make_shards(FILES, 10))
    lease = ledger.pull("w0")
    ledger.commit(lease.lease_id, lease.start + 5)
    with pytest.raises(ValueError, match="outside"):
        ledger.commit(lease.lease_id, lease.start + 3)


def test_repeatedly_failing_shard_stops_the_job_naming_the_file():
    ledger = ShardLedger(make_shards([("bad.parquet", 5)], 10), max_failures=3)
    with pytest.raises(ShardFailedError, match="bad.parquet.*3 times.*corrupt"):
        for _ in range(3):
            ledger.fail(ledger.pull("w0").lease_id, "corrupt footer")


def test_dead_workers_rows_go_back_to_the_front_from_the_committed_offset():
    ledger = ShardLedger(make_shards(FILES, 10))
    lease = ledger.pull("w0")
    ledger.commit(lease.lease_id, lease.start + 4)
    assert ledger.release("w0") == [lease.shard_id]
    again = ledger.pull("w1")
    assert (again.shard_id, again.start) == (lease.shard_id, lease.start + 4)
