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
- EDiT with a spare (arm ``edit_spare_short``, full run): the same with ``run.spare_replicas=1``:
  one replica's ranks started ahead on a node of their own (waited for before the loss, as in
  any run longer than a spare's start); the lost replica's place is taken by the spare's actors.
- mLoRA (2 stages, 2 adapters, tiny-1m): the lost stage restarts elsewhere and the adapters
  resume from their last checkpoints; recovery = removal -> the end of the first window after
  it (a whole window of training included); windows redone (the failed one); max |weight -
  the single-process reference| (the same weights a fault-free run gives, tested).
- elastic (2 workers + 2 PS, one per node): the nodes of the dense PS and of a worker are lost
  together; recovery = removal -> the first batch committed by a replacement worker; rows
  redone (committed after the last consistent cut); lost / duplicated by sample id; AUC delta.
- torchft (beside EDiT; not on the cluster): torchft 0.2.0's DiLoCo on the same model, data and
  optimizers, 2 replica groups as processes on a lighthouse; replica 1 is killed with SIGKILL
  just after its 3rd committed sync and restarted at once; it heals from the live peer at the
  next sync's quorum. Recovery = kill -> the restarted replica's first step after its heal (the
  interval the EDiT arm measures); survivor steps redone = windows whose commit failed x H;
  replacement steps before the heal (one window from a fresh model, overwritten); loss ratio =
  the restarted replica's final val loss / a fault-free torchft run's (full run). Target: EDiT
  recovery <= 1.0x torchft's (p50 over p50). Full run only (see TORCHFT_QUICK_NOTE).
- elastic fault-free spread: 4 fault-free runs (--quick: 1) interleaved with the node-loss runs;
  the AUC target reads the lowest AUC after a loss against the lowest fault-free one (+ 0.005).
  With two workers the order in which their updates interleave differs from run to run, so the
  AUC does too; ``elastic_exact`` (full run) takes one worker, whose run is deterministic, and
  compares the final model after the same node loss with a fault-free run's, element by element.
- autoscaler (full run): a budget of 4-CPU units that only the autoscaler's nodes can hold:
  nodes launched (scale-up) and gone after the job (scale-down), with their times.

Every arm reports its wall time (``seconds``).
"""
from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import Report, parse_args

SHORT, DEFAULT = "short", "default"


def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def listed(xs: list[float], digits: int) -> str:
    """Per-repeat values for a target's text."""
    return "[" + ", ".join(f"{x:.{digits}f}" for x in xs) + "]"


def start_cluster(detection: str, root: Path):
    from raystack.simcluster import SimulatedCluster

    return SimulatedCluster(nodes=4, cpus_per_node=2.0, short_health_check=detection == SHORT,
                            node_dirs=str(root / f"nodes-{detection}"),
                            autoscale_node_types={"big": {"resources": {"CPU": 4}, "max_workers": 2}}).start()


def ensure_nodes(sim, n: int = 4) -> None:
    while len(sim.members) < n:
        sim.add(cpus=2.0, wait=False)
    sim.wait_for_nodes()


# ---- EDiT -----------------------------------------------------------------------------------------
def edit_cfg(out: Path, steps: int, shards: int, spares: int = 0):
    from raystack.config import load_config
    from raystack.edit.config import EDiTConfig

    return load_config(EDiTConfig, {
        "model": "tiny-1m", "mode": "edit", "ranks": 2 * shards, "shards": shards, "steps": steps,
        "sync": {"h": 6, "warmup_steps": 6}, "penalty": {"warmup_syncs": 1}, "loggers": [],
        "data": {"max_bytes": 300_000, "batch_size": 4, "seq_len": 32, "eval_batches": 4},
        "run": {"out_dir": str(out), "checkpoint_every": 0, "eval_every": 0, "comm_timeout_s": 60.0,
                "segments_per_call": 1, "spare_replicas": spares}})


def edit_arm(sim, root: Path, steps: int, repeats: int, fault_free: bool, shards: int = 2, spares: int = 0) -> dict:
    """``spares``: run.spare_replicas (a lost replica replaced by started, idle ranks)."""
    from raystack.actors.edit import EDiTGroup

    out: dict = {"recovery_s": [], "survivor_steps_redone": [], "replacement_steps_redone": [], "val_loss": []}
    ensure_nodes(sim)
    group = EDiTGroup(edit_cfg(root / "edit", steps, shards, spares))
    try:
        group.start()
        if fault_free:
            out["val_loss_fault_free"] = group.run(progress=False, save=False).val_loss
        for _ in range(repeats):
            ensure_nodes(sim)
            group.reconfigure(edit_cfg(root / "edit", steps, shards, spares))
            where = sim.actor_nodes(dict(zip(group.group.keys, group.workers)))
            group.wait_for_spares()        # started, as in any run longer than a spare's start
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
        out["spares_used"] = len(group.promoted) // shards
    finally:
        group.shutdown()
    return out


# ---- torchft: a replica group killed and healed from its live peer --------------------------------
TORCHFT_KILL_AT_SYNC = 3          # the victim is killed as it reports its 3rd committed sync (EDiT: segment 3)
TORCHFT_QUICK_NOTE = (
    "torchft arm: full run only. Its three cold process starts (interpreter, torch, transformers, torchft: ~6 "
    "CPU-s each) cost ~12 s of a 2-core machine, over what the quick run may add; edit_vs_torchft_recovery "
    "reads n/a here.")
TORCHFT_NOTE = (
    "torchft arm: torchft 0.2.0 DiLoCo (the fair peer: EDiT's arm is local SGD syncing every H = 6 steps, and "
    "both heal a newcomer at the next sync; torchft's DDP-style Manager would quorum every step), the EDiT arm's "
    "model, data, H, inner AdamW and outer Nesterov SGD; 2 replica groups, each one process (world size 1, the "
    "replica's whole batch) with its Manager (use_async_quorum=False, timeouts 60 s), TCPStore and gloo group, on "
    "a fresh lighthouse in the driver (torchft's default join/heartbeat timeouts); min_replicas 2 in the "
    "lighthouse and the Managers, so the job keeps both replicas as EDiT's does (the survivor waits at its next "
    "sync's quorum, survivor_wait_s; with 1 it would train on alone meanwhile); no synchronous warm-up (torchft "
    "has none). Replica 1 is killed (SIGKILL by pid) as it reports its 3rd committed sync and "
    "restarted at once as a fresh process (interpreter, torch, transformers and torchft imports included, as "
    "EDiT's replacement actor starts its own); it trains one window from a fresh model, then the quorum of that "
    "sync heals it from the live peer over torchft's HTTP checkpoint transport (model, inner AdamW state, "
    "DiLoCo's synced parameters and outer momentum, step count; it skips its data stream to the healed step "
    "itself). Recovery = kill -> its first step after the heal. No link model in either arm: EDiT's heal state "
    "travels through Ray's object store, outside its simulated link, and its reliability arm sets none, so this "
    "arm sets none either. Plain processes beside the simulated cluster (idle meanwhile), not Ray actors.")
TORCHFT_TIMEOUT_S = 300.0         # a run of the arm that takes longer is a failure, not a figure
TORCHFT_MANAGER_TIMEOUT_S = 60.0  # the Managers' quorum, collective and checkpoint-transfer timeouts
REPLICA_SCRIPT = Path(__file__).resolve().parent / "_torchft_replica.py"


class TorchFTRun:
    """One torchft DiLoCo job of 2 replica groups, each a process of ``_torchft_replica.py`` on a
    fresh lighthouse in this process; ``kill_at_sync``: replica 1 is killed (SIGKILL, by pid)
    as it reports that many committed syncs, and started again at once, as a supervisor
    (torchelastic, Kubernetes) would restart it on seeing it exit."""

    def __init__(self, cfg: dict, folder: Path, kill_at_sync: int | None) -> None:
        self.cfg, self.folder, self.kill_at_sync = cfg, folder, kill_at_sync
        self.lines: "queue.Queue[tuple[str, dict]]" = queue.Queue()
        self.procs: dict[str, subprocess.Popen] = {}
        self.last_step: dict[str, int] = {}

    def _start(self, name: str, replica: int, lighthouse: str) -> None:
        spec = self.folder / f"{name}.spec.json"
        spec.write_text(json.dumps({"cfg": self.cfg, "replica": replica, "replicas": 2, "lighthouse": lighthouse,
                                    "out": str(self.folder / f"{name}.json"),
                                    "timeout_s": TORCHFT_MANAGER_TIMEOUT_S}))
        env = {**os.environ, "OMP_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join([str(REPLICA_SCRIPT.parent.parent), str(REPLICA_SCRIPT.parent)])}
        with open(self.folder / f"{name}.log", "w") as log:
            proc = subprocess.Popen([sys.executable, str(REPLICA_SCRIPT), str(spec)], stdout=subprocess.PIPE,
                                    stderr=log, text=True, env=env)
        self.procs[name] = proc
        threading.Thread(target=self._read, args=(name, proc), daemon=True).start()

    def _read(self, name: str, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            with contextlib.suppress(ValueError):
                self.lines.put((name, json.loads(line)))

    def run(self) -> dict:
        """Train to the end; the survivor's and the replacement's results, and the kill's time
        and the step the victim had reported last."""
        from torchft.coordination import LighthouseServer

        self.folder.mkdir(parents=True, exist_ok=True)
        lighthouse = LighthouseServer(bind="[::]:0", min_replicas=2)    # fresh: no stale replicas
        seen: dict = {}
        try:
            self._start("r0", 0, lighthouse.address())
            self._start("r1", 1, lighthouse.address())
            deadline = time.time() + TORCHFT_TIMEOUT_S
            while any(p.poll() is None for p in self.procs.values()):
                if time.time() > deadline:
                    raise TimeoutError(f"torchft run did not end within {TORCHFT_TIMEOUT_S:g}s (logs in {self.folder})")
                with contextlib.suppress(queue.Empty):
                    name, line = self.lines.get(timeout=0.2)
                    self.last_step[name] = line["step"]
                    if name == "r1" and self.kill_at_sync is not None and line["syncs"] >= self.kill_at_sync \
                            and "t" not in seen:
                        os.kill(self.procs["r1"].pid, signal.SIGKILL)
                        seen["t"] = time.time()
                        self.procs["r1"].wait()
                        seen["step"] = self.last_step["r1"]
                        self._start("r1-restarted", 1, lighthouse.address())
            failed = {n: p.returncode for n, p in self.procs.items()
                      if p.returncode and not (n == "r1" and "t" in seen)}     # the killed one aside
            if failed:
                raise RuntimeError(f"torchft replicas exited with {failed} (logs in {self.folder})")
        finally:
            for p in self.procs.values():
                if p.poll() is None:
                    p.kill()
                    p.wait()
            lighthouse.shutdown()
        last = "r1-restarted" if self.kill_at_sync is not None else "r1"
        return {"survivor": json.loads((self.folder / "r0.json").read_text()),
                "replica1": json.loads((self.folder / f"{last}.json").read_text()), "kill": seen}


def torchft_arm(root: Path, steps: int, repeats: int, fault_free: bool, shards: int = 2) -> dict:
    """torchft 0.2.0's DiLoCo on the EDiT arm's model, data and optimizers (H, inner and outer
    settings, a replica's batch), one replica group killed mid-run and restarted."""
    from raystack.config import config_to_dict

    cfg = config_to_dict(edit_cfg(root / "torchft-out", steps, shards))
    h = cfg["sync"]["h"]
    out: dict = {"recovery_s": [], "survivor_steps_redone": [], "replacement_steps_before_heal": [],
                 "survivor_wait_s": [], "val_loss": [], "killed_at_step": []}
    if fault_free:
        res = TorchFTRun(cfg, root / "torchft" / "fault-free", None).run()
        out["val_loss_fault_free"] = res["replica1"]["val_loss"]
    for i in range(repeats):
        res = TorchFTRun(cfg, root / "torchft" / f"loss{i}", TORCHFT_KILL_AT_SYNC).run()
        survivor, new, kill = res["survivor"], res["replica1"], res["kill"]
        if new["first_step_after_heal_t"] is None:
            raise RuntimeError("the restarted torchft replica never healed from its peer")
        out["recovery_s"].append(new["first_step_after_heal_t"] - kill["t"])
        out["survivor_steps_redone"].append(survivor["steps"] - steps)      # windows whose commit failed
        out["replacement_steps_before_heal"].append(new["heal_step"] + 1)   # trained from scratch, then overwritten
        gaps = [b - a for a, b in zip(survivor["times"], survivor["times"][1:]) if a >= kill["t"]]
        out["survivor_wait_s"].append(max(gaps, default=0.0))               # its longest step: blocked in the quorum
        out["val_loss"].append(new["val_loss"])
        out["killed_at_step"].append(kill["step"] + 1)
    if fault_free:
        out["loss_ratio"] = statistics.mean(out["val_loss"]) / out["val_loss_fault_free"]
    out["sync_every"] = h
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
def elastic_cfg(root: Path, name: str, rows: int, workers: int = 2):
    from raystack.config import load_config
    from raystack.elastic.config import ElasticConfig

    return load_config(ElasticConfig, {
        "name": name, "work_dir": str(root / "elastic"), "poll_s": 0.3, "loggers": [],
        "data": {"generate_rows": rows, "generate_files": 3, "out_dir": str(root / "criteo"), "rows_per_shard": 2048},
        "resources": {"autoscale": False, "initial_workers": workers, "initial_ps": 2, "ray_cpus_per_cpu": 1.0,
                      "max_cpus": 8},
        "faults": {"checkpoint_every_s": 1.0}})


def elastic_run(sim, root: Path, name: str, rows: int, lose: bool, workers: int = 2) -> tuple:
    """One elastic job on the cluster; ``lose``: the nodes of the dense PS and of a worker (one
    on another node if there is one) are removed once a sixth of the rows is done. Returns the
    result, the final model (dense, tables), the restores and when the nodes were removed."""
    from raystack.actors.elastic import ElasticController

    ensure_nodes(sim)
    ctl = ElasticController(elastic_cfg(root, name, rows, workers))
    seen: dict = {}

    def remove_nodes(c):
        p = c.loop.last_poll
        if not lose or seen or p is None or p.rows_done < rows // 6:
            return
        where = sim.actor_nodes(c.backend.actors)
        ps = next(u for u in sorted(where) if u.startswith("ps"))
        others = [u for u in sorted(where) if u.startswith("worker")]
        worker = next((u for u in others if where[u] != where[ps]), others[0])
        seen["t"] = time.time()
        for node in {where[ps], where[worker]}:
            sim.remove(node)
    try:
        res = ctl.run(on_step=remove_nodes)
        model = ctl.backend.model_state()
    finally:
        ctl.shutdown()
    return res, model, ctl.backend, seen.get("t")


def elastic_arm(sim, root: Path, rows: int, repeats: int, fault_free: int) -> dict:
    """``fault_free`` runs without a fault (their AUCs are the spread the target reads) and
    ``repeats`` with the node loss, interleaved (fault-free, loss, fault-free, ...)."""
    out: dict = {"recovery_s": [], "rows_redone": [], "lost": [], "duplicated": [], "auc": [], "auc_fault_free": []}
    for i in range(max(fault_free, repeats)):
        if i < fault_free:
            out["auc_fault_free"].append(elastic_run(sim, root, f"ff{i}", rows, lose=False)[0].auc)
        if i >= repeats:
            continue
        res, _, backend, t_lost = elastic_run(sim, root, f"loss{i}", rows, lose=True)
        if t_lost is None or not backend.restores:
            # the nodes were not removed before the epoch ended, or no PS had to be restored (seen
            # once under CI load, with a node declared dead by missed heartbeats first): counted,
            # and the audit below still reads the run, rather than the whole benchmark failing
            out["repeats_without_restore"] = out.get("repeats_without_restore", 0) + 1
        else:
            restore = backend.restores[0]
            # recoveries: a replacement's first commit minus when the loss was first seen
            out["recovery_s"].append(max(backend.recoveries) + restore.time - t_lost)
            out["rows_redone"].append(restore.rows_redone)
        out["lost"].append(res.lost)
        out["duplicated"].append(res.duplicated)
        out["auc"].append(res.auc)
    return out


def elastic_exact_arm(sim, root: Path, rows: int) -> dict:
    """One worker (its batches in one order, so a run is deterministic): the same node loss,
    and the final model against a fault-free run's, element by element: the restore is exact
    when they are equal (with two workers the interleaving of their updates differs run to run)."""
    clean, (dense0, tables0), _, _ = elastic_run(sim, root, "exact-ff", rows, lose=False, workers=1)
    res, (dense1, tables1), backend, _ = elastic_run(sim, root, "exact-loss", rows, lose=True, workers=1)
    diff = max([float(abs(dense0[k] - dense1[k]).max()) for k in dense0]
               + [float(abs(tables0[t] - tables1[t]).max()) for t in tables0])
    return {"max_weight_diff": diff, "auc": res.auc, "auc_fault_free": clean.auc, "lost": res.lost,
            "duplicated": res.duplicated, "restores": len(backend.restores),
            "rows_redone": [r.rows_redone for r in backend.restores]}


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
    steps, rows, repeats = (48, 12_000, 1) if q else (48, 24_000, 3)  # quick: node-loss arms, no autoscaler
    elastic_fault_free = 1 if q else 4           # the spread the elastic AUC target reads
    report = Report("reliability", q, {"edit_steps": steps, "elastic_rows": rows, "repeats": repeats,
                                       "elastic_fault_free_runs": elastic_fault_free, "nodes": 4, "cpus_per_node": 2})
    report.note("Simulated: 4 nodes of 2 logical CPUs as separate raylets on one 2-core machine, each with its "
                "own working directory; node loss = remove_node without warning. Short detection: GCS health "
                "check every 0.5 s, 3 misses; default: Ray's. Timings are noisy (a shared machine).")
    report.note(TORCHFT_NOTE if not q else TORCHFT_QUICK_NOTE)
    root = Path(tempfile.mkdtemp(prefix="raystack-reliability-"))

    def timed(name: str, fn, *a, **kw) -> dict:
        t0 = time.time()
        figures = fn(*a, **kw)
        return report.arm(name, **figures, seconds=round(time.time() - t0, 1))

    sim = start_cluster(SHORT, root)
    try:
        edit = timed("edit_short", edit_arm, sim, root, steps, repeats, fault_free=not q, shards=1 if q else 2)
        spare = timed("edit_spare_short", edit_arm, sim, root, steps, repeats, fault_free=False, spares=1) \
            if not q else None
        tft = timed("torchft", torchft_arm, root, steps, repeats, fault_free=True) if not q else None
        ml = timed("mlora_short", mlora_arm, sim, root, repeats)
        el = timed("elastic_short", elastic_arm, sim, root, rows, repeats, fault_free=elastic_fault_free)
        exact = timed("elastic_exact", elastic_exact_arm, sim, root, rows) if not q else None
        scale = timed("autoscaler", autoscale_arm, sim, root, rows) if not q else None
    finally:
        sim.shutdown()
    if not q:  # Ray's default failure detection, one repeat of each part
        sim = start_cluster(DEFAULT, root)
        try:
            timed("edit_default", edit_arm, sim, root, steps, 1, fault_free=False)
            timed("mlora_default", mlora_arm, sim, root, 1)
            timed("elastic_default", elastic_arm, sim, root, rows, 1, fault_free=0)
        finally:
            sim.shutdown()
    for arm in report.arms.values():
        if "recovery_s" in arm:
            arm["recovery_p50_s"], arm["recovery_p95_s"] = pct(arm["recovery_s"], 0.5), pct(arm["recovery_s"], 0.95)

    report.target("edit_vs_torchft_recovery", edit["recovery_p50_s"] / tft["recovery_p50_s"] if tft else None, "<=",
                  1.0, "EDiT recovery (node loss -> the replacement's first step) over torchft's (SIGKILL -> the "
                  "restarted replica's first step after its heal from the live peer), p50 over p50; same model, no "
                  f"link model in either; per repeat, s: EDiT {listed(edit['recovery_s'], 1)}, torchft "
                  + (listed(tft["recovery_s"], 1) if tft else "not run (--quick)"))
    if spare is not None:
        report.target("edit_spare_vs_torchft_recovery", spare["recovery_p50_s"] / tft["recovery_p50_s"], "<=", 1.0,
                      "the same with run.spare_replicas=1 (one replica's ranks started ahead, idle, on a node of "
                      "their own; the lost replica's place taken by them: no process start), p50 over p50; per "
                      f"repeat, s: {listed(spare['recovery_s'], 1)} ({spare['spares_used']} of {repeats} by a spare)")
        report.target("edit_spare_survivor_rollback_steps", max(spare["survivor_steps_redone"]), "==", 0,
                      "with a spare replica: steps the surviving replica ran twice after the node loss")
    report.target("edit_survivor_rollback_steps", max(edit["survivor_steps_redone"]), "==", 0,
                  "steps the surviving replica ran twice after the node loss")
    if "val_loss_fault_free" in edit:
        report.target("edit_loss_ratio", statistics.mean(edit["val_loss"]) / edit["val_loss_fault_free"], "<=", 1.05,
                      "final val loss after a node loss over the fault-free run's")
    report.target("mlora_max_weight_diff", max(ml["max_weight_diff"]), "<=", 1e-5,
                  "adapter weights after a stage's node loss vs the single-process reference (max abs)")
    report.target("elastic_lost", max(el["lost"]), "==", 0, "samples never trained (audit by sample id)")
    report.target("elastic_duplicated", max(el["duplicated"]), "==", 0, "samples trained twice")
    report.target("elastic_recovery_p95_s", el.get("recovery_p95_s"), "<=", 10.0,
                  "node loss (dense PS + a worker) -> a replacement's first committed batch, short detection"
                  + (f"; {el['repeats_without_restore']} repeat(s) had no PS restore and are not timed"
                     if el.get("repeats_without_restore") else ""))
    ff = el["auc_fault_free"]
    report.target("elastic_auc_delta", min(ff) - min(el["auc"]), "<=", 0.005,
                  f"lowest AUC after the node loss below the lowest of {len(ff)} fault-free run(s) (their spread: "
                  f"{min(ff):.4f}-{max(ff):.4f}); after the loss: {listed(el['auc'], 4)}")
    if exact is not None:
        report.target("elastic_exact_restore", exact["max_weight_diff"], "==", 0.0,
                      "one worker (a deterministic run): the final model after the same node loss vs the fault-free "
                      f"run's, max abs difference over the dense net and every table ({exact['restores']} restore, "
                      f"{listed(exact['rows_redone'], 0)} rows redone; lost {exact['lost']}, duplicated "
                      f"{exact['duplicated']}; AUC {exact['auc']:.4f} vs {exact['auc_fault_free']:.4f})")
    if scale is not None:
        report.target("autoscaler_scaled_up", float(scale["nodes_launched"]), ">=", 1,
                      "nodes the autoscaler launched for the job's capacity request")
        report.target("autoscaler_scaled_down", float(scale["nodes_left_after"]), "==", 0,
                      "launched nodes left once the job ended and cleared its request")
    report.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
