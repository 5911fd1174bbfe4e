"""Which device a group of training actors uses, and what each asks Ray for.

``plan_devices(want, actors, cluster_gpus)`` is pure: given the config's ``device`` (``auto``,
``cpu`` or ``cuda``), the number of actors and the GPUs the cluster has, it returns the
``num_gpus`` each actor requests, the device inside the actor and the collective backend.
With a GPU per actor, each actor gets its own (``num_gpus=1``) and the ranks talk over NCCL;
with fewer GPUs than actors, actors share them (a fraction that packs evenly) and talk over
gloo, since NCCL refuses two ranks on one GPU. ``auto`` uses GPUs when the cluster has any.
"""
from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import torch

Device = Literal["auto", "cpu", "cuda"]  # the config fields' type (run.device, pipeline.device)


@dataclass(frozen=True)
class DevicePlan:
    device: str            # "cuda" or "cpu", inside each actor
    gpus_per_actor: float  # Ray num_gpus per actor (0 on CPU)
    backend: str           # collective backend: "nccl" (a GPU each) or "gloo"

    @property
    def uses_gpu(self) -> bool:
        return self.device == "cuda"


CPU = DevicePlan("cpu", 0.0, "gloo")


def plan_devices(want: str, actors: int, cluster_gpus: float) -> DevicePlan:
    """The device plan for ``actors`` actors on a cluster with ``cluster_gpus`` GPUs."""
    if want not in typing.get_args(Device):
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {want!r}")
    if actors < 1:
        raise ValueError(f"need at least one actor, got {actors}")
    whole = int(math.floor(cluster_gpus + 1e-9))
    if want == "cpu" or (want == "auto" and whole < 1):
        return CPU
    if whole < 1:
        raise ValueError(f"device: cuda, but the cluster has {cluster_gpus:g} GPUs; "
                         "use device: auto or cpu, or add a GPU node")
    if whole >= actors:
        return DevicePlan("cuda", 1.0, "nccl")
    per_gpu = math.ceil(actors / whole)  # actors sharing one GPU
    return DevicePlan("cuda", round(1.0 / per_gpu, 4), "gloo")


def cluster_gpus() -> float:
    """GPUs in the connected Ray cluster (0 when none or not connected)."""
    import ray

    if not ray.is_initialized():
        return 0.0
    return float(ray.cluster_resources().get("GPU", 0.0))


def local_device(want: str = "auto") -> "torch.device":
    """Inside an actor: the torch device for config ``device`` ``want`` (cuda when Ray gave
    this actor a GPU, unless ``want`` is cpu)."""
    import torch

    return torch.device("cuda" if want != "cpu" and torch.cuda.is_available() else "cpu")


def to_cpu(obj):
    """``obj`` with every tensor in it (nested in dicts, lists, tuples) copied to the CPU."""
    import torch

    if isinstance(obj, torch.Tensor):
        return obj if obj.device.type == "cpu" else obj.cpu()
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj
