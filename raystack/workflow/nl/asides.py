"""Words that say why or what for, not what to do: a reason or remark inside parentheses
("(retry up to 3 times b/c the share is flaky)", "(approx. an hour in all)"), a note on the data
("(exported this morning)") and a purpose phrase ("for keyword spotting", "to test the pipeline";
the goals a whole sentence states, "predicting which hires come back damaged", are goals.py's).
They change nothing in the plan; they are marked so the accounting does not refuse them, and never
when they name an operation."""

from __future__ import annotations

import re

from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.names import is_step_word
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text, Token, sentences
from raystack.workflow.nl.triggers import SYSTEM_NOUNS
from raystack.workflow.nl.words import in_parentheses, is_free, is_method, is_unknown, names_data

MAX_PURPOSE = 4              # words of a "for ..." purpose
NOT_MODIFIERS = L.CLAUSE_WORDS | {"each", "every", "all", "any", "some", "it", "them", "this", "that", "these", "those", "me", "us",
                                  "you", "i", "we", "both", "one", "of", "the", "a", "an"}
REASON_SUBJECTS = (L.SUBJECT_WORDS - {"each", "every"}) | {"we've", "i've", "it's", "they're", "those"}
COPULAS = {"is", "are", "was", "were", "'re", "'s", "gets", "get", "got", "has", "have", "had"}
NOT_REASONS = L.RESTRICTING | {"please", "should", "must", "need", "want", "wants"}
MAX_REASON = 16              # words of a reason that opens a sentence before ", so"
REASON_GLUE = {"and", "but"}  # "We're a cattery and the booking export isn't ready, so ...": two statements
DOUBT = r"(?:not\s+sure|unsure|no\s+idea|can't\s+tell)\s+(?:whether|which|if)\b"
# "We're not sure how long to pretrain, so run EDiT ... three times — 300, 600 and 900 steps": a
# doubt about a setting the step then tries several values of
DOUBT_HOW = (r"(?:(?:we|i)\s*(?:'re|'m|are|am)\s+)?(?:not\s+sure|unsure|no\s+idea|can't\s+tell)\s+how\s+(?:long|many\s+(?:steps|epochs|rounds))"
             r"\s+to\s+(?:pre-?train|train|run|fine-tune|go)(?:\s+(?:it|for))?$")
DOUBTED = ("model", "compared by a step", "edit_pretrain", "train_model")   # the words of what is compared
MAX_NOTE = 4                 # words of a note in parentheses ("(trampoline parks)")
MAX_STEP_NOTE = 3            # ... after the rows a step keeps ("the last 10k rows (new scanners)")
MAX_CLOSING_NOTE = 7         # ... closing the request, who asks ("(statistics office, annual survey QA)")
ROW_NOUNS = {"rows", "records", "entries", "lines"}
# how a step should run, never a note on the data: "(stratified)", "(distance weighted)", "(bar chart)",
# "(log scale)", "(balanced classes)"
HOW_WORDS = {"stratified", "stratify", "stratifying", "weighted", "weights", "weighting", "balanced", "balance", "balancing",
             "log", "logarithmic", "scale", "bar", "bars", "line", "pie", "histogram", "scatter", "chart", "plot", "shuffled",
             "shuffle", "unshuffled", "sorted", "ordered", "chronological", "chronologically", "grouped", "by", "per",
             "case-insensitive", "case-sensitive", "normalized", "normalised", "scaled", "standardized", "standardised",
             "cumulative", "cumulatively", "running", "rolling", "moving", "smoothed", "descending", "ascending", "reversed",
             "stacked", "percent", "percentage", "percentages", "relative", "replacement", "compression", "compressed",
             "snappy", "gzip", "gzipped", "zstd", "separated", "delimited", "delimiter", "separator", "tab", "tabs", "encoding",
             "utf-8", "header", "headers", "headerless", "urgent", "priority", "append", "appended", "overwrite",
             "overwritten", "partitioned", "indexed", "transposed", "pivoted", "dpi", "resolution"}
REPEATS = {"once", "twice", "thrice", "again", "each", "every", "all", "both", "more", "less", "fewer"}
NOTE_SUBJECTS = {"we", "i", "our", "my", "we're", "i'm"}   # "(we make shop signs)", "(our studio)"
REASON_WORDS = {"because", "b/c", "bc", "since", "cause", "'cause"}
REMARK_VERBS = {"is", "are", "was", "were", "keeps", "tends", "gets", "can", "often", "sometimes"}
REMARK_SUBJECTS = {"the", "our", "my", "their", "they", "it", "we", "this", "that"}
MAX_REMARK = 7
# what a remark in parentheses never says: a setting ("(the target is y)") or a restriction
# ("(the data is only from 2024)"), which a step would have to read
REMARK_NEVER = L.RESTRICTING | {"target", "label", "labels", "column", "columns", "key", "keys", "metric", "rows", "row",
                                "from", "since", "before", "after", "between", "per", "by"}
ESTIMATE_WORDS = {"approx", "approximately", "about", "around", "roughly", "maybe", "probably", "est", "estimated"}


# "that volume drops out sometimes": "drop out" with no object, a connection lost, no rows dropped
DROPS_OUT = {"drop", "drops", "dropped", "dropping"}
NO_OBJECT = {"sometimes", "often", "occasionally", "now", "intermittently", "randomly", "regularly", "constantly",
             "a", "at", "every", "all", "from", "on", "mid-run", "overnight"}


def _drops_out(words: list[Token], k: int) -> bool:
    after = [x.low if x.kind != "punct" else "," for x in words[k + 1:k + 3]]
    return words[k].low in DROPS_OUT and ((after[:1] == ["out"] and (len(after) == 1 or after[1] in NO_OBJECT or after[1] == ","))
                                          or (after[:1] != ["out"] and bool(after) and after[0] in L.DROPPED_WHAT))


SUBJECT_DETERMINERS = {"the", "our", "my", "this", "that", "their", "your"}


def _subject_of_remark(words: list[Token], k: int) -> bool:
    """"because the cluster is spotty": a word that is also an operation, as the subject of a
    remark (the thing remarked on), not the operation asked for."""
    return 0 < k < len(words) - 1 and words[k - 1].low in SUBJECT_DETERMINERS and (
        words[k + 1].low in REMARK_VERBS or words[k + 1].low in ("'s", "s"))


def asks_nothing(words: list[Token]) -> bool:
    """No method the catalog lacks and no operation it has no step for: words that can be context."""
    return not any((is_method(x) or (x.low in L.UNMAPPED_VERBS and not _drops_out(words, k))) and not _subject_of_remark(words, k)
                   for k, x in enumerate(words))


def _idle(words: list[Token], never: set[str]) -> bool:
    """Free words that ask for nothing: no operation, no step's word, no clause word, none saying how
    a step should run, none of ``never``."""
    return all(x.kind == "word" and is_free(x) for x in words) and asks_nothing(words) and not any(
        is_step_word(x.low) or x.low in L.CLAUSE_WORDS or x.low in HOW_WORDS or x.low in never for x in words)


CLAUSE_REASON_WORDS = {"because", "b/c", "bc", "'cause", "cause"}   # never "since" or "as" ("since 2015")
MAX_CLAUSE_REASON = 12


def reason_clauses(t: Text) -> None:
    """"..., with up to 2 retries per run because the spot instances get reclaimed.": why, said after
    what a rule read, to its clause's end; free words that ask for nothing and name no step."""
    for tok in t.tokens[1:]:
        if tok.low not in CLAUSE_REASON_WORDS or tok.used or in_parentheses(t, tok) \
                or not (t.tokens[tok.i - 1].used or t.tokens[tok.i - 1].text == ","):
            continue
        run = []
        for x in t.tokens[tok.i + 1:]:
            if x.kind == "punct" and x.text in ".;!?,":
                break
            run.append(x)
        if run and len(run) <= MAX_CLAUSE_REASON and _idle(run, NOT_REASONS):
            t.mark([tok, *run], "reason")


MAX_RETRY_NOTE = 3    # words of why a step is retried, in parentheses after its retries ("(preemptible nodes)")
RETRY_NOTE_LEAD = r"(?:we\s*(?:'re|are)|it\s*(?:'s|is)|they\s*(?:'re|are)|we\s+run|running)\s+on\b"


def retry_notes(t: Text) -> None:
    """"3 retries (preemptible nodes)", "(3 retries apiece, patchy Wi-Fi)": a few words in
    parentheses, or after a comma inside them, right after the retries say why they are asked for."""
    for tok in t.tokens[1:]:
        if tok.text not in ("(", ",") or t.tokens[tok.i - 1].used != "retries" \
                or (tok.text == "," and not in_parentheses(t, tok)):
            continue
        run = []
        # ("(we're on preemptible nodes)": who is on them, not counted)
        said = t.match_at(RETRY_NOTE_LEAD, tok.i + 1, min(len(t.tokens), tok.i + 5))
        lead = len(said[1]) if said else 0
        for x in t.tokens[tok.i + 1:]:
            if x.text == ")" or len(run) > MAX_RETRY_NOTE + lead:
                break
            run.append(x)
        close = run[-1].i + 1 if run else tok.i + 1
        if run and len(run) <= MAX_RETRY_NOTE + lead and close < len(t.tokens) and t.tokens[close].text == ")" \
                and _idle(run, L.RESTRICTING):
            t.mark(run + ([tok, t.tokens[close]] if tok.text == "(" else [tok]), "reason")


def channels(t: Text, ends: list[tuple[str, int]]) -> None:
    """"ping #risk-ml with 'low'", "post 'done' to #ops": the chat channel a notification is
    sent to, right after the notify's own words (the step logs its message; where the line is
    read is the deployment's, as for "notify the team")."""
    if not any(e == "notify" for e, _ in ends):
        return
    for x in t.unused():
        prev = t.tokens[x.i - 1] if x.i else None
        if x.kind != "word" or prev is None or t.raw[x.start - 1:x.start] != "#":
            continue
        if prev.used == "notify":
            t.mark([x], "recipient")
        elif prev.low in ("to", "in", "on", "into") and not prev.used and x.i >= 2 and t.tokens[x.i - 2].used in ("notify", "message"):
            t.mark([prev, x], "recipient")


# where the data sits that may fail to answer ("on a share that drops out now and then")
FLAKY_PLACES = (r"(?:share|drive|connection|network|link|mount|server|disk|nas|vpn|wifi|bucket|store|feed|sftp|ftp|mirror|uplink"
                r"|computer|machine|box|pc|node|cluster|hardware)")     # ("our computer in the dyehouse is not stable")
FLAKY = (rf"\b(?:(?:on|from|in)\s+)?(?:a|an|the|our|that|this)\s+(?:[a-z-]+\s+)?{FLAKY_PLACES}(?:\s+(?:in|at)\s+the\s+[a-z-]+)?\s*,?\s*(?:that|which|it)?\s*"
         r"(?:(?:drops|drop|cuts|flakes|conks)\s+out|(?:restarts|reboots|crashes|dies)(?=\s+(?:a\s+lot|often|sometimes|now\s+and\s+then))"
         r"|(?:is|are|can\s+be|gets)\s+(?:a\s+bit\s+|quite\s+|very\s+|not\s+)?"
         r"(?:flaky|unreliable|patchy|spotty|unstable|(?<=not\s)(?:stable|reliable)))(?:\s+(?:now\s+and\s+then|sometimes|occasionally|from\s+time\s+to\s+time|"
         r"a\s+lot|often|at\s+times|every\s+so\s+often))?\b")


def flaky_storage(t: Text) -> None:
    """"... on a share that drops out now and then, so give the read two retries", "(the drive
    drops out, so the load gets retried 3 times)": why a step is retried, said of where the
    data sits (a retry of the plan says it; the words alone drop nothing)."""
    if not any(x.used == "retries" for x in t.tokens):
        return
    for _, toks in t.finditer(FLAKY, 0, len(t.tokens)):
        if all(not x.used or x.used == "sequence" for x in toks):    # ("now and then": not a step's "then")
            t.mark(toks, "reason")


def reasons(t: Text) -> None:
    """"(retry up to 3 times b/c the share is flaky)": why the user asks, inside parentheses,
    to their close; it changes nothing in the plan. Words a rule used end it."""
    for tok in t.tokens:
        if tok.low not in REASON_WORDS or tok.used or not in_parentheses(t, tok):
            continue
        run = [tok]
        for x in t.tokens[tok.i + 1:]:
            if x.text == ")" or x.used or x.kind not in ("word", "num"):
                break
            run.append(x)
        if run[-1].i + 1 < len(t.tokens) and t.tokens[run[-1].i + 1].text == ")":
            t.mark(run, "reason")
    for tok in t.tokens:      # "(the bucket mount is flaky, so retry it twice)": a remark, then what a rule read
        if tok.text != "(":
            continue
        run = []
        for x in t.tokens[tok.i + 1:]:
            if x.kind != "word" or x.used or len(run) > MAX_REMARK:
                break
            run.append(x)
        end = run[-1].i + 1 if run else tok.i + 1
        after = t.tokens[end:end + 2]
        # (a remark: a verb of one, or a subject of its own: "(they sit on a flaky SFTP mirror, so ...)")
        if run and (any(x.low in REMARK_VERBS for x in run) or run[0].low in REMARK_SUBJECTS) and len(after) == 2 and after[0].text == "," \
                and after[1].low in ("so", "hence", "thus") and asks_nothing(run):
            t.mark([*run, after[1]], "reason")
    # "(3 retries, the NAS is flaky)", "(approx. an hour in all)": a remark with its own verb after
    # what a rule read, or an estimate, to the close
    for tok in t.tokens:
        opens_estimate = tok.text == "(" and 0 < tok.i < len(t.tokens) - 1 and t.tokens[tok.i - 1].used \
            and t.tokens[tok.i + 1].low in ESTIMATE_WORDS
        # "retrying each read up to 3 times (the club laptop's Wi-Fi is patchy)": a remark right after what a rule read
        # ("Random 20% sample of jobs.csv (the full file's too big)": after a file too)
        opens_remark = tok.text == "(" and 0 < tok.i < len(t.tokens) - 1 and t.tokens[tok.i - 1].used \
            and t.tokens[tok.i + 1].low in ("the", "our", "my", "their", "it", "it's", "those", "these", "they", "this", "that's")
        if not opens_estimate and not opens_remark and (tok.text not in (",", ";") or not in_parentheses(t, tok)
                                                        or not t.tokens[tok.i - 1].used):
            continue
        run = []
        for x in t.tokens[tok.i + 1:]:
            abbreviated = x.text == "." and run and run[-1].low in ESTIMATE_WORDS     # "approx. an hour"
            if x.text == ")" or x.used or (x.kind not in ("word", "num") and not abbreviated and x.text not in POSSESSIVES) \
                    or len(run) > MAX_REMARK + 2:
                break
            run.append(x)
        closes = run and run[-1].i + 1 < len(t.tokens) and t.tokens[run[-1].i + 1].text == ")"
        if closes and (len(run) <= MAX_REMARK or opens_remark) \
                and (any(x.low in REMARK_VERBS or (opens_remark and x.text in POSSESSIVES) for x in run)
                     or run[0].low in ESTIMATE_WORDS) and asks_nothing(run) \
                and not any(is_step_word(x.low) for x in run if x.kind == "word") \
                and not (opens_remark and any(x.low in REMARK_NEVER or x.kind == "num" for x in run)):
            t.mark(run + ([tok, t.tokens[run[-1].i + 1]] if opens_remark else []), "reason")


OPENING_GLUE = {"at", "in", "of", "to", "with", "on", "the", "a", "an", "our", "my", "and", "&", "'s", "’s"}
MAX_OPENING_PURPOSE = 10     # words of a "For our ..." that opens a sentence, to its comma
NOT_IN_OPENING = NOT_MODIFIERS - OPENING_GLUE


def opening_purposes(t: Text) -> None:
    """"For our end-of-season review at the Christmas tree farm, please sample ...", "For our
    garden machinery repair shop's phone assistant, run ...": what the work is for, opening its
    sentence with "for our" / "for my" up to a comma; free words and their glue only, its head
    no plural ("For our premium customers, ..." may pick rows, which no step does)."""
    for lo, hi in sentences(t):
        if hi - lo < 4 or t.tokens[lo].low != "for" or t.tokens[lo + 1].low not in ("our", "my") or t.tokens[lo].used:
            continue
        comma = next((x.i for x in t.tokens[lo + 2:min(hi, lo + 2 + MAX_OPENING_PURPOSE + 1)] if x.text == ","), None)
        if comma is None:
            continue
        words = t.tokens[lo + 2:comma]
        head = next((x for x in reversed(words) if x.low not in OPENING_GLUE), None)
        if head is None or _plural(head) or words[-1].low in OPENING_GLUE:
            continue
        if all(x.kind == "word" and is_free(x) and not is_method(x) and x.low not in L.RESTRICTING
               and x.low not in L.UNMAPPED_VERBS and x.low not in L.CLAUSE_WORDS and x.low not in NOT_IN_OPENING
               for x in words):
            t.mark(t.tokens[lo:comma + 1], "purpose")


def purposes(t: Text) -> None:
    """"for keyword spotting", "for the recommender", "to test the pipeline", "so we can check
    the pipeline end to end": what the work is for."""
    # ("to check the setup works", "to make sure the pipeline runs": read first, with the verb after the system)
    for _, toks in t.finditer(rf"\bto\s+(?:check|make\s+sure|see|confirm|verify)\s+(?:that\s+)?(?:the\s+|our\s+|my\s+|this\s+)?{SYSTEM_NOUNS}\s+"
                              r"(?:works|runs|is\s+working|is\s+fine)\b", 0, len(t.tokens), free_only=True):
        t.mark(toks, "purpose")
    for _, toks in t.finditer(rf"\b(?:to|so\s+(?:that\s+)?(?:we|i|you)\s+can|let\s*'s|let\s+us)\s+(?:test|try|exercise|check|demo|validate|smoke-test)\s+"
                              rf"(?:out\s+)?(?:the\s+|our\s+|my\s+|this\s+)?{SYSTEM_NOUNS}\b(?:\s+end[\s-]+to[\s-]+end)?"
                              # "synthetic data to try things out", "so we can look at it later", "for later review"
                              r"|\bto\s+(?:try|test)\s+(?:things|stuff|it|this|everything)\s+out\b"
                              r"|\bso\s+(?:that\s+)?(?:we|i)\s+can\s+(?:look\s+at|review|inspect|check)\s+(?:it|them)\s+later\b"
                              r"|\bfor\s+later\s+(?:review|use|inspection|reference)\b"
                              # "Before real bookings exist, ...", "before real ID data arrives": why the data is made up
                              r"|\b(?:before|until)\s+(?:the\s+|any\s+|our\s+)?real\s+(?:[a-z][\w-]*\s+){0,2}?(?:data|bookings|orders|records|rows|"
                              r"numbers|figures|logs|readings|results|files?)\s+(?:exists?|arrives?|comes?\s+in|(?:is|are)\s+(?:ready|available|in))\b",
                              0, len(t.tokens), free_only=True):
        t.mark(toks, "purpose")
    for tok in t.tokens:
        if tok.low != "for" or tok.used:
            continue
        run, j = [], tok.i + 1
        while j < len(t.tokens) and t.tokens[j].low in ("the", "a", "an", "our", "my", "this"):
            j += 1
        # ("for the toy shop's website": a possessive inside it, a filler word before a noun)
        while j < len(t.tokens) and len(run) <= MAX_PURPOSE and (
                is_unknown(t.tokens[j]) or (run and t.tokens[j].low in ("of", "the", "a", "an") and not t.tokens[j].used)
                or (run and t.tokens[j].text in POSSESSIVES and not t.tokens[j].used)
                or (is_free(t.tokens[j]) and t.tokens[j].kind == "word" and t.tokens[j].low not in NOT_MODIFIERS
                    and j + 1 < len(t.tokens) and is_unknown(t.tokens[j + 1]))):
            run.append(t.tokens[j])
            j += 1
        while run and run[-1].low in ("of", "the", "a", "an"):
            run.pop()
            j -= 1
        nxt = t.tokens[j] if j < len(t.tokens) else None
        # ("for the premium customers", "for the big regions": some of the rows, which no step picks, never a purpose)
        if run and _plural(run[-1]) and not any(x.text in POSSESSIVES for x in run) and tok.i \
                and t.tokens[tok.i - 1].used in TABLE_STEP_WORDS \
                and t.tokens[tok.i + 1].low in ("the", "these", "those", "all", "any", "only"):
            continue
        # ("sum amount per month for the north region only": some of the rows, never a purpose)
        if run and nxt is not None and nxt.low in ("only", "alone") and not nxt.used:
            continue
        # ("... per month for the north region", "... for the premium segment": a part of the rows, named
        # after a step on them by the kind of group it is)
        if run and tok.i and t.tokens[tok.i - 1].used in TABLE_STEP_WORDS and run[-1].low in GROUP_KINDS:
            continue
        # the purpose ends where the next clause's glue starts ("For our bike-sharing project I'd like to ...")
        if run and sum(x.text not in POSSESSIVES for x in run) <= MAX_PURPOSE and (nxt is None or nxt.kind == "punct" or nxt.used or nxt.low in L.FILLERS) \
                and not any(x.low in L.UNSUPPORTED or x.low in L.CLAUSE_WORDS or x.low in L.UNMAPPED_VERBS
                            for x in run):
            t.mark([tok, *run], "purpose")


# kinds of group a part of the rows is named by ("the north region", "the premium segment")
GROUP_KINDS = {"region", "store", "site", "branch", "country", "city", "segment", "category", "district", "zone", "state",
               "department", "shop", "warehouse", "depot", "county", "channel", "tier", "cohort", "group"}
# the words of a step on the table's rows, after which "for the premium customers" picks rows
TABLE_STEP_WORDS = {"aggregate", "group key", "measure", "stats", "plot", "plot metric", "sample", "clean_data", "dedup",
                    "impute", "normalize", "columns", "write_table"}


def _plural(x: Token) -> bool:
    return x.low.endswith("s") and not x.low.endswith(("ss", "us", "is")) and len(x.low) > 3


def _closes_request(t: Text, opening: Token) -> bool:
    """The parenthesis opened at ``opening`` ends the request ("... then a report (board game
    cafe)"): a note on the whole of it."""
    close = next((x for x in t.tokens[opening.i + 1:] if x.text == ")"), None)
    return close is not None and all(x.kind == "punct" and x.text in ".!" for x in t.tokens[close.i + 1:])


def notes(t: Text) -> None:
    """"Sample ten percent of sessions.parquet (trampoline parks)", "... (aquarium visitor
    chatbot)": a few words in parentheses right after a file, a base model's name, a sentence or
    ending the request, none of them an
    operation, a method, a number or a clause word, say what the data or the work is about
    (after a step's words they may name its method: "survival analysis (Cox PH)")."""
    for tok in t.tokens:
        prev = t.tokens[tok.i - 1] if tok.i else None
        # ("keep the last 10k rows (new scanners)": after a word a step read, a shorter note)
        if tok.text != "(" or tok.used or prev is None:
            continue
        after_step = prev.low in ROW_NOUNS and prev.used not in ("", "punctuation", "context")
        closing = _closes_request(t, tok)
        if not (prev.kind == "path" or prev.used == "model" or after_step or prev.text in (".", "!") or closing):
            continue
        run = []
        # glue words too in a note that ends the request and says who asks: "(we make shop signs)";
        # "(do it twice)" asks for something
        glue = closing and tok.i + 1 < len(t.tokens) and t.tokens[tok.i + 1].low in NOTE_SUBJECTS
        tag = _aside_tag(t, tok)
        most = MAX_CLOSING_NOTE if closing else MAX_NOTE
        for x in t.tokens[tok.i + 1:tok.i + 2 + most]:
            if x.text in POSSESSIVES and run and not x.used:     # "(chiropractor's front desk bot)"
                run.append(x)
                continue
            if x.text == "," and closing and run and not x.used and x not in tag:   # "(statistics office, annual survey QA)"
                run.append(x)
                continue
            if x.text == "." and closing and run and x.i + 1 < len(t.tokens) and t.tokens[x.i + 1].text == ")":
                run.append(x)       # "(Electoral commission, post-election review.)": its own full stop
                continue
            # ("(new scanners)": a filler word before a noun modifies it)
            # (in a note closing the request, any such word: "(county council, roads team)")
            modifier = is_free(x) and x.kind == "word" and x.low not in NOT_MODIFIERS and x.low not in REPEATS \
                and x.i + 1 < len(t.tokens) and (is_unknown(t.tokens[x.i + 1]) or (closing and run))
            if x in tag or x.text == ")" or not (is_unknown(x) or modifier or (glue and is_free(x) and x.kind == "word")) \
                    or x.low in L.CLAUSE_WORDS or x.low in L.UNMAPPED_VERBS \
                    or x.low in L.RESTRICTING or x.low.endswith("est") or x.low in REPEATS or x.low in HOW_WORDS \
                    or (glue and x.low in NOT_REASONS):     # "(biggest stores)" picks; "(twice)" repeats
                break
            run.append(x)
        close = run[-1].i + 1 + len(tag) if run else None
        words = [x for x in run if x.text not in POSSESSIVES and x.text not in (",", ".")]
        if run and len(words) <= (MAX_STEP_NOTE if after_step and not closing and prev.kind != "path" else most) \
                and close < len(t.tokens) and run[-1].text != "," \
                and t.tokens[close].text == ")" and asks_nothing(run) and any(is_unknown(x) for x in run):
            t.mark(run + tag, "description")


# a note between two files of one list ("load a.csv (exported this morning) and b.csv in parallel")
NOTE_IN_FILE_LIST = r"FILE\d+\s*(\([^()]*\))\s*(?:,|and|&|\+|or|plus)\s+FILE\d+"


def notes_inside_file_lists(t: Text) -> None:
    """A note read in parentheses after a file that another file of the same list follows: the
    list is read up to the note only, so the files after it would lose what the list says of all
    of them (loaded together, each one mapped); refused, naming the note, rather than planned so."""
    for _, toks in t.finditer(NOTE_IN_FILE_LIST, 0, len(t.tokens)):
        opening = next(x for x in toks if x.text == "(")
        closing = next(x for x in toks if x.text == ")")
        note = t.tokens[opening.i:closing.i + 1]
        if len(note) > 2 and all(x.used in ("description", "context") for x in note[1:-1]):
            raise PlanRefused([f"the note {t.span_text(note)!r} stands inside a list of files: put it after the "
                               "list, or in a sentence of its own"])


# "(same columns)", "(they share columns)", "..., with identical columns": files said to hold one
# layout, which is why they may be stacked; a note, never a step
SAME_LAYOUT = (r"(?:same|identical|matching)\s+(?:columns|schema|layout|format|headers|fields)(?:\s+in\s+(?:both|each|all(?:\s+of\s+them)?))?")
SAME_LAYOUT_NOTES = (rf"\(\s*(?:(?:they|both|all)\s+(?:share|have)\s+(?:the\s+)?(?:{SAME_LAYOUT}|columns|a\s+schema)|(?:the\s+)?{SAME_LAYOUT})"
                     r"(?:\s*,\s*one\s+[a-z]+\s+(?:each|apiece))?\s*\)"      # "(identical columns, one year each)"
                     rf"|(?<=FILE\d\s,\s)(?:(?:with|having|sharing)\s+)?(?:the\s+)?{SAME_LAYOUT}\b"
                     rf"|(?<=FILE\d\d\s,\s)(?:(?:with|having|sharing)\s+)?(?:the\s+)?{SAME_LAYOUT}\b")


# "(means, spreads, that sort of thing)": a list left open; what it lists is read as the rest
ETCETERA = r"\b(?:that|this)\s+(?:sort|kind)\s+of\s+(?:thing|stuff)\b|\band\s+so\s+on\b|\betc\b\.?|\band\s+the\s+like\b"


# "orders.csv (exported this morning)", "x.parquet (pulled from the CRM last night)": where and
# when a file came from, in parentheses right after it; a note, never a step (no number, and no
# word that restricts the rows: "(exported, only the 2024 rows)" is no note)
PROVENANCE_VERBS = (r"(?:exported|pulled|downloaded|dumped|extracted|updated|refreshed|collected|received|uploaded|scraped|"
                    r"synced|copied|shared|compiled|delivered|generated|produced|sent\s+over|handed\s+over)")
PROVENANCE = (rf"\(\s*(?:(?:freshly|just|newly|recently)\s+)?{PROVENANCE_VERBS}"
              r"(?:\s+(?:from|by|at|on|in|off|via|over|out\s+of|this|last|yesterday|today|overnight|nightly|weekly|daily)\b"
              r"(?:\s+[a-z][\w'-]*){0,4})?\s*\)")
PROVENANCE_NEVER = L.RESTRICTING - {"last", "latest", "recent", "current"}


def plain_notes(t: Text) -> None:
    """Words that only describe, wherever they stand: that the files share their columns, and a
    list left open (marked, never a step); where a file came from, right after it."""
    for _, toks in t.finditer(f"{SAME_LAYOUT_NOTES}|{ETCETERA}", 0, len(t.tokens), free_only=True):
        t.mark(toks, "description")
    for _, toks in t.finditer(PROVENANCE, 0, len(t.tokens), free_only=True):
        if toks[0].i and t.tokens[toks[0].i - 1].kind == "path" and not any(x.low in PROVENANCE_NEVER for x in toks):
            t.mark(toks, "description")


# what an outer join is for: "..., so nothing from either file is lost", "so every costume shows up
# even if nobody ever hired it", "(keep all stock, hired or not)", "(keeping both sides)"
JOIN_REASONS = (r"(?:,\s*)?\bso\s+(?:that\s+)?(?:nothing|every|all|each|no)\b[^.;,?!]*"
                r"|\(\s*(?:keep|keeping|keeps)\s+(?:all|every|both|each)\b[^)]*\)"
                # "so routes without runs and runs without a known route both stay": the rows an outer join keeps
                r"|(?:,\s*)?\bso\s+(?:that\s+)?(?:the\s+)?[a-z-]+s\s+(?:without|with\s+no|lacking)\b[^.;?!]*?"
                r"\b(?:both\s+|all\s+)?(?:stay|remain|survive|appear|show\s+up|are\s+kept|are\s+retained)\b(?:\s+(?:in|too|as\s+well))?")
OUTER_JOIN_WORD = r"\b(?:outer|left|right|full)\b"    # a word of an outer join's kind ("Right-join", "full outer")
MAX_JOIN_REASON = 14


def join_reasons(t: Text, ends: list[tuple[str, int]]) -> None:
    """Why an outer join keeps the rows it keeps, said after it: free words that ask for nothing."""
    if not any(e == "join" for e, _ in ends):
        return
    for lo, hi in sentences(t):
        if not any(x.used in ("join", "join kind") for x in t.tokens[lo:hi]):
            continue
        outer = any(x.used and re.search(OUTER_JOIN_WORD, x.low) for x in t.tokens[lo:hi])
        for _, toks in t.finditer(JOIN_REASONS, lo, hi, free_only=True):
            words = [x for x in toks if x.kind == "word"]
            if any(x.low in ("without", "lacking") for x in words) and not outer:
                continue    # ("so rows without a match stay" beside an inner join: the words contradict it)
            # (never a step's own word: "so all the rows get deduplicated" asks for a dedup)
            if len(words) <= MAX_JOIN_REASON and asks_nothing(words) and all(x.kind in ("word", "punct") for x in toks) \
                    and not any(is_step_word(x.low) for x in words):
                t.mark(toks, "reason")


ASIDE_TAGS = {"btw", "fyi"}
POSSESSIVES = ("'s", "’s")


def _aside_tag(t: Text, opening: Token) -> list[Token]:
    """", btw" closing the note opened at ``opening`` ("(we fit kitchens, btw)")."""
    close = next((x for x in t.tokens[opening.i + 1:] if x.text == ")"), None)
    if close is None or close.i < opening.i + 3 or t.tokens[close.i - 1].low not in ASIDE_TAGS:
        return []
    return t.tokens[close.i - 2:close.i] if t.tokens[close.i - 2].text == "," else t.tokens[close.i - 1:close.i]


KEEP_THOSE = (r"(?:,\s*)?(?:so\s+|and\s+)?(?:(?:keep|use|take|stick\s+to|limit\s+(?:it|them|the\s+data)\s+to|work\s+with)\s+)?"
              r"(?:just\s+|only\s+)?(?:those|them|these)(?:\s+(?:rows|ones))?\b")
MAX_KEPT_WHY = 16     # words of why the rows kept are kept


def kept_rows(t: Text) -> None:
    """"..., but only the most recent 100,000 events come from the new inventory system. Keep just
    those", "only the first 5,000 orders in x.csv were checked by hand, so stick to those": the rows a
    sample keeps (read by its rule), why, and "keep those", in its sentence or the next; the why
    free words that ask for nothing, or the request stays refused."""
    counted = [x for x in t.tokens if x.used == "rows" and x.kind == "num"]
    ends = [hi for _, hi in sentences(t)] if counted else []
    for num in counted:
        start = num.i + 2     # past the number and its noun ("100,000 events")
        after = [hi for hi in ends if hi > num.i][:2]     # its sentence's end, and the next one's
        end = after[-1] if after else len(t.tokens)
        for _, toks in t.finditer(KEEP_THOSE, start, end, free_only=True):
            run = [x for x in t.tokens[start:toks[0].i] if not (x.kind == "path" and x.used == "path")]
            words = [x for x in run if x.kind == "word"]
            if len(words) <= MAX_KEPT_WHY and all(is_free(x) or x.kind == "punct" and x.text in ".," for x in run) \
                    and asks_nothing(words) and not any(is_step_word(x.low) or x.low in L.CLAUSE_WORDS for x in words):
                t.mark([x for x in run if is_free(x)], "reason")
                t.mark(toks, "sample")
            break


def _stated_not(t: Text, x: Token) -> bool:
    """"the export is not ready", "the data has not arrived": a state denied, as "isn't" says it, no restriction."""
    return x.low == "not" and x.i > 0 and t.tokens[x.i - 1].low in COPULAS


def leading_reasons(t: Text) -> None:
    """"We're still waiting on the donor data, so generate 2,000 synthetic rows", "Session logs
    are huge, so work on a sample": a clause that opens its sentence and says why, before ", so"
    and the request; none of its words an operation, a method, a number or a step's."""
    for lo, hi in sentences(t):
        so = next((x for x in t.tokens[lo + 1:hi] if x.low == "so" and t.tokens[x.i - 1].text == ","), None)
        if so is None or so.used:
            continue
        run = t.tokens[lo:so.i - 1]
        # a statement: it opens with its subject ("We're ...") or says what something is ("logs are huge");
        # "Keep only the 2023 rows, so ..." asks for something no step does
        # ("The lens order export sits on a share that times out a lot, so ...": the export is the data)
        states = run and (run[0].low in REASON_SUBJECTS or any(x.low in COPULAS for x in run[1:]))
        if states and 2 <= len(run) <= MAX_REASON and all(x.kind == "word" and is_free(x) for x in run) \
                and asks_nothing([x for x in run if not names_data(t, x)]) \
                and not any((x.low in L.CLAUSE_WORDS and x.low not in REASON_GLUE) or (x.low in NOT_REASONS and not _stated_not(t, x))
                            for x in run):
            t.mark([*run, so], "reason")
        free = [x for x in run if is_free(x)]
        if len(run) <= MAX_REASON and re.search(DOUBT_HOW, " ".join(x.low for x in run)) \
                and all(is_free(x) or x.used in DOUBTED for x in run) \
                and any(x.used in ("steps", "epochs") for x in t.tokens[so.i:hi]):
            t.mark([x for x in run if is_free(x) or x.used == "edit_pretrain"] + [so], "reason")
        # "Not sure whether tiny-1m or tiny-20m makes the better base, so pretrain both ...": a doubt
        # between the models a step then compares (its models read by that step)
        if len(run) <= MAX_REASON and re.match(DOUBT, " ".join(x.low for x in run)) \
                and sum(x.used == "model" for x in run) >= 2 and all(is_free(x) or x.used in DOUBTED for x in run) \
                and asks_nothing(free) and not any(x.low in L.RESTRICTING for x in free[2:]):
            t.mark([*free, so], "reason")


# "race_splits.csv is massive so just take a sample", "the file's way too big, so ...": the data's
# size, said right after the file as the reason for what follows ("so")
# ("sessions.jsonl, which is huge, so ...": the file's size said in a clause after it)
TOO_BIG = (r"(?:(?<=FILE\d\s)|(?<=FILE\d\d\s)|(?<=FILE\d\s,\s)|(?<=FILE\d\d\s,\s))(?:which\s+|that\s+)?(?:is|are|'s)\s+"
           r"(?:(?:way|much|far|really|just|pretty|kind\s+of|simply|very|quite)\s+)?"
           r"(?:too\s+)?(?:big|huge|massive|large|enormous|heavy|giant|gigantic)\b(?=\s*,?\s*so\b)\s*,?\s*so\b")


def size_reasons(t: Text) -> None:
    """The size of a file said as the reason for a step after "so" (the file is the load's)."""
    for _, toks in t.finditer(TOO_BIG, 0, len(t.tokens), free_only=True):
        t.mark(toks, "reason")
