"""The mLoRA benchmark at a user's scale: memory-gated admission, an int8 base, and FSDP.

Three parts of ``benchmarks/mlora.py`` (run one with ``--only admission|int8|fsdp``):
  admission  10 jobs of mixed sizes whose sum does not fit a per-stage budget: the memory model
             gating admission (peaks measured per stage per window, against the prediction),
             then the same queue in FIFO order without the model
  int8       the pipeline on an fp32 base and on its int8 weight-only form: stage memory,
             answer loss after the same steps, and the int8-trained adapters loaded in peft on
             the fp32 base (logit difference)
  fsdp       the LoRA-aware pipeline against FSDP (the base sharded over 2 and 4 workers,
             each layer all-gathered in the forward and again in the backward, one layer
             ahead) over the same simulated link, swept from an ideal link to one on which a
             layer's weights take one step of compute to move
"""

from __future__ import annotations

import json
import math
import random
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import ray
import torch

from common import PeakRSS, Report

MB = 2**20
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]
# --quick: every part on the base part's quick base (same size, same folder): one base to build
QUICK_BASE = dict(hidden=128, layers=4, inter=352, heads=4)
QUICK_LINK = (0.001, 50e6)  # --quick: a simulated link between stages (latency s, bytes/s), for its code path


@dataclass
class ScaleBench:
    """What the parts share with the main script: its mode, a scratch folder, its helpers."""

    quick: bool
    tmp: Path
    make_base: Callable[..., str]  # (directory, hidden, layers, inter, heads) -> checkpoint dir
    mlora_cfg: Callable[..., object]  # the main script's config builder (4 adapters a0..a3)
    make_data: Callable[..., list]  # (directory, n, seq) -> one JSONL per adapter
    driver_pid: int
    pipe: object = None  # --quick: the base part's running LoRAPipeline (same base), for admission to reuse

    def base(self, name: str, **size) -> str:
        """A random Llama checkpoint, built and saved in a short-lived task (not in the driver),
        or the one already in the scratch folder under that name."""
        if (self.tmp / name / "config.json").is_file():
            return str(self.tmp / name)
        return ray.get(ray.remote(self.make_base).options(num_cpus=0.01).remote(self.tmp / name, **size))

    def quick_or(self, name: str, size: dict) -> str:
        """The part's own base, or under --quick the one all parts share."""
        return self.base("base", **QUICK_BASE) if self.quick else self.base(name, **size)


def _measured_run(ctx: ScaleBench, cfg) -> tuple:
    """A fresh pipeline for ``cfg``, run with the driver's and the stages' RSS sampled;
    returns the result, the pipeline (stopped) and the peak bytes."""
    from raystack.actors.mlora import LoRAPipeline

    pipe = LoRAPipeline(cfg, progress=False)
    try:
        pipe.start()
        with PeakRSS([ctx.driver_pid, *pipe.pids], alone=[ctx.driver_pid]) as mem:
            res = pipe.run()
    finally:
        pipe.shutdown()
    return res, pipe, mem.peak_bytes


def _params(base: str) -> int:
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        return sum(p.numel() for p in AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(base)).parameters())


# -- admission --------------------------------------------------------------------------------
BUDGET_SPARE = 1.15  # the admission budget over the largest job's predicted peak alone, with the margin
# (micro-batch rows, batch rows, tokens, steps, priority) of the 10 jobs
ADMISSION_JOBS = [(8, 8, 256, 3, 0), (4, 8, 256, 4, 1), (2, 4, 128, 6, 0), (8, 16, 128, 3, 2), (1, 2, 64, 6, 0),
                  (4, 4, 256, 4, 0), (2, 2, 64, 5, 1), (8, 8, 64, 4, 0), (4, 8, 128, 3, 0), (1, 1, 256, 6, 0)]
QUICK_JOBS = [(4, 4, 64, 2, 0), (2, 4, 64, 2, 1), (1, 2, 32, 3, 0), (4, 8, 32, 2, 2), (1, 1, 16, 3, 0),
              (2, 2, 64, 2, 0), (1, 1, 32, 2, 1), (4, 4, 16, 2, 0), (2, 4, 32, 2, 0), (1, 1, 64, 3, 0)]


def _admission_cfg(base: str, data_path: str, out: str, jobs: list[tuple], max_concurrent: int):
    from raystack.mlora.config import load_mlora_config

    names = [f"j{i}" for i in range(len(jobs))]
    return load_mlora_config({
        "base": base, "output_dir": out, "datasets": [{"name": "text", "path": data_path}],
        "adapters": [dict(name=n, r=8, alpha=16, lr=1e-4, target_modules=TARGETS, seed=i) for i, n in enumerate(names)],
        "tasks": [dict(adapter=n, dataset="text", batch_size=b, micro_batch_size=m, max_steps=s, cutoff_len=L,
                       priority=p, save_steps=10_000) for n, (m, b, L, s, p) in zip(names, jobs)],
        "pipeline": {"stages": 2, "window_steps": 2}, "scheduler": {"max_concurrent": max_concurrent}})


def _window_memory(result) -> dict:
    """Per window and stage: predicted and measured peak (MB), and the budget."""
    rows = [{"window": w.window, "jobs": list(w.jobs), "predicted_mb": [p.predicted_bytes / MB for p in w.memory],
             "measured_mb": [p.measured_bytes / MB for p in w.memory], "budget_mb": [p.budget_bytes / MB for p in w.memory]}
            for w in result.windows]
    errors = [abs(p.error) for w in result.windows for p in w.memory]
    over = [p.measured_bytes / p.budget_bytes for w in result.windows for p in w.memory]
    return {"windows": rows, "max_abs_error": max(errors), "median_abs_error": statistics.median(errors),
            "max_measured_over_budget": max(over), "makespan_s": result.seconds,
            "peak_measured_mb": [max(w.memory[s].measured_bytes for w in result.windows) / MB for s in range(2)],
            "admitted_window": result.admitted_window, "finished_window": result.finished_window,
            "refused": result.refused, "exported": len(result.adapters)}


def _take_over(pipe, cfg) -> None:
    """Point a finished pipeline (stages running on cfg's base, same stage count and window) at
    cfg's queue: its config, a fresh run folder, its scheduler settings and tasks."""
    assert pipe.cfg.base == cfg.base and pipe.cfg.pipeline.stages == cfg.pipeline.stages
    pipe.cfg = cfg
    pipe.use_output(cfg)
    pipe.policy.max_concurrent = cfg.scheduler.max_concurrent
    pipe.memory.max_lanes = cfg.pipeline.lanes
    pipe.finished.clear()
    for t in cfg.tasks:
        pipe.add_task(t)


def run_admission(ctx: ScaleBench) -> Report:
    from raystack.actors.mlora import LoRAPipeline
    from raystack.mlora.memory import job_request

    q = ctx.quick
    size = QUICK_BASE if q else dict(hidden=256, layers=8, inter=704, heads=4)
    jobs = QUICK_JOBS if q else ADMISSION_JOBS
    base = ctx.quick_or("admission_base", size)
    seq = max(j[2] for j in jobs)
    rng = random.Random(0)
    data = ctx.tmp / "admission.jsonl"
    data.write_text("".join(json.dumps({"prompt": "", "response": "".join(rng.choice("abcdefghij ") for _ in range(seq - 1))})
                            + "\n" for _ in range(64)))
    report = Report("mlora", q, {"base": size, "base_params": _params(base), "jobs": [
        dict(zip(("micro_batch", "batch", "tokens", "steps", "priority"), j)) for j in jobs], "stages": 2,
        "window_steps": 2})
    cfg = _admission_cfg(base, str(data), str(ctx.tmp / "adm"), jobs, max_concurrent=len(jobs))
    if ctx.pipe is not None:  # --quick: the base part's stage actors on the same base, given this queue
        pipe, ctx.pipe = ctx.pipe, None
        _take_over(pipe, cfg)
    else:
        pipe = LoRAPipeline(cfg, progress=False)
    try:
        pipe.start()
        requests = [job_request(t, cfg.adapter(t.adapter), pipe.meta, pipe.plan.bounds) for t in cfg.tasks]
        margin = pipe.policy.margin
        alone = [pipe.memory.predict([r]) for r in requests]
        together = pipe.memory.predict(requests)
        # each stage's budget: the largest job fits alone, with the margin and some room for the
        # model's refits (a job that stops fitting alone is refused, and refusals are final)
        budgets = [max(a[s].total for a in alone) * (1 + margin) * BUDGET_SPARE for s in range(2)]
        pipe.policy.budgets = list(budgets)
        print(f"(admission) budgets MB {[round(b / MB) for b in budgets]}, all 10 together predicted "
              f"{[round(t.total / MB) for t in together]} MB", flush=True)
        gated = pipe.run()
        print(f"(admission) gated: {gated.seconds:.1f}s", flush=True)
        # the same queue, FIFO, no memory model: every job starts at once (same stage actors)
        pipe.policy.budgets = [math.inf, math.inf]
        pipe.use_output(cfg)  # a fresh run folder for the FIFO run
        pipe.finished.clear()
        for t in cfg.tasks:
            pipe.add_task(t)
        fifo = pipe.run()
        print(f"(admission) fifo: {fifo.seconds:.1f}s", flush=True)
    finally:
        pipe.shutdown()
    for r in (gated, fifo):  # a FIFO window's budget column: the gated run's budgets
        r.windows = [replace(w, memory=[replace(p, budget_bytes=b) for p, b in zip(w.memory, budgets)])
                     for w in r.windows]
    g, f = _window_memory(gated), _window_memory(fifo)
    report.arm("admission_memory_model", **g, budget_mb=[b / MB for b in budgets],
               predicted_together_mb=[t.total / MB for t in together],
               stage_fixed_mb=[x / MB for x in pipe.memory.fixed])
    report.arm("admission_fifo_no_model", **f)
    report.target("admission_peak_within_budget", g["max_measured_over_budget"], "<=", 1.0,
                  "memory-gated admission: every stage's measured peak over its budget, worst window")
    report.target("admission_predicted_vs_measured", g["max_abs_error"], "<=", 0.15,
                  "memory-gated admission: |predicted - measured| / measured peak, worst stage and window")
    report.target("admission_fifo_exceeds_budget", f["max_measured_over_budget"], ">", 1.0,
                  "FIFO without the model on the same queue: measured peak over the budget (it must not fit)")
    report.target("admission_all_jobs_done", float(g["exported"] == len(jobs)), "==", 1.0,
                  "memory-gated admission: every job ran to the end (none refused: each fits alone)")
    report.note("Admission: peaks are each stage process's RSS high-water mark per window (VmHWM, reset "
                "at each window start); the budget is per stage, set from the model after the stages "
                f"started: the largest job alone fits with the 10% margin and {BUDGET_SPARE - 1:.0%} to spare.")
    return report


# -- int8 -------------------------------------------------------------------------------------
# A base whose weights outweigh a stage's other memory, as in QLoRA practice (607M parameters,
# hidden 2048, 12 layers). With int8 weights a quarter of fp32's the ratio is
# (W/4 + rest) / (W + rest), and the rest (activations, their working memory, the allocator's
# slack, the checkpoint's copies) grows with tokens x hidden while W grows with hidden^2: on this
# CPU-sized model the micro-batches are short. Small checks (2 steps): 0.54x at 64 tokens on a
# hidden-1536, 8-layer base; 0.47x at hidden 2048, 8 layers, 32 tokens; 0.42x with 12 layers;
# 0.38x at 16 tokens.
INT8_BASE = dict(hidden=2048, layers=12, inter=5504, heads=16)
INT8_RUN = (4, 2, 1, 16)  # steps, batch rows, micro-batch rows, tokens
def _answer_loss(result) -> float:
    """Mean over adapters of the mean of their last two steps' loss."""
    return statistics.mean(statistics.mean(v[-2:]) for v in result.losses.values())


def _peft_drift(base: str, adapters: dict[str, str]) -> dict:
    """Each int8-trained adapter: in peft on the fp32 base vs on the int8 base it trained on."""
    import peft
    from transformers import AutoModelForCausalLM

    from raystack.mlora.batchlora import BatchLoRAModel, segments_for
    from raystack.mlora.export import load_peft_adapter
    from raystack.mlora.quantize import quantize_base

    ids = torch.randint(0, 256, (2, 32), generator=torch.Generator().manual_seed(0))
    int8 = AutoModelForCausalLM.from_pretrained(base)
    quantize_base(int8)
    ours_model = BatchLoRAModel(int8).eval()
    fp32 = AutoModelForCausalLM.from_pretrained(base).eval()
    out = {}
    for name, path in adapters.items():
        load_peft_adapter(ours_model, path, name)
        with torch.no_grad():
            ours = ours_model(ids, segments_for([(name, 2)]))
            on_fp32 = peft.PeftModel.from_pretrained(fp32, path).eval()
            theirs = on_fp32(input_ids=ids).logits
            fp32 = on_fp32.unload()  # the bare base again, for the next adapter
        p, r = theirs.log_softmax(-1), ours.log_softmax(-1)
        out[name] = {"rms_over_std": float((theirs - ours).pow(2).mean().sqrt() / theirs.std()),
                     "max_abs": float((theirs - ours).abs().max()), "kl": float((p.exp() * (p - r)).sum(-1).mean())}
        ours_model.remove_adapter(name)
    return out


def run_int8(ctx: ScaleBench) -> Report:
    q = ctx.quick
    size = QUICK_BASE if q else INT8_BASE
    steps, batch, micro, seq = (2, 2, 1, 32) if q else INT8_RUN
    base = ctx.quick_or("int8_base", size)
    data = ctx.make_data(ctx.tmp, n=64, seq=seq)
    report = Report("mlora", q, {"base": size, "base_params": _params(base), "steps": steps, "batch": batch,
                                 "micro_batch": micro, "seq": seq, "adapters": 4, "stages": 2})
    runs = {}
    # --quick: the int8 arm alone (the fp32 arm is the same code), over a simulated link so that
    # the stages' link code runs too
    for arm, quant in (("int8", "int8"),) if q else (("fp32", None), ("int8", "int8")):
        cfg = ctx.mlora_cfg(base, data, str(ctx.tmp / f"q_{arm}"), steps, batch, micro, seq)
        cfg.quantize = quant
        if q:
            cfg.pipeline.link_latency_s, cfg.pipeline.link_bandwidth_bytes_per_s = QUICK_LINK
        cfg.adapters = [type(a)(**{**a.__dict__, "lr": 1e-3}) for a in cfg.adapters]  # enough to move the loss
        res, pipe, peak_bytes = _measured_run(ctx, cfg)
        peaks = [max(w.memory[s].measured_bytes for w in res.windows) for s in range(2)]
        runtime = [info.runtime_bytes for info in pipe.stage_info]
        runs[arm] = dict(seconds=res.seconds, tokens_per_s=res.tokens / res.seconds, answer_loss=_answer_loss(res),
                         losses=res.losses, stage_peak_mb=[p / MB for p in peaks],
                         stage_runtime_mb=[r / MB for r in runtime],
                         stage_above_runtime_mb=[(p - r) / MB for p, r in zip(peaks, runtime)],
                         stage_fixed_mb=[f / MB for f in pipe.memory.fixed],  # after calibration: weights paged in
                         total_peak_mb=peak_bytes / MB, adapters=res.adapters,
                         quantized_mb=[(i.quantized.bytes_before / MB, i.quantized.bytes_after / MB)
                                       if i.quantized else None for i in pipe.stage_info])
        print(f"(int8) {arm}: {res.seconds:.1f}s, loss {runs[arm]['answer_loss']:.4f}, stage above runtime "
              f"{[round(x) for x in runs[arm]['stage_above_runtime_mb']]} MB", flush=True)
    drift = _peft_drift(base, runs["int8"]["adapters"])
    for arm, r in runs.items():
        report.arm(f"int8_pipeline_{arm}", **{k: v for k, v in r.items() if k != "adapters"})
    report.arm("int8_adapters_in_peft_on_fp32", **drift)
    def over_fp32(key: str, total=lambda v: v) -> float | None:
        return total(runs["int8"][key]) / total(runs["fp32"][key]) if "fp32" in runs else None

    report.target("int8_memory_vs_fp32", over_fp32("stage_above_runtime_mb", sum), "<=", 0.4,
                  "int8 base: stages' peak memory above their runtime (RSS before the base loads), over fp32's")
    report.target("int8_loss_vs_fp32", over_fp32("answer_loss"), "<=", 1.02,
                  "int8 base: answer loss after the same steps (mean of the last two), over fp32's")
    report.arm("int8_totals", total_peak_ratio=over_fp32("total_peak_mb"), tokens_per_s_ratio=over_fp32("tokens_per_s"))
    report.note("int8: memory is each stage process's peak RSS minus its RSS before the base was loaded "
                "(the interpreter, torch and transformers: ~450 MB a process here), the CPU counterpart of "
                "torch.cuda.max_memory_allocated; whole-process totals (driver + stages) are in int8_totals.")
    return report


# -- fsdp -------------------------------------------------------------------------------------
FSDP_BASE = dict(hidden=512, layers=4, inter=1408, heads=8)  # 13M parameters, 12.8 MB a layer
FSDP_RUN = (4, 4, 2, 64)  # steps, batch rows, micro-batch rows (the pipeline's), tokens
# the link: one decoder layer's weights take r x one FSDP step of compute to move (0: ideal)
FSDP_LINKS = [0.0, 0.1, 0.3, 1.0]
FSDP_WORLDS = (2, 4)  # FSDP workers, and pipeline stages, at the slowest link
QUICK_STEP_S = 0.2  # --quick: a nominal step of compute instead of measuring one


def _layer_bytes(base: str) -> int:
    """fp32 bytes of one decoder layer's linear weights (what FSDP gathers for it)."""
    from transformers import AutoConfig

    c = AutoConfig.from_pretrained(base)
    h, kv = c.hidden_size, c.num_key_value_heads * (c.hidden_size // c.num_attention_heads)
    return 4 * (2 * h * h + 2 * h * kv + 3 * h * c.intermediate_size)
def run_fsdp(ctx: ScaleBench) -> Report:
    from raystack.actors.mlora_fsdp import FSDPLoRATrainer
    from raystack.comm import NetworkModel

    q = ctx.quick
    size = QUICK_BASE if q else FSDP_BASE
    steps, batch, micro, seq = (2, 2, 1, 32) if q else FSDP_RUN
    ratios = [1.0] if q else FSDP_LINKS
    base = ctx.quick_or("fsdp_base", size)
    data = ctx.make_data(ctx.tmp, n=64, seq=seq)
    report = Report("mlora", q, {"base": size, "base_params": _params(base), "steps": steps, "batch": batch,
                                 "micro_batch": micro, "seq": seq, "adapters": 4, "link_ratios": ratios})

    def cfg_for(out: str, stages: int, network: NetworkModel):
        cfg = ctx.mlora_cfg(base, data, str(ctx.tmp / out), steps, batch, micro, seq)
        cfg.pipeline.stages = stages
        cfg.pipeline.link_latency_s = network.latency_s
        cfg.pipeline.link_bandwidth_bytes_per_s = 0.0 if math.isinf(network.bandwidth_bytes_per_s) \
            else network.bandwidth_bytes_per_s
        return cfg

    def pipeline(stages: int, network: NetworkModel, tag: str) -> dict:
        res, _, peak_bytes = _measured_run(ctx, cfg_for(f"pp_{tag}", stages, network))
        return dict(seconds=res.seconds, tokens_per_s=res.tokens / res.seconds,
                    mean_completion_s=statistics.mean(res.completion_s.values()), losses=res.losses,
                    peak_memory_mb=peak_bytes / MB)

    def fsdp(world: int, network: NetworkModel, tag: str) -> dict:
        trainer = FSDPLoRATrainer(cfg_for(f"fsdp_{tag}", 2, network), world, network)
        try:
            pids = trainer.start()
            with PeakRSS([ctx.driver_pid, *pids], alone=[ctx.driver_pid]) as mem:
                res = trainer.run()
        finally:
            trainer.shutdown()
        comm = [w.comm for w in res.workers]  # per rank: {op: totals}
        return dict(seconds=res.seconds, tokens_per_s=res.tokens / res.seconds,
                    mean_completion_s=statistics.mean(res.completion_s.values()), losses=res.losses,
                    peak_memory_mb=mem.peak_bytes / MB, gathers=res.workers[0].gathers,
                    layer_mb=res.workers[0].layer_bytes[0] / MB,
                    gather_mb_sent=[c["all_gather"]["bytes"] / MB for c in comm],
                    grad_allreduce_mb_sent=[c["all_reduce"]["bytes"] / MB for c in comm],
                    comm_wait_s=[sum(op["wait_seconds"] for op in c.values()) for c in comm])

    ideal = NetworkModel()
    points = {}
    layer_bytes = _layer_bytes(base)
    if q:  # the FSDP code path, not the figures: the slow link only, a nominal step, 2 workers, and
        # no pipeline arm (the int8 part's quick run takes the pipeline over a simulated link)
        first, step_s = None, QUICK_STEP_S
    else:
        first = fsdp(2, ideal, "ideal")  # the step of compute the link is measured against
        step_s = first["seconds"] / steps
    for r in ratios:
        net = ideal if r == 0 else NetworkModel(0.0, layer_bytes / (r * step_s))
        f2 = first if r == 0 else fsdp(2, net, f"{r}")
        p2 = None if q else pipeline(2, net, f"{r}")
        points[r] = {"bandwidth_mb_per_s": None if r == 0 else net.bandwidth_bytes_per_s / MB, "pipeline_2": p2,
                     "fsdp_2": f2}
        print(f"(fsdp) link {r}: fsdp(2) {f2['seconds']:.1f}s, pipeline {p2 and round(p2['seconds'], 1)}s", flush=True)
    top = max(ratios)
    worlds = (2,) if q else FSDP_WORLDS
    if 4 in worlds:
        net = NetworkModel(0.0, layer_bytes / (top * step_s))
        points[top]["fsdp_4"] = fsdp(4, net, "4")
        points[top]["pipeline_4"] = pipeline(4, net, "4")
        print(f"(fsdp) link {top}, 4 workers: pipeline {points[top]['pipeline_4']['seconds']:.1f}s, "
              f"fsdp(4) {points[top]['fsdp_4']['seconds']:.1f}s", flush=True)
    for r, pt in points.items():
        report.arm(f"fsdp_link_{r}", **pt)
    same = points[top]  # the same data and initial adapters: the same losses, up to float rounding
    loss_gap = None if q else max(abs(a - b) for n in same["pipeline_2"]["losses"] for a, b in
                                  zip(same["pipeline_2"]["losses"][n], same["fsdp_2"]["losses"][n]))
    report.arm("fsdp_same_training", max_loss_gap_pipeline_vs_fsdp=loss_gap, step_compute_s=step_s,
               layer_mb=layer_bytes / MB)
    for w in worlds:
        p, f = points[top][f"pipeline_{w}"], points[top][f"fsdp_{w}"]
        report.target(f"fsdp{w}_completion", p and p["mean_completion_s"] / f["mean_completion_s"], "<=", 0.7,
                      f"mean job completion, pipeline ({w} stages) over FSDP ({w} workers), link {top}")
        report.target(f"fsdp{w}_throughput", p and p["tokens_per_s"] / f["tokens_per_s"], ">=", 1.35,
                      f"tokens/s, pipeline ({w} stages) over FSDP ({w} workers), link {top}")
    report.note(f"Simulated link (raystack.comm.NetworkModel, no latency): bandwidth set so that one decoder "
                f"layer's weights ({layer_bytes / MB:.1f} MB) take r x one FSDP step of compute "
                f"({step_s:.2f} s, measured on the ideal link, 2 workers) to move, r in {ratios} (0: ideal link). "
                "FSDP all-gathers each layer through it (forward and backward, one layer ahead); the pipeline "
                "sends activations and gradients through a link of the same bandwidth between stages.")
    return report
