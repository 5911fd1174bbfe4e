"""Byte-level tokenizer: every text is its UTF-8 bytes, plus three special ids.

No vocabulary file and no download, so every machine tokenizes the same way.
"""
from __future__ import annotations

from typing import Iterable


class ByteTokenizer:
    """Ids 0-255 are bytes; 256 = pad, 257 = bos, 258 = eos."""

    vocab_size = 259
    pad_id = 256
    bos_id = 257
    eos_id = 258

    def encode(self, text: str, bos: bool = False, eos: bool = False) -> list[int]:
        ids = list(text.encode("utf-8"))
        return ([self.bos_id] if bos else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, ids: Iterable[int]) -> str:
        """Text of the byte ids (special ids dropped; invalid UTF-8 replaced)."""
        return bytes(int(i) for i in ids if 0 <= int(i) < 256).decode("utf-8", errors="replace")
