"""The EDiT benchmark's tokenizing pass (called by benchmarks/edit.py, not a script itself).

A BPE tokenizer is trained on standard-library text (`tokenizers`), then EDiT's data
preparation (`raystack.data.pretrain.prepare_token_shards`) tokenizes the standard-library
corpus into token shards with it, in a fresh cache: once with the tokenizer's Rust threads on
every core, once with them off (``TOKENIZERS_PARALLELISM=false``), each in its own process.
"""
from __future__ import annotations

import sys
import tempfile
import time

import ray

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # Ray workers lack benchmarks/ on their path


def _pass(tokenizer_dir: str, max_bytes: int) -> dict:
    from transformers import AutoTokenizer

    from raystack.data.pretrain import DataSources, prepare_token_shards

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    with tempfile.TemporaryDirectory() as cache:
        t0 = time.perf_counter()
        m = prepare_token_shards(DataSources(max_bytes=max_bytes), tok, cache)
        wall = time.perf_counter() - t0
    return {"tokens": m["tokens"], "bytes": m["bytes"], "documents": m["documents"], "seconds": m["seconds"],
            "tokens_per_s": m["tokens_per_s"], "wall_s": wall}


def _train(directory: str, vocab: int, max_bytes: int) -> str:
    from raystack.data.corpus import stdlib_files
    from raystack.data.tokenizer import train_tokenizer

    texts, total = [], 0
    for _, p in stdlib_files():
        if total >= max_bytes:
            break
        texts.append(p.read_text(errors="replace"))
        total += len(texts[-1])
    train_tokenizer(texts, "bpe", vocab_size=vocab).save_pretrained(directory)
    return directory


def tokenizing_pass(report, quick: bool) -> None:
    """Add the ``tokenize_pass`` arm: tokens/s of the pass with all cores and with one."""
    import os

    # --quick: the same code path at small sizes (training and tokenizing were most of its wall time)
    max_bytes, vocab, train_bytes = (100_000, 500, 200_000) if quick else (4_000_000, 8000, 1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        tok_dir = ray.get(ray.remote(_train).options(num_cpus=1).remote(tmp, vocab, train_bytes))
        runs = {}
        for label, env in (("all_cores", {}), ("one_thread", {"TOKENIZERS_PARALLELISM": "false"})):
            task = ray.remote(_pass).options(num_cpus=1 if env else os.cpu_count(),
                                             **({"runtime_env": {"env_vars": env}} if env else {}))
            runs[label] = ray.get(task.remote(tok_dir, max_bytes))
    par, one = runs["all_cores"], runs["one_thread"]
    report.arm("tokenize_pass", tokens=par["tokens"], bytes=par["bytes"], documents=par["documents"],
               tokens_per_s=par["tokens_per_s"], seconds=par["seconds"], tokens_per_s_one_thread=one["tokens_per_s"],
               parallel_speedup=par["tokens_per_s"] / one["tokens_per_s"], cores=os.cpu_count(),
               tokenizer=f"BPE, {vocab} tokens, trained on {train_bytes / 1e6:.1f} MB of standard-library source")
    report.note(f"Tokenizing pass (EDiT data preparation, once): {par['tokens']:,} tokens of the standard-library "
                f"corpus ({par['bytes'] / 1e6:.1f} MB) at {par['tokens_per_s']:,.0f} tokens/s on {os.cpu_count()} "
                f"cores, {one['tokens_per_s']:,.0f} tokens/s on one thread (a BPE of {vocab} tokens trained here); "
                "written as Arrow token shards.")
