"""Instruction (SFT) data: prompt/response examples from files or built-in synthetic tasks.

Files: JSON (a list of objects), JSONL, or Parquet, one example per record, in one of two
formats. ``template``: the prompt is a template filled with the record's fields
(``"Q: {question}\\nA: "``), the response is one field. ``chat``: the record holds a list of
``{"role", "content"}`` messages ending with the assistant's answer, rendered with the
tokenizer's own chat template. Built-in synthetic tasks (no download, each learnable by a
tiny model): ``reverse``, ``sort``, ``copy``, ``arithmetic``.

Examples are encoded with the model's tokenizer (the byte tokenizer for built-in models); the
loss is taken on the response tokens (and the end-of-sequence token) only, and an example is
cut at ``cutoff_len`` tokens. A micro-batch is padded to its longest example, or packed:
several examples share a row, their positions restarting at 0 so attention stays within each.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import torch

from raystack.config import ConfigError
from raystack.data.suffixes import RECORD_SUFFIXES
from raystack.data.tokenizer import default_byte_tokenizer

SYNTHETIC_TASKS = ("reverse", "sort", "copy", "arithmetic")
IGNORE = -100
SAMPLE_RECORDS = 64  # records read to check a dataset's fields before anything starts

Pair = tuple[list[int], list[int]]  # (inputs, labels) of one example


@dataclass(frozen=True)
class Example:
    """One example. ``templated``: prompt and response are rendered by a chat template, which
    already placed every special token (nothing is added when encoding)."""

    prompt: str
    response: str
    templated: bool = False


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


def iter_records(path: str | Path) -> Iterator[dict]:
    """Records of a ``.json`` (list of objects), ``.jsonl`` or ``.parquet`` file, as a stream."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"dataset file {p} not found")
    suffix = p.suffix.lower()
    if suffix == ".jsonl":
        with p.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"{p} line {n} is not valid JSON: {exc}") from None
    elif suffix == ".json":
        data = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise ValueError(f"{p}: expected a JSON list of objects")
        yield from data
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(p).iter_batches(batch_size=4096):
            yield from batch.to_pylist()
    else:
        raise ValueError(f"{p}: unsupported dataset format {suffix!r} (use {', '.join(RECORD_SUFFIXES)})")


def read_records(path: str | Path) -> list[dict]:
    """Records of a ``.json`` (list of objects), ``.jsonl`` or ``.parquet`` file."""
    return list(iter_records(path))


def template_fields(template: str) -> list[str]:
    """The record fields a Python format template reads (``"{q} {a.b} {c[0]}"`` -> q, a, c)."""
    out = []
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None:
            root = name.split(".", 1)[0].split("[", 1)[0]
            if not root or root.isdigit():
                raise ValueError(f"template {template!r} has a positional placeholder {{{name}}}; name a field")
            out.append(root)
    return out


def check_dataset_fields(path: str | Path, fmt: str, prompt_template: str, response_field: str,
                         messages_field: str, field: str) -> None:
    """Check the template's placeholders and the response (or messages) field against the
    dataset's own fields (Parquet: its columns; JSON/JSONL: the first records), naming the
    config field at fault. Runs before anything starts."""
    fields = _dataset_fields(Path(path), field)
    if fmt == "chat":
        if messages_field not in fields:
            raise ConfigError(f"{field}.messages_field", f"{path} records have no field {messages_field!r} "
                                                         f"(fields: {sorted(fields)})")
        return
    try:
        wanted = template_fields(prompt_template)
    except ValueError as exc:
        raise ConfigError(f"{field}.prompt_template", str(exc)) from None
    for name in wanted:
        if name not in fields:
            raise ConfigError(f"{field}.prompt_template", f"placeholder {{{name}}} is not a field of {path} "
                                                          f"(fields: {sorted(fields)})")
    if response_field not in fields:
        raise ConfigError(f"{field}.response_field", f"{path} records have no field {response_field!r} "
                                                     f"(fields: {sorted(fields)})")


def _dataset_fields(path: Path, field: str) -> set[str]:
    """Fields every sampled record has (Parquet: the columns)."""
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            return set(pq.ParquetFile(path).schema_arrow.names)
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise ConfigError(f"{field}.path", f"{path} is not a readable Parquet file: {exc}") from None
    fields: set[str] | None = None
    try:
        for i, rec in enumerate(iter_records(path)):
            if not isinstance(rec, dict):
                raise ConfigError(f"{field}.path", f"{path} record {i} is not an object")
            fields = set(rec) if fields is None else fields & set(rec)
            if i + 1 >= SAMPLE_RECORDS:
                break
    except ValueError as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{field}.path", str(exc)) from None
    if not fields:
        raise ConfigError(f"{field}.path", f"{path} holds no records")
    return fields


def file_examples(path: str | Path, prompt_template: str = "{prompt}", response_field: str = "response") -> list[Example]:
    """Examples from a file: prompt = template filled with each record's fields."""
    out = []
    for i, rec in enumerate(iter_records(path)):
        try:
            prompt = prompt_template.format(**rec)
        except KeyError as e:
            raise ValueError(f"{path} record {i}: prompt template needs field {e.args[0]!r}") from None
        if response_field not in rec:
            raise ValueError(f"{path} record {i}: no response field {response_field!r}")
        out.append(Example(prompt, str(rec[response_field])))
    return out


def chat_examples(path: str | Path, tokenizer: Any, messages_field: str = "messages") -> list[Example]:
    """Examples from ``messages`` records, rendered with the tokenizer's chat template: the
    prompt is every turn up to the last assistant answer, the response is that answer with
    the template's end-of-turn markup."""
    return [chat_example(rec.get(messages_field) if isinstance(rec, dict) else None, tokenizer, f"{path} record {i}")
            for i, rec in enumerate(iter_records(path))]


def chat_example(messages: Any, tokenizer: Any, where: str = "messages") -> Example:
    """One conversation (a list of ``{"role", "content"}`` ending with the assistant) as an example."""
    if (not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages)
            or messages[-1].get("role") != "assistant"):
        raise ValueError(f"{where}: expected a list of {{role, content}} messages ending with an assistant turn")
    answer = str(messages[-1].get("content", ""))
    full = tokenizer.apply_chat_template(messages, tokenize=False)
    cut = full.rfind(answer) if answer else len(tokenizer.apply_chat_template(
        messages[:-1], tokenize=False, add_generation_prompt=True))
    if cut < 0:
        raise ValueError(f"{where}: the chat template does not render the assistant answer verbatim")
    return Example(full[:cut], full[cut:], templated=True)


def encode(example: Example, cutoff_len: int, tok: Any = None) -> Pair:
    """(inputs, labels) aligned for next-token loss; prompt positions are ignored in the loss.
    The prompt gets the tokenizer's leading special tokens (bos), the response ends with eos
    (a chat template places both itself); the example is cut at ``cutoff_len`` tokens."""
    tok = tok if tok is not None else default_byte_tokenizer()
    eos = tok.eos_token_id
    if example.templated:
        p = tok(example.prompt, add_special_tokens=False)["input_ids"]
        r = tok(example.response, add_special_tokens=False)["input_ids"]
    else:
        p = list(tok(example.prompt, add_special_tokens=True)["input_ids"])
        if eos is not None and len(p) > 1 and p[-1] == eos:  # tokenizers that also append eos
            p.pop()
        r = [*tok(example.response, add_special_tokens=False)["input_ids"], *([eos] if eos is not None else [])]
    seq = (list(p) + list(r))[: cutoff_len + 1]
    targets = ([IGNORE] * len(p) + list(r))[: cutoff_len + 1]
    return seq[:-1], targets[1:]


def collate(pairs: Sequence[Pair], pad_id: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad to the longest sequence: (input_ids, labels) LongTensors [B, L]."""
    pad_id = default_byte_tokenizer().pad_token_id if pad_id is None else pad_id
    length = max(len(x) for x, _ in pairs)
    ids = torch.full((len(pairs), length), pad_id, dtype=torch.long)
    labels = torch.full((len(pairs), length), IGNORE, dtype=torch.long)
    for i, (x, y) in enumerate(pairs):
        ids[i, : len(x)] = torch.tensor(x)
        labels[i, : len(y)] = torch.tensor(y)
    return ids, labels


def pack(pairs: Sequence[Pair], row_len: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pack examples into rows of at most ``row_len`` tokens (first fit, in order): input_ids,
    labels and positions [R, row_len]; positions restart at 0 for each example (padding goes
    on counting), which transformers' masks read as separate sequences."""
    rows: list[list[Pair]] = []
    room: list[int] = []
    for x, y in pairs:
        for i, left in enumerate(room):
            if len(x) <= left:
                rows[i].append((x, y))
                room[i] -= len(x)
                break
        else:
            rows.append([(x, y)])
            room.append(row_len - len(x))
    ids = torch.full((len(rows), row_len), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), row_len), IGNORE, dtype=torch.long)
    positions = torch.zeros((len(rows), row_len), dtype=torch.long)
    for r, row in enumerate(rows):
        pos = 0
        for x, y in row:
            ids[r, pos:pos + len(x)] = torch.tensor(x)
            labels[r, pos:pos + len(y)] = torch.tensor(y)
            positions[r, pos:pos + len(x)] = torch.arange(len(x))
            pos += len(x)
        start = int(positions[r, pos - 1]) + 1 if pos else 0
        positions[r, pos:] = torch.arange(start, start + row_len - pos)
    return ids, labels, positions


class SFTBatcher:
    """Deterministic shuffled batches over epochs, with a resumable position."""

    def __init__(self, examples: Sequence[Example], batch_size: int, cutoff_len: int, seed: int = 0,
                 tokenizer: Any = None, packing: bool = False, pad_id: int | None = None) -> None:
        if not examples:
            raise ValueError("empty dataset")
        tok = tokenizer if tokenizer is not None else default_byte_tokenizer()
        self.encoded = [encode(e, cutoff_len, tok) for e in examples]
        self.batch_size = batch_size
        self.cutoff_len = cutoff_len
        self.packing = packing
        self.pad_id = pad_id if pad_id is not None else (tok.pad_token_id if tok.pad_token_id is not None
                                                          else (tok.eos_token_id or 0))
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

    def next_examples(self) -> list[Pair]:
        """The next batch's encoded examples (advances the position)."""
        if self.index >= self.steps_per_epoch:
            self.epoch, self.index = self.epoch + 1, 0
        order = self._order(self.epoch)
        n = len(order)
        rows = [order[(self.index * self.batch_size + j) % n] for j in range(self.batch_size)]
        self.index += 1
        return [self.encoded[i] for i in rows]

    def collate(self, pairs: Sequence[Pair]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """One micro-batch: padded (positions None) or packed into rows of ``cutoff_len``."""
        if self.packing:
            return pack(pairs, self.cutoff_len, self.pad_id)
        return (*collate(pairs, self.pad_id), None)

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The next batch, padded: (input_ids, labels)."""
        return collate(self.next_examples(), self.pad_id)

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.index = int(state["epoch"]), int(state["index"])


@torch.no_grad()
def greedy_generate(logits_fn: Callable[[torch.Tensor], torch.Tensor], prompts: Sequence[str], max_new_tokens: int = 8,
                    tok: Any = None) -> list[str]:
    """Greedy decoding with a ``logits_fn(input_ids [B, L]) -> logits [B, L, V]`` (no cache;
    prompts are left-aligned and each row reads its own last position)."""
    tok = tok if tok is not None else default_byte_tokenizer()
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    seqs = [list(tok(p, add_special_tokens=True)["input_ids"]) for p in prompts]
    outs: list[list[int]] = [[] for _ in prompts]
    done = [False] * len(prompts)
    for _ in range(max_new_tokens):
        lengths = [len(s) for s in seqs]
        ids = torch.full((len(seqs), max(lengths)), pad, dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s)
        logits = logits_fn(ids)
        nxt = logits[torch.arange(len(seqs)), torch.tensor(lengths) - 1].argmax(-1).tolist()
        for i, t in enumerate(nxt):
            if done[i]:
                continue
            if t == tok.eos_token_id:
                done[i] = True
            else:
                outs[i].append(t)
                seqs[i].append(t)
        if all(done):
            break
    return [tok.decode(o, skip_special_tokens=True) for o in outs]


def exact_match(predictions: Sequence[str], examples: Sequence[Example]) -> float:
    return sum(p == e.response for p, e in zip(predictions, examples)) / max(len(examples), 1)
