"""Workflow (Couler) benchmark: raystack workflows beside the same work as plain Ray tasks.

Arms: cold vs warm (cached) re-run; per-step scheduling overhead on a 1,000-step DAG against
hand-written Ray tasks; fan-out speedup; a 10,000-step workflow split across runner actors;
Tune trial throughput (reuse_actors on/off); ASHA vs FIFO iterations on a seeded objective;
Couler-score vs LRU eviction on a replayed (simulated) cache trace; the cache's code keys on a
replayed multi-run trace with code edits; the NL planner's structural match, executable match
(the plan runs at tiny sizes) and silently-wrong rate on its development sets (nl_dev*.yaml) and, when
present, on the held-out sets benchmarks/data/nl_heldout*.yaml (scored once each). `--quick`
shrinks every size and checks part steps (EDiT, mLoRA, Serve, elastic) by validation only.
"""

from __future__ import annotations

import math
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import Report, parse_args  # noqa: E402

os.environ.setdefault("OMP_NUM_THREADS", "1")


# -- step functions (shipped by value to workers) ---------------------------------------------
def burn(n: int, seed: int = 0, inputs: list | None = None) -> float:
    """CPU-bound pure-Python work, about n loop iterations."""
    s = seed + int(sum(inputs or []) % 1000)
    for i in range(n):
        s = (s * 1103515245 + 12345 + i) % 2147483648
    return float(s % 1000)


def tiny(i: int, inputs: list | None = None) -> int:
    """A trivial step (pure scheduling cost)."""
    return i + len(inputs or [])


def quadratic(x: float, y: float) -> dict:
    return {"score": -((x - 0.3) ** 2) - (y + 0.2) ** 2}


def seeded_curve(seed: int, iterations: int = 27):
    """A seeded learning curve: level and speed drawn from the seed."""
    rng = random.Random(seed)
    level = rng.random()
    tau = rng.uniform(1.0, 6.0)
    for i in range(1, iterations + 1):
        yield {"score": level * (1.0 - math.exp(-i / tau))}


def _median(xs):
    return statistics.median(xs)


def layered_dag(wf_mod, n: int, width: int, fn, seed: int = 0):
    """A workflow of n steps in layers of `width`, each step reading 1-2 steps of the layer above."""
    rng = random.Random(seed)
    wf = wf_mod.Workflow(f"dag{n}")
    layers, prev, made = [], [], 0
    while made < n:
        cur = []
        for j in range(min(width, n - made)):
            ins = [prev[k] for k in sorted({rng.randrange(len(prev)) for _ in range(2)})] if prev else []
            cur.append(wf.step(fn, id=f"s{made}", i=made, inputs=ins))
            made += 1
        layers.append(cur)
        prev = cur
    return wf


def plain_ray_dag(ir, fn):
    """The same DAG as hand-written Ray tasks (ObjectRefs as arguments)."""
    import ray

    @ray.remote
    def task(i, *inputs):
        return fn(i, list(inputs))
    refs = {}
    for s in ir.steps:
        deps = [refs[r["$ref"] if isinstance(r, dict) else r.step] for r in s.params.get("inputs", [])]
        refs[s.id] = task.remote(s.params["i"], *deps)
    ray.get(list(refs.values()))


# --quick scores the first prompts of the first set of each kind (dev, held-out), not every set
QUICK_PLAN_PROMPTS = 12
QUICK_REFUSE_PROMPTS = 3


def quick_subset(path: Path, out_dir: Path) -> Path:
    """The first QUICK_PLAN_PROMPTS plannable and QUICK_REFUSE_PROMPTS must-refuse prompts of
    the evaluation set ``path`` (file order), written under ``out_dir`` with the set's file name
    (its conventions follow the name) and its own top-level keys."""
    import yaml

    data = yaml.safe_load(path.read_text())
    left = {"plan": QUICK_PLAN_PROMPTS, "refuse": QUICK_REFUSE_PROMPTS}
    keep = []
    for p in data["prompts"]:
        if left.get(p.get("expect"), 0) > 0:
            left[p["expect"]] -= 1
            keep.append(p)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / path.name
    out.write_text(yaml.safe_dump({**data, "prompts": keep}, sort_keys=False))
    return out


def main() -> int:
    args = parse_args(__doc__)
    q = args.quick
    import ray
    from ray import tune as rtune

    import raystack.workflow as W
    from raystack.actors.workflow.runner import run_workflow
    from raystack.actors.workflow.tune import tune
    from raystack.cluster import connect
    from raystack.workflow import ArtifactStore
    from raystack.workflow.engine import run_local
    from raystack.workflow.eviction import CoulerPolicy, LRUPolicy, TraceAccess, replay

    cfg = {"reps": 1 if q else 3, "cold_steps": 6 if q else 16, "burn_n": 200_000 if q else 1_500_000,
           "dag_steps": 200 if q else 1000, "big_steps": 400 if q else 10000,
           "split_budget": 150 if q else 2000, "fanout": 4 if q else 8,
           "fanout_n": 400_000 if q else 7_500_000,  # about 1 s of CPU per branch in full
           "tune_trials": 3 if q else 40, "asha_samples": 4 if q else 27,
           "asha_max_t": 6 if q else 27, "trace_len": 2000 if q else 20000,
           "code_runs": 12 if q else 40, "planner_run_parts": not q,
           "planner_prompts": QUICK_PLAN_PROMPTS if q else None}
    rep = Report("workflow", q, cfg)
    connect(dashboard=False, log_to_driver=False)  # Ray's default: one CPU per core
    tmp = Path(tempfile.mkdtemp(prefix="rs-wf-bench-"))
    t_all = time.time()

    @ray.remote
    def plain_burn(n, seed, *inputs):
        return burn(n, seed, list(inputs))

    def stage(name):
        print(f"[{time.time() - t_all:6.1f} s] {name}", flush=True)

    # warm up workers so no arm pays process start-up
    ray.get([ray.remote(lambda: 0).remote() for _ in range(8)])

    stage('cold vs warm')
    # 1. cold vs warm (cached) re-run ---------------------------------------------------------
    def cold_wf():
        wf = W.Workflow("coldwarm")
        src = wf.step(burn, id="src", n=cfg["burn_n"])
        outs = [wf.step(burn, id=f"b{i}", n=cfg["burn_n"], seed=i, inputs=[src])
                for i in range(cfg["cold_steps"] - 2)]
        wf.step(burn, id="sink", n=cfg["burn_n"], inputs=outs)
        return wf
    colds, warms, plains = [], [], []
    for r in range(cfg["reps"]):
        wf = cold_wf()
        store = ArtifactStore(str(tmp / f"cw{r}"))
        t0 = time.perf_counter()
        a = run_workflow(wf.build(), functions=wf.functions, store=store, progress=False)
        colds.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b = run_workflow(wf.build(), functions=wf.functions, store=store, progress=False)
        warms.append(time.perf_counter() - t0)
        assert a.status == b.status == "succeeded" and b.executed == []
        ir = wf.build()
        t0 = time.perf_counter()
        src = plain_burn.remote(cfg["burn_n"], 0)
        mids = [plain_burn.remote(cfg["burn_n"], i, src) for i in range(cfg["cold_steps"] - 2)]
        ray.get(plain_burn.remote(cfg["burn_n"], 0, *mids))
        plains.append(time.perf_counter() - t0)
        del ir
    rep.arm("cold_vs_warm", cold_s=_median(colds), warm_s=_median(warms), plain_ray_s=_median(plains),
            steps=cfg["cold_steps"], runs=cfg["reps"])
    rep.target("warm_rerun_fraction", _median(warms) / _median(colds), "<=", 0.05,
               "warm (all cached) re-run time / cold run time")

    stage('scheduling overhead')
    # 2. scheduling overhead per step --------------------------------------------------------
    wf = layered_dag(W, cfg["dag_steps"], 20, tiny)
    ir = wf.build()
    rs_t, rs_cache_t, plain_t = [], [], []
    for r in range(cfg["reps"]):
        t0 = time.perf_counter()
        plain_ray_dag(ir, tiny)
        plain_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out = run_workflow(ir, functions=wf.functions, store=None, progress=False)
        rs_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out2 = run_workflow(ir, functions=wf.functions, store=ArtifactStore(str(tmp / f"dag{r}")),
                            progress=False)
        rs_cache_t.append(time.perf_counter() - t0)
        assert out.status == out2.status == "succeeded"
    n = cfg["dag_steps"]
    over = (_median(rs_t) - _median(plain_t)) / n
    rep.arm("dag_overhead", steps=n, plain_ray_s=_median(plain_t), raystack_s=_median(rs_t),
            raystack_cached_cold_s=_median(rs_cache_t), per_step_ms=_median(rs_t) / n * 1e3,
            overhead_per_step_ms=over * 1e3,
            overhead_per_step_with_store_ms=(_median(rs_cache_t) - _median(plain_t)) / n * 1e3)
    rep.target("scheduling_overhead_ms_per_step", over * 1e3, "<=", 5.0,
               f"(raystack - hand-written Ray tasks) / steps on a {n}-step DAG, no store")

    stage('fan-out')
    # 3. fan-out speedup ------------------------------------------------------------------------
    def fan():
        wf = W.Workflow("fanout")
        wf.map(burn, list(range(cfg["fanout"])), over="seed", n=cfg["fanout_n"])
        return wf
    seq_t, par_t, plain_par = [], [], []

    def timed_raystack(wf):
        t0 = time.perf_counter()
        run_workflow(wf.build(), functions=wf.functions, store=None, progress=False)
        par_t.append(time.perf_counter() - t0)

    def timed_plain(wf):
        t0 = time.perf_counter()
        ray.get([plain_burn.remote(cfg["fanout_n"], i) for i in range(cfg["fanout"])])
        plain_par.append(time.perf_counter() - t0)

    # The arms interleaved, and the parallel arms take turns running first after the sequential
    # one (the first parallel run after it was measured ~5% slower, whichever arm it was).
    for r in range(max(2, cfg["reps"] + cfg["reps"] % 2)):
        wf = fan()
        t0 = time.perf_counter()
        run_local(wf.build(), wf.functions)
        seq_t.append(time.perf_counter() - t0)
        for arm in ((timed_raystack, timed_plain) if r % 2 == 0 else (timed_plain, timed_raystack)):
            arm(wf)
    rep.arm("fanout", branches=cfg["fanout"], sequential_s=_median(seq_t), raystack_s=_median(par_t),
            plain_ray_parallel_s=_median(plain_par), cores=os.cpu_count(),
            plain_ray_speedup=_median(seq_t) / _median(plain_par), step_cpu_s=_median(seq_t) / cfg["fanout"],
            runs=len(seq_t), load_average_1min=os.getloadavg()[0])
    rep.target("fanout_speedup", _median(seq_t) / _median(par_t), ">=", 1.8,
               f"{cfg['fanout']}-way map vs the same steps one after another, {os.cpu_count()} cores")

    stage('split large')
    # 4. a very large workflow, split -----------------------------------------------------------
    big = layered_dag(W, cfg["big_steps"], 50, tiny, seed=1)
    bir = big.build()
    t0 = time.perf_counter()
    out = run_workflow(bir, functions=big.functions, store=None, progress=False,
                       split_budget=cfg["split_budget"], max_runners=4)
    big_s = time.perf_counter() - t0
    complete = out.status == "succeeded" and len(out.results) == cfg["big_steps"]
    rep.arm("split_large", steps=cfg["big_steps"], budget=cfg["split_budget"], seconds=big_s,
            completed=complete, steps_done=len(out.results))
    rep.target("large_workflow_completes", float(complete), "==", 1.0,
               f"{cfg['big_steps']}-step workflow split into parts of <= {cfg['split_budget']}")

    stage('tune throughput')
    # 5. Tune throughput -------------------------------------------------------------------------
    space = {"x": rtune.uniform(-1, 1), "y": rtune.uniform(-1, 1)}
    thr = {}
    for reuse in (True, False):
        r5 = tune(quadratic, space, "score", scheduler="fifo", num_samples=cfg["tune_trials"],
                  resources={"cpu": 0.5}, reuse_actors=reuse, seed=0, trial_logs=False,
                  storage_path=str(tmp / "tune"))
        thr[reuse] = r5.trials / r5.seconds
    rep.arm("tune_throughput", trials=cfg["tune_trials"], trials_per_s_reuse=thr[True],
            trials_per_s_no_reuse=thr[False])
    rep.target("tune_trials_per_s", thr[True], ">=", 1.5, "cheap objective, reuse_actors=True")

    stage('asha vs fifo')
    # 6. ASHA vs FIFO -----------------------------------------------------------------------------
    space = {"seed": rtune.randint(0, 10_000)}
    res = {}
    for sched in ("fifo", "asha"):
        res[sched] = tune(seeded_curve, space, "score", scheduler=sched,
                          num_samples=cfg["asha_samples"], max_iterations=cfg["asha_max_t"],
                          resources={"cpu": 0.5}, seed=7, fixed={"iterations": cfg["asha_max_t"]},
                          trial_logs=False, storage_path=str(tmp / "tune"))
    saved = 1.0 - res["asha"].iterations / res["fifo"].iterations
    same_best = res["asha"].best_metric >= res["fifo"].best_metric - 1e-9
    rep.arm("asha_vs_fifo", fifo_iterations=res["fifo"].iterations, asha_iterations=res["asha"].iterations,
            fifo_best=res["fifo"].best_metric, asha_best=res["asha"].best_metric,
            asha_reached_fifo_best=same_best)
    rep.target("asha_iteration_saving", saved if same_best else 0.0, ">=", 0.40,
               "1 - ASHA/FIFO training iterations, counted only if ASHA reaches FIFO's best score")

    stage('eviction replay')
    # 7. eviction: Couler score vs LRU on a replayed (simulated) trace ------------------------------
    rng = random.Random(3)
    steps = [(rng.lognormvariate(10, 1.5), rng.lognormvariate(0, 1.2), rng.randint(1, 4))
             for _ in range(60)]
    version = [0] * len(steps)
    trace = []
    while len(trace) < cfg["trace_len"]:
        ch = rng.randrange(len(steps))
        for k in range(ch, min(len(steps), ch + rng.randint(1, 5))):
            version[k] += 1          # a parameter change invalidates a cone of steps
        for k, (size, cost, reuse) in enumerate(steps):
            if rng.random() < 0.6:   # each run touches part of the workflow
                trace.append(TraceAccess(f"s{k}v{version[k]}", int(size), cost, reuse))
    one_run = sum(size for size, _, _ in steps)
    ratios = {}
    for frac in (0.25, 0.5, 0.75):
        cap = int(frac * one_run)
        lru, couler = replay(trace, cap, LRUPolicy()), replay(trace, cap, CoulerPolicy())
        ratios[frac] = lru["recompute_s"] / max(couler["recompute_s"], 1e-9)
        rep.arm(f"eviction_replay_{int(frac * 100)}pct", simulated=True, trace_len=len(trace),
                capacity_bytes=cap, lru_recompute_s=lru["recompute_s"],
                couler_recompute_s=couler["recompute_s"], lru_hit_rate=lru["hit_rate"],
                couler_hit_rate=couler["hit_rate"])
    rep.target("couler_vs_lru_recompute", min(ratios.values()), ">", 1.0,
               "LRU / Couler-score recomputation seconds on a replayed trace, worst of cache "
               "sizes 25/50/75% of one run's artifacts (simulated)")
    rep.note("eviction replay is simulated: a 60-step workflow with lognormal artifact sizes "
             "(median 22 KB) and recompute costs (median 1 s) and 1-4 consumers per step; each "
             "run touches 60% of the steps in order; between runs a parameter change invalidates "
             "a cone of 1-5 steps; cache = 25/50/75% of one run's artifacts.")

    stage('code keys')
    # 8. code keys on a replayed multi-run trace with code edits ------------------------------------
    from benchmarks._workflow_codekeys import replay as code_replay
    ck = code_replay(str(tmp / "codekeys"), runs=cfg["code_runs"])
    for name, v in ck["strategies"].items():
        rep.arm(f"code_keys_{name}", **v)
    rep.arm("code_keys_trace", needed_recompute_s=ck["needed_recompute_s"], runs=ck["runs"],
            steps=ck["steps"], helpers=ck["helpers"], edits=ck["edits"], simulated_costs=True)
    tr, own, mod = (ck["strategies"][k] for k in ("transitive", "own_source", "module"))
    rep.target("code_edit_stale_hits", float(tr["stale_hits"]), "==", 0.0,
               "cache hits whose reached code had changed, transitive code keys "
               f"(own-source keys: {own['stale_hits']})")
    rep.target("code_edit_recompute_vs_needed", tr["recompute_s"] / max(ck["needed_recompute_s"], 1e-9),
               "==", 1.0, "recompute seconds with transitive keys / seconds that had to be recomputed "
               "(exactly the steps reaching an edit)")
    rep.target("code_edit_recompute_vs_module", tr["recompute_s"] / max(mod["recompute_s"], 1e-9), "<", 1.0,
               "recompute seconds, transitive keys / whole-project source keys")
    rep.note(f"code-key replay: {ck['steps']} steps over {ck['helpers']} helpers (generated source, real "
             f"fingerprints), {ck['runs']} runs, one function edited between runs; step costs simulated "
             "(lognormal, median 1 s); steps independent of each other")

    stage('nl planner')
    # 9. NL planner: dev set and (when present) the held-out set ----------------------------------
    from raystack.workflow.nl.evaluate import score_set
    from raystack.workflow.nl.rules import RulePlanner
    data = Path(__file__).resolve().parent / "data"
    def numbered(kind: str) -> list[tuple[str, Path]]:
        """nl_<kind>.yaml, nl_<kind>2.yaml, ... in number order."""
        found = [(p.stem[3:], p) for p in data.glob(f"nl_{kind}*.yaml") if re.fullmatch(rf"nl_{kind}\d*", p.stem)]
        return sorted(found, key=lambda x: int(x[0][len(kind):] or 1))
    sets = numbered("dev") + numbered("heldout")
    if not numbered("heldout"):
        rep.note("no held-out planner set in benchmarks/data: skipped (merged and scored once the planner is frozen)")
    if cfg["planner_prompts"]:
        sets = [(name, quick_subset(path, tmp / "quick-sets")) for name, path in sets if name in ("dev", "heldout")]
        rep.note(f"quick: first {QUICK_PLAN_PROMPTS} plannable and first {QUICK_REFUSE_PROMPTS} must-refuse "
                 "prompts of the first development and held-out sets (the full run scores every prompt of "
                 "every set)")
    for name, path in sets:
        sc = score_set(path, lambda t: RulePlanner().plan(t), run_parts=cfg["planner_run_parts"],
                       workdir=str(tmp / f"dry-{name}"))
        r = sc.rates()
        rep.arm(f"nl_planner_{name}", prompts=sc.prompts, structural=sc.structural,
                executable=sc.executable, executable_validated_only=sc.executable_validated,
                silently_wrong_prompts=sc.silently_wrong, refused_plannable=sc.refused_plannable,
                seconds=sc.seconds, wrong=sc.wrong, failed_runs=sc.failed_runs, **r)
        what = ("developed on this set" if name == "dev" else "another author's set, developed on"
                if name.startswith("dev") else "written by someone else, scored once")
        rep.target(f"nl_{name}_structural_match", r["structural_match"], ">=", 0.80,
                   f"plans equal to gold, refusals of must-refuse prompts ({sc.prompts} prompts; {what})")
        exec_key = "executable_match" if cfg["planner_run_parts"] else "executable_or_validated_match"
        rep.target(f"nl_{name}_executable_match", r[exec_key], ">=", 0.80,
                   "structural match and the plan ran at tiny sizes" + (
                       "" if cfg["planner_run_parts"] else " (quick: part steps validated, not run)"))
        rep.target(f"nl_{name}_silently_wrong", r["silently_wrong"], "<=", 0.03,
                   "plans returned that do not do what was asked")
    rep.note(f"whole run {time.time() - t_all:.0f} s on the embedded cluster "
             f"({int(ray.cluster_resources().get('CPU', 0))} CPUs)")
    rep.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
