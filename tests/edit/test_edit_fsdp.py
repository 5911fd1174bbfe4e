"""Full sharding (FSDP2) inside a replica changes memory, not the math.

FSDP2 needs torch.distributed, so the sharded run uses real processes: 2 replicas x 2 ranks on
gloo, each rank an ``EDiTRank`` over ``raystack.comm.CommGroup``. The unsharded reference runs
its 2 replicas as threads (each replica's batch = the rows its two sharded ranks split).
"""
import json
import os

import torch
import torch.multiprocessing as mp

from raystack.cluster import free_port
from raystack.config import load_config
from raystack.edit.config import EDiTConfig
from test_edit_equivalence import ReplicaBatches, run, tiny_llama

STEPS = 20
COMMON = {"mode": "edit", "sync": {"warmup_steps": 4, "h": 4}, "penalty": {"warmup_syncs": 1},
          "inner": {"optimizer": "adamw", "lr": 0.01, "weight_decay": 0.1, "grad_clip": 1.0, "lr_warmup_steps": 2}}


def _sharded_rank(rank: int, world: int, port: int, out_dir: str) -> None:
    """One process: rank ``rank`` of a gloo world, replica rank // 2, FSDP2 over its replica."""
    torch.set_num_threads(1)
    from raystack.comm import CommGroup
    from raystack.edit.replica import EDiTRank
    cfg = load_config(EDiTConfig, {"model": "tiny-1m", "ranks": world, "shards": 2, "full_shard": True,
                                   "steps": STEPS, **COMMON, "sync": {**COMMON["sync"], "state_on_cpu": True}})
    comm = CommGroup.init(rank, world, "127.0.0.1", port, backend="gloo", timeout_s=120)
    replica, shard = divmod(rank, 2)
    r = EDiTRank(cfg, tiny_llama(), comm, ReplicaBatches(replica, shard, 2))
    while not r.done:
        r.train_step()
        r.maybe_sync()
    r.flush()
    full = r.full_state_dict()                    # collective within the replica
    # the gather through CPU copies (what ranks sharing a GPU over gloo use) gives the same tensors
    from raystack.edit.fsdp import full_tensor
    via_cpu = {k: full_tensor(v, through_cpu=True) for k, v in r.model.state_dict().items()}
    cpu_gather_equal = sorted(via_cpu) == sorted(full) and all(torch.equal(via_cpu[k], full[k]) for k in full)
    mem = r.memory()
    if shard == 0:
        torch.save({k: v for k, v in full.items()}, os.path.join(out_dir, f"replica{replica}.pt"))
    if replica == 0:                               # gathers within replica 0; rank 0 writes
        r.save_pretrained(os.path.join(out_dir, "model"), write=rank == 0)
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump({"memory": mem, "state_device": str(r.theta_sync[0].device), "syncs": r.counters.syncs,
                   "local_numel": sum(t.numel() for t in r.theta_sync),
                   "cpu_gather_equal": cpu_gather_equal}, f)
    comm.destroy()


def test_fully_sharded_edit_equals_unsharded_over_20_steps_at_under_0_6x_the_memory(tmp_path):
    mp.start_processes(_sharded_rank, args=(4, free_port(), str(tmp_path)), nprocs=4, start_method="spawn")
    ref = run({**COMMON, "ranks": 2, "shards": 1,
               "inner": COMMON["inner"], "sync": COMMON["sync"], "penalty": COMMON["penalty"]}, steps=STEPS)
    names = [n for n, _ in tiny_llama().named_parameters()]
    for replica in range(2):
        sharded = torch.load(tmp_path / f"replica{replica}.pt")
        for name, want in zip(names, ref[replica][0]):
            got = sharded[name]
            assert torch.allclose(got, want, atol=1e-5, rtol=0), (replica, name, float((got - want).abs().max()))
    # memory: parameters, gradients, AdamW state and the outer state of one rank, S = 2 vs S = 1
    unsharded = ref[0][2]
    full = sum(unsharded.state_bytes.values()) + unsharded.extra_state_bytes()
    infos = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(4)]
    for info in infos:
        m = info["memory"]
        held = m["params"] + m["grads"] + m["optimizer"] + m["outer"]
        assert held <= 0.6 * full, (held, full)
        assert info["state_device"] == "cpu" and info["syncs"] == ref[0][2].counters.syncs
        assert info["cpu_gather_equal"]
    # each rank's outer state covers its half of every block
    assert infos[0]["local_numel"] + infos[1]["local_numel"] == sum(p.numel() for p in tiny_llama().parameters())
    # the gathered checkpoint loads with transformers and holds replica 0's parameters
    from transformers import AutoModelForCausalLM
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path / "model")
    for (name, p), want in zip(loaded.named_parameters(), ref[0][0]):
        assert torch.allclose(p, want, atol=1e-5, rtol=0), name
