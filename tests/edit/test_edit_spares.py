"""EDiT's spare replicas without a cluster: which spare replica takes which lost replica's place
(only complete ones, every member placed on a live host that was not lost, in bundle order), and
SpareReplicas against the kernel's fake spawner: filled up to the count, promoted by take_over
with each rank's take_rank call, refilled, shut down."""
from __future__ import annotations

from raystack.edit.spares import SpareMember, choose_spares
from raystack.runtime.group import ActorGroup, MemberSpec, PlacementSpec
from tests.runtime.fakes import FakeSpawner

def all_alive(host: str) -> bool:
    return True


def spare_set(n: int, host: str | None, shards: int = 2, bundles=None) -> list[SpareMember]:
    return [SpareMember(f"spare{n}-{s}", f"spare-{n}", s, host) for s in (bundles or range(shards))]


def test_lost_replicas_take_complete_spare_sets_in_order_with_members_in_bundle_order():
    spares = [*spare_set(0, "h0", bundles=[1, 0]), *spare_set(1, "h1")]       # set 0 listed out of bundle order
    assert choose_spares([3, 1], spares, 2, (), all_alive) == [(1, ("spare0-0", "spare0-1")),
                                                               (3, ("spare1-0", "spare1-1"))]
    # one lost replica named once per dead rank: it takes one set
    assert choose_spares([1, 1], spares, 2, (), all_alive) == [(1, ("spare0-0", "spare0-1"))]


def test_incomplete_unplaced_lost_or_dead_spare_sets_are_passed_over():
    incomplete = spare_set(0, "h0")[:1]                              # a member already used or gone
    unplaced = [*spare_set(1, "h1")[:1], SpareMember("spare1-1", "spare-1", 1, None)]   # still waiting for room
    on_lost = [*spare_set(2, "h2")[:1], SpareMember("spare2-1", "spare-2", 1, "lost")]  # one member on a lost host
    on_dead = spare_set(3, "dead")
    good = spare_set(4, "h4")
    asked: list[str] = []

    def alive(host: str) -> bool:
        asked.append(host)
        return host != "dead"
    chosen = choose_spares([0], [*incomplete, *unplaced, *on_lost, *on_dead, *good], 2, ("lost",), alive)
    assert chosen == [(0, ("spare4-0", "spare4-1"))]
    assert "lost" not in asked                                       # a lost host is not asked about
    assert choose_spares([0], [*incomplete, *unplaced, *on_lost, *on_dead], 2, ("lost",), alive) == []


def test_more_lost_replicas_than_usable_spares_leaves_the_rest_unpaired():
    assert choose_spares([2, 0, 1], spare_set(0, "h0", shards=3), 3, (), all_alive) == \
        [(0, ("spare0-0", "spare0-1", "spare0-2"))]
    assert choose_spares([0], [], 2, (), all_alive) == []


class Standby:
    """A rank actor stand-in: idle until it takes a rank."""

    def __init__(self) -> None:
        self.rank: int | None = None

    def ping(self) -> str:
        return "ok"

    def take_rank(self, rank: int, tag: str) -> tuple[int, str]:
        self.rank = rank
        return rank, tag


def test_spare_replicas_fill_promote_by_take_over_and_refill():
    from raystack.actors.edit_spares import SpareReplicas

    sp = FakeSpawner()
    ranks = ActorGroup("edit", sp)
    ranks.reserve(*[PlacementSpec(f"replica-{r}", ({"CPU": 1.0},) * 2) for r in range(2)])
    ranks.spawn(*[MemberSpec(f"rank-{i}", Standby, placement=f"replica-{i // 2}", bundle=i % 2) for i in range(4)])
    spares = SpareReplicas(2, lambda key, placement, bundle: MemberSpec(key, Standby, placement=placement,
                                                                        bundle=bundle), sp, poll_timeout_s=5.0)
    assert spares.fill(1, {"CPU": 1.0}, ["node-of-replica-0", None], avoid=("z", "a")) == 1
    assert spares.fill(1, {"CPU": 1.0}) == 0                         # already at the count
    assert spares.group.keys == ["spare0-0", "spare0-1"] and len(spares) == 2 and spares.wait(5.0) == 2
    pg = spares.group.placement("spare-0")
    assert pg.spec.bundles == ({"CPU": 1.0},) * 2 and pg.spec.avoid_nodes == ("a", "z")
    standby = spares.group.handles

    sp.dead_nodes.add("node-of-spare-0")                             # no usable spare: nothing moves
    assert spares.promote(ranks, ["rank-2", "rank-3"], ("node-of-replica-1",), lambda k: (0, "x")) == []
    assert len(spares) == 2 and spares.promoted == []
    sp.dead_nodes.clear()
    started = len(sp.actors)
    taken = spares.promote(ranks, ["rank-3", "rank-2"], ("node-of-replica-1",),
                           lambda k: (ranks.keys.index(k), "cfg"))
    assert taken == ["rank-2", "rank-3"] and spares.promoted == ["spare0-0", "spare0-1"]
    assert len(sp.actors) == started and [ranks.handle("rank-2"), ranks.handle("rank-3")] == standby
    assert [a.obj.rank for a in standby] == [2, 3]                   # each took its rank's take_rank call
    assert ranks.spec("rank-3").placement == "spare-0" and len(spares) == 0
    assert spares.fill(1, {"CPU": 1.0}, avoid=("node-of-replica-1",)) == 1
    assert spares.group.keys == ["spare1-0", "spare1-1"]             # a new spare replica, a new name
    refill = spares.group.placement("spare-1")
    spares.shutdown()
    assert refill.released and spares.group.placements == [] and len(spares) == 0
    assert not pg.released                                           # it belongs to the ranks' group now
    ranks.shutdown()
    assert pg.released
