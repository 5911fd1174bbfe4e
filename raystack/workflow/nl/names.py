"""Names a request gives to things before any step is read: the adapters of a fine-tuning
("the sql and chat adapters", "adapters (us, uk, in, au)", "adapters for booking and billing", "three LoRA adapters -- icd,
triage, discharge", "the support adapter"). A name list is read as names even when a word in
it is also a verb elsewhere ("the summarize and qa adapters"); its words are then taken.
"""

from __future__ import annotations


from raystack.workflow.nl.text import Text, Token
from raystack.workflow.nl.triggers import COMPILED

# (a clause's function words are never names: "check how the adapters do, and if ..." named "do" and "if")
NAME = (r"(?!(?:the|a|an|and|or|lora|dora|new|our|my|their|its|them|it|these|those|both|all|each|rank|base"
        r"|if|when|do|does|did|is|are|was|were|be|been|then|so|but|how|what|which|that|this|once|after|before|until"
        r"|unless|whether|not|than|else|otherwise|also|just|please)\b)[a-z][a-z0-9_]*(?:-[a-z0-9_]+)*")
LIST = rf"{NAME}(?:\s*,\s*{NAME})*\s*,?\s*(?:and|&|\+)\s+{NAME}|{NAME}(?:\s*,\s*{NAME})+|{NAME}(?:\s*/\s*{NAME})+"   # "benefits / housing / debt"
KINDS = r"(?:(?:lora|dora)\s+)?"
PATTERNS = [
    (rf"\bthe\s+(?P<l>{LIST})\s+{KINDS}adapters\b", False),
    # ("Adapters (mLoRA): vat, payroll, self-assessment": the method named in parentheses first)
    (rf"\badapters\s*(?:\(\s*(?:mlora|lora|dora|peft)\s*\)\s*)?(?:\(|—|–|-|:|,|called|named|for)?\s*(?P<l>{LIST})\s*(?:\)|—|–)?", True),
    (rf"\bthe\s+(?P<l>{NAME})\s+{KINDS}adapter\b(?!s)", False),
    (rf"\b{KINDS}adapter\s+(?:called|named)\s+(?P<l>{NAME})\b", False),   # "an adapter named qa"
    (rf"\b(?:fine-?tune|finetune|train)\s+(?P<l>{LIST})\s+{KINDS}adapters\b", True),   # "fine-tune timetable and refunds adapters"
    # "train two adapters on it, booking and exercises, using mLoRA": the names set off by commas
    # (or a note in parentheses after them: "..., bookings and access (if that fails, try again twice)")
    (rf"\badapters\s+(?:on|over|from)\s+(?:it|them|that|this|(?:the|that|this)\s+base)\s*(?:,|—|–)\s*(?P<l>{LIST})\s*(?=,|—|–|\()", True),
]
# what may follow a list of names that holds a step's word ("adapters recap + search via mLoRA"):
# a preposition, never the list's object ("adapters, evaluate and serve them") nor a clause break
# ("adapters a and b, evaluate and serve.")
AFTER_NAMES = {"via", "with", "using", "on", "over", "through", "from"}
NAMED_BY = "name:adapter"


def is_step_word(word: str) -> bool:
    """Whether the word alone is a phrase some catalog step's trigger reads."""
    return any(rx.fullmatch(word) for _, rx in COMPILED)


def adapter_names(t: Text) -> list[Token]:
    """The adapter names the request gives, in order; their tokens are marked as names."""
    names: list[Token] = []
    for pat, check_verbs in PATTERNS:
        for m, toks in t.finditer(pat, 0, None, free_only=True):
            span = t.covered(*m.span("l"))
            words = [x for x in span if x.kind == "word" and x.low not in ("and",)]
            end = span[-1].i + 1 if span else len(t.tokens)
            closed = end >= len(t.tokens) or t.tokens[end].low in AFTER_NAMES
            if check_verbs and any(is_step_word(x.low) for x in words) and not closed:
                continue  # "adapters, evaluate and serve them": steps, not names
            if any(x.kind != "word" and x.text not in (",", "&", "+", "/") for x in span):
                continue
            t.mark(span, NAMED_BY)
            t.mark([x for x in t.covered(*m.span()) if x.low in ("called", "named", "for") and not x.used], "names")
            names += [x for x in words if x not in names]
    return sorted(names, key=lambda x: x.i)


def is_name(tok: Token) -> bool:
    return tok.used.startswith("name:")
