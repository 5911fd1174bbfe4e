"""A model's tokenizer: which one, loading it, and checking it fits the model's embeddings.

``tokenizer: null`` (the default) means the model's own: the byte tokenizer for built-in
models, ``AutoTokenizer`` on the checkpoint directory (or Hub snapshot) otherwise.
``tokenizer: byte`` forces the byte tokenizer; any other value is a tokenizer directory or Hub
id. Every raystack output saves its tokenizer beside the weights with ``save_pretrained``.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
from typing import Any

from raystack.config import ConfigError
from raystack.data.tokenizer import ByteTokenizer, default_byte_tokenizer
from raystack.models.load import TOKENIZER_FILES, load_model_config, resolve_model, resolve_source

BYTE = "byte"
log = logging.getLogger(__name__)


def _byte_vocabulary(config: Any) -> bool:
    """A checkpoint raystack wrote from a built-in model before it saved tokenizers."""
    tok = ByteTokenizer
    return (getattr(config, "vocab_size", None), getattr(config, "pad_token_id", None),
            getattr(config, "bos_token_id", None), getattr(config, "eos_token_id", None)) == \
        (tok.vocab_size, tok.pad_id, tok.bos_id, tok.eos_id)


def tokenizer_name(model: str, tokenizer: str | None) -> str:
    """What the tokenizer is, for messages: the value given, or the model it comes with."""
    return tokenizer if tokenizer else f"the tokenizer of {model!r}"


@functools.lru_cache(maxsize=8)
def load_tokenizer(model: str, tokenizer: str | None = None, field: str = "tokenizer",
                   model_field: str = "model") -> Any:
    """The tokenizer for ``model`` (``tokenizer``: None for the model's own, ``"byte"``, or a
    directory / Hub id). Cached per process: callers must not modify it."""
    if tokenizer == BYTE:
        return default_byte_tokenizer()
    if tokenizer is None:
        source = resolve_model(model, field=model_field)
        if source.builtin:
            return default_byte_tokenizer()
        from pathlib import Path

        if not any((Path(source.path) / n).is_file() for n in TOKENIZER_FILES):
            if _byte_vocabulary(load_model_config(model, model_field)):
                log.warning("%s has no tokenizer files but raystack's byte vocabulary: using the byte tokenizer", model)
                return default_byte_tokenizer()
            raise ConfigError(field, f"model {model!r} has no tokenizer files ({', '.join(TOKENIZER_FILES)}) in "
                                     f"{source.path}; set {field}: to a tokenizer directory or Hub id")
    else:
        source = resolve_source(tokenizer, field=field, need=TOKENIZER_FILES)
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(source.path, local_files_only=True)
    except Exception as exc:  # transformers raises several types for unusable tokenizer files
        raise ConfigError(field, f"cannot load a tokenizer from {source.path}: {type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0][:200]}") from None


def check_tokenizer_fits(model: str, tokenizer: str | None = None, field: str = "tokenizer",
                         model_field: str = "model") -> Any:
    """Load the tokenizer and check its ids fit the model's embeddings; returns the tokenizer.
    A larger vocabulary than the embedding table is a ConfigError naming both sizes (a
    smaller one is fine: checkpoints often pad their embeddings)."""
    config = load_model_config(model, model_field)
    rows = int(getattr(config, "get_text_config", lambda: config)().vocab_size)
    tok = load_tokenizer(model, tokenizer, field, model_field)
    if len(tok) > rows:
        raise ConfigError(field, f"{tokenizer_name(model, tokenizer)} has {len(tok):,} tokens, but model {model!r} "
                                 f"has {rows:,} embedding rows (vocab_size): its ids would index past the embeddings")
    return tok


def pad_token_id(tok: Any) -> int:
    """The id to pad with (pads never reach a loss): pad, else eos, else 0."""
    for tid in (tok.pad_token_id, tok.eos_token_id):
        if tid is not None:
            return int(tid)
    return 0


def eos_token_id(tok: Any, field: str = "tokenizer") -> int:
    """The end-of-sequence id (documents and answers end with it)."""
    if tok.eos_token_id is None:
        raise ConfigError(field, f"tokenizer {type(tok).__name__} has no eos_token; raystack ends documents and "
                                 "answers with it")
    return int(tok.eos_token_id)


def tokenizer_fingerprint(tok: Any) -> str:
    """A hash of everything that decides the ids: the vocabulary and rules, the special tokens."""
    h = hashlib.sha256(type(tok).__name__.encode())
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is not None:
        h.update(backend.to_str().encode())
    else:
        h.update(json.dumps(tok.get_vocab(), sort_keys=True).encode())
    h.update(json.dumps({k: str(v) for k, v in tok.special_tokens_map.items()}, sort_keys=True).encode())
    return h.hexdigest()[:16]
