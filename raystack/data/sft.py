"""Instruction (SFT) data: prompt/response examples from files or built-in synthetic tasks.

Files: JSON (a list of objects), JSONL, or Parquet, one example per record. The prompt is a
template filled with the record's fields (``"Q: {question}\\nA: "``); the response is one field.
Built-in synthetic tasks (no download, each learnable by a tiny model): ``reverse``, ``sort``,
``copy``, ``arithmetic``. Examples are encoded with the byte tokenizer; the loss is taken on the
response tokens (and the end-of-sequence token) only.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch

from raystack.data.tokenizer import ByteTokenizer

SYNTHETIC_TASKS = ("reverse", "sort", "copy", "arithmetic")
IGNORE = -100


@dataclass(frozen=True)
class Example:
    prompt: str
    response: str


def synthetic_examples(task: str, n: int, seed: int = 0, min_len: int = 2, max_len: int = 4) -> list[Example]:
    """``n`` examples of a built-in task, deterministic in ``seed``."""
    rng = random.Random(f"{task}:{seed}")
    letters = "abcdefgh"
    out = []
    for _ in range(n):
        k = rng.randint(min_len, max_len)
        if task == "reverse":
            s = "".join(rng.choice(letters) for _ in range(k))
            out.append(Example(f"rev {s}=", s[::-1]))
        elif task == "sort":
            s = "".join(rng.choice("0123456789") for _ in range(k))
            out.append(Example(f"sort {s}=", "".join(sorted(s))))
        elif task == "copy":
            s = "".join(rng.choice(letters) for _ in range(k))
            out.append(Example(f"copy {s}=", s))
        elif task == "arithmetic":
            a, b = rng.randint(0, 9), rng.randint(0, 9)
            out.append(Example(f"add {a}+{b}=", str(a + b)))
        else:
            raise ValueError(f"unknown synthetic task {task!r}; expected one of {list(SYNTHETIC_TASKS)}")
    return out


def read_records(path: str | Path) -> list[dict]:
    """Records of a ``.json`` (list of objects), ``.jsonl`` or ``.parquet`` file."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"dataset file {p} not found")
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
    if suffix == ".json":
        data = json.loads(p.read_text())
        if not isinstance(data, list):
            raise ValueError(f"{p}: expected a JSON list of objects")
        return data
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(p).to_pylist()
    raise ValueError(f"{p}: unsupported dataset format {suffix!r} (use .json, .jsonl or .parquet)")


def file_examples(path: str | Path, prompt_template: str = "{prompt}", response_field: str = "response") -> list[Example]:
    """Examples from a file: prompt = template filled with each record's fields."""
    out = []
    for i, rec in enumerate(read_records(path)):
        try:
            prompt = prompt_template.format(**rec)
        except KeyError as e:
            raise ValueError(f"{path} record {i}: prompt template needs field {e.args[0]!r}") from None
        if response_field not in rec:
            raise ValueError(f"{path} record {i}: no response field {response_field!r}")
        out.append(Example(prompt, str(rec[response_field])))
    return out


def encode(example: Example, cutoff_len: int, tok: ByteTokenizer | None = None) -> tuple[list[int], list[int]]:
    """(inputs, labels) aligned for next-token loss; prompt positions are ignored in the loss."""
    tok = tok or ByteTokenizer()
    p = [tok.bos_id] + tok.encode(example.prompt)
    r = tok.encode(example.response) + [tok.eos_id]
    seq = (p + r)[: cutoff_len + 1]
    targets = ([IGNORE] * len(p) + r)[: cutoff_len + 1]
    return seq[:-1], targets[1:]


def collate(pairs: Sequence[tuple[list[int], list[int]]], pad_id: int = ByteTokenizer.pad_id) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to the longest sequence: (input_ids, labels) LongTensors [B, L]."""
    length = max(len(x) for x, _ in pairs)
    ids = torch.full((len(pairs), length), pad_id, dtype=torch.long)
    labels = torch.full((len(pairs), length), IGNORE, dtype=torch.long)
    for i, (x, y) in enumerate(pairs):
        ids[i, : len(x)] = torch.tensor(x)
        labels[i, : len(y)] = torch.tensor(y)
    return ids, labels


class SFTBatcher:
    """Deterministic shuffled batches over epochs, with a resumable position."""

    def __init__(self, examples: Sequence[Example], batch_size: int, cutoff_len: int, seed: int = 0) -> None:
        if not examples:
            raise ValueError("empty dataset")
        self.encoded = [encode(e, cutoff_len) for e in examples]
        self.batch_size = batch_size
        self.seed = seed
        self.epoch = 0
        self.index = 0

    @property
    def steps_per_epoch(self) -> int:
        return max(len(self.encoded) // self.batch_size, 1)

    def _order(self, epoch: int) -> list[int]:
        order = list(range(len(self.encoded)))
        random.Random(self.seed * 1_000_003 + epoch).shuffle(order)
        return order

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.index >= self.steps_per_epoch:
            self.epoch, self.index = self.epoch + 1, 0
        order = self._order(self.epoch)
        n = len(order)
        rows = [order[(self.index * self.batch_size + j) % n] for j in range(self.batch_size)]
        self.index += 1
        return collate([self.encoded[i] for i in rows])

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.index = int(state["epoch"]), int(state["index"])


@torch.no_grad()
def greedy_generate(logits_fn: Callable[[torch.Tensor], torch.Tensor], prompts: Sequence[str], max_new_tokens: int = 8,
                    tok: ByteTokenizer | None = None) -> list[str]:
    """Greedy decoding with a ``logits_fn(input_ids [B, L]) -> logits [B, L, V]`` (no cache;
    prompts are left-aligned and each row reads its own last position)."""
    tok = tok or ByteTokenizer()
    seqs = [[tok.bos_id] + tok.encode(p) for p in prompts]
    outs: list[list[int]] = [[] for _ in prompts]
    done = [False] * len(prompts)
    for _ in range(max_new_tokens):
        lengths = [len(s) for s in seqs]
        ids = torch.full((len(seqs), max(lengths)), tok.pad_id, dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s)
        logits = logits_fn(ids)
        nxt = logits[torch.arange(len(seqs)), torch.tensor(lengths) - 1].argmax(-1).tolist()
        for i, t in enumerate(nxt):
            if done[i]:
                continue
            if t == tok.eos_id:
                done[i] = True
            else:
                outs[i].append(t)
                seqs[i].append(t)
        if all(done):
            break
    return [tok.decode(o) for o in outs]


def exact_match(predictions: Sequence[str], examples: Sequence[Example]) -> float:
    return sum(p == e.response for p, e in zip(predictions, examples)) / max(len(examples), 1)
