"""The Ray pipeline: same weights as single-process BatchLoRA, jobs added live, stage kill (its
metrics scraped meanwhile)."""

from __future__ import annotations

import pytest
import ray
import torch

from raystack.mlora.config import load_mlora_config
from raystack.mlora.export import read_peft
from raystack.mlora.jobs import form_lanes
from raystack.mlora.trainer import train_single_process
from tests.scrape import scraped

pytestmark = pytest.mark.cluster


def _cfg(tmp_path, extra_task: bool = False):
    adapters = [
        dict(name="rev", type="lora", r=4, alpha=8, dropout=0.1, target_modules=["q_proj", "v_proj", "down_proj"], seed=1),
        dict(name="srt", type="dora", r=2, alpha=4, dropout=0.1, target_modules=["o_proj", "up_proj"], seed=2, lr=5e-3),
        dict(name="cpy", type="lora", r=4, alpha=4, target_modules=["k_proj", "gate_proj", "lm_head"], seed=3,
             optimizer="sgd", lr=0.05, schedule="cosine", warmup_steps=2),
        dict(name="add", type="lora", r=2, alpha=4, target_modules=["q_proj"], seed=4),
    ]
    datasets = [dict(name=t, synthetic=t, num_examples=64, seed=i) for i, t in enumerate(["reverse", "sort", "copy", "arithmetic"])]
    tasks = [dict(adapter="rev", dataset="reverse", batch_size=4, micro_batch_size=2, max_steps=6, cutoff_len=16),
             dict(adapter="srt", dataset="sort", batch_size=3, micro_batch_size=3, max_steps=6, cutoff_len=16),
             dict(adapter="cpy", dataset="copy", batch_size=4, micro_batch_size=2, max_steps=3, cutoff_len=16)]
    if extra_task:
        tasks.append(dict(adapter="add", dataset="arithmetic", batch_size=2, micro_batch_size=1, max_steps=3, cutoff_len=16))
    return load_mlora_config({"base": "tiny-1m", "output_dir": str(tmp_path / "run"), "datasets": datasets,
                              "adapters": adapters, "tasks": tasks,
                              "pipeline": {"stages": 2, "window_steps": 3}})


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    cfg = _cfg(tmp_path_factory.mktemp("ref"), extra_task=True)
    names = sorted(t.adapter for t in cfg.tasks)
    stage, jobs = train_single_process(cfg, lanes=form_lanes(names, 2))
    return {n: stage.model.adapter_state(n) for n in names}


def _assert_same(result, reference, names):
    for n in names:
        _, state = read_peft(result.adapters[n], n)
        ref = reference[n]
        assert set(state) == set(ref), n
        for k in ref:
            assert torch.allclose(state[k], ref[k], atol=1e-5, rtol=0), (n, k, (state[k] - ref[k]).abs().max())
        assert any(not torch.equal(ref[k], torch.zeros_like(ref[k])) for k in ref if k.endswith("lora_B"))


def test_shared_lane_through_two_stages_trains_each_adapter_as_alone_and_admits_live_jobs(ray_cluster, tmp_path,
                                                                                         reference):
    """One lane: every micro-batch carries three adapters' rows (LoRA with dropout, DoRA, LoRA
    with SGD and a schedule; BatchLoRA inside each stage) through 2 stage actors, and a fourth
    job joins the lane while they run; each adapter ends with the weights it gets trained in a
    lane of its own in one process. (One job per lane, the default, is the killed-stage test's.)"""
    from raystack.actors.mlora import LoRAPipeline
    from raystack.mlora.config import TaskConfig

    cfg = _cfg(tmp_path)
    cfg.pipeline.lanes = 1
    pipe = LoRAPipeline(cfg, progress=False)
    added = []

    def add_job(window, p):
        if window == 1:  # a new job arrives while the others run
            p.add_task(TaskConfig(adapter="add", dataset="arithmetic", batch_size=2, micro_batch_size=1,
                                  max_steps=3, cutoff_len=16))
            added.append(window)

    try:
        result = pipe.run(on_window=add_job)
    finally:
        pipe.shutdown()
    assert added == [1] and result.restarts == 0
    assert [w.lanes for w in result.windows[:2]] == [(("cpy", "rev", "srt"),), (("add", "rev", "srt"),)]
    assert sorted(result.adapters) == ["add", "cpy", "rev", "srt"]
    assert all(len(result.losses[n]) == s for n, s in [("rev", 6), ("srt", 6), ("cpy", 3), ("add", 3)])
    _assert_same(result, reference, ["add", "cpy", "rev", "srt"])


def test_killed_stage_restarts_adapters_resume_from_checkpoint_and_metrics_reach_the_dashboard(
        ray_cluster, tmp_path, reference):
    """A stage actor killed twice restarts and every adapter resumes exactly; the README's mLoRA
    series reach the cluster's metrics endpoint throughout (scraped while it runs)."""
    from raystack.actors.mlora import LoRAPipeline

    cfg = _cfg(tmp_path)
    pipe = LoRAPipeline(cfg, progress=False)
    killed, stages_after = {}, []

    def kill_stage(window, p):
        # mid-window 0, before any job's first checkpoint (every job starts over), and
        # mid-window 1, when 'cpy' has finished in window 0 and the others resume
        if window in (0, 1) and window not in killed:
            killed[window] = p.stages[1]
            ray.kill(p.stages[1])

    def run():
        result = pipe.run(after_submit=kill_stage)
        stages_after.extend(pipe.stages)
        return result

    names = ["mlora_loss", "mlora_step", "mlora_tokens_total", "mlora_stage_idle_fraction",
             "mlora_stage_busy_seconds_total"]
    result, s = scraped(run, pipe.shutdown, names)
    assert result.restarts == 2 and sorted(killed) == [0, 1]
    assert all(stages_after[1] is not k for k in killed.values())
    assert sorted(result.adapters) == ["cpy", "rev", "srt"]
    _assert_same(result, reference, ["cpy", "rev", "srt"])  # resumed exactly, nothing lost
    assert 0 < s.increase("mlora_tokens_total") <= result.tokens
    # summed over the adapters (label sets): at most their max_steps each
    assert 0 < max(s.values("mlora_step")) <= sum(t.max_steps for t in cfg.tasks)
    # idle fraction summed over 2 stages
    assert all(0.0 <= v <= 2.0 for v in s.values("mlora_stage_idle_fraction"))
    assert max(s.values("mlora_stage_busy_seconds_total")) > 0


def test_rerun_reports_finished_adapters_and_ignores_checkpoints_of_another_config(ray_cluster, tmp_path):
    """Resuming a run: finished adapters are reported (not retrained, not dropped from the result);
    a changed adapter config does not resume from the old checkpoint. A fresh run into the same
    output_dir gets its own folder and leaves the earlier run's files byte-identical."""
    from raystack.actors.mlora import LoRAPipeline

    def one(steps, r, **run):
        return load_mlora_config({
            "base": "tiny-1m", "output_dir": str(tmp_path / "run"), **run,
            "datasets": [dict(name="copy", synthetic="copy", num_examples=32)],
            "adapters": [dict(name="cpy", r=r, alpha=4, target_modules=["q_proj"])],
            "tasks": [dict(adapter="cpy", dataset="copy", batch_size=2, micro_batch_size=2, max_steps=steps,
                           cutoff_len=16)],
            "pipeline": {"stages": 2, "window_steps": 2}})

    def run_once(cfg):
        pipe = LoRAPipeline(cfg, progress=False)
        try:
            return pipe.run()
        finally:
            pipe.shutdown()

    first = run_once(one(2, 2))
    before = {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file() and p.name != "latest"}
    fresh = run_once(one(2, 2))                          # a fresh run: its own folder
    assert fresh.windows and fresh.adapters["cpy"] != first.adapters["cpy"]
    assert {p: p.read_bytes() for p in before} == before  # the first run's files untouched
    resume = {"run_id": first.adapters["cpy"].split("/")[-3], "resume": True}
    again = run_once(one(2, 2, **resume))
    assert again.adapters == first.adapters and again.windows == []  # reported, nothing retrained
    changed = run_once(one(2, 4, **resume))
    assert "cpy" in changed.adapters and changed.windows  # retrained at the new rank
    assert read_peft(changed.adapters["cpy"], "cpy")[0].r == 4


def test_device_cuda_on_a_cluster_without_gpus_fails_before_any_stage_starts(ray_cluster, tmp_path):
    from raystack.actors.mlora import LoRAPipeline

    cfg = _cfg(tmp_path)
    cfg.pipeline.device = "cuda"
    with pytest.raises(ValueError, match="device: cuda, but the cluster has 0 GPUs"):
        LoRAPipeline(cfg, progress=False)
    cfg.pipeline.device = "bogus"
    with pytest.raises(ValueError, match="device must be 'auto', 'cpu' or 'cuda'"):
        LoRAPipeline(cfg, progress=False)

