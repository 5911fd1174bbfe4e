"""The :class:`~raystack.runtime.group.Spawner` on a Ray cluster: placement groups, actors,
method calls as ObjectRefs, and Ray's errors read as member health."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import ray
from ray.exceptions import ActorUnavailableError, GetTimeoutError, RayActorError
from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from raystack.runtime.group import MemberSpec, PlacementSpec
from raystack.runtime.health import Health

NODE_ID_LABEL = "ray.io/node-id"  # the label Ray gives every node: its id

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
        if spec.avoid_nodes:  # never back onto a node that was (or may be) lost
            kw["bundle_label_selector"] = [{NODE_ID_LABEL: f"!in({','.join(spec.avoid_nodes)})"}
                                           for _ in spec.bundles]
        if spec.target_node:
            kw["_soft_target_node_id"] = spec.target_node
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

    def node_of(self, placement: Any, bundle: int) -> str | None:
        """The node id the bundle was placed on (None: not placed, or unknown)."""
        nodes = placement_group_table(placement).get("bundles_to_node_id", {})
        return nodes.get(bundle) or None

    def node_alive(self, node: str) -> bool:
        """Whether the GCS still counts ``node`` among the alive nodes."""
        return any(n["NodeID"] == node and n["Alive"] for n in ray.nodes())


def classify_ray_error(error: BaseException) -> Health | None:
    """Health of the member a Ray error came from (None: raised inside a live actor)."""
    if isinstance(error, (ActorUnavailableError, GetTimeoutError)):
        return Health.UNREACHABLE
    if isinstance(error, RayActorError):
        text = str(error).lower()
        lost = error.preempted or any(m in text for m in NODE_DEATH_MARKERS)
        return Health.NODE_LOST if lost else Health.DEAD
    return None


def spread_nodes(count: int, bundle: Mapping[str, float], per_group: int = 1,
                 exclude: Sequence[str] = ()) -> list[str]:
    """Node ids to aim ``count`` placement groups of ``per_group`` bundles at, one node each
    while there are enough nodes that can hold a whole group (then round again); "" (no
    preference) when Ray is not connected or no node can hold one. A soft preference: Ray
    places a group elsewhere if its node has no room. Nodes in ``exclude`` (already used) are
    aimed at only after every other node."""
    if not ray.is_initialized():
        return [""] * count
    fits = [n["NodeID"] for n in sorted(ray.nodes(), key=lambda n: (n["NodeID"] in exclude, n["NodeID"]))
            if n["Alive"] and all(n["Resources"].get(k, 0.0) >= v * per_group for k, v in bundle.items())]
    return [fits[i % len(fits)] for i in range(count)] if len(fits) > 1 else [""] * count
