"""One rank of an EDiT job: inner steps, the sync decision, and the sharded outer sync.

``EDiTRank`` holds a model, its inner optimizer and the rank's shard of the outer state, and
talks to the other ranks through a comm object (``raystack.comm.CommGroup`` in actors, or
``LocalComm`` in tests). Global rank g belongs to replica g // S and owns shard g % S of every
block; it syncs its shard with the same shard rank of the other replicas.
"""
from __future__ import annotations

import math
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from raystack.comm.network import NetworkModel
from raystack.edit.config import EDiTConfig
from raystack.edit.layerwise import LayerwiseSync
from raystack.edit.messages import SegmentReport
from raystack.edit.outer import nesterov_step
from raystack.edit.penalty import BlockDecision, PseudoGradientPenalty, clip_coefficient
from raystack.edit.shard import Block, ShardLayout, flatten, llama_blocks, unflatten_into
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
        # ranks of a replica share a fast local link (FSDP-style); replicas talk over the network
        self.replica_comm = (self._member_of([[r * S + s for s in range(S)] for r in range(R)], local=True)
                             if S > 1 else None)
        self.sync_comm = self._member_of([[r * S + s for r in range(R)] for s in range(S)])
        self.blocks = blocks if blocks is not None else llama_blocks(model)
        self.layouts = [ShardLayout(b.numel, S, self.shard) for b in self.blocks]
        self.optimizer = self._make_optimizer()
        self.penalty = PseudoGradientPenalty(
            len(self.blocks), cfg.uses_penalty, cfg.penalty.ewma_alpha, cfg.penalty.z_threshold,
            cfg.penalty.warmup_syncs, cfg.penalty.temperature, cfg.penalty.clip)
        self.trigger = TimeTrigger(cfg.sync.t_seconds) if cfg.mode == "aedit" else StepTrigger(cfg.sync.h)
        self.device = next(model.parameters()).device
        self.state_device = torch.device("cpu") if cfg.sync.state_on_cpu else self.device
        self.theta_sync: list[torch.Tensor] = []
        self.momentum: list[torch.Tensor] = []
        self.counters = Counters()
        self.decisions: list[BlockDecision] = []
        self._handles: dict[int, object] = {}
        self._deltas: dict[int, torch.Tensor] = {}   # Δ of each block, computed once per sync
        self._timing = False                          # inside an exposed-sync timed region
        # where the exposed sync time went (seconds, this run): not checkpointed
        self.phases = {"decide": 0.0, "meta": 0.0, "launch": 0.0, "wait": 0.0, "outer": 0.0, "write": 0.0}
        self._rng = random.Random(cfg.run.seed * 1000 + self.rank)
        self._install_grad_hooks()
        self.layerwise = (LayerwiseSync([b.module for b in self.blocks], self, cfg.sync.prefetch)
                          if cfg.uses_layerwise else None)
        self.done = False
        if cfg.sync.warmup_steps == 0 and cfg.mode != "sync":
            self.reset_outer_state()

    # -- setup ---------------------------------------------------------------------------------
    def _member_of(self, groups: list[list[int]], local: bool = False):
        mine = None
        for ranks in groups:
            g = self.comm.subgroup(ranks, network=NetworkModel()) if local else self.comm.subgroup(ranks)
            if self.rank in ranks:
                mine = g
        return mine

    def _make_optimizer(self) -> torch.optim.Optimizer:
        c = self.cfg.inner
        params = list(self.model.parameters())
        if c.optimizer == "sgd":
            return torch.optim.SGD(params, lr=c.lr, momentum=c.momentum, weight_decay=c.weight_decay)
        return torch.optim.AdamW(params, lr=c.lr, betas=(c.beta1, c.beta2), weight_decay=c.weight_decay)

    def _local_shard(self, b: int) -> torch.Tensor:
        """A fresh tensor: this rank's shard of block b's current parameters (flat)."""
        flat, lay = flatten(self.blocks[b].params), self.layouts[b]
        if lay.world == 1 and lay.padded == lay.numel:
            return flat                       # flatten already copied: no second copy
        return lay.take(flat)

    def reset_outer_state(self) -> None:
        """θ_sync ← the current parameters (this rank's shard); outer momentum ← 0."""
        self.theta_sync = [self._local_shard(b).to(self.state_device) for b in range(len(self.blocks))]
        self.momentum = [torch.zeros_like(t) for t in self.theta_sync]

    def extra_state_bytes(self) -> int:
        """Bytes of θ_sync and momentum this rank keeps (2·P/S elements)."""
        return sum(t.numel() * t.element_size() for t in self.theta_sync + self.momentum)

    # -- inner step ----------------------------------------------------------------------------
    @property
    def in_warmup(self) -> bool:
        return self.cfg.mode == "sync" or self.counters.step < self.cfg.sync.warmup_steps

    def _lr_now(self) -> float:
        c = self.cfg.inner
        lr = c.lr * min(1.0, (self.counters.step + 1) / max(1, c.lr_warmup_steps))
        sim = self.cfg.simulate
        if self.replica == sim.spike_replica and sim.spike_start <= self.counters.step < sim.spike_start + sim.spike_steps:
            lr *= sim.spike_lr_mult
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
        self._grad_group = self.comm if self.in_warmup else self.replica_comm
        self._grad_left = [len(b.params) for b in self.blocks]
        self._grad_work = {}
        loss.backward()          # each block's gradient all-reduce starts as soon as it is ready
        self._reduce_grads()
        if self.cfg.inner.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.inner.grad_clip)
        for g in self.optimizer.param_groups:
            g["lr"] = self._lr_now()
        self.optimizer.step()
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
        if self.cfg.mode != "sync" and self.counters.step == self.cfg.sync.warmup_steps:
            self.reset_outer_state()          # local SGD starts from the synchronous warm-up
            self.counters.steps_since_sync = 0
            self.trigger.reset()
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
        proposed = self.trigger.should_sync(c.steps_since_sync)
        if self.cfg.mode != "aedit":
            proposed = proposed or want_stop   # A-EDiT stops on the summed budget, at a sync
        if self.cfg.mode == "aedit" and self.replica_comm is not None:
            # ranks of a replica run in lockstep; agree on the time-based proposal
            flag = torch.tensor([1.0 if proposed else 0.0])
            proposed = float(self.replica_comm.all_reduce(flag, op="sum")) > 0
        if not proposed:
            return False
        with self._exposed():
            return self._exchange_and_decide(want_stop)

    @contextmanager
    def _exposed(self):
        """Time a region of outer-sync work the rank is blocked on (counted once when nested:
        the blocking sync's launch/finish run inside the decision's region)."""
        if self._timing:
            yield
            return
        self._timing = True
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.counters.sync_seconds += time.perf_counter() - t0
            self._timing = False

    def _exchange_and_decide(self, want_stop: bool) -> bool:
        c = self.counters
        S, R = self.cfg.shards, self.cfg.replicas
        t0 = time.perf_counter()
        # Δ of every block, once: its norm goes into the decision, the tensor into launch(b)
        self._deltas = {}
        sq = []
        for b, (blk, lay, ts) in enumerate(zip(self.blocks, self.layouts, self.theta_sync)):
            delta = self._local_shard(b).to(ts.device)
            torch.sub(ts, delta, out=delta)
            self._deltas[b] = delta
            sq.append(delta.square().sum())
        partial = torch.stack(sq).to(torch.float64).tolist()
        meta = torch.tensor([float(c.steps_since_sync), float(c.step), 1.0 if want_stop else 0.0] + partial,
                            dtype=torch.float64)
        t1 = time.perf_counter()
        rows = self.comm.all_gather(meta)
        t2 = time.perf_counter()
        self.phases["meta"] += t2 - t1
        steps = [int(rows[r * S][0]) for r in range(R)]
        total = sum(float(rows[r * S][1]) for r in range(R))
        if self.cfg.mode == "aedit":
            stop = total >= self.cfg.steps * R
        else:
            stop = any(float(rows[r * S][2]) > 0 for r in range(R))
        need = 1 if stop else (self.cfg.sync.min_steps if self.cfg.mode == "aedit" else 1)
        if not accept_sync(steps, need):
            self._deltas = {}
            if stop:                  # nothing ran since the last sync: just stop
                self.done = True
            return False
        self.decisions = []
        for b in range(len(self.blocks)):
            norms = [math.sqrt(sum(float(rows[r * S + s][3 + b]) for s in range(S))) for r in range(R)]
            if self.cfg.mode == "aedit":
                norms = [g / max(n, 1) for g, n in zip(norms, steps)]   # per inner step
                d = self.penalty.decide(b, norms, steps)
            else:
                d = self.penalty.decide(b, norms)
            self.decisions.append(d)
            c.outliers += len(d.outliers)
            c.skipped_blocks += int(d.skip)
        c.syncs += 1
        c.steps_since_sync = 0
        quota = None
        if self.cfg.mode == "aedit" and not stop:
            left, window = int(math.ceil(self.cfg.steps * R - total)), sum(steps)
            if left <= window:
                # the last window: the budget left, split by each replica's speed in the window
                # just ended, as step quotas (so it ends at once with a single final sync)
                quota = split_by_rate(left, steps)[self.replica]
        self.trigger.reset(quota=quota)
        self.phases["decide"] += (t1 - t0) + (time.perf_counter() - t2)
        if self.layerwise is not None and not stop:
            self.layerwise.arm(launch_first=True)
        else:
            for b in range(len(self.blocks)):
                self.launch(b)
            for b in range(len(self.blocks)):
                self.finish(b)
        self.done = stop
        return True

    # -- the per-block sync (called by LayerwiseSync or directly) ---------------------------------
    def launch(self, b: int) -> None:
        """Start block b's weighted all-reduce of pseudo-gradients across replicas."""
        with self._exposed():
            t0 = time.perf_counter()
            d = self.decisions[b]
            delta = self._deltas.pop(b)   # computed for every block at the decision
            if not d.skip:
                delta.mul_(d.weights[self.replica])
                self._handles[b] = self.sync_comm.all_reduce(delta, op="sum", async_op=True)
            self.phases["launch"] += time.perf_counter() - t0

    def finish(self, b: int) -> None:
        """Wait for block b, clip, step the outer optimizer, and write θ_sync into the block."""
        with self._exposed():
            d = self.decisions[b]
            ts = self.theta_sync[b]
            t0 = time.perf_counter()
            if not d.skip:
                dbar = self._handles.pop(b).wait()
                t1 = time.perf_counter()
                self.phases["wait"] += t1 - t0
                if self.cfg.uses_penalty and self.cfg.penalty.clip > 0:
                    sq = dbar.square().sum().reshape(1).to(torch.float64)
                    if self.replica_comm is not None:
                        sq = self.replica_comm.all_reduce(sq, op="sum")
                    coef = clip_coefficient(float(sq.sqrt()), self.cfg.penalty.clip)
                    if coef != 1.0:
                        dbar.mul_(coef)       # dbar is this rank's own buffer
                nesterov_step(ts, self.momentum[b], dbar, self.cfg.outer_lr, self.cfg.outer_momentum,
                              self.cfg.outer.nesterov)
                t0 = time.perf_counter()
                self.phases["outer"] += t0 - t1
            if self.replica_comm is not None:
                full = self.layouts[b].join(self.replica_comm.all_gather(ts))
            else:
                full = ts
            unflatten_into(full.to(self.blocks[b].params[0].device), self.blocks[b].params)
            self.phases["write"] += time.perf_counter() - t0

    def flush(self) -> None:
        """Complete a pending layer-wise sync now (before eval, checkpoint or the end)."""
        if self.layerwise is not None and self.layerwise.active:
            with self._exposed():
                self.layerwise.flush()

    # -- driving -------------------------------------------------------------------------------
    def run_segment(self) -> SegmentReport:
        """Inner steps until the next sync starts (or ``sync.h`` steps of warm-up), or the end."""
        start_step = self.counters.step
        while not self.done:
            self.train_step()
            if self.maybe_sync():
                break
            if self.in_warmup and self.counters.step - start_step >= self.cfg.sync.h:
                break
        return self.report()

    def report(self) -> SegmentReport:
        c = self.counters
        return SegmentReport(
            rank=self.rank, replica=self.replica, step=c.step, syncs=c.syncs, tokens=c.tokens,
            loss=c.losses[-1] if c.losses else float("nan"), outliers=c.outliers,
            skipped_blocks=c.skipped_blocks, sync_seconds=c.sync_seconds, dp_seconds=c.dp_seconds,
            compute_seconds=c.compute_seconds, done=self.done,
            extra_state_bytes=self.extra_state_bytes(), wall=time.time(), phases=dict(self.phases))

    @torch.no_grad()
    def evaluate(self, batches: list[torch.Tensor]) -> float:
        """Mean loss on ``batches`` with the current (synced) parameters."""
        self.flush()
        was = self.model.training
        self.model.eval()
        losses = [float(self.loss_fn(self.model, b)) for b in batches]
        self.model.train(was)
        return sum(losses) / max(1, len(losses))

    # -- checkpoints ---------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything needed to resume this rank (call after :meth:`flush`)."""
        self.flush()
        c = self.counters
        return {"model": {k: v.clone() for k, v in self.model.state_dict().items()},
                "optimizer": self.optimizer.state_dict(),
                "theta_sync": [t.clone() for t in self.theta_sync],
                "momentum": [t.clone() for t in self.momentum],
                "penalty": self.penalty.state_dict(),
                "counters": {k: getattr(c, k) for k in c.__dataclass_fields__ if k not in ("losses", "times")},
                "data": self.batches.state_dict(), "done": self.done}

    def load_state_dict(self, state: dict) -> None:
        """Restore from :meth:`state_dict` (of this rank, or of a peer with the same shard)."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.theta_sync = [t.to(self.state_device) for t in state["theta_sync"]]
        self.momentum = [t.to(self.state_device) for t in state["momentum"]]
        self.penalty.load_state_dict(state["penalty"])
        for k, v in state["counters"].items():
            setattr(self.counters, k, v)
        if state.get("data") is not None:
            self.batches.load_state_dict(state["data"])
        self.done = state["done"] and self.counters.step >= self.cfg.steps   # a larger budget resumes
        if self.layerwise is not None:
            self.layerwise.active = False
        self.trigger.reset()
