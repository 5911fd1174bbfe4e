"""A request as tokens, with literals kept whole and every token's use tracked.

Literals (quoted text, file paths, numbers, percentages, ratios like 80/20, e-mail addresses,
URLs) become single tokens, so "./ckpt" keeps its dot and "0.05" is not a sentence end. Rules
match patterns on a *masked* string: words in lower case, literals as placeholders
(``FILE3``, ``NUM4``, ``PCT5``, ``RATIO6``, ``QUOTE7``, ``ADDR8``), so a pattern can say "a number
followed by epochs" without caring which number. Every token a rule uses is marked; what is
left unmarked at the end is quoted back in a refusal.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

_QUOTE = r"\"[^\"]*\"|(?<!\w)'[^'\n]*'(?!\w)|`[^`]*`|“[^”]*”|‘[^’]*’"
_ADDR = r"[\w.+-]+@[\w-]+\.[\w.-]+|\b\w+://\S+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"
_RATIO = r"\b\d{1,2}\s*/\s*\d{1,2}\b"
_PATH = (r"(?:~|\.{1,2})?/?(?:[\w\-]+/)+(?:[\w\-.]*[\w\-])?|(?:~|\.{1,2})/(?:[\w\-.]*[\w\-])?"
         r"|[\w\-]+(?:\.[\w\-]+)*\.(?:csv|tsv|parquet|pq|jsonl?|ya?ml|txt|png|jpe?g|svg|pdf|npz|pt|bin|safetensors|md|html|log)\b")
_NUM = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?(?:\s*%|k\b|m\b)?|[-+]?\.\d+"
_WORD = r"[A-Za-z][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*(?:'[A-Za-z]+)?"
_PUNCT = r">=|<=|==|!=|[.,;:!?()\[\]{}&|<>=*+≥≤]"
_TOKEN = re.compile(f"(?P<quote>{_QUOTE})|(?P<addr>{_ADDR})|(?P<ratio>{_RATIO})|(?P<path>{_PATH})"
                    f"|(?P<num>{_NUM})|(?P<word>{_WORD})|(?P<punct>{_PUNCT})", re.I)
NOT_PATHS = {"train/test", "train/validation", "test/train", "and/or", "train/val", "input/output"}
NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
NUMBER_WORDS.update({"fifteen": 15, "twenty": 20, "thirty": 30, "fifty": 50, "hundred": 100})
# a number word counts as a number only before one of these (else "the best one" would be 1)
UNIT_WORDS = set("""epoch epochs step steps worker workers rank ranks replica replicas adapter adapters
row rows sample samples example examples feature features time times trial trials retry retries
round rounds iteration iterations model models node nodes gpu gpus parameter server servers
lora dora file files""".split())
PLACEHOLDER = {"quote": "QUOTE", "addr": "ADDR", "ratio": "RATIO", "path": "FILE", "num": "NUM",
               "pct": "PCT"}


@dataclass
class Token:
    i: int
    text: str
    kind: str            # word | punct | quote | addr | ratio | path | num | pct
    start: int
    end: int
    used: str = ""       # what accounted for it ("" = not yet)

    @property
    def low(self) -> str:
        return self.text.lower()

    def value(self) -> float | str:
        """The literal's value: a number (percentages as fractions), a path, quoted text."""
        if self.kind == "num" and self.low in NUMBER_WORDS:
            return float(NUMBER_WORDS[self.low])
        if self.kind == "num":
            t = self.text.lower().replace(",", "")
            mult = 1000.0 if t.endswith("k") else 1e6 if t.endswith("m") else 1.0
            return float(t.rstrip("km")) * mult
        if self.kind == "pct":
            return float(self.text.rstrip("% ").replace(",", "")) / 100.0
        if self.kind == "quote":
            return self.text[1:-1]
        return self.text


def number(v: float) -> int | float:
    """An int when the number is whole."""
    return int(v) if float(v).is_integer() else float(v)


@dataclass
class Text:
    """The tokens of one request and a masked string over them."""

    raw: str
    tokens: list[Token] = field(default_factory=list)
    masked: str = ""
    _pos: list[tuple[int, int, int]] = field(default_factory=list)  # (start, end, token)
    claim: str = ""      # tokens used with this reason count as free (an action's own phrase)

    @classmethod
    def parse(cls, raw: str) -> "Text":
        t = cls(raw)
        for m in _TOKEN.finditer(raw):
            kind = m.lastgroup or "word"
            s = m.group(0)
            if kind == "path" and s.lower() in NOT_PATHS:
                for part in re.finditer(r"\w+|/", s):
                    t.tokens.append(Token(len(t.tokens), part.group(0),
                                          "word" if part.group(0) != "/" else "punct",
                                          m.start() + part.start(), m.start() + part.end()))
                continue
            if kind == "num" and s.rstrip().endswith("%"):
                kind = "pct"
            if kind == "word" and s.lower().endswith("'s"):  # possessive: "classifier's"
                t.tokens.append(Token(len(t.tokens), s[:-2], kind, m.start(), m.end() - 2))
                t.tokens.append(Token(len(t.tokens), s[-2:], kind, m.end() - 2, m.end()))
                continue
            t.tokens.append(Token(len(t.tokens), s, kind, m.start(), m.end()))
        for k, tok in enumerate(t.tokens):  # "one epoch", "two workers"
            if tok.kind == "word" and tok.low in NUMBER_WORDS and k + 1 < len(t.tokens) \
                    and t.tokens[k + 1].low in UNIT_WORDS:
                tok.kind = "num"
        parts, pos = [], 0
        for tok in t.tokens:
            piece = (f"{PLACEHOLDER[tok.kind]}{tok.i}" if tok.kind in PLACEHOLDER
                     else tok.low)
            if parts:
                pos += 1
            t._pos.append((pos, pos + len(piece), tok.i))
            parts.append(piece)
            pos += len(piece)
        t.masked = " ".join(parts)
        return t

    # -- spans ------------------------------------------------------------------------------
    def covered(self, start: int, end: int) -> list[Token]:
        """Tokens whose masked text overlaps [start, end)."""
        return [self.tokens[i] for s, e, i in self._pos if s < end and e > start]

    def mark(self, toks: Iterable[Token], why: str) -> None:
        for t in toks:
            if not t.used or (self.claim and t.used == self.claim):
                t.used = why

    def finditer(self, pattern: str | re.Pattern, lo: int = 0, hi: int | None = None,
                 free_only: bool = False) -> Iterator[tuple[re.Match, list[Token]]]:
        """Matches of ``pattern`` on the masked text within tokens [lo, hi)."""
        hi = len(self.tokens) if hi is None else hi
        if lo >= hi:
            return
        a = self._pos[lo][0]
        b = self._pos[hi - 1][1]
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        pos = a
        while pos <= b:
            m = rx.search(self.masked, pos, b)
            if m is None:
                return
            toks = self.covered(m.start(), m.end())
            if free_only and any(t.used and t.used != self.claim for t in toks):
                # try again from the next token: a shorter match may start later in this one
                nxt = [s for s, _, _ in self._pos if s > m.start()]
                if not nxt:
                    return
                pos = nxt[0]
                continue
            yield m, toks
            pos = max(m.end(), pos + 1)

    def match_at(self, pattern: str | re.Pattern, i: int, hi: int | None = None
                 ) -> tuple[re.Match, list[Token]] | None:
        """A match of ``pattern`` starting exactly at token i (within tokens [i, hi))."""
        hi = len(self.tokens) if hi is None else hi
        if i >= hi:
            return None
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        m = rx.match(self.masked, self._pos[i][0], self._pos[hi - 1][1])
        return (m, self.covered(m.start(), m.end())) if m else None

    @contextlib.contextmanager
    def claiming(self, reason: str) -> Iterator[None]:
        """Within: tokens used with ``reason`` count as free (extractors reading the words of
        their own action's phrase)."""
        prev, self.claim = self.claim, reason
        try:
            yield
        finally:
            self.claim = prev

    def token_at(self, masked_offset: int) -> Token:
        for s, e, i in self._pos:
            if s <= masked_offset < e:
                return self.tokens[i]
        raise IndexError(masked_offset)

    def literal(self, placeholder: str) -> Token:
        """The token behind a placeholder such as ``FILE3``."""
        return self.tokens[int(re.sub(r"\D", "", placeholder))]

    def span_text(self, toks: list[Token]) -> str:
        if not toks:
            return ""
        return self.raw[min(t.start for t in toks):max(t.end for t in toks)]

    def unused(self, lo: int = 0, hi: int | None = None) -> list[Token]:
        hi = len(self.tokens) if hi is None else hi
        return [t for t in self.tokens[lo:hi] if not t.used]

    def runs(self, toks: list[Token]) -> list[list[Token]]:
        """Consecutive runs of the given tokens (by index)."""
        out: list[list[Token]] = []
        for t in sorted(toks, key=lambda t: t.i):
            if out and out[-1][-1].i == t.i - 1:
                out[-1].append(t)
            else:
                out.append([t])
        return out


def sentences(text: Text) -> list[tuple[int, int]]:
    """Token ranges [lo, hi) of sentences (split at . ; ! ? and newlines)."""
    out, lo = [], 0
    for t in text.tokens:
        nl = "\n" in text.raw[text.tokens[t.i - 1].end:t.start] if t.i else False
        if nl and t.i > lo:
            out.append((lo, t.i))
            lo = t.i
        if t.kind == "punct" and t.text in ".;!?":
            t.used = t.used or "punctuation"
            if t.i + 1 > lo:
                out.append((lo, t.i + 1))
            lo = t.i + 1
    if lo < len(text.tokens):
        out.append((lo, len(text.tokens)))
    return [(a, b) for a, b in out if b > a]
