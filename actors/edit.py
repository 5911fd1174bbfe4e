"""EDiT on Ray: one ``EDiTWorker`` actor per rank, and ``EDiTGroup``, the part's strategy.

The ranks are the members of one kernel :class:`ActorGroup`: each replica's S ranks share a
PACK placement group (one bundle per rank). ``EDiTGroup`` gives the kernel
:class:`Controller` its hooks: ``start`` forms the collective group and builds the trainers;
``advance`` drives the ranks segment by segment (inner steps up to the next sync; several
segments per call, up to the next evaluation or checkpoint), evaluates and checkpoints;
``recover`` respawns the ranks a failed segment's health poll found dead (as many as
``run.max_replacements`` allows, through the :class:`FailurePolicy`) in a fresh PACK group off
the lost node, re-forms the collective group, and heals the replacements from a live replica:
θ_sync, the outer momentum, the penalty and inner optimizer state and the data position as at
the last sync, so the survivors keep their state and step counters and the replacement joins
the next sync (only when no whole replica is left does every rank reload the last checkpoint).
With ``run.spare_replicas`` > 0, that many replicas' worth of ranks are started ahead, idle, on
nodes no rank uses, and a replica lost whole is replaced by a spare's own actors (no process
start while the survivors wait): :class:`~raystack.actors.edit_spares.SpareReplicas`.
Every file goes through the run's folder in the storage location (``run.out_dir``, any pyarrow
filesystem): ``<out_dir>/<run id>/checkpoint`` is published whole (written beside, then
renamed). :class:`EDiTDriver` runs it for ``raystack.edit.pretrain(cfg)``.
"""
from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import torch

from raystack import metrics
from raystack.actors.collective import CommMember, form_comm_group
from raystack.actors.edit_spares import SpareReplicas
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
from raystack.runtime.ray_spawner import spread_nodes
from raystack.runtime.storage import RunDir, Storage, open_run, torch_bytes, torch_load_bytes

logger = logging.getLogger(__name__)

CHECKPOINT = "checkpoint"
PING_TIMEOUT_S = 30.0  # a rank slower than this to answer a health poll is replaced


def network_of(cfg: EDiTConfig) -> NetworkModel:
    """The simulated link between replicas (ideal unless ``simulate`` sets it)."""
    bw = cfg.simulate.bandwidth_bytes_per_s
    return NetworkModel(cfg.simulate.latency_s, bw if bw > 0 else math.inf)


def load_corpus(cfg: EDiTConfig, progress: bool = False):
    """The corpus named by ``cfg.data`` in the tokens of the model's tokenizer: memory-mapped
    token shards, tokenized once (here if no earlier run or rank did)."""
    from raystack.data.pretrain import DataSources, open_token_corpus
    d = cfg.data
    return open_token_corpus(DataSources(tuple(d.paths), d.text_field, d.max_bytes, d.val_fraction),
                             cfg.model, cfg.tokenizer, d.cache_dir, progress)


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

    def rejoin(self) -> SegmentReport:
        """After the group re-formed around replaced ranks (collective: all ranks at once): a
        replacement builds a fresh trainer; a survivor drops the sync its lost peer left half
        done and rebuilds its trainer on the new group with its state as it is (nothing rolled
        back), running first the sync that was due."""
        if self.trainer is None:
            return self.setup()
        old = self.trainer
        old.abort()
        state = old.state_dict()
        self.setup()
        self.trainer.batches = old.batches
        self.trainer.load_state_dict(state)
        self.trainer.counters.losses, self.trainer.counters.times = old.counters.losses, old.counters.times
        self.trainer.resume_pending_sync()
        return self.trainer.report()

    def heal_state(self) -> dict:
        """This live rank's state as at its last sync, for a replacement (see EDiTRank.heal)."""
        return self.trainer.heal_state()

    def take_rank(self, rank: int, cfg: dict) -> int:
        """A spare takes a lost rank's place: its rank and the run's current config (the
        corpus is already loaded unless ``data`` changed); ``rejoin`` and ``heal`` follow."""
        self.rank = rank
        if cfg != config_to_dict(self.cfg):
            self.configure(cfg)
        return os.getpid()

    def heal(self, state: dict) -> SegmentReport:
        """Take a lost rank's place from the heal state of a live rank with its shard index."""
        self.trainer.heal(state)
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
        ranks asked to ``compute`` run the validation batches; with full sharding every rank
        does, as the sharded forward is itself collective)."""
        if not compute and not self.cfg.full_shard:
            self.trainer.flush()
            return float("nan")
        return self.trainer.evaluate(self.val_batches)

    def save(self, storage: Storage, folder: str, write_model: bool) -> None:
        """Write this rank's state into ``folder`` of the run's storage (and, if asked, a
        transformers checkpoint of θ_sync and the tokenizer), never into this actor's working
        directory."""
        storage.write_bytes(torch_bytes(self.trainer.state_dict()), folder, f"rank{self.rank}.pt")
        with tempfile.TemporaryDirectory(prefix="raystack-model-") as tmp:
            self.trainer.save_pretrained(tmp, write=write_model)   # full sharding gathers first
            if write_model:
                self.corpus.tokenizer.save_pretrained(tmp)
                storage.upload(tmp, folder, "model")

    def load(self, storage: Storage, folder: str) -> SegmentReport:
        """Restore this rank's state from a checkpoint folder of the run's storage."""
        device = next(self.trainer.model.parameters()).device  # a replacement may differ in device
        state = torch_load_bytes(storage.read_bytes(folder, f"rank{self.rank}.pt"), map_location=device)
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
    wire_bytes: dict = field(default_factory=dict)     # per rank (mean): outer, network, local
    memory: dict = field(default_factory=dict)         # per rank (max): params, grads, optimizer, outer, ...


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
        self.run_dir = self._open_run(cfg)
        self.group = ActorGroup("edit", spawner, poll_timeout_s=PING_TIMEOUT_S)
        # run.spare_replicas: whole replicas' worth of started, idle ranks (members spare<n>-<shard>)
        self.spares = SpareReplicas(cfg.shards, self._spare_spec, self.group.spawner, poll_timeout_s=PING_TIMEOUT_S)
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
        """Tokenize the corpus (once; a progress bar here), reserve resources, start the actors,
        form the comm group, build the trainers (once)."""
        if len(self.group):
            return
        load_corpus(self.cfg, progress=True)
        self.devices = plan_devices(self.cfg.run.device, self.cfg.ranks, cluster_gpus())
        bundle = self._bundle()
        # a replica's ranks packed on one node (their links are local), replicas aimed at
        # distinct nodes; PACK (may span nodes) when no node can hold a whole replica
        targets = spread_nodes(self.cfg.replicas, bundle, self.cfg.shards)
        self.group.reserve(*[PlacementSpec(f"replica-{r}", tuple(dict(bundle) for _ in range(self.cfg.shards)),
                                           "STRICT_PACK" if targets[r] else "PACK", target_node=targets[r])
                             for r in range(self.cfg.replicas)])
        self.group.spawn(*[self._spec(rank) for rank in range(self.cfg.ranks)])
        self._form()
        self._fill_spares()

    def _bundle(self) -> dict[str, float]:
        bundle = {"CPU": self.cfg.run.cpus_per_rank}
        if self.devices.uses_gpu:
            bundle["GPU"] = self.devices.gpus_per_actor
        return bundle

    def _fill_spares(self, avoid: tuple[str, ...] = ()) -> None:
        """Spare replicas up to ``run.spare_replicas``, off the ranks' nodes, never on ``avoid``."""
        self.spares.fill(self.cfg.run.spare_replicas, self._bundle(), (self.group.node(k) for k in self.group.keys),
                         avoid)

    def _spare_spec(self, key: str, placement: str, bundle: int) -> MemberSpec:
        """A spare rank's member spec: a rank's, with no rank yet (``take_rank`` gives it one)."""
        return replace(self._spec(-1), key=key, placement=placement, bundle=bundle)

    def wait_for_spares(self, timeout_s: float = 120.0) -> int:
        """Block until every spare has started; the number of spare ranks (``SpareReplicas.wait``)."""
        return self.spares.wait(timeout_s)

    @property
    def promoted(self) -> list[str]:
        """Spare members that took a lost rank's place, over the group's life."""
        return self.spares.promoted

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
        self.run_dir = self._open_run(cfg)
        self.history, self._segments = [], 0
        self.group.call("leave_comm")
        self.group.call("configure", self.cfg_dict)
        self._form()

    def shutdown(self) -> None:
        """Stop the actors (spares too) and release the placement groups."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        try:
            self.group.shutdown()
        finally:
            self.spares.shutdown()

    # -- checkpoints -----------------------------------------------------------------------------
    @staticmethod
    def _open_run(cfg: EDiTConfig) -> RunDir:
        return open_run(cfg.run.out_dir, "edit", run_id=cfg.run.run_id, resume=cfg.run.resume,
                        field="run.out_dir", run_id_field="run.run_id")

    @property
    def storage(self) -> Storage:
        """The run's own folder (``<run.out_dir>/<run id>``)."""
        return self.run_dir.storage

    @property
    def checkpoint_dir(self) -> str:
        """Where the last published checkpoint is (a path in the run's storage)."""
        return self.storage.path(CHECKPOINT)

    def has_checkpoint(self) -> bool:
        return self.storage.exists(CHECKPOINT, "driver.json")

    def save_checkpoint(self) -> str:
        """All ranks write their state, rank 0 θ_sync as a transformers checkpoint, into a new
        folder beside the last checkpoint; it then replaces it whole."""
        tmp = f"{CHECKPOINT}.{uuid.uuid4().hex[:8]}.tmp"
        self.group.call_each("save", {k: (self.storage, tmp, rank == 0) for rank, k in enumerate(self.group.keys)})
        self.storage.write_json({"segments": self._segments, "history": self.history, "config": self.cfg_dict},
                                tmp, "driver.json")
        self.storage.publish_dir(self.storage.path(tmp), self.checkpoint_dir)
        return self.checkpoint_dir

    def load_checkpoint(self) -> None:
        """Every rank reloads the last checkpoint (to resume, or when no replica survived)."""
        meta = self.storage.read_json(CHECKPOINT, "driver.json")
        if meta["config"]["ranks"] != self.cfg.ranks or meta["config"]["shards"] != self.cfg.shards:
            raise ValueError(f"checkpoint in {self.checkpoint_dir} is for ranks={meta['config']['ranks']}, "
                             f"shards={meta['config']['shards']}; this run has ranks={self.cfg.ranks}, "
                             f"shards={self.cfg.shards}")
        self._segments = meta["segments"]
        self.history = meta["history"]
        self.group.call("load", self.storage, CHECKPOINT)

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
        if self.run_dir.resumed and self.has_checkpoint():
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
        if save:
            self.save_checkpoint()
        reports = self._reports
        tokens = sum(r.tokens for r in reports)
        return EDiTSummary(
            steps=max(r.step for r in reports), tokens=tokens, seconds=seconds,
            tokens_per_s=(tokens - self._base_tokens) / max(seconds, 1e-9),
            train_loss=_mean(reports, "loss"), val_loss=val, sync_seconds=_mean(reports, "sync_seconds"),
            dp_seconds=_mean(reports, "dp_seconds"), outliers=reports[0].outliers,
            replacements=self.replacements, extra_state_bytes=max(r.extra_state_bytes for r in reports),
            model_dir=self.storage.path(CHECKPOINT, "model"), history=self.history,
            wire_bytes={k: sum(r.wire_bytes[k] for r in reports) // len(reports) for k in reports[0].wire_bytes},
            memory={k: max(r.memory[k] for r in reports) for k in reports[0].memory})

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
        """Respawn the ranks that failed (off a lost node), re-form the group, and heal the
        replacements from a live replica: the survivors keep their state and step counters.
        Only if no whole replica is left does every rank reload the last checkpoint (the run
        starts over if there is none yet)."""
        dead = list(event.members)
        keys = self.group.keys
        source = self._heal_source(dead)
        avoid = tuple(sorted({self.group.node(k) for k in dead} - {None}))   # the lost (or suspect) nodes
        promoted = [] if source is None else self.spares.promote(self.group, dead, avoid,
                                                                  lambda k: (keys.index(k), self.cfg_dict))
        fresh = [k for k in dead if k not in promoted]
        if fresh:
            self.group.respawn(fresh, spec_for=lambda spec: self._spec(keys.index(spec.key)))
        self.replacements += len(dead)
        if dead:
            self._m_replaced.inc(len(dead))
        survivors = [k for k in keys if k not in dead]
        self.group.call("leave_comm", keys=survivors)
        form_comm_group(self.group, network=network_of(self.cfg), backend=self.devices.backend,
                        timeout_s=self.cfg.run.comm_timeout_s)
        if dead and source is not None:
            self.group.call("rejoin")
            states = [self.group.submit(k, "heal_state") for k in source]   # in shard order
            self.group.gather([self.group.submit(k, "heal", states[keys.index(k) % self.cfg.shards].future)
                               for k in dead])
            logger.warning("edit: %s failed (%s); replaced%s and healed from %s, survivors kept their state",
                           ", ".join(dead), event.reason, " by a spare replica" if promoted else "",
                           ", ".join(source))
            self._fill_spares(avoid)
            return
        self.group.call("setup")
        if self.has_checkpoint():
            self.load_checkpoint()
        else:                               # no checkpoint yet: the run starts over
            self._segments, self.history = 0, []
        logger.warning("edit: %s failed (%s); replaced and resumed from the last checkpoint",
                       ", ".join(dead) or "a call", event.reason)

    def _heal_source(self, dead: list[str]) -> list[str] | None:
        """The ranks of a replica none of whose ranks failed (in shard order), or None: when no
        replica is left whole, when a replica lost only some of its ranks (its survivors hold
        a half-done step), or with full sharding."""
        keys, S = self.group.keys, self.cfg.shards
        lost = {keys.index(k) // S for k in dead}
        if self.cfg.full_shard or any(sum(keys.index(k) // S == r for k in dead) < S for r in lost):
            return None
        live = [r for r in range(self.cfg.replicas) if r not in lost]
        return [keys[live[0] * S + s] for s in range(S)] if live else None

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
