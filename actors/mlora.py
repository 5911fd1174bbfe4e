"""mLoRA on Ray: PipelineStage actors and the LoRAPipeline strategy that runs the LoRAPP schedule.

Each :class:`PipelineStage` actor holds one contiguous slice of the frozen base (chosen by
stage balancing; stored int8 with ``quantize: int8``) plus every running adapter's weights and
optimizers for that slice, and measures its own memory. The stages are the members of one
kernel :class:`ActorGroup` (a SPREAD placement group, one bundle per stage). :class:`LoRAPipeline`
is the part's strategy over the kernel :class:`Controller`: starting, it spawns the stages and
calibrates the per-stage memory model on them; each RUNNING step admits the jobs whose predicted
peak fits every stage's budget (refusing those that never can), groups them into lanes, builds
one window's micro-batches, computes the schedule (a pure function) and submits every stage's ops in
schedule order; activations and gradients travel between stages as Ray objects (delayed by
``pipeline.link_*`` when set). Between windows it checkpoints every adapter and fits the memory
model to the peaks measured. When a window fails, the controller polls the stages once, the
:class:`FailurePolicy` (``pipeline.max_restarts`` per stage) decides, and the recovery respawns the dead stages (off a lost node) and resumes every adapter from
its last checkpoint. Files go to the run's folder of ``output_dir`` (``RunFiles``); :class:`MLoRADriver`
runs it for ``raystack.mlora.finetune(cfg)``.
"""

from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import ray
import torch

from raystack import metrics
from raystack.comm.network import NetworkModel
from raystack.config import config_to_dict
from raystack.devices import cluster_gpus, local_device, plan_devices, to_cpu
from raystack.mlora.balance import measured_costs, param_costs, partition
from raystack.mlora.config import AdapterConfig, DatasetConfig, MLoRAConfig, TaskConfig
from raystack.mlora.export import BaseRef, RunFiles, base_reference
from raystack.mlora.footprint import Calibration, calibrate, default_budgets, device_capacity
from raystack.mlora.jobs import JobState, form_lanes, lane_step
from raystack.mlora.link import InboundLink, Transfer
from raystack.mlora.memory import (MB, AdmissionPolicy, JobRequest, PipelineMemoryModel, activation_prior,
                                   calibration_shapes, job_request)
from raystack.mlora.messages import StageInfo, StageStats
from raystack.mlora.probe import MemoryProbe, trim_heap
from raystack.mlora.quantize import quantize_base
from raystack.mlora.report import PipelineRun, StagePeak, WindowReport
from raystack.mlora.schedule import LaneWork, Op, lorapp_schedule
from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel, load_stage
from raystack.mlora.trainer import build_base, check_config, make_jobs, tokenizer_of
from raystack.models import meta_model
from raystack.models.tokenizer import pad_token_id
from raystack.runtime.controller import Controller, ControllerState, MetricsCallback, Progress
from raystack.runtime.group import ActorGroup, Call, MemberSpec, PlacementSpec, Spawner
from raystack.runtime.policy import FailureEvent, FailurePolicy
from raystack.runtime.storage import RunDir, open_run

__all__ = ["LoRAPipeline", "PipelineRun", "PipelineStage", "StagePeak", "WindowReport"]

logger = logging.getLogger(__name__)

STAGE_PING_TIMEOUT_S = 60.0  # a stage slower than this to answer a health poll is replaced
STAGES = "stages"  # the stages' placement group


@ray.remote(max_restarts=0)
class PipelineStage:
    """One pipeline stage: units ``[start, end)`` of the base, BatchLoRA adapters, optimizers."""

    def __init__(self, cfg: dict, start: int, end: int, index: int, threads: int = 1) -> None:
        torch.set_num_threads(threads)
        self.index = index
        device = local_device(cfg.get("device", "auto"))  # cuda when the pipeline gave this stage a GPU
        self.probe = MemoryProbe(device)
        meta_model(cfg["base"], field="base")  # imports the model code: the runtime's memory, not the base's
        runtime = self.probe.current()
        base = load_stage(cfg["base"], cfg["seed"], start, end)  # only this stage's tensors where it can
        quantized = quantize_base(base, cfg["quantize"]) if cfg.get("quantize") else None
        base.to(device)
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

    def ping(self) -> int:
        return self.index

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

    def checkpoint(self, names: list[str], finished: Sequence[str] = ()) -> dict[str, dict]:
        """This stage's checkpoint part of each adapter in ``names``; the ``finished`` ones are
        then removed (one call, not a round trip per finished job)."""
        trim_heap()  # the window's freed activations: else the copies below come on top (-190 MB, 607M int8 base)
        parts = to_cpu({n: self.stage.checkpoint(n) for n in names})
        for name in finished:
            self.stage.remove_adapter(name)
        return parts

    def stats(self) -> StageStats:
        """Compute time so far, activation samples and peak memory since the last call (which
        starts a new peak window, after returning freed memory to the OS)."""
        samples, self.stage.activation_bytes = self.stage.activation_bytes, []
        peak = self.probe.peak()
        trim_heap()
        self.probe.reset_peak()
        return StageStats(self.busy, samples, os.getpid(), peak, self.probe.current(),
                          self.from_prev.waited_s + self.from_next.waited_s)

    def reset(self) -> None:
        """Drop in-flight activations and all adapters (before a restore)."""
        self.stage.saved.clear()
        for name in list(self.stage.steps):
            self.stage.remove_adapter(name)


class LoRAPipeline:
    """Trains the config's tasks (and any added later) on ``cfg.pipeline.stages`` stage actors:
    the mLoRA strategy (hooks ``start``/``advance``/``recover``) over the kernel Controller."""

    def __init__(self, cfg: MLoRAConfig, *, threads_per_stage: int = 1, progress: bool = True,
                 stage_options: dict | None = None, callbacks: Sequence[MetricsCallback] = (),
                 spawner: Spawner | None = None) -> None:
        check_config(cfg)  # fails before any actor starts
        for d in cfg.datasets:  # actors and later reads may run in another directory
            if d.path is not None:
                d.path = str(Path(d.path).resolve())
        self.cfg = cfg
        self.stage_base = str(Path(cfg.base).resolve()) if Path(cfg.base).is_dir() else cfg.base  # as actors see it
        self.tokenizer = tokenizer_of(cfg)  # also exported beside each adapter
        self.pad_id = pad_token_id(self.tokenizer)
        self._base_ref: BaseRef | None = None  # the base as given and its weights' hash: taken at the first export
        self.threads = threads_per_stage
        self.progress = progress
        self.callbacks = list(callbacks)
        self.devices = plan_devices(cfg.pipeline.device, cfg.pipeline.stages, cluster_gpus())
        self.stage_options = stage_options or {"num_cpus": 1}
        if self.devices.uses_gpu:
            self.stage_options = {**self.stage_options, "num_gpus": self.devices.gpus_per_actor}
        self.meta = meta = build_base(cfg, device="meta")
        sizes = param_costs(meta)
        if cfg.pipeline.balance == "measured":  # time each unit's forward+backward here, once
            costs = measured_costs(build_base(cfg), seq=max(t.cutoff_len for t in cfg.tasks))
        else:
            costs = sizes
        self.plan = partition(costs, cfg.pipeline.stages)
        fixed_prior = [4.0 * sum(sizes[a:b]) for a, b in self.plan.bounds]  # fp32 bytes, until a stage measures itself
        p, s = cfg.pipeline, cfg.scheduler
        self.memory = PipelineMemoryModel(p.stages, fixed_prior, activation_prior(meta, self.plan.bounds),
                                          stage_costs=self.plan.costs, max_lanes=p.lanes,
                                          in_flight_cap=p.in_flight_cap, window_steps=p.window_steps)
        budget = math.inf if s.memory_budget_mb is None else s.memory_budget_mb * MB  # None: set at start()
        self.policy = AdmissionPolicy(self.memory, [budget] * p.stages, s.max_concurrent, s.strict_priority,
                                      s.memory_margin)
        self.use_output(cfg)
        self.group = ActorGroup("mlora", spawner, poll_timeout_s=STAGE_PING_TIMEOUT_S)
        self.pids: list[int] = []
        self.stage_info: list[StageInfo] = []
        self.pending: list[tuple[TaskConfig, int]] = []
        self.running: dict[str, JobState] = {}
        self.finished: set[str] = set()
        self.resumed_done: dict[str, str] = {}  # finished in an earlier run: name -> exported dir
        self._admitted: dict[str, dict] = {}  # data position at admission of jobs started from scratch
        self._waiting: dict[str, str] = {}  # pending jobs the scheduler holds back: why
        self.tasks: dict[str, TaskConfig] = {}
        self._arrivals = 0
        self.controller: Controller | None = None
        self._result: PipelineRun | None = None
        self._t0 = 0.0
        self._window_no = 0
        self._on_window: Callable | None = None
        self._after_submit: Callable | None = None
        self._bar = None
        self._loss_gauge = metrics.gauge("mlora_loss", "latest training loss per adapter", ("adapter",))
        self._step_gauge = metrics.gauge("mlora_step", "optimizer steps done per adapter", ("adapter",))
        self._tokens = metrics.counter("mlora_tokens", "tokens trained on (all adapters)")
        self._idle = metrics.gauge("mlora_stage_idle_fraction", "idle fraction of a stage in the last window", ("stage",))
        for t in cfg.tasks:
            self.add_task(t)

    @property
    def stages(self) -> list[Any]:
        """The stage actors, in pipeline order."""
        return self.group.handles

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

    def use_output(self, cfg: MLoRAConfig) -> RunDir:
        """Write into a new run folder of ``cfg.output_dir`` (or the one ``cfg.resume`` names)."""
        self.run_dir = open_run(cfg.output_dir, "mlora", run_id=cfg.run_id, resume=cfg.resume, field="output_dir")
        self.files = RunFiles(self.run_dir.storage)
        return self.run_dir

    def _request(self, task: TaskConfig, arrival: int = 0) -> JobRequest:
        return job_request(task, self.cfg.adapter(task.adapter), self.meta, self.plan.bounds, arrival)

    def _admit(self) -> None:
        """Start the pending jobs the admission policy lets in; refuse those that can never fit."""
        decision = self.policy.decide([self._request(self.tasks[n]) for n in self.running],
                                      [self._request(t, arr) for t, arr in self.pending])
        for name, why in decision.refused.items():
            self._result.refused[name] = why
            self.pending = [(t, a) for t, a in self.pending if t.adapter != name]
            logger.warning("refused %s", why)
        if self.pending and not self.running and not decision.start:
            raise RuntimeError(f"no pending job can start on an idle pipeline: {decision.waiting}")
        for name in sorted(set(decision.waiting) - set(self._waiting)):
            logger.info("%s waits: %s", name, decision.waiting[name])
        self._waiting = decision.waiting
        installs: list[Call] = []
        for name in decision.start:
            installs += self._start_job(next(t for t, _ in self.pending if t.adapter == name))
        self.group.gather(installs)  # one wait for all admitted jobs, not a round trip each

    def _start_job(self, task: TaskConfig) -> list[Call]:
        """Install an admitted job's adapter on every stage (from its checkpoint, if any); the
        stages' calls, to gather."""
        name = task.adapter
        self.pending = [(t, a) for t, a in self.pending if t.adapter != name]
        sub = MLoRAConfig(base=self.cfg.base, tokenizer=self.cfg.tokenizer, seed=self.cfg.seed,
                          datasets=self.cfg.datasets, adapters=self.cfg.adapters, tasks=[task])
        job = make_jobs(sub)[name]
        ckpt = self._own_checkpoint(task)
        if ckpt is not None and ckpt.get("finished"):
            return []
        calls = self._install(job, ckpt)
        self.running[name] = job
        self._result.admitted_window.setdefault(name, self._window_no)
        if ckpt is None:  # no checkpoint needed: a failure before its first one starts it over
            self._admitted[name] = job.batcher.state_dict()
        logger.info("admitted %s (%d steps, from step %d)", name, job.total_steps, job.step)
        return calls

    def _own_checkpoint(self, task: TaskConfig) -> dict | None:
        """The job's checkpoint in this run's folder if written for this config (another config's
        is deleted); a job it marks finished is recorded as done in the run being resumed."""
        name = task.adapter
        self.tasks[name] = task
        ckpt = self.files.load(name)
        if ckpt is not None and ckpt.get("fingerprint") != self.cfg.fingerprint(self.tasks[name]):
            logger.warning("%s: ignoring the checkpoint in %s, written for another config", name, self.run_dir.run_id)
            self.files.drop(name)  # a failure before this job's first checkpoint must not find it
            return None
        if ckpt is not None and ckpt.get("finished"):
            self.finished.add(name)
            self.resumed_done[name] = self.files.adapter_dir(name)
        return ckpt

    def _skip_finished(self) -> None:
        """Drop pending jobs that finished in an earlier run into ``output_dir`` (reported as
        done; no stage starts for them)."""
        for task, _ in list(self.pending):
            ckpt = self._own_checkpoint(task)
            if ckpt is not None and ckpt.get("finished"):
                self.pending = [(t, a) for t, a in self.pending if t.adapter != task.adapter]

    def _install(self, job: JobState, ckpt: dict | None) -> list[Call]:
        """Submit the job's ``add_adapter`` to every stage; the calls, to gather."""
        acfg = config_to_dict(self.cfg.adapter(job.name))
        if ckpt is not None:
            job.step, job.losses = ckpt["step"], list(ckpt["losses"])
            job.batcher.load_state_dict(ckpt["batcher"])
        return [self.group.submit(k, "add_adapter", acfg, job.optim, ckpt["stages"][i] if ckpt else None)
                for i, k in enumerate(self.group.keys)]

    def _checkpoint(self, calls: list[Call]) -> dict[str, list[dict]]:
        """Write the checkpoint of every job in the stages' ``checkpoint`` calls (a job that
        is done is marked finished); returns each job's per-stage parts."""
        parts = self.group.gather(calls)
        per_job = {name: [p[name] for p in parts] for name in parts[0]}
        for name in per_job:
            job = self.running[name]
            self.files.save(name, {
                "stages": per_job[name], "step": job.step, "losses": job.losses,
                "batcher": job.batcher.state_dict(), "finished": job.done,
                "fingerprint": self.cfg.fingerprint(self.tasks[name])})
        return per_job

    def _export(self, name: str, stage_parts: list[dict]) -> str:
        """Write the PEFT adapter from the weights in the job's checkpoint parts."""
        state: dict[str, torch.Tensor] = {}
        for part in stage_parts:
            state.update(part["weights"])
        if self._base_ref is None:  # (hashing the weights, building the meta model: once, not per adapter)
            self._base_ref = base_reference(self.cfg.base, self.cfg.seed)
        return self.files.export(name, self.cfg.adapter(name).spec(), state, self._base_ref, self.tokenizer)

    # -- stages ---------------------------------------------------------------------------
    def _stage_spec(self, i: int) -> MemberSpec:
        a, b = self.plan.bounds[i]
        p = self.cfg.pipeline
        base = {"base": self.stage_base, "seed": self.cfg.seed, "device": p.device, "quantize": self.cfg.quantize,
                "link": p.link}
        return MemberSpec(f"stage-{i}", PipelineStage, (base, a, b, i, self.threads),
                          options=self.stage_options, placement=STAGES, bundle=i)

    def start(self) -> None:
        """Start the stage actors (one bundle each in a SPREAD placement group), if not yet and
        if there is work, and measure each one's memory before the first admission."""
        if len(self.group) or not (self.pending or self.running):
            return
        bundle = {"CPU": float(self.stage_options.get("num_cpus", 1))}
        if self.stage_options.get("num_gpus"):
            bundle["GPU"] = float(self.stage_options["num_gpus"])
        self.group.reserve(PlacementSpec(STAGES, tuple(dict(bundle) for _ in range(self.cfg.pipeline.stages)),
                                         "SPREAD"))
        self.group.spawn(*[self._stage_spec(i) for i in range(self.cfg.pipeline.stages)])
        self.stage_info = self.group.call("ready")
        self.pids = [info.pid for info in self.stage_info]
        self._calibrate()
        logger.info("%d stages, units per stage %s (balanced by %s, imbalance %.2f); memory per stage "
                    "(MB, base / budget): %s", len(self.stages), self.plan.bounds, self.cfg.pipeline.balance,
                    self.plan.imbalance, ", ".join(f"{f / MB:.0f} / {b / MB:.0f}"
                                                   for f, b in zip(self.memory.fixed, self.policy.budgets)))

    def _calibrate(self) -> None:
        """Each stage's footprint, first activation samples and peak ratio, and, when the
        config sets no budget, each stage's share of its node's (or GPU's) memory."""
        targets = sorted({m for a in self.cfg.adapters for m in a.target_modules})
        r = max(a.r for a in self.cfg.adapters)
        shapes = calibration_shapes(max(t.cutoff_len for t in self.cfg.tasks))
        for i, cal in enumerate(self.group.call("calibrate", shapes, targets, r)):
            self.memory.calibrate(i, cal)
        if self.cfg.scheduler.memory_budget_mb is None:
            self.policy.budgets = default_budgets([i.capacity_bytes for i in self.stage_info],
                                                  [i.node_id for i in self.stage_info],
                                                  self.devices.gpus_per_actor if self.devices.uses_gpu else None)

    def recover(self, event: FailureEvent) -> None:
        """Respawn the stages that died, drop every stage's adapters and in-flight activations,
        and resume each running job from its last checkpoint (or from its start)."""
        self._result.restarts += 1
        logger.warning("window %d failed (%s); restoring from checkpoints", self._window_no, event.describe())
        respawned = self.group.respawn(event.members)
        for key, info in zip(respawned, self.group.call("ready", keys=respawned)):
            i = self.group.keys.index(key)
            self.stage_info[i], self.pids[i] = info, info.pid
        self.group.call("reset")
        installs: list[Call] = []
        for name, job in self.running.items():
            ckpt = self.files.load(name)
            if ckpt is None:  # failed before its first checkpoint: from the start (adapter
                job.step, job.losses = 0, []  # initialisation and dropout streams are seeded)
                job.batcher.load_state_dict(self._admitted[name])
            installs += self._install(job, ckpt)
            logger.info("%s resumes from step %d", name, job.step)
        self.group.gather(installs)

    # -- the loop -------------------------------------------------------------------------
    def run(self, on_window: Callable[[int, "LoRAPipeline"], None] | None = None,
            after_submit: Callable[[int, "LoRAPipeline"], None] | None = None) -> PipelineRun:
        """Train until every job (including ones added meanwhile) is done; returns the result."""
        self.begin(on_window, after_submit)
        while not self.step().terminal:
            pass
        return self.finish()

    def begin(self, on_window: Callable[[int, "LoRAPipeline"], None] | None = None,
              after_submit: Callable[[int, "LoRAPipeline"], None] | None = None) -> None:
        """Set up a run (a fresh controller and failure budget); step it with :meth:`step`."""
        self._on_window, self._after_submit = on_window, after_submit
        self._result = PipelineRun(plan=self.plan)
        self._t0, self._window_no = time.perf_counter(), 0
        self._skip_finished()
        budget = self.cfg.pipeline.max_restarts * self.cfg.pipeline.stages
        policy = FailurePolicy(budget, field="pipeline.max_restarts x stages", per="event")
        self.controller = Controller(self, policy, group=self.group, callbacks=self.callbacks, name="mlora")
        if self.progress:
            from tqdm import tqdm
            self._bar = tqdm(desc="mlora", unit="step", total=0)

    def step(self) -> ControllerState:
        """One controller step: start the stages, run one window, or recover."""
        return self.controller.step()

    def finish(self) -> PipelineRun:
        """The run's result (raises RunFailedError if the failure policy gave up)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self.controller.raise_if_errored()
        result = self._result
        result.adapters.update({n: d for n, d in self.resumed_done.items() if n not in result.adapters})
        result.seconds = time.perf_counter() - self._t0
        return result

    def advance(self) -> Progress:
        """One window (after admitting what the scheduler lets in)."""
        self._admit()
        if not self.running:
            return Progress(done=not self.pending)
        result, window = self._result, self._window_no
        report, ckpt_calls = self._window(window, self._after_submit)
        result.windows.append(report)
        done = [n for n, j in self.running.items() if j.done]
        parts = self._checkpoint(ckpt_calls)
        for name in done:
            result.adapters[name] = self._export(name, parts[name])
            result.completion_s[name] = time.perf_counter() - self._t0
            result.finished_window[name] = window
            self.finished.add(name)
            logger.info("%s finished: exported to %s", name, result.adapters[name])
        for name, job in self.running.items():
            result.losses[name] = list(job.losses)
        for name in done:
            del self.running[name]
            self._admitted.pop(name, None)  # finished: never restarted from admission again
        self._window_no += 1
        self._show(report)
        if self._on_window:
            self._on_window(self._window_no, self)
        return Progress(done=not (self.pending or self.running), step=window, metrics=report.metrics())

    def _show(self, report: WindowReport) -> None:
        if self._bar is None:
            return
        jobs = [*self.running.values()]
        self._bar.total = sum(len(v) for v in self._result.losses.values()) + sum(j.remaining for j in jobs)
        self._bar.n = sum(len(v) for v in self._result.losses.values())
        self._bar.set_postfix(adapters=f"{len(self.finished)} done/{len(self.running)} running",
                              tok_s=f"{report.tokens / max(report.seconds, 1e-9):.0f}")
        self._bar.refresh()

    def _window(self, window: int, after_submit: Callable | None) -> tuple[WindowReport, list[Call]]:
        """Run one window's schedule; returns its report and the stages' checkpoint calls,
        submitted behind the window's ops (a stage writes its part as soon as its own last op
        is done, while the other stage may still compute)."""
        keys = self.group.keys
        d = len(keys)
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
        shapes = {op: tuple(data[op.lane][op.step][op.micro][1].shape) for op in sched.order[0]}
        predicted = self.memory.predict_order(sched.order, shapes.__getitem__,
                                              [self._request(self.tasks[n]) for n in jobs])
        # first in each stage's queue (it also starts the stage's peak window): the ops are
        # submitted without waiting for it
        stats_before = [self.group.submit(k, "stats") for k in keys]
        t0 = time.perf_counter()
        calls: dict[tuple, Call] = {}
        puts: dict[tuple, tuple] = {}
        loss_calls: list[tuple[Op, Call]] = []
        done_calls: list[Call] = []
        tokens = 0
        for (s, op) in sorted(sched.start, key=lambda k: (sched.start[k], k[0])):
            mb, ids, labels = data[op.lane][op.step][op.micro]
            if mb.key not in puts:
                puts[mb.key] = (ray.put(ids), ray.put(labels))
                tokens += int(ids.numel())
            ids_ref, labels_ref = puts[mb.key]
            if op.kind == "F":
                x = ids_ref if s == 0 else calls[("F", s - 1, mb.key)].future
                call = self.group.submit(keys[s], "forward", mb, x, labels_ref if s == d - 1 else None)
                calls[("F", s, mb.key)] = call
                if s == d - 1:
                    loss_calls.append((op, call))
            else:
                grad = None if s == d - 1 else calls[("B", s + 1, mb.key)].future
                call = self.group.submit(keys[s], "backward", mb, grad)
                calls[("B", s, mb.key)] = call
                if s == 0:
                    done_calls.append(call)
        finishing = [n for n in jobs if jobs[n].remaining <= cap]  # done after this window: leave the stages
        ckpt_calls = [self.group.submit(k, "checkpoint", list(jobs), finishing) for k in keys]
        stats_after = [self.group.submit(k, "stats") for k in keys]  # behind the checkpoint: the window's peak
        if after_submit:
            after_submit(window, self)
        busy0 = [s.busy_s for s in self.group.gather(stats_before)]
        losses_out = self.group.gather([c for _, c in loss_calls])
        self.group.gather(done_calls)
        seconds = time.perf_counter() - t0
        per_step: dict[tuple[str, int], float] = {}
        for (op, _), losses in zip(loss_calls, losses_out):
            for name, v in losses.items():
                per_step[(name, op.step)] = per_step.get((name, op.step), 0.0) + v
        for lane in lanes:
            for n in lane:
                jobs[n].losses.extend(per_step[(n, k)] for k in range(cap))
                jobs[n].step += cap
                self._loss_gauge.set(jobs[n].losses[-1], tags={"adapter": n})
                self._step_gauge.set(jobs[n].step, tags={"adapter": n})
        stats: list[StageStats] = self.group.gather(stats_after)
        peaks = [StagePeak(p.total, s.peak_bytes, b) for p, s, b in zip(predicted, stats, self.policy.budgets)]
        for i, (st_stats, p) in enumerate(zip(stats, predicted)):
            self.memory.observe_activations(i, st_stats.activations)
            self.memory.observe_peak(i, p, st_stats.peak_bytes, st_stats.resident_bytes)
        idle = [max(0.0, 1.0 - (s.busy_s - b) / seconds) for s, b in zip(stats, busy0)]
        for i, f in enumerate(idle):
            self._idle.set(f, tags={"stage": str(i)})
        self._tokens.inc(tokens)
        last = {n: jobs[n].losses[-1] for n in jobs}
        logger.info("window %d: %d steps x %d lanes in %.1fs, %.0f tok/s, idle %s | %s | peak MB "
                    "(predicted/measured) %s", window, cap, len(lanes), seconds, tokens / seconds,
                    ["%.2f" % f for f in idle],
                    " ".join(f"{n}@{jobs[n].step}/{jobs[n].total_steps}={v:.3f}" for n, v in last.items()),
                    ", ".join(f"{p.predicted_bytes / MB:.0f}/{p.measured_bytes / MB:.0f}" for p in peaks))
        return WindowReport(window, seconds, tokens, idle, last, tuple(map(tuple, lanes)), peaks), ckpt_calls

    def shutdown(self) -> None:
        """Stop the stage actors and release their placement group."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self.group.shutdown()
