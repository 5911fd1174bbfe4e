"""The actors of the EDiT speed benchmark (benchmarks/edit.py): an EDiT worker that also runs
the DDP baseline and reports per-step traces, and one replica of torchft's (Streaming) DiLoCo.
Every arm's collectives go through the same simulated link (raystack.comm's NetworkModel)."""
from __future__ import annotations

import dataclasses
import math
import random
import statistics
import threading
import time

import torch

from _torchft_common import llama_fragments, torchft_manager, torchft_train  # noqa: F401 - edit_quality imports them here
from raystack.actors.edit import EDiTWorker
from raystack.comm import NetworkModel, SimulatedLink, ring_bytes
from raystack.config import load_config
from raystack.edit.config import EDiTConfig
from raystack.edit.inner import inner_optimizer


def _comm_hook(comm, bucket):
    """DDP comm hook: all-reduce (average) the bucket through raystack.comm, asynchronously."""
    fut = torch.futures.Future()
    handle = comm.all_reduce(bucket.buffer(), op="avg", async_op=True)

    def waiter():
        try:
            fut.set_result(handle.wait())
        except Exception as exc:  # noqa: BLE001 - handed to DDP
            fut.set_exception(exc)
    threading.Thread(target=waiter, daemon=True).start()
    return fut


class RowSlice:
    """Rows [start, stop) of every batch of a stream: the S ranks of a replica split the
    replica's batch, so a replica sees the same data whatever S is."""

    def __init__(self, stream, start: int, stop: int) -> None:
        self.stream, self.start, self.stop = stream, start, stop

    def next_batch(self) -> torch.Tensor:
        return self.stream.next_batch()[self.start:self.stop]

    def state_dict(self) -> dict:
        return self.stream.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.stream.load_state_dict(state)


class BenchWorker(EDiTWorker):
    """An EDiT worker that can also measure compute alone, run the DDP baseline, split a
    replica's batch over its shard ranks, and report its per-step trace."""

    split_rows = False

    def set_split_rows(self, on: bool) -> None:
        """Each rank takes its 1/S of the replica's batch (instead of its own batch)."""
        self.split_rows = on

    def _stream(self):
        if not self.split_rows:
            return super()._stream()
        from raystack.data import BatchStream
        cfg, d = self.cfg, self.cfg.data
        replica, shard = divmod(self.rank, cfg.shards)
        whole = BatchStream(self.corpus.train, d.batch_size * cfg.shards, d.seq_len, seed=cfg.run.seed,
                            rank=replica, world_size=cfg.replicas)
        return RowSlice(whole, shard * d.batch_size, (shard + 1) * d.batch_size)

    def trace(self) -> dict:
        """Per step: loss, wall time at its end, exposed sync so far; and the rank's report."""
        c = self.trainer.counters
        return {"losses": list(c.losses), "times": list(c.times), "exposed": list(c.exposed),
                "report": dataclasses.asdict(self.trainer.report())}

    def compute_alone(self, steps: int) -> float:
        """Median seconds of one inner step (forward, backward, AdamW) with no communication."""
        from raystack.models import build_model, lm_loss
        model = build_model(self.cfg.model, seed=self.cfg.run.seed)
        opt = inner_optimizer(self.cfg.inner, model.parameters())
        stream = self._stream()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            lm_loss(model, stream.next_batch()).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - t0)
        return statistics.median(times[1:])

    def set_step_seconds(self, s: float) -> None:
        self._step_s = s

    def run_ddp(self, bucket_mb: float) -> dict:
        """The synchronous baseline: torch DDP with the raystack comm hook, same budget."""
        from torch.nn.parallel import DistributedDataParallel as DDP

        from raystack.models import build_model, lm_loss
        cfg, c = self.cfg, self.cfg.inner
        model = build_model(cfg.model, seed=cfg.run.seed)
        ddp = DDP(model, bucket_cap_mb=bucket_mb)
        ddp.register_comm_hook(self.comm, _comm_hook)
        opt = inner_optimizer(c, model.parameters())
        stream = self._stream()
        rng = random.Random(cfg.run.seed * 1000 + self.rank)
        sim = cfg.simulate
        losses, times = [], []
        self.comm.reset_stats()
        for step in range(cfg.steps):
            for g in opt.param_groups:
                g["lr"] = c.lr_at(step, cfg.steps)
            loss = lm_loss(ddp, stream.next_batch())
            factor = sim.slowdown[self.rank] if sim.slowdown else 1.0
            if self.rank == sim.random_slow_replica and rng.random() < sim.random_slow_prob:
                factor *= sim.random_slow_factor
            if factor > 1:        # simulated straggler: extra compute time before the gradients
                time.sleep(self._step_s * (factor - 1))
            loss.backward()
            if c.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), c.grad_clip)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
            times.append(time.time())
        with torch.no_grad():
            model.eval()
            val = sum(float(lm_loss(model, b)) for b in self.val_batches) / len(self.val_batches)
            model.train()
        stats = self.comm.stats()
        return {"losses": losses, "times": times, "val_loss": val,
                "wait_seconds": sum(s["wait_seconds"] for s in stats.values()),
                "wire_bytes": int(sum(s["bytes"] for s in stats.values()))}


class _DelayedWork:
    """A torchft Work whose wait() also waits out the simulated link (raystack's NetworkModel)."""

    def __init__(self, work, done_at: float) -> None:
        self._work, self._done_at = work, done_at

    def wait(self, timeout=None):
        out = self._work.wait()
        left = self._done_at - time.monotonic()
        if left > 0:
            time.sleep(left)
        return out

    def get_future(self):
        return self._work.get_future()


class TorchFTWorker:
    """One replica of torchft 0.2.0's DiLoCo or Streaming DiLoCo (the peers a user would pick
    today), on the driver's lighthouse; its Manager.allreduce delayed by the simulated link."""

    def __init__(self, cfg: dict, replica: int, lighthouse: str) -> None:
        torch.set_num_threads(1)
        self.cfg = load_config(EDiTConfig, cfg)
        self.replica, self.lighthouse = replica, lighthouse
        from raystack.actors.edit import load_corpus
        self.corpus = load_corpus(self.cfg)

    def ready(self) -> bool:
        return True

    def run(self, step_s: float, fragments: int = 1, delay: int = 0) -> dict:
        """Train the budget; ``fragments`` > 1 is Streaming DiLoCo with ``delay`` as its
        fragment_sync_delay. Returns per-step losses, times and the blocking sync time."""
        from raystack.data import BatchStream
        from raystack.models import build_model, lm_loss
        cfg, sim = self.cfg, self.cfg.simulate
        model = build_model(cfg.model, seed=cfg.run.seed)
        manager, _store = torchft_manager(f"edit_bench_{self.replica}", self.lighthouse, model)
        link = SimulatedLink(NetworkModel(sim.latency_s, sim.bandwidth_bytes_per_s if sim.bandwidth_bytes_per_s > 0
                                          else math.inf))
        plain = manager.allreduce
        sent = [0]

        def delayed(tensor, *a, **k):        # the same simulated network as every other arm
            work = plain(tensor, *a, **k)
            nbytes = ring_bytes("all_reduce", tensor.numel() * tensor.element_size(), 2)
            sent[0] += nbytes
            return _DelayedWork(work, link.reserve(nbytes, time.monotonic()))
        manager.allreduce = delayed
        stream = BatchStream(self.corpus.train, cfg.data.batch_size, cfg.data.seq_len, seed=cfg.run.seed,
                             rank=self.replica, world_size=cfg.ranks)
        factor = sim.slowdown[self.replica] if sim.slowdown else 1.0
        out = torchft_train(cfg, model, [model] if fragments == 1 else llama_fragments(model, fragments), manager,
                            stream, delay, slow_s=step_s * (factor - 1))
        with torch.no_grad():
            val = BatchStream(self.corpus.val, cfg.data.batch_size, cfg.data.seq_len, seed=12345)
            vl = [float(lm_loss(model, val.next_batch())) for _ in range(cfg.data.eval_batches)]
        manager.shutdown()
        return {**out, "val_loss": sum(vl) / len(vl), "wire_bytes": sent[0]}
