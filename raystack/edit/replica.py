"""One rank of an EDiT job: inner steps, the sync decision, and the sharded outer sync.

``EDiTRank`` holds a model, its inner optimizer and the rank's shard of the outer state, and
talks to the other ranks through a comm object (``raystack.comm.CommGroup`` in actors, or
``LocalComm`` in tests). Global rank g belongs to replica g // S and owns shard g % S of every
block; it syncs its shard with the same shard rank of the other replicas. The outer sync itself
(per-block pipeline, outer optimizer, compression) is ``raystack.edit.outersync.OuterSync``.
"""
from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from raystack.comm.network import NetworkModel
from raystack.edit.config import EDiTConfig
from raystack.edit.fragments import fragment_due, fragment_offsets, split_fragments
from raystack.edit.fsdp import FsdpShards, full_tensor, local_tensor, shard_blocks
from raystack.edit.inner import inner_optimizer
from raystack.edit.layerwise import LayerwiseSync
from raystack.edit.memory import model_state_bytes, peak_rss_bytes
from raystack.edit.messages import SegmentReport
from raystack.edit.outersync import META_DONE, META_STEPS, META_STOP, ExposedTimer, OuterSync
from raystack.edit.penalty import PseudoGradientPenalty
from raystack.edit.shard import Block, ReplicatedShards, ShardLayout, llama_block_specs, llama_blocks
from raystack.edit.trigger import StepTrigger, TimeTrigger, accept_sync, split_by_rate
from raystack.models import lm_loss


@dataclass
class Counters:
    """Progress and accounting of one rank (all plain numbers, checkpointed)."""

    step: int = 0                    # inner steps this rank ran
    steps_since_sync: int = 0
    syncs: int = 0
    outliers: int = 0                # (replica, block) pairs dropped by the penalty
    skipped_blocks: int = 0
    sync_seconds: float = 0.0        # exposed: time the rank was blocked on outer-sync work
    dp_seconds: float = 0.0          # gradient all-reduce (warm-up, sync mode, within a replica)
    compute_seconds: float = 0.0
    tokens: int = 0
    losses: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)   # wall clock (time.time) at each step's end
    exposed: list[float] = field(default_factory=list)  # sync_seconds at each step's end


class EDiTRank:
    """Training state and step logic of one rank."""

    def __init__(self, cfg: EDiTConfig, model: nn.Module, comm, batches,
                 blocks: list[Block] | None = None, loss_fn=lm_loss) -> None:
        self.cfg = cfg
        self.model = model
        self.comm = comm
        self.batches = batches
        self.loss_fn = loss_fn
        self.rank = comm.rank
        S, R = cfg.shards, cfg.replicas
        if comm.world_size != cfg.ranks:
            raise ValueError(f"comm has {comm.world_size} ranks, config says ranks={cfg.ranks}")
        self.replica, self.shard = divmod(self.rank, S)
        replicas = [[r * S + s for s in range(S)] for r in range(R)]
        # ranks of a replica share a fast local link (FSDP-style); replicas talk over the network
        self.replica_comm = self._member_of(replicas, local=True) if S > 1 else None
        sync_comm = self._member_of([[r * S + s for r in range(R)] for s in range(S)])
        if cfg.full_shard:
            if blocks is not None:
                raise ValueError("full_shard shards the model's own blocks (llama_block_specs); "
                                 "custom blocks are not supported")
            fsdp_comm = self._member_of(replicas, local=True, tag="fsdp")
            if fsdp_comm.process_group is None:
                raise ValueError("full_shard needs ranks as processes on torch.distributed "
                                 "(raystack.comm.CommGroup); an in-process LocalComm cannot shard")
            shard_blocks(model, llama_block_specs(model), fsdp_comm.process_group)
        self.blocks = blocks if blocks is not None else llama_blocks(model)
        self.layouts = [ShardLayout(b.numel, S, self.shard) for b in self.blocks]
        # staggered fragments: which blocks each sync point of the window covers (None: all)
        self.fragments = (split_fragments([b.numel for b in self.blocks], cfg.fragments)
                          if cfg.fragments > 1 else None)
        self.fragment_offsets = fragment_offsets(cfg.sync.h, cfg.fragments) if self.fragments else None
        self.shards = FsdpShards(self.blocks) if cfg.full_shard else ReplicatedShards(
            self.blocks, self.layouts, self.replica_comm)
        self.optimizer = self._make_optimizer()
        self.penalty = PseudoGradientPenalty(
            len(self.blocks), cfg.uses_penalty, cfg.penalty.ewma_alpha, cfg.penalty.z_threshold,
            cfg.penalty.warmup_syncs, cfg.penalty.temperature, cfg.penalty.clip)
        self.trigger = TimeTrigger(cfg.sync.t_seconds) if cfg.mode == "aedit" else StepTrigger(cfg.sync.h)
        self.device = next(model.parameters()).device
        self.counters = Counters()
        # where the exposed sync time went (seconds, this run): not checkpointed
        self.timer = ExposedTimer(self.counters)
        self.outer = OuterSync(cfg, self.shards, len(self.blocks), self.replica, sync_comm, self.comm,
                               self.replica_comm, self.penalty, self.counters, self.timer,
                               torch.device("cpu") if cfg.sync.state_on_cpu else self.device)
        self.state_bytes: dict[str, int] = {}        # model state held at the last measured step
        self._rng = random.Random(cfg.run.seed * 1000 + self.rank)
        if not cfg.full_shard:                        # FSDP reduce-scatters within the replica itself
            self._install_grad_hooks()
        self.layerwise = (LayerwiseSync([b.module for b in self.blocks], self.outer, cfg.sync.prefetch)
                          if cfg.uses_layerwise else None)
        self.done = False
        self._sync_first = False   # set by resume_pending_sync after a recovery
        if cfg.sync.warmup_steps == 0 and cfg.mode != "sync":
            self.reset_outer_state()

    # -- setup ---------------------------------------------------------------------------------
    def _member_of(self, groups: list[list[int]], local: bool = False, tag: str = ""):
        mine = None
        for ranks in groups:
            g = self.comm.subgroup(ranks, network=NetworkModel() if local else None, tag=tag)
            if self.rank in ranks:
                mine = g
        return mine

    def _make_optimizer(self) -> torch.optim.Optimizer:
        return inner_optimizer(self.cfg.inner, self.model.parameters())

    @property
    def sync_comm(self):
        """The group of this rank's shard rank across the replicas (the outer sync's link)."""
        return self.outer.sync_comm

    @sync_comm.setter
    def sync_comm(self, comm) -> None:
        self.outer.sync_comm = comm

    @property
    def theta_sync(self) -> list[torch.Tensor]:
        """This rank's shard of θ_sync, per block."""
        return self.outer.theta_sync

    @property
    def momentum(self) -> list[torch.Tensor]:
        """This rank's shard of the outer momentum, per block."""
        return self.outer.momentum

    @property
    def phases(self) -> dict[str, float]:
        """Where the exposed sync time went, by phase (seconds, this run)."""
        return self.timer.phases

    def reset_outer_state(self) -> None:
        """θ_sync ← the current parameters (this rank's shard); outer momentum ← 0."""
        self.outer.reset()

    def extra_state_bytes(self) -> int:
        """Bytes of θ_sync and momentum this rank keeps (2·P/S elements), plus error-feedback
        residuals when compression uses them."""
        return self.outer.extra_state_bytes()

    # -- inner step ----------------------------------------------------------------------------
    @property
    def in_warmup(self) -> bool:
        return self.cfg.mode == "sync" or self.counters.step < self.cfg.sync.warmup_steps

    def _lr_now(self) -> float:
        lr = self.cfg.inner.lr_at(self.counters.step, self.cfg.steps)
        if self._spiking():
            lr *= self.cfg.simulate.spike_lr_mult
        return lr

    def _spiking(self) -> bool:
        sim = self.cfg.simulate
        return self.replica == sim.spike_replica and sim.spike_start <= self.counters.step < sim.spike_start + sim.spike_steps

    def train_step(self) -> float:
        """One inner step (a pending layer-wise sync runs inside its forward); returns the loss."""
        batch = self.batches.next_batch()
        if self._spiking():
            flat = batch.reshape(-1)
            batch = flat[torch.randperm(flat.numel(), generator=torch.Generator().manual_seed(self.counters.step))].view_as(batch)
        t0 = time.perf_counter()
        sync_before = self.counters.sync_seconds + self.counters.dp_seconds
        loss = self.loss_fn(self.model, batch)
        if not self.cfg.full_shard:
            self._grad_group = self.comm if self.in_warmup else self.replica_comm
            self._grad_left = [len(b.params) for b in self.blocks]
            self._grad_work = {}
        loss.backward()          # each block's gradient all-reduce starts as soon as it is ready
        if self.cfg.full_shard:
            if self.in_warmup:   # FSDP averaged within the replica; average across replicas too
                self._average_shard_grads()
        else:
            self._reduce_grads()
        if self.cfg.inner.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.inner.grad_clip)
        for g in self.optimizer.param_groups:
            g["lr"] = self._lr_now()
        self.optimizer.step()
        if self.counters.steps_since_sync == 0 or not self.state_bytes:
            self.state_bytes = model_state_bytes(self.model, self.optimizer)   # grads still held here
        self.optimizer.zero_grad(set_to_none=True)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # time the step's kernels, not their launch
        compute = time.perf_counter() - t0 - (self.counters.sync_seconds + self.counters.dp_seconds - sync_before)
        self._simulate_slowness(compute)
        self.counters.compute_seconds += compute
        self.counters.step += 1
        self.counters.steps_since_sync += 1
        self.counters.tokens += batch.size(0) * (batch.size(1) - 1)
        value = float(loss.detach())
        self.counters.losses.append(value)
        self.counters.times.append(time.time())
        self.counters.exposed.append(self.counters.sync_seconds)
        if self.cfg.mode != "sync" and self.counters.step == self.cfg.sync.warmup_steps:
            self.reset_outer_state()          # local SGD starts from the synchronous warm-up
            self.counters.steps_since_sync = 0
            self.trigger.reset()
        if self.outer.pending:                # an overlapped update: start what is ready
            self.outer.progress()
        return value

    def _simulate_slowness(self, compute: float) -> None:
        sim = self.cfg.simulate
        factor = sim.slowdown[self.replica] if sim.slowdown else 1.0
        if self.replica == sim.random_slow_replica and self._rng.random() < sim.random_slow_prob:
            factor *= sim.random_slow_factor
        if factor > 1:
            time.sleep(compute * (factor - 1))

    def _install_grad_hooks(self) -> None:
        """Bucket = block: once backward has accumulated every gradient of a block, its
        all-reduce (average) is launched, so the transfer overlaps the rest of backward."""
        self._grad_group = None
        self._grad_left: list[int] = []
        self._grad_work: dict[int, tuple] = {}
        for b, blk in enumerate(self.blocks):
            for p in blk.params:
                p.register_post_accumulate_grad_hook(self._grad_hook(b))

    def _grad_hook(self, b: int):
        def hook(param):
            if self._grad_group is None or not self._grad_left:
                return
            self._grad_left[b] -= 1
            if self._grad_left[b] == 0:
                self._launch_grads(b)
        return hook

    def _launch_grads(self, b: int) -> None:
        grads = [p.grad for p in self.blocks[b].params if p.grad is not None]
        if not grads:
            self._grad_work[b] = None
            return
        flat = torch.cat([g.reshape(-1) for g in grads])
        t0 = time.perf_counter()
        handle = self._grad_group.all_reduce(flat, op="avg", async_op=True)
        self.counters.dp_seconds += time.perf_counter() - t0
        self._grad_work[b] = (grads, handle)

    def _reduce_grads(self) -> None:
        group = self._grad_group
        if group is None:
            return
        for b in range(len(self.blocks)):      # blocks whose hooks did not all fire (unused params)
            if b not in self._grad_work:
                self._launch_grads(b)
        t0 = time.perf_counter()
        for b in range(len(self.blocks)):
            work = self._grad_work[b]
            if work is None:
                continue
            grads, handle = work
            flat = handle.wait()
            offset = 0
            for g in grads:
                g.copy_(flat[offset:offset + g.numel()].view_as(g))
                offset += g.numel()
        self.counters.dp_seconds += time.perf_counter() - t0
        self._grad_group, self._grad_work = None, {}

    def _average_shard_grads(self) -> None:
        """Full sharding, synchronous steps: average each block's gradient shards across the
        replicas (the same shard rank of each; FSDP already averaged within the replica)."""
        if self.cfg.replicas == 1:
            return
        t0 = time.perf_counter()
        work = []
        for blk in self.blocks:
            grads = [local_tensor(p.grad) for p in blk.params if p.grad is not None]
            if grads:
                flat = torch.cat([g.reshape(-1) for g in grads])
                work.append((grads, self.sync_comm.all_reduce(flat, op="avg", async_op=True)))
        for grads, handle in work:
            flat, offset = handle.wait(), 0
            for g in grads:
                g.copy_(flat[offset:offset + g.numel()].view_as(g))
                offset += g.numel()
        self.counters.dp_seconds += time.perf_counter() - t0

    # -- the sync decision ---------------------------------------------------------------------
    def maybe_sync(self) -> bool:
        """After a step: start a sync if it is due (and agreed); returns True if one started.

        Sets ``self.done`` when the run's step budget is spent (after a final, complete sync).
        """
        c = self.counters
        if self.in_warmup:
            self.done = c.step >= self.cfg.steps
            return False
        want_stop = c.step >= self.cfg.steps
        fragment = self._due_fragment()
        proposed = fragment is not None
        if self.cfg.mode != "aedit":
            proposed = proposed or want_stop   # A-EDiT stops on the summed budget, at a sync
        if self.cfg.mode == "aedit" and self.replica_comm is not None:
            # ranks of a replica run in lockstep; agree on the time-based proposal
            flag = torch.tensor([1.0 if proposed else 0.0])
            proposed = float(self.replica_comm.all_reduce(flag, op="sum")) > 0
        if not proposed:
            return False
        with self.timer.exposed():
            if self.outer.pending:            # the budget ended inside an overlapped update's window
                self._finish_pending()
            return self._start_sync(want_stop, None if want_stop else fragment)

    def _due_fragment(self) -> int | None:
        """Which sync the window is at: 0 when every block's sync is due (the trigger fired),
        with staggered fragments the fragment whose point this is; None when none is due."""
        if self.fragments is None:
            return 0 if self.trigger.should_sync(self.counters.steps_since_sync) else None
        return fragment_due(self.counters.steps_since_sync, self.fragment_offsets)

    def _start_sync(self, want_stop: bool, fragment: int | None = None) -> bool:
        """Start a sync of every block, or with staggered fragments of ``fragment``'s blocks."""
        c = self.counters
        S, R = self.cfg.shards, self.cfg.replicas
        blocks = self.fragments[fragment] if self.fragments is not None and fragment is not None else None
        self.outer.begin([float(c.steps_since_sync), float(c.step), 1.0 if want_stop else 0.0], blocks)
        stop, quota = False, None
        if self.cfg.mode == "aedit" or want_stop or self.layerwise is None:
            # agree now: A-EDiT's steps decide whether the sync happens; a last sync or a
            # blocking one (DiLoCo, Post Local SGD) needs the decision before anything else
            rows = self.outer.wait_meta()
            steps = [int(rows[r * S][META_STEPS]) for r in range(R)]
            total = sum(float(rows[r * S][META_DONE]) for r in range(R))
            if self.cfg.mode == "aedit":
                stop = total >= self.cfg.steps * R
            else:
                stop = any(float(rows[r * S][META_STOP]) > 0 for r in range(R))
            need = 1 if stop else (self.cfg.sync.min_steps if self.cfg.mode == "aedit" else 1)
            if not accept_sync(steps, need):
                self.outer.cancel()
                if stop:                  # nothing ran since the last sync: just stop
                    self.done = True
                return False
            self.outer.decide(rows, steps if self.cfg.mode == "aedit" else None)
            if self.cfg.mode == "aedit" and not stop:
                left, window = int(math.ceil(self.cfg.steps * R - total)), sum(steps)
                if left <= window:
                    # the last window: the budget left, split by each replica's speed in the window
                    # just ended, as step quotas (so it ends at once with a single final sync)
                    quota = split_by_rate(left, steps)[self.replica]
        # else EDiT's step trigger: every replica syncs at this step; the decision's all-gather
        # completes in the background and the forward's pre-hooks pick it up
        c.syncs += 1
        if blocks is None or fragment == len(self.fragments) - 1:   # the window's last sync point
            c.steps_since_sync = 0
        self.trigger.reset(quota=quota)
        if self.layerwise is not None and not stop:
            self.layerwise.arm(launch_first=True, delay_forwards=self.cfg.overlap_steps, blocks=blocks)
            self.outer.progress()
        else:
            self.outer.complete()
        self.done = stop
        return True

    def _finish_pending(self) -> None:
        """Apply a started sync now (an evaluation, a checkpoint or the end comes first)."""
        if self.layerwise is not None and self.layerwise.active:
            self.layerwise.flush()
        self.outer.complete()

    def flush(self) -> None:
        """Complete a pending layer-wise sync now (before eval, checkpoint or the end)."""
        if self.outer.pending or (self.layerwise is not None and self.layerwise.active):
            with self.timer.exposed():
                self._finish_pending()

    # -- driving -------------------------------------------------------------------------------
    def run_segment(self) -> SegmentReport:
        """Inner steps until the next sync starts (or ``sync.h`` steps of warm-up), or the end."""
        start_step = self.counters.step
        if self._sync_first:                      # a sync a lost peer interrupted, first
            self._sync_first = False
            if self.maybe_sync():
                return self.report()
        while not self.done:
            self.train_step()
            if self.maybe_sync():
                break
            if self.in_warmup and self.counters.step - start_step >= self.cfg.sync.h:
                break
        return self.report()

    def wire_bytes(self) -> dict[str, int]:
        """Bytes this rank sent: over the network (``outer``: pseudo-gradients; ``network``: those
        plus the decisions' all-gathers and synchronous gradient all-reduces) and within its
        replica (``local``), as counted by the comm layer (FSDP2's own collectives excluded)."""
        def total(comm) -> int:
            return int(sum(s["bytes"] for s in comm.stats().values())) if comm is not None else 0
        outer = total(self.sync_comm)
        return {"outer": outer, "network": outer + total(self.comm), "local": total(self.replica_comm)}

    def memory(self) -> dict[str, int]:
        """What this rank holds: parameters, gradients and optimizer state (at the last measured
        step, gradients still held), the outer state, the most a sync round held in flight, and
        the process's peak RSS (all thread-ranks of a process together)."""
        return {**self.state_bytes, "outer": self.extra_state_bytes(),
                "in_flight": self.outer.peak_round_bytes, "peak_rss": peak_rss_bytes()}

    def report(self) -> SegmentReport:
        c = self.counters
        return SegmentReport(
            rank=self.rank, replica=self.replica, step=c.step, syncs=c.syncs, tokens=c.tokens,
            loss=c.losses[-1] if c.losses else float("nan"), outliers=c.outliers,
            skipped_blocks=c.skipped_blocks, sync_seconds=c.sync_seconds, dp_seconds=c.dp_seconds,
            compute_seconds=c.compute_seconds, done=self.done,
            extra_state_bytes=self.extra_state_bytes(), wall=time.time(), phases=dict(self.phases),
            wire_bytes=self.wire_bytes(), memory=self.memory())

    @torch.no_grad()
    def evaluate(self, batches: list[torch.Tensor]) -> float:
        """Mean loss on ``batches`` with the current (synced) parameters."""
        self.flush()
        was = self.model.training
        self.model.eval()
        losses = [float(self.loss_fn(self.model, b)) for b in batches]
        self.model.train(was)
        return sum(losses) / max(1, len(losses))

    # -- a lost peer: drop the sync in flight, heal a replacement from a live peer ----------------
    def abort(self) -> None:
        """Drop a sync or gradient reduction that a lost peer left half done (its collectives
        failed); the state is kept as it is, so nothing this rank did is rolled back."""
        self.outer.cancel()
        self._grad_group, self._grad_work = None, {}
        if self.layerwise is not None:
            self.layerwise.active = False

    def resume_pending_sync(self) -> None:
        """After a recovery: if a sync was due when the peer was lost, run it before the next
        step (every replica's step counter must agree on when syncs happen)."""
        c = self.counters
        self._sync_first = not self.in_warmup and not self.done and (
            self._due_fragment() is not None or c.step >= self.cfg.steps)

    def heal_state(self) -> dict:
        """What a replacement for a lost rank with this rank's shard index takes from this live
        rank: the outer state (θ_sync, momentum), the penalty and inner optimizer state, and the
        counters as at the last sync (in warm-up, when every replica holds the same model, the
        model too)."""
        c = self.counters
        counters = {k: getattr(c, k) for k in c.__dataclass_fields__ if k not in ("losses", "times", "exposed")}
        warm = self.in_warmup
        if not warm:
            counters["step"] = c.step - c.steps_since_sync
            counters["steps_since_sync"] = 0
        return {"outer": self.outer.state_dict(), "penalty": self.penalty.state_dict(),
                "optimizer": self.optimizer.state_dict(), "counters": counters,
                "model": self.model.state_dict() if warm else None}

    def heal(self, state: dict) -> None:
        """Take a lost rank's place from a live rank's :meth:`heal_state` (same shard index): its
        state as at the last sync, this rank's own data stream advanced to that step, and the
        model at θ_sync (a collective over this replica: every rank of it heals at once). The
        replica then joins the next sync like the others."""
        self.optimizer.load_state_dict(state["optimizer"])
        self.penalty.load_state_dict(state["penalty"])
        for k, v in state["counters"].items():
            setattr(self.counters, k, v)
        self.outer.load_state_dict(state["outer"])
        if state["model"] is not None:
            self.model.load_state_dict(state["model"])
        else:
            for b in range(len(self.blocks)):
                self.shards.write(b, self.outer.theta_sync[b])
        self.batches.skip(self.counters.step)
        self.done = False
        self.trigger.reset()

    # -- checkpoints ---------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything needed to resume this rank (call after :meth:`flush`)."""
        self.flush()
        c = self.counters
        return {"model": {k: v.clone() for k, v in self.model.state_dict().items()},
                "optimizer": self.optimizer.state_dict(),
                **self.outer.state_dict(),
                "penalty": self.penalty.state_dict(),
                "counters": {k: getattr(c, k) for k in c.__dataclass_fields__ if k not in ("losses", "times", "exposed")},
                "data": self.batches.state_dict(), "done": self.done}

    def load_state_dict(self, state: dict) -> None:
        """Restore from :meth:`state_dict` (of this rank, or of a peer with the same shard)."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.outer.load_state_dict(state)
        self.penalty.load_state_dict(state["penalty"])
        for k, v in state["counters"].items():
            setattr(self.counters, k, v)
        if state.get("data") is not None:
            self.batches.load_state_dict(state["data"])
        self.done = state["done"] and self.counters.step >= self.cfg.steps   # a larger budget resumes
        if self.layerwise is not None:
            self.layerwise.active = False
        self.trigger.reset()

    def full_state_dict(self) -> dict[str, torch.Tensor]:
        """The whole model's parameters and buffers on every rank (with full sharding a
        collective over the replica: every rank of it must call this)."""
        return {k: full_tensor(v).detach().clone() for k, v in self.model.state_dict().items()}

    def save_pretrained(self, path, write: bool = True) -> None:
        """Write the model as a transformers checkpoint (``write`` False: only take part in the
        gathering a fully sharded replica needs)."""
        if not self.cfg.full_shard:
            if write:
                self.model.save_pretrained(path)
            return
        state = self.full_state_dict()
        if write:
            self.model.save_pretrained(path, state_dict=state)
