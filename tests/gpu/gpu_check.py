"""One prepared check of raystack's CUDA/NCCL paths, for a machine with a GPU.

    python tests/gpu/gpu_check.py [--out results.json]

Checks: CommGroup over NCCL in 2 processes (ops, values, byte counts, network-model delay);
model factory on CUDA (bf16 step throughput of small-50m); BatchLoRA on CUDA (gradients equal
separate training in fp32; 8 adapters batched vs stepped one by one); EDiT ranks on CUDA (the
same parameters as on the CPU, ranks as threads over the in-process comm; EDiT, DiLoCo, the
overlapped update, eager, int8 and fp16 pseudo-gradients); the mLoRA pipeline's stage code on
CUDA with activations handed over through the CPU, as between stage actors (the same adapters
as one whole-model stage on the CPU); FSDP2 over gloo on CUDA, alone and as EDiT's full
sharding in 4 processes (the unsharded CPU run's parameters); Ray actors on the GPU (needs
Ray): EDiT ranks sharing it through ``run_edit`` (the CPU run's losses), a killed rank
replaced on it, and mLoRA stage actors on it through two kills (one CPU process's adapters).
``--only NAME,...`` runs some checks; ``--device cpu`` dry-runs the EDiT, pipeline, FSDP and
Ray checks here (CPU against CPU). Prints JSON. Not collected by pytest (CI has no GPU).
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402


def _comm_worker(rank: int, world: int, port: int, backend: str, q) -> None:
    from raystack.comm import CommGroup, NetworkModel, ring_bytes

    try:
        torch.cuda.set_device(rank % torch.cuda.device_count())
        g = CommGroup.init(rank, world, "127.0.0.1", port, backend=backend, timeout_s=60)
        dev = torch.device("cuda", torch.cuda.current_device())
        t = torch.full((1 << 20,), float(rank + 1), device=dev)
        g.all_reduce(t)
        ok_sum = bool(torch.all(t == sum(range(1, world + 1))).item())
        parts = g.all_gather(torch.tensor([float(rank)], device=dev))
        ok_gather = [p.item() for p in parts] == [float(r) for r in range(world)]
        b = torch.tensor([float(rank)], device=dev)
        g.broadcast(b, src=world - 1)
        ok_bcast = b.item() == float(world - 1)
        stats = g.stats()
        ok_bytes = stats["all_reduce"]["bytes"] == ring_bytes("all_reduce", 4 << 20, world)
        g.network = NetworkModel(0.02, 1e9)
        from raystack.comm import SimulatedLink
        g._link = SimulatedLink(g.network)
        t0 = time.monotonic()
        h = g.all_reduce(torch.ones(1 << 20, device=dev), async_op=True)
        issue = time.monotonic() - t0
        h.wait()
        torch.cuda.synchronize()
        total = time.monotonic() - t0
        expected = 0.02 + ring_bytes("all_reduce", 4 << 20, world) / 1e9
        q.put({"rank": rank, "ok_sum": ok_sum, "ok_gather": ok_gather, "ok_bcast": ok_bcast, "ok_bytes": ok_bytes,
               "async_issue_s": issue, "async_total_s": total, "expected_s": expected,
               "ok_delay": total >= expected and issue < expected / 2})
        g.destroy()
    except Exception as exc:  # report, do not hang the parent
        q.put({"rank": rank, "error": f"{type(exc).__name__}: {exc}"})


def check_comm() -> dict:
    """NCCL across 2 processes; on a single GPU NCCL refuses two ranks on one device, so the same
    checks then run over gloo with CUDA tensors (the CUDA tensor path of CommGroup)."""
    out = {"nccl": _run_comm("nccl")}
    if any("Duplicate GPU" in r.get("error", "") for r in out["nccl"]["ranks"]):
        out["gloo_cuda_tensors"] = _run_comm("gloo")
    return out


def _run_comm(backend: str) -> dict:
    from raystack.cluster import free_port

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    world = 2
    port = free_port()
    procs = [ctx.Process(target=_comm_worker, args=(r, world, port, backend, q)) for r in range(world)]
    for p in procs:
        p.start()
    out = []
    for _ in procs:
        try:
            out.append(q.get(timeout=120))
        except Exception:
            out.append({"error": "timeout"})
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
    return {"world": world, "gpus": torch.cuda.device_count(), "ranks": out}


def check_model() -> dict:
    from raystack.data import BatchStream, stdlib_corpus
    from raystack.models import build_model, count_parameters, lm_loss

    model = build_model("small-50m", dtype=torch.bfloat16).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    stream = BatchStream(stdlib_corpus(max_bytes=2_000_000).train, batch_size=32, seq_len=512)
    losses, times = [], []
    for i in range(12):
        batch = stream.next_batch().cuda()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = lm_loss(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    step = sorted(times[2:])[len(times[2:]) // 2]
    return {"params": count_parameters(model), "median_step_s": step, "tokens_per_s": 32 * 512 / step,
            "loss_first_last": [losses[0], losses[-1]], "ok": losses[-1] < losses[0]}


def check_batchlora() -> dict:
    from raystack.mlora.batchlora import AdapterSpec, BatchLoRAModel, per_adapter_loss, segments_for
    from raystack.models import build_model

    torch.manual_seed(0)
    base = build_model("tiny-20m").cuda()
    specs = [AdapterSpec(f"a{i}", "lora" if i % 2 == 0 else "dora", r=8, alpha=16, dropout=0.1,
                         target_modules=("q_proj", "v_proj", "up_proj"), seed=i) for i in range(3)]
    rows = {"a0": 3, "a1": 2, "a2": 4}
    g = torch.Generator(device="cpu").manual_seed(1)
    data = {n: torch.randint(0, 256, (r, 33), generator=g).cuda() for n, r in rows.items()}

    def make(sp):
        m = BatchLoRAModel(copy.deepcopy(base)).cuda().train()
        for s in sp:
            m.add_adapter(s)
            with torch.no_grad():
                for w in m.adapter_weights(s.name).values():
                    w.lora_B.normal_(0, 0.1, generator=torch.Generator(device=w.lora_B.device).manual_seed(s.seed + 7))
        return m

    batched = make(specs)
    segs = segments_for(list(rows.items()))
    ids = torch.cat([data[n][:, :-1] for n in rows])
    labels = torch.cat([data[n][:, 1:] for n in rows])
    batched.zero_grad()
    sum(per_adapter_loss(batched(ids, segs), labels, segs).values()).backward()
    max_err = 0.0
    for s in specs:
        alone = make([s])
        sg = segments_for([(s.name, rows[s.name])])
        alone.zero_grad()
        sum(per_adapter_loss(alone(data[s.name][:, :-1], sg), data[s.name][:, 1:], sg).values()).backward()
        for pb, pa in zip(batched.adapter_parameters(s.name), alone.adapter_parameters(s.name)):
            max_err = max(max_err, (pb.grad - pa.grad).abs().max().item())

    # speed: 8 adapters x 2 rows, batched in one pass vs one adapter at a time
    many = make([AdapterSpec(f"s{i}", "lora", r=8, alpha=16, target_modules=("q_proj", "v_proj", "up_proj"), seed=i)
                 for i in range(8)])
    x = torch.randint(0, 256, (16, 129), device="cuda")

    def batched_step():
        sg = segments_for([(f"s{i}", 2) for i in range(8)])
        sum(per_adapter_loss(many(x[:, :-1], sg), x[:, 1:], sg).values()).backward()

    def sequential_step():
        for i in range(8):
            sg = segments_for([(f"s{i}", 2)])
            sum(per_adapter_loss(many(x[2 * i:2 * i + 2, :-1], sg), x[2 * i:2 * i + 2, 1:], sg).values()).backward()

    def timed(fn, reps=10):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / reps

    tb, ts = timed(batched_step), timed(sequential_step)
    return {"max_grad_err": max_err, "ok_exact": max_err < 1e-4, "batched_s": tb, "sequential_s": ts,
            "speedup": ts / tb}


def _exact_cuda() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False  # compare fp32 with fp32
    torch.backends.cudnn.allow_tf32 = False


def check_edit(device: str = "cuda") -> dict:
    """EDiT / DiLoCo ranks with their model on ``device`` reach the CPU run's parameters."""
    from raystack.config import load_config
    from raystack.edit.config import EDiTConfig
    from raystack.edit.localcomm import run_in_threads
    from raystack.edit.replica import EDiTRank
    from tests.edit.test_edit_equivalence import ReplicaBatches, tiny_llama

    _exact_cuda()
    out = {}
    long_sync = {"warmup_steps": 2, "h": 4}  # the overlapped and compressed variants: 16 steps, 3 syncs
    variants = {"edit_S1": ("edit", 1, 8, {}), "edit_S2": ("edit", 2, 8, {}), "diloco_S1": ("diloco", 1, 8, {}),
                "edit_tau2": ("edit", 1, 16, {**long_sync, "overlap_steps": 2}),
                "edit_tau2_eager": ("edit", 1, 16, {**long_sync, "overlap_steps": 2, "overlap_eager": True}),
                "edit_int8": ("edit", 1, 16, {**long_sync, "compression": "int8"}),
                "edit_fp16_S2": ("edit", 2, 16, {**long_sync, "compression": "fp16"})}
    for name, (mode, shards, steps, sync) in variants.items():
        cfg = load_config(EDiTConfig, {"model": "tiny-1m", "mode": mode, "ranks": 2 * shards, "shards": shards,
                                       "steps": steps, "sync": sync or {"warmup_steps": 2, "h": 2},
                                       "inner": {"optimizer": "adamw", "lr": 1e-3}})

        def go(dev):
            def rank_fn(comm):
                replica, shard = divmod(comm.rank, cfg.shards)
                r = EDiTRank(cfg, tiny_llama().to(dev), comm, ReplicaBatches(replica, shard, cfg.shards))
                losses = []
                while not r.done:
                    losses.append(r.train_step())
                    r.maybe_sync()
                r.flush()
                return [p.detach().cpu() for p in r.model.parameters()], losses, r.device.type, r.counters.syncs
            return run_in_threads(cfg.ranks, rank_fn)
        ref, got = go("cpu"), go(device)
        diff = max(float((a - b).abs().max()) for (pa, *_), (pb, *_) in zip(ref, got) for a, b in zip(pa, pb))
        out[name] = {
            "max_param_diff": diff, "devices": sorted({g[2] for g in got}), "syncs": got[0][3],
            "last_loss_cpu_vs_device": [ref[0][1][-1], got[0][1][-1]],
            "ok": diff < 1e-4 and {g[2] for g in got} == {torch.device(device).type} and got[0][3] > 0}
    out["ok"] = all(v["ok"] for v in out.values())
    return out


def check_pipeline(device: str = "cuda") -> dict:
    """Two LoRA pipeline stages on ``device`` (activations and gradients handed over through the
    CPU, as the stage actors do) train the same adapters as one whole-model stage on the CPU."""
    from raystack.devices import to_cpu
    from raystack.mlora.batchlora import AdapterSpec, segments_for
    from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel
    from tests.mlora.mlora_helpers import tiny_llama

    _exact_cuda()
    names = ("a", "b")

    def run(dev, split):
        n_units = len(tiny_llama().model.layers) + 2
        bounds = [(0, 3), (3, n_units)] if split else [(0, n_units)]
        stages = [StageModel(tiny_llama(seed=0).to(dev), a, b) for a, b in bounds]
        for st in stages:
            for i, nm in enumerate(names):
                st.add_adapter(AdapterSpec(nm, r=4, alpha=8, kind="dora" if nm == "b" else "lora",
                                           target_modules=("q_proj", "v_proj", "o_proj", "lm_head"), seed=i),
                               OptimSpec(lr=1e-2))
        g = torch.Generator().manual_seed(0)
        losses = []
        for step in range(4):
            ids = torch.randint(0, 256, (4, 17), generator=g)
            mb = MicroBatch((step,), segments_for([("a", 2), ("b", 2)]), {}, names)
            x, labels = ids[:, :-1], ids[:, 1:]
            if split:
                h = to_cpu(stages[0].forward(mb, x))
                losses.append(stages[1].forward(mb, h, labels))
                stages[0].backward(mb, to_cpu(stages[1].backward(mb)))
            else:
                losses.append(stages[0].train_step([(mb, x, labels)]))
        state = {}
        for st in stages:
            for nm in names:
                state.update({f"{nm}:{k}": v for k, v in to_cpu(st.adapter_state(nm)).items()})
        return state, losses, stages[-1].device.type
    ref, _, _ = run("cpu", split=False)
    got, losses, dev = run(device, split=True)
    diff = max(float((ref[k] - got[k]).abs().max()) for k in ref)
    return {"max_adapter_diff": diff, "same_keys": set(ref) == set(got), "stage_device": dev,
            "losses": losses[-1], "ok": diff < 1e-4 and set(ref) == set(got) and dev == torch.device(device).type}


def _fsdp_rank(rank: int, world: int, port: int, out_dir: str, device: str, steps: int, common: dict) -> None:
    """One process of the FSDP check: rank ``rank`` of a gloo world (NCCL refuses two ranks on
    one GPU), replica rank // 2, its model on ``device`` and FSDP2 over its replica's 2 ranks."""
    import faulthandler

    faulthandler.enable()
    torch.set_num_threads(1)
    from raystack.comm import CommGroup
    from raystack.config import load_config
    from raystack.edit.config import EDiTConfig
    from raystack.edit.replica import EDiTRank
    from tests.edit.test_edit_equivalence import ReplicaBatches, tiny_llama

    _exact_cuda()
    cfg = load_config(EDiTConfig, {"model": "tiny-1m", "ranks": world, "shards": 2, "full_shard": True,
                                   "steps": steps, **common})
    comm = CommGroup.init(rank, world, "127.0.0.1", port, backend="gloo", timeout_s=120)
    replica, shard = divmod(rank, 2)
    try:
        r = EDiTRank(cfg, tiny_llama().to(device), comm, ReplicaBatches(replica, shard, 2))
        while not r.done:
            r.train_step()
            r.maybe_sync()
        r.flush()
        full = {k: v.detach().cpu() for k, v in r.full_state_dict().items()}  # collective within the replica
        if shard == 0:
            torch.save(full, Path(out_dir) / f"replica{replica}.pt")
        info = {"memory": r.memory(), "device": r.device.type, "syncs": r.counters.syncs,
                "cuda_peak_bytes": torch.cuda.max_memory_allocated() if device == "cuda" else 0}
    except Exception as exc:
        info = {"error": f"{type(exc).__name__}: {exc}"[-1500:]}
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(info))
    comm.destroy()


def _fsdp_minimal_rank(rank: int, world: int, port: int, device: str, out_dir: str) -> None:
    """Plain torch, no raystack: FSDP2 over gloo on one Linear with its tensors on ``device``."""
    import faulthandler

    import torch.distributed as dist
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard

    faulthandler.enable()
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    steps = []
    try:
        torch.manual_seed(0)
        model = torch.nn.Linear(8, 8).to(device)
        fully_shard(model, mesh=DeviceMesh.from_group(dist.group.WORLD, device_type=torch.device(device).type))
        steps.append("sharded")
        loss = model(torch.ones(4, 8, device=device)).sum()
        steps.append("forward")
        loss.backward()
        steps.append("backward")
        info = {"ok": True, "steps": steps}
    except Exception as exc:
        info = {"ok": False, "steps": steps, "error": f"{type(exc).__name__}: {exc}"[-800:]}
    (Path(out_dir) / f"min{rank}.json").write_text(json.dumps(info))
    dist.destroy_process_group()


def check_fsdp_minimal(device: str = "cuda") -> dict:
    """Whether FSDP2 itself runs over gloo with CUDA tensors (2 ranks on one GPU, as the device
    plan gives when ranks outnumber GPUs), apart from raystack."""
    import tempfile

    from raystack.cluster import free_port

    with tempfile.TemporaryDirectory() as out_dir:
        try:
            mp.start_processes(_fsdp_minimal_rank, args=(2, free_port(), device, out_dir), nprocs=2,
                               start_method="spawn")
            exit_error = None
        except Exception as exc:
            exit_error = f"{type(exc).__name__}: {exc}"
        ranks = [json.loads(f.read_text()) for f in sorted(Path(out_dir).glob("min*.json"))]
    return {"ranks": ranks, "exit_error": exit_error, "ok": exit_error is None and all(r["ok"] for r in ranks)}


def check_fsdp(device: str = "cuda") -> dict:
    """Full sharding (FSDP2, S = 2) with the model on ``device``: 2 replicas x 2 ranks in real
    processes over gloo reach the unsharded CPU run's parameters (1e-5 over 20 steps on the CPU)."""
    import tempfile

    from raystack.cluster import free_port
    from tests.edit.test_edit_equivalence import run, tiny_llama

    steps = 20
    common = {"mode": "edit", "sync": {"warmup_steps": 4, "h": 4, "state_on_cpu": True},
              "penalty": {"warmup_syncs": 1},
              "inner": {"optimizer": "adamw", "lr": 0.01, "weight_decay": 0.1, "grad_clip": 1.0, "lr_warmup_steps": 2}}
    with tempfile.TemporaryDirectory() as out_dir:
        try:
            mp.start_processes(_fsdp_rank, args=(4, free_port(), out_dir, device, steps, common), nprocs=4,
                               start_method="spawn")
        except Exception as exc:  # a rank that died (a signal) leaves no file
            done = [json.loads(f.read_text()) for f in sorted(Path(out_dir).glob("rank*.json"))]
            return {"exit_error": f"{type(exc).__name__}: {exc}", "ranks_that_reported": done, "ok": False}
        infos = [json.loads((Path(out_dir) / f"rank{r}.json").read_text()) for r in range(4)]
        if any("error" in i for i in infos):
            return {"ranks": infos, "ok": False}
        sharded = [torch.load(Path(out_dir) / f"replica{r}.pt") for r in range(2)]
    ref = run({**common, "ranks": 2, "shards": 1}, steps=steps)
    names = [n for n, _ in tiny_llama().named_parameters()]
    diff = max(float((sharded[r][n] - want).abs().max()) for r in range(2) for n, want in zip(names, ref[r][0]))
    return {"max_param_diff_vs_unsharded_cpu": diff, "devices": sorted({i["device"] for i in infos}),
            "syncs": [i["syncs"] for i in infos], "cuda_peak_bytes": [i["cuda_peak_bytes"] for i in infos],
            "state_bytes_rank0": infos[0]["memory"],
            "ok": diff < 1e-4 and {i["device"] for i in infos} == {torch.device(device).type}}


def _actor_device(actor, path: str) -> str:
    """The device of the tensors an actor holds at attribute ``path`` (run inside the actor)."""
    import ray

    def probe(self):
        obj = self
        for part in path.split("."):
            obj = getattr(obj, part)
        return str(obj if isinstance(obj, torch.device) else next(obj.parameters()).device)
    return ray.get(actor.__ray_call__.remote(probe), timeout=60)


def check_ray(device: str = "cuda") -> dict:
    """Ray actors on the GPU, through the product's own groups: EDiT ranks (2 replicas sharing the
    GPU: num_gpus 0.5, gloo) train as their CPU run does, and a rank killed mid-run is replaced on
    the GPU and the run finishes; 2 mLoRA pipeline stages on the GPU train the adapters one CPU
    process trains, through 2 kills of a stage."""
    import tempfile

    import ray

    from raystack.actors.edit import EDiTGroup, run_edit
    from raystack.actors.mlora import LoRAPipeline
    from raystack.mlora.export import read_peft
    from raystack.mlora.jobs import form_lanes
    from raystack.mlora.trainer import train_single_process
    from tests.edit.test_edit_cluster import small_cfg
    from tests.mlora.test_mlora_pipeline import _cfg as mlora_cfg

    ray.init(num_cpus=8, num_gpus=1 if device == "cuda" else 0, include_dashboard=False, log_to_driver=False)
    out = {"cluster": {k: v for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU")}}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            t0 = time.time()
            cpu = run_edit(small_cfg(tmp / "cpu", run={"device": "cpu"}), progress=False)
            gpu = run_edit(small_cfg(tmp / "gpu", run={"device": device}), progress=False)
            out["edit_same_run"] = {
                "train_loss_cpu_vs_device": [cpu.train_loss, gpu.train_loss],
                "val_loss_cpu_vs_device": [cpu.val_loss, gpu.val_loss], "steps": [cpu.steps, gpu.steps],
                "seconds": round(time.time() - t0, 1),
                "ok": cpu.steps == gpu.steps == 24 and abs(cpu.val_loss - gpu.val_loss) < 1e-3
                and abs(cpu.train_loss - gpu.train_loss) < 1e-3}
            t0 = time.time()
            group = EDiTGroup(small_cfg(tmp / "kill", steps=32, run={"device": device, "eval_every": 4}))
            group.start()
            seen = {"plan": [group.devices.device, group.devices.gpus_per_actor, group.devices.backend]}

            def kill_once(g, segment):
                if segment == 4 and "killed" not in seen:
                    seen["before"] = [_actor_device(w, "trainer.model") for w in g.workers]
                    seen["killed"] = True
                    ray.kill(g.workers[1])
            try:
                res = group.run(progress=False, on_segment=kill_once)
                seen["after"] = [_actor_device(w, "trainer.model") for w in group.workers]
            finally:
                group.shutdown()
            want = torch.device(device).type
            out["edit_kill"] = {**seen, "replacements": res.replacements, "steps": res.steps, "val_loss": res.val_loss,
                                "seconds": round(time.time() - t0, 1),
                                "ok": res.replacements == 1 and res.steps == 32 and res.val_loss < 5.0
                                and all(d.startswith(want) for d in seen["before"] + seen["after"])}

            t0 = time.time()
            ref_cfg = mlora_cfg(tmp / "ref")
            names = sorted(t.adapter for t in ref_cfg.tasks)
            stage, _ = train_single_process(ref_cfg, lanes=form_lanes(names, 2))
            reference = {n: stage.model.adapter_state(n) for n in names}
            cfg = mlora_cfg(tmp / "pipe")
            cfg.pipeline.device = device
            pipe = LoRAPipeline(cfg, progress=False)
            stages = {}

            def kill_stage(window, p):
                if window in (0, 1) and window not in stages:  # as the CPU test kills (no probe here:
                    stages[window] = "killed"                     # it would wait for the stage's work)
                    ray.kill(p.stages[1])
            try:
                result = pipe.run(after_submit=kill_stage)
                stages["after"] = [_actor_device(s, "stage.device") for s in pipe.stages]
            finally:
                pipe.shutdown()
            diff = 0.0
            for n in names:
                _, state = read_peft(result.adapters[n], n)
                diff = max([diff] + [float((state[k] - v).abs().max()) for k, v in reference[n].items()])
            devices = stages["after"]  # both stages, the twice restarted one too
            out["mlora_kill"] = {"stage_devices": stages, "restarts": result.restarts,
                                 "max_adapter_diff_vs_cpu_process": diff, "seconds": round(time.time() - t0, 1),
                                 "ok": result.restarts == 2 and diff < 1e-4
                                 and all(d.startswith(want) for d in devices)}
    finally:
        ray.shutdown()
    out["ok"] = all(v.get("ok") for v in out.values() if isinstance(v, dict) and "ok" in v)
    return out


CHECKS = {"comm_cuda": lambda dev: check_comm(), "model_cuda": lambda dev: check_model(),
          "batchlora_cuda": lambda dev: check_batchlora(), "edit_cuda": check_edit,
          "pipeline_cuda": check_pipeline, "fsdp_minimal_cuda": check_fsdp_minimal, "fsdp_cuda": check_fsdp, "ray_cuda": check_ray}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default=None)
    p.add_argument("--only", default=",".join(CHECKS))
    p.add_argument("--device", default="cuda")
    args = p.parse_args()
    report = {"torch": torch.__version__, "cuda": torch.cuda.is_available(),
              "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    for name in args.only.split(","):
        fn = lambda name=name: CHECKS[name](args.device)  # noqa: E731
        t0 = time.time()
        try:
            report[name] = fn()
        except Exception:
            report[name] = {"error": traceback.format_exc()[-1500:]}
        report[name]["seconds"] = round(time.time() - t0, 1)
        print(name, json.dumps(report[name], default=str)[:600], flush=True)
    text = json.dumps(report, indent=2, default=str)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
