"""The FSDP peer of the mLoRA pipeline on Ray: data-parallel workers over a sharded frozen base.

Each :class:`FSDPLoRAWorker` keeps 1/W of every decoder layer's weights
(:mod:`raystack.mlora.sharding`) and all-gathers a layer when it runs, through
``raystack.comm``, whose :class:`~raystack.comm.NetworkModel` delays every gather as over a
simulated link. :class:`FSDPLoRATrainer` trains a config's jobs on W such workers (the members
``rank-<i>`` of a kernel :class:`~raystack.runtime.group.ActorGroup`): every step,
all running jobs' batches form one BatchLoRA batch (one forward and one backward per step: the
fewest gathers FSDP can do), each worker takes its share of every adapter's rows, and the
adapters' gradients are all-reduced before each optimizer step. The mLoRA benchmark runs it
beside :class:`~raystack.actors.mlora.LoRAPipeline` over the same link.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray
import torch

from raystack.actors.collective import CommMember, form_comm_group
from raystack.comm import NetworkModel
from raystack.config import config_to_dict
from raystack.mlora.config import AdapterConfig, MLoRAConfig
from raystack.mlora.jobs import lane_step
from raystack.mlora.probe import MemoryProbe
from raystack.mlora.sharding import ShardedBase, split_rows
from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel
from raystack.mlora.trainer import check_config, make_jobs, tokenizer_of
from raystack.models import build_model
from raystack.models.layout import layout_of
from raystack.models.tokenizer import pad_token_id
from raystack.runtime.group import ActorGroup, MemberSpec
from raystack.runtime.messages import Message


@dataclass(frozen=True)
class FSDPWorkerStats(Message):
    busy_s: float  # inside train_step, waits for gathers included
    gathers: int
    layer_bytes: list[int]  # each layer's gathered weights
    comm: dict  # raystack.comm totals: bytes sent, seconds, seconds waited
    peak_bytes: int  # since setup
    resident_bytes: int


@ray.remote(max_restarts=0)
class FSDPLoRAWorker(CommMember):
    """One data-parallel rank: a sharded frozen base, replicated BatchLoRA adapters."""

    def __init__(self, threads: int = 1) -> None:
        torch.set_num_threads(threads)
        self.probe = MemoryProbe("cpu")
        self.busy = 0.0

    def pid(self) -> int:
        return os.getpid()

    def setup(self, base: str, seed: int, adapters: list[dict], optims: list[OptimSpec]) -> None:
        """Load the whole base (a built-in name or a checkpoint, any family of
        :mod:`raystack.models.layout`), keep this rank's shard of each layer, add the adapters
        (after ``join_comm``: gathers go through the group)."""
        model = build_model(base, seed=seed, field="base")
        units = layout_of(model).num_units(model)
        self.sharded = ShardedBase(model, self.comm.rank, self.comm.world_size,
                                   lambda i, chunk: self.comm.all_gather(chunk, async_op=True))
        self.stage = StageModel(model, 0, units)
        self.names = []
        for cfg, optim in zip(adapters, optims):
            spec = AdapterConfig(**cfg).spec()
            self.stage.add_adapter(spec, optim)
            self.names.append(spec.name)
        self.sharded.finish()  # DoRA's initial magnitudes gathered every layer
        self.sharded.reset_stats()
        self.comm.reset_stats()
        self.probe.reset_peak()

    def train_step(self, mb: MicroBatch, ids: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
        """Forward and backward of this rank's rows, the adapters' gradients summed over the
        ranks, then the step of every adapter in ``mb.step_adapters``."""
        t = time.perf_counter()
        losses = self.stage.forward(mb, ids, labels)
        self.stage.backward(MicroBatch(mb.key, mb.segments, mb.denominators))
        self.sharded.finish()
        params = [p for n in mb.step_adapters for p in self.stage.model.adapter_parameters(n)]
        for p in params:
            if p.grad is None:  # no rows of this adapter on this rank
                p.grad = torch.zeros_like(p)
        flat = self.comm.all_reduce(torch.cat([p.grad.reshape(-1) for p in params]))
        for p, g in zip(params, flat.split([p.numel() for p in params])):
            p.grad.copy_(g.view_as(p))
        self.stage.step_adapters(mb.step_adapters)
        self.busy += time.perf_counter() - t
        return losses

    def adapter_state(self, name: str) -> dict[str, torch.Tensor]:
        return self.stage.model.adapter_state(name)

    def stats(self) -> FSDPWorkerStats:
        return FSDPWorkerStats(self.busy, self.sharded.gathers, self.sharded.layer_bytes, self.comm.stats(),
                               self.probe.peak(), self.probe.current())


@dataclass
class FSDPResult:
    seconds: float = 0.0
    tokens: int = 0
    losses: dict[str, list[float]] = field(default_factory=dict)
    completion_s: dict[str, float] = field(default_factory=dict)
    adapters: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)  # rank 0's final weights
    workers: list[FSDPWorkerStats] = field(default_factory=list)


class FSDPLoRATrainer:
    """Trains ``cfg``'s jobs on ``world`` FSDP workers (the members of one ActorGroup)."""

    def __init__(self, cfg: MLoRAConfig, world: int, network: NetworkModel | None = None, *,
                 threads_per_worker: int = 1, worker_options: dict | None = None) -> None:
        check_config(cfg)  # fails before any actor starts
        if world < 1:
            raise ValueError(f"world must be >= 1, got {world}")
        self.cfg, self.world, self.network = cfg, world, network or NetworkModel()
        self.pad_id = pad_token_id(tokenizer_of(cfg))
        self.threads = threads_per_worker
        self.options = worker_options or {"num_cpus": 1}
        self.group = ActorGroup("mlora-fsdp")

    @property
    def workers(self) -> list[Any]:
        return self.group.handles

    def start(self) -> list[int]:
        """Start and set up the workers; returns their process ids."""
        self.group.spawn(*[MemberSpec(f"rank-{i}", FSDPLoRAWorker, (self.threads,), options=self.options)
                           for i in range(self.world)])
        form_comm_group(self.group, self.network, backend="gloo")
        jobs = make_jobs(self.cfg)
        adapters = [config_to_dict(self.cfg.adapter(n)) for n in jobs]
        base = str(Path(self.cfg.base).resolve()) if Path(self.cfg.base).is_dir() else self.cfg.base  # as actors see it
        self.group.call("setup", base, self.cfg.seed, adapters, [j.optim for j in jobs.values()])
        return self.group.call("pid")

    def run(self) -> FSDPResult:
        """Every step: one BatchLoRA batch of all running jobs, split over the workers."""
        if not len(self.group):
            self.start()
        jobs = make_jobs(self.cfg)
        for job in jobs.values():  # the whole batch in one forward: the fewest gathers per step
            job.micro_batch_size = job.batcher.batch_size
        result = FSDPResult()
        t0 = time.perf_counter()
        step = 0
        while any(not j.done for j in jobs.values()):
            active = [j for j in jobs.values() if not j.done]
            (mb, ids, labels), = lane_step(0, step, active, self.pad_id)
            result.tokens += int(ids.numel())
            parts = split_rows(mb, ids, labels, self.world)
            outs = self.group.call_each("train_step", dict(zip(self.group.keys, parts)))
            for job in active:
                job.losses.append(sum(o.get(job.name, 0.0) for o in outs))
                job.step += 1
                if job.done:
                    result.completion_s[job.name] = time.perf_counter() - t0
            step += 1
        result.seconds = time.perf_counter() - t0
        result.losses = {n: j.losses for n, j in jobs.items()}
        first = self.group.keys[0]
        result.adapters = {n: self.group.ask(first, "adapter_state", n) for n in jobs}
        result.workers = self.group.call("stats")
        return result

    def shutdown(self) -> None:
        self.group.shutdown()
