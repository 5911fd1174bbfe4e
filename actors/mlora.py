"""mLoRA on Ray: PipelineStage actors and the LoRAPipeline driver that runs the LoRAPP schedule.

Each :class:`PipelineStage` actor holds one contiguous slice of the frozen base (chosen by
stage balancing) plus every running adapter's weights and optimizers for that slice. The
driver, :class:`LoRAPipeline`, admits jobs (scheduler + memory model), groups them into lanes,
builds each window's micro-batches, computes the schedule (a pure function) and submits every
stage's ops in schedule order; activations and gradients travel between stages as Ray
objects. Between windows it checkpoints every adapter; when a stage actor dies it starts a new
one and every adapter resumes from its last checkpoint.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import ray
import torch

from raystack import metrics
from raystack.comm.network import NetworkModel
from raystack.config import config_to_dict
from raystack.data.tokenizer import ByteTokenizer
from raystack.devices import cluster_gpus, local_device, plan_devices, to_cpu
from raystack.mlora.balance import StagePlan, measured_costs, param_costs, partition
from raystack.mlora.config import AdapterConfig, DatasetConfig, MLoRAConfig, TaskConfig
from raystack.mlora.export import load_checkpoint, save_checkpoint, save_peft
from raystack.mlora.jobs import JobState, form_lanes, lane_step
from raystack.mlora.link import InboundLink, Transfer
from raystack.mlora.footprint import Calibration, calibrate, default_budgets, device_capacity
from raystack.mlora.memory import (MB, AdmissionPolicy, JobRequest, PipelineMemoryModel, activation_prior,
                                   calibration_shapes, job_request)
from raystack.mlora.probe import MemoryProbe, trim_heap
from raystack.mlora.quantize import QuantReport, quantize_base
from raystack.mlora.schedule import LaneWork, lorapp_schedule
from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel, load_stage_base
from raystack.mlora.trainer import build_base, check_config, make_jobs

ACTOR_ERRORS = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)


@dataclass(frozen=True)
class StageInfo:
    """A started stage: its process and its memory before any adapter."""

    pid: int
    node_id: str
    runtime_bytes: int  # footprint before the base was loaded (0 on a GPU)
    fixed_bytes: int  # with its base slice loaded (and quantised), no adapter
    capacity_bytes: int  # its device's memory: the host's RAM, or the GPU's
    quantized: QuantReport | None = None


@dataclass(frozen=True)
class StageStats:
    busy_s: float
    activations: list[tuple[int, int, int]]  # (rows, tokens, bytes saved for backward) per forward
    peak_bytes: int  # since the previous stats() call
    resident_bytes: int  # now, after freed memory went back to the OS
    link_wait_s: float  # waiting for the simulated link, in total


@ray.remote(max_restarts=0)
class PipelineStage:
    """One pipeline stage: units ``[start, end)`` of the base, BatchLoRA adapters, optimizers."""

    def __init__(self, cfg: dict, start: int, end: int, index: int, threads: int = 1) -> None:
        torch.set_num_threads(threads)
        self.index = index
        device = local_device(cfg.get("device", "auto"))
        self.probe = MemoryProbe(device)
        build_base(MLoRAConfig(base=cfg["base"]), device="meta")  # imports the model code: runtime, not base
        runtime = self.probe.current()
        if Path(cfg["base"]).is_dir() and any(Path(cfg["base"]).glob("*.safetensors")):
            base = load_stage_base(cfg["base"], start, end)  # only this stage's tensors
        else:
            base = build_base(MLoRAConfig(base=cfg["base"], seed=cfg["seed"]))
        quantized = quantize_base(base, cfg["quantize"]) if cfg.get("quantize") else None
        base.to(device)  # cuda when the pipeline gave this stage a GPU
        self.stage = StageModel(base, start, end)  # (which returns the dropped layers' memory to the OS)
        self.info = StageInfo(os.getpid(), ray.get_runtime_context().get_node_id(), runtime, self.probe.current(),
                              device_capacity(device), quantized)
        network = cfg.get("link") or NetworkModel()
        self.simulate_link = not network.is_ideal
        self.from_prev, self.from_next = InboundLink(network), InboundLink(network)
        self.busy = 0.0
        self._busy_metric = metrics.counter("mlora_stage_busy_seconds", "compute seconds per stage", ("stage",))

    def ready(self) -> StageInfo:
        return self.info

    def calibrate(self, shapes: list[tuple[int, int]], targets: list[str], r: int) -> Calibration:
        """The memory model's first samples: throwaway micro-batches of each shape."""
        return calibrate(self.stage, self.probe, shapes, targets, r, seed=self.index)

    def add_adapter(self, cfg: dict, optim: OptimSpec, ckpt: dict | None = None) -> None:
        a = AdapterConfig(**cfg)
        self.stage.add_adapter(a.spec(), optim)
        if ckpt is not None:
            self.stage.restore(a.name, ckpt)

    def remove_adapter(self, name: str) -> None:
        self.stage.remove_adapter(name)

    def adapters(self) -> list[str]:
        return list(self.stage.steps)

    def forward(self, mb: MicroBatch, x: torch.Tensor | Transfer, labels: torch.Tensor | None = None) -> Any:
        x = self.from_prev.receive(x)
        t = time.perf_counter()
        out = self.stage.forward(mb, x, labels)
        self._account(time.perf_counter() - t)
        return self._send(to_cpu(out))  # activations travel between stages through the object store

    def backward(self, mb: MicroBatch, grad: torch.Tensor | Transfer | None = None) -> Any:
        grad = self.from_next.receive(grad)
        t = time.perf_counter()
        out = self.stage.backward(mb, grad)
        self._account(time.perf_counter() - t)
        return self._send(to_cpu(out))

    def _send(self, out: Any) -> Any:
        """Stamp a tensor for the next stage when the link between stages is simulated."""
        return Transfer.send(out) if self.simulate_link and isinstance(out, torch.Tensor) else out

    def _account(self, dt: float) -> None:
        self.busy += dt
        self._busy_metric.inc(dt, tags={"stage": str(self.index)})

    def checkpoint(self, names: list[str]) -> dict[str, dict]:
        trim_heap()  # the window's freed activations: else the copies below come on top (-190 MB, 607M int8 base)
        return to_cpu({n: self.stage.checkpoint(n) for n in names})

    def stats(self) -> StageStats:
        """Compute time so far, activation samples and peak memory since the last call (which
        starts a new peak window, after returning freed memory to the OS)."""
        samples, self.stage.activation_bytes = self.stage.activation_bytes, []
        peak = self.probe.peak()
        trim_heap()
        self.probe.reset_peak()
        return StageStats(self.busy, samples, peak, self.probe.current(),
                          self.from_prev.waited_s + self.from_next.waited_s)

    def reset(self) -> None:
        """Drop in-flight activations and all adapters (before a restore)."""
        self.stage.saved.clear()
        for name in list(self.stage.steps):
            self.stage.remove_adapter(name)


@dataclass(frozen=True)
class StagePeak:
    """A stage's peak memory in one window: predicted before it ran, and measured."""

    predicted_bytes: float
    measured_bytes: int
    budget_bytes: float

    @property
    def error(self) -> float:
        """(predicted - measured) / measured."""
        return self.predicted_bytes / self.measured_bytes - 1.0 if self.measured_bytes else 0.0


@dataclass
class WindowReport:
    window: int
    seconds: float
    tokens: int
    idle_fraction: list[float]
    losses: dict[str, float]
    lanes: tuple[tuple[str, ...], ...] = ()  # the jobs that ran, by lane (a lane's jobs share micro-batches)
    memory: list[StagePeak] = field(default_factory=list)  # per stage

    @property
    def jobs(self) -> tuple[str, ...]:
        return tuple(sorted(n for lane in self.lanes for n in lane))


@dataclass
class RunResult:
    adapters: dict[str, str] = field(default_factory=dict)  # name -> exported PEFT dir
    losses: dict[str, list[float]] = field(default_factory=dict)
    windows: list[WindowReport] = field(default_factory=list)
    restarts: int = 0
    plan: StagePlan | None = None
    seconds: float = 0.0
    completion_s: dict[str, float] = field(default_factory=dict)
    admitted_window: dict[str, int] = field(default_factory=dict)  # the window a job first ran in
    finished_window: dict[str, int] = field(default_factory=dict)  # the window it finished in
    refused: dict[str, str] = field(default_factory=dict)  # jobs that can never fit: why, with the numbers

    @property
    def tokens(self) -> int:
        return sum(w.tokens for w in self.windows)


class LoRAPipeline:
    """Trains the config's tasks (and any added later) on ``cfg.pipeline.stages`` stage actors."""

    def __init__(self, cfg: MLoRAConfig, *, threads_per_stage: int = 1, progress: bool = True,
                 stage_options: dict | None = None) -> None:
        check_config(cfg)  # fails before any actor starts
        for d in cfg.datasets:  # actors and later reads may run in another directory
            if d.path is not None:
                d.path = str(Path(d.path).resolve())
        self.cfg = cfg
        self.threads = threads_per_stage
        self.progress = progress
        self.devices = plan_devices(cfg.pipeline.device, cfg.pipeline.stages, cluster_gpus())
        self.stage_options = stage_options or {"num_cpus": 1}
        if self.devices.uses_gpu:
            self.stage_options = {**self.stage_options, "num_gpus": self.devices.gpus_per_actor}
        meta = build_base(cfg, device="meta")
        if cfg.pipeline.balance == "measured":  # time each unit's forward+backward here, once
            costs = measured_costs(build_base(cfg), seq=max(t.cutoff_len for t in cfg.tasks))
        else:
            costs = param_costs(meta)
        self.plan = partition(costs, cfg.pipeline.stages)
        self.n_layers = len(meta.model.layers)
        self.meta = meta
        sizes = param_costs(meta)  # fp32 bytes of each stage's base, until the stage measures itself
        fixed_prior = [4.0 * sum(sizes[a:b]) for a, b in self.plan.bounds]
        self.memory = PipelineMemoryModel(
            cfg.pipeline.stages, fixed_prior, activation_prior(meta, self.plan.bounds), stage_costs=self.plan.costs,
            max_lanes=cfg.pipeline.lanes, in_flight_cap=cfg.pipeline.in_flight_cap, window_steps=cfg.pipeline.window_steps)
        s = cfg.scheduler
        budget = math.inf if s.memory_budget_mb is None else s.memory_budget_mb * MB  # None: set at start()
        self.policy = AdmissionPolicy(self.memory, [budget] * cfg.pipeline.stages, s.max_concurrent,
                                      s.strict_priority, s.memory_margin)
        self.refused: dict[str, str] = {}
        self.admitted_window: dict[str, int] = {}
        self.finished_window: dict[str, int] = {}
        self._window_index = 0
        self._waiting: dict[str, str] = {}
        self.out = Path(cfg.output_dir)
        self.stages: list[Any] = []
        self.pending: list[tuple[TaskConfig, int]] = []
        self.running: dict[str, JobState] = {}
        self.finished: set[str] = set()
        self.resumed_done: dict[str, str] = {}  # finished in an earlier run: name -> exported dir
        self._admitted: dict[str, dict] = {}  # data position at admission of jobs started from scratch
        self.tasks: dict[str, TaskConfig] = {}
        self._arrivals = 0
        self._loss_gauge = metrics.gauge("mlora_loss", "latest training loss per adapter", ("adapter",))
        self._step_gauge = metrics.gauge("mlora_step", "optimizer steps done per adapter", ("adapter",))
        self._tokens = metrics.counter("mlora_tokens", "tokens trained on (all adapters)")
        self._idle = metrics.gauge("mlora_stage_idle_fraction", "idle fraction of a stage in the last window", ("stage",))
        for t in cfg.tasks:
            self.add_task(t)

    # -- jobs -----------------------------------------------------------------------------
    def add_task(self, task: TaskConfig, adapter: AdapterConfig | None = None, dataset: DatasetConfig | None = None) -> None:
        """Queue a job; it starts at the next window boundary the scheduler admits it."""
        if adapter is not None:
            self.cfg.adapters.append(adapter)
        if dataset is not None and dataset.name not in {d.name for d in self.cfg.datasets}:
            self.cfg.datasets.append(dataset)
        if adapter is not None or dataset is not None:
            self.cfg.tasks = list({t.adapter: t for t in [*self.cfg.tasks, task]}.values())
            self.cfg.validate()
            check_config(self.cfg)
        self.pending.append((task, self._arrivals))
        self._arrivals += 1

    def _ckpt_path(self, name: str) -> Path:
        return self.out / "checkpoints" / f"{name}.pt"

    def _request(self, task: TaskConfig, arrival: int = 0) -> JobRequest:
        return job_request(task, self.cfg.adapter(task.adapter), self.meta, self.plan.bounds, arrival)

    def _admit(self) -> None:
        """Start the pending jobs the admission policy lets in; refuse those that can never fit."""
        decision = self.policy.decide([self._request(self.tasks[n]) for n in self.running],
                                      [self._request(t, arr) for t, arr in self.pending])
        for name, why in decision.refused.items():
            self.refused[name] = why
            self.pending = [(t, a) for t, a in self.pending if t.adapter != name]
            self._log(f"refused {why}")
        if self.pending and not self.running and not decision.start:
            raise RuntimeError(f"no pending job can start on an idle pipeline: {decision.waiting}")
        for name in sorted(set(decision.waiting) - set(self._waiting)):
            self._log(f"{name} waits: {decision.waiting[name]}")
        self._waiting = decision.waiting
        for name in decision.start:
            task = next(t for t, _ in self.pending if t.adapter == name)
            self.pending = [(t, a) for t, a in self.pending if t.adapter != name]
            sub = MLoRAConfig(base=self.cfg.base, seed=self.cfg.seed, datasets=self.cfg.datasets,
                              adapters=self.cfg.adapters, tasks=[task])
            job = make_jobs(sub)[name]
            ckpt = self._own_checkpoint(task)
            if ckpt is not None and ckpt.get("finished"):
                continue
            self._install(job, ckpt)
            self.running[name] = job
            self.admitted_window.setdefault(name, self._window_index)
            if ckpt is None:  # no checkpoint needed: a failure before its first one starts it over
                self._admitted[name] = job.batcher.state_dict()
            self._log(f"admitted {name} ({job.total_steps} steps, from step {job.step})")

    def _own_checkpoint(self, task: TaskConfig) -> dict | None:
        """The job's checkpoint in ``output_dir`` if written for this config (another config's is
        deleted); a job it marks finished is recorded as done in an earlier run."""
        name = task.adapter
        self.tasks[name] = task
        ckpt = load_checkpoint(self._ckpt_path(name))
        if ckpt is not None and ckpt.get("fingerprint") != self._fingerprint(name):
            self._log(f"{name}: ignoring the checkpoint in {self.out}, written for another config")
            self._ckpt_path(name).unlink()  # a failure before this job's first checkpoint must not find it
            return None
        if ckpt is not None and ckpt.get("finished"):
            self.finished.add(name)
            self.resumed_done[name] = str(self.out / "adapters" / name)
        return ckpt

    def _install(self, job: JobState, ckpt: dict | None) -> None:
        acfg = config_to_dict(self.cfg.adapter(job.name))
        if ckpt is not None:
            job.step, job.losses = ckpt["step"], list(ckpt["losses"])
            job.batcher.load_state_dict(ckpt["batcher"])
        ray.get([st.add_adapter.remote(acfg, job.optim, ckpt["stages"][i] if ckpt else None)
                 for i, st in enumerate(self.stages)])

    def _checkpoint(self, refs: list) -> dict[str, list[dict]]:
        """Write the checkpoint of every job in the stages' ``checkpoint`` calls ``refs`` (a job
        that is done is marked finished); returns each job's per-stage parts."""
        parts = ray.get(refs)
        per_job = {name: [p[name] for p in parts] for name in parts[0]}
        for name in per_job:
            job = self.running[name]
            save_checkpoint(self._ckpt_path(name), {
                "stages": per_job[name], "step": job.step, "losses": job.losses,
                "batcher": job.batcher.state_dict(), "finished": job.done,
                "fingerprint": self._fingerprint(name)})
        return per_job

    def _fingerprint(self, name: str) -> str:
        """What a checkpoint must match to be resumed: base, adapter, task and dataset configs."""
        import hashlib
        import json

        task = self.tasks[name]
        doc = {"base": self.cfg.base, "seed": self.cfg.seed, "adapter": config_to_dict(self.cfg.adapter(name)),
               **({"quantize": self.cfg.quantize} if self.cfg.quantize else {}),
               "task": config_to_dict(task), "dataset": config_to_dict(self.cfg.dataset(task.dataset))}
        return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def _export(self, name: str, stage_parts: list[dict]) -> str:
        """Write the PEFT adapter from the weights in the job's checkpoint parts."""
        state: dict[str, torch.Tensor] = {}
        for part in stage_parts:
            state.update(part["weights"])
        return str(save_peft(self.out / "adapters" / name, self.cfg.adapter(name).spec(), state, self.cfg.base))

    # -- stages ---------------------------------------------------------------------------
    def _start_stage(self, i: int) -> Any:
        a, b = self.plan.bounds[i]
        p = self.cfg.pipeline
        base = {"base": self.cfg.base, "seed": self.cfg.seed, "device": p.device, "quantize": self.cfg.quantize,
                "link": p.link}
        return PipelineStage.options(**self.stage_options).remote(base, a, b, i, self.threads)

    def start(self) -> None:
        """Start the stage actors and measure each one's memory before the first admission."""
        self.stages = [self._start_stage(i) for i in range(self.cfg.pipeline.stages)]
        self.stage_info: list[StageInfo] = ray.get([st.ready.remote() for st in self.stages])
        self.pids = [info.pid for info in self.stage_info]
        self._calibrate()
        self._log(f"{len(self.stages)} stages, units per stage {self.plan.bounds} (balanced by {self.cfg.pipeline.balance}, "
                  f"imbalance {self.plan.imbalance:.2f}); memory per stage (MB, base / budget): "
                  + ", ".join(f"{f / MB:.0f} / {b / MB:.0f}" for f, b in zip(self.memory.fixed, self.policy.budgets)))

    def _calibrate(self) -> None:
        """Each stage's footprint, first activation samples and peak ratio, and, when the
        config sets no budget, each stage's share of its node's (or GPU's) memory."""
        targets = sorted({m for a in self.cfg.adapters for m in a.target_modules})
        r = max(a.r for a in self.cfg.adapters)
        shapes = calibration_shapes(max(t.cutoff_len for t in self.cfg.tasks))
        for i, cal in enumerate(ray.get([st.calibrate.remote(shapes, targets, r) for st in self.stages])):
            self.memory.calibrate(i, cal)
        if self.cfg.scheduler.memory_budget_mb is None:
            self.policy.budgets = default_budgets([i.capacity_bytes for i in self.stage_info],
                                                  [i.node_id for i in self.stage_info],
                                                  self.devices.gpus_per_actor if self.devices.uses_gpu else None)

    def _recover(self) -> None:
        for i, st in enumerate(self.stages):
            try:
                ray.get(st.ready.remote(), timeout=60)
            except (*ACTOR_ERRORS, ray.exceptions.GetTimeoutError):
                self._log(f"stage {i} died: starting a new one")
                self.stages[i] = self._start_stage(i)
        ray.get([st.reset.remote() for st in self.stages])
        for name, job in self.running.items():
            ckpt = load_checkpoint(self._ckpt_path(name))
            if ckpt is None:  # failed before its first checkpoint: from the start (adapter
                job.step, job.losses = 0, []  # initialisation and dropout streams are seeded)
                job.batcher.load_state_dict(self._admitted[name])
            self._install(job, ckpt)
            self._log(f"{name} resumes from step {job.step}")

    # -- the loop -------------------------------------------------------------------------
    def run(self, on_window: Callable[[int, "LoRAPipeline"], None] | None = None,
            after_submit: Callable[[int, "LoRAPipeline"], None] | None = None) -> RunResult:
        """Train until every job (including ones added meanwhile) is done; returns the result."""
        for task, _ in list(self.pending):  # done in an earlier run into output_dir: reported, no actor started
            ckpt = self._own_checkpoint(task)
            if ckpt is not None and ckpt.get("finished"):
                self.pending = [(t, a) for t, a in self.pending if t.adapter != task.adapter]
        if not self.stages and (self.pending or self.running):
            self.start()
        result = RunResult(plan=self.plan)
        self.admitted_window, self.finished_window, self.refused = {}, {}, {}
        t0 = time.perf_counter()
        window = 0
        max_restarts = self.cfg.pipeline.max_restarts * len(self.stages)
        while self.pending or self.running:
            self._window_index = window
            self._admit()
            if not self.running:
                continue
            try:
                report, ckpt_refs = self._window(window, after_submit)
            except ACTOR_ERRORS as e:
                result.restarts += 1
                if result.restarts > max_restarts:
                    raise RuntimeError(f"stage failures exceeded {max_restarts} restarts") from e
                self._log(f"window {window} failed ({type(e).__name__}); restoring from checkpoints")
                self._recover()
                continue
            result.windows.append(report)
            done = [n for n, j in self.running.items() if j.done]
            parts = self._checkpoint(ckpt_refs)
            for name in done:
                result.adapters[name] = self._export(name, parts[name])
                result.completion_s[name] = time.perf_counter() - t0
                self.finished_window[name] = window
                self.finished.add(name)
                self._log(f"{name} finished: exported to {result.adapters[name]}")
            ray.get([st.remove_adapter.remote(name) for name in done for st in self.stages])
            for name, job in self.running.items():
                result.losses[name] = list(job.losses)
            for name in done:
                del self.running[name]
                self._admitted.pop(name, None)  # finished: never restarted from admission again
            window += 1
            if on_window:
                on_window(window, self)
        result.adapters.update({n: d for n, d in self.resumed_done.items() if n not in result.adapters})
        result.seconds = time.perf_counter() - t0
        result.admitted_window, result.finished_window = dict(self.admitted_window), dict(self.finished_window)
        result.refused = dict(self.refused)
        return result

    def _window(self, window: int, after_submit: Callable | None) -> tuple[WindowReport, list]:
        """Run one window's schedule; returns its report and the stages' checkpoint calls,
        submitted behind the window's ops (a stage writes its part as soon as its own last op
        is done, while the other stage may still compute)."""
        d = len(self.stages)
        jobs = self.running
        lanes = form_lanes(sorted(jobs), d, self.cfg.pipeline.lanes)
        cap = min(self.cfg.pipeline.window_steps, *(self.tasks[n].save_steps for n in jobs),
                  *(min(jobs[n].remaining for n in lane) for lane in lanes))
        data = []  # per lane: per step: micro-batches
        for li, lane in enumerate(lanes):
            data.append([lane_step(li, k, [jobs[n] for n in lane], ByteTokenizer.pad_id) for k in range(cap)])
        costs = [c / max(self.plan.costs) for c in self.plan.costs]
        sched = lorapp_schedule(d, [LaneWork(cap, len(steps[0])) for steps in data],
                                forward_cost=costs, backward_cost=[2 * c for c in costs],
                                max_in_flight=self.cfg.pipeline.in_flight_cap)
        shapes = {op: tuple(data[op.lane][op.step][op.micro][1].shape) for op in sched.order[0]}
        predicted = self.memory.predict_order(sched.order, shapes.__getitem__,
                                              [self._request(self.tasks[n]) for n in jobs])
        busy0 = [s.busy_s for s in ray.get([st.stats.remote() for st in self.stages])]  # also starts a peak window
        t0 = time.perf_counter()
        refs: dict[tuple, Any] = {}
        puts: dict[tuple, tuple] = {}
        loss_refs, done_refs = [], []
        tokens = 0
        for (s, op) in sorted(sched.start, key=lambda k: (sched.start[k], k[0])):
            mb, ids, labels = data[op.lane][op.step][op.micro]
            if mb.key not in puts:
                puts[mb.key] = (ray.put(ids), ray.put(labels))
                tokens += int(ids.numel())
            ids_ref, labels_ref = puts[mb.key]
            st = self.stages[s]
            if op.kind == "F":
                x = ids_ref if s == 0 else refs[("F", s - 1, mb.key)]
                ref = st.forward.remote(mb, x, labels_ref if s == d - 1 else None)
                refs[("F", s, mb.key)] = ref
                if s == d - 1:
                    loss_refs.append((op, ref))
            else:
                grad = None if s == d - 1 else refs[("B", s + 1, mb.key)]
                ref = st.backward.remote(mb, grad)
                refs[("B", s, mb.key)] = ref
                if s == 0:
                    done_refs.append(ref)
        ckpt_refs = [st.checkpoint.remote(list(jobs)) for st in self.stages]
        if after_submit:
            after_submit(window, self)
        losses_out = ray.get([r for _, r in loss_refs])
        ray.get(done_refs)
        seconds = time.perf_counter() - t0
        per_step: dict[tuple[str, int], float] = {}
        for (op, _), losses in zip(loss_refs, losses_out):
            for name, v in losses.items():
                per_step[(name, op.step)] = per_step.get((name, op.step), 0.0) + v
        for lane in lanes:
            for n in lane:
                jobs[n].losses.extend(per_step[(n, k)] for k in range(cap))
                jobs[n].step += cap
                self._loss_gauge.set(jobs[n].losses[-1], tags={"adapter": n})
                self._step_gauge.set(jobs[n].step, tags={"adapter": n})
        stats = ray.get([st.stats.remote() for st in self.stages])
        peaks = [StagePeak(p.total, s.peak_bytes, b) for p, s, b in zip(predicted, stats, self.policy.budgets)]
        for i, (st_stats, p) in enumerate(zip(stats, predicted)):
            self.memory.observe_activations(i, st_stats.activations)
            self.memory.observe_peak(i, p, st_stats.peak_bytes)
        idle = [max(0.0, 1.0 - (s.busy_s - b) / seconds) for s, b in zip(stats, busy0)]
        for i, f in enumerate(idle):
            self._idle.set(f, tags={"stage": str(i)})
        self._tokens.inc(tokens)
        last = {n: jobs[n].losses[-1] for n in jobs}
        self._log(f"window {window}: {cap} steps x {len(lanes)} lanes in {seconds:.1f}s, "
                  f"{tokens / seconds:.0f} tok/s, idle {['%.2f' % f for f in idle]} | "
                  + " ".join(f"{n}@{jobs[n].step}/{jobs[n].total_steps}={v:.3f}" for n, v in last.items())
                  + " | peak MB (predicted/measured) " + ", ".join(
                      f"{p.predicted_bytes / MB:.0f}/{p.measured_bytes / MB:.0f}" for p in peaks))
        return WindowReport(window, seconds, tokens, idle, last, tuple(map(tuple, lanes)), peaks), ckpt_refs

    def shutdown(self) -> None:
        for st in self.stages:
            ray.kill(st)
        self.stages = []

    def _log(self, msg: str) -> None:
        if self.progress:
            print(f"[mlora] {msg}", flush=True)
