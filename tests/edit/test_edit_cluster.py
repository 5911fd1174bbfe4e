"""EDiT on real Ray actors: an end-to-end run, kill-and-replace (its metrics scraped meanwhile), and resume."""
import pytest
import ray
import torch

from raystack.config import load_config
from raystack.edit.config import EDiTConfig
from tests.scrape import scraped

pytestmark = pytest.mark.cluster


def small_cfg(tmp_path, **over):
    base = {"model": "tiny-1m", "mode": "edit", "ranks": 2, "steps": 24,
            "sync": {"h": 4, "warmup_steps": 4},
            "data": {"max_bytes": 300_000, "batch_size": 4, "seq_len": 32, "eval_batches": 2},
            "penalty": {"warmup_syncs": 1},
            "run": {"out_dir": str(tmp_path / "run"), "checkpoint_every": 2, "eval_every": 0,
                    "comm_timeout_s": 20.0}}
    for k, v in over.items():
        if isinstance(v, dict):
            base.setdefault(k, {}).update(v)
        else:
            base[k] = v
    return load_config(EDiTConfig, base)


def test_a_killed_replica_is_replaced_the_run_finishes_and_its_metrics_reach_the_dashboard(ray_cluster, tmp_path):
    """A replica's actor killed mid-run is replaced and the run ends at its step count; the
    README's EDiT series reach the cluster's metrics endpoint throughout (scraped while it runs)."""
    from raystack.actors.edit import EDiTGroup
    cfg = small_cfg(tmp_path, steps=32, run={"eval_every": 4})
    group = EDiTGroup(cfg)
    group.start()
    killed = []

    def kill_once(g, segment):
        if segment == 4 and not killed:        # after the checkpoint at segment 2
            killed.append(g.workers[1])
            ray.kill(g.workers[1])

    def final_loss_shown(res, s) -> bool:
        return min(s.values("edit_train_loss"), default=float("inf")) <= res.train_loss + 0.5

    names = ["edit_train_loss", "edit_val_loss", "edit_tokens_per_s", "edit_sync_seconds",
             "edit_replacements_total"]
    res, s = scraped(lambda: group.run(progress=False, on_segment=kill_once), group.shutdown, names,
                     final_loss_shown)
    assert killed and res.replacements == 1
    assert res.steps == 32
    assert res.val_loss < 5.0
    assert all(0.0 < v < 6.0 for v in s.values("edit_train_loss")), s.values("edit_train_loss")
    assert all(0.0 < v < 6.0 for v in s.values("edit_val_loss"))
    assert s.values("edit_tokens_per_s") and max(s.values("edit_tokens_per_s")) > 0
    assert s.values("edit_sync_seconds") and min(s.values("edit_sync_seconds")) >= 0
    assert s.increase("edit_replacements_total") == 1   # the replacement is counted, once
    # the loss shown while it trained came down towards the final one
    assert min(s.values("edit_train_loss")) <= res.train_loss + 0.5


def test_run_writes_a_transformers_checkpoint_and_resume_continues_it(ray_cluster, tmp_path):
    from transformers import AutoModelForCausalLM

    from raystack.actors.edit import run_edit
    first = run_edit(small_cfg(tmp_path, steps=12), progress=False)
    assert first.steps == 12 and first.replacements == 0
    assert first.tokens == 2 * 12 * 4 * 32
    assert first.val_loss < 5.3              # byte vocabulary: ln(259) = 5.56 at random
    model = AutoModelForCausalLM.from_pretrained(first.model_dir)
    batch = torch.randint(0, 256, (1, 9))
    assert model(input_ids=batch).logits.shape == (1, 9, 259)
    from transformers import AutoTokenizer   # the byte tokenizer is saved beside the model
    assert AutoTokenizer.from_pretrained(first.model_dir)("héllo", add_special_tokens=False)["input_ids"] == \
        list("héllo".encode())
    second = run_edit(small_cfg(tmp_path, steps=24, run={"resume": True, "run_id": "latest"}), progress=False)
    assert second.steps == 24
    # the resumed run did 12 more steps per rank, not 24: it continued the data and counters
    assert [h["step"] for h in second.history][0] <= 12 < second.history[-1]["step"]
    assert second.tokens == 2 * 24 * 4 * 32
    assert second.val_loss < first.val_loss


def test_device_cuda_on_a_cluster_without_gpus_fails_before_any_actor_starts(ray_cluster, tmp_path):
    from raystack.actors.edit import EDiTGroup
    group = EDiTGroup(small_cfg(tmp_path, run={"device": "cuda"}))
    with pytest.raises(ValueError, match="device: cuda, but the cluster has 0 GPUs"):
        group.start()
    assert group.workers == [] and group.pgs == []
