"""What a cluster offers (CPUs, GPUs, memory, custom resources) and how much a job needs.

`ClusterResources` comes from a connected Ray cluster (`from_ray`) or, before an embedded
cluster is started, from this machine (`this_machine`: what `ray.init()` would find), so an
infeasible job is refused before Ray starts. The memory estimates are deliberately simple
upper-bound-ish formulas (fp32 training): they exist to refuse what cannot fit, not to plan.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Mapping

GB = 1e9
PROCESS_OVERHEAD_BYTES = 400e6   # a Ray worker process with torch imported, before any model


@dataclass(frozen=True)
class ClusterResources:
    """Totals and the largest node's share; ``custom`` holds other resources (e.g. sim_node_0)."""

    cpus: float
    gpus: float
    memory_bytes: float
    node_cpus: float
    node_gpus: float
    node_memory_bytes: float
    custom: Mapping[str, float] = field(default_factory=dict)
    where: str = "this machine"

    def describe(self) -> str:
        return (f"{self.where}: {self.cpus:g} CPUs, {self.gpus:g} GPUs, "
                f"{self.memory_bytes / GB:.1f} GB memory")


def this_machine(num_cpus: float | None = None, num_gpus: float | None = None,
                 resources: Mapping[str, float] | None = None) -> ClusterResources:
    """The resources an embedded cluster started here with these arguments would have."""
    import psutil

    cpus = float(num_cpus) if num_cpus is not None else float(_detected_cpus())
    gpus = float(num_gpus) if num_gpus is not None else float(_detected_gpus())
    memory = float(psutil.virtual_memory().total)
    return ClusterResources(cpus, gpus, memory, cpus, gpus, memory, dict(resources or {}),
                            where="the embedded local cluster")


def _detected_cpus() -> int:
    try:  # Ray's own count (cgroup limits included), when Ray is importable
        from ray._private.utils import get_num_cpus
        return int(get_num_cpus())
    except Exception:
        return os.cpu_count() or 1


def _detected_gpus() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and not visible.strip():
        return 0
    try:
        import torch
        return int(torch.cuda.device_count())
    except Exception:
        return 0


def from_ray() -> ClusterResources:
    """The resources of the Ray cluster this process is connected to (alive nodes)."""
    import ray

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    per = [n.get("Resources", {}) for n in nodes] or [{}]
    mem = [r.get("memory", 0.0) + r.get("object_store_memory", 0.0) for r in per]
    total = dict(ray.cluster_resources())
    standard = {"CPU", "GPU", "memory", "object_store_memory"}
    custom = {k: v for k, v in total.items() if k not in standard and not k.startswith("node:")}
    return ClusterResources(
        cpus=total.get("CPU", 0.0), gpus=total.get("GPU", 0.0), memory_bytes=sum(mem),
        node_cpus=max(r.get("CPU", 0.0) for r in per), node_gpus=max(r.get("GPU", 0.0) for r in per),
        node_memory_bytes=max(mem), custom=custom,
        where=f"the Ray cluster at {ray.get_runtime_context().gcs_address}")


# -- memory estimates ------------------------------------------------------------------------

def transformer_activation_bytes(rows: int, seq: int, hidden: int, layers: int, heads: int, vocab: int) -> float:
    """Activations kept for backward by one fp32 decoder forward (Korthikanti et al.'s per-layer
    s*b*h*(34 + 5*a*s/h) bytes for 16-bit, doubled), plus the logits and their gradient."""
    per_layer = 2.0 * seq * rows * (34.0 * hidden + 5.0 * heads * seq)
    return layers * per_layer + 3.0 * 4.0 * rows * seq * vocab


def adam_training_bytes(parameters: int, optimizer: str = "adamw") -> float:
    """Weights, gradients and optimizer state of ``parameters`` trainable fp32 parameters."""
    states = 2 if optimizer == "adamw" else 1
    return 4.0 * parameters * (2 + states)
