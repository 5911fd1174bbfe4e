"""The outer sync of one rank: its shard of θ_sync and of the outer momentum for every block,
and the per-block pipeline that turns the replicas' pseudo-gradients into an outer step.

One sync (a :class:`SyncRound`) takes every block b through four stages:

1. prepare, at the sync point: Δ_b = θ_sync_b − θ_b and its squared norm; the norms of every
   block go to the other replicas in one small asynchronous all-gather (the decision's meta);
2. decide, once that all-gather is in: the penalty's weights for b (:meth:`OuterSync.progress`
   checks without blocking, from every block's pre-hook and after every step);
3. launch: the weighted Δ_b, optionally compressed, in an asynchronous all-reduce across the
   replicas (every block at once as soon as the decision is in; with ``sync.prefetch`` off, each
   block in its own pre-hook);
4. apply, in block b's forward pre-hook: wait, clip, outer Nesterov step on θ_sync_b, write.

With τ = ``sync.overlap_steps`` > 0 the apply stage runs in the forward τ + 1 steps after the sync
point, so the all-reduce hides behind τ whole steps; the replica then keeps the progress it made
in those τ steps: θ_b ← θ_sync_b + (θ_b − θ_b at the sync point). With τ = 0 it is EDiT's
layer-wise sync: θ_b ← θ_sync_b in the next forward.

With ``sync.overlap_eager`` the τ steps start from a better point ("eager" updates): at the sync
point each replica steps block b to its own estimate of the outer update, the same clipped outer
Nesterov step with its own Δ_b in place of the replicas' average (θ_sync and the momentum are
not touched), and trains from there; when the average lands, the real step replaces the
estimate and the τ steps are kept: θ_b ← θ_sync_b + (θ_b − the estimate). When every replica's
Δ_b is the same, the estimate is the update and the τ steps are exactly EDiT's.

A round covers every block, or with ``sync.fragments`` > 1 one fragment's blocks (the other
blocks keep training locally; each fragment has its own sync point in the window).
"""
from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from raystack.comm.compress import ErrorFeedback, compressed_all_reduce, make_codec
from raystack.edit.config import EDiTConfig
from raystack.edit.outer import nesterov_step
from raystack.edit.penalty import BlockDecision, PseudoGradientPenalty, clip_coefficient
from raystack.edit.shard import BlockShards

PHASES = ("decide", "meta", "launch", "wait", "outer", "write")
META_STEPS, META_DONE, META_STOP, META_NORMS = 0, 1, 2, 3   # fields of a rank's meta row


class ExposedTimer:
    """Wall time a rank is blocked on outer-sync work: the total goes into ``counters.sync_seconds``
    (nested regions count once), and each :meth:`phase` into ``phases``."""

    def __init__(self, counters) -> None:
        self.counters = counters
        self.phases = {p: 0.0 for p in PHASES}
        self._depth = 0

    @contextmanager
    def exposed(self):
        """A region of outer-sync work the rank waits for."""
        self._depth += 1
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.counters.sync_seconds += time.perf_counter() - t0

    @contextmanager
    def phase(self, name: str):
        """An exposed region attributed to ``name`` (one of PHASES)."""
        with self.exposed():
            t0 = time.perf_counter()
            try:
                yield
            finally:
                self.phases[name] += time.perf_counter() - t0


@dataclass
class SyncRound:
    """One sync in flight on this rank."""

    meta: object                                   # handle of the decision's all-gather
    blocks: list[int]                              # the blocks this round syncs, in forward order
    deltas: dict[int, torch.Tensor]                # Δ_b, until launched (then the all-reduce buffer)
    anchors: dict[int, torch.Tensor]               # θ_b at the sync point (overlapped update only)
    decisions: dict[int, BlockDecision] | None = None
    handles: dict[int, object] = field(default_factory=dict)
    launched: set[int] = field(default_factory=set)
    applied: set[int] = field(default_factory=set)


class OuterSync:
    """θ_sync and momentum of this rank's shard of every block, and the sync rounds."""

    def __init__(self, cfg: EDiTConfig, shards: BlockShards, num_blocks: int, replica: int,
                 sync_comm, meta_comm, replica_comm, penalty: PseudoGradientPenalty,
                 counters, timer: ExposedTimer, state_device: torch.device) -> None:
        self.cfg = cfg
        self.shards = shards
        self.num_blocks = num_blocks
        self.replica = replica
        self.sync_comm, self.meta_comm, self.replica_comm = sync_comm, meta_comm, replica_comm
        self.penalty = penalty
        self.counters = counters
        self.timer = timer
        self.state_device = state_device
        self.overlap = cfg.overlap_steps
        self.eager = bool(self.overlap) and cfg.sync.overlap_eager
        self.prefetch = cfg.sync.prefetch
        self.codec = make_codec(cfg.sync.compression)
        self.feedback = ErrorFeedback() if self.codec is not None and cfg.sync.error_feedback else None
        self.theta_sync: list[torch.Tensor] = []
        self.momentum: list[torch.Tensor] = []
        self.round: SyncRound | None = None
        self.last_decisions: list[BlockDecision] = []   # the penalty's verdict at the latest sync
        self.peak_round_bytes = 0                  # most bytes a round held (Δ buffers, anchors)

    # -- state ---------------------------------------------------------------------------------
    def reset(self) -> None:
        """θ_sync ← the current parameters (this rank's shard); outer momentum ← 0."""
        self.round = None
        self.theta_sync = [self.shards.read(b).to(self.state_device) for b in range(self.num_blocks)]
        self.momentum = [torch.zeros_like(t) for t in self.theta_sync]

    def extra_state_bytes(self) -> int:
        """Bytes kept between syncs: θ_sync and momentum (2·P/S), plus error-feedback residuals."""
        kept = sum(t.numel() * t.element_size() for t in self.theta_sync + self.momentum)
        return kept + (self.feedback.nbytes() if self.feedback is not None else 0)

    @property
    def pending(self) -> bool:
        """A sync was started and some block is not applied yet."""
        return self.round is not None

    def state_dict(self) -> dict:
        return {"theta_sync": [t.clone() for t in self.theta_sync],
                "momentum": [t.clone() for t in self.momentum],
                "feedback": self.feedback.state_dict() if self.feedback is not None else None}

    def load_state_dict(self, state: dict) -> None:
        self.round = None
        self.theta_sync = [t.to(self.state_device) for t in state["theta_sync"]]
        self.momentum = [t.to(self.state_device) for t in state["momentum"]]
        if self.feedback is not None and state.get("feedback") is not None:
            self.feedback.load_state_dict(state["feedback"])

    # -- stage 1: prepare ------------------------------------------------------------------------
    def begin(self, meta_prefix: list[float], blocks: list[int] | None = None) -> None:
        """At a sync point: Δ and its squared norm for every block of the round (``blocks``:
        one fragment's; default all), and the start of the decision's all-gather
        (``meta_prefix`` + the norms, one row per rank)."""
        blocks = list(range(self.num_blocks)) if blocks is None else list(blocks)
        with self.timer.phase("decide"):
            deltas, anchors, sq = {}, {}, []
            for b in blocks:
                ts = self.theta_sync[b]
                current = self.shards.read(b).to(ts.device)
                if self.overlap:
                    anchors[b] = current
                    delta = torch.sub(ts, current)
                else:
                    delta = current
                    torch.sub(ts, delta, out=delta)
                deltas[b] = delta
                sq.append(torch.dot(delta, delta))     # one pass, no temporary
            partial = torch.stack(sq).to(torch.float64).tolist() if sq else []
            meta = torch.tensor(list(meta_prefix) + partial, dtype=torch.float64)
        with self.timer.phase("meta"):
            handle = self.meta_comm.all_gather(meta, async_op=True)
        if self.eager:
            self._step_to_estimate(deltas, anchors, partial)
        self.round = SyncRound(handle, blocks, deltas, anchors)
        held = sum(t.numel() * t.element_size() for t in list(deltas.values()) + list(anchors.values()))
        self.peak_round_bytes = max(self.peak_round_bytes, held)

    def _step_to_estimate(self, deltas: dict, anchors: dict, sq: list[float]) -> None:
        """Eager updates: every block to this replica's own estimate of its outer update, which
        becomes the block's anchor (what the real update replaces)."""
        with self.timer.phase("outer"):
            if self.replica_comm is not None:         # Δ_b's norm over the replica's shards
                sq = self.replica_comm.all_reduce(torch.tensor(sq, dtype=torch.float64), op="sum").tolist()
            clip = self.cfg.penalty.clip if self.cfg.uses_penalty else 0.0
            for i, (b, delta) in enumerate(deltas.items()):    # in the round's block order
                coef = clip_coefficient(math.sqrt(sq[i]), clip)
                estimate = self.theta_sync[b].clone()
                nesterov_step(estimate, self.momentum[b].clone(), delta * coef if coef != 1.0 else delta,
                              self.cfg.outer_lr, self.cfg.outer_momentum, self.cfg.outer.nesterov)
                estimate = estimate.to(anchors[b].device)
                self.shards.add(b, torch.sub(estimate, anchors[b]))
                anchors[b] = estimate

    def wait_meta(self) -> list[torch.Tensor]:
        """Every rank's meta row (blocks until the slowest replica reached the sync)."""
        with self.timer.phase("meta"):
            return self.round.meta.wait()

    def cancel(self) -> None:
        """Drop the round (a sync the replicas did not agree on)."""
        self.round = None

    # -- stage 2: decide -------------------------------------------------------------------------
    def decide(self, rows: list[torch.Tensor], steps: list[int] | None = None) -> None:
        """The penalty's weights for every block of the round from every rank's meta row.
        ``steps`` (A-EDiT): each replica's steps since the last sync; norms are taken per step
        and the weights scaled by the steps."""
        with self.timer.phase("decide"):
            S, R = self.cfg.shards, self.cfg.replicas
            decisions = {}
            for i, b in enumerate(self.round.blocks):
                norms = [math.sqrt(sum(float(rows[r * S + s][META_NORMS + i]) for s in range(S)))
                         for r in range(R)]
                if steps is not None:
                    norms = [g / max(n, 1) for g, n in zip(norms, steps)]
                d = self.penalty.decide(b, norms, steps)
                decisions[b] = d
                self.counters.outliers += len(d.outliers)
                self.counters.skipped_blocks += int(d.skip)
            self.round.decisions = decisions
            self.last_decisions = list(decisions.values())

    def _ensure_decided(self) -> None:
        if self.round.decisions is None:
            self.decide(self.wait_meta())

    def progress(self) -> None:
        """Advance the round as far as it goes without blocking: decide once the meta is in,
        then (with prefetch) launch every block's all-reduce."""
        r = self.round
        if r is None:
            return
        if r.decisions is None:
            if not r.meta.is_completed():
                return
            self._ensure_decided()
        if self.prefetch:
            for b in r.blocks:
                if b not in r.launched:
                    self._launch_one(b)

    # -- stage 3: launch -------------------------------------------------------------------------
    def launch(self, b: int) -> None:
        """Start block b's all-reduce (with prefetch, every block not started yet)."""
        self._ensure_decided()
        if self.prefetch:
            self.progress()
        elif b not in self.round.launched:
            self._launch_one(b)

    def _launch_one(self, b: int) -> None:
        r = self.round
        with self.timer.phase("launch"):
            r.launched.add(b)
            d = r.decisions[b]
            delta = r.deltas.pop(b)
            if d.skip:
                return
            delta.mul_(d.weights[self.replica])
            if self.codec is None:
                r.handles[b] = self.sync_comm.all_reduce(delta, op="sum", async_op=True)
                return
            payload = (self.feedback.encode(b, delta, self.codec) if self.feedback is not None
                       else self.codec.encode(delta))
            r.handles[b] = compressed_all_reduce(self.sync_comm, payload, self.codec, delta.numel(), out=delta)

    # -- stage 4: apply --------------------------------------------------------------------------
    def finish(self, b: int) -> None:
        """Wait for block b, clip, step the outer optimizer, and write the block."""
        r = self.round
        if b not in r.launched:
            self.launch(b)
        with self.timer.exposed():
            d = r.decisions[b]
            ts = self.theta_sync[b]
            t0 = time.perf_counter()
            if not d.skip:
                dbar = r.handles.pop(b).wait()
                t1 = time.perf_counter()
                self.timer.phases["wait"] += t1 - t0
                if self.cfg.uses_penalty and self.cfg.penalty.clip > 0:
                    sq = torch.dot(dbar, dbar).reshape(1).to(torch.float64)
                    if self.replica_comm is not None:
                        sq = self.replica_comm.all_reduce(sq, op="sum")
                    coef = clip_coefficient(float(sq.sqrt()), self.cfg.penalty.clip)
                    if coef != 1.0:
                        dbar.mul_(coef)       # dbar is this rank's own buffer
                nesterov_step(ts, self.momentum[b], dbar, self.cfg.outer_lr, self.cfg.outer_momentum,
                              self.cfg.outer.nesterov)
                t0 = time.perf_counter()
                self.timer.phases["outer"] += t0 - t1
            anchor = r.anchors.pop(b, None)
            if anchor is None:
                self.shards.write(b, ts)
            else:                             # keep the steps run since the sync point
                self.shards.add(b, torch.sub(ts.to(anchor.device), anchor, out=anchor))
            self.timer.phases["write"] += time.perf_counter() - t0
            r.applied.add(b)
            if len(r.applied) == len(r.blocks):
                self.round = None

    def complete(self) -> None:
        """Run every stage left for every block now (a blocking sync, or a flush)."""
        r = self.round
        if r is None:
            return
        with self.timer.exposed():
            for b in r.blocks:
                if b not in r.launched:
                    self._ensure_decided()
                    self._launch_one(b)
            for b in r.blocks:
                if b not in r.applied:
                    self.finish(b)
