"""Per-token compute at two micro-batch sizes, one process, 1 thread: peft LoRA against
raystack's ``StageModel`` (the whole model as one stage, BatchLoRA with one adapter).

An explanation beside ``benchmarks/mlora.py``, not a benchmark with targets: it separates what
the pipeline's stages pay for their micro-batch size (the task's ``micro_batch_size`` rows per
pass) from what they pay for being stage processes. The base is ``mlora.py``'s (hidden 1024,
8 layers, byte vocabulary), rows of 64 tokens; each arm runs forward + backward + optimizer
step 8 times and reports the median of the last 6, per token; the four arms are alternated
over the rounds (the host drifts between minutes).

    python benchmarks/_mlora_microbatch.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj"]
SEQ, PASSES, WARM = 64, 8, 2


def build_base():
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=259, hidden_size=1024, num_hidden_layers=8, intermediate_size=2816,
                      num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=256,
                      tie_word_embeddings=False)
    torch.manual_seed(0)
    base = LlamaForCausalLM(cfg)
    for p in base.parameters():
        p.requires_grad_(False)
    return base


def peft_per_token(base, rows: int) -> float:
    """Seconds per token of peft LoRA training on batches of ``rows`` x SEQ tokens."""
    from peft import LoraConfig, get_peft_model

    ids = torch.randint(0, 259, (rows, SEQ))
    model = get_peft_model(copy.deepcopy(base), LoraConfig(r=8, lora_alpha=16, target_modules=TARGETS,
                                                           lora_dropout=0.0))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    times = []
    for _ in range(PASSES):
        t0 = time.perf_counter()
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[WARM:]) / (rows * SEQ)


def stage_per_token(base, rows: int) -> float:
    """Seconds per token of one StageModel holding the whole model, micro-batches of ``rows``."""
    from raystack.mlora.batchlora import AdapterSpec, Segment
    from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel

    ids = torch.randint(0, 259, (rows, SEQ))
    units = len(base.model.layers) + 2
    stage = StageModel(copy.deepcopy(base), 0, units)
    stage.add_adapter(AdapterSpec("a", r=8, alpha=16.0, target_modules=tuple(TARGETS)), OptimSpec())
    times = []
    for i in range(PASSES):
        mb = MicroBatch(("m", i), [Segment("a", 0, rows)], {"a": float(rows * SEQ)}, step_adapters=("a",))
        t0 = time.perf_counter()
        stage.forward(mb, ids, ids)
        stage.backward(mb, None)
        times.append(time.perf_counter() - t0)
    return statistics.median(times[WARM:]) / (rows * SEQ)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    base = build_base()
    for k in range(args.rounds):
        arms = [("peft4", lambda: peft_per_token(base, 4)), ("peft2", lambda: peft_per_token(base, 2)),
                ("stage2", lambda: stage_per_token(base, 2)), ("stage4", lambda: stage_per_token(base, 4))]
        if k % 2:
            arms.reverse()
        ms = {name: fn() * 1e3 for name, fn in arms}
        print(f"round {k + 1}: ms/token peft 4x{SEQ} {ms['peft4']:.2f}, peft 2x{SEQ} {ms['peft2']:.2f} "
              f"({ms['peft2'] / ms['peft4']:.2f}x), stage 2x{SEQ} {ms['stage2']:.2f} ({ms['stage2'] / ms['peft2']:.2f}x "
              f"peft 2x{SEQ}), stage 4x{SEQ} {ms['stage4']:.2f} ({ms['stage4'] / ms['peft4']:.2f}x peft 4x{SEQ})",
              flush=True)


if __name__ == "__main__":
    main()
