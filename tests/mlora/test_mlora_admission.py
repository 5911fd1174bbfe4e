"""Memory-gated admission in the live pipeline: a job waits for memory, then runs; a job that
can never fit is refused with the numbers; measured peaks stay within the budget."""

from __future__ import annotations

import json
import random

import pytest

from raystack.mlora.config import load_mlora_config
from raystack.mlora.memory import MB, job_request

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

SEQ = 256  # tokens per row: activations large against the tiny base


def _cfg(tmp_path):
    rng = random.Random(0)
    path = tmp_path / "text.jsonl"
    path.write_text("".join(json.dumps({"prompt": "", "response": "".join(rng.choice("abcdefgh ") for _ in range(SEQ - 1))})
                            + "\n" for _ in range(48)))
    jobs = {"big1": (32, 3, 1), "big2": (32, 2, 0), "small": (2, 2, 0), "never": (1024, 1, 0)}  # rows, steps, priority
    return load_mlora_config({
        "base": "tiny-1m", "output_dir": str(tmp_path / "run"), "datasets": [{"name": "text", "path": str(path)}],
        "adapters": [{"name": n, "r": 4, "target_modules": ["q_proj", "v_proj"], "seed": i} for i, n in enumerate(jobs)],
        "tasks": [{"adapter": n, "dataset": "text", "batch_size": rows, "micro_batch_size": rows, "max_steps": steps,
                   "cutoff_len": SEQ, "priority": prio} for n, (rows, steps, prio) in jobs.items()],
        "pipeline": {"stages": 2, "window_steps": 2}})


def test_admission_queues_a_job_until_memory_frees_and_refuses_one_that_never_fits(ray_cluster, tmp_path):
    from raystack.actors.mlora import LoRAPipeline

    cfg = _cfg(tmp_path)
    pipe = LoRAPipeline(cfg, progress=False)
    try:
        pipe.start()  # measures each stage's footprint and first activation samples
        task = {t.adapter: t for t in cfg.tasks}
        big_alone = pipe.memory.predict([job_request(task["big1"], cfg.adapter("big1"), pipe.meta, pipe.plan.bounds)])
        # each stage's budget: one big job fits with the margin and 15% to spare for the model's
        # refits (a job that stops fitting alone is refused); two do not
        pipe.policy.budgets = [load.total * (1 + pipe.policy.margin) * 1.15 for load in big_alone]
        result = pipe.run()
    finally:
        pipe.shutdown()
    assert sorted(result.adapters) == ["big1", "big2", "small"]
    assert list(result.refused) == ["never"]
    assert result.refused["never"].startswith("job 'never' can never fit: alone it needs ~")
    assert "over the stage's budget of" in result.refused["never"]
    # the schedule: big1 (higher priority) and small start together; big2 waits for big1 to finish
    assert result.admitted_window["big1"] == result.admitted_window["small"] == 0
    assert result.admitted_window["big2"] == result.finished_window["big1"] + 1
    assert not any({"big1", "big2"} <= set(w.jobs) for w in result.windows)
    # measured memory: every stage's peak within its budget in every window, and predicted within 15%
    for w in result.windows:
        for peak, budget in zip(w.memory, pipe.policy.budgets):
            assert peak.measured_bytes <= budget, (w.window, peak.measured_bytes / MB, budget / MB)
            assert abs(peak.error) < 0.15, (w.window, peak)
