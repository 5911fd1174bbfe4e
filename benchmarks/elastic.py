"""Elastic DLRM benchmark: real mechanics on a local Ray cluster, the model's error, a job trace.

(a) mechanics (real actors, real kills, real DLRM on generated Criteo-like data): recovery
    time from a worker kill to the replacement's first committed batch; exactly-once audit;
    epoch time with one 3x-slow worker over the normal epoch; time to resize 2 -> 4 -> 2
    workers, beside Ray Train v2's TorchTrainer doing the same resize (a restart of the whole
    group from the latest checkpoint at the new size, which is what its elastic resize does);
(b) the resource-performance model's error on held-out configurations (simulated curves);
(c) a simulated trace of jobs on a simulated 16-node cluster: static 2x / 0.5x user configs,
    the three-stage policy, and an oracle.

``--only model,trace`` (any of model, trace, cluster) runs just those parts, e.g. the pure
computation ``--only trace`` in seconds. A partial run writes
``benchmarks/results/elastic_<parts>.json`` (and its plots under that name) unless ``--out``
says otherwise, so it never replaces the full run's ``elastic.json``.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from benchmarks.common import RESULTS_DIR, Report, default_out, parse_args  # noqa: E402



def job_cfg(work: Path, name: str, rows: int, **over):
    from raystack.config import load_config
    from raystack.elastic.config import ElasticConfig

    d = {"name": name, "work_dir": str(work / "work"), "poll_s": 0.3,
         "data": {"generate_rows": rows, "generate_files": 4, "out_dir": str(work / "data"),
                  "rows_per_shard": 2048},
         "resources": {"autoscale": False}, "faults": {"checkpoint_every_s": 1.0}}
    for k, v in over.items():
        d.setdefault(k, {}).update(v)
    return load_config(ElasticConfig, d)


def run_job(cfg, on_step=None):
    from raystack.actors.elastic import ElasticController

    ctl = ElasticController(cfg)
    try:
        return ctl.run(on_step=on_step), ctl
    finally:
        ctl.shutdown()


def bench_recovery(work: Path, kills: int, rows: int, clean_runs: int = 2) -> dict:
    """``kills`` worker kills in one epoch, and the same job without faults for the AUC."""
    import ray

    done = []

    def killer(ctl):
        # Kill by progress, not by the clock: the k-th kill once k/(kills+2) of the rows are
        # committed, so every kill lands within the epoch however fast this machine trains.
        p = ctl.loop.last_poll
        if p is None or len(done) >= kills or p.rows_done < (len(done) + 1) * p.rows_total / (kills + 2):
            return
        uid = sorted(u for u in ctl.backend.units if u.startswith("worker"))[len(done) % 2]
        ray.kill(ctl.backend.actors[uid])
        done.append(uid)

    # Fault-free runs: asynchronous PS training differs from run to run by itself (the order
    # in which two workers' pushes land); two runs show that spread beside the kills' effect.
    clean = [run_job(job_cfg(work, f"bench-clean{i}", rows))[0] for i in range(clean_runs)]
    res, ctl = run_job(job_cfg(work, "bench-kill", rows), killer)
    clean_auc = [c.auc for c in clean]
    rec = sorted(res.recoveries_s)
    return {"kills": len(done), "recoveries_s": [round(x, 2) for x in rec],
            "p50_s": float(np.percentile(rec, 50)) if rec else None,
            "p95_s": float(np.percentile(rec, 95)) if rec else None,
            "lost": res.lost, "duplicated": res.duplicated, "auc": res.auc,
            "auc_fault_free": clean_auc, "auc_delta": abs(res.auc - float(np.mean(clean_auc))),
            "auc_fault_free_spread": max(clean_auc) - min(clean_auc),
            "seconds": res.seconds, "seconds_fault_free": [c.seconds for c in clean]}


def bench_straggler(work: Path, rows: int, reps: int) -> dict:
    """Epoch time: normal, one 3x-slow worker (detected and drained), and the same without
    detection (dynamic sharding alone); interleaved, same data and budget."""
    normal, slow, nodetect, drained = [], [], [], []
    slow_faults = {"slow_workers": {"worker-0": 3.0}, "straggler_min_rows": 2000}
    for i in range(reps):
        normal.append(run_job(job_cfg(work, f"bench-normal{i}", rows))[0].seconds)
        r, _ = run_job(job_cfg(work, f"bench-slow{i}", rows, faults=slow_faults))
        slow.append(r.seconds)
        drained.append(any("straggler" in e for e in r.events))
        r, _ = run_job(job_cfg(work, f"bench-nodetect{i}", rows,
                               faults={**slow_faults, "straggler_factor": 1e9}))
        nodetect.append(r.seconds)
    return {"normal_s": normal, "slow_s": slow, "slow_without_detection_s": nodetect,
            "drained": drained, "ratio": float(np.median(slow) / np.median(normal)),
            "ratio_without_detection": float(np.median(nodetect) / np.median(normal))}


def bench_resize(work: Path, rows: int, min_rows: int = 100_000) -> dict:
    """Our controller: 2 -> 4 workers (until both new ones commit a batch) and back to 2; the
    job has at least ``min_rows`` rows, so shards are left for the new workers."""
    import ray

    out: dict = {}

    def resizer(ctl):
        if "up_s" in out or ray.get(ctl.backend.ss.stats.remote()).rows_done < 1500:
            return
        loop, ss = ctl.loop, ctl.backend.ss
        t0 = time.time()
        plan = loop.apply_plan(loop.plan_to(loop.config.with_(workers=4), "bench: up"), t0)
        new = [ctl.backend.worker_id(u.unit_id) for u in plan.launch]
        deadline = t0 + 120
        while any(ray.get(ss.first_commit_time.remote(w)) is None for w in new):
            if time.time() > deadline:  # no shard left for them: report the failure, go on
                out["up_timed_out"] = True
                break
            time.sleep(0.02)
        out["up_s"] = time.time() - t0
        t1 = time.time()
        loop.apply_plan(loop.plan_to(loop.config.with_(workers=2), "bench: down"), t1)
        out["down_s"] = time.time() - t1

    res, _ = run_job(job_cfg(work, "bench-resize", max(rows, min_rows), data={"rows_per_shard": 512}), resizer)
    out["resize_s"] = out.get("up_s", np.nan) + out.get("down_s", np.nan)
    out["lost"], out["duplicated"] = res.lost, res.duplicated
    return out


def _train_func(config):
    import torch
    import ray.train as rt

    from raystack.elastic.dlrm import DLRMDense, DLRMSpec

    torch.set_num_threads(1)
    model = DLRMDense(DLRMSpec())
    if config.get("ckpt"):  # the resize restarts every worker from the latest checkpoint
        model.load_state_dict(torch.load(Path(config["ckpt"]) / "model.pt"))
    opt = torch.optim.Adagrad(model.parameters(), lr=0.01)
    x, e = torch.randn(512, 13), torch.randn(512, 26, 16)
    for _ in range(config["steps"]):
        loss = model(x, e).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with tempfile.TemporaryDirectory() as d:
        if rt.get_context().get_world_rank() == 0:
            torch.save(model.state_dict(), Path(d) / "model.pt")
        rt.report({"loss": float(loss)}, checkpoint=rt.Checkpoint.from_directory(d))


def bench_ray_train(work: Path) -> dict:
    """Ray Train v2: a resize is a restart of the whole worker group from the checkpoint."""
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    def fit(n: int, ckpt, name: str):
        t0 = time.time()
        tr = TorchTrainer(_train_func, train_loop_config={"steps": 1,
                                                          "ckpt": ckpt.path if ckpt else None},
                          scaling_config=ScalingConfig(num_workers=n,
                                                       resources_per_worker={"CPU": 0.25}),
                          run_config=RunConfig(name=name, storage_path=str(work / "raytrain")))
        res = tr.fit()
        return time.time() - t0, res.checkpoint

    _, ck = fit(2, None, "rt-initial")
    up, ck = fit(4, ck, "rt-up")
    down, _ = fit(2, ck, "rt-down")
    return {"up_s": up, "down_s": down, "resize_s": up + down}


def bench_model(n_jobs: int) -> dict:
    """NNLS model fitted on 12 noisy profiled configs per job, scored on 12 held-out ones."""
    from raystack.elastic.perfmodel import PerfModel, mape
    from raystack.elastic.planner import ThreeStagePlanner
    from raystack.elastic.simulate import job_budget, make_trace, true_thr
    from raystack.elastic.perfmodel import JobConfig

    rng = np.random.default_rng(7)
    errs = []
    for job in make_trace(n_jobs, seed=11):
        grid = ThreeStagePlanner(job_budget(), 1).candidates(JobConfig(1, 1))
        idx = rng.choice(len(grid), 24, replace=False)
        pts = [(grid[i], true_thr(job, grid[i]) * rng.normal(1, 0.03)) for i in idx]
        held = [(c, true_thr(job, c)) for c, _ in pts[12:]]
        errs.append(mape(PerfModel(job.batch).fit(pts[:12]), held))
    return {"jobs": n_jobs, "mape_mean": float(np.mean(errs)), "mape_p90": float(np.percentile(errs, 90))}


def bench_trace(n_jobs: int, seed: int = 0) -> dict:
    from raystack.elastic.simulate import SimCluster, make_trace, simulate_all

    return simulate_all(make_trace(n_jobs, seed=seed), cluster=SimCluster())


def trace_ratios(trace: dict) -> dict:
    """The trace targets' figures. JCT means are over each policy's completed jobs (the
    target); ``jct_paired`` compares the same jobs (those both policies completed), which a
    policy that loses jobs to OOM cannot flatter."""
    ts, so, su = trace["three_stage"], trace["static_over"], trace["static_under"]
    both = [j for j, a, b in zip(so["job_ids"], so["jct_by_job"], ts["jct_by_job"])
            if a is not None and b is not None]
    by = {p: dict(zip(s["job_ids"], s["jct_by_job"])) for p, s in trace.items()}
    mean = lambda p: float(np.mean([by[p][j] for j in both])) if both else float("nan")  # noqa
    return {"jct": ts["jct_mean_s"] / so["jct_mean_s"],
            "jct_paired": mean("three_stage") / mean("static_over"),
            "oracle_jct": trace["oracle"]["jct_mean_s"] / so["jct_mean_s"],
            "gain_pts": 100 * (ts["completion_rate"] - max(so["completion_rate"],
                                                          su["completion_rate"])),
            "cpu": ts["cpu_util"] / so["cpu_util"], "mem": ts["mem_util"] / so["mem_util"],
            "ps_mem": ts["ps_mem_util"] / so["ps_mem_util"],
            "oracle_mem": trace["oracle"]["mem_util"] / so["mem_util"],
            "three_stage_oom": ts["oom"]}


TRACE_NOTE = (
    "(c) is simulated: 16 virtual nodes x 32 CPUs x 128 GB; {jobs} jobs, Poisson arrivals "
    "(mean gap 150 s), hidden step-time curves (model terms + an unmodelled w^1.5/p term), "
    "3% throughput noise per tick, 40% of jobs with PS memory growing 1.5-4x; tick 30 s. Every "
    "job runs the real controller loop (ElasticLoop, the class the Ray controller steps) over a "
    "simulated backend: it polls every tick, asks its planner every tick, waits 30 s after a "
    "change before measuring and measures throughput over 60 s; static and oracle configs are "
    "fixed planners. Change costs as in our controller: a change touching a PS (count, CPU, "
    "memory: state copy) pauses the job 30 s; added workers start training after 30 s while the "
    "others go on; removing workers is free. Every worker and PS is its own placement group: new "
    "workers are placed one by one (as many as fit), a PS set all or nothing. Each tick: progress, "
    "then every running job's loop (finished and failed jobs first, then the job closest to its "
    "PS memory limit first), then waiting jobs start (FIFO with backfill). Memory per unit: "
    "static users ask 2x / 1.5x what a unit uses (PS: the initial need; workers: their steady "
    "2 GB), the three-stage policy asks the workers' use x 1.2 and sizes PS memory itself, the "
    "oracle asks exact peaks; used memory counts up to each unit's need; ps_mem_util is the PS "
    "part alone.")


def plots(trace: dict, out: Path = RESULTS_DIR / "elastic.json") -> list[str]:
    """The JCT and utilisation plots, next to the results file ``out``, named after it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    for p, s in trace.items():
        j = np.sort(np.array(s["jcts_s"]) / 3600)
        ax.step(j, np.arange(1, len(j) + 1) / s["jobs"], where="post",
                label=f"{p} ({s['completion_rate']:.0%} done)")
    ax.set_xlabel("job completion time (h)")
    ax.set_ylabel("fraction of jobs completed")
    ax.set_title("Simulated trace: JCT distribution")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out.parent / f"{out.stem}_jct.png")
    plt.close(fig)
    names.append(f"{out.stem}_jct.png")
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
    xs = np.arange(len(trace))
    ax.bar(xs - 0.2, [s["cpu_util"] for s in trace.values()], 0.4, label="CPU used/allocated")
    ax.bar(xs + 0.2, [s["mem_util"] for s in trace.values()], 0.4, label="memory used/allocated")
    ax.set_xticks(xs, list(trace), fontsize=8)
    ax.set_title("Simulated trace: utilisation")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out.parent / f"{out.stem}_util.png")
    plt.close(fig)
    names.append(f"{out.stem}_util.png")
    return names


PARTS = ("model", "trace", "cluster")


def main() -> int:
    args = parse_args(__doc__.splitlines()[0], extra=lambda p: p.add_argument(
        "--only", default=",".join(PARTS),
        help="comma-separated parts to run: model, trace, cluster (default: all); a partial "
             "run writes benchmarks/results/elastic_<parts>.json unless --out is given"))
    parts = [x.strip() for x in args.only.split(",") if x.strip()]
    bad = [x for x in parts if x not in PARTS]
    if bad or not parts:
        sys.exit(f"--only: unknown part(s) {bad or parts}; choose from {', '.join(PARTS)}")
    partial = set(parts) != set(PARTS)
    name = "elastic_" + "_".join(x for x in PARTS if x in parts) if partial else "elastic"
    q = args.quick
    cfg = {"kills": 2 if q else 10, "kill_rows": 24_000 if q else 240_000, "clean_runs": 1 if q else 2,
           "job_rows": 24_000 if q else 32_000,
           "resize_min_rows": 100_000, "straggler_rows": 128_000, "straggler_reps": 0 if q else 3,
           "trace_jobs": 20 if q else 60, "trace_seeds_extra": [] if q else [1, 2, 3, 4],
           "model_jobs": 20 if q else 50, "ray_train": not q, "parts": parts}
    rep = Report("elastic", q, cfg, args.out or (str(default_out(name, q)) if partial else None))
    if partial:
        rep.note(f"partial run: only {', '.join(parts)} (the full run writes elastic.json).")

    if "model" in parts:
        rep.note("(b) scores the NNLS model on the simulated curves of (c)'s trace generator.")
        print("(b) model error ...", flush=True)
        model = bench_model(cfg["model_jobs"])
        rep.arm("perf_model", **model)
        rep.target("model_heldout_mape", model["mape_mean"], "<=", 0.10,
                   "mean abs. % error of predicted throughput on held-out configs (simulated curves)")

    if "trace" in parts:
        run_trace(rep, cfg)

    if "cluster" in parts:
        run_cluster(rep, cfg, Path(tempfile.mkdtemp(prefix="raystack-elastic-bench-")))
    rep.write()
    return 0


def run_trace(rep: Report, cfg: dict) -> None:
    rep.note(TRACE_NOTE.format(jobs=cfg["trace_jobs"]))
    print("(c) trace simulation ...", flush=True)
    trace = bench_trace(cfg["trace_jobs"])
    for p, s in trace.items():
        rep.arm(f"trace_{p}", **s)
    r = trace_ratios(trace)
    rep.arm("trace_ratios", **r)
    rep.target("trace_jct_vs_static_over", r["jct"], "<=", 0.7,
               "mean JCT, three-stage / static 2x over-provisioned (completed jobs)")
    rep.target("trace_completion_gain_pts", r["gain_pts"], ">=", 5,
               "completion rate, three-stage minus the better static config (points)")
    rep.target("trace_cpu_util_vs_static_over", r["cpu"], ">=", 1.3,
               "CPU used/allocated, three-stage over static 2x")
    rep.target("trace_mem_util_vs_static_over", r["mem"], ">=", 1.3,
               "memory used/allocated, three-stage over static 2x")
    if cfg["trace_seeds_extra"]:  # the same figures on other traces: how much is this one's luck
        print(f"(c) trace simulation, seeds {cfg['trace_seeds_extra']} ...", flush=True)
        other = {seed: trace_ratios(bench_trace(cfg["trace_jobs"], seed))
                 for seed in cfg["trace_seeds_extra"]}
        rep.arm("trace_other_seeds", **{f"seed_{k}": v for k, v in other.items()})
        allr = [r, *other.values()]
        rep.note("(c) on seeds 0-%d (seed 0 is the target's): JCT ratio %s, paired %s; "
                 "memory ratio %s (PS memory %s); CPU ratio %s; completion gain %s pts." % (
                     max(cfg["trace_seeds_extra"]),
                     *(", ".join(f"{x[k]:.2f}" if k != "gain_pts" else f"{x[k]:.0f}"
                                 for x in allr)
                       for k in ("jct", "jct_paired", "mem", "ps_mem", "cpu", "gain_pts"))))
    rep.config["plots"] = plots(trace, rep.out)


def run_cluster(rep: Report, cfg: dict, work: Path) -> None:
    rep.note("(a) runs on the real local Ray cluster (2 cores): DLRM (26 tables x 1000 x 16, "
             "MLPs 64) on generated Criteo-like Parquet, 1 PS, 2 workers of 0.25 logical CPU.")
    from raystack.cluster import connect
    connect(num_cpus=4, dashboard=False, log_to_driver=False)
    print("(a) recovery from worker kills ...", flush=True)
    rec = bench_recovery(work, cfg["kills"], cfg["kill_rows"], cfg["clean_runs"])
    rep.arm("recovery", **rec)
    rep.target("lost_samples", rec["lost"], "==", 0, f"samples never trained, {rec['kills']} worker kills")
    rep.target("duplicated_samples", rec["duplicated"], "==", 0,
               f"samples trained twice, {rec['kills']} worker kills")
    rep.target("recovery_p95_s", rec["p95_s"], "<=", 10.0,
               "kill -> replacement's first committed batch, p95 (s)")
    rep.target("kill_auc_delta", rec["auc_delta"], "<=", 0.005,
               f"|AUC after {rec['kills']} worker kills - mean AUC of {len(rec['auc_fault_free'])} "
               f"fault-free run(s) of the same job| (fault-free runs differ by "
               f"{rec['auc_fault_free_spread']:.4f})")
    if cfg["straggler_reps"]:
        print("(a) straggler ...", flush=True)
        st = bench_straggler(work, cfg["straggler_rows"], cfg["straggler_reps"])
        rep.arm("straggler", **st)
        rep.target("straggler_epoch_ratio", st["ratio"], "<=", 1.25,
                   "epoch time with one 3x-slow worker / normal epoch (medians)")
    print("(a) resize 2 -> 4 -> 2 ...", flush=True)
    ours = bench_resize(work, cfg["job_rows"], cfg["resize_min_rows"])
    rep.arm("resize_raystack", **ours)
    if cfg["ray_train"]:
        print("(a) Ray Train v2 resize ...", flush=True)
        rt = bench_ray_train(work)
        rep.arm("resize_ray_train_v2", **rt)
        rep.target("resize_speedup_vs_ray_train", rt["resize_s"] / ours["resize_s"], ">=", 5.0,
                   "time to resize 2->4->2 workers, Ray Train v2 restart / raystack")
    else:
        rep.note("--quick skips the straggler arm and Ray Train's resize (see the full run); quick sizes: "
                 f"{cfg['kill_rows']:,}-row kill job, {cfg['resize_min_rows']:,}-row resize job, "
                 f"{cfg['trace_jobs']} trace jobs.")


if __name__ == "__main__":
    sys.exit(main())
