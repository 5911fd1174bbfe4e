"""Data: corpora, file readers, tokenizers, token shards and batch streams.

The names below load their module on first use (PEP 562), so importing a torch-free submodule
(``raystack.data.suffixes``: the planner, the CLI's preflight checks) does not import torch."""
from __future__ import annotations

from raystack.lazy import lazy_exports

_HOME = {"BatchStream": "corpus", "Corpus": "corpus", "corpus_from_files": "corpus", "iter_documents": "corpus",
         "read_documents": "corpus", "stdlib_corpus": "corpus",
         "ByteTokenizer": "tokenizer", "byte_level_tokenizer": "tokenizer", "train_tokenizer": "tokenizer"}
__all__ = list(_HOME)
__getattr__, __dir__ = lazy_exports(__name__, _HOME)
