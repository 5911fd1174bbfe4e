"""mLoRA benchmark: 4 adapters on one base, five ways; and mLoRA at a user's scale.

Parts (``--only base,admission,int8,fsdp``; default all; a part run alone replaces only its own
figures in the results file): ``base`` is described here; ``admission`` (memory-gated admission
on a queue of 10 jobs), ``int8`` (a quantised base) and ``fsdp`` (the pipeline against FSDP over
a simulated link) in ``benchmarks/_mlora_scale.py``.

Arms of the base part (same base, same data, same steps; every arm may use both cores as well as it can):
  (a) peft_sequential  peft adapters trained one after another in one process (2 threads)
  (b) peft_4_actors    4 Ray actors, each with its own base copy, one adapter each (1 thread each)
  (c) batchlora_1      BatchLoRA: all 4 adapters in one batch, one actor (2 threads)
  (d) lorapp_2         raystack's LoRA-aware pipeline on 2 stage actors (1 thread each)
  (e) gpipe_2          the same 2 stages, one adapter at a time (GPipe-style, micro-batched)
Plus the ideal of (d): each stage's compute alone, single-threaded, no waiting; (d) with 2
wider lanes (two adapters' rows per micro-batch: faster matmuls, more activation memory); and
(a) on 1 thread for its first two adapters, to measure how well peft scales to 2 threads here
(the ceiling of a 2-stage pipeline over (a) is about 2 / that scaling).
Also (c') 8 adapters of 1-2 rows each: BatchLoRA vs the same adapters stepped one by one.
And the real-text setting (benchmarks/_mlora_real_text.py): arms (a)-(e) again on a Qwen2-shaped
base with a trained BPE tokenizer and standard-library text records, in real tokens per second.

    python benchmarks/mlora.py [--quick] [--only PART[,PART...]]
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from common import PeakRSS, Report, parse_args  # also puts the project root on sys.path

import ray
import torch

from raystack.config import config_to_dict

ADAPTERS = ["a0", "a1", "a2", "a3"]
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]


def make_base(directory: Path, hidden: int, layers: int, inter: int, heads: int) -> str:
    """A random Llama checkpoint directory (the base every arm loads)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from raystack.data.tokenizer import ByteTokenizer

    tok = ByteTokenizer()
    cfg = LlamaConfig(vocab_size=tok.vocab_size, hidden_size=hidden, num_hidden_layers=layers, intermediate_size=inter,
                      num_attention_heads=heads, num_key_value_heads=heads, max_position_embeddings=256,
                      pad_token_id=tok.pad_id, bos_token_id=tok.bos_id, eos_token_id=tok.eos_id,
                      tie_word_embeddings=False)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(directory)
    from raystack.models.tokenizer import load_tokenizer

    load_tokenizer("tiny-1m").save_pretrained(directory)  # the byte vocabulary, as a real tokenizer
    return str(directory)


def count_params_on_meta(base: str) -> int:
    """Parameters of the saved base, counted on the meta device (no memory)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(base))
    return sum(p.numel() for p in model.parameters())


def make_data(directory: Path, n: int, seq: int) -> list[dict]:
    """One JSONL per adapter of fixed-length records (so every batch is [B, seq])."""
    import random

    out = []
    for i, name in enumerate(ADAPTERS):
        rng = random.Random(i)
        path = directory / f"{name}.jsonl"
        with path.open("w") as f:
            for _ in range(n):
                text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(seq - 1))
                f.write(json.dumps({"prompt": "", "response": text}) + "\n")
        out.append({"name": name, "path": str(path)})
    return out


def mlora_cfg(base: str, data: list[dict], out: str, steps: int, batch: int, micro: int, seq: int,
              names=ADAPTERS, max_concurrent: int = 8, lanes: int | None = None):
    from raystack.mlora.config import load_mlora_config

    return load_mlora_config({
        "base": base, "output_dir": out,
        "datasets": [dict(name=d["name"], path=d["path"]) for d in data],
        "adapters": [dict(name=n, r=8, alpha=16, lr=1e-4, target_modules=TARGETS, seed=i) for i, n in enumerate(names)],
        "tasks": [dict(adapter=n, dataset=d["name"], batch_size=batch, micro_batch_size=micro, max_steps=steps,
                       cutoff_len=seq, save_steps=10_000) for n, d in zip(names, data)],
        "pipeline": {"stages": 2, "window_steps": steps, "lanes": lanes},
        "scheduler": {"max_concurrent": max_concurrent, "memory_budget_mb": 1e6}})


@ray.remote
class BenchWorker:
    """A process for the non-pipeline arms (peft, BatchLoRA, ideal stages)."""

    def __init__(self, threads: int) -> None:
        torch.set_num_threads(threads)
        self.threads = threads

    def pid(self) -> int:
        return os.getpid()

    def set_threads(self, threads: int) -> None:
        torch.set_num_threads(threads)

    def call(self, fn, *args, **kwargs):
        """Run ``fn`` here (--quick: builds a base in this warm process instead of a fresh task's)."""
        return fn(*args, **kwargs)

    def peft_train(self, base: str, batches: dict[str, list], lr: float, out: str) -> dict:
        """Common practice: one base, adapters trained one after another with peft."""
        import peft
        import torch.nn.functional as F
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(base)
        t0 = time.perf_counter()
        done = {}
        for name, steps in batches.items():
            pm = peft.get_peft_model(model, peft.LoraConfig(r=8, lora_alpha=16, target_modules=TARGETS,
                                                            lora_dropout=0.0))
            pm.train()
            opt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=lr)
            for ids, labels in steps:
                logits = pm(input_ids=ids).logits
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
                loss.backward()
                opt.step()
                opt.zero_grad()
            pm.save_pretrained(f"{out}/{name}")
            model = pm.unload()
            done[name] = time.perf_counter() - t0
        return {"seconds": time.perf_counter() - t0, "completion": done}

    def batchlora_train(self, cfg: dict) -> dict:
        from raystack.mlora.config import load_mlora_config
        from raystack.mlora.export import save_peft
        from raystack.mlora.trainer import build_base, train_single_process

        c = load_mlora_config(cfg)
        base = build_base(c)
        t0 = time.perf_counter()
        stage, _ = train_single_process(c, base=base)
        seconds = time.perf_counter() - t0
        dirs = {n: str(save_peft(Path(c.output_dir) / "adapters" / n, c.adapter(n).spec(), stage.adapter_state(n)))
                for n in [t.adapter for t in c.tasks]}
        return {"seconds": seconds, "adapters": dirs}

    def ideal_stages(self, cfg: dict, bounds: list) -> list[float]:
        """Each stage's compute alone (this process, 1 thread): seconds per stage."""
        from raystack.data.tokenizer import ByteTokenizer
        from raystack.mlora.config import load_mlora_config
        from raystack.mlora.jobs import form_lanes, lane_step
        from raystack.mlora.stage import StageModel, load_stage_base
        from raystack.mlora.trainer import make_jobs

        c = load_mlora_config(cfg)
        # loaded as the stage actors load it: only the stage's tensors, memory-mapped
        stages = [StageModel(load_stage_base(c.base, a, b), a, b) for a, b in bounds]
        jobs = make_jobs(c)
        for st in stages:
            for name, job in jobs.items():
                st.add_adapter(c.adapter(name).spec(), job.optim)
        busy = [0.0] * len(stages)
        # the same lanes, hence the same micro-batches, as the pipeline (d) runs
        lanes = form_lanes(sorted(jobs), len(stages), c.pipeline.lanes)
        for step in range(max(j.total_steps for j in jobs.values())):
            for li, lane in enumerate(lanes):
                for mb, ids, labels in lane_step(li, step, [jobs[n] for n in lane], ByteTokenizer.pad_id):
                    x = ids
                    for i, st in enumerate(stages):
                        t = time.perf_counter()
                        x = st.forward(mb, x, labels if i == len(stages) - 1 else None)
                        busy[i] += time.perf_counter() - t
                    g = None
                    for i in reversed(range(len(stages))):
                        t = time.perf_counter()
                        g = stages[i].backward(mb, g)
                        busy[i] += time.perf_counter() - t
        return busy

    def small_adapters(self, base: str, n: int, rows: list[int], seq: int, steps: int) -> dict:
        """(c'): n adapters of 1-2 rows each, BatchLoRA vs one by one, same process."""
        from raystack.mlora.batchlora import AdapterSpec, segments_for
        from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel
        from raystack.models import build_model

        model = build_model(base)
        st = StageModel(model, 0, len(model.model.layers) + 2)
        names = [f"s{i}" for i in range(n)]
        for i, name in enumerate(names):
            st.add_adapter(AdapterSpec(name, r=8, alpha=16, target_modules=tuple(TARGETS), seed=i), OptimSpec(lr=1e-4))
        g = torch.Generator().manual_seed(0)
        data = {nm: torch.randint(0, 256, (r, seq + 1), generator=g) for nm, r in zip(names, rows)}

        def batched() -> None:
            segs = segments_for([(nm, data[nm].shape[0]) for nm in names])
            ids = torch.cat([data[nm][:, :-1] for nm in names])
            labels = torch.cat([data[nm][:, 1:] for nm in names])
            st.train_step([(MicroBatch(("b",), segs, {}, tuple(names)), ids, labels)])

        def one_by_one() -> None:
            for nm in names:
                segs = segments_for([(nm, data[nm].shape[0])])
                st.train_step([(MicroBatch((nm,), segs, {}, (nm,)), data[nm][:, :-1], data[nm][:, 1:])])

        times = {"batched": [], "one_by_one": []}
        batched(), one_by_one()  # warm up
        for _ in range(steps):
            for name, fn in (("batched", batched), ("one_by_one", one_by_one)):
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
        return {k: statistics.median(v) for k, v in times.items()}


def driver_pid() -> int:
    return os.getpid()


_POOL: list = []  # --quick: one pool of workers reused by every arm (figures are not meaningful there)
QUICK_POOL = 2  # --quick: every process imports torch and transformers (~7 s of CPU each): two workers serve all arms


def build_remote(fn, *args, **kwargs):
    """``fn`` (a base builder) in a short-lived task, so the driver never holds the model; under
    --quick on the warm pool's first worker instead (no process to start)."""
    if _POOL:
        return ray.get(_POOL[0].call.remote(fn, *args, **kwargs))
    return ray.get(ray.remote(fn).options(num_cpus=0.01).remote(*args, **kwargs))


def run_arm(name: str, workers_threads: list[int], fn) -> dict:
    if _POOL:  # --quick: an arm asking for more workers than the pool has shares them round-robin
        workers = [_POOL[i % len(_POOL)] for i in range(len(workers_threads))]
        ray.get([w.set_threads.remote(t) for w, t in zip(workers, workers_threads)])
    else:
        workers = [BenchWorker.options(num_cpus=0.01).remote(t) for t in workers_threads]
    pids = sorted(set(ray.get([w.pid.remote() for w in workers])))
    with PeakRSS([driver_pid(), *pids], alone=[driver_pid()]) as mem:
        out = fn(workers)
    if not _POOL:
        for w in workers:
            ray.kill(w)
    out["peak_memory_bytes"] = mem.peak_bytes
    return out


PARTS = ("base", "admission", "int8", "fsdp")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], extra=lambda p: p.add_argument(
        "--only", default=",".join(PARTS),
        help=f"comma-separated parts to run, of {','.join(PARTS)}; the others' figures are kept from the results file"))
    parts = [p for p in args.only.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise SystemExit(f"--only: unknown part(s) {unknown}; expected some of {list(PARTS)}")
    from raystack.cluster import connect

    from _mlora_scale import ScaleBench, run_admission, run_fsdp, run_int8

    root = str(Path(__file__).resolve().parent.parent)  # actors import the project too
    os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    connect(num_cpus=8, dashboard=False, log_to_driver=False)
    tmp = Path(tempfile.mkdtemp(prefix="mlora_bench_"))
    ctx = ScaleBench(args.quick, tmp, make_base, mlora_cfg, make_data, driver_pid())
    runners = {"base": lambda: run_base(args.quick, tmp, ctx), "admission": lambda: run_admission(ctx),
               "int8": lambda: run_int8(ctx), "fsdp": lambda: run_fsdp(ctx)}
    reports, seconds = {}, {}
    for part in PARTS:
        if part in parts:
            print(f"=== {part}", flush=True)
            t0 = time.perf_counter()
            reports[part] = runners[part]()
            seconds[part] = round(time.perf_counter() - t0, 1)
    if ctx.pipe is not None:  # --quick, base run without admission: nobody took its stage actors
        ctx.pipe.shutdown()
    write_merged(reports, seconds, args.quick)
    shutil.rmtree(tmp, ignore_errors=True)


def write_merged(reports: dict[str, Report], seconds: dict[str, float], quick: bool) -> None:
    """One results file for all parts: the parts run now replace their own figures; the others'
    are kept from the file (when it holds a run of the same kind, full or quick)."""
    merged = Report("mlora", quick)
    sections: dict[str, dict] = {}
    old = json.loads(merged.out.read_text()) if merged.out.exists() else {}
    if old.get("quick") == quick:
        # files written before the parts existed hold the base part only
        old_sections = old.get("config", {}).get("sections") or {"base": {"arms": list(old.get("arms", {})),
                                                         "targets": list(old.get("targets", {})),
                                                         "notes": old.get("notes", []), "date": old.get("date"),
                                                         "seconds": old.get("seconds"), "config": old.get("config", {})}}
        for part, sec in old_sections.items():
            if part in reports:
                continue
            sections[part] = sec
            merged.arms.update({k: old["arms"][k] for k in sec["arms"] if k in old.get("arms", {})})
            merged.targets.update({k: old["targets"][k] for k in sec["targets"] if k in old.get("targets", {})})
            merged.notes.extend(sec["notes"])
            merged.config[part] = sec.get("config", {})
    for part, rep in reports.items():
        d = rep.as_dict()
        sections[part] = {"arms": list(rep.arms), "targets": list(rep.targets), "notes": rep.notes, "date": d["date"],
                          "seconds": seconds[part], "config": rep.config}
        merged.arms.update(rep.arms)
        merged.targets.update(rep.targets)
        merged.notes.extend(rep.notes)
        merged.config[part] = rep.config
    merged.config["sections"] = sections
    merged.write()


def run_base(q: bool, tmp: Path, ctx) -> Report:
    """The five arms on 4 adapters (the part the module docstring describes)."""
    size = dict(hidden=128, layers=4, inter=352, heads=4) if q else dict(hidden=1024, layers=8, inter=2816, heads=16)
    # Full: 128 tokens per micro-batch, so a stage's matmuls are compute-bound rather than
    # dominated by reading the weights (16-token micro-batches measured that, not the pipeline).
    steps, batch, micro, seq, repeats = (2, 2, 1, 32, 1) if q else (6, 4, 2, 64, 3)
    if q:
        _POOL.extend(BenchWorker.options(num_cpus=0.01).remote(1) for _ in range(QUICK_POOL))
    # The base is built and saved in a short-lived task, so the driver (counted in every arm's
    # memory) never holds a copy of it.
    base = build_remote(make_base, tmp / "base", **size)
    data = make_data(tmp, n=64, seq=seq)
    report = Report("mlora", q, {"base": size, "adapters": len(ADAPTERS), "steps": steps, "batch": batch,
                                 "micro_batch": micro, "seq": seq, "repeats": repeats, "lora": {"r": 8, "targets": TARGETS}})
    from raystack.mlora.trainer import make_jobs

    cfg = mlora_cfg(base, data, str(tmp / "c"), steps, batch, micro, seq)
    jobs = make_jobs(cfg)
    batches = {n: [j.batcher.next_batch() for _ in range(steps)] for n, j in jobs.items()}
    tokens = sum(int(ids.numel()) for b in batches.values() for ids, _ in b)
    n_params = count_params_on_meta(base)
    report.config["base_params"] = n_params
    runs: dict[str, list[dict]] = {k: [] for k in ("a", "b", "c", "d", "dw", "e")}
    scaling: dict = {}  # peft on 1 thread vs (a)'s 2 threads, same repeat, first two adapters
    ideals: list[list[float]] = []  # per repeat: each stage's compute alone (seconds)
    for rep in range(repeats):
        print(f"--- repeat {rep + 1}/{repeats}", flush=True)
        runs["a"].append(run_arm("a", [2], lambda w: ray.get(w[0].peft_train.remote(base, batches, 1e-4, str(tmp / f"a{rep}")))))
        print("(a)", runs["a"][-1]["seconds"], flush=True)
        if rep == repeats - 1:
            two = {n: batches[n] for n in ADAPTERS[:2]}
            one = run_arm("a1", [1], lambda w: ray.get(w[0].peft_train.remote(base, two, 1e-4, str(tmp / "a1thread"))))
            scaling = {"seconds_1_thread": one["seconds"], "seconds_2_threads": runs["a"][-1]["completion"][ADAPTERS[1]]}
            scaling["speedup"] = scaling["seconds_1_thread"] / scaling["seconds_2_threads"]
            print("(a, 1 thread, 2 adapters)", one["seconds"], flush=True)

        def arm_b(ws):
            t0 = time.perf_counter()
            refs = [w.peft_train.remote(base, {n: batches[n]}, 1e-4, str(tmp / f"b{rep}")) for w, n in zip(ws, ADAPTERS)]
            outs = ray.get(refs)
            comp = {n: o["completion"][n] for n, o in zip(ADAPTERS, outs)}
            return {"seconds": time.perf_counter() - t0, "completion": comp}
        runs["b"].append(run_arm("b", [1] * 4, arm_b))
        print("(b)", runs["b"][-1]["seconds"], flush=True)

        ccfg = config_to_dict(mlora_cfg(base, data, str(tmp / f"c{rep}"), steps, batch, micro, seq))
        runs["c"].append(run_arm("c", [2], lambda w: ray.get(w[0].batchlora_train.remote(ccfg))))
        runs["c"][-1]["completion"] = {n: runs["c"][-1]["seconds"] for n in ADAPTERS}
        print("(c)", runs["c"][-1]["seconds"], flush=True)
        pipe = None
        # the same 2 stage actors serve (d), its wide-lane variant, then (e)
        for arm, conc, lanes in (("d", 8, None), ("dw", 8, 2), ("e", 1, None)):
            out, pipe = run_pipeline(mlora_cfg(base, data, str(tmp / f"{arm}{rep}"), steps, batch, micro, seq,
                                               max_concurrent=conc, lanes=lanes), pipe)
            runs[arm].append(out)
            print(f"({arm})", runs[arm][-1]["seconds"], runs[arm][-1]["idle"], flush=True)
        if q:  # the admission part reuses these stage actors (same quick base): two processes fewer to start
            ctx.pipe = pipe
        else:
            pipe.shutdown()
        # the ideal in every repeat too: the host's speed drifts by ~10% between minutes
        bounds = [list(b) for b in runs["d"][-1]["plan"]]
        ideals.append(run_arm("ideal", [1], lambda w: {"busy": ray.get(w[0].ideal_stages.remote(
            config_to_dict(cfg), bounds))})["busy"])
        print("(ideal)", ideals[-1], flush=True)
    # Not a target, an explanation: the same stage compute in two processes at once (as (d)'s
    # two stage actors run), to show what the two cores lose to each other when both compute.
    pair = run_arm("ideal_pair", [1, 1], lambda w: {"busy": ray.get([x.ideal_stages.remote(
        config_to_dict(cfg), bounds) for x in w])})["busy"]
    small = run_arm("small", [2], lambda w: ray.get(w[0].small_adapters.remote(base, 8, [1, 2] * 4, seq, 3 if q else 5)))

    names = {"a": "peft_sequential", "b": "peft_4_actors", "c": "batchlora_1_actor", "d": "lorapp_2_stages",
             "dw": "lorapp_2_stages_2_lanes", "e": "gpipe_2_stages"}
    tps = {}
    for k, rs in runs.items():
        secs = statistics.median(r["seconds"] for r in rs)
        tps[k] = tokens / secs
        comp = rs[0]["completion"]
        fig = dict(tokens_per_s=tps[k], makespan_s=secs, seconds_all=[r["seconds"] for r in rs],
                   mean_completion_s=statistics.mean(comp.values()),
                   peak_memory_mb=rs[0]["peak_memory_bytes"] / 2**20)
        if "idle" in rs[0]:
            fig["stage_idle_fraction"] = [statistics.median(r["idle"][i] for r in rs) for i in range(2)]
        report.arm(names[k], **fig)
    ideal_s = statistics.median(max(b) for b in ideals)
    pair_s = statistics.mean(max(b) for b in pair)
    report.arm("lorapp_ideal", stage_busy_s=ideals[-1], stage_busy_s_all=ideals, tokens_per_s=tokens / ideal_s,
               concurrent_stage_busy_s=pair, concurrent_tokens_per_s=tokens / pair_s,
               concurrency_slowdown=pair_s / max(ideals[-1]))
    report.note(f"Two processes computing the same stages at once take {pair_s / max(ideals[-1]):.2f}x as long "
                "as one alone (shared caches and memory bandwidth of the 2 cores): (d) runs its two "
                "stages that way, the ideal measures them one at a time.")
    report.arm("peft_thread_scaling", **scaling)
    report.note(f"peft on 2 threads ran {scaling['speedup']:.2f}x its 1-thread speed here (first two adapters of the "
                "last repeat): a 2-stage pipeline of 1-thread stages, at best 2x one thread, can then reach about "
                f"{2 / scaling['speedup']:.2f}x (a) at equal per-token efficiency.")
    report.arm("small_adapters_8", **small, speedup=small["one_by_one"] / small["batched"])
    report.arm("peft_load_check", **check_peft(base, tmp, runs, first_only=q))
    report.arm("spread_per_repeat", d_vs_a=[a["seconds"] / d["seconds"] for a, d in zip(runs["a"], runs["d"])],
               d_vs_ideal=[max(i) / r["seconds"] for i, r in zip(ideals, runs["d"])])
    report.target("d_vs_a_tokens", tps["d"] / tps["a"], ">=", 1.1, "(d) pipeline tokens/s over (a) peft sequential")
    report.target("d_vs_ideal", statistics.median(max(i) / r["seconds"] for i, r in zip(ideals, runs["d"])), ">=", 0.9,
                  "(d) tokens/s over its ideal (max stage compute), median of per-repeat pairs")
    report.arm(names["dw"], tokens_vs_a=tps["dw"] / tps["a"],
               memory_vs_b=runs["dw"][0]["peak_memory_bytes"] / runs["b"][0]["peak_memory_bytes"])
    report.target("d_vs_b_memory", runs["d"][0]["peak_memory_bytes"] / runs["b"][0]["peak_memory_bytes"], "<=", 0.45,
                  "(d) total peak memory over (b) 4 base copies (driver + actors, RSS)")
    report.target("d_idle", max(report.arms[names["d"]]["stage_idle_fraction"]), "<=", 0.10, "(d) max stage idle fraction")
    report.target("e_idle", min(report.arms[names["e"]]["stage_idle_fraction"]), ">=", 0.30, "(e) GPipe min stage idle fraction")
    report.target("small_batched_speedup", small["one_by_one"] / small["batched"], ">=", 1.2,
                  "(c') 8 adapters of 1-2 rows: BatchLoRA over one-by-one, same actor")
    report.target("all_arms_load_in_peft", float(all(report.arms["peft_load_check"].values())), "==", 1.0,
                  "every arm's adapters load with peft.PeftModel.from_pretrained")
    report.note("Peak memory: RSS of the driver process plus the arm's actors, sampled every 50 ms; Ray's own "
                "processes (raylet, GCS, idle pooled workers), the same for every arm, are not counted.")
    report.note("No simulation: real processes on this machine (2 shared cores); the base is random-initialised "
                f"({n_params / 1e6:.0f}M parameters), data are fixed-length byte sequences.")
    from _mlora_real_text import real_text_setting

    real_text_setting(report, q, tmp, run_arm, run_pipeline, mlora_cfg, build_remote)
    if q:
        report.note(f"quick: {QUICK_POOL} pooled worker processes serve every non-pipeline arm ((b) and its "
                    "real-text twin run their 4 peft adapters on them, two per process: the same peft_train code "
                    "path as the full run's 4 actors); the bases are built on the pool; the admission part "
                    "reuses (d)'s stage actors; peft_load_check loads each arm's first adapter only.")
    for w in _POOL:
        ray.kill(w)
    _POOL.clear()
    return report


def run_pipeline(cfg, pipe=None):
    """Run cfg's jobs on a new pipeline, or on ``pipe``'s running stage actors (fresh outputs)."""
    from raystack.actors.mlora import LoRAPipeline

    if pipe is None:
        pipe = LoRAPipeline(cfg, progress=False)
        pipe.start()
    else:
        pipe.use_output(cfg)
        pipe.policy.max_concurrent = cfg.scheduler.max_concurrent
        pipe.cfg.pipeline.lanes = pipe.memory.max_lanes = cfg.pipeline.lanes
        pipe.finished.clear()
        for t in cfg.tasks:
            pipe.add_task(t)
    with PeakRSS([driver_pid(), *pipe.pids], alone=[driver_pid()]) as mem:
        res = pipe.run()
    idle = [0.0, 0.0]
    total = sum(w.seconds for w in res.windows)
    for w in res.windows:
        for i, f in enumerate(w.idle_fraction):
            idle[i] += f * w.seconds / total
    return {"seconds": res.seconds, "completion": res.completion_s, "idle": idle, "adapters": res.adapters,
            "peak_memory_bytes": mem.peak_bytes, "plan": res.plan.bounds}, pipe


def check_peft(base: str, tmp: Path, runs: dict, first_only: bool = False) -> dict:
    """Load every arm's first-repeat adapters with peft and run a forward (``first_only``, under
    --quick: each arm's first adapter)."""
    import peft
    from transformers import AutoModelForCausalLM

    ok = {}
    dirs = {"a": {n: str(tmp / "a0" / n) for n in ADAPTERS}, "b": {n: str(tmp / "b0" / n) for n in ADAPTERS},
            "c": runs["c"][0]["adapters"], "d": runs["d"][0]["adapters"], "dw": runs["dw"][0]["adapters"],
            "e": runs["e"][0]["adapters"]}
    ids = torch.randint(0, 256, (1, 8))
    for arm, ds in dirs.items():
        good = True
        for n, d in list(ds.items())[:1 if first_only else None]:
            try:
                m = peft.PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), d).eval()
                good &= bool(torch.isfinite(m(input_ids=ids).logits).all())
            except Exception as exc:  # report, do not crash the benchmark
                print(f"peft load failed for arm {arm} adapter {n}: {exc}")
                good = False
        ok[arm] = good
    return ok


if __name__ == "__main__":
    main()
