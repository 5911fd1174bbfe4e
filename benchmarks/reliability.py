"""Reliability benchmark: a node lost mid-run, per part, on a simulated multi-node cluster.

The cluster is ``raystack.simcluster.SimulatedCluster``: real raylets, GCS and object stores on
this one machine (simulated: the machines; each node has 2 logical CPUs and its own working
directory), nodes removed without warning (``remove_node(allow_graceful=False)``). Node failure
detection is Ray's GCS health check, measured both ways: a short one (period 0.5 s, 3 misses)
and Ray's default (arms ``*_default``: a full run only, one repeat each, ~15-30 s to declare a
node dead).

Per part, from the node's removal: the time until the job trains again, the work done twice,
and the final quality against a fault-free run in the same invocation:

- EDiT (4 ranks = 2 replicas x 2 shards; --quick: 2 x 1; tiny-1m, simulated link 0 latency / unlimited
  bandwidth): the replica on the lost node is replaced on another node and healed from the live
  replica; recovery = removal -> the replacement's first inner step; survivors' rollback =
  steps the survivors ran twice (0 by design); replacement steps redone = steps the lost
  replica had reached (at least) past the sync the replacement took over at; loss ratio =
  final val loss / fault-free.
- mLoRA (2 stages, 2 adapters, tiny-1m): the lost stage restarts elsewhere and the adapters
  resume from their last checkpoints; recovery = removal -> the end of the first window after
  it (a whole window of training included); windows redone (the failed one); max |weight -
  the single-process reference| (the same weights a fault-free run gives, tested).
- elastic (2 workers + 2 PS, one per node): the nodes of the dense PS and of a worker are lost
  together; recovery = removal -> the first batch committed by a replacement worker; rows
  redone (committed after the last consistent cut); lost / duplicated by sample id; AUC delta.
- autoscaler (full run): a budget of 4-CPU units that only the autoscaler's nodes can hold:
  nodes launched (scale-up) and gone after the job (scale-down), with their times.

Not measured here: torchft's heal-from-live-peer beside EDiT's (no torchft arm yet), so the
target "EDiT recovery <= 1.0x torchft" reads n/a.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from common import Report, parse_args

SHORT, DEFAULT = "short", "default"


def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def start_cluster(detection: str, root: Path):
    from raystack.simcluster import SimulatedCluster

    return SimulatedCluster(nodes=4, cpus_per_node=2.0, short_health_check=detection == SHORT,
                            node_dirs=str(root / f"nodes-{detection}"),
                            autoscale_node_types={"big": {"resources": {"CPU": 4}, "max_workers": 2}}).start()


def ensure_nodes(sim, n: int = 4) -> None:
    while len(sim.members) < n:
        sim.add(cpus=2.0)
    sim.wait_for_nodes()


# ---- EDiT -----------------------------------------------------------------------------------------
def edit_cfg(out: Path, steps: int, shards: int):
    from raystack.config import load_config
    from raystack.edit.config import EDiTConfig

    return load_config(EDiTConfig, {
        "model": "tiny-1m", "mode": "edit", "ranks": 2 * shards, "shards": shards, "steps": steps,
        "sync": {"h": 6, "warmup_steps": 6}, "penalty": {"warmup_syncs": 1}, "loggers": [],
        "data": {"max_bytes": 300_000, "batch_size": 4, "seq_len": 32, "eval_batches": 4},
        "run": {"out_dir": str(out), "checkpoint_every": 0, "eval_every": 0, "comm_timeout_s": 60.0,
                "segments_per_call": 1}})


def edit_arm(sim, root: Path, steps: int, repeats: int, fault_free: bool, shards: int = 2) -> dict:
    from raystack.actors.edit import EDiTGroup

    out: dict = {"recovery_s": [], "survivor_steps_redone": [], "replacement_steps_redone": [], "val_loss": []}
    ensure_nodes(sim)
    group = EDiTGroup(edit_cfg(root / "edit", steps, shards))
    try:
        group.start()
        if fault_free:
            out["val_loss_fault_free"] = group.run(progress=False, save=False).val_loss
        for _ in range(repeats):
            ensure_nodes(sim)
            group.reconfigure(edit_cfg(root / "edit", steps, shards))
            where = sim.actor_nodes(dict(zip(group.group.keys, group.workers)))
            seen: dict = {}

            def lose(g, segment, where=where, seen=seen):
                if segment == 3 and not seen:                     # mid-run, after warm-up
                    seen["step"] = min(r.step for r in g.group.call("report"))
                    seen["t"] = sim.remove(where[f"rank-{shards}"])
            res = group.run(progress=False, on_segment=lose, save=False)
            _, times = group.group.ask(f"rank-{shards}", "losses")  # the replacement's steps
            survivor, _ = group.group.ask("rank-0", "losses")
            out["recovery_s"].append(times[0] - seen["t"])
            out["survivor_steps_redone"].append(len(survivor) - steps)
            healed_at = steps - len(times)           # the step the replacement took over at
            out["replacement_steps_redone"].append(max(0, seen["step"] - healed_at))
            out["val_loss"].append(res.val_loss)
    finally:
        group.shutdown()
    return out


# ---- mLoRA ----------------------------------------------------------------------------------------
def mlora_cfg(out: Path):
    from raystack.mlora.config import load_mlora_config

    return load_mlora_config({
        "base": "tiny-1m", "output_dir": str(out), "eval": False, "loggers": [],
        "datasets": [dict(name="reverse", synthetic="reverse", num_examples=48, seed=0),
                     dict(name="copy", synthetic="copy", num_examples=48, seed=1)],
        "adapters": [dict(name="rev", r=4, alpha=8, target_modules=["q_proj", "v_proj"], seed=1),
                     dict(name="cpy", r=2, alpha=4, target_modules=["k_proj", "lm_head"], seed=3)],
        "tasks": [dict(adapter="rev", dataset="reverse", batch_size=4, micro_batch_size=2, max_steps=6,
                       cutoff_len=16),
                  dict(adapter="cpy", dataset="copy", batch_size=4, micro_batch_size=2, max_steps=2,
                       cutoff_len=16)],
        "pipeline": {"stages": 2, "window_steps": 2}})


def mlora_arm(sim, root: Path, repeats: int) -> dict:
    from raystack.actors.mlora import LoRAPipeline
    from raystack.mlora.export import read_peft
    from raystack.mlora.jobs import form_lanes
    from raystack.mlora.trainer import train_single_process

    stage, _ = train_single_process(mlora_cfg(root / "mlora-ref"), lanes=form_lanes(["cpy", "rev"], 2))
    reference = {n: stage.model.adapter_state(n) for n in ("cpy", "rev")}

    def run(lose: bool):
        ensure_nodes(sim)
        pipe = LoRAPipeline(mlora_cfg(root / "mlora"), progress=False)
        seen: dict = {"ends": []}

        def after_submit(window, p):
            if lose and window == 1 and "t" not in seen:
                node = sim.actor_nodes({"s1": p.stages[1]})["s1"]
                seen["t"] = sim.remove(node)

        try:
            res = pipe.run(after_submit=after_submit, on_window=lambda w, p: seen["ends"].append(time.time()))
        finally:
            pipe.shutdown()
        return res, seen

    out: dict = {"recovery_s": [], "windows_redone": [], "max_weight_diff": []}
    for _ in range(repeats):
        res, seen = run(True)
        out["recovery_s"].append(min(t for t in seen["ends"] if t > seen["t"]) - seen["t"])
        out["windows_redone"].append(res.restarts)
        diff = 0.0
        for name, ref in reference.items():
            got = read_peft(res.adapters[name], name)[1]
            diff = max(diff, max(float((got[k] - ref[k]).abs().max()) for k in ref))
        out["max_weight_diff"].append(diff)
    return out


# ---- elastic --------------------------------------------------------------------------------------
def elastic_cfg(root: Path, name: str, rows: int):
    from raystack.config import load_config
    from raystack.elastic.config import ElasticConfig

    return load_config(ElasticConfig, {
        "name": name, "work_dir": str(root / "elastic"), "poll_s": 0.3, "loggers": [],
        "data": {"generate_rows": rows, "generate_files": 3, "out_dir": str(root / "criteo"), "rows_per_shard": 2048},
        "resources": {"autoscale": False, "initial_workers": 2, "initial_ps": 2, "ray_cpus_per_cpu": 1.0,
                      "max_cpus": 8},
        "faults": {"checkpoint_every_s": 1.0}})


def elastic_arm(sim, root: Path, rows: int, repeats: int, fault_free: bool) -> dict:
    from raystack.actors.elastic import ElasticController

    out: dict = {"recovery_s": [], "rows_redone": [], "lost": [], "duplicated": [], "auc": []}
    if fault_free:
        ensure_nodes(sim)
        ctl = ElasticController(elastic_cfg(root, "ff", rows))
        try:
            out["auc_fault_free"] = ctl.run().auc
        finally:
            ctl.shutdown()
    for i in range(repeats):
        ensure_nodes(sim)
        ctl = ElasticController(elastic_cfg(root, f"loss{i}", rows))
        seen: dict = {}

        def lose(c, seen=seen):
            p = c.loop.last_poll
            if seen or p is None or p.rows_done < rows // 6:
                return
            where = sim.actor_nodes(c.backend.actors)
            ps = next(u for u in sorted(where) if u.startswith("ps"))
            worker = next(u for u in sorted(where) if u.startswith("worker") and where[u] != where[ps])
            seen["t"] = time.time()
            for node in {where[ps], where[worker]}:
                sim.remove(node)
        try:
            res = ctl.run(on_step=lose)
        finally:
            ctl.shutdown()
        restore = ctl.backend.restores[0]
        # recoveries: a replacement's first commit minus when the loss was first seen
        out["recovery_s"].append(max(ctl.backend.recoveries) + restore.time - seen["t"])
        out["rows_redone"].append(restore.rows_redone)
        out["lost"].append(res.lost)
        out["duplicated"].append(res.duplicated)
        out["auc"].append(res.auc)
    return out


# ---- autoscaler -----------------------------------------------------------------------------------
def autoscale_arm(sim, root: Path, rows: int) -> dict:
    from raystack.actors.elastic import ElasticController
    from raystack.simcluster import autoscaled_nodes

    cfg = elastic_cfg(root, "scale", rows)
    cfg.resources.initial_workers, cfg.resources.initial_ps, cfg.resources.ray_cpus_per_cpu = 1, 1, 4.0
    t0 = time.time()
    ctl = ElasticController(cfg)
    try:
        ctl.step()  # the first plan: capacity requested, groups placed on launched nodes
        up_s, launched = time.time() - t0, len(autoscaled_nodes())
        ctl.run()
    finally:
        ctl.shutdown()
    t1 = time.time()
    while autoscaled_nodes() and time.time() - t1 < 120:
        time.sleep(0.5)
    return {"nodes_launched": launched, "scale_up_s": up_s, "nodes_left_after": len(autoscaled_nodes()),
            "scale_down_s": time.time() - t1}


def main() -> int:
    args = parse_args(__doc__.splitlines()[0])
    q = args.quick
    steps, rows, repeats = (48, 12_000, 1) if q else (48, 24_000, 3)  # quick: node-loss arms only
    report = Report("reliability", q, {"edit_steps": steps, "elastic_rows": rows, "repeats": repeats,
                                       "nodes": 4, "cpus_per_node": 2})
    report.note("Simulated: 4 nodes of 2 logical CPUs as separate raylets on one 2-core machine, each with its "
                "own working directory; node loss = remove_node without warning. Short detection: GCS health "
                "check every 0.5 s, 3 misses; default: Ray's. Timings are noisy (a shared machine).")
    root = Path(tempfile.mkdtemp(prefix="raystack-reliability-"))
    sim = start_cluster(SHORT, root)
    try:
        edit = report.arm("edit_short", **edit_arm(sim, root, steps, repeats, fault_free=not q,
                                                   shards=1 if q else 2))
        ml = report.arm("mlora_short", **mlora_arm(sim, root, repeats))
        el = report.arm("elastic_short", **elastic_arm(sim, root, rows, repeats, fault_free=not q))
        scale = report.arm("autoscaler", **autoscale_arm(sim, root, rows)) if not q else None
    finally:
        sim.shutdown()
    if not q:  # Ray's default failure detection, one repeat of each part
        sim = start_cluster(DEFAULT, root)
        try:
            report.arm("edit_default", **edit_arm(sim, root, steps, 1, fault_free=False))
            report.arm("mlora_default", **mlora_arm(sim, root, 1))
            report.arm("elastic_default", **elastic_arm(sim, root, rows, 1, fault_free=False))
        finally:
            sim.shutdown()
    for arm in report.arms.values():
        if "recovery_s" in arm:
            arm["recovery_p50_s"], arm["recovery_p95_s"] = pct(arm["recovery_s"], 0.5), pct(arm["recovery_s"], 0.95)

    report.target("edit_vs_torchft_recovery", None, "<=", 1.0,
                  "EDiT recovery time over torchft's heal-from-live-peer on the same model and link (no torchft arm yet)")
    report.target("edit_survivor_rollback_steps", max(edit["survivor_steps_redone"]), "==", 0,
                  "steps the surviving replica ran twice after the node loss")
    if "val_loss_fault_free" in edit:
        report.target("edit_loss_ratio", statistics.mean(edit["val_loss"]) / edit["val_loss_fault_free"], "<=", 1.05,
                      "final val loss after a node loss over the fault-free run's")
    report.target("mlora_max_weight_diff", max(ml["max_weight_diff"]), "<=", 1e-5,
                  "adapter weights after a stage's node loss vs the single-process reference (max abs)")
    report.target("elastic_lost", max(el["lost"]), "==", 0, "samples never trained (audit by sample id)")
    report.target("elastic_duplicated", max(el["duplicated"]), "==", 0, "samples trained twice")
    report.target("elastic_recovery_p95_s", el["recovery_p95_s"], "<=", 10.0,
                  "node loss (dense PS + a worker) -> a replacement's first committed batch, short detection")
    if "auc_fault_free" in el:
        report.target("elastic_auc_delta", el["auc_fault_free"] - min(el["auc"]), "<=", 0.005,
                      "AUC drop after the node loss vs the fault-free run (single fault-free run: its spread not measured)")
    if scale is not None:
        report.target("autoscaler_scaled_up", float(scale["nodes_launched"]), ">=", 1,
                      "nodes the autoscaler launched for the job's capacity request")
        report.target("autoscaler_scaled_down", float(scale["nodes_left_after"]), "==", 0,
                      "launched nodes left once the job ended and cleared its request")
    report.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
