"""What the work is for, said beside the steps that do it: what a model predicts ("trying to predict
which alteration jobs come back"), what an analysis is to make clear ("want to understand
returns"), the table wanted ("build me a table of ..."), a question the steps answer. Words read
here ask for no step of their own; each rule checks that a step of the plan serves the goal."""

from __future__ import annotations

import re

from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.asides import HOW_WORDS, asks_nothing
from raystack.workflow.nl.text import Text, sentences
from raystack.workflow.nl.words import MAX_LEAD_IN, is_free, is_method

# the verbs of wanting before the goal's "to" ("we're trying to", "our school wants to")
WANTING = r"(?:trying|want|wants|need|needs|like|hope|hoping|aim|aiming|looking)"

SOURCE_WORDS = ("load_data", "path")   # "... from queues.csv:": the load's words inside a goal

# "Tailoring shop, trying to predict which alteration jobs come back.", "Paintball arena, predicting
# what a group spends on extra paint.", "we'd like to predict kg donated per drop-off.": what the
# model is for, said to the end of its sentence
PREDICT_PURPOSE = (r"(?:\b(?:(?:we|i)\s*(?:'re|'m|are|am|'d|would)?\s+)?(?:we'd\s+|i'd\s+)?(?:would\s+|'d\s+)?"
                   rf"(?:eventually\s+|ultimately\s+|also\s+|really\s+)?(?:{WANTING}|try|here)\s+to\s+"
                   r"|\bcan\s+(?:we|i|you)\s+|(?<=,\s)|(?<=:\s)|(?<=\.\s)|^)"
                   r"(?:predict|predicting|forecast|forecasting|estimate|estimating"
                   # "we want to know which quotes turn into jobs": a question the model answers
                   r"|(?:know|find\s+out|figure\s+out|work\s+out|understand|learn|see|spot|identify|flag|tell)(?=\s+(?:which|what|whether|how|who|when|if)\b))\b")
# "We sell garden furniture and want to understand returns.", "Our school wants to get a better
# handle on attendance.": what the analysis is for, to the end of its sentence, beside steps that
# analyse (statistics, totals, a chart, a report) or train
UNDERSTAND_GOAL = (r"(?:\b(?:and\s+)?(?:(?:we|i)\s*(?:'re|'m|are|am|'d|would)?\s+|(?:our|the|my)\s+[a-z][\w-]*(?:\s+[a-z][\w-]*)?\s+)?"
                   rf"(?:really\s+|also\s+)?{WANTING}\s+"
                   r"(?:to\s+(?:understand|make\s+sense\s+of|get\s+(?:a\s+)?(?:better\s+)?(?:handle|feel|grip)\s+(?:on|for)|"
                   r"look\s+into|dig\s+into|explore|get\s+insight\s+into|automate|streamline)"
                   # "Our CFO wants a clearer picture of costs."
                   r"|(?:a\s+)?(?:clearer|better|fuller|clear)\s+(?:picture|view|understanding|sense)\s+of))\b")
ANALYSING_STEPS = {"stats", "aggregate", "plot", "save_report", "train_model", "tune"}
MAX_UNDERSTOOD = 8   # words of what is to be understood


def understanding_goals(t: Text, ends: list[tuple[str, int]]) -> None:
    """What the analysis is for (UNDERSTAND_GOAL), when the plan analyses: free words to the
    sentence's end, no number, restriction, method or step word."""
    if not any(e in ANALYSING_STEPS for e, _ in ends):
        return
    for lo, hi in sentences(t):
        for _, toks in t.finditer(UNDERSTAND_GOAL, lo, hi, free_only=True):
            rest = [x for x in t.tokens[toks[-1].i + 1:hi] if not (x.kind == "punct" and x.text in ".!")]
            words = [x for x in rest if x.kind == "word"]
            if not words or len(words) > MAX_UNDERSTOOD or any(
                    not is_free(x) or x.kind != "word" or x.low in L.RESTRICTING or x.low in L.UNMAPPED_VERBS or is_method(x)
                    or x.low in L.CLAUSE_WORDS for x in rest):
                continue
            t.mark(toks + rest, "purpose")


WH_OBJECTS = {"which", "what", "whether", "how", "who", "when", "if"}
MAX_PREDICTED = 16   # words of what a model predicts


def predict_purposes(t: Text, ends: list[tuple[str, int]]) -> None:
    """What the model is for, beside a step that trains one, when it is a question ("which hires
    come back damaged", no column) or describes the column a training names as its target
    ("predict kg donated per drop-off" beside "train a linear model on kg"). Only free words to
    the sentence's end (a file in it is the load's); anything else in them asks for something."""
    if not any(e in ("train_model", "tune") for e, _ in ends):
        return
    learned = {x.low for x in t.tokens if x.used == "target"}
    for lo, hi in sentences(t):
        for _, toks in t.finditer(PREDICT_PURPOSE, lo, hi, free_only=True):
            # (a file in parentheses is the load's: "predicting which flavours sell out (flavours.csv).")
            # ("can we predict which players pick up an injury?": a question asks it)
            asked = toks[0].low == "can"
            rest = [x for x in t.tokens[toks[-1].i + 1:hi] if not (x.kind == "punct" and x.text in (".!?" if asked else ".!"))
                    and not (x.text in "()" and any(y.kind == "path" for y in t.tokens[max(0, x.i - 1):x.i + 2]))]
            if asked and t.tokens[hi - 1].text != "?":
                continue
            words = [x for x in rest if x.kind == "word"]
            if not words or len(words) > MAX_PREDICTED or any(
                    not (is_free(x) or x.used in SOURCE_WORDS or x.used == "sequence") or x.low in L.RESTRICTING or x.kind == "num" or
                    x.low in L.UNMAPPED_VERBS or is_method(x) or
                    (x.kind == "punct" and x.text not in ("'s", "-", ",")) for x in rest):
                continue
            # (one word, the column itself: "... and want to predict final_gravity", a context
            # sentence's goal, which context_sentences reads with the sentence)
            # ("Haulage company, predicting diesel use per trip.": what a titled request is for, its
            # training's target named in a step)
            titled = lo == 0 and toks[0].i > 0 and t.tokens[toks[0].i - 1].text == "," and bool(learned)
            # ("we want to know which features matter most" asks what no step answers)
            knows = not re.match(r"(?:predict|forecast|estimat)", toks[-1].low)
            if knows and any(x.low in TABLE_QUESTION_WORDS or x.low in IMPORTANCE_WORDS for x in words):
                continue
            if words[0].low in WH_OBJECTS or (len(words) > 1 and (titled or any(x.low in learned for x in words))):
                t.mark(toks + [x for x in rest if is_free(x) or x.used == "sequence"], "purpose")


# "we want a small LM that has read our lift plans": what a pretraining is for
# ("our phone volunteers want a helper for booking questions": who wants it, said as a noun)
LM_PURPOSE = (r"\b(?:(?:we|i)\s*|and\s+|(?:our|my)\s+(?:[a-z][\w-]*\s+){0,2}(?:staff|team|volunteers|users|customers|members|"
              r"agents|colleagues|nurses|drivers|teachers|students|writers|editors)\s+)"
              r"(?:want|wants|need|needs|would\s+like|'d\s+like|are\s+after|'re\s+after)\s+(?:a|an)\s+"
              r"(?:small\s+|tiny\s+|little\s+|compact\s+)?(?:language\s+model|lm|(?:[a-z][\w-]*\s+){0,2}(?:bot|chatbot|assistant|helper))\b")
# "we want rough minutes-per-house estimates": what a training is for
ESTIMATE_PURPOSE = (r"\b(?:we|i)\s*(?:want|need|would\s+like|'d\s+like|are\s+after|'re\s+after)\s+(?:rough\s+|better\s+|quick\s+|some\s+|good\s+)?"
                    r"(?:[a-z][\w-]*\s+){0,2}?(?:estimates|forecasts|predictions)\b")
# "we want add-on recommendations (child seats, sat-nav, extra insurance)": what a recommender is for
RECOMMEND_PURPOSE = (r"\b(?:we|i)\s*(?:want|need|would\s+like|'d\s+like|are\s+after|'re\s+after)\s+(?:better\s+|some\s+)?"
                     r"(?:(?:[a-z][\w-]*\s+|QUOTE\d+\s+){0,3}?(?:recommendations|suggestions|picks)\b"
                     # "we want to suggest roles that suit each new volunteer"
                     r"|to\s+(?:suggest|recommend)\b)")
# "I want a model that tells our tilers how long a bathroom job will take": what a training is for
MODEL_PURPOSE = (r"\b(?:we|i)\s*(?:want|need|would\s+like|'d\s+like|are\s+after|'re\s+after)\s+(?:a|an|some)\s+"
                 r"(?:simple\s+|quick\s+|small\s+|rough\s+|first\s+|baseline\s+|basic\s+|better\s+|new\s+)?(?:model|classifier|predictor|regressor)\s+"
                 r"(?:(?:that|which)\s+(?:can\s+|will\s+|could\s+)?(?:tells?|predicts?|says?|estimates?|flags?|guesses?|works?\s+out|spots?|warns?)\b"
                 # "we'd like a first model of which customers miss an instalment"
                 r"|(?:of|for)\s+(?:which|whether|who)\b)")
MAX_RECOMMENDED = 8     # words of what is recommended, in parentheses after it


# "Could you build the claims-per-model table?": the table the steps then make, asked for by its name
TABLE_GOAL = (r"(?:^|(?<=[.!?]\s))(?:(?:could|can|would)\s+you\s+(?:please\s+)?|please\s+)?(?:build|make|produce|create|put\s+together)\s+"
              r"(?:me\s+|us\s+)?the\s+(?:[a-z][\w-]*\s+){1,3}table\b(?=\s*[?.:])")
TABLE_MAKERS = ("aggregate", "join", "concat", "write_table")


def table_goals(t: Text, ends: list[tuple[str, int]]) -> None:
    """A sentence that asks for a table by its name, which the request's steps then make (a count,
    a join, a write): the goal, no step of its own."""
    if not any(e in TABLE_MAKERS for e, _ in ends):
        return
    for _, toks in t.finditer(TABLE_GOAL, 0, len(t.tokens), free_only=True):
        t.mark(toks, "purpose")


def wanted_purposes(t: Text, ends: list[tuple[str, int]]) -> None:
    """What an elastic DLRM job (a recommender) or a pretraining (a language model) is for, said
    as what the user wants, to the sentence's end: a few free words, in parentheses or not, none
    an operation."""
    wanted = [(rx, most) for rx, kinds, most in ((RECOMMEND_PURPOSE, ("elastic_dlrm",), MAX_RECOMMENDED),
                                                 (LM_PURPOSE, ("edit_pretrain", "mlora_finetune"), MAX_RECOMMENDED),
                                                 (ESTIMATE_PURPOSE, ("train_model", "tune"), MAX_RECOMMENDED),
                                                 (MODEL_PURPOSE, ("train_model", "tune"), MAX_PREDICTED))
              if any(e in kinds for e, _ in ends)]
    for lo, hi in sentences(t):
        for rx, most in wanted:
            for _, toks in t.finditer(rx, lo, hi, free_only=True):
                rest = [x for x in t.tokens[toks[-1].i + 1:hi] if not (x.kind == "punct" and x.text in ".!")]
                words = [x for x in rest if x.kind == "word"]
                if len(words) <= most and all(((is_free(x) or x.used == "description") and x.kind == "word")
                                              or (not x.used and x.text in "(),") for x in rest) \
                        and asks_nothing(words) and not any(x.low in L.CLAUSE_WORDS - {"and", "or"} or x.low in L.RESTRICTING
                                                            or x.low in HOW_WORDS for x in words):
                    t.mark(toks + rest, "purpose")


IMPORTANCE_WORDS = {"feature", "features", "matter", "matters", "important", "importance", "drives", "drive", "influence",
                    "influences", "correlate", "correlates", "correlated", "predictive", "predictor", "predictors"}


# a question that opens the request says what the model is for; one about the table itself
# ("which columns are numeric?") asks for an answer no training gives
PURPOSE_QUESTION_WORDS = {"which", "what", "who", "whether", "will", "does", "do", "is", "are"}
TABLE_QUESTION_WORDS = {"column", "columns", "row", "rows", "value", "values", "missing", "mean", "average", "many",
                        "much", "numeric", "type", "types", "file", "files", "table", "tables", "count", "total", "sum"}


def question_purposes(t: Text, ends: list[tuple[str, int]]) -> None:
    """"Roofing quotes: which ones do customers accept? Take quotes.csv, ..., train logistic
    regression (target: won)": a question that opens the request (after its title, if any) is
    what the trained model is for, when a training names its target; only free words, none
    about the table itself and none an operation."""
    if not any(e in ("train_model", "tune") for e, _ in ends) or not any(x.used == "target" for x in t.tokens):
        return
    spans = sentences(t)
    if not spans:
        return
    lo, hi = spans[0]
    lead = next((x for x in t.tokens[lo:hi] if x.kind == "punct"), None)
    if lead is not None and lead.text in (":", "—", "–") and lead.i - lo <= MAX_LEAD_IN:
        lo = lead.i + 1        # after a title ("Roofing quotes: which ...?")
    if hi - lo < 3 or t.tokens[hi - 1].text != "?" or t.tokens[lo].low not in PURPOSE_QUESTION_WORDS:
        return
    words = t.tokens[lo:hi - 1]
    if len(words) <= MAX_PREDICTED and all(x.kind == "word" and is_free(x) for x in words) and asks_nothing(words) \
            and not any(x.low in TABLE_QUESTION_WORDS or x.low in L.RESTRICTING for x in words):
        t.mark(words, "purpose")
