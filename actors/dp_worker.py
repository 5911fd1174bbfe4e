"""A plain synchronous data-parallel LM worker: gradients all-reduced every step.

The smallest end-to-end use of the foundation (cluster, comm, models, data, metrics); the
`raystack demo` runs it until every part joins the main workflow.
"""
from __future__ import annotations

import time

import ray
import torch

from actors.collective import CommMember
from raystack import metrics
from raystack.data import BatchStream
from raystack.models import build_model, lm_loss


@ray.remote(num_cpus=1)
class DataParallelLMWorker(CommMember):
    def __init__(self, model: str, tokens_ref, batch_size: int, seq_len: int, lr: float, seed: int = 0):
        torch.set_num_threads(1)
        self.model = build_model(model, seed=seed)  # same seed on every rank: same start
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr)
        self.tokens = tokens_ref
        self.batch_size, self.seq_len, self.seed = batch_size, seq_len, seed
        self.stream = None
        self.tokens_total = metrics.counter("dp_tokens_total", "tokens trained by data-parallel workers", ("rank",))

    def train(self, steps: int) -> dict:
        """Run `steps` synchronous steps; returns losses and timings of this rank."""
        if self.stream is None:
            self.stream = BatchStream(self.tokens, self.batch_size, self.seq_len, seed=self.seed,
                                      rank=self.comm.rank, world_size=self.comm.world_size)
        losses, t0 = [], time.perf_counter()
        params = [p for p in self.model.parameters() if p.requires_grad]
        for _ in range(steps):
            loss = lm_loss(self.model, self.stream.next_batch())
            self.opt.zero_grad(set_to_none=False)
            loss.backward()
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            self.comm.all_reduce(flat, op="avg")
            offset = 0
            for p in params:
                p.grad.copy_(flat[offset:offset + p.numel()].view_as(p))
                offset += p.numel()
            self.opt.step()
            losses.append(loss.item())
            self.tokens_total.inc(self.batch_size * self.seq_len, tags={"rank": str(self.comm.rank)})
        return {"losses": losses, "seconds": time.perf_counter() - t0,
                "tokens": steps * self.batch_size * self.seq_len, "comm": self.comm.total_stats()}

    def evaluate(self, val_tokens, batches: int = 4) -> float:
        stream = BatchStream(val_tokens, self.batch_size, self.seq_len, seed=1234)
        with torch.no_grad():
            return sum(lm_loss(self.model, stream.next_batch()).item() for _ in range(batches)) / batches
