"""Courtesies around a request, taken off before it is read: a greeting or a ticket's label
opening it ("Hi!", "Hello team,", "Task:"), and what closes a message and asks for nothing (a bare
thanks, a sign-off and its name, "Let me know if you need anything else."). What opens or closes
the request itself (a title, who writes, an aside in parentheses) is then read as it would be
without them. A courtesy inside the request is marked where it stands (scene.courtesies), its
whole-sentence wordings here too (COURTESY_SENTENCE)."""

from __future__ import annotations

import re

# "Hi!", "Hello team,", "Hey all -", "Good morning!" opening the request. A greeting before who
# writes ("Hi, this is dispatch at ...", "Hey, finance team from the north office.") stays:
# scene.greeted_introductions reads the two together.
GREETING_OPENING = re.compile(
    r"^\s*(?:hi|hello|hey|hiya|good\s+(?:morning|afternoon|evening)|greetings)"
    r"(?:\s+(?:there|all|team|folks|everyone|everybody|guys|y'all|both|you\s+two))?"
    # a sentence of its own ("Hi!"), or before the words that ask ("Hi team, could you ...", "Hey all — we need ...")
    r"(?:\s*[!.:]+\s+|\s*(?:,|\s[-–—]+)\s*(?=(?:could|can|would|will|please|we|i|our|my|just|quick|so)\b(?!\s*'s)))", re.I)
# "right, next one, take orders.parquet ...": what a dictated request opens with before it asks
DISCOURSE_OPENING = re.compile(r"^\s*(?:(?:right|alright|all\s+right|okay|ok|so|now|next\s+one|and\s+next)\s*[,.:!]+\s*)+"
                               r"(?=[a-z])", re.I)
# "Thanks!", "Thank you in advance." closing the request
THANKS_CLOSING = re.compile(
    # after the request's last full stop, or capitalised after its last word ("... → report Thanks!")
    r"(?:(?<=[.!?)\]\n])\s*(?:many\s+)?(?:thanks|thank\s+you|thx|cheers)|(?<=\w)\s+(?-i:Many\s+thanks|Thanks|Thank\s+you|Cheers))"
    r"(?:\s+(?:so\s+much|a\s+lot|a\s+bunch|very\s+much|in\s+advance|again))?\s*[!.]*\s*$", re.I)


# "Task: ...", "Request: ...": a ticket's label before the request, no title of its own
REQUEST_LABEL = re.compile(r"^\s*(?:task|request|ask|todo|to-do)\s*:\s+", re.I)


# sentences that close a message and ask for nothing: "Let me know if you need anything else.",
# "Any questions, ping me." (no notification step), "Hope that makes sense.", "No rush on this."
CLOSING_SENTENCE = re.compile(
    r"(?:(?<=[.!?)\]\n])|^)\s*(?:"
    r"let\s+me\s+know\s+if\s+(?:you\s+need\s+anything(?:\s+else)?|you\s+have\s+(?:any\s+)?questions|anything\s+is\s+unclear"
    r"|(?:that|this)(?:\s*'s|\s+is)\s+(?:possible|doable|ok|okay)|(?:that|this)\s+(?:works|makes\s+sense)|you\s+need\s+more\s+(?:info|information|details))"
    r"|happy\s+to\s+(?:clarify|explain|help|answer\s+(?:any\s+)?questions)(?:\s+(?:anything|further|more))?"
    r"|shout\s+if\s+(?:anything\s+is\s+unclear|you\s+need\s+anything|you\s+have\s+(?:any\s+)?questions)"
    r"|no\s+rush(?:\s+on\s+(?:this|it))?|(?:much|really|greatly)\s+appreciated|(?:i\s+|we\s+)?(?:really\s+)?appreciate\s+(?:it|this|the\s+help)"
    r"|(?:i\s+)?hope\s+(?:that|this)\s+makes\s+sense|any\s+questions\s*,?\s*(?:just\s+)?(?:ping|message|email|ask)\s+(?:me|us)"
    r"|that(?:\s*'s|\s+is)\s+all(?:\s+for\s+now)?|thanks\s+(?:so\s+much\s+|a\s+lot\s+|again\s+)?for\s+(?:the|your)\s+help)"
    # who signs it ("Much appreciated, the ops team")
    r"(?:\s*,\s*(?:the\s+)?[a-z][\w-]*\s+team)?\s*[.!]*\s*$", re.I)
# a sign-off and the name under it ("Best, Priya", "Cheers,\nSam", "Kind regards, Ana Ruiz")
SIGN_OFF_NAME = re.compile(
    r"(?<=[.!?)\]\n])\s*(?i:best|cheers|regards|kind\s+regards|best\s+regards|best\s+wishes|many\s+thanks|thanks|ta)\s*,?\s*"
    r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?\s*$")


# "I would be grateful if you could train ...", "It would be great if you could ...": a polite
# frame around the request, opening a sentence; the request is what follows it
POLITE_FRAME = re.compile(
    r"(?:(?<=[.!?]\s)|(?<=[.!?]\n)|^)\s*(?:(?:i|we)\s*(?:would|'d)\s+be\s+(?:very\s+|most\s+|really\s+|so\s+)?grateful"
    r"|(?:i|we)\s*(?:would|'d)\s+(?:really\s+|greatly\s+)?appreciate\s+it|it\s*(?:would|'d)\s+be\s+(?:great|helpful|lovely|nice|wonderful))"
    r"\s+if\s+you\s+(?:could|would|can)\s+", re.I)


def trim_courtesies(text: str) -> str:
    """The request without a greeting, a spoken opener ("right, next one,") or a label opening it, a polite frame opening a sentence, or
    what closes a message and asks for nothing: a bare thanks, a sign-off with a name, a courtesy
    sentence (see GREETING_OPENING, REQUEST_LABEL, POLITE_FRAME, THANKS_CLOSING, SIGN_OFF_NAME,
    CLOSING_SENTENCE)."""
    trimmed = REQUEST_LABEL.sub("", GREETING_OPENING.sub("", DISCOURSE_OPENING.sub("", text, count=1), count=1), count=1)
    trimmed = POLITE_FRAME.sub("", trimmed)
    for _ in range(3):      # "... Hope that makes sense. Thanks!\nBest, Priya"
        before = trimmed
        for rx in (SIGN_OFF_NAME, THANKS_CLOSING, CLOSING_SENTENCE):
            trimmed = rx.sub("", trimmed, count=1)
        if trimmed == before:
            break
    return trimmed if trimmed.strip() else text


# a sentence that only excuses or places the request: "Sorry if this is basic.", "New to raystack, so
# bear with me.", "Following up on yesterday's chat."
COURTESY_SENTENCE = re.compile(
    r"(?:sorry\s+if\s+this\s+is\s+(?:basic|obvious|a\s+(?:silly|dumb|basic|newbie|beginner)\s+question)"
    r"|(?:(?:i\s*'m|i\s+am|we\s*'re|we\s+are)\s+)?(?:quite\s+|very\s+|fairly\s+)?new\s+to\s+(?:this|raystack|ray|workflows?|ml|python|all\s+this)"
    r"(?:\s*,?\s*so\s+(?:please\s+)?bear\s+with\s+(?:me|us))?"
    r"|(?:please\s+)?bear\s+with\s+(?:me|us)"
    r"|following\s+up\s+on\s+(?:yesterday\s*'s|today\s*'s|last\s+week\s*'s|our|the|my)\s+(?:chat|call|meeting|conversation|discussion|email|thread|message))"
    r"\s*[.!]?")
