"""A notification's words: the message, quoted ("an alert saying 'x'", "with the message 'x'") or
said unquoted after an opener ("send a message saying tray model needs work") or before "as a
message" ("send no-show model under target as a message"), and who it goes to ("to the
committee"), which is the channel's business and no parameter."""

from __future__ import annotations

from raystack.workflow.nl.extract import Found, _search, consume
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text, Token

# who a message goes to ("send 'ready' to the committee"): the channel's business, no parameter
RECIPIENTS = (r"\bto\s+(?:the\s+|our\s+|my\s+|all\s+(?:the\s+)?)?(?:[a-z-]+\s+)?(?:committee|board|managers?|staff|owners?|boss|"
              r"channel|club|members|volunteers|parents|coaches|crew|office|desk|team|teams|organi[sz]ers|trustees|partners|everyone|everybody)\b")


def notify(text: Text, lo: int, hi: int, f: Found) -> None:
    consume(text, lo, hi, r"\b(?:(?:a|an|the)\s+)?(?:notification|message|alert|note|e-?mail|ping)\b|\b(?:by|via|over)\s+(?:e-?mail|slack)\b"
                          r"|\bby\s+(?:sending|posting|emailing|messaging)(?=\s+(?:me\s+|us\s+)?QUOTE\d+)", "notify")   # "let me know by sending 'x'"
    consume(text, lo, hi, RECIPIENTS, "recipient")
    # the words that introduce the quoted text ("an alert saying 'x'", "with the message 'x'")
    m = _search(text, lo, hi, r"(?:\b(?:saying|that\s+says|which\s+says|reading|with\s+(?:the\s+)?(?:text|message|words?)|"
                              r"containing|stating)\s+)?(?P<q>QUOTE\d+)", "message")
    if m:
        f.set("message", text.literal(m.group("q")).value())
        return
    said = _unquoted_message(text, lo, hi)
    if not said:
        said = _sent_as_message(text, lo, hi)
        if said:                              # its "as" with "a message", the step's words
            text.mark(text.tokens[said[-1].i + 1:said[-1].i + 2], "notify")
    if not said:
        said = _sent_status(text, lo, hi)
    if said:
        text.mark(said, "message")
        f.set("message", " ".join(x.text for x in said[1:]))
        return
    # "compute the row count and email it to me": a figure a step computes, sent as the message (a
    # notification sends the text it is given; it sent its default text, silently)
    sent = next(text.finditer(r"\b(?:e-?mail|send|text|message|ping|post|slack)\s+(?P<o>it|them|the\s+(?:results?|counts?|numbers?|figures?|totals?"
                              r"|stats|statistics|scores?|metrics?|row\s+count))\s+(?:to|over\s+to)\s+(?:me|us|the\s+team)\b", lo, hi), None)
    if sent is not None:
        raise PlanRefused([f"{text.span_text(sent[1])!r}: a notification sends the text it is given, not a result a step "
                           "computes; save a report (or write the table) instead, and notify with a text"])


MESSAGE_OPENERS = ("saying", "says", "reading", "stating")


def _unquoted_message(text: Text, lo: int, hi: int) -> list[Token]:
    """"send a message saying tray model needs work, ...": the words a speaker says the message
    says, unquoted, to the clause's end (a comma or a full stop); none when a step's or a
    condition's word is among them. The opener first, then the words."""
    opener = next((x for x in text.tokens[lo:hi] if x.low in MESSAGE_OPENERS and not x.used), None)
    if opener is None:
        return []
    words = []
    for x in text.tokens[opener.i + 1:]:
        if x.kind == "punct" or x.used:
            break
        words.append(x)
    if not words or any(y.kind not in ("word", "num") for y in words):
        return []
    end = opener.i + 1 + len(words)
    if end < len(text.tokens) and text.tokens[end].used and text.tokens[end].kind != "punct":
        return []       # (the words run into a step's or a condition's: where the message ends is a guess)
    return [opener, *words]


SEND_VERBS = ("send", "post", "text")
SENT_AS = ("message", "note", "notification", "alert", "text", "ping")
# words that open an object, not the words of a message: "send the report as an email"
OBJECT_OPENERS = ("the", "a", "an", "it", "them", "this", "that", "these", "those", "my", "our", "its", "their",
                  "me", "us", "him", "her", "everyone", "someone", "results", "everything")


def _sent_as_message(text: Text, lo: int, hi: int) -> list[Token]:
    """"send no-show model under target as a message": the unquoted words between the verb and
    "as a message" (a note, an alert), all of them free words; none when they open with an
    object ("send the report as an email" sends a thing, not those words). The verb first, then
    the words."""
    toks = text.tokens
    for x in toks[max(0, lo - 2):hi]:     # the step's word is "message", after its "as a"
        if x.low != "as" or x.used:
            continue
        k = x.i + 1 + (x.i + 1 < len(toks) and toks[x.i + 1].low in ("a", "an"))
        if k >= len(toks) or toks[k].low not in SENT_AS:
            continue
        words: list[Token] = []
        for y in reversed(toks[:x.i]):      # back to the verb, before the step's span
            if y.used or y.kind not in ("word", "num"):
                return []
            if y.low in SEND_VERBS:
                if not words or words[0].low in OBJECT_OPENERS or len(words) > 10:
                    return []
                return [y, *words]
            words.insert(0, y)
        return []
    return []


# the words a status line holds: how a run went ("failed", "ready", "exported") or where a figure
# stands ("below bar", "under target")
STATUS_WORDS = {"ready", "done", "failed", "fail", "fails", "exported", "live", "finished", "complete", "completed",
                "in", "below", "under", "above", "over", "good", "enough", "ok", "okay", "deployed", "served", "saved",
                "written", "trained", "crashed", "succeeded", "passed", "missed", "broken", "broke", "errored",
                "success", "successful", "up"}
# words that say where or how a thing is sent: "send predictions to the warehouse" sends a thing
NOT_IN_STATUS = {"to", "into", "onto", "via", "by", "from", "with", "through", "as", "and", "then", "if", "when", "once",
                 "after", "before", "every", "each"}


def _sent_status(text: Text, lo: int, hi: int) -> list[Token]:
    """"send tow model run failed", "send duty free totals ready": a status line said right after
    "send", unquoted, to the clause's end (a recipient consumed before it may close it), two to
    eight free words, one of them saying how the run went or where a figure stands; none when
    they name where or how a thing is sent ("send predictions to the warehouse"). The verb
    first, then the words."""
    verb = next((x for x in text.tokens[lo:hi] if x.low == "send" and x.used == "notify"), None)
    if verb is None:
        return []
    words: list[Token] = []
    for x in text.tokens[verb.i + 1:]:
        if x.kind == "punct" or x.used in ("recipient", "notify"):     # (a recipient, the step's own words)
            break
        if x.used or x.kind not in ("word", "num") or x.low in NOT_IN_STATUS:
            return []
        words.append(x)
    if not 2 <= len(words) <= 8 or not any(x.low in STATUS_WORDS for x in words):
        return []
    return [verb, *words]
