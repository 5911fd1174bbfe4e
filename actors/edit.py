"""EDiT on Ray: one ``EDiTWorker`` actor per rank, and ``EDiTGroup``, the driver-side owner.

The group places each replica's S ranks in a placement group (one bundle per rank), forms
the collective group, drives the ranks segment by segment (inner steps up to the next sync;
several segments per call, up to the next evaluation or checkpoint),
evaluates, checkpoints, and replaces a dead replica actor: the replacement and the survivors
reload the last checkpoint (θ_sync, the outer state, the inner state and the data position)
and the run goes on.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import ray
import torch
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from raystack.actors.collective import CommMember, form_comm_group
from raystack import metrics
from raystack.comm import NetworkModel
from raystack.config import config_to_dict, load_config
from raystack.devices import CPU as CPU_PLAN
from raystack.devices import cluster_gpus, local_device, plan_devices
from raystack.edit.config import EDiTConfig
from raystack.edit.replica import EDiTRank

CHECKPOINT = "checkpoint"


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

    def setup(self) -> dict:
        """Build a fresh model and the rank's trainer (collective: all ranks at once)."""
        from raystack.models import build_model
        model = build_model(self.cfg.model, seed=self.cfg.run.seed).to(local_device(self.cfg.run.device))
        self.trainer = EDiTRank(self.cfg, model, self.comm, self._stream())
        return self.trainer.report()

    def run_segment(self) -> dict:
        """Inner steps up to the next sync (or the end); a report of counters."""
        return self.trainer.run_segment()

    def run_segments(self, n: int) -> list[dict]:
        """Up to ``n`` segments in one call (fewer if the run ends): one report per segment.
        Every rank ends its segments at the same syncs, so all return the same count."""
        reports = []
        for _ in range(n):
            reports.append(self.trainer.run_segment())
            if reports[-1]["done"]:
                break
        return reports

    def evaluate(self, compute: bool = True) -> float:
        """Validation loss of θ_sync (collective: completes a pending sync on every rank; only
        ranks asked to ``compute`` run the validation batches; with full sharding every rank
        does, as the sharded forward is itself collective)."""
        if not compute and not self.cfg.full_shard:
            self.trainer.flush()
            return float("nan")
        return self.trainer.evaluate(self.val_batches)

    def save(self, directory: str, write_model: bool) -> None:
        """Write this rank's state (and, if asked, a transformers checkpoint of θ_sync)."""
        state = self.trainer.state_dict()
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        torch.save(state, path / f"rank{self.rank}.pt")
        self.trainer.save_pretrained(path / "model", write=write_model)   # full sharding gathers first

    def load(self, directory: str) -> dict:
        """Restore this rank's state from a checkpoint directory."""
        device = next(self.trainer.model.parameters()).device  # a replacement may differ in device
        state = torch.load(Path(directory) / f"rank{self.rank}.pt", weights_only=False, map_location=device)
        self.trainer.load_state_dict(state)
        return self.trainer.report()

    def report(self) -> dict:
        return self.trainer.report()

    def comm_totals(self) -> dict:
        return self.comm.stats() if self.comm is not None else {}


@dataclass
class RunResult:
    """What a run reports to the user."""

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
    wire_bytes: dict = field(default_factory=dict)     # per rank (mean): outer, network, local
    memory: dict = field(default_factory=dict)         # per rank (max): params, grads, optimizer, outer, ...


class EDiTGroup:
    """Owns the placement groups and the ``EDiTWorker`` actors of one job."""

    def __init__(self, cfg: EDiTConfig, worker_cls: type = None) -> None:
        self.cfg = cfg
        self.worker_cls = worker_cls or EDiTWorker
        self.cfg_dict = config_to_dict(cfg)
        self.out_dir = Path(cfg.run.out_dir)
        self.pgs = []
        self.workers: list = []
        self.devices = CPU_PLAN
        self.replacements = 0
        self.history: list[dict] = []
        self._segments = 0
        self._m_loss = metrics.gauge("edit_train_loss", "EDiT training loss (mean over ranks)")
        self._m_val = metrics.gauge("edit_val_loss", "EDiT validation loss of theta_sync")
        self._m_tps = metrics.gauge("edit_tokens_per_s", "EDiT training tokens per second")
        self._m_sync = metrics.gauge("edit_sync_seconds", "EDiT exposed sync time per rank (mean)")
        self._m_outliers = metrics.counter("edit_outliers", "pseudo-gradients dropped by the penalty")
        self._m_replaced = metrics.counter("edit_replacements", "EDiT worker actors replaced after a failure")

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Reserve resources, start the actors, form the comm group, build the trainers."""
        S = self.cfg.shards
        self.devices = plan_devices(self.cfg.run.device, self.cfg.ranks, cluster_gpus())
        bundle = {"CPU": self.cfg.run.cpus_per_rank}
        if self.devices.uses_gpu:
            bundle["GPU"] = self.devices.gpus_per_actor
        self.pgs = [placement_group([dict(bundle) for _ in range(S)], strategy="PACK")
                    for _ in range(self.cfg.replicas)]
        ray.get([pg.ready() for pg in self.pgs], timeout=120)
        self.workers = [self._spawn(rank) for rank in range(self.cfg.ranks)]
        self._form()

    def _spawn(self, rank: int):
        replica, shard = divmod(rank, self.cfg.shards)
        strategy = PlacementGroupSchedulingStrategy(self.pgs[replica], placement_group_bundle_index=shard)
        env = {"OMP_NUM_THREADS": str(self.cfg.run.threads_per_rank)}
        return ray.remote(self.worker_cls).options(
            num_cpus=self.cfg.run.cpus_per_rank, num_gpus=self.devices.gpus_per_actor,
            scheduling_strategy=strategy, runtime_env={"env_vars": env}, name=None
        ).remote(self.cfg_dict, rank)

    def _form(self) -> None:
        form_comm_group(self.workers, network=network_of(self.cfg), backend=self.devices.backend,
                        timeout_s=self.cfg.run.comm_timeout_s)
        ray.get([w.setup.remote() for w in self.workers])

    def reconfigure(self, cfg: EDiTConfig) -> None:
        """Reuse the actors for a new run of the same shape (new mode, network, simulation)."""
        shape = lambda c: (c.ranks, c.shards, c.run.cpus_per_rank, c.run.device)  # noqa: E731
        if shape(cfg) != shape(self.cfg):
            raise ValueError("reconfigure keeps ranks, shards, cpus_per_rank and device; start a new group instead")
        self.cfg, self.cfg_dict = cfg, config_to_dict(cfg)
        self.out_dir = Path(cfg.run.out_dir)
        self.history, self._segments = [], 0
        ray.get([w.leave_comm.remote() for w in self.workers])
        ray.get([w.configure.remote(self.cfg_dict) for w in self.workers])
        self._form()

    def shutdown(self) -> None:
        """Stop the actors and release the placement groups."""
        for w in self.workers:
            ray.kill(w)
        for pg in self.pgs:
            remove_placement_group(pg)
        self.workers, self.pgs = [], []

    # -- checkpoints -----------------------------------------------------------------------------
    @property
    def checkpoint_dir(self) -> Path:
        return self.out_dir / CHECKPOINT

    def save_checkpoint(self) -> Path:
        """All ranks write their state; rank 0 writes θ_sync as a transformers checkpoint."""
        tmp = self.out_dir / (CHECKPOINT + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        ray.get([w.save.remote(str(tmp), rank == 0) for rank, w in enumerate(self.workers)])
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
        ray.get([w.load.remote(str(self.checkpoint_dir)) for w in self.workers])

    # -- faults ----------------------------------------------------------------------------------
    def _dead_ranks(self) -> list[int]:
        dead = []
        for rank, w in enumerate(self.workers):
            try:
                ray.get(w.ping.remote(), timeout=30)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                dead.append(rank)
        return dead

    def recover(self) -> list[int]:
        """Replace dead actors, re-form the group, and reload the last checkpoint everywhere."""
        dead = self._dead_ranks()
        if self.replacements + len(dead) > self.cfg.run.max_replacements:
            raise RuntimeError(f"ranks {dead} died; {self.replacements} replacements already made "
                               f"(run.max_replacements={self.cfg.run.max_replacements})")
        for rank in dead:
            ray.kill(self.workers[rank])
            self.workers[rank] = self._spawn(rank)
            self.replacements += 1
            self._m_replaced.inc()
        ray.get([w.leave_comm.remote() for r, w in enumerate(self.workers) if r not in dead])
        self._form()
        if self.checkpoint_dir.joinpath("driver.json").exists():
            self.load_checkpoint()
        else:                               # no checkpoint yet: the run starts over
            self._segments, self.history = 0, []
        return dead

    # -- the run ---------------------------------------------------------------------------------
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

    def _segment(self, n: int = 1) -> list[list[dict]]:
        """Run ``n`` segments on every rank in one call; the reports of each segment, in order."""
        refs = [w.run_segments.remote(n) for w in self.workers]
        # wait for every rank (survivors of a failure error out of their collectives) before
        # looking at results, so recovery never talks to a rank still busy in a segment
        ray.wait(refs, num_returns=len(refs), timeout=(self.cfg.run.comm_timeout_s * 3 + 60) * n)
        per_rank = ray.get(refs)
        return [list(seg) for seg in zip(*per_rank)]

    def evaluate(self) -> float:
        return ray.get([w.evaluate.remote(rank == 0) for rank, w in enumerate(self.workers)])[0]

    def run(self, progress: bool = True, on_segment: Callable[["EDiTGroup", int], None] | None = None,
            save: bool = True) -> RunResult:
        """Train to the step budget; ``on_segment(group, n)`` is called after each segment."""
        from tqdm import tqdm
        cfg = self.cfg
        if cfg.run.resume and self.checkpoint_dir.joinpath("driver.json").exists():
            self.load_checkpoint()
        base_tokens = sum(ray.get([w.report.remote() for w in self.workers])[i]["tokens"]
                          for i in range(len(self.workers)))
        bar = tqdm(total=cfg.steps, desc=f"edit[{cfg.mode}]", unit="step", disable=not progress)
        t0, self._t0_wall = time.perf_counter(), time.time()
        reports: list[dict] = []
        done = False
        while not done:
            try:
                batch = self._segment(self._segments_now(on_segment is not None))
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as exc:
                dead = self.recover()
                bar.write(f"edit: rank(s) {dead} failed ({type(exc).__name__}); replaced and "
                          f"resumed from the last checkpoint")
                continue
            for reports in batch[:-1]:          # segments run inside the call: history only
                self._segments += 1
                self._record(reports, t0, bar)
            reports = batch[-1]
            self._segments += 1
            self._record(reports, t0, bar)
            done = all(r["done"] for r in reports)
            if not done and cfg.run.eval_every and self._segments % cfg.run.eval_every == 0:
                val = self.evaluate()
                self.history[-1]["val_loss"] = val
                self._m_val.set(val)
            if not done and cfg.run.checkpoint_every and self._segments % cfg.run.checkpoint_every == 0:
                self.save_checkpoint()
            if on_segment is not None:
                on_segment(self, self._segments)
        seconds = time.perf_counter() - t0
        bar.close()
        val = self.evaluate()
        self._m_val.set(val)
        path = self.save_checkpoint() if save else self.checkpoint_dir
        tokens = sum(r["tokens"] for r in reports)
        return RunResult(
            steps=max(r["step"] for r in reports), tokens=tokens, seconds=seconds,
            tokens_per_s=(tokens - base_tokens) / max(seconds, 1e-9),
            train_loss=sum(r["loss"] for r in reports) / len(reports), val_loss=val,
            sync_seconds=sum(r["sync_seconds"] for r in reports) / len(reports),
            dp_seconds=sum(r["dp_seconds"] for r in reports) / len(reports),
            outliers=reports[0]["outliers"], replacements=self.replacements,
            extra_state_bytes=max(r["extra_state_bytes"] for r in reports),
            model_dir=str(path / "model"), history=self.history,
            wire_bytes={k: sum(r["wire_bytes"][k] for r in reports) // len(reports) for k in reports[0]["wire_bytes"]},
            memory={k: max(r["memory"][k] for r in reports) for k in reports[0]["memory"]})

    def _record(self, reports: list[dict], t0: float, bar) -> None:
        loss = sum(r["loss"] for r in reports) / len(reports)
        tokens = sum(r["tokens"] for r in reports)
        # segments run inside one call end at the rank's own clock, not at the call's return
        walls = [r["wall"] for r in reports if "wall" in r]
        elapsed = (max(walls) - self._t0_wall) if walls else time.perf_counter() - t0
        step = min(r["step"] for r in reports)
        prev_outliers = self.history[-1]["outliers"] if self.history else 0
        self.history.append({"segment": self._segments, "step": step, "tokens": tokens, "loss": loss,
                             "seconds": elapsed, "outliers": reports[0]["outliers"],
                             "sync_seconds": sum(r["sync_seconds"] for r in reports) / len(reports)})
        self._m_loss.set(loss)
        self._m_tps.set(tokens / max(elapsed, 1e-9))
        self._m_sync.set(self.history[-1]["sync_seconds"])
        if reports[0]["outliers"] > prev_outliers:
            self._m_outliers.inc(reports[0]["outliers"] - prev_outliers)
        bar.n = min(step, self.cfg.steps)
        bar.set_postfix(loss=f"{loss:.3f}", outliers=reports[0]["outliers"])
        bar.refresh()


def run_edit(cfg: EDiTConfig, progress: bool = True, on_segment=None) -> RunResult:
    """Start a group, run it to the end, shut it down (the Python API behind ``raystack edit``)."""
    group = EDiTGroup(cfg)
    group.start()
    try:
        return group.run(progress=progress, on_segment=on_segment)
    finally:
        group.shutdown()
