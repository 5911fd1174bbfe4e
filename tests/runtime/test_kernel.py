"""The runtime kernel stepped against fake actors (no Ray): the group's fan-out and health
poll, the failure policy, and the controller's states, recoveries, backoff and give-up."""
from __future__ import annotations

import pytest

from raystack.runtime import (ActorGroup, Controller, ControllerState, FailureEvent, FailurePolicy,
                              Health, MemberFailure, MemberSpec, PlacementSpec, Progress, Raise,
                              Restart, RunFailedError)
from tests.runtime.fakes import Counter, FakeSpawner

S = ControllerState


def make_group(n=3):
    sp = FakeSpawner()
    g = ActorGroup("toy", sp)
    g.reserve(PlacementSpec("pg", tuple({"CPU": 1.0} for _ in range(n)), "PACK"))
    g.spawn(*[MemberSpec(f"w{i}", Counter, placement="pg", bundle=i) for i in range(n)])
    return g, sp


# ---- ActorGroup ------------------------------------------------------------------------------
def test_group_fans_calls_out_and_gathers_replies_in_member_order():
    g, sp = make_group()
    assert g.keys == ["w0", "w1", "w2"]
    assert g.call("train", 2) == [2, 2, 2]
    assert g.call_each("train", {"w2": (1,), "w0": (3,)}) == [3, 5]
    assert g.ask("w1", "train") == 3


def test_health_poll_tells_dead_from_node_lost_from_unreachable():
    g, sp = make_group(4)
    sp.live("w1").alive = False
    sp.live("w2").alive, sp.live("w2").node_lost = False, True
    sp.live("w3").hang = True
    st = g.poll(timeout_s=0.5)
    h = {k: m.health for k, m in st.members.items()}
    assert h == {"w0": Health.ALIVE, "w1": Health.DEAD, "w2": Health.NODE_LOST, "w3": Health.UNREACHABLE}
    assert st.replies() == {"w0": "ok"} and st.failed == ["w1", "w2"] and st.unreachable == ["w3"]
    assert "died" in st.members["w1"].reason and "within 0.5s" in st.members["w3"].reason


def test_a_failed_fan_out_names_each_member_and_how():
    g, sp = make_group()
    sp.live("w1").alive = False
    sp.live("w2").obj.fail_on = 0
    with pytest.raises(MemberFailure) as exc:
        g.call("train")
    assert set(exc.value.errors) == {"w1", "w2"}
    assert exc.value.health == {"w1": Health.DEAD, "w2": None}  # w2 raised inside a live actor


def test_respawn_replaces_the_actor_in_place_and_a_lost_node_gets_a_fresh_placement():
    g, sp = make_group()
    old = g.handle("w1")
    sp.live("w1").alive, sp.live("w1").node_lost = False, True
    g.poll()
    g.respawn(["w1"])
    assert g.keys == ["w0", "w1", "w2"] and g.handle("w1") is not old and g.respawns == 1
    new = sp.live("w1")
    assert new.placement is not old.placement and new.placement.spec.bundles == ({"CPU": 1.0},)
    assert new.bundle == 0 and g.spec("w1").placement == "pg~1"
    g.respawn(["w0"])  # died on a live node: same placement group, same bundle
    assert sp.live("w0").placement is old.placement and sp.live("w0").bundle == 0


def test_members_lost_with_their_node_move_together_into_one_new_group_avoiding_it():
    """A replica's ranks (one PACK group) lost with their node: one new PACK group with their
    bundles, told to avoid the lost node; the old group is released. An unreachable member
    moves too (Ray may not have declared its node dead yet), away from its node."""
    sp = FakeSpawner()
    g = ActorGroup("toy", sp)
    g.reserve(PlacementSpec("replica-0", ({"CPU": 1.0}, {"CPU": 2.0}), "PACK"),
              PlacementSpec("replica-1", ({"CPU": 1.0},), "PACK"))
    g.spawn(*[MemberSpec(f"r{i}", Counter, placement="replica-0", bundle=i) for i in range(2)],
            MemberSpec("r2", Counter, placement="replica-1"))
    old = sp.placements[0]
    for k in ("r0", "r1"):
        sp.live(k).alive = False
    sp.dead_nodes.add("node-of-replica-0")
    sp.live("r2").hang = True                     # no answer: its node may be gone
    g.poll(timeout_s=0.1)
    g.respawn(["r0", "r1", "r2"])
    new = sp.live("r0").placement
    assert new is sp.live("r1").placement and new is not old and old.released
    assert new.spec.strategy == "PACK" and new.spec.bundles == ({"CPU": 1.0}, {"CPU": 2.0})
    assert new.spec.avoid_nodes == ("node-of-replica-0", "node-of-replica-1")  # every suspect node
    assert [sp.live(k).bundle for k in ("r0", "r1")] == [0, 1]
    moved = sp.live("r2").placement
    assert moved is not sp.placements[1] and sp.placements[1].released
    assert set(moved.spec.avoid_nodes) == {"node-of-replica-0", "node-of-replica-1"}
    # a spec rebuilt from the original one (placement "replica-0", released) follows the move
    g.respawn(["r1"], spec_for=lambda s: MemberSpec("r1", Counter, placement="replica-0", bundle=1))
    assert sp.live("r1").placement is new and sp.live("r1").bundle == 1


def test_a_standby_takes_a_members_place_with_its_placement_group_and_nothing_is_started():
    """take_over: the standby's actor and placement group move to the group under the lost
    member's key and spec; no actor is spawned; the old actor is killed and its group released
    once no member uses it; shutting either group down later leaves nothing behind."""
    sp = FakeSpawner()
    g, spares = ActorGroup("toy", sp), ActorGroup("spares", sp)
    g.reserve(PlacementSpec("replica-0", ({"CPU": 1.0}, {"CPU": 1.0}), "STRICT_PACK"))
    g.spawn(*[MemberSpec(f"r{i}", Counter, options={"num_cpus": 1}, placement="replica-0", bundle=i)
              for i in range(2)])
    spares.reserve(PlacementSpec("spare-0", ({"CPU": 1.0}, {"CPU": 1.0}), "STRICT_PACK"), wait=False)
    spares.spawn(*[MemberSpec(f"spare0-{i}", Counter, placement="spare-0", bundle=i) for i in range(2)])
    standby = [spares.handle("spare0-0"), spares.handle("spare0-1")]
    old_pg, spare_pg = sp.placements
    started = len(sp.actors)
    g.take_over(["r0", "r1"], spares, ["spare0-0", "spare0-1"])
    assert len(sp.actors) == started                      # nothing new started
    assert [g.handle("r0"), g.handle("r1")] == standby and g.keys == ["r0", "r1"]
    assert g.spec("r1").placement == "spare-0" and g.spec("r1").bundle == 1
    assert g.spec("r1").options == {"num_cpus": 1}       # the member's spec otherwise kept
    assert old_pg.released and not spare_pg.released and sp.killed == ["r0", "r1"]
    assert len(spares) == 0 and spares.placements == [] and g.placements == [spare_pg] and g.respawns == 2
    assert g.call("train") == [1, 1]                     # the standbys answer as the members
    spares.shutdown()
    assert not spare_pg.released                          # it belongs to g now
    g.shutdown()
    assert spare_pg.released
    with pytest.raises(ValueError, match="2 members to replace, 1 standbys"):
        g.take_over(["a", "b"], spares, ["c"])


def test_shutdown_kills_every_member_and_releases_every_placement_group():
    g, sp = make_group()
    g.reserve(PlacementSpec("extra", ({"CPU": 1.0},), detached=True))
    g.shutdown()
    assert all(not a.alive for a in sp.actors) and all(p.released for p in sp.placements)
    assert g.keys == [] and g.placements == []


def test_reserve_that_times_out_leaves_no_placement_group():
    sp = FakeSpawner(fail_ready=True)
    g = ActorGroup("toy", sp)
    with pytest.raises(TimeoutError):
        g.reserve(PlacementSpec("a", ({"CPU": 1.0},)), PlacementSpec("b", ({"CPU": 1.0},)))
    assert g.placements == [] and all(p.released for p in sp.placements) and len(sp.placements) == 2


# ---- FailurePolicy ---------------------------------------------------------------------------
def ev(*members, progressed=False, reason="boom"):
    return FailureEvent(tuple(members), Health.DEAD if members else Health.ALIVE, reason, progressed)


def test_policy_per_member_budget_and_the_reason_names_the_field():
    p = FailurePolicy(3, field="run.max_replacements")
    assert isinstance(p.decide(ev("w0", "w1")), Restart)
    assert isinstance(p.decide(ev("w2")), Restart)
    d = p.decide(ev("w0"))
    assert isinstance(d, Raise) and d.failures == 4
    assert "run.max_replacements=3" in d.reason and "w0" in d.reason and "boom" in d.reason


def test_policy_per_event_and_an_error_with_every_member_alive_costs_one():
    p = FailurePolicy(2, per="event")
    assert isinstance(p.decide(ev("a", "b", "c")), Restart)
    assert isinstance(p.decide(ev()), Restart)  # a method raised; nobody died
    assert isinstance(p.decide(ev()), Raise)


def test_policy_in_a_row_forgives_a_member_that_made_progress():
    p = FailurePolicy(2, field="faults.max_relaunches", consecutive=True, progress="committing a batch")
    assert [type(p.decide(ev("u1"))) for _ in range(2)] == [Restart, Restart]
    assert isinstance(p.decide(ev("u1", progressed=True)), Restart)  # streak back to 0
    assert isinstance(p.decide(ev("u2")), Restart)  # counted per member
    assert [type(p.decide(ev("u1"))) for _ in range(3)] == [Restart, Restart, Raise]
    d = p.decide(ev("u1", reason="read-only"))
    assert "u1 failed 4 times in a row without committing a batch" in d.reason
    assert "faults.max_relaunches=2" in d.reason and "read-only" in d.reason


def test_policy_backoff_grows_and_is_capped():
    p = FailurePolicy(10, backoff_s=1.0, backoff_factor=2.0, max_backoff_s=5.0)
    assert [p.decide(ev("x")).delay_s for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert FailurePolicy(3).decide(ev("x")).delay_s == 0.0


# ---- Controller ------------------------------------------------------------------------------
class ToyPart:
    """Members train in lockstep to ``total`` steps and checkpoint every ``every`` steps; a
    recovery respawns the failed members and puts everyone back to the checkpoint."""

    def __init__(self, group, n=3, total=8, every=2):
        self.group, self.n, self.total, self.every = group, n, total, every
        self.saved, self.recovered = 0, []

    def start(self):
        self.group.reserve(PlacementSpec("pg", tuple({"CPU": 1.0} for _ in range(self.n))))
        self.group.spawn(*[MemberSpec(f"w{i}", Counter, placement="pg", bundle=i) for i in range(self.n)])

    def advance(self):
        step = min(self.group.call("train"))
        if step % self.every == 0:
            self.saved = step
        return Progress(done=step >= self.total, step=step, metrics={"loss": 1.0 / step})

    def recover(self, event):
        self.recovered.append(event)
        self.group.respawn(event.members)
        self.group.call("set_steps", self.saved)


def toy(policy=None, n=3, **kw):
    sp = FakeSpawner()
    g = ActorGroup("toy", sp)
    part = ToyPart(g, n=n)
    sleeps = []
    ctl = Controller(part, policy or FailurePolicy(2), group=g, sleep=sleeps.append, **kw)
    return ctl, part, sp, sleeps


def test_controller_runs_start_to_finish():
    ctl, part, sp, _ = toy()
    assert ctl.step() is S.RUNNING and len(sp.actors) == 3
    assert ctl.run() is S.FINISHED and ctl.steps == 8
    assert [(t.before, t.after) for t in ctl.transitions] == [(S.STARTING, S.RUNNING), (S.RUNNING, S.FINISHED)]


def test_a_dead_member_is_restarted_as_the_policy_decides_and_recovery_is_entered_and_left():
    ctl, part, sp, _ = toy()
    for _ in range(4):
        ctl.step()                                 # started + 3 steps: checkpoint at 2
    sp.kill(sp.live("w1"))
    assert ctl.step() is S.RUNNING                 # failed, recovered, running again
    assert [(t.before, t.after) for t in ctl.transitions[-2:]] == [(S.RUNNING, S.RECOVERING),
                                                                   (S.RECOVERING, S.RUNNING)]
    (event,) = part.recovered
    assert event.members == ("w1",) and event.health is Health.DEAD and "died" in event.reason
    assert ctl.group.respawns == 1 and ctl.recoveries == 1
    assert [a.obj.steps for a in sp.actors if a.alive] == [2, 2, 2]   # back to the checkpoint
    assert ctl.run() is S.FINISHED


def test_the_run_gives_up_after_max_failures_with_the_reason():
    ctl, part, sp, _ = toy(FailurePolicy(2, field="run.max_replacements"))
    ctl.step()
    for _ in range(2):
        sp.kill(sp.live("w0"))
        assert ctl.step() is S.RUNNING
    sp.kill(sp.live("w2"))
    assert ctl.step() is S.ERRORED
    assert "w2" in ctl.error and "run.max_replacements=2" in ctl.error and "3 failures" in ctl.error
    assert len(part.recovered) == 2
    with pytest.raises(RunFailedError, match="run.max_replacements=2"):
        ctl.run()


def test_backoff_before_each_recovery_follows_the_policy():
    ctl, part, sp, sleeps = toy(FailurePolicy(5, backoff_s=0.5, backoff_factor=2.0, max_backoff_s=1.5))
    ctl.step()
    for _ in range(4):
        sp.kill(sp.live("w0"))
        ctl.step()
    assert sleeps == [0.5, 1.0, 1.5, 1.5]


def test_an_error_inside_a_live_member_costs_one_failure_and_recovers():
    ctl, part, sp, _ = toy(FailurePolicy(1))
    ctl.step()
    ctl.step()
    sp.live("w1").obj.fail_on = 1                 # raises once: the recovery resets steps below it
    assert ctl.step() is S.RUNNING
    (event,) = part.recovered
    assert event.members == () and event.health is Health.ALIVE and "collective timed out" in event.reason


def test_a_failed_recovery_stays_recovering_and_is_retried():
    ctl, part, sp, _ = toy(FailurePolicy(5))
    ctl.step()
    ctl.step()
    original = part.recover
    calls = []

    def flaky(event):
        calls.append(event)
        if len(calls) == 1:                        # the respawned actor dies again at once
            original(event)
            sp.kill(sp.live("w0"))
            part.group.call("ping")
        else:
            original(event)
    part.recover = flaky
    sp.kill(sp.live("w0"))
    assert ctl.step() is S.RECOVERING
    assert ctl.step() is S.RUNNING and len(calls) == 2 and ctl.recoveries == 1
    assert ctl.run() is S.FINISHED


def test_failures_a_poll_reports_are_recovered_without_an_exception():
    class Polling:
        def __init__(self):
            self.recovered, self.polls = [], 0

        def start(self):
            pass

        def advance(self):
            self.polls += 1
            dead = (FailureEvent(("unit-1",), Health.DEAD, "gone"),) if self.polls == 2 else ()
            return Progress(done=self.polls == 4, failures=dead)

        def recover(self, event):
            self.recovered.append(event.members)

    part = Polling()
    ctl = Controller(part, FailurePolicy(1, consecutive=True))
    assert ctl.run() is S.FINISHED and part.recovered == [("unit-1",)]


def test_driver_errors_propagate_and_error_the_run():
    class Broken(ToyPart):
        def advance(self):
            raise ValueError("bad batch size")

    sp = FakeSpawner()
    ctl = Controller(Broken(ActorGroup("toy", sp)), FailurePolicy(3))
    ctl.step()
    with pytest.raises(ValueError, match="bad batch size"):
        ctl.step()
    assert ctl.state is S.ERRORED and "bad batch size" in ctl.error


def test_callbacks_get_every_steps_metrics_and_the_result():
    got = []

    class Recorder:
        def on_metrics(self, step, metrics):
            got.append((step, dict(metrics)))

        def on_end(self, result):
            got.append(("end", result))

    ctl, part, sp, _ = toy(callbacks=[Recorder()])
    ctl.run()
    ctl.end("the result")
    assert [s for s, _ in got[:-1]] == list(range(1, 9)) and got[0][1] == {"loss": 1.0}
    assert got[-1] == ("end", "the result")
