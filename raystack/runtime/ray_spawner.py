"""The :class:`~raystack.runtime.group.Spawner` on a Ray cluster: placement groups, actors,
method calls as ObjectRefs, and Ray's errors read as member health."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import ray
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from raystack.runtime.group import MemberSpec, PlacementSpec
from raystack.runtime.health import Health

# how Ray says an actor died with its node (the GCS' death cause), besides a preemption flag
NODE_DEATH_MARKERS = ("node has died", "node died", "node is dead", "raylet died", "node was removed")


class RaySpawner:
    """Ray actors and placement groups for an :class:`~raystack.runtime.group.ActorGroup`."""

    def __init__(self) -> None:
        self._remote: dict[Any, Any] = {}

    def reserve(self, spec: PlacementSpec) -> Any:
        kw: dict[str, Any] = {"strategy": spec.strategy, "name": spec.ray_name}
        if spec.detached:
            kw["lifetime"] = "detached"
        return placement_group([dict(b) for b in spec.bundles], **kw)

    def ready(self, placements: Sequence[Any], timeout_s: float) -> None:
        if not placements:
            return
        try:
            ray.get([pg.ready() for pg in placements], timeout=timeout_s)
        except GetTimeoutError:
            wanted = [pg.bundle_specs for pg in placements]
            raise TimeoutError(f"placement groups not ready after {timeout_s:g}s: the cluster "
                               f"({ray.available_resources()}) cannot place bundles {wanted}") from None

    def release(self, placement: Any) -> None:
        try:
            remove_placement_group(placement)
        except Exception:  # noqa: BLE001 - already removed (or the cluster is gone)
            pass

    def _actor_class(self, cls: Any) -> Any:
        if hasattr(cls, "remote") and hasattr(cls, "options"):
            return cls
        if cls not in self._remote:
            self._remote[cls] = ray.remote(cls)
        return self._remote[cls]

    def spawn(self, spec: MemberSpec, placement: Any | None) -> Any:
        opts = dict(spec.options)
        if placement is not None:
            opts["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                placement, placement_group_bundle_index=spec.bundle)
        return self._actor_class(spec.actor_cls).options(**opts).remote(*spec.args, **dict(spec.kwargs))

    def kill(self, actor: Any) -> None:
        try:
            ray.kill(actor)
        except Exception:  # noqa: BLE001 - already dead
            pass

    def submit(self, actor: Any, method: str, args: tuple, kwargs: Mapping[str, Any]) -> Any:
        return getattr(actor, method).remote(*args, **kwargs)

    def wait(self, futures: Sequence[Any], timeout_s: float | None) -> list[Any]:
        if not futures:
            return []
        ready, _ = ray.wait(list(futures), num_returns=len(futures), timeout=timeout_s)
        return ready

    def result(self, future: Any) -> Any:
        return ray.get(future)

    def classify(self, error: BaseException) -> Health | None:
        return classify_ray_error(error)


def classify_ray_error(error: BaseException) -> Health | None:
    """Health of the member a Ray error came from (None: raised inside a live actor)."""
    if isinstance(error, (ActorUnavailableError, GetTimeoutError)):
        return Health.UNREACHABLE
    if isinstance(error, RayActorError):
        text = str(error).lower()
        lost = error.preempted or any(m in text for m in NODE_DEATH_MARKERS)
        return Health.NODE_LOST if lost else Health.DEAD
    return None
