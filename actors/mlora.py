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

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import ray
import torch

from raystack import metrics
from raystack.config import config_to_dict
from raystack.devices import cluster_gpus, local_device, plan_devices, to_cpu
from raystack.mlora.balance import StagePlan, measured_costs, param_costs, partition
from raystack.mlora.config import AdapterConfig, DatasetConfig, MLoRAConfig, TaskConfig
from raystack.mlora.export import base_reference, load_checkpoint, save_checkpoint, save_peft
from raystack.mlora.jobs import JobState, form_lanes, lane_step
from raystack.mlora.memory import AdmissionObs, AdmissionPolicy, JobRequest, MemoryModel
from raystack.mlora.schedule import LaneWork, Op, lorapp_schedule
from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel, load_stage
from raystack.mlora.trainer import build_base, check_config, make_jobs, tokenizer_of
from raystack.models.layout import layout_of
from raystack.models.tokenizer import pad_token_id

ACTOR_ERRORS = (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError)


@ray.remote(max_restarts=0)
class PipelineStage:
    """One pipeline stage: units ``[start, end)`` of the base, BatchLoRA adapters, optimizers."""

    def __init__(self, cfg: dict, start: int, end: int, index: int, threads: int = 1) -> None:
        torch.set_num_threads(threads)
        self.index = index
        base = load_stage(cfg["base"], cfg["seed"], start, end)  # only this stage's tensors where it can
        base.to(local_device(cfg.get("device", "auto")))  # cuda when the pipeline gave this stage a GPU
        self.stage = StageModel(base, start, end)
        self.busy = 0.0
        self._busy_metric = metrics.counter("mlora_stage_busy_seconds", "compute seconds per stage", ("stage",))

    def ready(self) -> int:
        return os.getpid()

    def add_adapter(self, cfg: dict, optim: OptimSpec, ckpt: dict | None = None) -> None:
        a = AdapterConfig(**cfg)
        self.stage.add_adapter(a.spec(), optim)
        if ckpt is not None:
            self.stage.restore(a.name, ckpt)

    def remove_adapter(self, name: str) -> None:
        self.stage.remove_adapter(name)

    def adapters(self) -> list[str]:
        return list(self.stage.steps)

    def forward(self, mb: MicroBatch, x: torch.Tensor, labels: torch.Tensor | None = None) -> Any:
        t = time.perf_counter()
        out = self.stage.forward(mb, x, labels)
        self._account(time.perf_counter() - t)
        return to_cpu(out)  # activations travel between stages through the object store

    def backward(self, mb: MicroBatch, grad: torch.Tensor | None = None) -> torch.Tensor | None:
        t = time.perf_counter()
        out = self.stage.backward(mb, grad)
        self._account(time.perf_counter() - t)
        return to_cpu(out)

    def _account(self, dt: float) -> None:
        self.busy += dt
        self._busy_metric.inc(dt, tags={"stage": str(self.index)})

    def checkpoint(self, names: list[str]) -> dict[str, dict]:
        return to_cpu({n: self.stage.checkpoint(n) for n in names})

    def stats(self) -> dict:
        samples, self.stage.activation_bytes = self.stage.activation_bytes, []
        return {"busy_s": self.busy, "activations": samples, "pid": os.getpid()}

    def reset(self) -> None:
        """Drop in-flight activations and all adapters (before a restore)."""
        self.stage.saved.clear()
        for name in list(self.stage.steps):
            self.stage.remove_adapter(name)


@dataclass
class WindowReport:
    window: int
    seconds: float
    tokens: int
    idle_fraction: list[float]
    losses: dict[str, float]


@dataclass
class RunResult:
    adapters: dict[str, str] = field(default_factory=dict)  # name -> exported PEFT dir
    losses: dict[str, list[float]] = field(default_factory=dict)
    windows: list[WindowReport] = field(default_factory=list)
    restarts: int = 0
    plan: StagePlan | None = None
    seconds: float = 0.0
    completion_s: dict[str, float] = field(default_factory=dict)

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
        self.stage_base = str(Path(cfg.base).resolve()) if Path(cfg.base).is_dir() else cfg.base  # as actors see it
        self.pad_id = pad_token_id(tokenizer_of(cfg))
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
        self.n_layers = layout_of(meta).num_units(meta) - 2
        hidden, heads = meta.config.hidden_size, meta.config.num_attention_heads
        prior = (0.0, 4.0 * hidden * 16 * self.n_layers, 4.0 * heads * 3 * self.n_layers)
        self.memory = MemoryModel(prior)
        s = cfg.scheduler
        self.policy = AdmissionPolicy(self.memory, s.memory_budget_mb * 2**20, s.max_concurrent, s.strict_priority)
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

    def _admit(self) -> None:
        reqs = {t.adapter: JobRequest(t.adapter, t.micro_batch_size, t.cutoff_len, t.priority, arr)
                for t, arr in self.pending}
        running = [JobRequest(n, self.tasks[n].micro_batch_size, self.tasks[n].cutoff_len, self.tasks[n].priority)
                   for n in self.running]
        decision = self.policy.decide(AdmissionObs(running, list(reqs.values())))
        if not decision.start and not self.running and self.pending:
            decision.start.append(min(reqs.values(), key=lambda r: (-r.priority, r.arrival)).name)  # never starve
        for name in decision.start:
            task = next(t for t, _ in self.pending if t.adapter == name)
            self.pending = [(t, a) for t, a in self.pending if t.adapter != name]
            sub = MLoRAConfig(base=self.cfg.base, tokenizer=self.cfg.tokenizer, seed=self.cfg.seed,
                              datasets=self.cfg.datasets, adapters=self.cfg.adapters, tasks=[task])
            job = make_jobs(sub)[name]
            self.tasks[name] = task
            ckpt = load_checkpoint(self._ckpt_path(name))
            if ckpt is not None and ckpt.get("fingerprint") != self._fingerprint(name):
                self._log(f"{name}: ignoring the checkpoint in {self.out}, written for another config")
                self._ckpt_path(name).unlink()  # a failure before this job's first checkpoint must not find it
                ckpt = None
            if ckpt is not None and ckpt.get("finished"):
                self.finished.add(name)
                self.resumed_done[name] = str(self.out / "adapters" / name)
                continue
            self._install(job, ckpt)
            self.running[name] = job
            if ckpt is None:  # no checkpoint needed: a failure before its first one starts it over
                self._admitted[name] = job.batcher.state_dict()
            self._log(f"admitted {name} ({job.total_steps} steps, from step {job.step})")

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
        doc = {"base": self.cfg.base, "tokenizer": self.cfg.tokenizer, "seed": self.cfg.seed,
               "adapter": config_to_dict(self.cfg.adapter(name)),
               "task": config_to_dict(task), "dataset": config_to_dict(self.cfg.dataset(task.dataset))}
        return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def _export(self, name: str, stage_parts: list[dict]) -> str:
        """Write the PEFT adapter from the weights in the job's checkpoint parts."""
        state: dict[str, torch.Tensor] = {}
        for part in stage_parts:
            state.update(part["weights"])
        ref = base_reference(self.cfg.base, self.cfg.seed)  # the base as given, and its weights' hash
        return str(save_peft(self.out / "adapters" / name, self.cfg.adapter(name).spec(), state, ref,
                             tokenizer_of(self.cfg)))

    # -- stages ---------------------------------------------------------------------------
    def _start_stage(self, i: int) -> Any:
        a, b = self.plan.bounds[i]
        base = {"base": self.stage_base, "seed": self.cfg.seed, "device": self.cfg.pipeline.device}
        return PipelineStage.options(**self.stage_options).remote(base, a, b, i, self.threads)

    def start(self) -> None:
        self.stages = [self._start_stage(i) for i in range(self.cfg.pipeline.stages)]
        self.pids = ray.get([st.ready.remote() for st in self.stages])
        self._log(f"{len(self.stages)} stages, units per stage {self.plan.bounds} (balanced by {self.cfg.pipeline.balance}, "
                  f"imbalance {self.plan.imbalance:.2f})")

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
        if not self.stages:
            self.start()
        result = RunResult(plan=self.plan)
        t0 = time.perf_counter()
        window = 0
        max_restarts = self.cfg.pipeline.max_restarts * len(self.stages)
        while self.pending or self.running:
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
            data.append([lane_step(li, k, [jobs[n] for n in lane], self.pad_id) for k in range(cap)])
        costs = [c / max(self.plan.costs) for c in self.plan.costs]
        sched = lorapp_schedule(d, [LaneWork(cap, len(steps[0])) for steps in data],
                                forward_cost=costs, backward_cost=[2 * c for c in costs],
                                max_in_flight=self.cfg.pipeline.in_flight_cap)
        busy0 = [s["busy_s"] for s in ray.get([st.stats.remote() for st in self.stages])]
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
        for st_stats in stats:
            for rows, seq, nbytes in st_stats["activations"]:
                self.memory.observe(rows, seq, nbytes)
        idle = [max(0.0, 1.0 - (s["busy_s"] - b) / seconds) for s, b in zip(stats, busy0)]
        for i, f in enumerate(idle):
            self._idle.set(f, tags={"stage": str(i)})
        self._tokens.inc(tokens)
        last = {n: jobs[n].losses[-1] for n in jobs}
        self._log(f"window {window}: {cap} steps x {len(lanes)} lanes in {seconds:.1f}s, "
                  f"{tokens / seconds:.0f} tok/s, idle {['%.2f' % f for f in idle]} | "
                  + " ".join(f"{n}@{jobs[n].step}/{jobs[n].total_steps}={v:.3f}" for n, v in last.items()))
        return WindowReport(window, seconds, tokens, idle, last), ckpt_refs

    def shutdown(self) -> None:
        for st in self.stages:
            ray.kill(st)
        self.stages = []

    def _log(self, msg: str) -> None:
        if self.progress:
            print(f"[mlora] {msg}", flush=True)
