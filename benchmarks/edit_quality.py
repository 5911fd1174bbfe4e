"""EDiT at a real horizon: validation loss at equal tokens, every arm, several seeds.

Loss does not depend on the network, so there is no network model here: each job (one arm,
one model, one seed) runs its replicas as threads of one process over an in-process comm
(``raystack.edit.localcomm``), and two jobs run at a time (two processes, one per core).
Arms: synchronous data parallel (``ddp``: a gradient all-reduce every step), Post Local SGD,
DiLoCo, EDiT, A-EDiT, EDiT with the overlapped outer update (``edit_overlap``, τ steps), the
overlapped update on staggered fragments (``edit_stream``: F groups of blocks, each synced at its
own point of the window, τ_F steps late), EDiT with fp16 and int8 pseudo-gradients (error feedback on), torchft 0.2.0's DiLoCo and Streaming
DiLoCo (its Manager and lighthouse, replicas as threads as well). Every arm trains the same
tokens: replicas x steps x batch. Writes loss-vs-tokens PNGs next to the JSON.

Parts run separately: ``--only tiny-1m`` / ``--only tiny-20m``, ``--seeds 0,1``, ``--arms ...``.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import statistics
import threading
import time
from pathlib import Path

from common import Report, parse_args

ARMS_1M = ["ddp", "post_local_sgd", "diloco", "edit", "aedit", "edit_overlap", "edit_stream", "edit_fp16",
           "edit_int8", "torchft_diloco", "torchft_streaming"]
ARMS_20M = ["ddp", "diloco", "edit", "edit_overlap", "edit_stream"]
H = 16
TAU = 4                  # edit_overlap: outer update applied 4 inner steps after its sync
STREAM = (4, 2)          # edit_stream: 4 staggered fragments, each applied 2 steps after its sync
FRAGMENTS = 2            # torchft Streaming DiLoCo: model fragments, synced in turn
STREAMING_DELAY = 2      # its fragment_sync_delay (< H / FRAGMENTS)
SMOOTH = 64              # steps in the running mean of the training-loss curves

# per model: steps per replica, seeds, batch rows x sequence length, evaluations per run
FULL = {"tiny-1m": {"steps": 2000, "seeds": [0, 1, 2], "batch": 4, "seq": 32, "evals": 8},
        "tiny-20m": {"steps": 500, "seeds": [0], "batch": 2, "seq": 64, "evals": 5}}
QUICK = {"tiny-1m": {"steps": 24, "seeds": [0], "batch": 4, "seq": 32, "evals": 2}}
QUICK_ARMS = ["ddp", "edit_int8", "torchft_streaming"]    # the job kinds, small (overlap: the speed benchmark)
# Validation: the curve's points on 64 windows of 64 bytes (8 batches of 8, drawn once); the final
# figure, which the targets read, on the first 1,024 windows of the validation split in order
# (65k bytes, the same for every arm). Two tiny-1m models' paired difference varies by ~0.016
# (0.9% of the loss) between draws of 64 windows and by ~0.004 over 1,024 (docs/edit.md).
EVAL_BATCHES, EVAL_ROWS, EVAL_SEQ = 8, 8, 64
FINAL_WINDOWS, FINAL_ROWS = 1024, 64


# Chosen on seeds that are not the benchmark's (docs/edit.md has the screens): tiny-1m on seeds
# 10-12 at 1,000 steps, tiny-20m on seeds 10 and 11 at 500 steps
WARMUP_FRACTION = 0.05   # synchronous steps before local SGD, as a share of the steps (--warmup)
OUTER = {"tiny-1m": (0.7, 0.5), "tiny-20m": (0.5, 0.5)}  # outer Nesterov (lr, momentum) per model (--outer)


def arm_config(arm: str, model: str, size: dict, seed: int, quick: bool, outer: tuple | None = None,
               warmup: int | None = None, tau: int = TAU) -> dict:
    """The EDiT config dict of one job (torchft arms read the shared fields from it too)."""
    h = 4 if quick else H
    outer = outer or OUTER[model]
    cfg = {"model": model, "ranks": 2, "shards": 1, "steps": size["steps"],
           "inner": {"lr": 3e-3 if model == "tiny-1m" else 1e-3, "lr_warmup_steps": 4 if quick else 50,
                     "lr_decay": "cosine", "lr_min_ratio": 0.1},
           "sync": {"h": h, "warmup_steps": warmup if warmup is not None else 2 if quick else
                    int(size["steps"] * WARMUP_FRACTION), "min_steps": 2},
           "outer": {"lr": outer[0], "momentum": outer[1]},
           "penalty": {"warmup_syncs": 2},
           "data": {"max_bytes": 300_000 if quick else 4_000_000, "batch_size": size["batch"], "seq_len": size["seq"]},
           "run": {"seed": seed}}
    mode = {"ddp": "sync", "edit_overlap": "edit", "edit_eager": "edit", "edit_fp16": "edit", "edit_int8": "edit",
            "edit_nopenalty": "edit", "edit_stream": "edit"}.get(arm, arm)
    cfg["mode"] = "diloco" if arm.startswith("torchft") else mode
    if arm in ("edit_overlap", "edit_eager"):
        cfg["sync"]["overlap_steps"] = min(tau, h - 1)
        cfg["sync"]["overlap_eager"] = arm == "edit_eager"
    if arm == "edit_stream":
        cfg["sync"].update(stream_sync(h))
    if arm == "edit_nopenalty":                 # not a default arm: what the penalty costs (--arms)
        cfg["penalty"]["enabled"] = False
    if arm in ("edit_fp16", "edit_int8"):
        cfg["sync"]["compression"] = arm.split("_")[1]
    return cfg


def stream_sync(h: int) -> dict:
    """edit_stream's sync fields at window length ``h`` (STREAM, shortened to fit a short window)."""
    fragments = min(STREAM[0], h)
    return {"fragments": fragments, "overlap_steps": min(STREAM[1], h // fragments - 1)}


# -- one job, in a pool process --------------------------------------------------------------------
_CACHE: dict = {}


def _data(cfg):
    """The corpus, the curve's validation batches and the final figure's (cached per process)."""
    import numpy as np
    import torch

    from raystack.actors.edit import load_corpus
    from raystack.data import BatchStream
    key = (cfg.data.max_bytes, cfg.data.val_fraction)
    if key not in _CACHE:
        corpus = load_corpus(cfg)
        val = BatchStream(corpus.val, EVAL_ROWS, EVAL_SEQ, seed=12345)
        tokens = np.concatenate([np.asarray(s) for s in (corpus.val if isinstance(corpus.val, list) else [corpus.val])])
        n = min(FINAL_WINDOWS, (len(tokens) - 1) // EVAL_SEQ)
        windows = torch.stack([torch.from_numpy(tokens[w * EVAL_SEQ:w * EVAL_SEQ + EVAL_SEQ + 1].astype(np.int64))
                               for w in range(n)])
        _CACHE[key] = (corpus, [val.next_batch() for _ in range(EVAL_BATCHES)], list(windows.split(FINAL_ROWS)))
    return _CACHE[key]


def _mean_loss(model, batches) -> float:
    import torch

    from raystack.models import lm_loss
    with torch.no_grad():
        was = model.training
        model.eval()
        out = sum(float(lm_loss(model, b)) * len(b) for b in batches) / sum(len(b) for b in batches)
        model.train(was)
    return out


def _step_seconds(cfg) -> float:
    """Median seconds of one inner step of this model and batch in this process (A-EDiT's T)."""

    from raystack.data import BatchStream
    from raystack.edit.inner import inner_optimizer
    from raystack.models import build_model, lm_loss
    key = ("step_s", cfg.model, cfg.data.batch_size, cfg.data.seq_len)
    if key not in _CACHE:
        corpus = _data(cfg)[0]
        model = build_model(cfg.model, seed=0)
        opt = inner_optimizer(cfg.inner, model.parameters())
        stream = BatchStream(corpus.train, cfg.data.batch_size, cfg.data.seq_len, seed=0)
        times = []
        for _ in range(6):
            t0 = time.perf_counter()
            lm_loss(model, stream.next_batch()).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - t0)
        _CACHE[key] = statistics.median(times[1:])
    return _CACHE[key]


def run_job(arm: str, cfg_dict: dict, evals: int) -> dict:
    """Train one arm to its step budget; returns its losses, validation curve and counts."""
    import torch
    torch.set_num_threads(1)
    from raystack.config import load_config
    from raystack.edit.config import EDiTConfig
    if cfg_dict["mode"] == "aedit":
        cfg = load_config(EDiTConfig, cfg_dict)
        # A-EDiT's window: H steps at the speed measured here, by both replicas at once
        cfg_dict = {**cfg_dict, "sync": {**cfg_dict["sync"], "t_seconds": cfg.sync.h * 2 * _step_seconds(cfg)}}
    cfg = load_config(EDiTConfig, cfg_dict)
    t0 = time.perf_counter()
    out = _run_torchft(arm, cfg, evals) if arm.startswith("torchft") else _run_edit(cfg, evals)
    out.update(arm=arm, model=cfg.model, seed=cfg.run.seed, seconds=time.perf_counter() - t0,
               corpus=_data(cfg)[0].manifest["key"])
    return out


def _run_edit(cfg, evals: int) -> dict:
    import torch

    from raystack.data import BatchStream
    from raystack.edit.localcomm import run_in_threads
    from raystack.edit.replica import EDiTRank
    from raystack.models import build_model
    corpus, val, final_val = _data(cfg)
    models = [build_model(cfg.model, seed=cfg.run.seed) for _ in range(cfg.ranks)]  # not in threads: RNG
    every_steps = max(1, cfg.steps // evals)
    every_syncs = max(1, every_steps // cfg.sync.h) * cfg.fragments   # a fragment's sync counts as one
    tokens_per_step = cfg.data.batch_size * cfg.data.seq_len

    def rank_fn(comm):
        torch.set_num_threads(1)
        r = EDiTRank(cfg, models[comm.rank], comm, BatchStream(
            corpus.train, cfg.data.batch_size, cfg.data.seq_len, seed=cfg.run.seed, rank=comm.rank,
            world_size=cfg.ranks))
        curve = []
        while not r.done:
            r.train_step()
            synced = r.maybe_sync()
            # every rank evaluates at the same point: a sync (collective) or, without syncs, a step
            due = (r.counters.syncs % every_syncs == 0) if synced else (
                cfg.mode == "sync" and r.counters.step % every_steps == 0)
            if due and not r.done:
                r.flush()
                curve.append([r.counters.tokens, _mean_loss(r.model, val) if comm.rank == 0 else None])
        r.flush()
        if comm.rank == 0:          # the curve's last point, on the curve's windows
            curve.append([r.counters.tokens, _mean_loss(r.model, val)])
        return {"losses": r.counters.losses, "tokens": r.counters.tokens, "curve": curve,
                "final": _mean_loss(r.model, final_val) if comm.rank == 0 else None, "report": r.report()}

    ranks = run_in_threads(cfg.ranks, rank_fn, timeout_s=600)
    rep = ranks[0]["report"]
    total = sum(r["tokens"] for r in ranks)
    points = ranks[0]["curve"]
    curve = [[sum(r["curve"][i][0] for r in ranks), points[i][1]] for i in range(len(points) - 1)] + [[total, points[-1][1]]]
    return {"val_loss": ranks[0]["final"], "tokens": total, "curve": curve,
            "train": _smooth_curve([r["losses"] for r in ranks], tokens_per_step),
            "steps_per_replica": [len(r["losses"]) for r in ranks], "syncs": rep.syncs,
            "outliers": rep.outliers, "outer_bytes_per_rank": rep.wire_bytes["outer"],
            "extra_state_bytes": rep.extra_state_bytes}


def _smooth_curve(per_replica: list[list[float]], tokens_per_step: int, points: int = 100) -> list[list[float]]:
    """(tokens, running mean of the last SMOOTH steps' loss, mean over replicas) at ~``points`` steps."""
    n = min(len(x) for x in per_replica)
    stride = max(1, n // points)
    out = []
    for i in range(stride - 1, n, stride):
        lo = max(0, i + 1 - SMOOTH)
        vals = [statistics.mean(x[lo:i + 1]) for x in per_replica]
        out.append([(i + 1) * tokens_per_step * len(per_replica), round(statistics.mean(vals), 4)])
    return out


def _run_torchft(arm: str, cfg, evals: int) -> dict:
    """torchft's DiLoCo / Streaming DiLoCo: a Manager per replica on its own lighthouse (fresh
    per job), a gloo ProcessGroup per replica, replicas as threads; the same model, data, inner
    and outer optimizer and learning-rate schedule as the other arms; no synchronous warm-up
    (torchft has none). Evaluated on the global parameters (each fragment's last synced copy)."""
    import copy

    import torch
    from torchft.coordination import LighthouseServer

    from _edit_workers import llama_fragments, torchft_manager, torchft_train
    from raystack.data import BatchStream
    from raystack.models import build_model
    corpus, val, final_val = _data(cfg)
    R = cfg.replicas
    streaming = arm == "torchft_streaming"
    models = [build_model(cfg.model, seed=cfg.run.seed) for _ in range(R)]
    lighthouse = LighthouseServer(bind="[::]:0", min_replicas=R)
    results: dict[int, dict] = {}
    errors: list = []
    every = max(cfg.sync.h, (cfg.steps // evals) // cfg.sync.h * cfg.sync.h)
    tokens_per_step = R * cfg.data.batch_size * cfg.data.seq_len

    def fragments_of(model) -> list:
        return llama_fragments(model, FRAGMENTS) if streaming else [model]

    def global_loss(diloco, model, batches=val) -> float:
        """Validation loss of a copy of the model holding each fragment's global (last synced)
        parameters, which torchft keeps per fragment."""
        g = copy.deepcopy(model)
        with torch.no_grad():
            for i, (f, gf) in enumerate(zip(fragments_of(model), fragments_of(g))):
                saved = diloco._fragments[i].original_parameters
                for (name, _), gp in zip(f.named_parameters(), gf.parameters()):
                    gp.copy_(saved[name])
        return _mean_loss(g, batches)

    def replica(i: int) -> None:
        try:
            torch.set_num_threads(1)
            model = models[i]
            manager, _store = torchft_manager(f"quality_{i}", lighthouse.address(), model, R, timeout_s=120)
            stream = BatchStream(corpus.train, cfg.data.batch_size, cfg.data.seq_len, seed=cfg.run.seed, rank=i,
                                 world_size=cfg.ranks)
            curve, final = [], [None]

            def on_step(step: int, diloco) -> None:
                if i == 0 and (step + 1) % every == 0 and step + 1 < cfg.steps:
                    curve.append([(step + 1) * tokens_per_step, global_loss(diloco, model)])
                if i == 0 and step + 1 == cfg.steps:
                    final[0] = global_loss(diloco, model, final_val)
                    curve.append([(step + 1) * tokens_per_step, global_loss(diloco, model)])
            out = torchft_train(cfg, model, fragments_of(model), manager, stream,
                                min(STREAMING_DELAY, cfg.sync.h // FRAGMENTS - 1) if streaming else 0, on_step=on_step)
            manager.shutdown()
            results[i] = {"losses": out["losses"], "curve": curve, "final": final[0]}
        except BaseException as exc:     # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=replica, args=(i,), daemon=True) for i in range(R)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(3600)
    finally:
        lighthouse.shutdown()
    if errors:
        raise errors[0]
    tokens = cfg.steps * tokens_per_step
    return {"val_loss": results[0]["final"], "tokens": tokens, "curve": results[0]["curve"],
            "train": _smooth_curve([results[i]["losses"] for i in range(R)], cfg.data.batch_size * cfg.data.seq_len),
            "steps_per_replica": [cfg.steps] * R, "syncs": cfg.steps // cfg.sync.h, "outliers": 0,
            "outer_bytes_per_rank": None, "extra_state_bytes": None}


# -- the driver ----------------------------------------------------------------------------------
def plot(model: str, runs: dict[str, list[dict]], path: Path) -> None:
    """Validation loss (mean over seeds, min-max band) and smoothed training loss vs tokens."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_val, ax_train) = plt.subplots(1, 2, figsize=(13, 5))
    import numpy as np
    colors = plt.get_cmap("tab20").colors     # 11 arms: the default cycle's 10 colours gave two arms one
    for k, (arm, lst) in enumerate(runs.items()):
        # the seeds' curves on one token grid, the sparsest seed's (A-EDiT's time-based syncs put its
        # points at other tokens per seed; its i-th points were averaged, early with late)
        grid = min((r["curve"] for r in lst), key=len)
        xs = [x for x, _ in grid]
        ys = [[float(np.interp(x, [p[0] for p in r["curve"]], [p[1] for p in r["curve"]])) for r in lst] for x in xs]
        line, = ax_val.plot(xs, [statistics.mean(y) for y in ys], marker="o", ms=3, label=arm, color=colors[k % len(colors)])
        if len(lst) > 1:
            ax_val.fill_between(xs, [min(y) for y in ys], [max(y) for y in ys], alpha=0.15, color=line.get_color())
        tr = lst[0]["train"]
        ax_train.plot([p[0] for p in tr], [p[1] for p in tr], lw=1, label=arm, color=line.get_color())
    ax_val.set(title=f"{model}: validation loss (mean over seeds, band min-max)", xlabel="tokens", ylabel="loss")
    ax_train.set(title=f"{model}: training loss, running mean of {SMOOTH} steps (seed {runs[next(iter(runs))][0]['seed']})",
                 xlabel="tokens", ylabel="loss")
    for ax in (ax_val, ax_train):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    lows = [min(p[1] for r in lst for p in r["curve"]) for lst in runs.values()]
    ax_val.set_ylim(min(lows) - 0.05, min(lows) + 1.0)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def spread(values: list[float]) -> dict:
    return {"mean": round(statistics.mean(values), 4), "min": round(min(values), 4), "max": round(max(values), 4),
            "std": round(statistics.pstdev(values), 4) if len(values) > 1 else 0.0, "n": len(values)}


def main() -> None:
    args = parse_args("EDiT at a real horizon: validation loss at equal tokens", lambda p: (
        p.add_argument("--only", choices=["tiny-1m", "tiny-20m"], action="append", help="run only these models"),
        p.add_argument("--seeds", default=None, help="comma-separated seeds (default: 0,1,2 on tiny-1m, 0 on tiny-20m)"),
        p.add_argument("--arms", default=None, help="comma-separated arms (default: all of the model's)"),
        p.add_argument("--workers", type=int, default=None,
                       help="jobs at a time, each in a fresh process (default 2; 0: one by one in this process, "
                            "the default with --quick, whose torchft job runs last)"),
        p.add_argument("--steps", type=int, default=None, help="steps per replica (default: the model's)"),
        p.add_argument("--outer", default=None, help="outer lr,momentum for every model (default: per model, %s)" % OUTER),
        p.add_argument("--warmup", type=int, default=None, help=f"synchronous steps first (default {WARMUP_FRACTION * 100:g}%% of the steps)"),
        p.add_argument("--tau", type=int, default=TAU, help=f"edit_overlap's tau (default {TAU})")))
    try:
        import torchft  # noqa: F401
        skip: set[str] = set()
    except ImportError:
        skip = {"torchft_diloco", "torchft_streaming"}
    sizes = {m: dict(v) for m, v in (QUICK if args.quick else FULL).items()}
    if args.steps:
        for v in sizes.values():
            v["steps"] = args.steps
    models = [m for m in sizes if not args.only or m in args.only]
    jobs = []
    for model in models:
        arms = args.arms.split(",") if args.arms else (QUICK_ARMS if args.quick else ARMS_1M if model == "tiny-1m" else ARMS_20M)
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else sizes[model]["seeds"]
        for seed in seeds:
            for arm in [a for a in arms if a not in skip]:
                outer = tuple(float(x) for x in args.outer.split(",")) if args.outer else OUTER[model]
                jobs.append((arm, arm_config(arm, model, sizes[model], seed, args.quick, outer, args.warmup, args.tau), sizes[model]["evals"]))
    outer_shown = args.outer or {m: OUTER[m] for m in models}
    report = Report("edit_quality", args.quick, {"H": 4 if args.quick else H, "tau": args.tau,
                                                 "outer": outer_shown, "torchft_fragments": FRAGMENTS,
                                                 "torchft_fragment_sync_delay": STREAMING_DELAY, "sizes": sizes,
                                                 "jobs": [(a, c["model"], c["run"]["seed"]) for a, c, _ in jobs]})
    if skip:
        report.note("torchft not installed (pip install torchft==0.2.0): its arms were skipped")
    started = time.perf_counter()
    # longest first: tiny-20m jobs, then the rest in order
    jobs.sort(key=lambda j: j[1]["model"] != "tiny-20m")
    results: list[dict] = []

    def done(res: dict) -> None:
        results.append(res)
        print(f"{res['model']:8s} {res['arm']:18s} seed {res['seed']}  val {res['val_loss']:.4f}  "
              f"{res['seconds']:6.1f} s  ({time.perf_counter() - started:6.0f} s in)", flush=True)
    workers = args.workers if args.workers is not None else (0 if args.quick else 2)
    if workers == 0:
        for job in jobs:
            done(run_job(*job))
    else:
        # a fresh process per job: torchft leaves threads running after its jobs (its timeout
        # manager's watchdog and event loop), which took GIL time from every later job in the same
        # process (a third of py-spy's samples in one) and so moved A-EDiT's time-based windows
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                    max_tasks_per_child=1) as pool:
            for fut in cf.as_completed([pool.submit(run_job, *job) for job in jobs]):
                done(fut.result())
    out_dir = report.out.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    for model in models:
        runs: dict[str, list[dict]] = {}
        for res in sorted(results, key=lambda r: r["seed"]):
            if res["model"] == model:
                runs.setdefault(res["arm"], []).append(res)
        for arm, lst in runs.items():
            report.arm(f"{arm}@{model}", val_loss=spread([r["val_loss"] for r in lst]),
                       val_loss_seeds=[round(r["val_loss"], 4) for r in lst], seeds=[r["seed"] for r in lst],
                       tokens=lst[0]["tokens"], seconds=spread([r["seconds"] for r in lst]),
                       syncs=lst[0]["syncs"], outliers=[r["outliers"] for r in lst],
                       outer_bytes_per_rank=lst[0]["outer_bytes_per_rank"], extra_state_bytes=lst[0]["extra_state_bytes"],
                       steps_per_replica=lst[0]["steps_per_replica"],
                       curve_seed0=[[t, round(v, 4)] for t, v in lst[0]["curve"]],
                       curves=[[[t, round(v, 4)] for t, v in r["curve"]] for r in lst])   # per seed, to redraw
        png = out_dir / f"edit_quality_{model}.png"
        plot(model, runs, png)
        report.note(f"{model}: loss-vs-tokens curves in {png.name}")
        if "ddp" not in runs:
            continue

        def ratio(arm: str) -> tuple[float | None, dict | None]:
            """Mean over seeds of the arm's validation loss over DDP's (same seed), and the spread."""
            pairs = {r["seed"]: r["val_loss"] for r in runs.get("ddp", [])}
            vals = [r["val_loss"] / pairs[r["seed"]] for r in runs.get(arm, []) if r["seed"] in pairs]
            return (statistics.mean(vals), spread(vals)) if vals else (None, None)
        for arm in runs:
            if arm != "ddp":
                value, sp = ratio(arm)
                report.arm(f"{arm}@{model}", val_loss_over_ddp=sp)
        goals = {"edit": 1.02, "aedit": 1.02, "edit_overlap": 1.03, "edit_stream": 1.03, "edit_fp16": 1.03,
                 "edit_int8": 1.03}
        for arm, goal in goals.items():
            if arm in runs:
                value, sp = ratio(arm)
                report.target(f"{arm}_loss_{model}", value, "<=", goal,
                              f"{arm} validation loss over DDP's at equal tokens, {model}, mean over "
                              f"{sp['n']} seed(s) (spread {sp['min']:.3f}-{sp['max']:.3f})")
        if "edit_fp16" in runs and "edit_int8" in runs:
            fp16 = {r["seed"]: r for r in runs["edit_fp16"]}
            pairs = [(r, fp16[r["seed"]]) for r in runs["edit_int8"] if r["seed"] in fp16]
            if pairs:
                report.target(f"int8_loss_vs_fp16_{model}", statistics.mean(a["val_loss"] / b["val_loss"] for a, b in pairs),
                              "<=", 1.01, f"int8 (error feedback) validation loss over fp16's, {model}, mean over seeds")
                report.target(f"int8_bytes_vs_fp16_{model}", pairs[0][0]["outer_bytes_per_rank"] / pairs[0][1]["outer_bytes_per_rank"],
                              "<=", 0.505, "pseudo-gradient bytes on the wire, int8 over fp16 (raystack.comm count; int8 "
                              f"carries one fp32 scale per 1024 elements, so half is {0.5 * (1 + 4 / 1024):.4f})")
    report.note("replicas as threads of one process over an in-process comm (no network model: loss does not "
                f"depend on it), {workers or 1} job(s) at a time; every arm trains replicas x steps x batch tokens")
    h = 4 if args.quick else H
    warm = {c["model"]: c["sync"]["warmup_steps"] for _, c, _ in jobs}
    report.note(f"every local-SGD arm: outer Nesterov (lr, momentum) = {outer_shown}, the first "
                f"{', '.join(f'{n} ({m})' for m, n in warm.items())} steps synchronous "
                "(torchft's arms: none), inner AdamW with a linear ramp and a cosine decay to 10%; the outer optimizer "
                "and the warm-up were chosen on seeds that are not the benchmark's (tiny-1m: 10-12 at 1,000 steps; "
                "tiny-20m: 10 and 11 at 500 steps)")
    stream = stream_sync(h)
    report.note(f"H = {h}; edit_overlap applies each block's outer update {min(args.tau, h - 1)} inner steps after its "
                f"sync; edit_stream syncs {stream['fragments']} staggered fragments of blocks, one every "
                f"{h // stream['fragments']} steps, each applied {stream['overlap_steps']} steps after its sync (its curve's "
                f"points mix synced and unsynced fragments; its final figure is after a sync of every block); torchft_streaming: {FRAGMENTS} fragments, fragment_sync_delay "
                f"{min(STREAMING_DELAY, h // FRAGMENTS - 1)}; torchft "
                "arms have no synchronous warm-up (torchft has none) and are evaluated on their global parameters")
    corpora = sorted({r["corpus"] for r in results})
    report.note(f"corpus (content key of the tokenized standard-library sources of this interpreter): "
                f"{', '.join(corpora)}; runs on another key, or another torch_cpu_capability in `machine`, "
                "train on other bytes or kernels and are not paired with these")
    report.note(f"whole run {time.perf_counter() - started:.0f} s on this machine")
    report.write()


if __name__ == "__main__":
    main()
