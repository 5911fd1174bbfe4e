"""A value corrected as it is said, the way a dictated or typed-on-the-fly request does: "k of five,
no actually three", "batch size 32 or 64, no, sorry, 32 or 128", "write it to out/a.csv, no
sorry, out/b.csv", "under sixteen gigs, no wait, make that twenty-four gigs", "k of 3, 5, 7 or 9,
sorry, not 9, 11". The request is read with the value said last; what it replaced is dropped with
the words that corrected it. Only a value replaced by a value of the same kind (numbers or lists
of them, a share, a path) is a correction; anything else after "no" stays for the rules to read
or refuse ("no, wait, one after another is fine" is not rewritten).
"""

from __future__ import annotations

import re

from raystack.workflow.nl.text import NUMBER_WORDS

_WORD = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
# one number, digits or words ("twenty-four", "point seven"), with a unit or "percent" after it
_NUM = (rf"(?:\d+(?:[.,]\d+)*|(?:{_WORD})(?:[\s-](?:{_WORD}))*|point\s+(?:{_WORD})(?:\s+(?:{_WORD}))*)"
        r"(?:\s*(?:%|percent|per\s+cent|k|m|gb|gigs?|gigabytes|workers?|gpus?|epochs?|trials?|steps?|rows|neighbou?rs))?")
_SHARE = r"(?:a\s+(?:quarter|third|fifth|tenth)|half)"
_VALUE = rf"(?:{_NUM}|{_SHARE})"
_LIST = rf"{_VALUE}(?:\s*(?:,|/)\s*{_VALUE})*(?:\s*,?\s*(?:or|and)\s+{_VALUE})?"
_PATH = r"(?:\.{0,2}/)?[\w.-]+(?:/[\w.-]+)*\.[A-Za-z]\w*|(?:\.{0,2}/)?[\w.-]+(?:/[\w.-]+)+"
# what says the value just said is wrong: "no actually", "no, sorry,", "no wait, make that", "actually no,"
_MARK = (r"\s*,\s*(?:actually\s*,?\s*)?(?:no|nope|oops|sorry|wait)\b(?:\s*,?\s*(?:no|sorry|wait|actually|i\s+mean|rather|my\s+bad|scratch\s+that))*"
         r"\s*,?\s*(?:make\s+(?:that|it)\s+|i\s+mean\s+|it\s*'s\s+)?")
_REPLACED = re.compile(rf"(?<![\w./-])(?P<old>{_LIST})(?:\s+of\s+(?:memory|ram|the\s+data|it|them))?{_MARK}(?P<new>{_LIST})(?![\w/-])"
                       rf"|(?<![\w./-])(?P<oldp>{_PATH}){_MARK}(?P<newp>{_PATH})(?![\w/-])", re.I)
# "k of 3, 5, 7 or 9, sorry, not 9, 11": one value of the list said before replaced
_NOT_THAT = re.compile(rf"\s*,\s*(?:no|sorry|oops)\b\s*,?\s*not\s+(?P<old>{_VALUE})\s*,\s*(?:but\s+)?(?P<new>{_VALUE})(?![\w/-])", re.I)
_LOOKBACK = 80    # how far before "sorry, not 9" the value it replaces is looked for


def corrected(text: str) -> str:
    """``text`` with each value corrected as it was said replaced by its correction."""
    out = _REPLACED.sub(lambda m: m.group("new") or m.group("newp"), text)
    while True:
        m = _NOT_THAT.search(out)
        if m is None:
            return out
        before = out[max(0, m.start() - _LOOKBACK):m.start()]
        said = list(re.finditer(rf"(?<![\w.-]){re.escape(m.group('old'))}(?![\w-])", before, re.I))
        if not said:
            return out
        at = m.start() - len(before) + said[-1].start()
        out = out[:at] + m.group("new") + out[at + len(said[-1].group(0)):m.start()] + out[m.end():]
