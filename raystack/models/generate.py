"""Text generation with a KV cache: greedy or nucleus sampling, stop strings, streamed text.

`generate` runs one request token by token through a ``step`` function (the model's forward
on the new tokens with its cache), so a server can interleave requests between steps.
`stream_text` turns the token ids into text deltas: it holds back a trailing piece that may
be the start of a stop string, or an incomplete UTF-8 character, so streamed deltas always
add up to the final text.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import torch

STOP, LENGTH = "stop", "length"  # why generation ended (OpenAI's finish_reason)
Step = Callable[[torch.Tensor, Any], tuple[torch.Tensor, Any]]  # (new ids [1, n], cache) -> (last logits [V], cache)


@dataclass(frozen=True)
class SamplingParams:
    """How to pick tokens: ``temperature`` 0 is greedy; ``top_p`` < 1 samples from the smallest
    set of tokens whose probabilities add up to it; ``stop`` strings end the text (not included);
    ``seed`` makes sampling reproducible."""

    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ValueError(f"stop must be non-empty strings, got {list(self.stop)}")


@dataclass(frozen=True)
class TextDelta:
    """A piece of generated text; the last one carries why generation ended."""

    text: str
    finish_reason: str | None = None
    tokens: int = 0  # tokens generated so far


@dataclass(frozen=True)
class Generation:
    """A finished generation."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


def pick_token(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None) -> int:
    """The next token from last-position ``logits`` [V] (greedy, or temperature + top-p)."""
    if params.temperature == 0:
        return int(logits.argmax())
    probs = torch.softmax(logits.float() / params.temperature, dim=-1)
    if params.top_p < 1:
        sorted_probs, order = probs.sort(descending=True)
        keep = sorted_probs.cumsum(0) - sorted_probs < params.top_p  # always keeps the most likely
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
    return int(torch.multinomial(probs, 1, generator=generator))


def generate_ids(step: Step, prompt_ids: Sequence[int], params: SamplingParams,
                 stop_ids: Sequence[int] = ()) -> Iterator[int]:
    """Token ids one at a time (the stop id that ends generation is not yielded)."""
    generator = torch.Generator().manual_seed(params.seed) if params.seed is not None else None
    ids = torch.tensor([list(prompt_ids)], dtype=torch.long)
    cache = None
    stop_set = set(stop_ids)
    for _ in range(params.max_new_tokens):
        logits, cache = step(ids, cache)
        token = pick_token(logits, params, generator)
        if token in stop_set:
            return
        yield token
        ids = torch.tensor([[token]], dtype=torch.long)


def _held_back(text: str, stops: Sequence[str]) -> int:
    """How many trailing characters might be the start of a stop string (or half a character)."""
    hold = 1 if text.endswith("\ufffd") else 0
    for s in stops:
        for k in range(min(len(s) - 1, len(text)), 0, -1):
            if text.endswith(s[:k]):
                hold = max(hold, k)
                break
    return hold


def stream_text(token_ids: Iterator[int], tokenizer: Any, params: SamplingParams) -> Iterator[TextDelta]:
    """Text deltas of a token stream, cut at the first stop string; the last delta has the
    finish reason (``stop`` for a stop string or stop token, ``length`` at ``max_new_tokens``)."""
    ids: list[int] = []
    sent = 0
    for token in token_ids:
        ids.append(token)
        text = tokenizer.decode(ids, skip_special_tokens=True)
        cut = min((i for i in (text.find(s) for s in params.stop) if i >= 0), default=-1)
        if cut >= 0:
            yield TextDelta(text[sent:cut], STOP, len(ids))
            return
        ready = len(text) - _held_back(text, params.stop)
        if ready > sent:
            yield TextDelta(text[sent:ready], None, len(ids))
            sent = ready
    text = tokenizer.decode(ids, skip_special_tokens=True)
    yield TextDelta(text[sent:], LENGTH if len(ids) >= params.max_new_tokens else STOP, len(ids))


@functools.lru_cache(maxsize=None)
def _cache_argument(forward: Callable) -> str:
    """The KV-cache argument of a model's forward: ``cache`` (transformers 5) or ``past_key_values``."""
    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"


def causal_lm_step(model: torch.nn.Module, run: Callable[[Callable[[], Any]], Any] | None = None) -> Step:
    """A `Step` over a transformers causal LM with its KV cache. ``run(fn)`` wraps each forward
    (e.g. holding a lock and routing rows to an adapter); by default it just calls ``fn``."""
    argument = _cache_argument(type(model).forward)

    def step(ids: torch.Tensor, cache: Any) -> tuple[torch.Tensor, Any]:
        def forward() -> Any:
            with torch.no_grad():
                return model(input_ids=ids, use_cache=True, **{argument: cache})
        out = run(forward) if run is not None else forward()
        new_cache = out.cache if hasattr(out, "cache") and out.cache is not None else out.past_key_values
        return out.logits[0, -1], new_cache
    return step


def generate(step: Step, tokenizer: Any, prompt_ids: Sequence[int], params: SamplingParams,
             stop_ids: Sequence[int] = ()) -> Iterator[TextDelta]:
    """Stream the completion of ``prompt_ids`` as text deltas (see `stream_text`)."""
    return stream_text(generate_ids(step, prompt_ids, params, stop_ids), tokenizer, params)


def generate_text(step: Step, tokenizer: Any, prompt_ids: Sequence[int], params: SamplingParams,
                  stop_ids: Sequence[int] = ()) -> Generation:
    """The whole completion at once."""
    parts, reason, tokens = [], STOP, 0
    for delta in generate(step, tokenizer, prompt_ids, params, stop_ids):
        parts.append(delta.text)
        reason, tokens = delta.finish_reason or reason, delta.tokens
    return Generation("".join(parts), reason, len(prompt_ids), tokens)
