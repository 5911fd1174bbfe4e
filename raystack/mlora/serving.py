"""Serving many adapters on one base: an adapter pool safe under eviction, and generation.

`LoRAEngine` holds one frozen base (BatchLoRA) and its tokenizer, loads PEFT adapter
directories by id (raystack's or peft's own; an adapter trained on other base weights is
refused) and generates with a KV cache, one request per thread if need be: every forward
step takes the engine's lock, so requests interleave token by token on one model.

An adapter in use is never detached: a request leases it for its whole generation, and
`LoadedAdapter.evict` (what Ray Serve's LRU calls) only marks it; the last lease detaches
it. Each load gets its own internal name, so an adapter evicted and loaded again while an
old request still runs is two adapters for that moment. A step whose adapter is gone is an
error, never the bare base's output. Nothing here knows about Ray.
"""
from __future__ import annotations

import itertools
import re
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from raystack.mlora.batchlora import BatchLoRAModel, Segment
from raystack.mlora.export import load_peft_adapter
from raystack.models.generate import Generation, SamplingParams, TextDelta, causal_lm_step, generate, generate_text

ADAPTER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")  # directory names: hyphens welcome


class AdapterNotFound(LookupError):
    """No adapter by that id (or it was unloaded while a request needed it)."""


class LoadedAdapter:
    """An adapter attached to the engine's base under an internal ``name``; leased by requests."""

    def __init__(self, engine: "LoRAEngine", adapter_id: str, name: str) -> None:
        self.engine, self.id, self.name = engine, adapter_id, name
        self.leases = 0
        self.evicted = False
        self.attached = True

    def evict(self) -> None:
        """Detach now if no request uses the adapter, else when the last one ends."""
        with self.engine.lock:
            self.evicted = True
            self._detach_if_idle()

    def __del__(self) -> None:  # Ray Serve's multiplexer calls __del__ to unload
        try:
            self.evict()
        except Exception:
            pass

    @contextmanager
    def lease(self) -> Iterator["LoadedAdapter"]:
        """Keep the adapter attached while the block runs."""
        with self.engine.lock:
            if not self.attached:
                raise AdapterNotFound(f"adapter {self.id!r} was unloaded")
            self.leases += 1
        try:
            yield self
        finally:
            with self.engine.lock:
                self.leases -= 1
                self._detach_if_idle()

    def _detach_if_idle(self) -> None:  # with the engine lock held
        if self.evicted and self.leases == 0 and self.attached:
            self.engine.model.remove_adapter(self.name)
            self.attached = False


class LoRAEngine:
    """One base model and tokenizer; adapters from ``adapters_dir/<id>`` attached on demand."""

    def __init__(self, model: BatchLoRAModel, tokenizer: Any, adapters_dir: str | Path,
                 base_sha256: str | None = None) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.adapters_dir = Path(adapters_dir)
        self.base_sha256 = base_sha256
        self.lock = threading.RLock()
        self._names = itertools.count()

    # -- adapters -------------------------------------------------------------------------
    def adapter_ids(self) -> list[str]:
        """Ids of the adapter directories under ``adapters_dir``."""
        if not self.adapters_dir.is_dir():
            return []
        return sorted(p.name for p in self.adapters_dir.iterdir() if (p / "adapter_config.json").is_file())

    def load(self, adapter_id: str) -> LoadedAdapter:
        """Attach ``adapters_dir/<adapter_id>`` (an AdapterNotFound if there is none)."""
        directory = self.adapters_dir / adapter_id
        if not ADAPTER_ID.fullmatch(adapter_id or "") or ".." in adapter_id or \
                not (directory / "adapter_config.json").is_file():
            raise AdapterNotFound(f"no adapter {adapter_id!r} under {self.adapters_dir}")
        name = f"serve_{next(self._names)}"
        with self.lock:
            load_peft_adapter(self.model, directory, name, base_sha256=self.base_sha256)
        return LoadedAdapter(self, adapter_id, name)

    # -- prompts --------------------------------------------------------------------------
    def prompt_ids(self, prompt: str) -> list[int]:
        return list(self.tokenizer(prompt, add_special_tokens=True)["input_ids"])

    def chat_prompt_ids(self, messages: Sequence[dict]) -> list[int]:
        """The conversation rendered by the tokenizer's chat template, ready for the answer."""
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError("the base's tokenizer has no chat template; use /v1/completions")
        text = self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def stop_ids(self, chat: bool = False) -> list[int]:
        """Tokens that end an answer: eos, and for chat the template's end-of-turn tokens."""
        tok = self.tokenizer
        out = {tok.eos_token_id} if tok.eos_token_id is not None else set()
        if chat and getattr(tok, "chat_template", None):
            turn = tok.apply_chat_template([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}],
                                           tokenize=False)
            tail = tok(turn[turn.rfind("y") + 1:], add_special_tokens=False)["input_ids"]
            out |= {t for t in tail if t in set(tok.all_special_ids)}
        return sorted(out)

    # -- generation -----------------------------------------------------------------------
    def _step(self, adapter: LoadedAdapter | None):
        def run(forward):
            with self.lock:
                if adapter is not None and adapter.name not in self.model.specs:
                    raise AdapterNotFound(f"adapter {adapter.id!r} is not loaded")  # never the bare base
                segments = [Segment(adapter.name, 0, 1)] if adapter is not None else []
                with self.model.segments(segments):
                    return forward()
        return causal_lm_step(self.model.base_model, run)

    def stream(self, prompt_ids: Sequence[int], params: SamplingParams, adapter: LoadedAdapter | None = None,
               chat: bool = False) -> Iterator[TextDelta]:
        """Text deltas of one request (the adapter is leased until the iterator ends)."""
        if adapter is None:
            yield from generate(self._step(None), self.tokenizer, prompt_ids, params, self.stop_ids(chat))
            return
        with adapter.lease():
            yield from generate(self._step(adapter), self.tokenizer, prompt_ids, params, self.stop_ids(chat))

    def complete(self, prompt_ids: Sequence[int], params: SamplingParams, adapter: LoadedAdapter | None = None,
                 chat: bool = False) -> Generation:
        """One request's whole completion."""
        if adapter is None:
            return generate_text(self._step(None), self.tokenizer, prompt_ids, params, self.stop_ids(chat))
        with adapter.lease():
            return generate_text(self._step(adapter), self.tokenizer, prompt_ids, params, self.stop_ids(chat))
