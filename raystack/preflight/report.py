"""What a preflight found a job needs, and the checks of those needs against a cluster."""
from __future__ import annotations

from dataclasses import dataclass

from raystack.config import Problems
from raystack.preflight.files import PreflightError
from raystack.preflight.resources import GB, ClusterResources


@dataclass(frozen=True)
class PreflightReport:
    """A job's needs as planned: its actors, what each reserves, and the memory estimate."""

    part: str
    actors: int
    cpus: float                 # Ray CPUs reserved in all
    gpus: float
    memory_bytes: float         # estimated peak memory of the job's processes in all
    actor_memory_bytes: float   # the largest single actor's estimate
    resources: ClusterResources | None = None

    def summary(self) -> str:
        where = f" on {self.resources.describe()}" if self.resources is not None else ""
        return (f"{self.part}: {self.actors} actors, {self.cpus:g} CPUs, {self.gpus:g} GPUs, "
                f"~{self.memory_bytes / GB:.2f} GB estimated{where}")


def check_fit(problems: Problems, res: ClusterResources, *, field: str, what: str, cpus: float,
              actor_cpus: float, memory: float, actor_memory: float, gpus: float = 0.0) -> None:
    """Add a problem for each need the cluster cannot meet (``what`` says whose needs they are)."""
    if cpus > res.cpus + 1e-9:
        problems.add(field, f"{what} reserve {cpus:g} CPUs in all; {res.where} has {res.cpus:g}")
    elif actor_cpus > res.node_cpus + 1e-9:
        problems.add(field, f"{what}: one actor reserves {actor_cpus:g} CPUs; the largest node of "
                     f"{res.where} has {res.node_cpus:g}")
    if gpus > res.gpus + 1e-9:
        problems.add(field, f"{what} need {gpus:g} GPUs; {res.where} has {res.gpus:g}")
    if memory > res.memory_bytes:
        problems.add(field, f"{what} need about {memory / GB:.1f} GB of memory (estimate); "
                     f"{res.where} has {res.memory_bytes / GB:.1f} GB")
    elif actor_memory > res.node_memory_bytes:
        problems.add(field, f"{what}: one actor needs about {actor_memory / GB:.1f} GB (estimate); the "
                     f"largest node of {res.where} has {res.node_memory_bytes / GB:.1f} GB")


def raise_problems(problems: Problems) -> None:
    problems.raise_if_any(PreflightError)
