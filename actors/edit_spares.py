"""Spare replicas for EDiT (``run.spare_replicas``): whole replicas' worth of ranks started
ahead, idle, that take a lost replica's place without a process start.

:class:`SpareReplicas` owns the spares: one :class:`ActorGroup` whose members are
``spare<n>-<shard>``, each spare replica in a placement group ``spare-<n>`` of its own (the
replica's bundles, packed) aimed at a node no rank uses. ``fill`` starts spares up to a count
(not waited for), ``promote`` puts whole spare replicas in the place of replicas lost whole
(the kernel's ``take_over``: the actors and their placement group move to the ranks' group),
chosen by :func:`raystack.edit.spares.choose_spares`. It knows nothing of EDiT's config: the
owner gives the shards per replica, the count, the bundle, how to build a spare's member spec
and the arguments of each rank's ``take_rank`` call.
"""
from __future__ import annotations

import logging
from typing import Callable, Collection, Iterable, Mapping

from raystack.edit.spares import SpareMember, choose_spares
from raystack.runtime.group import PING, ActorGroup, MemberSpec, PlacementSpec, Spawner
from raystack.runtime.ray_spawner import spread_nodes

logger = logging.getLogger(__name__)

SPARES_GROUP = "edit-spares"
TAKE_RANK = "take_rank"  # the spare actor's method that makes it a rank: (rank, config) -> its pid

SpecFor = Callable[[str, str, int], MemberSpec]   # (member key, placement name, bundle) -> spec


class SpareReplicas:
    """Spare replicas of ``shards`` ranks each, started through ``spawner``; ``spec_for``
    builds a spare rank's member spec."""

    def __init__(self, shards: int, spec_for: SpecFor, spawner: Spawner, *, poll_timeout_s: float) -> None:
        self.shards, self.spec_for = shards, spec_for
        self._group = ActorGroup(SPARES_GROUP, spawner, poll_timeout_s=poll_timeout_s)
        self._sets_started = 0             # spare replicas started over the object's life (names them)
        self._promoted: list[str] = []     # spares that took a lost rank's place, in order

    @property
    def group(self) -> ActorGroup:
        """The spare ranks' ActorGroup (members ``spare<n>-<shard>``)."""
        return self._group

    @property
    def promoted(self) -> list[str]:
        """The spare members that took a lost rank's place, over the object's life."""
        return list(self._promoted)

    def __len__(self) -> int:
        """Spare ranks held now (not replicas)."""
        return len(self._group)

    def fill(self, count: int, bundle: Mapping[str, float], busy_nodes: Iterable[str | None] = (),
             avoid: Collection[str] = ()) -> int:
        """Start spare replicas up to ``count`` held: each a replica's ranks (``bundle`` each, packed)
        in a placement group of its own, aimed at a node not in ``busy_nodes`` (the ranks')
        and never at ``avoid`` (nodes lost or suspect). Not waited for: the run goes on while
        they start (a spare that has no room yet waits for it; one still starting is used
        anyway). Returns the spare replicas started."""
        missing = count - len(self._group) // self.shards
        if missing <= 0:
            return 0
        used = {n for n in busy_nodes if n} | set(avoid)
        targets = spread_nodes(missing, bundle, self.shards, exclude=tuple(used))
        for target in targets:
            n, self._sets_started = self._sets_started, self._sets_started + 1
            name = f"spare-{n}"
            self._group.reserve(PlacementSpec(name, tuple(dict(bundle) for _ in range(self.shards)),
                                              "STRICT_PACK" if target else "PACK", avoid_nodes=tuple(sorted(avoid)),
                                              target_node=target), wait=False)
            self._group.spawn(*[self.spec_for(f"spare{n}-{s}", name, s) for s in range(self.shards)])
        logger.info("edit: %d spare replica(s) starting", len(targets))
        return len(targets)

    def wait(self, timeout_s: float = 120.0) -> int:
        """Block until every spare has started (its imports and corpus loaded); the number of
        spare ranks. A spare that cannot start in time raises ``MemberFailure``."""
        self._group.call(PING, timeout_s=timeout_s)
        return len(self._group)

    def promote(self, group: ActorGroup, dead: Collection[str], lost_nodes: Collection[str],
                take_rank_args: Callable[[str], tuple]) -> list[str]:
        """Put whole spare replicas in the place of the replicas of ``group`` lost in ``dead``
        (each lost whole; replica r = ranks ``r*shards`` to ``(r+1)*shards - 1`` of
        ``group``), using spares placed on a live node not in ``lost_nodes``; each promoted
        rank is then called ``take_rank(*take_rank_args(key))``. Returns the ranks replaced
        this way (the others are for the owner to start afresh)."""
        if not len(self._group):
            return []
        keys, S = group.keys, self.shards
        members = [SpareMember(k, self._group.spec(k).placement, self._group.spec(k).bundle, self._group.node(k))
                   for k in self._group.keys]
        taken: list[str] = []
        for replica, spare_keys in choose_spares((keys.index(k) // S for k in dead), members, S, lost_nodes,
                                                 self._group.spawner.node_alive):
            ranks = keys[replica * S:(replica + 1) * S]
            group.take_over(ranks, self._group, spare_keys)
            pids = group.call_each(TAKE_RANK, {k: take_rank_args(k) for k in ranks})
            taken += ranks
            self._promoted += spare_keys
            logger.info("edit: spare replica %s took the place of %s (pids %s)", group.spec(ranks[0]).placement,
                        ", ".join(ranks), pids)
        return taken

    def shutdown(self) -> None:
        """Stop the spare actors and release their placement groups."""
        self._group.shutdown()
