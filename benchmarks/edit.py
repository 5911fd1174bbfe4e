"""Speed benchmark of EDiT / A-EDiT against synchronous DDP, Post Local SGD, DiLoCo and torchft.

One run, the same model (tiny-1m), data (standard-library bytes), token budget and cores
(Ray actors with 1 CPU and 1 thread each) for every arm:
- ddp: torch DistributedDataParallel (bucketed gradient all-reduce overlapped with backward),
  its buckets routed through raystack.comm by a DDP communication hook, so the same simulated
  network applies to it;
- post_local_sgd, diloco, edit, aedit: raystack's EDiT code in each mode (H = 16);
- edit_overlap: EDiT with each block's outer update applied τ inner steps after its sync;
- edit_stream: the overlapped update on 4 staggered fragments (``sync.fragments``: each group of
  blocks synced at its own point of the window, so one sync carries a quarter of the model),
  applied 2 steps after its sync;
- edit_fp16 / edit_int8: EDiT with compressed pseudo-gradients (error feedback);
- torchft_diloco / torchft_streaming: torchft 0.2.0's DiLoCo and Streaming DiLoCo, their
  Manager.allreduce delayed by the same simulated link (Streaming: its fragment_sync_delay swept,
  the best one timed).
The simulated network is set so one full-model all-reduce costs r x one step's compute (r = 0.25,
1, 4). Speed comes from a steady-state segment of each run: from the end of the first local window
to the start of the last one (warm-up, the first window and the final blocking sync left out).

Parts (``--only``): ``speed`` (per r), ``stragglers`` (A-EDiT with a slow replica, the penalty
against a loss spike), ``memory`` (full sharding: S = 2 against S = 1, per-rank memory, losses).
Validation loss at a real horizon is benchmarks/edit_quality.py.
"""
from __future__ import annotations

import statistics
import time

from common import Report, parse_args

import ray

from _edit_workers import BenchWorker, TorchFTWorker
from edit_quality import stream_sync
from raystack.actors.edit import EDiTGroup
from raystack.cluster import connect
from raystack.comm import ring_bytes
from raystack.config import config_to_dict, load_config
from raystack.edit.config import EDiTConfig

PARTS = ("speed", "stragglers", "memory")
TAU = 4                       # edit_overlap: at r = 4 the wire (~4 steps) hides behind 4 steps (as in edit_quality)
STREAMING_FRAGMENTS = 2
STREAMING_DELAYS = [0, 1, 2, 4, 7]    # fragment_sync_delay values tried (< H / fragments)
SPEED_GOALS = {0.25: 0.97, 1.0: 1.2, 4.0: 3.0}


def steady(traces: list[dict], first: int, tail: int, tokens_per_rank_step: int) -> dict:
    """Steady-state figures of one run from its ranks' per-step traces: from the moment every
    rank ended step ``first`` to the moment the first rank ended its step n - ``tail``; the
    rank-steps ended in between, and each rank's exposed sync in between (mean per rank-step)."""
    t0 = max(t["times"][first - 1] for t in traces)
    t1 = min(t["times"][len(t["times"]) - tail - 1] for t in traces)
    steps, exposed = 0, 0.0
    for t in traces:
        inside = [i for i, x in enumerate(t["times"]) if t0 < x <= t1]
        steps += len(inside)
        if inside and "exposed" in t:
            before = t["exposed"][inside[0] - 1] if inside[0] > 0 else 0.0
            exposed += t["exposed"][inside[-1]] - before
    return {"tokens_per_s": steps * tokens_per_rank_step / max(t1 - t0, 1e-9), "steady_seconds": t1 - t0,
            "steady_rank_steps": steps, "exposed_per_step_s": exposed / max(steps, 1)}


def main() -> None:
    args = parse_args("EDiT / A-EDiT vs DDP, Post Local SGD, DiLoCo, torchft (speed, simulated network)", lambda p: (
        p.add_argument("--no-torchft", action="store_true", help="skip the torchft arms"),
        p.add_argument("--only", choices=PARTS, action="append", help="run only these parts"),
        p.add_argument("--repeats", type=int, default=None, help="timed repeats (repeat k uses seed k; default 3)"),
        p.add_argument("--r", default=None, help="comma-separated r values of the speed part (default 0.25,1,4)"),
        p.add_argument("--tau", type=int, default=TAU, help=f"edit_overlap's delay in inner steps (default {TAU})"),
        p.add_argument("--eager", action="store_true",
                       help="time edit_overlap with the eager update (sync.overlap_eager)")))
    quick = args.quick
    parts = args.only or list(PARTS)
    H = 4 if quick else 16
    warmup = 4 if quick else 8
    windows = 4 if quick else 6         # quick: 3 windows left an A-EDiT arm under load no steady segment
    steps = warmup + H * windows
    rs = [float(x) for x in args.r.split(",")] if args.r else [4.0] if quick else [0.25, 1.0, 4.0]
    repeats = args.repeats or (1 if quick else 3)
    tau = min(args.tau, H - 1)
    stream = stream_sync(H)            # as in edit_quality: a quarter of the wire (~1 step at r = 4) behind 2 steps
    base = {"model": "tiny-1m", "ranks": 2, "shards": 1, "steps": steps,
            "inner": {"lr": 3e-3, "lr_warmup_steps": 10},
            "sync": {"h": H, "warmup_steps": warmup, "min_steps": 2},
            "outer": {"lr": 0.7, "momentum": 0.5},      # as in edit_quality
            "penalty": {"warmup_syncs": 1},
            "data": {"max_bytes": 300_000 if quick else 1_000_000, "batch_size": 4,
                     "seq_len": 32 if quick else 64, "eval_batches": 2 if quick else 4},
            "run": {"out_dir": "/tmp/raystack_bench_edit", "checkpoint_every": 0, "eval_every": 0}}
    cfg0 = load_config(EDiTConfig, base)
    connect(num_cpus=4, dashboard=False, log_to_driver=False)
    report = Report("edit", quick, {"steps_per_replica": steps, "H": H, "tau": tau, "eager": args.eager, "stream": stream,
                                    "r": rs, "repeats": repeats,
                                    "parts": parts, **base})
    started = time.perf_counter()
    group = EDiTGroup(cfg0, worker_cls=BenchWorker)
    group.start()
    t_c = statistics.mean(ray.get([w.compute_alone.remote(6 if quick else 20) for w in group.workers]))
    ray.get([w.set_step_seconds.remote(t_c) for w in group.workers])
    from raystack.models import build_model
    P = sum(p.numel() for p in build_model("tiny-1m").parameters())
    tokens_per_step = cfg0.data.batch_size * cfg0.data.seq_len
    first, tail = warmup + H, H            # the steady segment
    calib: dict[str, float] = {}

    def cfg_for(mode: str, r: float, seed: int = 0, penalty: bool = True, sync: dict | None = None,
                **sim) -> EDiTConfig:
        d = config_to_dict(cfg0)
        d["mode"] = "sync" if mode == "ddp" else mode
        d["run"]["seed"] = seed   # model init, data order, simulated slow steps
        d["simulate"].update({"latency_s": 0.0005,
                              "bandwidth_bytes_per_s": ring_bytes("all_reduce", 4 * P, 2) / (r * t_c)})
        d["simulate"].update(sim)
        d["sync"].update(sync or {})
        # A-EDiT's window: H steps of an unslowed replica, as measured in the EDiT arm just run
        d["sync"]["t_seconds"] = H * calib.get("step_s", t_c)
        d["penalty"]["enabled"] = penalty
        return load_config(EDiTConfig, d)

    runs: dict[str, list[dict]] = {}

    def record(name: str, res: dict, rep: int) -> None:
        runs.setdefault(name, []).append(res)
        exposed = res.get("exposed_per_step_s")
        print(f"[{rep}] {name:30s} tok/s {res['tokens_per_s']:7.0f}  val {res['val_loss']:.4f}  exposed "
              f"{'-' if exposed is None else f'{exposed * 1e3:.2f} ms/step'}", flush=True)

    def run_arm(mode: str, r: float, seed: int = 0, penalty: bool = True, sync: dict | None = None, **sim) -> dict:
        cfg = cfg_for(mode, r, seed, penalty, sync, **sim)
        group.reconfigure(cfg)
        if mode == "ddp":
            out = ray.get([w.run_ddp.remote(0.25) for w in group.workers])
            res = {"val_loss": out[0]["val_loss"], "losses": [o["losses"] for o in out],
                   "wire_bytes_per_rank": out[0]["wire_bytes"], **steady(out, first, tail, tokens_per_step)}
            res["exposed_per_step_s"] = None
            return res
        rr = group.run(progress=False, save=False)
        traces = ray.get([w.trace.remote() for w in group.workers])
        reps = [t["report"] for t in traces]
        if mode == "edit" and not sync:
            calib["step_s"] = min(x["compute_seconds"] / max(x["step"], 1) for x in reps)
        return {"val_loss": rr.val_loss, "losses": [t["losses"] for t in traces],
                "phases_s": {k: round(sum(x["phases"][k] for x in reps) / len(reps), 4) for k in reps[0]["phases"]},
                "syncs": reps[0]["syncs"], "outliers": rr.outliers, "extra_state_bytes": rr.extra_state_bytes,
                "wire_bytes_per_rank": reps[0]["wire_bytes"], "memory_per_rank": reps[0]["memory"],
                **steady(traces, first, tail, tokens_per_step)}

    def run_torchft(r: float, seed: int, fragments: int, delay: int) -> dict:
        from torchft.coordination import LighthouseServer
        cfg = cfg_for("diloco", r, seed, penalty=False)
        lighthouse = LighthouseServer(bind="[::]:0", min_replicas=2)     # fresh: no stale replicas
        try:
            remote = ray.remote(num_cpus=cfg.run.cpus_per_rank)(TorchFTWorker)
            workers = [remote.remote(config_to_dict(cfg), i, lighthouse.address()) for i in range(2)]
            ray.get([w.ready.remote() for w in workers])
            out = ray.get([w.run.remote(t_c, fragments, delay) for w in workers])
            for w in workers:
                ray.kill(w)
        finally:
            lighthouse.shutdown()
        return {"val_loss": out[0]["val_loss"], "losses": [o["losses"] for o in out],
                "wire_bytes_per_rank": out[0]["wire_bytes"], **steady(out, first, tail, tokens_per_step)}

    torchft = not args.no_torchft
    if torchft:
        try:
            import torchft  # noqa: F401
        except ImportError:
            torchft = False
            report.note("torchft not installed (pip install torchft==0.2.0): its arms were skipped")

    # -- speed, per r: timed arms interleaved, repeat k with seed k --------------------------------
    if "speed" in parts:
        timed = [("ddp", "ddp", {}), ("diloco", "diloco", {}), ("edit", "edit", {}),
                 ("edit_overlap", "edit", {"overlap_steps": tau, "overlap_eager": args.eager}),
                 ("edit_stream", "edit", stream)]
        once = [("post_local_sgd", "post_local_sgd", {}), ("aedit", "aedit", {}),
                ("edit_fp16", "edit", {"compression": "fp16"}), ("edit_int8", "edit", {"compression": "int8"})]
        if quick:                       # the code paths only: A-EDiT runs in the straggler part
            once = [once[2], once[3]]
        best_delay = None
        for rep in range(repeats):
            for r in rs:
                for name, mode, sync in timed + (once if rep == 0 else []):
                    record(f"{name}@r={r}", run_arm(mode, r, seed=rep, sync=sync), rep)
                if torchft and r == 4.0:
                    if best_delay is None:         # sweep the fragment delay once, keep the fastest
                        sweep = {}
                        delays = [0] if quick else [d for d in STREAMING_DELAYS if d < H // STREAMING_FRAGMENTS]
                        for delay in delays:
                            res = run_torchft(r, rep, STREAMING_FRAGMENTS, delay)
                            record(f"torchft_streaming_delay{delay}@r={r}", res, rep)
                            sweep[delay] = res["tokens_per_s"]
                        best_delay = max(sweep, key=sweep.get)
                        report.note("torchft Streaming DiLoCo fragment_sync_delay sweep at r=4 (tokens/s, seed 0): "
                                    + ", ".join(f"{d}: {v:.0f}" for d, v in sweep.items()) + f"; best {best_delay}")
                        runs[f"torchft_streaming@r={r}"] = [runs[f"torchft_streaming_delay{best_delay}@r={r}"][0]]
                    else:
                        record(f"torchft_streaming@r={r}", run_torchft(r, rep, STREAMING_FRAGMENTS, best_delay), rep)
                if torchft and rep == 0 and r in (1.0, 4.0) and not quick:
                    record(f"torchft_diloco@r={r}", run_torchft(r, rep, 1, 0), rep)

    # -- stragglers and the penalty ----------------------------------------------------------------
    slow = {"slowdown": [1.0, 1.5]}
    rand = {"random_slow_replica": 1, "random_slow_prob": 0.15, "random_slow_factor": 3.0}
    spike = {"spike_replica": 1, "spike_start": warmup + H + 4, "spike_steps": 4 if quick else 8,
             "spike_lr_mult": 10.0}
    if "stragglers" in parts:
        for rep in range(repeats):
            for name in ("edit", "aedit"):
                record(f"{name}@straggler1.5x", run_arm(name, 1.0, seed=rep, **slow), rep)
        if not quick:
            for name in ("ddp", "edit", "aedit"):
                record(f"{name}@random3x", run_arm(name, 1.0, **rand), 0)
        record("edit@spike", run_arm("edit", 1.0, **spike), 0)
        record("edit_nopenalty@spike", run_arm("edit", 1.0, penalty=False, **spike), 0)
        record("edit_nopenalty@r=1.0", run_arm("edit", 1.0, penalty=False), 0)
        if "edit@r=1.0" not in runs:
            record("edit@r=1.0", run_arm("edit", 1.0), 0)

    # -- memory: full sharding, S = 2 against S = 1, the same replica batches ----------------------
    if "memory" in parts:
        mem_steps = 12 if quick else 20     # quick: 4 synchronous steps, then 2 windows of H = 4
        mem = {}
        for shards, full in ((1, False), (2, True)):
            d = config_to_dict(cfg0)
            d.update(ranks=2 * shards, shards=shards, full_shard=full, steps=mem_steps)
            d["data"]["batch_size"] = 2 * cfg0.data.batch_size // shards    # replica batch: 2 x B rows
            d["sync"].update(warmup_steps=4, h=4 if quick else 8)
            cfg = load_config(EDiTConfig, d)
            # --quick reuses the speed part's actors for S = 1 (same shape); a full run starts fresh
            # ones, so each peak RSS is this part's own
            reuse = quick and shards == 1 and group is not None
            if not reuse and group is not None:
                group.shutdown()
                group = None
            g = group if reuse else EDiTGroup(cfg, worker_cls=BenchWorker)
            if not reuse:
                g.start()
            ray.get([w.set_split_rows.remote(True) for w in g.workers])
            g.reconfigure(cfg)                  # (re)build the ranks with their row-split streams
            g.run(progress=False, save=False)
            traces = ray.get([w.trace.remote() for w in g.workers])
            g.shutdown()                        # S = 2 needs all 4 CPUs
            group = None
            # a replica's loss = the mean of its shard ranks' losses (each on its half of the rows)
            per_replica = [[statistics.mean(x) for x in zip(*[traces[rr * shards + s]["losses"] for s in range(shards)])]
                           for rr in range(2)]
            m = traces[0]["report"]["memory"]
            mem[shards] = {"losses": per_replica, "memory": m, "held": m["params"] + m["grads"] + m["optimizer"] + m["outer"]}
            report.arm(f"memory@S={shards}", full_shard=full, ranks=2 * shards, memory_per_rank=m,
                       held_bytes_per_rank=mem[shards]["held"], steps=mem_steps)
        gap = max(abs(a - b) for r in range(2) for a, b in zip(mem[1]["losses"][r], mem[2]["losses"][r]))
        report.target("full_shard_memory_s2_vs_s1", mem[2]["held"] / mem[1]["held"], "<=", 0.6,
                      "per-rank parameters + gradients + AdamW + outer state, full sharding S=2 over S=1 (FSDP2)")
        report.target("full_shard_loss_gap", gap, "<=", 1e-5,
                      f"largest |replica loss, S=2 - S=1| over {mem_steps} steps (each replica's batch split over its ranks)")
        report.note(f"full sharding: peak RSS per rank {mem[2]['memory']['peak_rss'] / 2**20:.0f} MiB at S=2 against "
                    f"{mem[1]['memory']['peak_rss'] / 2**20:.0f} MiB at S=1 (whole process: torch and the "
                    "interpreter included; tiny-1m's state is a few MB)")
    if group is not None:
        group.shutdown()

    # -- figures -------------------------------------------------------------------------------
    results = {}
    for name, lst in runs.items():
        first_run = dict(lst[0])
        for key in ("tokens_per_s", "exposed_per_step_s"):
            vals = [x[key] for x in lst if x.get(key) is not None]
            first_run[key] = statistics.median(vals) if vals else None
        first_run.update(repeats=len(lst), val_loss_seeds=[round(x["val_loss"], 4) for x in lst],
                         tokens_per_s_runs=[round(x["tokens_per_s"], 1) for x in lst])
        results[name] = first_run
        report.arm(name, **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in first_run.items()
                            if k != "losses"})

    def paired(a: str, b: str, key: str) -> tuple[float | None, list[float]]:
        """Median over repeats of the paired ratio a/b (runs of one repeat ran back to back, so each
        pair saw the same load on this shared machine), and the per-repeat ratios."""
        ratios = [x[key] / y[key] for x, y in zip(runs[a], runs[b]) if x.get(key) and y.get(key)]
        if not ratios:   # no repeat had a steady segment in both arms (a tiny --quick run under load)
            report.note(f"{a} over {b} ({key}): no repeat had a steady segment in both arms; not measured")
            return None, []
        return statistics.median(ratios), [round(v, 3) for v in ratios]

    if "speed" in parts:
        for r in rs:
            value, each = paired(f"edit@r={r}", f"ddp@r={r}", "tokens_per_s")
            report.target(f"edit_speedup_r{r}", value, ">=", SPEED_GOALS[r],
                          f"EDiT tokens/s over DDP at r={r}, steady state (per repeat: {each})")
            value, each = paired(f"edit@r={r}", f"diloco@r={r}", "exposed_per_step_s")
            report.arm(f"edit@r={r}", exposed_vs_diloco=None if value is None else round(value, 3),
                       exposed_vs_diloco_runs=each)
            if r in (1.0, 4.0):
                value, each = paired(f"edit_overlap@r={r}", f"diloco@r={r}", "exposed_per_step_s")
                report.target(f"overlap_exposed_vs_diloco_r{r}", value, "<=", 0.2,
                              f"EDiT overlapped (tau={tau}{', eager' if args.eager else ''}) exposed outer-sync time "
                              f"over DiLoCo's at r={r} "
                              f"(per repeat: {each})")
                value, each = paired(f"edit_stream@r={r}", f"diloco@r={r}", "exposed_per_step_s")
                report.target(f"stream_exposed_vs_diloco_r{r}", value, "<=", 0.2,
                              f"EDiT overlapped on {stream['fragments']} staggered fragments (tau="
                              f"{stream['overlap_steps']}) exposed outer-sync time over DiLoCo's at r={r} "
                              f"(per repeat: {each})")
        if torchft and 4.0 in rs:
            value, each = paired("edit_overlap@r=4.0", "torchft_streaming@r=4.0", "tokens_per_s")
            report.target("overlap_vs_torchft_streaming_r4", value, ">=", 1.15,
                          f"EDiT overlapped tokens/s over torchft Streaming DiLoCo's (best fragment delay) at r=4 "
                          f"(per repeat: {each})")
            value, each = paired("edit_stream@r=4.0", "torchft_streaming@r=4.0", "tokens_per_s")
            report.target("stream_vs_torchft_streaming_r4", value, ">=", 1.15,
                          f"EDiT overlapped on staggered fragments, tokens/s over torchft Streaming DiLoCo's (best "
                          f"fragment delay) at r=4 (per repeat: {each})")
        r_c = rs[-1]
        fp16, int8 = results[f"edit_fp16@r={r_c}"], results[f"edit_int8@r={r_c}"]
        report.target("int8_bytes_vs_fp16", int8["wire_bytes_per_rank"]["outer"] / fp16["wire_bytes_per_rank"]["outer"],
                      "<=", 0.505, "pseudo-gradient bytes on the wire per rank, int8 over fp16 (raystack.comm count; "
                      "one fp32 scale per 1024 int8 values makes half 0.502)")
        report.target("extra_state", results[f"edit@r={rs[-1]}"]["extra_state_bytes"] / (2 * P * 4 / cfg0.shards), "==", 1.0,
                      "EDiT extra state bytes per rank over 2*P/S (fp32; S=1 here, S=2 in the tests)")
    if "stragglers" in parts:
        value, each = paired("aedit@straggler1.5x", "edit@straggler1.5x", "tokens_per_s")
        report.target("aedit_straggler_speedup", value, ">=", 1.2,
                      f"A-EDiT tokens/s over EDiT, one replica 1.5x slower (simulated; per repeat: {each})")
        value = statistics.mean(x["val_loss"] / y["val_loss"]
                                for x, y in zip(runs["aedit@straggler1.5x"], runs["edit@straggler1.5x"]))
        report.target("aedit_straggler_loss", value, "<=", 1.03,
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
    report.note(f"compute alone: {t_c * 1e3:.1f} ms per step per rank (median, both ranks busy); P = {P:,} "
                f"parameters; {steps} steps of {tokens_per_step} tokens per replica ({warmup} synchronous, then "
                f"{windows} windows of H = {H}); speed from steps {first + 1}-{steps - tail}")
    report.note(f"simulated network: 0.5 ms latency per collective, bandwidth set so one full-model all-reduce "
                f"(2 ranks, ring, {4 * P:,} bytes) takes r x {t_c * 1e3:.1f} ms")
    report.note("simulated stragglers: a slow replica sleeps (factor - 1) x its compute time each step; spike: "
                f"replica 1 gets shuffled tokens and 10x lr for {spike['spike_steps']} steps from step {spike['spike_start']}")
    report.note("torchft arms: torchft 0.2.0 (lighthouse in the driver, fresh per run; one TCPStore and gloo "
                "ProcessGroup per replica; use_async_quorum=False; no synchronous warm-up), Manager.allreduce "
                f"delayed by the same simulated link; Streaming DiLoCo with {STREAMING_FRAGMENTS} fragments; "
                "their exposed sync is the time spent in DiLoCo's optimizer hooks")
    report.note("exposed sync: wall time a rank is blocked on outer-sync work (decision, launches, waits, outer "
                "step, write-back), per rank-step in the steady segment")
    report.note(f"timed arms (ddp, diloco, edit, edit_overlap, edit_stream per r; torchft_streaming at r=4; straggler edit/aedit): "
                f"{repeats} interleaved repeats, repeat k with seed k; per-arm figures are medians, targets the median "
                "of per-repeat paired ratios; other arms ran once, seed 0")
    if "speed" in parts:  # once per full run: EDiT's tokenizing pass on this machine's cores
        from _edit_tokenize import tokenizing_pass
        tokenizing_pass(report, quick)
    report.note(f"whole run {time.perf_counter() - started:.0f} s")
    report.write()


if __name__ == "__main__":
    main()
