"""One prepared check of raystack's CUDA/NCCL paths, for a machine with a GPU (no Ray needed).

    python tests/gpu/gpu_check.py [--out results.json]

Checks: CommGroup over NCCL in 2 processes (ops, values, byte counts, network-model delay);
model factory on CUDA (bf16 step throughput of small-50m); BatchLoRA on CUDA (gradients equal
separate training in fp32; 8 adapters batched vs stepped one by one). Prints JSON.
Not collected by pytest (CI has no GPU).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
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
    from raystack.comm import free_port

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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    report = {"torch": torch.__version__, "cuda": torch.cuda.is_available(),
              "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    for name, fn in (("comm_cuda", check_comm), ("model_cuda", check_model), ("batchlora_cuda", check_batchlora)):
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
