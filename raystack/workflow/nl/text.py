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

from raystack.workflow.nl.spelling import corrected

_QUOTE = r"\"[^\"]*\"|(?<!\w)'[^'\n]*'(?!\w)|`[^`]*`|“[^”]*”|‘[^’]*’"
_ADDR = r"[\w.+-]+@[\w-]+\.[\w.-]+|\b\w+://\S+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"
_RATIO = (r"\b(?:" + "|".join(f"{a}(?:\\s*/\\s*|[:-]){100 - a}" for a in range(1, 100)) + r")\b(?!\.\d)")   # 80/20, 80-20, 80:20
_PATH = (r"(?:~|\.{1,2})?/?(?:[\w\-]+/)+(?:[\w\-.]*[\w\-])?|(?:~|\.{1,2})/(?:[\w\-.]*[\w\-])?"
         r"|[\w\-]+(?:\.[\w\-]+)*\.(?:csv|tsv|parquet|pq|jsonl?|ya?ml|txt|png|jpe?g|svg|pdf|npz|pt|bin|safetensors|md|html|log)\b")
_NUM = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?(?:\s*%|k\b|m\b)?|[-+]?\.\d+"
_WORD = r"[A-Za-z][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*(?:'[A-Za-z]+)?"
ARROWS = ("->", "=>", "→", "⇒", "⟶")
_PUNCT = r"->|=>|>=|<=|==|!=|\.\.(?=\s*\d)|[.,;:!?()\[\]{}&|<>=*+≥≤→⇒⟶—–∈/⋈]|(?<=\s)-(?=\s)"
# shorthand read as the word it stands for ("w/ 3 retries")
ABBREVIATIONS = {"w/": "with", "w/o": "without", "b/c": "because", "thru": "through", "ppl": "people",
                 "e.g.": "e.g", "i.e.": "i.e", "etc.": "etc", "e.g": "e.g", "i.e": "i.e",
                 "ckpt": "checkpoint", "ckpts": "checkpoints",   # (practitioners shorten the checkpoint)
                 "afterward": "afterwards",                    # (American English)
                 # "create a train/test split", "create me a chart": what "make" says
                 "create": "make", "creates": "makes", "creating": "making"}
# conditions opened by more than one word ("provided that the recall is over 0.6", "in case it
# crashes", "in the event that ..."): one token that reads as "if", so that every cue written with
# "if" reads them (the span keeps the words written); the word after the phrase must not make it
# something else ("in case of failure", "the data provided by"). ("as long as" stays as written:
# after "repeat" it is a loop's "while")
CONDITION_PHRASES: list[tuple[tuple[str, ...], str, frozenset[str]]] = [
    (("provided", "that"), "if", frozenset()), (("providing", "that"), "if", frozenset()),
    (("solely", "on", "condition", "that"), "only if", frozenset()), (("only", "on", "condition", "that"), "only if", frozenset()),
    (("on", "condition", "that"), "if", frozenset()), (("on", "the", "condition", "that"), "if", frozenset()),
    (("in", "the", "event", "that"), "if", frozenset()), (("assuming", "that"), "if", frozenset()),
    (("in", "case"), "if", frozenset({"of", "you", "someone", "anyone"})),
    # "provided it scores 0.8", "providing the recall is ...": the bare participle before a clause's subject
    (("provided",), "if", frozenset()), (("providing",), "if", frozenset()),
]
# "check the stats before anything else", "first of all, load x.csv": a step said to come first,
# in more words than "first" (one token spelled "first", read as the word is; the span keeps the
# words written)
ORDER_PHRASES: list[tuple[tuple[str, ...], str]] = [
    (("before", "anything", "else", "is", "done"), "first"), (("before", "anything", "else", "happens"), "first"),
    (("before", "doing", "anything", "else"), "first"),
    (("before", "anything", "else"), "first"), (("before", "everything", "else"), "first"),
    (("first", "of", "all"), "first"), (("as", "a", "first", "step"), "first"), (("as", "the", "first", "step"), "first"),
]
CLAUSE_SUBJECTS = {"it", "they", "its", "their", "the", "that", "this", "those", "these", "we", "there", "nothing",
                   "everything", "all", "no", "none", "every", "each", "any", "both", "either", "neither"}
_ABBR = r"\b(?:w/o|w/|b/c)(?![\w/])|\b(?:e\.g|i\.e)\.?(?!\w)|\betc\.(?=\s*[,;)a-z])"
_TOKEN = re.compile(f"(?P<quote>{_QUOTE})|(?P<addr>{_ADDR})|(?P<abbr>{_ABBR})|(?P<ratio>{_RATIO})|(?P<path>{_PATH})"
                    f"|(?P<num>{_NUM})|(?P<word>{_WORD})|(?P<punct>{_PUNCT})", re.I)
# words before "one" that make it a pronoun ("the best one, two ...")
DETERMINERS = {"the", "a", "an", "best", "this", "that", "each", "every", "which", "any", "no", "other", "another", "last"}
NOT_PATHS = {"train/test", "train/validation", "test/train", "and/or", "train/val", "input/output"}
# folders a path written without "./" names by its first or last part ("data/criteo", "out/x")
DIR_WORDS = set("""data dataset datasets out output outputs model models run runs ckpt ckpts checkpoint
checkpoints tmp temp results result reports report logs log exports export artifacts artifact plots
figures figs raw processed staging scratch home users user mnt opt var srv tables adapters""".split())


def _word_pair(s: str) -> bool:
    """"pass/fail", "yes/no", "buy/sell": two plain words with a slash, not a folder (a path
    has a folder's name, a digit, an underscore, a dot or a slash at either end)."""
    parts = s.lower().split("/")
    return len(parts) == 2 and all(re.fullmatch(r"[a-z]{1,12}", p) for p in parts) \
        and not any(p in DIR_WORDS for p in parts)
# numbers in words: "five thousand" -> 5000, "twenty five" -> 25, "a quarter" -> 0.25
UNIT_NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
TENS_NUMBERS = {w: 10 * (i + 2) for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split())}
SCALE_WORDS = {"hundred": 100.0, "thousand": 1e3, "million": 1e6, "billion": 1e9}
NUMBER_WORDS = {**UNIT_NUMBERS, **TENS_NUMBERS}
FRACTION_WORDS = {"quarter": 0.25, "third": 1 / 3, "fifth": 0.2, "tenth": 0.1, "half": 0.5}
PERCENT_WORDS = ("percent", "pct", "per-cent")
# "one" is a number only before one of these (else "the best one" would be 1)
UNIT_WORDS = set("""epoch epochs step steps worker workers rank ranks replica replicas adapter adapters
row rows sample samples example examples feature features time times trial trials retry retries
round rounds iteration iterations model models node nodes gpu gpus parameter server servers
lora dora file files record records run runs pass passes attempt attempts gb percent""".split())
# "an epoch per round", "a single epoch": the article counts one only before these
ONE_UNITS = {"epoch"}
CONTRACTIONS = {"'re": "are", "'ve": "have", "'ll": "will"}
LIST_MARKER = "list marker"
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
    val: float | None = None   # a number's value (percentages as fractions)
    spelled: str = ""    # the word a typo stands for ("evalaute": "evaluate")

    @property
    def low(self) -> str:
        low = self.spelled or self.text.lower()
        return ABBREVIATIONS.get(low, low)

    def value(self) -> float | str:
        """The literal's value: a number (percentages as fractions), a path, quoted text."""
        if self.kind in ("num", "pct") and self.val is not None:
            return self.val
        if self.kind == "num":
            t = self.text.lower().replace(",", "")
            mult = 1000.0 if t.endswith("k") else 1e6 if t.endswith("m") else 1.0
            return float(t.rstrip("km")) * mult
        if self.kind == "pct":
            return float(self.text.rstrip("% ").replace(",", "")) / 100.0
        if self.kind == "quote":
            return self.text[1:-1]
        return self.text


def _word_number(words: list[str]) -> float | None:
    """The value of number words ("twenty five", "five hundred", "1.2 million" as ["1.2",
    "million"]); None when they do not form one number."""
    total, current, last = 0.0, 0.0, ""
    for w in words:
        if w in UNIT_NUMBERS or w in TENS_NUMBERS:
            if last in UNIT_NUMBERS or (last in TENS_NUMBERS and w in TENS_NUMBERS) or last == "num":
                return None
            current += NUMBER_WORDS[w]
        elif w in SCALE_WORDS:
            # ("two hundred thousand": hundreds of a larger scale; never "thousand thousand")
            if not last or last in SCALE_WORDS and SCALE_WORDS[last] <= SCALE_WORDS[w] and (last != "hundred" or w == "hundred"):
                return None
            if w == "hundred":
                current *= 100
            else:
                total, current = total + current * SCALE_WORDS[w], 0.0
        else:
            try:
                current, w = float(w.replace(",", "")), "num"
            except ValueError:
                return None
            if last:
                return None
        last = w
    return total + current


DIGITS = {w: v for w, v in UNIT_NUMBERS.items() if v < 10}
RATIO_TENS = {**TENS_NUMBERS, "ten": 10}      # the parts of a split said aloud ("ninety ten")


def _digit(x: Token) -> str | None:
    """One digit, said ("six") or written ("6")."""
    return str(DIGITS[x.low]) if x.low in DIGITS else x.text if x.kind == "num" and re.fullmatch(r"\d+", x.text) else None


def _spoken_decimal(tokens: list[Token], i: int, out: list[Token]) -> tuple[Token, int] | None:
    """"point six five" (0.65), "two point nine", "3 point one" (the whole part already in
    ``out``): a decimal said aloud, digit by digit after "point"; the token and the index after it."""
    if tokens[i].low != "point" or i + 1 >= len(tokens) or _digit(tokens[i + 1]) is None:
        return None
    j = i + 1
    while j < len(tokens) and tokens[j].low in DIGITS:
        j += 1
    j = max(j, i + 2)       # (a written number after "point" is the whole fraction: "point 25")
    digits = "".join(_digit(x) for x in tokens[i + 1:j])
    whole, said = "0", tokens[i:j]
    prev = out[-1] if out else None
    if prev is not None and prev.kind == "num" and prev.end + 1 >= tokens[i].start and (
            prev.low in NUMBER_WORDS or prev.low.isdigit()):
        out.pop()
        whole, said = str(int(float(prev.val if prev.val is not None else prev.text))), [prev, *said]
    text, start = " ".join(x.text for x in said), said[0].start
    return Token(0, text, "num", start, tokens[j - 1].end, val=float(f"{whole}.{digits}")), j


def _ratio_parts(tokens: list[Token], i: int) -> list[tuple[int, int]]:
    """The ways a ratio's part may be said from token i: (value, index after), a ten alone
    ("seventy") and a ten with its unit ("seventy-five", "seventy five"), the longer first."""
    if i >= len(tokens) or tokens[i].low not in RATIO_TENS:
        return []
    ten = RATIO_TENS[tokens[i].low]
    out = [(ten, i + 1)]
    if ten >= 20 and i + 1 < len(tokens) and tokens[i + 1].low in DIGITS and DIGITS[tokens[i + 1].low] > 0:
        out.insert(0, (ten + DIGITS[tokens[i + 1].low], i + 2))
    return out


def _spoken_ratio(tokens: list[Token], i: int) -> tuple[Token, int] | None:
    """"eighty twenty", "seventy-five twenty-five": two numbers of tens said one after the other
    that add up to a hundred are a split's ratio (as 80/20); the token and the index after it."""
    for a, j in _ratio_parts(tokens, i):
        for b, k in _ratio_parts(tokens, j):
            if a + b == 100:
                return Token(0, f"{a}/{b}", "ratio", tokens[i].start, tokens[k - 1].end), k
    return None


def _condition_phrases(raw: str, tokens: list[Token]) -> list[Token]:
    """Each CONDITION_PHRASES phrase as one token spelled as the condition it opens, and each
    ORDER_PHRASES phrase as one token spelled "first"."""
    out: list[Token] = []
    k = 0
    while k < len(tokens):
        for words, spelled, not_before in CONDITION_PHRASES:
            n = len(words)
            seq = tokens[k:k + n]
            nxt = tokens[k + n] if k + n < len(tokens) else None
            if _spells(raw, seq, words) and nxt is not None and nxt.low not in not_before \
                    and nxt.text not in (",", ".", ";", ":", ")", "!", "?") and (n > 1 or nxt.low in CLAUSE_SUBJECTS):
                out.append(Token(len(out), raw[seq[0].start:seq[-1].end], "word", seq[0].start, seq[-1].end, spelled=spelled))
                k += n
                break
        else:
            phrase = next(((words, spelled) for words, spelled in ORDER_PHRASES if _spells(raw, tokens[k:k + len(words)], words)), None)
            if phrase is not None:
                seq = tokens[k:k + len(phrase[0])]
                out.append(Token(len(out), raw[seq[0].start:seq[-1].end], "word", seq[0].start, seq[-1].end, spelled=phrase[1]))
                k += len(seq)
                continue
            tok = tokens[k]
            tok.i = len(out)
            out.append(tok)
            k += 1
    return out


def _spells(raw: str, seq: list[Token], words: tuple[str, ...]) -> bool:
    """The tokens are the words, written apart by spaces only."""
    return len(seq) == len(words) and all(x.kind == "word" and x.text.lower() == w for x, w in zip(seq, words)) \
        and all(raw[a.end:b.start].strip() == "" for a, b in zip(seq, seq[1:]))


def _merge_numbers(tokens: list[Token]) -> list[Token]:
    """Numbers as one token each: number words ("five thousand"), digits with a scale word
    ("1.2 million"), percentages in words ("ten percent", "1 percent") and fractions in words
    ("a quarter"). "one" counts only before a unit word ("one epoch", not "the best one")."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        low = tok.low
        if tok.kind == "word" and low in ("a", "one", "half") and i + 1 < len(tokens) and \
                tokens[i + 1].low in FRACTION_WORDS and low != "half":
            nxt = tokens[i + 1]
            out.append(Token(0, tok.text + " " + nxt.text, "pct", tok.start, nxt.end,
                             val=FRACTION_WORDS[nxt.low]))
            i += 2
            continue
        if tok.kind == "word" and low in FRACTION_WORDS and len(out) >= 2 and out[-1].low == "random" \
                and out[-2].low == "a":      # "take a random quarter of them"
            out.append(Token(0, tok.text, "pct", tok.start, tok.end, val=FRACTION_WORDS[low]))
            i += 1
            continue
        if tok.kind == "word" and low == "half" and i + 1 < len(tokens) and tokens[i + 1].low == "of":
            out.append(Token(0, tok.text, "pct", tok.start, tok.end, val=0.5))   # "half of clicks.csv"
            i += 1
            continue
        if tok.kind == "word" and low in ("a", "an") and i + 1 < len(tokens) and tokens[i + 1].low in ONE_UNITS:
            out.append(Token(0, tok.text, "num", tok.start, tok.end, val=1.0))   # "an epoch per round"
            i += 1
            continue
        spoken = _spoken_decimal(tokens, i, out)
        if spoken is not None:      # "point six five", "two point nine": a decimal said aloud
            tok, i = spoken
            out.append(tok)
            continue
        split = _spoken_ratio(tokens, i)
        if split is not None:       # "split it eighty twenty": a ratio said aloud
            tok, i = split
            out.append(tok)
            continue
        numeric = tok.kind == "num" and tok.val is None and not re.search(r"[%km]$", low)
        if (tok.kind == "word" and low in NUMBER_WORDS) or numeric:
            j = i + 1
            while j < len(tokens) and tokens[j].kind == "word" and \
                    (tokens[j].low in NUMBER_WORDS or tokens[j].low in SCALE_WORDS):
                j += 1
            while j > i + 1 and _word_number([x.low for x in tokens[i:j]]) is None:
                j -= 1
            words = [x.low for x in tokens[i:j]]
            value = _word_number(words)
            nxt = tokens[j] if j < len(tokens) else None
            if value is not None and (j > i + 1 or tok.kind == "word"):
                prev_low = tokens[i - 1].low if i else ""
                listed = nxt is not None and nxt.low in (",", "and", "or", "&") and j + 1 < len(tokens) and \
                    tokens[j + 1].low in NUMBER_WORDS and prev_low not in DETERMINERS   # "one, two and four epochs"
                if words == ["one"] and not listed and not (nxt is not None and (nxt.low in UNIT_WORDS
                                                                                 or nxt.low in PERCENT_WORDS)):
                    out.append(tok)
                    i += 1
                    continue
                tok = Token(0, " ".join(x.text for x in tokens[i:j]), "num", tok.start,
                            tokens[j - 1].end, val=value)
                i = j
            else:
                i += 1
            after = tokens[i] if i < len(tokens) else None
            if after is not None and after.low in PERCENT_WORDS:
                nxt = after
                out.append(Token(0, tok.text + " " + nxt.text, "pct", tok.start, nxt.end,
                                 val=float(tok.value()) / 100.0))
                i += 1
                continue
            # ("25 per cent", British spelling in two words)
            if after is not None and after.low == "per" and i + 1 < len(tokens) and tokens[i + 1].low == "cent":
                nxt = tokens[i + 1]
                out.append(Token(0, tok.text + " per " + nxt.text, "pct", tok.start, nxt.end,
                                 val=float(tok.value()) / 100.0))
                i += 2
                continue
            out.append(tok)
            continue
        out.append(tok)
        i += 1
    for k, tok in enumerate(out):
        tok.i = k
    return out


_LOCATION = {"in", "inside", "under", "within", "from"}
_FOLDER_WORDS = {"the", "folder", "directory", "dir", "my", "our"}


def _files_in_folder(tokens: list[Token]) -> list[Token]:
    """Bare file names followed by the folder they are in ("customers.csv and orders.csv in
    data/") name files in that folder: each file token becomes the folder's path and the
    location words go (a folder is not a table to load)."""
    out = list(tokens)
    k = 0
    while k < len(out):
        tok = out[k]
        if tok.kind != "path" or not tok.text.endswith("/") or k < 2:
            k += 1
            continue
        j = k - 1
        while j > 0 and out[j].low in _FOLDER_WORDS:
            j -= 1
        if out[j].low not in _LOCATION:
            k += 1
            continue
        files, m = [], j - 1
        while m >= 0 and out[m].kind == "path" and "/" not in out[m].text and "." in out[m].text:
            files.append(out[m])
            m -= 1
            if m >= 1 and (out[m].text in (",", "&") or out[m].low in ("and", "or")):
                m -= 1
                if m >= 0 and out[m].text == "," and out[m + 1].low in ("and", "or"):
                    m -= 1
                continue
            break
        if not files:
            k += 1
            continue
        for f in files:
            f.text = tok.text + f.text
        del out[j:k + 1]
        k = j
    return out


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
    named: dict[str, list[Token]] = field(default_factory=dict)   # names read first ("adapters")

    @classmethod
    def parse(cls, raw: str) -> "Text":
        # "min–max", "re‑run": a dash typed between two letters joins a word, as a hyphen does
        raw = re.sub(r"(?<=[A-Za-z])[–‐‑](?=[A-Za-z])", "-", raw)
        t = cls(raw)
        for m in _TOKEN.finditer(raw):
            kind = m.lastgroup or "word"
            if kind == "abbr":
                kind = "word"
            s = m.group(0)
            if kind == "path" and re.fullmatch(r"\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)+/?", s):   # "5/15": numbers
                for part in re.finditer(r"\d+(?:\.\d+)?|/", s):
                    t.tokens.append(Token(len(t.tokens), part.group(0), "num" if part.group(0) != "/" else "punct",
                                          m.start() + part.start(), m.start() + part.end()))
                continue
            if kind == "path" and (s.lower() in NOT_PATHS or _word_pair(s)):
                for part in re.finditer(r"\w+|/", s):
                    t.tokens.append(Token(len(t.tokens), part.group(0),
                                          "word" if part.group(0) != "/" else "punct",
                                          m.start() + part.start(), m.start() + part.end()))
                continue
            if kind == "num" and s.rstrip().endswith("%"):
                kind = "pct"
            head, _, tail = s.partition("-")
            if kind == "word" and tail and head.lower() in NUMBER_WORDS:  # "one-epoch", "three-trial"
                t.tokens.append(Token(len(t.tokens), head, kind, m.start(), m.start() + len(head)))
                t.tokens.append(Token(len(t.tokens), tail, kind, m.end() - len(tail), m.end()))
                continue
            if kind == "word" and s.lower()[-3:] in CONTRACTIONS:   # "they're scored": they are scored
                t.tokens.append(Token(len(t.tokens), s[:-3], kind, m.start(), m.end() - 3))
                t.tokens.append(Token(len(t.tokens), s[-3:], kind, m.end() - 3, m.end(), spelled=CONTRACTIONS[s.lower()[-3:]]))
                continue
            if kind == "word" and s.lower() == "s" and m.start() and raw[m.start() - 1] in "'’" and t.tokens \
                    and t.tokens[-1].kind == "path" and t.tokens[-1].end == m.start() - 1:   # "x.csv's price"
                t.tokens.append(Token(len(t.tokens), "'s", kind, m.start() - 1, m.end()))
                continue
            if kind == "word" and s.lower().endswith("'s"):  # possessive: "classifier's"
                t.tokens.append(Token(len(t.tokens), s[:-2], kind, m.start(), m.end() - 2))
                t.tokens.append(Token(len(t.tokens), s[-2:], kind, m.end() - 2, m.end()))
                continue
            t.tokens.append(Token(len(t.tokens), s, kind, m.start(), m.end()))
        t.tokens = _condition_phrases(raw, _merge_numbers(_files_in_folder(t.tokens)))
        for tok in t.tokens:
            if tok.kind == "word" and not tok.spelled:
                tok.spelled = corrected(tok.text) or ""
            elif tok.text == "!" and (tok.end == len(raw) or raw[tok.end].isspace()):
                tok.spelled = "."      # "Past jobs are in callouts.csv! Dedupe it!": a sentence's end, as "." is
        t._list_markers()
        parts, pos = [], 0
        for k, tok in enumerate(t.tokens):
            piece = (f"{PLACEHOLDER[tok.kind]}{tok.i}" if tok.kind in PLACEHOLDER
                     else tok.low)
            if parts:   # a line break stays one ("- report" ends its bullet: ``(?m:$)`` sees it)
                parts.append("\n" if "\n" in raw[t.tokens[k - 1].end:tok.start] else " ")
                pos += 1
            t._pos.append((pos, pos + len(piece), tok.i))
            parts.append(piece)
            pos += len(piece)
        t.masked = "".join(parts)
        return t

    def _list_markers(self) -> None:
        """Numbered or lettered list items ("1. load x", "2) clean it", "(b) train"): the
        marker opens a line or follows a clause break, and says nothing of its own."""
        toks = self.tokens
        seen = False
        last: str | None = None         # the previous marker: "1) load x 2) clean it" counts on
        for k, tok in enumerate(toks[:-1]):
            nxt = toks[k + 1]
            short = (tok.kind == "num" and re.fullmatch(r"\d{1,2}", tok.text)) or \
                (tok.kind == "word" and re.fullmatch(r"[a-h]", tok.low) and nxt.text == ")")
            if not short or nxt.text not in (".", ")", ":"):
                continue
            prev = toks[k - 1] if k else None
            after = toks[k + 2] if k + 2 < len(toks) else None
            # ("GPU cap: 2)": a number after a colon that nothing follows is the colon's value, no item)
            opens = prev is None or "\n" in self.raw[prev.end:tok.start] or (
                prev.text in (";", ":") and after is not None and after.kind != "punct") or (
                prev.text == "(" and nxt.text == ")") or (prev.text == "," and seen and after is not None
                                                           and after.kind == "word")
            # "1) load x 2) clean it", "1. Load x. 2. Clean it.": the next number of the list
            # ("2) 70/30 split": a ratio, a number or a file may open the item)
            counts_on = last is not None and after is not None and after.kind != "punct" and (
                nxt.text == ")" or (nxt.text == "." and prev is not None and prev.text in (".", "!", "?"))) and (
                (last.isdigit() and tok.text == str(int(last) + 1)) or (len(last) == 1 and tok.low == chr(ord(last) + 1)))
            if opens or counts_on:
                seen, last = True, tok.low
                tok.used = LIST_MARKER
                if nxt.text != ".":
                    nxt.used = LIST_MARKER
                if prev is not None and prev.text == "(":
                    prev.used = LIST_MARKER

    # -- spans ------------------------------------------------------------------------------
    def covered(self, start: int, end: int) -> list[Token]:
        """Tokens whose masked text overlaps [start, end)."""
        return [self.tokens[i] for s, e, i in self._pos if s < end and e > start]

    def mark(self, toks: Iterable[Token], why: str) -> None:
        for t in toks:
            if not t.used or (self.claim and t.used == self.claim):
                t.used = why

    def relabel(self, toks: Iterable[Token], old: str, new: str = "") -> None:
        """Tokens marked ``old`` become marked ``new`` (``""``: unaccounted again), the others
        stay as they are: a step dropped or re-read gives back or renames its own words."""
        for t in toks:
            if t.used == old:
                t.used = new

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
            inner = toks[1:-1]      # names may sit inside a phrase ("train the legal and medical adapters")
            # ("the duplicated records are first to be removed": a sequence word inside a phrase)
            if free_only and any(t.used and t.used != self.claim and not (t in inner and (t.used.startswith("name:")
                                                                                          or t.used == "sequence"))
                                 for t in toks):
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
    """Token ranges [lo, hi) of sentences (split at . ; ! ? and newlines, never inside
    parentheses: "tune kNN (k = 3, 7; 6 trials; lowest RMSE wins)" is one sentence)."""
    out, lo, depth = [], 0, 0
    for t in text.tokens:
        if t.kind == "punct" and t.text in "()":
            depth = max(0, depth + (1 if t.text == "(" else -1))
        nl = "\n" in text.raw[text.tokens[t.i - 1].end:t.start] if t.i else False
        if nl and t.i > lo:
            out.append((lo, t.i))
            lo, depth = t.i, 0
        if t.kind == "punct" and t.text in ".;!?" and depth == 0:
            t.used = t.used or "punctuation"
            if t.i + 1 > lo:
                out.append((lo, t.i + 1))
            lo = t.i + 1
    if lo < len(text.tokens):
        out.append((lo, len(text.tokens)))
    return [(a, b) for a, b in out if b > a]
