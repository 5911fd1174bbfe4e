"""The controller loop stepped against fake workers (no Ray): sizing, healing, draining."""
import numpy as np

from raystack.elastic.control import ElasticLoop, Poll, State
from raystack.elastic.perfmodel import features
from raystack.elastic.plan import current_config
from raystack.elastic.planner import Budget, ThreeStagePlanner
from raystack.elastic.stragglers import StragglerDetector

TRUE = np.array([0.01, 0.2, 0.004, 0.004, 0.0])
B = 256


class FakeBackend:
    """Units are dict entries; rows advance at the true curve's rate, 1 s per poll."""

    def __init__(self, rows_total=3_000_000):
        self.now, self.rows, self.rows_total = 0.0, 0.0, rows_total
        self.units, self.dead, self.slow = {}, [], set()
        self.applied, self.relaunched, self.error = [], [], None
        self.worker_rows = {}

    def poll(self):
        self.now += 1.0
        cfg = current_config(self.units)
        rates = {}
        if cfg is not None:
            per_worker = B / float(features(cfg) @ TRUE)
            for uid, u in self.units.items():
                if u.role == "worker":
                    r = per_worker / (3 if uid in self.slow else 1)
                    self.worker_rows[uid] = self.worker_rows.get(uid, 0) + r
                    rates[uid] = (r, int(self.worker_rows[uid]))
                    self.rows += r
        dead, self.dead = self.dead, []
        return Poll(self.now, dead, rates, int(min(self.rows, self.rows_total)),
                    self.rows_total, [0.5], [0.5], self.error)

    def apply(self, plan):
        self.applied.append(plan)
        for u in plan.launch:
            self.units[u.unit_id] = u
        for uid in plan.remove:
            self.units.pop(uid)

    def relaunch(self, unit):
        self.relaunched.append(unit.unit_id)


def make_loop(backend, budget=Budget(max_cpus=10, max_workers=8, max_ps=3)):
    return ElasticLoop(ThreeStagePlanner(budget, B), backend,
                       detector=StragglerDetector(2.0, min_rows=500), measure_s=3, settle_s=1)


def test_loop_sizes_the_job_within_budget_and_finishes():
    be = FakeBackend()
    loop = make_loop(be)
    while loop.step() is State.RUNNING and be.now < 2000:
        pass
    assert loop.state is State.FINISHED
    assert loop.planner.stage.value == "runtime"
    cfg = current_config(be.units)
    assert cfg.cpus <= 10 and cfg.workers >= 4  # compute-bound: it grew from the default 2
    thr = lambda c: c.workers * B / float(features(c) @ TRUE)  # noqa: E731
    assert thr(cfg) >= 0.9 * max(thr(c) for c in loop.planner.candidates(cfg))


def test_loop_relaunches_dead_units_and_keeps_running():
    be = FakeBackend()
    loop = make_loop(be)
    for _ in range(5):
        loop.step()
    victim = next(u for u in be.units if u.startswith("worker"))
    be.dead.append(victim)
    loop.step()
    assert be.relaunched == [victim] and loop.state is State.RUNNING


def test_loop_replaces_a_3x_slow_worker_before_draining_it():
    be = FakeBackend()
    loop = ElasticLoop(ThreeStagePlanner(Budget(), B), be,
                       detector=StragglerDetector(2.0, min_rows=500), autoscale=False)
    loop.step()  # initial plan: 2 workers
    slow = sorted(u for u in be.units if u.startswith("worker"))[0]
    be.slow.add(slow)
    while not any(e.kind == "straggler" for e in loop.events):
        loop.step()
        assert be.now < 100, "the straggler was never detected"
    # the replacement starts first: the straggler keeps training until it has committed
    replacement = be.applied[-1].launch[0].unit_id
    assert slow in be.units and replacement in be.units and not be.applied[-1].remove
    loop.step()  # the replacement's first rows arrive: now the straggler is drained
    assert be.applied[-1].remove == [slow] and slow not in be.units
    assert sum(u.startswith("worker") for u in be.units) == 2
    assert any(e.kind == "straggler" and slow in e.detail for e in loop.events)
    for _ in range(20):  # and nothing more happens: no second replacement
        loop.step()
    assert sum(u.startswith("worker") for u in be.units) == 2 and replacement in be.units


class SilentBackend(FakeBackend):
    """A replacement worker that never commits (stuck starting on a bad node)."""

    def poll(self):
        p = super().poll()
        for uid in list(p.worker_rates):
            if uid in self.silent:
                p.worker_rates[uid] = (0.0, 0)
        return p


def test_loop_drains_the_straggler_anyway_when_its_replacement_is_late():
    be = SilentBackend()
    loop = ElasticLoop(ThreeStagePlanner(Budget(), B), be,
                       detector=StragglerDetector(2.0, min_rows=500), autoscale=False, handover_s=10)
    loop.step()
    slow = sorted(u for u in be.units if u.startswith("worker"))[0]
    be.slow.add(slow)
    be.silent = {f"worker-{i}" for i in range(2, 10)}  # every replacement stays silent
    while not any(e.kind == "straggler" for e in loop.events):
        loop.step()
    t_detect = be.now
    while slow in be.units:
        loop.step()
        assert be.now < t_detect + 20
    assert be.now >= t_detect + 10


def test_loop_stops_with_the_backends_error():
    be = FakeBackend()
    loop = make_loop(be)
    loop.step()
    be.error = "shard 3 (x.parquet rows 0:10) failed 3 times"
    assert loop.step() is State.FAILED and "shard 3" in loop.error


class CrashingBackend(FakeBackend):
    """One worker unit's every incarnation dies before committing a batch (a bug, a bad node),
    or, with ``every``, dies every ``every`` polls after committing rows like the others."""

    def __init__(self, every=None, **kw):
        super().__init__(**kw)
        self.every, self.polls = every, 0

    def poll(self):
        p = super().poll()
        self.polls += 1
        uid = min((u for u in self.units if u.startswith("worker")), default=None)
        if uid is None:
            return p
        if self.every is None:
            p.worker_rates.pop(uid, None)
            p.dead.append(uid)
            p.errors[uid] = f"{uid}.0: ValueError: assignment destination is read-only"
        elif self.polls % self.every == 0:
            p.dead.append(uid)
        return p


def crashing_loop(be, max_relaunches=5):
    return ElasticLoop(ThreeStagePlanner(Budget(max_cpus=10, max_workers=8, max_ps=3), B), be,
                       measure_s=3, settle_s=1, autoscale=False, max_relaunches=max_relaunches)


def test_a_unit_failing_again_and_again_without_committing_stops_the_job_with_its_error():
    be = CrashingBackend()
    loop = crashing_loop(be, max_relaunches=5)
    while loop.step() is State.RUNNING and be.now < 100:
        pass
    assert loop.state is State.FAILED
    assert len(be.relaunched) == 5 and len(set(be.relaunched)) == 1
    assert be.relaunched[0] in loop.error and "6 times in a row" in loop.error
    assert "read-only" in loop.error and "max_relaunches=5" in loop.error


def test_units_that_die_but_commit_in_between_are_relaunched_every_time():
    be = CrashingBackend(every=2, rows_total=200_000)
    loop = crashing_loop(be, max_relaunches=2)
    while loop.step() is State.RUNNING and be.now < 5000:
        pass
    assert loop.state is State.FINISHED
    assert len(be.relaunched) > 2  # more deaths than max_relaunches: each one had committed rows


def test_a_job_whose_audit_finds_a_lost_or_repeated_sample_never_succeeds():
    import pytest

    from raystack.actors.elastic.controller import ElasticJobError, check_audit

    assert check_audit(np.ones(5, dtype=np.int32), "j") == (0, 0)
    with pytest.raises(ElasticJobError, match="job j: the audit found 1 samples never trained and 0"):
        check_audit(np.array([1, 0, 1, 1]), "j")
    with pytest.raises(ElasticJobError, match="0 samples never trained and 1 trained more than once"):
        check_audit(np.array([1, 2, 1]), "j")
