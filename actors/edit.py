"""EDiT on Ray: one ``EDiTWorker`` actor per rank, and ``EDiTGroup``, the part's strategy.

The ranks are the members of one kernel :class:`ActorGroup`: each replica's S ranks share a
PACK placement group (one bundle per rank). ``EDiTGroup`` gives the kernel
:class:`Controller` its hooks: ``start`` forms the collective group and builds the trainers;
``advance`` drives the ranks segment by segment (inner steps up to the next sync; several
segments per call, up to the next evaluation or checkpoint), evaluates and checkpoints;
``recover`` respawns the ranks a failed segment's health poll found dead (as many as
``run.max_replacements`` allows, through the :class:`FailurePolicy`), re-forms the group, and
the replacements and the survivors reload the last checkpoint (θ_sync, the outer state, the
inner state and the data position). :class:`EDiTDriver` runs it for
``raystack.edit.pretrain(cfg)``.
"""
from __future__ import annotations

import json
import logging
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import torch

from raystack import metrics
from raystack.actors.collective import CommMember, form_comm_group
from raystack.comm import NetworkModel
from raystack.config import config_to_dict, load_config
from raystack.devices import CPU as CPU_PLAN
from raystack.devices import cluster_gpus, local_device, plan_devices
from raystack.edit.config import EDiTConfig
from raystack.edit.messages import SegmentReport
from raystack.edit.replica import EDiTRank
from raystack.runtime.controller import Controller, ControllerState, MetricsCallback, Progress
from raystack.runtime.group import ActorGroup, MemberSpec, PlacementSpec, Spawner
from raystack.runtime.policy import FailureEvent, FailurePolicy
from raystack.runtime.result import Result, history_table
from raystack.runtime.tracking import TENSORBOARD_DIR, make_loggers

logger = logging.getLogger(__name__)

CHECKPOINT = "checkpoint"
PING_TIMEOUT_S = 30.0  # a rank slower than this to answer a health poll is replaced


def network_of(cfg: EDiTConfig) -> NetworkModel:
    """The simulated link between replicas (ideal unless ``simulate`` sets it)."""
    bw = cfg.simulate.bandwidth_bytes_per_s
    return NetworkModel(cfg.simulate.latency_s, bw if bw > 0 else math.inf)


def load_corpus(cfg: EDiTConfig):
    """The training corpus named by ``cfg.data``."""
    from raystack.data import corpus_from_files, stdlib_corpus
    if cfg.data.paths:
        return corpus_from_files(cfg.data.paths, cfg.data.text_field, cfg.data.val_fraction)
    return stdlib_corpus(cfg.data.max_bytes, cfg.data.val_fraction)


class EDiTWorker(CommMember):
    """One rank: holds the model, optimizers and outer shard; runs ``EDiTRank``."""

    def __init__(self, cfg: dict, rank: int) -> None:
        self.rank = rank
        self.trainer: EDiTRank | None = None
        self._data_key = None
        self.configure(cfg)

    def configure(self, cfg: dict) -> None:
        """Take a new config (the corpus is reloaded only if ``data`` changed); call setup next."""
        self.cfg = load_config(EDiTConfig, cfg)
        torch.set_num_threads(self.cfg.run.threads_per_rank)
        d = self.cfg.data
        key = json.dumps(config_to_dict(d), sort_keys=True)
        if key != self._data_key:
            self.corpus = load_corpus(self.cfg)
            self._data_key = key
        from raystack.data import BatchStream
        val = BatchStream(self.corpus.val, d.batch_size, d.seq_len, seed=12345)
        self.val_batches = [val.next_batch() for _ in range(d.eval_batches)]

    def _stream(self):
        from raystack.data import BatchStream
        d = self.cfg.data
        return BatchStream(self.corpus.train, d.batch_size, d.seq_len, seed=self.cfg.run.seed,
                           rank=self.rank, world_size=self.cfg.ranks)

    def losses(self) -> tuple[list[float], list[float]]:
        """Every inner-step loss of this rank in the current run, and the wall time of each."""
        return list(self.trainer.counters.losses), list(self.trainer.counters.times)

    def ping(self) -> int:
        return self.rank

    def setup(self) -> SegmentReport:
        """Build a fresh model and the rank's trainer (collective: all ranks at once)."""
        from raystack.models import build_model
        model = build_model(self.cfg.model, seed=self.cfg.run.seed).to(local_device(self.cfg.run.device))
        self.trainer = EDiTRank(self.cfg, model, self.comm, self._stream())
        return self.trainer.report()

    def run_segment(self) -> SegmentReport:
        """Inner steps up to the next sync (or the end); a report of counters."""
        return self.trainer.run_segment()

    def run_segments(self, n: int) -> list[SegmentReport]:
        """Up to ``n`` segments in one call (fewer if the run ends): one report per segment.
        Every rank ends its segments at the same syncs, so all return the same count."""
        reports = []
        for _ in range(n):
            reports.append(self.trainer.run_segment())
            if reports[-1].done:
                break
        return reports

    def evaluate(self, compute: bool = True) -> float:
        """Validation loss of θ_sync (collective: completes a pending sync on every rank; only
        ranks asked to ``compute`` run the validation batches)."""
        if not compute:
            self.trainer.flush()
            return float("nan")
        return self.trainer.evaluate(self.val_batches)

    def save(self, directory: str, write_model: bool) -> None:
        """Write this rank's state (and, if asked, a transformers checkpoint of θ_sync)."""
        state = self.trainer.state_dict()
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        torch.save(state, path / f"rank{self.rank}.pt")
        if write_model:
            self.trainer.model.save_pretrained(path / "model")

    def load(self, directory: str) -> SegmentReport:
        """Restore this rank's state from a checkpoint directory."""
        device = next(self.trainer.model.parameters()).device  # a replacement may differ in device
        state = torch.load(Path(directory) / f"rank{self.rank}.pt", weights_only=False, map_location=device)
        self.trainer.load_state_dict(state)
        return self.trainer.report()

    def report(self) -> SegmentReport:
        return self.trainer.report()

    def comm_totals(self) -> dict:
        return self.comm.stats() if self.comm is not None else {}


@dataclass
class EDiTSummary:
    """What ``EDiTGroup.run()`` reports (``raystack.edit.pretrain`` turns it into a Result)."""

    steps: int
    tokens: int
    seconds: float
    tokens_per_s: float
    train_loss: float
    val_loss: float
    sync_seconds: float
    dp_seconds: float
    outliers: int
    replacements: int
    extra_state_bytes: int
    model_dir: str
    history: list[dict] = field(default_factory=list)


def _mean(reports: Sequence[SegmentReport], name: str) -> float:
    return sum(getattr(r, name) for r in reports) / len(reports)


class EDiTGroup:
    """Owns the ``EDiTWorker`` actors of one job (through an ActorGroup) and gives the kernel
    Controller EDiT's hooks."""

    def __init__(self, cfg: EDiTConfig, worker_cls: type = None, *, callbacks: Sequence[MetricsCallback] = (),
                 spawner: Spawner | None = None) -> None:
        self.cfg = cfg
        self.worker_cls = worker_cls or EDiTWorker
        self.cfg_dict = config_to_dict(cfg)
        self.out_dir = Path(cfg.run.out_dir)
        self.group = ActorGroup("edit", spawner, poll_timeout_s=PING_TIMEOUT_S)
        self.callbacks = list(callbacks)
        self.devices = CPU_PLAN
        self.replacements = 0
        self.history: list[dict] = []
        self.controller: Controller | None = None
        self._segments = 0
        self._progress, self._on_segment, self._bar = True, None, None
        self._reports: list[SegmentReport] = []
        self._base_tokens = 0
        self._t0 = self._t0_wall = 0.0
        self._m_loss = metrics.gauge("edit_train_loss", "EDiT training loss (mean over ranks)")
        self._m_val = metrics.gauge("edit_val_loss", "EDiT validation loss of theta_sync")
        self._m_tps = metrics.gauge("edit_tokens_per_s", "EDiT training tokens per second")
        self._m_sync = metrics.gauge("edit_sync_seconds", "EDiT exposed sync time per rank (mean)")
        self._m_outliers = metrics.counter("edit_outliers", "pseudo-gradients dropped by the penalty")
        self._m_replaced = metrics.counter("edit_replacements", "EDiT worker actors replaced after a failure")

    @property
    def workers(self) -> list:
        """The rank actors, in rank order."""
        return self.group.handles

    @property
    def pgs(self) -> list:
        """The replicas' placement groups."""
        return self.group.placements

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Reserve resources, start the actors, form the comm group, build the trainers (once)."""
        if len(self.group):
            return
        self.devices = plan_devices(self.cfg.run.device, self.cfg.ranks, cluster_gpus())
        bundle = {"CPU": self.cfg.run.cpus_per_rank}
        if self.devices.uses_gpu:
            bundle["GPU"] = self.devices.gpus_per_actor
        self.group.reserve(*[PlacementSpec(f"replica-{r}", tuple(dict(bundle) for _ in range(self.cfg.shards)),
                                           "PACK") for r in range(self.cfg.replicas)])
        self.group.spawn(*[self._spec(rank) for rank in range(self.cfg.ranks)])
        self._form()

    def _spec(self, rank: int) -> MemberSpec:
        replica, shard = divmod(rank, self.cfg.shards)
        env = {"OMP_NUM_THREADS": str(self.cfg.run.threads_per_rank)}
        opts = {"num_cpus": self.cfg.run.cpus_per_rank, "num_gpus": self.devices.gpus_per_actor,
                "runtime_env": {"env_vars": env}}
        return MemberSpec(f"rank-{rank}", self.worker_cls, (self.cfg_dict, rank), options=opts,
                          placement=f"replica-{replica}", bundle=shard)

    def _form(self) -> None:
        form_comm_group(self.group, network=network_of(self.cfg), backend=self.devices.backend,
                        timeout_s=self.cfg.run.comm_timeout_s)
        self.group.call("setup")

    def reconfigure(self, cfg: EDiTConfig) -> None:
        """Reuse the actors for a new run of the same shape (new mode, network, simulation)."""
        shape = lambda c: (c.ranks, c.shards, c.run.cpus_per_rank, c.run.device)  # noqa: E731
        if shape(cfg) != shape(self.cfg):
            raise ValueError("reconfigure keeps ranks, shards, cpus_per_rank and device; start a new group instead")
        self.cfg, self.cfg_dict = cfg, config_to_dict(cfg)
        self.out_dir = Path(cfg.run.out_dir)
        self.history, self._segments = [], 0
        self.group.call("leave_comm")
        self.group.call("configure", self.cfg_dict)
        self._form()

    def shutdown(self) -> None:
        """Stop the actors and release the placement groups."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self.group.shutdown()

    # -- checkpoints -----------------------------------------------------------------------------
    @property
    def checkpoint_dir(self) -> Path:
        return self.out_dir / CHECKPOINT

    def save_checkpoint(self) -> Path:
        """All ranks write their state; rank 0 writes θ_sync as a transformers checkpoint."""
        tmp = self.out_dir / (CHECKPOINT + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        self.group.call_each("save", {k: (str(tmp), rank == 0) for rank, k in enumerate(self.group.keys)})
        (tmp / "driver.json").write_text(json.dumps({"segments": self._segments, "history": self.history,
                                                     "config": self.cfg_dict}, indent=1))
        shutil.rmtree(self.checkpoint_dir, ignore_errors=True)
        tmp.rename(self.checkpoint_dir)
        return self.checkpoint_dir

    def load_checkpoint(self) -> None:
        """Every rank reloads the last checkpoint (after a failure, or to resume)."""
        meta = json.loads((self.checkpoint_dir / "driver.json").read_text())
        if meta["config"]["ranks"] != self.cfg.ranks or meta["config"]["shards"] != self.cfg.shards:
            raise ValueError(f"checkpoint in {self.checkpoint_dir} is for ranks={meta['config']['ranks']}, "
                             f"shards={meta['config']['shards']}; this run has ranks={self.cfg.ranks}, "
                             f"shards={self.cfg.shards}")
        self._segments = meta["segments"]
        self.history = meta["history"]
        self.group.call("load", str(self.checkpoint_dir))

    # -- the run ---------------------------------------------------------------------------------
    def run(self, progress: bool = True, on_segment: Callable[["EDiTGroup", int], None] | None = None,
            save: bool = True) -> EDiTSummary:
        """Train to the step budget; ``on_segment(group, n)`` is called after each segment."""
        self.begin(progress, on_segment)
        while not self.step().terminal:
            pass
        return self.finish(save)

    def begin(self, progress: bool = True, on_segment: Callable[["EDiTGroup", int], None] | None = None) -> None:
        """Set up a run: actors up (if not yet), a checkpoint resumed if asked, the clock
        started, and a fresh controller (and failure budget); step it with :meth:`step`."""
        self._on_segment = on_segment
        self.start()
        if self.cfg.run.resume and self.checkpoint_dir.joinpath("driver.json").exists():
            self.load_checkpoint()
        self._base_tokens = sum(r.tokens for r in self.group.call("report"))
        if progress:
            from tqdm import tqdm
            self._bar = tqdm(total=self.cfg.steps, desc=f"edit[{self.cfg.mode}]", unit="step")
        self._t0, self._t0_wall = time.perf_counter(), time.time()
        self._reports = []
        policy = FailurePolicy(self.cfg.run.max_replacements, field="run.max_replacements", per="member")
        self.controller = Controller(self, policy, group=self.group, callbacks=self.callbacks, name="edit")

    def step(self) -> ControllerState:
        """One controller step: start, a call of segments, or a recovery."""
        return self.controller.step()

    def finish(self, save: bool = True) -> EDiTSummary:
        """Evaluate θ_sync, write the final checkpoint, and summarise the run."""
        seconds = time.perf_counter() - self._t0
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self.controller.raise_if_errored()
        val = self.evaluate()
        self._m_val.set(val)
        path = self.save_checkpoint() if save else self.checkpoint_dir
        reports = self._reports
        tokens = sum(r.tokens for r in reports)
        return EDiTSummary(
            steps=max(r.step for r in reports), tokens=tokens, seconds=seconds,
            tokens_per_s=(tokens - self._base_tokens) / max(seconds, 1e-9),
            train_loss=_mean(reports, "loss"), val_loss=val, sync_seconds=_mean(reports, "sync_seconds"),
            dp_seconds=_mean(reports, "dp_seconds"), outliers=reports[0].outliers,
            replacements=self.replacements, extra_state_bytes=max(r.extra_state_bytes for r in reports),
            model_dir=str(path / "model"), history=self.history)

    # -- hooks (called by the controller; ``start`` is above) ---------------------------------------
    def advance(self) -> Progress:
        """One call of segments on every rank (up to the next eval or checkpoint), recorded."""
        cfg = self.cfg
        batch = self._segment(self._segments_now(self._on_segment is not None))
        rows = []
        for reports in batch:
            self._segments += 1
            self._record(reports)
            rows.append((self.history[-1]["step"], self._metrics(self.history[-1])))
        reports = self._reports = batch[-1]
        done = all(r.done for r in reports)
        if not done and cfg.run.eval_every and self._segments % cfg.run.eval_every == 0:
            val = self.evaluate()
            self.history[-1]["val_loss"] = val
            self._m_val.set(val)
            rows[-1][1]["val_loss"] = val
        if not done and cfg.run.checkpoint_every and self._segments % cfg.run.checkpoint_every == 0:
            self.save_checkpoint()
        if self._on_segment is not None:
            self._on_segment(self, self._segments)
        step, metrics = rows[-1]
        return Progress(done=done, step=step, metrics=metrics, earlier=tuple(rows[:-1]))

    def recover(self, event: FailureEvent) -> None:
        """Respawn the ranks that failed, re-form the group, and reload the last checkpoint
        everywhere (the run starts over if there is none yet)."""
        dead = list(event.members)
        keys = self.group.keys
        self.group.respawn(dead, spec_for=lambda spec: self._spec(keys.index(spec.key)))
        self.replacements += len(dead)
        if dead:
            self._m_replaced.inc(len(dead))
        self.group.call("leave_comm", keys=[k for k in keys if k not in dead])
        self._form()
        if self.checkpoint_dir.joinpath("driver.json").exists():
            self.load_checkpoint()
        else:                               # no checkpoint yet: the run starts over
            self._segments, self.history = 0, []
        logger.warning("edit: %s failed (%s); replaced and resumed from the last checkpoint",
                       ", ".join(dead) or "a call", event.reason)

    # -- segments --------------------------------------------------------------------------------
    def _segments_now(self, per_segment: bool) -> int:
        """Segments to run in the next call: up to the next eval or checkpoint (the driver acts
        between calls), at most ``run.segments_per_call``; 1 if a callback wants every segment."""
        if per_segment:
            return 1
        n = self.cfg.run.segments_per_call
        for every in (self.cfg.run.eval_every, self.cfg.run.checkpoint_every):
            if every:
                n = min(n, every - self._segments % every)
        return max(1, n)

    def _segment(self, n: int = 1) -> list[list[SegmentReport]]:
        """Run ``n`` segments on every rank in one call; the reports of each segment, in order.
        Every rank's call is waited for (survivors of a failure error out of their
        collectives) before any result is looked at, so recovery never talks to a busy rank."""
        per_rank = self.group.call("run_segments", n, timeout_s=(self.cfg.run.comm_timeout_s * 3 + 60) * n)
        return [list(seg) for seg in zip(*per_rank)]

    def evaluate(self) -> float:
        return self.group.call_each("evaluate", {k: (rank == 0,) for rank, k in enumerate(self.group.keys)})[0]

    def _record(self, reports: list[SegmentReport]) -> None:
        loss = _mean(reports, "loss")
        tokens = sum(r.tokens for r in reports)
        # segments run inside one call end at the rank's own clock, not at the call's return
        elapsed = max(r.wall for r in reports) - self._t0_wall
        step = min(r.step for r in reports)
        outliers = reports[0].outliers
        prev_outliers = self.history[-1]["outliers"] if self.history else 0
        self.history.append({"segment": self._segments, "step": step, "tokens": tokens, "loss": loss,
                             "seconds": elapsed, "outliers": outliers,
                             "sync_seconds": _mean(reports, "sync_seconds")})
        self._m_loss.set(loss)
        self._m_tps.set(tokens / max(elapsed, 1e-9))
        self._m_sync.set(self.history[-1]["sync_seconds"])
        if outliers > prev_outliers:
            self._m_outliers.inc(outliers - prev_outliers)
        if self._bar is not None:
            self._bar.n = min(step, self.cfg.steps)
            self._bar.set_postfix(loss=f"{loss:.3f}", outliers=outliers)
            self._bar.refresh()

    @staticmethod
    def _metrics(row: dict) -> dict[str, float]:
        """A history row as tracked metrics."""
        return {"train_loss": row["loss"], "tokens": float(row["tokens"]), "seconds": row["seconds"],
                "tokens_per_s": row["tokens"] / max(row["seconds"], 1e-9), "outliers": float(row["outliers"]),
                "sync_seconds": row["sync_seconds"]}


def run_edit(cfg: EDiTConfig, progress: bool = True, on_segment=None) -> EDiTSummary:
    """Start a group, run it to the end, shut it down (``raystack.edit.pretrain`` returns the
    one Result instead)."""
    group = EDiTGroup(cfg)
    group.start()
    try:
        return group.run(progress=progress, on_segment=on_segment)
    finally:
        group.shutdown()


class EDiTDriver:
    """The EDiT part behind ``raystack.edit.pretrain(cfg)``: one EDiTGroup, experiment
    tracking, and the run's :class:`Result`."""

    part = "edit"

    def __init__(self, cfg: EDiTConfig, *, callbacks: Sequence[MetricsCallback] = (),
                 progress: bool = True) -> None:
        self.cfg, self.progress = cfg, progress
        loggers = make_loggers(cfg.loggers, cfg.run.out_dir, self.part, config_to_dict(cfg))
        self.group = EDiTGroup(cfg, callbacks=[*callbacks, *loggers])

    @property
    def controller(self) -> Controller | None:
        return self.group.controller

    def step(self) -> ControllerState:
        if self.group.controller is None:
            self.group.begin(self.progress)
        return self.group.step()

    def result(self) -> Result:
        s = self.group.finish()
        metrics = {k: float(getattr(s, k)) for k in ("steps", "tokens", "seconds", "tokens_per_s", "train_loss",
                                                      "val_loss", "sync_seconds", "dp_seconds", "outliers",
                                                      "replacements", "extra_state_bytes")}
        artifacts = {"model": s.model_dir, "checkpoint": str(self.group.checkpoint_dir)}
        if "tensorboard" in self.cfg.loggers:
            artifacts["tensorboard"] = str(Path(self.cfg.run.out_dir) / TENSORBOARD_DIR)
        rows = [{**row, "val_loss": row.get("val_loss")} for row in s.history]
        return Result("edit", metrics, history_table(rows), s.model_dir, artifacts, config_to_dict(self.cfg))

    def shutdown(self) -> None:
        self.group.shutdown()
