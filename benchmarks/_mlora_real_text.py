"""The mLoRA benchmark's real-text setting (called by benchmarks/mlora.py, not a script itself).

The same arms as the main setting, on what a user brings: a Qwen2-shaped base (random init,
tied embeddings) saved with ``save_pretrained`` beside a BPE tokenizer trained here with the
`tokenizers` library, and records of real text of varying length (Python standard-library
source: a few lines as the prompt, the lines after them as the answer), encoded by that
tokenizer. Tokens per second count real tokens only (prompt and answer, never padding).
"""
from __future__ import annotations

import json
import random
import statistics
import sys
import sysconfig
from pathlib import Path
from typing import Callable

import ray

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray workers lack benchmarks/ on their path

ADAPTERS = ["a0", "a1", "a2", "a3"]
MODULES = [["textwrap", "string"], ["shlex", "glob", "fnmatch"], ["argparse"], ["json/encoder", "json/decoder"]]


def _sources(names: list[str]) -> list[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return [(root / f"{n}.py").read_text() for n in names]


def make_records(directory: Path, per_adapter: int, seed: int = 0) -> list[dict]:
    """One JSONL per adapter: ``{"prompt": 1-3 lines, "response": the next 1-6 lines}``."""
    out = []
    for i, (name, modules) in enumerate(zip(ADAPTERS, MODULES)):
        lines = [ln for text in _sources(modules) for ln in text.splitlines() if ln.strip()]
        rng = random.Random(seed * 100 + i)
        path = directory / f"{name}_text.jsonl"
        with path.open("w") as f:
            for _ in range(per_adapter):
                k, m = rng.randint(1, 3), rng.randint(1, 6)
                start = rng.randrange(len(lines) - k - m)
                f.write(json.dumps({"prompt": "\n".join(lines[start:start + k]) + "\n",
                                    "response": "\n".join(lines[start + k:start + k + m])}) + "\n")
        out.append({"name": name, "path": str(path)})
    return out


def make_qwen2_base(directory: Path, vocab: int, hidden: int, layers: int, inter: int, heads: int) -> str:
    """A random Qwen2-shaped checkpoint with a BPE tokenizer trained on standard-library text."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from raystack.data.tokenizer import train_tokenizer

    tok = train_tokenizer(_sources(["textwrap", "string", "shlex", "glob", "fnmatch", "argparse", "json/encoder",
                                    "json/decoder", "os", "typing", "inspect", "pathlib"]), "bpe", vocab_size=vocab)
    cfg = Qwen2Config(vocab_size=-(-len(tok) // 64) * 64, hidden_size=hidden, num_hidden_layers=layers,
                      intermediate_size=inter, num_attention_heads=heads, num_key_value_heads=max(heads // 4, 1),
                      max_position_embeddings=512, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      tie_word_embeddings=True)
    torch.manual_seed(0)
    Qwen2ForCausalLM(cfg).save_pretrained(directory)
    tok.save_pretrained(directory)
    return str(directory)


def real_text_setting(report, quick: bool, tmp: Path, run_arm: Callable, run_pipeline: Callable,
                      mlora_cfg: Callable, build_remote: Callable) -> None:
    """Run arms (a)-(e) on the Qwen2 base and text records; add ``real_text_*`` arms and a target.
    ``run_arm``, ``run_pipeline``, ``mlora_cfg`` and ``build_remote`` (runs a base builder off
    the driver) are benchmarks/mlora.py's own."""
    from raystack.data.sft import collate
    from raystack.mlora.trainer import make_jobs

    size = dict(vocab=1000, hidden=128, layers=4, inter=352, heads=4) if quick else \
        dict(vocab=8000, hidden=512, layers=8, inter=1408, heads=8)
    steps, batch, micro, cutoff = (2, 2, 1, 64) if quick else (6, 4, 2, 128)
    base = build_remote(make_qwen2_base, tmp / "qwen2", **size)
    data = make_records(tmp, per_adapter=64)
    cfg = mlora_cfg(base, data, str(tmp / "rt_c"), steps, batch, micro, cutoff)
    jobs = make_jobs(cfg)
    pad = next(iter(jobs.values())).batcher.pad_id
    examples = {n: [j.batcher.next_examples() for _ in range(steps)] for n, j in jobs.items()}
    real_tokens = sum(len(x) for steps_ in examples.values() for pairs in steps_ for x, _ in pairs)
    batches = {n: [collate(pairs, pad) for pairs in steps_] for n, steps_ in examples.items()}
    seconds: dict[str, float] = {}
    seconds["a"] = run_arm("rt_a", [2], lambda w: ray.get(w[0].peft_train.remote(base, batches, 1e-4,
                                                                                  str(tmp / "rt_a"))))["seconds"]

    def arm_b(ws):
        import time

        t0 = time.perf_counter()
        ray.get([w.peft_train.remote(base, {n: batches[n]}, 1e-4, str(tmp / "rt_b")) for w, n in zip(ws, ADAPTERS)])
        return {"seconds": time.perf_counter() - t0}
    seconds["b"] = run_arm("rt_b", [1] * 4, arm_b)["seconds"]
    from raystack.config import config_to_dict

    ccfg = config_to_dict(mlora_cfg(base, data, str(tmp / "rt_c"), steps, batch, micro, cutoff))
    seconds["c"] = run_arm("rt_c", [2], lambda w: ray.get(w[0].batchlora_train.remote(ccfg)))["seconds"]
    pipe = None
    for arm, conc in (("d", 8), ("e", 1)):
        out, pipe = run_pipeline(mlora_cfg(base, data, str(tmp / f"rt_{arm}"), steps, batch, micro, cutoff,
                                           max_concurrent=conc), pipe)
        seconds[arm] = out["seconds"]
    pipe.shutdown()
    names = {"a": "peft_sequential", "b": "peft_4_actors", "c": "batchlora_1_actor", "d": "lorapp_2_stages",
             "e": "gpipe_2_stages"}
    for k, s in seconds.items():
        report.arm(f"real_text_{names[k]}", tokens_per_s=real_tokens / s, makespan_s=s)
    padded = sum(int(ids.numel()) for b in batches.values() for ids, _ in b)
    report.config["real_text"] = {"base": {**size, "family": "qwen2"}, "steps": steps, "batch": batch,
                                  "micro_batch": micro, "cutoff_len": cutoff, "real_tokens": real_tokens,
                                  "padded_tokens_peft": padded,
                                  "mean_example_tokens": statistics.mean(len(x) for s_ in examples.values()
                                                                         for p in s_ for x, _ in p)}
    report.target("real_text_d_vs_a_tokens", seconds["a"] / seconds["d"], ">=", 1.1,
                  "real text on a Qwen2-shaped base with a trained BPE tokenizer: (d) pipeline tokens/s "
                  "over (a) peft sequential (real tokens, no padding counted)")
    report.note(f"Real-text setting: a random Qwen2-shaped base (hidden {size['hidden']}, {size['layers']} layers, "
                f"tied embeddings) with a BPE tokenizer of {size['vocab']} tokens trained on standard-library "
                f"source; records of 1-3 source lines as the prompt and the next 1-6 as the answer, cut at "
                f"{cutoff} tokens; {real_tokens:,} real tokens per arm (peft pads each batch: "
                f"{padded:,} token slots). One run per arm.")
