"""Benchmark of EDiT / A-EDiT against synchronous DDP, Post Local SGD and DiLoCo.

One run, the same model (tiny-1m), data (standard-library bytes), token budget and cores
(2 Ray actors, 1 CPU and 1 thread each) for every arm:
- ddp: torch DistributedDataParallel (bucketed gradient all-reduce overlapped with backward),
  its buckets routed through raystack.comm by a DDP communication hook, so the same
  simulated network applies to it;
- post_local_sgd, diloco, edit, aedit: raystack's EDiT code in each mode (H = 16).
The simulated network is set so one full-model all-reduce costs r x one step's compute
(r = 0.25, 1, 4). Scenarios: no straggler; one replica 1.5x slower (simulated by sleeping);
one replica with random 3x slow steps; a loss spike (one replica gets shuffled tokens and a
10x learning rate for a burst of steps), with the penalty on and off.
"""
from __future__ import annotations

import math
import statistics
import threading
import time

from common import Report, parse_args

import ray
import torch

from raystack.actors.edit import EDiTGroup, EDiTWorker
from raystack.cluster import connect
from raystack.comm import NetworkModel, ring_bytes
from raystack.config import config_to_dict, load_config
from raystack.edit.config import EDiTConfig


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


class BenchWorker(EDiTWorker):
    """An EDiT worker that can also measure compute alone and run the DDP baseline."""

    def compute_alone(self, steps: int) -> float:
        """Median seconds of one inner step (forward, backward, AdamW) with no communication."""
        from raystack.models import build_model, lm_loss
        model = build_model(self.cfg.model, seed=self.cfg.run.seed)
        opt = torch.optim.AdamW(model.parameters(), lr=self.cfg.inner.lr)
        stream = self._stream()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            lm_loss(model, stream.next_batch()).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - t0)
        return statistics.median(times[1:])

    def run_ddp(self, bucket_mb: float) -> dict:
        """The synchronous baseline: torch DDP with the raystack comm hook, same budget."""
        import random

        from torch.nn.parallel import DistributedDataParallel as DDP

        from raystack.models import build_model, lm_loss
        cfg, c = self.cfg, self.cfg.inner
        model = build_model(cfg.model, seed=cfg.run.seed)
        ddp = DDP(model, bucket_cap_mb=bucket_mb)
        ddp.register_comm_hook(self.comm, _comm_hook)
        opt = torch.optim.AdamW(model.parameters(), lr=c.lr, betas=(c.beta1, c.beta2), weight_decay=c.weight_decay)
        stream = self._stream()
        rng = random.Random(cfg.run.seed * 1000 + self.rank)
        sim = cfg.simulate
        losses, times = [], []
        self.comm.reset_stats()
        for step in range(cfg.steps):
            t0 = time.perf_counter()
            for g in opt.param_groups:
                g["lr"] = c.lr * min(1.0, (step + 1) / max(1, c.lr_warmup_steps))
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
                "wait_seconds": sum(s["wait_seconds"] for s in stats.values())}

    def set_step_seconds(self, s: float) -> None:
        self._step_s = s


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
    """One replica of torchft 0.2.0's DiLoCo (the peer a user would pick today): its own
    TCPStore, a gloo ProcessGroup, a Manager joined to the driver's lighthouse."""

    def __init__(self, cfg: dict, replica: int, lighthouse: str) -> None:
        torch.set_num_threads(1)
        self.cfg = load_config(EDiTConfig, cfg)
        self.replica, self.lighthouse = replica, lighthouse
        from raystack.actors.edit import load_corpus
        self.corpus = load_corpus(self.cfg)

    def ready(self) -> bool:
        return True

    def run(self, step_s: float) -> dict:
        import random
        from datetime import timedelta

        import torch.distributed as dist
        from torchft import Manager, ProcessGroupGloo
        from torchft.local_sgd import DiLoCo

        from raystack.comm import SimulatedLink
        from raystack.data import BatchStream
        from raystack.models import build_model, lm_loss
        cfg, c, sim = self.cfg, self.cfg.inner, self.cfg.simulate
        model = build_model(cfg.model, seed=cfg.run.seed)
        inner = torch.optim.AdamW(model.parameters(), lr=c.lr, betas=(c.beta1, c.beta2), weight_decay=c.weight_decay)
        outer = torch.optim.SGD(model.parameters(), lr=cfg.outer.lr, momentum=cfg.outer.momentum, nesterov=True)
        store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
        manager = Manager(pg=ProcessGroupGloo(timeout=timedelta(seconds=60)), min_replica_size=2,
                          use_async_quorum=False, load_state_dict=lambda sd: model.load_state_dict(sd["model"]),
                          state_dict=lambda: {"model": model.state_dict()}, replica_id=f"edit_bench_{self.replica}",
                          store_addr="127.0.0.1", store_port=store.port, rank=0, world_size=1,
                          lighthouse_addr=self.lighthouse, timeout=timedelta(seconds=60),
                          quorum_timeout=timedelta(seconds=60), connect_timeout=timedelta(seconds=60))
        net = NetworkModel(sim.latency_s, sim.bandwidth_bytes_per_s if sim.bandwidth_bytes_per_s > 0 else math.inf)
        link = SimulatedLink(net)
        plain = manager.allreduce

        def delayed(tensor, *a, **k):        # the same simulated network as every other arm
            work = plain(tensor, *a, **k)
            nbytes = ring_bytes("all_reduce", tensor.numel() * tensor.element_size(), 2)
            return _DelayedWork(work, link.reserve(nbytes, time.monotonic()))
        manager.allreduce = delayed
        stream = BatchStream(self.corpus.train, cfg.data.batch_size, cfg.data.seq_len, seed=cfg.run.seed,
                             rank=self.replica, world_size=cfg.ranks)
        rng = random.Random(cfg.run.seed * 1000 + self.replica)
        losses, times, sync_s = [], [], 0.0
        with DiLoCo(manager, [model], inner, outer, sync_every=cfg.sync.h,
                    backup_device=torch.device("cpu"), pin_memory=False):
            for step in range(cfg.steps):
                for g in inner.param_groups:
                    g["lr"] = c.lr * min(1.0, (step + 1) / max(1, c.lr_warmup_steps))
                t0 = time.perf_counter()
                loss = lm_loss(model, stream.next_batch())
                inner.zero_grad()
                loss.backward()
                if c.grad_clip > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), c.grad_clip)
                factor = sim.slowdown[self.replica] if sim.slowdown else 1.0
                if factor > 1:
                    time.sleep(step_s * (factor - 1))
                t1 = time.perf_counter()
                inner.step()                 # DiLoCo's hook syncs (blocking) every sync_every steps
                sync_s += time.perf_counter() - t1 if (step + 1) % cfg.sync.h == 0 else 0.0
                losses.append(float(loss.detach()))
                times.append(time.time())
        with torch.no_grad():
            val = BatchStream(self.corpus.val, cfg.data.batch_size, cfg.data.seq_len, seed=12345)
            vl = [float(lm_loss(model, val.next_batch())) for _ in range(cfg.data.eval_batches)]
        manager.shutdown()
        return {"losses": losses, "times": times, "val_loss": sum(vl) / len(vl), "sync_s": sync_s}


def smoothed(times: list[float], losses: list[float], window: int) -> list[tuple[float, float]]:
    """(time, running mean of the last `window` losses) over all ranks' steps, in time order."""
    pts = sorted(zip(times, losses))
    out, acc = [], []
    for t, loss in pts:
        acc.append(loss)
        acc = acc[-window:]
        out.append((t, sum(acc) / len(acc)))
    return out


def run_torchft(cfg: EDiTConfig, t_c: float, tokens: int) -> dict:
    """torchft's DiLoCo on the same model, data, budget, cores and simulated network."""
    from torchft.coordination import LighthouseServer
    lighthouse = LighthouseServer(bind="[::]:0", min_replicas=2)
    try:
        remote = ray.remote(num_cpus=cfg.run.cpus_per_rank)(TorchFTWorker)
        workers = [remote.remote(config_to_dict(cfg), i, lighthouse.address()) for i in range(2)]
        ray.get([w.ready.remote() for w in workers])
        start = time.time()
        out = ray.get([w.run.remote(t_c) for w in workers])
        for w in workers:
            ray.kill(w)
    finally:
        lighthouse.shutdown()
    seconds = max(o["times"][-1] for o in out) - start
    return {"tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds, "val_loss": out[0]["val_loss"],
            "exposed_sync_s": sum(o["sync_s"] for o in out) / 2, "outliers": 0,
            "extra_state_bytes": None, "losses": [o["losses"] for o in out], "times": [o["times"] for o in out],
            "start": start}


def main() -> None:
    args = parse_args("EDiT / A-EDiT vs DDP, Post Local SGD, DiLoCo",
                      lambda p: p.add_argument("--no-torchft", action="store_true", help="skip the torchft arm"))
    quick = args.quick
    steps = 16 if quick else 64
    H = 4 if quick else 16
    rs = [1.0] if quick else [0.25, 1.0, 4.0]
    repeats = 1 if quick else 3
    base = {"model": "tiny-1m", "ranks": 2, "shards": 1, "steps": steps,
            "inner": {"lr": 3e-3, "lr_warmup_steps": 10},
            "sync": {"h": H, "warmup_steps": 4 if quick else 8, "min_steps": 2},
            "penalty": {"warmup_syncs": 1},
            "data": {"max_bytes": 300_000 if quick else 1_000_000, "batch_size": 4,
                     "seq_len": 32 if quick else 64, "eval_batches": 2 if quick else 4},
            "run": {"out_dir": "/tmp/raystack_bench_edit", "checkpoint_every": 0, "eval_every": 0}}
    cfg0 = load_config(EDiTConfig, base)
    connect(num_cpus=4, dashboard=False, log_to_driver=False)
    report = Report("edit", quick, {"steps_per_replica": steps, "H": H, "r": rs, "repeats": repeats, **base})

    group = EDiTGroup(cfg0, worker_cls=BenchWorker)
    group.start()
    t_c = statistics.mean(ray.get([w.compute_alone.remote(6 if quick else 20) for w in group.workers]))
    ray.get([w.set_step_seconds.remote(t_c) for w in group.workers])
    from raystack.models import build_model
    P = sum(p.numel() for p in build_model("tiny-1m").parameters())
    tokens_per_step = cfg0.data.batch_size * cfg0.data.seq_len

    calib: dict[str, float] = {}

    def cfg_for(mode: str, r: float, penalty: bool, sim: dict, seed: int = 0) -> EDiTConfig:
        d = config_to_dict(cfg0)
        d["mode"] = "sync" if mode == "ddp" else mode
        d["run"]["seed"] = seed   # model init, data order, simulated slow steps
        d["simulate"].update({"latency_s": 0.0005,
                              "bandwidth_bytes_per_s": ring_bytes("all_reduce", 4 * P, 2) / (r * t_c)})
        d["simulate"].update(sim)
        # A-EDiT's window: H steps of an unslowed replica, as measured in the EDiT arm just run
        d["sync"]["t_seconds"] = H * calib.get("step_s", t_c)
        d["penalty"]["enabled"] = penalty
        return load_config(EDiTConfig, d)

    def ideal_seconds(tokens: int, sim: dict) -> float:
        f = list(sim.get("slowdown") or [1.0, 1.0])
        if sim.get("random_slow_prob"):
            i = sim["random_slow_replica"]
            f[i] *= 1 + sim["random_slow_prob"] * (sim.get("random_slow_factor", 3.0) - 1)
        return tokens / sum(tokens_per_step / (t_c * x) for x in f)

    def run_arm(mode: str, r: float, penalty: bool = True, seed: int = 0, **sim) -> dict:
        group.reconfigure(cfg_for(mode, r, penalty, sim, seed))
        start = time.time()
        if mode == "ddp":
            out = ray.get([w.run_ddp.remote(0.25) for w in group.workers])
            seconds = max(o["times"][-1] for o in out) - start
            tokens = 2 * steps * tokens_per_step
            res = {"tokens": tokens, "seconds": seconds, "val_loss": out[0]["val_loss"],
                   "exposed_sync_s": max(0.0, seconds - ideal_seconds(tokens, sim)), "outliers": 0,
                   "extra_state_bytes": 0, "losses": [o["losses"] for o in out], "times": [o["times"] for o in out]}
        else:
            rr = group.run(progress=False, save=False)
            per_rank = ray.get([w.losses.remote() for w in group.workers])
            reps = ray.get([w.report.remote() for w in group.workers])
            if mode == "edit":
                calib["step_s"] = min(x.compute_seconds / max(x.step, 1) for x in reps)
            # where the exposed sync went (mean over ranks): decision, its all-gather (with the
            # wait for the other replica), launches, waits, outer step, write-back
            phases = {k: round(sum(x.phases[k] for x in reps) / len(reps), 4) for k in reps[0].phases}
            res = {"tokens": rr.tokens, "seconds": rr.seconds, "val_loss": rr.val_loss,
                   "exposed_sync_s": rr.sync_seconds, "exposed_sync_phases_s": phases,
                   "syncs": reps[0].syncs, "allreduce_s": rr.dp_seconds, "outliers": rr.outliers,
                   "extra_state_bytes": rr.extra_state_bytes,
                   "losses": [x for x, _ in per_rank], "times": [t for _, t in per_rank]}
        res.update(start=start, tokens_per_s=res["tokens"] / res["seconds"],
                   ideal_s=ideal_seconds(res["tokens"], sim))
        return res

    arms = ["ddp", "post_local_sgd", "diloco", "edit", "aedit"] if not quick else ["ddp", "edit"]
    slow = {"slowdown": [1.0, 1.5]}
    rand = {"random_slow_replica": 1, "random_slow_prob": 0.15, "random_slow_factor": 3.0}
    spike = {"spike_replica": 1, "spike_start": steps // 2 + 4, "spike_steps": 4 if quick else 8,
             "spike_lr_mult": 10.0}
    plan: list[tuple[str, str, float, bool, dict, bool]] = []   # (name, mode, r, penalty, sim, timed)
    for r in rs:
        for arm in arms:
            plan.append((f"{arm}@r={r}", arm, r, True, {}, arm in ("ddp", "edit") or (arm == "diloco" and r == 0.25)))
    for arm in (["edit", "aedit"] if quick else ["ddp", "edit", "aedit"]):
        plan.append((f"{arm}@straggler1.5x", arm, 1.0, True, slow, arm != "ddp"))
    if not quick:
        for arm in ("ddp", "edit", "aedit"):
            plan.append((f"{arm}@random3x", arm, 1.0, True, rand, False))
    plan.append(("edit@spike", "edit", 1.0, True, spike, False))
    plan.append(("edit_nopenalty@spike", "edit", 1.0, False, spike, False))
    plan.append(("edit_nopenalty@r=1.0", "edit", 1.0, False, {}, False))

    results: dict[str, dict] = {}
    runs: dict[str, list[dict]] = {}
    # Repeats interleave the timed arms, so noise hits all alike; repeat k runs seed k, so the
    # loss targets average over seeds (at 64 steps one seed's EDiT/DDP loss ratio moves by ±0.02).
    for rep in range(repeats):
        for name, mode, r, penalty, sim, timed in plan:
            if rep > 0 and not timed:
                continue
            res = run_arm(mode, r, penalty, seed=rep, **sim)
            runs.setdefault(name, []).append(res)
            print(f"[{rep}] {name:26s} tok/s {res['tokens_per_s']:7.0f}  val {res['val_loss']:.4f}  "
                  f"sync {res['exposed_sync_s']:.2f}s  x ideal {res['seconds'] / res['ideal_s']:.2f}", flush=True)
    group.shutdown()
    if quick:
        report.note("--quick skips the torchft arm (its lighthouse and quorum start-up alone take ~20 s)")
    elif not args.no_torchft:
        try:
            res = run_torchft(cfg_for("diloco", 1.0, False, {}), t_c, steps * tokens_per_step * 2)
            res["ideal_s"] = ideal_seconds(res["tokens"], {})
            runs["torchft_diloco@r=1.0"] = [res]
            print(f"torchft_diloco@r=1.0 tok/s {res['tokens_per_s']:7.0f}  val {res['val_loss']:.4f}", flush=True)
        except ImportError:
            report.note("torchft not installed (pip install torchft==0.2.0): its arm was skipped")
    for name, lst in runs.items():
        first = dict(lst[0])
        for key in ("tokens_per_s", "seconds", "exposed_sync_s"):
            first[key] = statistics.median(x[key] for x in lst)
        if "exposed_sync_phases_s" in first:
            first["exposed_sync_phases_s"] = {k: round(statistics.median(x["exposed_sync_phases_s"][k] for x in lst), 4)
                                              for k in first["exposed_sync_phases_s"]}
        first["repeats"] = len(lst)
        first["val_loss_seeds"] = [round(x["val_loss"], 4) for x in lst]
        first["tokens_per_s_runs"] = [round(x["tokens_per_s"], 1) for x in lst]
        results[name] = first
        fig = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in first.items()
               if k not in ("losses", "times", "start")}
        fig["distance_from_ideal"] = round(first["seconds"] / first["ideal_s"], 3)
        report.arm(name, **fig)

    # -- figures -------------------------------------------------------------------------------
    def loss_ratio(a: str, b: str) -> float:
        """Mean over seeds of a's validation loss over b's (pairs of the same repeat, same seed);
        a single pair where either arm ran once (zip stops at the shorter list)."""
        return statistics.mean(x["val_loss"] / y["val_loss"] for x, y in zip(runs[a], runs[b]))

    def speedup(a: str, b: str) -> float:
        """Median over repeats of the paired ratio a/b (runs of one repeat ran back to back,
        so each pair saw the same load on this shared machine)."""
        pa, pb = runs[a], runs[b]
        if len(pa) == len(pb):
            return statistics.median(x["tokens_per_s"] / y["tokens_per_s"] for x, y in zip(pa, pb))
        return results[a]["tokens_per_s"] / results[b]["tokens_per_s"]

    window = 2 * H

    def time_to(res: dict, target: float) -> float | None:
        pts = smoothed(sum(res["times"], []), sum(res["losses"], []), window)
        for t, loss in pts[window:]:
            if loss <= target:
                return round(t - res["start"], 3)
        return None

    for r in rs:
        ddp = results[f"ddp@r={r}"]
        final = smoothed(sum(ddp["times"], []), sum(ddp["losses"], []), window)[-1][1]
        if r == 1.0 and "torchft_diloco@r=1.0" in results:
            report.arm("torchft_diloco@r=1.0", time_to_ddp_final_loss_s=time_to(results["torchft_diloco@r=1.0"], final))
        for arm in arms:
            report.arm(f"{arm}@r={r}", time_to_ddp_final_loss_s=time_to(results[f"{arm}@r={r}"], final))
        report.target(f"edit_speedup_r{r}", speedup(f"edit@r={r}", f"ddp@r={r}"), ">=",
                      {0.25: 0.97, 1.0: 1.2, 4.0: 3.0}[r], f"EDiT tokens/s over DDP at r={r} (simulated network)")
        report.target(f"edit_loss_r{r}", loss_ratio(f"edit@r={r}", f"ddp@r={r}"), "<=", 1.02,
                      f"EDiT validation loss over DDP's at equal tokens, r={r} (mean over seeds)")
    if 0.25 in rs:
        report.target("edit_exposed_sync_vs_diloco", statistics.median(
                      x["exposed_sync_s"] / max(y["exposed_sync_s"], 1e-9)
                      for x, y in zip(runs["edit@r=0.25"], runs["diloco@r=0.25"])), "<=", 0.5,
                      "EDiT exposed outer-sync time over DiLoCo's at r=0.25")
    report.target("aedit_straggler_speedup", speedup("aedit@straggler1.5x", "edit@straggler1.5x"), ">=", 1.2,
                  "A-EDiT tokens/s over EDiT, one replica 1.5x slower (simulated)")
    report.target("aedit_straggler_loss", loss_ratio("aedit@straggler1.5x", "edit@straggler1.5x"), "<=", 1.03,
                  "A-EDiT validation loss over EDiT's, straggler scenario (mean over seeds)")

    def excursion(spiked: dict, ref: dict) -> float:
        lo, hi = spike["spike_start"], min(steps, spike["spike_start"] + spike["spike_steps"] + 3 * H)
        clean, base_ = spiked["losses"][0], ref["losses"][0]       # replica 0 never spikes
        return max(clean[i] - base_[i] for i in range(lo, hi))
    on = excursion(results["edit@spike"], results["edit@r=1.0"])
    off = excursion(results["edit_nopenalty@spike"], results["edit_nopenalty@r=1.0"])
    report.arm("edit@spike", peak_excursion=round(on, 4))
    report.arm("edit_nopenalty@spike", peak_excursion=round(off, 4))
    report.target("penalty_spike", on / max(off, 1e-9), "<=", 0.5,
                  "peak loss excursion of the clean replica, penalty on over off")
    report.target("extra_state", results["edit@r=1.0"]["extra_state_bytes"] / (2 * P * 4 / cfg0.shards), "==", 1.0,
                  "EDiT extra state bytes per rank over 2*P/S (fp32; S=1 here, S=2 in the tests)")
    report.note(f"compute alone: {t_c * 1e3:.1f} ms per step per rank (median, both ranks busy); "
                f"P = {P:,} parameters; {steps} steps of {tokens_per_step} tokens per replica")
    report.note(f"simulated network: 0.5 ms latency per collective, bandwidth set so one full-model "
                f"all-reduce (2 ranks, ring, {4 * P:,} bytes) takes r x {t_c * 1e3:.1f} ms")
    report.note("simulated stragglers: a slow replica sleeps (factor - 1) x its compute time each step; "
                f"spike: replica 1 gets shuffled tokens and 10x lr for {spike['spike_steps']} steps from step "
                f"{spike['spike_start']}")
    report.note("torchft_diloco: torchft 0.2.0 DiLoCo (lighthouse in the driver, one TCPStore and gloo "
                "ProcessGroup per replica, use_async_quorum=False, no synchronous warm-up), its "
                "Manager.allreduce delayed by the same simulated link")
    report.note("A-EDiT's T = H x the per-step compute time of an unslowed replica, measured in the "
                "EDiT run of the same scenario just before it")
    report.note("timed arms (ddp, edit, diloco at r=0.25, straggler edit/aedit): "
                f"{repeats} interleaved repeats, repeat k with seed k (model init, data order); "
                "per-arm figures are medians (val_loss: seed 0's, val_loss_seeds: each seed's), "
                "speed-up targets the median of per-repeat paired ratios, loss targets the mean over "
                "seeds of paired ratios; other arms ran once, seed 0")
    report.write()


if __name__ == "__main__":
    main()
