"""Data: corpora, file readers, tokenizers, token shards and batch streams.

The names below load their module on first use (PEP 562), so importing a torch-free submodule
(``raystack.data.suffixes``: the planner, the CLI's preflight checks) does not import torch."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_HOME = {"BatchStream": "corpus", "Corpus": "corpus", "corpus_from_files": "corpus", "iter_documents": "corpus",
         "read_documents": "corpus", "stdlib_corpus": "corpus",
         "ByteTokenizer": "tokenizer", "byte_level_tokenizer": "tokenizer", "train_tokenizer": "tokenizer"}
__all__ = ["BatchStream", "ByteTokenizer", "Corpus", "byte_level_tokenizer", "corpus_from_files", "iter_documents",
           "read_documents", "stdlib_corpus", "train_tokenizer"]

if TYPE_CHECKING:
    from raystack.data.corpus import BatchStream, Corpus, corpus_from_files, iter_documents, read_documents, stdlib_corpus
    from raystack.data.tokenizer import ByteTokenizer, byte_level_tokenizer, train_tokenizer


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'raystack.data' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"raystack.data.{_HOME[name]}"), name)
    globals()[name] = value
    return value
