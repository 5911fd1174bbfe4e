"""A fake cluster for the kernel's tests: actors are plain objects, calls run at once."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from raystack.runtime.health import Health


class FakeActorDied(Exception):
    def __init__(self, key: str, node_lost: bool = False) -> None:
        super().__init__(f"actor {key} died" + (" with its node" if node_lost else ""))
        self.node_lost = node_lost


@dataclass(eq=False)
class FakeFuture:
    value: Any = None
    error: BaseException | None = None
    done: bool = True


@dataclass(eq=False)
class FakePlacement:
    spec: Any
    released: bool = False


@dataclass(eq=False)
class FakeActor:
    key: str
    obj: Any
    placement: Any
    bundle: int
    alive: bool = True
    node_lost: bool = False
    hang: bool = False  # calls never answer (an unreachable actor)


@dataclass
class FakeSpawner:
    """Implements raystack.runtime.group.Spawner without Ray."""

    placements: list = field(default_factory=list)
    actors: list = field(default_factory=list)
    killed: list = field(default_factory=list)
    fail_ready: bool = False

    def reserve(self, spec):
        pg = FakePlacement(spec)
        self.placements.append(pg)
        return pg

    def ready(self, placements, timeout_s):
        if self.fail_ready:
            raise TimeoutError(f"placement groups not ready after {timeout_s}s")

    def release(self, placement):
        placement.released = True

    def spawn(self, spec, placement):
        actor = FakeActor(spec.key, spec.actor_cls(*spec.args, **dict(spec.kwargs)), placement, spec.bundle)
        self.actors.append(actor)
        return actor

    def kill(self, actor):
        actor.alive = False
        self.killed.append(actor.key)

    def submit(self, actor, method, args, kwargs):
        if not actor.alive:
            return FakeFuture(error=FakeActorDied(actor.key, actor.node_lost))
        if actor.hang:
            return FakeFuture(done=False)
        try:
            return FakeFuture(getattr(actor.obj, method)(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - the member's own error, as Ray would carry it
            return FakeFuture(error=exc)

    def wait(self, futures, timeout_s):
        return [f for f in futures if f.done]

    def result(self, future):
        if future.error is not None:
            raise future.error
        return future.value

    def classify(self, error):
        if isinstance(error, FakeActorDied):
            return Health.NODE_LOST if error.node_lost else Health.DEAD
        return None

    def live(self, key):
        """The live actor of member ``key`` (the latest incarnation)."""
        return next(a for a in reversed(self.actors) if a.key == key)


class Counter:
    """A toy training member: counts steps; ``fail_on`` raises inside the method."""

    def __init__(self, start: int = 0) -> None:
        self.steps = start
        self.fail_on: int | None = None

    def ping(self) -> str:
        return "ok"

    def train(self, n: int = 1) -> int:
        if self.fail_on is not None and self.steps + n > self.fail_on:
            raise RuntimeError(f"collective timed out at step {self.steps}")
        self.steps += n
        return self.steps

    def set_steps(self, n: int) -> None:
        self.steps = n
