"""mLoRA on a simulated multi-node cluster: stages spread over nodes (Ray's state API), and the
node of a stage lost mid-window: the stage restarts on another node from the last checkpoints,
every adapter ends with the weights of a single-process run (1e-5), and the adapter that had
finished before the loss is not trained again."""
from __future__ import annotations

import pytest
import torch

from raystack.mlora.config import load_mlora_config
from raystack.mlora.export import read_peft
from raystack.mlora.jobs import form_lanes
from raystack.mlora.trainer import train_single_process

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def cfg_for(out_dir):
    adapters = [dict(name="rev", r=4, alpha=8, dropout=0.1, target_modules=["q_proj", "v_proj"], seed=1),
                dict(name="cpy", r=2, alpha=4, target_modules=["k_proj", "lm_head"], seed=3)]
    datasets = [dict(name="reverse", synthetic="reverse", num_examples=48, seed=0),
                dict(name="copy", synthetic="copy", num_examples=48, seed=1)]
    tasks = [dict(adapter="rev", dataset="reverse", batch_size=4, micro_batch_size=2, max_steps=6, cutoff_len=16),
             dict(adapter="cpy", dataset="copy", batch_size=4, micro_batch_size=2, max_steps=2, cutoff_len=16)]
    return load_mlora_config({"base": "tiny-1m", "output_dir": str(out_dir), "datasets": datasets,
                              "adapters": adapters, "tasks": tasks, "eval": False, "loggers": [],
                              "pipeline": {"stages": 2, "window_steps": 2}})


def test_a_stage_lost_with_its_node_restarts_elsewhere_and_adapters_match_a_fault_free_run(nodes, tmp_path):
    from raystack.actors.mlora import LoRAPipeline

    sim = nodes
    cfg = cfg_for(tmp_path / "out")
    stage, _ = train_single_process(cfg_for(tmp_path / "ref"), lanes=form_lanes(["cpy", "rev"], 2))
    reference = {n: stage.model.adapter_state(n) for n in ("cpy", "rev")}

    pipe = LoRAPipeline(cfg, progress=False)
    lost = {}

    def lose_stage_1(window, p):
        if window == 1 and not lost:             # 'cpy' finished in window 0; 'rev' mid-way
            where = sim.actor_nodes({"s0": p.stages[0], "s1": p.stages[1]})
            assert where["s0"] != where["s1"], where   # stages spread over nodes
            lost["node"] = where["s1"]
            sim.remove(where["s1"])

    try:
        pipe.start()
        result = pipe.run(after_submit=lose_stage_1)
        after = sim.actor_nodes({"s1": pipe.stages[1]})
    finally:
        pipe.shutdown()
    assert lost and result.restarts == 1 and after["s1"] != lost["node"]
    assert len(result.losses["cpy"]) == 2 and len(result.losses["rev"]) == 6   # nothing trained twice
    assert all("cpy" not in w.losses for w in result.windows[1:])              # finished: never again
    for name, ref in reference.items():
        _, state = read_peft(result.adapters[name], name)
        for k in ref:
            assert torch.allclose(state[k], ref[k], atol=1e-5, rtol=0), (name, k)
