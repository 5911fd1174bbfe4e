"""Tokenizers: the byte vocabulary of the built-in models, and training a tokenizer on text.

`ByteTokenizer` is the built-in models' vocabulary: ids 0-255 are the UTF-8 bytes, 256-258 are
pad, bos and eos; no vocabulary file and no download. `byte_level_tokenizer()` is the same
vocabulary as a transformers tokenizer, so it is saved beside every built-in model's output
and `AutoTokenizer.from_pretrained` loads it. `train_tokenizer` trains a BPE or Unigram model
with the `tokenizers` library on your own text, saved the way a Hub tokenizer is.
"""
from __future__ import annotations

import functools
from typing import Any, Iterable, Literal

BYTE_PAD, BYTE_BOS, BYTE_EOS = "<pad>", "<s>", "</s>"


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


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-to-character table, the alphabet of the `tokenizers` ByteLevel steps:
    printable bytes map to themselves, the others to characters from U+0100 on."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + len(table) - len(printable))
    return table


def byte_level_tokenizer():
    """`ByteTokenizer`'s vocabulary as a transformers fast tokenizer (same ids; encoding with
    special tokens adds bos, as Llama's tokenizer does)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    table = _bytes_to_unicode()
    tok = Tokenizer(models.BPE(vocab={table[b]: b for b in range(256)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([BYTE_PAD, BYTE_BOS, BYTE_EOS])  # ids 256, 257, 258, in this order
    assert tok.token_to_id(BYTE_EOS) == ByteTokenizer.eos_id
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BYTE_BOS} $A", pair=f"{BYTE_BOS} $A {BYTE_BOS} $B",
        special_tokens=[(BYTE_BOS, ByteTokenizer.bos_id)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BYTE_BOS, eos_token=BYTE_EOS,
                                   pad_token=BYTE_PAD, model_max_length=1_000_000)


@functools.lru_cache(maxsize=1)
def default_byte_tokenizer() -> Any:
    """One shared `byte_level_tokenizer()` per process (callers must not modify it)."""
    return byte_level_tokenizer()


def train_tokenizer(texts: Iterable[str], kind: Literal["bpe", "unigram"] = "bpe", vocab_size: int = 2000,
                    bos: str = "<s>", eos: str = "</s>", pad: str = "<pad>", unk: str = "<unk>",
                    extra_special: tuple[str, ...] = ()):
    """A BPE or Unigram tokenizer trained on ``texts`` with the `tokenizers` library, wrapped as
    a transformers fast tokenizer (``save_pretrained`` writes ``tokenizer.json``).

    Words are split on whitespace with a sentencepiece-style marker (as Llama's and T5's
    tokenizers do), so decoding restores the spaces; characters never seen map to ``unk``
    (there is no byte fallback). Encoding with special tokens prepends ``bos``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = [unk, bos, eos, pad, *extra_special]
    if kind == "bpe":
        tok = Tokenizer(models.BPE(unk_token=unk))
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    elif kind == "unigram":
        tok = Tokenizer(models.Unigram())
        trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=specials, unk_token=unk,
                                          show_progress=False)
    else:
        raise ValueError(f"kind must be 'bpe' or 'unigram', got {kind!r}")
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(texts, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos, pad_token=pad,
                                   unk_token=unk, additional_special_tokens=list(extra_special) or None,
                                   model_max_length=1_000_000)
