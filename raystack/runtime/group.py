"""ActorGroup: the actors of one run, their placement groups, fan-out calls and health polls.

One group owns a set of members (one actor each, under a key such as ``rank-0`` or
``worker-3``) and the placement groups they were scheduled into. It spawns and respawns
members (a respawn may take a fresh placement group when the old bundle's node is gone),
fans a method call out to all or some members and gathers their typed replies (with a
timeout), and runs one batched health poll that returns a :class:`GroupStatus`.

Everything Ray-specific sits behind a small :class:`Spawner` protocol (``RaySpawner`` on a
cluster; tests pass a fake), so the group and the controller above it run without Ray.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

from raystack.runtime.health import GroupStatus, Health, MemberStatus

logger = logging.getLogger(__name__)

PING = "ping"  # the method every member answers cheaply: the default health poll
DEFAULT_POLL_TIMEOUT_S = 30.0
DEFAULT_READY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class PlacementSpec:
    """A placement group to reserve: bundles, strategy, and whether it outlives the driver."""

    name: str  # unique within the group
    bundles: tuple[Mapping[str, float], ...]
    strategy: str = "PACK"  # PACK | SPREAD | STRICT_PACK | STRICT_SPREAD
    detached: bool = False
    ray_name: str = ""  # a Ray-wide name, so a restarted driver can find the group again
    avoid_nodes: tuple[str, ...] = ()  # node ids no bundle may use (e.g. a node that may be lost)
    target_node: str = ""  # a node id the group should prefer (soft: elsewhere if it cannot)


@dataclass(frozen=True)
class MemberSpec:
    """One actor to spawn: its class, arguments, Ray options and where it is placed."""

    key: str
    actor_cls: Any  # a plain class (wrapped with ray.remote) or a Ray actor class
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)  # num_cpus, name, lifetime, ...
    placement: str | None = None  # a PlacementSpec name of this group, or None
    bundle: int = 0


@dataclass(frozen=True)
class Call:
    """A method call submitted to one member; ``future`` can be passed to other calls."""

    key: str
    method: str
    future: Any


class Spawner(Protocol):
    """What the group needs from a cluster (Ray, or a fake in tests)."""

    def reserve(self, spec: PlacementSpec) -> Any: ...
    def ready(self, placements: Sequence[Any], timeout_s: float) -> None: ...
    def release(self, placement: Any) -> None: ...
    def spawn(self, spec: MemberSpec, placement: Any | None) -> Any: ...
    def kill(self, actor: Any) -> None: ...
    def submit(self, actor: Any, method: str, args: tuple, kwargs: Mapping[str, Any]) -> Any: ...
    def wait(self, futures: Sequence[Any], timeout_s: float | None) -> list[Any]: ...
    def result(self, future: Any) -> Any: ...
    def classify(self, error: BaseException) -> Health | None: ...
    def node_of(self, placement: Any, bundle: int) -> str | None: ...
    def node_alive(self, node: str) -> bool: ...


def short_error(error: BaseException, limit: int = 300) -> str:
    """One line naming an error: its type and the first line of its message."""
    text = str(error).strip().splitlines()
    first = next((line.strip() for line in text if line.strip()), "")
    msg = f"{type(error).__name__}: {first}" if first else type(error).__name__
    return msg if len(msg) <= limit else msg[:limit - 3] + "..."


class MemberFailure(RuntimeError):
    """Calls to some members failed: ``errors`` per member key, ``health`` as the errors
    suggest (None: an exception raised inside a live member's method)."""

    def __init__(self, errors: Mapping[str, BaseException], health: Mapping[str, Health | None]):
        self.errors, self.health = dict(errors), dict(health)
        first = next(iter(self.errors))
        super().__init__(f"{len(self.errors)} member call(s) failed; {first}: "
                         f"{short_error(self.errors[first])}")

    @property
    def reason(self) -> str:
        key = next(iter(self.errors))
        return f"{key}: {short_error(self.errors[key])}"


class GroupTimeout(Exception):
    """A member did not answer in time (its Health is UNREACHABLE)."""


class ActorGroup:
    """Owns members and placement groups; fans out calls; polls health in one batch."""

    def __init__(self, name: str = "group", spawner: Spawner | None = None, *,
                 ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
                 poll_timeout_s: float = DEFAULT_POLL_TIMEOUT_S, poll_method: str = PING) -> None:
        if spawner is None:
            from raystack.runtime.ray_spawner import RaySpawner
            spawner = RaySpawner()
        self.name, self.spawner = name, spawner
        self.ready_timeout_s, self.poll_timeout_s, self.poll_method = ready_timeout_s, poll_timeout_s, poll_method
        self._placements: dict[str, tuple[PlacementSpec, Any]] = {}
        self._members: dict[str, tuple[MemberSpec, Any]] = {}
        self._last: dict[str, Health] = {}  # each member's health in the latest poll or call
        self.respawns = 0  # members replaced over the group's life
        self._moves = 0  # placement groups made to move members off a lost node

    # ---- placement groups ----------------------------------------------------------------------
    def reserve(self, *specs: PlacementSpec, wait: bool = True) -> list[Any]:
        """Create placement groups and wait until all are ready; on a timeout none is left.
        ``wait=False``: only create them (members spawned into them start once Ray places
        them; until then they wait for room)."""
        made = []
        try:
            for spec in specs:
                if spec.name in self._placements:
                    raise ValueError(f"{self.name}: placement {spec.name!r} already exists")
                made.append((spec, self.spawner.reserve(spec)))
            if wait:
                self.spawner.ready([pg for _, pg in made], self.ready_timeout_s)
        except BaseException:
            for _, pg in made:
                self.spawner.release(pg)
            raise
        for spec, pg in made:
            self._placements[spec.name] = (spec, pg)
        return [pg for _, pg in made]

    def adopt_placement(self, spec: PlacementSpec, placement: Any) -> None:
        """Take over a placement group that already exists (a restarted driver found it)."""
        self._placements[spec.name] = (spec, placement)

    def placement(self, name: str) -> Any:
        return self._placements[name][1]

    @property
    def placements(self) -> list[Any]:
        return [pg for _, pg in self._placements.values()]

    def release(self, name: str) -> None:
        """Remove a placement group (its members should be gone first)."""
        _, pg = self._placements.pop(name)
        self.spawner.release(pg)

    # ---- members -------------------------------------------------------------------------------
    def spawn(self, *specs: MemberSpec) -> list[Any]:
        """Start one actor per spec (in its placement group, if it names one)."""
        out = []
        for spec in specs:
            if spec.key in self._members:
                raise ValueError(f"{self.name}: member {spec.key!r} already exists")
            pg = self._placements[spec.placement][1] if spec.placement is not None else None
            actor = self.spawner.spawn(spec, pg)
            self._members[spec.key] = (spec, actor)
            self._last[spec.key] = Health.ALIVE
            out.append(actor)
        return out

    def adopt(self, spec: MemberSpec, actor: Any) -> None:
        """Take over an actor that already runs (found by name after a driver restart)."""
        self._members[spec.key] = (spec, actor)
        self._last[spec.key] = Health.ALIVE

    def respawn(self, keys: Iterable[str], *, spec_for: Callable[[MemberSpec], MemberSpec] | None = None,
                fresh_placement: bool | None = None) -> list[str]:
        """Kill and start again each member in ``keys`` (same position, same spec unless
        ``spec_for`` changes it).

        ``fresh_placement``: schedule the replacements in new placement groups (None: only
        members whose node was lost or may be: NODE_LOST or UNREACHABLE, since the old bundle
        still points at that node until Ray declares it dead). Members that shared a placement group get one new group together, with the
        old strategy (a PACK replica stays packed), avoiding the nodes they were lost on; the
        old group is released once no member uses it."""
        keys = list(keys)
        specs: dict[str, MemberSpec] = {}
        fresh: dict[str, list[str]] = {}  # old placement -> keys that move to a new one
        suspects: set[str] = set()
        for key in keys:
            spec, old = self._members[key]
            self.spawner.kill(old)
            new = spec_for(spec) if spec_for is not None else spec
            if new.placement not in self._placements and spec.placement in self._placements:
                new = replace(new, placement=spec.placement, bundle=spec.bundle)  # it moved earlier
            specs[key] = new
            if new.placement is None:
                continue
            node = self._node_of(spec)
            move = fresh_placement if fresh_placement is not None else self._lost_node(key, node)
            if move:
                fresh.setdefault(new.placement, []).append(key)
                if node is not None and (fresh_placement is None or not self.spawner.node_alive(node)):
                    suspects.add(node)  # a member moved only to start afresh keeps its node allowed
        for placement, moved in fresh.items():
            specs.update(self._fresh_placement(placement, [specs[k] for k in moved], tuple(sorted(suspects))))
        for key in keys:
            spec = specs[key]
            pg = self._placements[spec.placement][1] if spec.placement is not None else None
            old_placement = self._members[key][0].placement
            self._members[key] = (spec, self.spawner.spawn(spec, pg))
            self._last[key] = Health.ALIVE
            self.respawns += 1
            if old_placement != spec.placement:
                self._release_if_unused(old_placement)
            logger.info("%s: respawned %s%s", self.name, key,
                        f" in placement {spec.placement}" if old_placement != spec.placement else "")
        return keys

    def take_over(self, keys: Sequence[str], donor: "ActorGroup", donor_keys: Sequence[str]) -> None:
        """Put ``donor``'s member ``donor_keys[i]`` (a warm standby: started, its imports and
        data loaded) in the place of member ``keys[i]``, instead of starting a new actor: the
        actor and its placement group move here (a donor placement group moves with the first
        member that uses it), the member keeps its key, position and spec except where it is
        placed; the old actor is killed and its placement group released once unused."""
        keys, donor_keys = list(keys), list(donor_keys)
        if len(keys) != len(donor_keys):
            raise ValueError(f"{self.name}: {len(keys)} members to replace, {len(donor_keys)} standbys given")
        for key, dkey in zip(keys, donor_keys):
            spec, old = self._members[key]
            dspec, actor = donor._members.pop(dkey)
            donor._last.pop(dkey, None)
            if dspec.placement is not None and dspec.placement in donor._placements:
                if dspec.placement in self._placements:
                    raise ValueError(f"{self.name}: placement {dspec.placement!r} already exists")
                self._placements[dspec.placement] = donor._placements.pop(dspec.placement)
            self.spawner.kill(old)
            self._members[key] = (replace(spec, placement=dspec.placement, bundle=dspec.bundle), actor)
            self._last[key] = Health.ALIVE
            self.respawns += 1
            if spec.placement != dspec.placement:
                self._release_if_unused(spec.placement)
            logger.info("%s: %s taken over by standby %s of %s", self.name, key, dkey, donor.name)

    def _node_of(self, spec: MemberSpec) -> str | None:
        if spec.placement is None or spec.placement not in self._placements:
            return None
        try:
            return self.spawner.node_of(self._placements[spec.placement][1], spec.bundle)
        except Exception:  # noqa: BLE001 - the cluster cannot say: treat the node as unknown
            return None

    def _lost_node(self, key: str, node: str | None) -> bool:
        """Whether a member's node was lost or may be (so its old bundle must not be reused):
        NODE_LOST, UNREACHABLE (Ray may not have declared its node dead yet: a new group that
        avoids the node does not wait for that), or a node the cluster no longer counts alive."""
        if self._last.get(key) in (Health.NODE_LOST, Health.UNREACHABLE):
            return True
        return node is not None and not self.spawner.node_alive(node)

    def _fresh_placement(self, name: str, specs: list[MemberSpec], avoid: tuple[str, ...]) -> dict[str, MemberSpec]:
        """One new placement group for ``specs`` (members of placement ``name``): their
        bundles, the old strategy, avoiding ``avoid``; the specs moved into it, by key."""
        old, _ = self._placements[name]
        base = old.name.split("~")[0]
        self._moves += 1
        n = self._moves
        new = replace(old, name=f"{base}~{n}", bundles=tuple(old.bundles[s.bundle] for s in specs),
                      ray_name=f"{old.ray_name}~{n}" if old.ray_name else "", avoid_nodes=avoid, target_node="")
        self.reserve(new)
        return {s.key: replace(s, placement=new.name, bundle=i) for i, s in enumerate(specs)}

    def _release_if_unused(self, placement: str | None) -> None:
        if placement is not None and placement in self._placements and not any(
                s.placement == placement for s, _ in self._members.values()):
            self.release(placement)

    def kill(self, key: str) -> None:
        """Stop a member's actor; it stays a member (respawn or remove it next)."""
        self.spawner.kill(self._members[key][1])
        if not self._last.get(key, Health.ALIVE).failed:  # a lost node stays the reason
            self._last[key] = Health.DEAD

    def remove(self, key: str) -> None:
        """Kill a member; release its placement group if no other member uses it."""
        spec, actor = self._members.pop(key)
        self._last.pop(key, None)
        self.spawner.kill(actor)
        self._release_if_unused(spec.placement)

    def handle(self, key: str) -> Any:
        return self._members[key][1]

    def spec(self, key: str) -> MemberSpec:
        return self._members[key][0]

    def node(self, key: str) -> str | None:
        """The node id a member's bundle is on (None: no placement group, or unknown)."""
        return self._node_of(self._members[key][0])

    @property
    def keys(self) -> list[str]:
        return list(self._members)

    @property
    def handles(self) -> list[Any]:
        return [actor for _, actor in self._members.values()]

    def __contains__(self, key: str) -> bool:
        return key in self._members

    def __len__(self) -> int:
        return len(self._members)

    # ---- calls ---------------------------------------------------------------------------------
    def submit(self, key: str, method: str, *args, **kwargs) -> Call:
        """Submit one call to one member (its future may be an argument of other calls)."""
        return Call(key, method, self.spawner.submit(self._members[key][1], method, args, kwargs))

    def gather(self, calls: Sequence[Call], timeout_s: float | None = None) -> list[Any]:
        """Wait for every call (up to ``timeout_s``), then return their replies in order;
        raise :class:`MemberFailure` naming each member whose call failed or timed out."""
        futures = [c.future for c in calls]
        done = set(self.spawner.wait(futures, timeout_s))
        out, errors, health = [], {}, {}
        for c in calls:
            if c.future not in done:
                errors.setdefault(c.key, GroupTimeout(f"{c.method} gave no reply within {timeout_s}s"))
                health.setdefault(c.key, Health.UNREACHABLE)
                out.append(None)
                continue
            try:
                out.append(self.spawner.result(c.future))
            except Exception as exc:  # noqa: BLE001 - classified and re-raised as MemberFailure
                errors.setdefault(c.key, exc)
                health.setdefault(c.key, self.spawner.classify(exc))
                out.append(None)
        for key, h in health.items():
            if h is not None:
                self._last[key] = h
        if errors:
            raise MemberFailure(errors, health)
        return out

    def call(self, method: str, *args, keys: Iterable[str] | None = None, timeout_s: float | None = None,
             **kwargs) -> list[Any]:
        """The same call on every member (or ``keys``); the replies in member order."""
        keys = self.keys if keys is None else list(keys)
        return self.gather([self.submit(k, method, *args, **kwargs) for k in keys], timeout_s)

    def call_each(self, method: str, args_by_key: Mapping[str, tuple], timeout_s: float | None = None) -> list[Any]:
        """One call per member with its own arguments; the replies in ``args_by_key`` order."""
        return self.gather([self.submit(k, method, *a) for k, a in args_by_key.items()], timeout_s)

    def ask(self, key: str, method: str, *args, timeout_s: float | None = None, **kwargs) -> Any:
        """One member's reply to one call."""
        return self.gather([self.submit(key, method, *args, **kwargs)], timeout_s)[0]

    # ---- health --------------------------------------------------------------------------------
    def poll(self, method: str | None = None, keys: Iterable[str] | None = None,
             timeout_s: float | None = None) -> GroupStatus:
        """One batched health poll: ``method`` (default ``ping``) on every member at once;
        each member ALIVE with its reply, DEAD or NODE_LOST with the reason, or UNREACHABLE."""
        method = method or self.poll_method
        timeout_s = self.poll_timeout_s if timeout_s is None else timeout_s
        keys = self.keys if keys is None else list(keys)
        calls = [self.submit(k, method) for k in keys]
        done = set(self.spawner.wait([c.future for c in calls], timeout_s))
        members = {}
        for c in calls:
            if c.future not in done:
                members[c.key] = MemberStatus(c.key, Health.UNREACHABLE, f"no reply to {method} within {timeout_s:g}s")
                continue
            try:
                members[c.key] = MemberStatus(c.key, Health.ALIVE, reply=self.spawner.result(c.future))
            except Exception as exc:  # noqa: BLE001 - a member that cannot answer is not healthy
                health = self.spawner.classify(exc) or Health.DEAD
                members[c.key] = MemberStatus(c.key, health, short_error(exc))
        for key, m in members.items():
            self._last[key] = m.health
        return GroupStatus(members)

    # ---- cleanup -------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Kill every member and release every placement group (detached ones too)."""
        for _, actor in self._members.values():
            self.spawner.kill(actor)
        for _, pg in self._placements.values():
            self.spawner.release(pg)
        self._members.clear()
        self._placements.clear()
        self._last.clear()
