"""Words and phrases the rule planner knows: metrics, comparisons, construct cues, fillers, and
the methods it knows it does not support. Patterns run on the masked text of
:mod:`raystack.workflow.nl.text` (lower-case words, ``NUM3``/``PCT4``/``FILE5``... literals).
"""

from __future__ import annotations

import re

NUMV = r"(?:NUM\d+|PCT\d+)"
# a value of a list: never the count of a search's trials after it ("k in 3, 5, 7, 9, 11, 8 trials")
_ITEM = rf"{NUMV}(?!\d)(?!\s+trials?\b)"
NUMLIST = (rf"{_ITEM}(?:\s*,\s*{_ITEM})*\s*,?\s*(?:and|or|&|\+)\s+{_ITEM}"
           rf"|[\[{{(]\s*{_ITEM}(?:\s*,\s*{_ITEM})+\s*[\]}})]"
           rf"|{_ITEM}(?:\s*,\s*{_ITEM}){{2,}}|{_ITEM}(?:\s*/\s*{_ITEM})+|{_ITEM}(?:\s*\|\s*{_ITEM})+"   # "0.02 | 0.05 | 0.2"
           rf"|{_ITEM}(?:\s+(?:vs\.?|versus)\s+{_ITEM})+"    # "lr = 0.0005 vs 0.005 vs 0.05"
           rf"|{_ITEM}(?:\s*,\s*with\s+{_ITEM})*\s*,?\s*(?:and|or)\s+with\s+{_ITEM}")    # "with 0.005, with 0.05 and with 0.5"
FILEV = r"FILE\d+"
# where a model or adapters are served, said after the verb: "behind Ray Serve", "with Serve"
SERVE_AS_PLACE = r"\b(?:with|using|via|on|through|behind|in|over)\s+(?:ray\s+)?serve\b"

# metric words -> catalog metric names; longest first when matching
METRICS = {
    "validation loss": "val_loss", "val loss": "val_loss", "val_loss": "val_loss",
    "eval loss": "val_loss", "held-out loss": "val_loss", "training loss": "train_loss",
    "train loss": "train_loss", "log loss": "logloss", "logloss": "logloss",
    "token accuracy": "token_accuracy", "token-level accuracy": "token_accuracy",
    "exact match": "exact_match", "exact-match": "exact_match", "roc auc": "auc",
    "roc-auc": "auc", "auc": "auc", "f1 score": "f1", "f1-score": "f1", "f1": "f1",
    "accuracy": "accuracy", "acc": "accuracy", "precision": "precision", "recall": "recall",
    "error rate": "error", "error": "error", "loss": "loss", "score": "score",
    "rmse": "rmse", "root mean squared error": "rmse", "root-mean-square error": "rmse",
    "missing fraction": "missing_fraction", "missing_fraction": "missing_fraction",
    "share of missing values": "missing_fraction", "fraction of missing values": "missing_fraction",
    "missing share": "missing_fraction", "missing-value share": "missing_fraction", "missing rate": "missing_fraction",
    "share missing": "missing_fraction", "missing-value rate": "missing_fraction",
    "exact_match": "exact_match", "token_accuracy": "token_accuracy",
    # plurals, said of several results ("plot their accuracies")
    "accuracies": "accuracy", "validation losses": "val_loss", "val losses": "val_loss",
    "training losses": "train_loss", "train losses": "train_loss", "aucs": "auc", "f1 scores": "f1",
    "exact matches": "exact_match", "token accuracies": "token_accuracy", "error rates": "error",
    "rmses": "rmse",
}
LOWER_IS_BETTER = {"loss", "val_loss", "train_loss", "logloss", "error", "rmse", "missing_fraction"}
def metrics_rx(names) -> str:
    """An alternation of metric names (a space as any whitespace or a hyphen: "val-loss"), longest first."""
    return "|".join(sorted((k.replace(" ", r"(?:\s+|-)") for k in names), key=len, reverse=True))


METRIC_RX = metrics_rx(METRICS)

# "the run with the best AUC", "the lowest-RMSE one": the best of several results, named where it is
# used ("export the run with the best AUC to ./m"); ``d``/``d2`` the direction, ``m``/``m2`` the metric
BEST_ONE = (rf"\b(?:the\s+)?(?:(?:run|one|model|job|candidate|version|variant|classifier|regressor|checkpoint|base)\s+"
            rf"(?:with|that\s+has|having|that\s+scores?)\s+(?:the\s+)?(?P<d>best|highest|top|lowest|lower|higher|better)\s+"
            rf"(?P<m>{METRIC_RX})|(?P<d2>best|highest|top|lowest)[\s-](?P<m2>{METRIC_RX})\s+(?:one|run|model|job|candidate|version)"
            # "export whichever has the highest recall", "whichever lr gives the smallest RMSE"
            rf"|whichever(?:\s+(?:one|run|model|lr|k|value|setting|configuration|version))?\s+(?:has|gives|gets|scores|achieves|yields)\s+"
            rf"(?:the\s+)?(?P<d3>best|highest|top|lowest|smallest|largest|better|higher|lower)\s+(?P<m3>{METRIC_RX})"
            # "export the best run by AUC", "the run that comes out top on AUC"
            rf"|(?:the\s+)?(?P<d4>best|top|better)\s+(?:run|one|model|job|candidate|version)\s+(?:by|on|for|in\s+terms\s+of)\s+(?:the\s+)?(?P<m4>{METRIC_RX})"
            rf"|(?:the\s+)?(?:run|one|model|job|candidate|version)\s+(?:that|which)\s+(?:comes?\s+out|came\s+out|scores?|scored|does|did|ranks?|ranked)\s+"
            rf"(?P<d5>best|top|highest|lowest)\s+(?:on|by|for|in)\s+(?:the\s+)?(?P<m5>{METRIC_RX}))\b")

# comparison phrases (regex) -> operator; {v} is the number; CMP_LEAD the verb before it
# ("is", "ends up", "comes in", "turns out to be")
CMP_LEAD = (r"(?:(?:is|are|was|were|gets?|goes|go|rises?|climbs?|drops?|falls?|dips?|sinks?|stays?|remains?|ends?\s+up|ended\s+up|"
            # "if the AUC ends above 0.8", "finishes under 3.1"
            r"(?:ends?|ended|finish(?:es|ed)?)(?=\s+(?:above|over|below|under|at\s+(?:least|most))\b)|"
            r"comes?\s+(?:in|out)|came\s+(?:in|out)|(?:comes?|came|amounts?|works?\s+out)(?=\s+(?:to|at)\s+(?:NUM|PCT))|turns?\s+out(?:\s+to\s+be)?|lands?|sits?|lies|lie|scores?|still|is\s+still|"
            # "should the F1 be lower than 0.5", "if it proves to be over 0.8"
            r"does|do|can|will|should|be|prov(?:es?|ed)\s+to\s+be|reach(?:es|ed)?(?=\s+(?:NUM|PCT)\d+\s+or\s)|hits?(?=\s+(?:NUM|PCT)\d+\s+or\s)"
            r"|(?:has|have)\s+(?:dropped|fallen|risen|gone|got|gotten|come|climbed|sunk)(?:\s+(?:down|up))?|dropped|fell|rose|climbed"
            r"|(?:has|have)\s+been\s+(?:brought|pushed|driven|reduced|lowered|taken)(?:\s+(?:down|up))?"      # "has been brought below 0.04"
            # "is down to 3.1 or lower", "gets down to 0.05", "has fallen to a value not exceeding 3.1"
            r"|(?:is|are|gets?|goes|go|comes?)\s+down|to\s+a\s+value(?:\s+of)?)\s+)*"
            r"(?:(?:to|at|of)\s+(?=NUM|PCT))?")   # "exact match of 0.6 or better", "reaches 2.9 or less"
COMPARISONS = [
    (rf"{CMP_LEAD}(?:at\s+least|no\s+(?:less|lower|smaller)\s+than|not\s+below|not\s+(?:less|lower|smaller)\s+than|at\s+or\s+(?:above|over)|>=|≥"
     rf"|(?:greater|more|higher|bigger)\s+than\s+or\s+equal\s+to)\s+(?P<v>{NUMV})", ">="),
    (rf"{CMP_LEAD}(?:at\s+most|not\s+exceeding|no\s+(?:more|higher|greater)\s+than|not\s+above|not\s+(?:more|higher|greater)\s+than|at\s+or\s+(?:below|under)|<=|≤"
     rf"|(?:less|lower|smaller|fewer)\s+than\s+or\s+equal\s+to)\s+(?P<v>{NUMV})", "<="),
    # "no worse than 0.8": at least as good, by the metric's direction
    (rf"{CMP_LEAD}(?:no|not)\s+worse\s+than\s+(?P<v>{NUMV})", "reach"),
    (rf"{CMP_LEAD}(?P<v>{NUMV})\s+or\s+(?:higher|more|above|better|greater|over)", ">="),
    (rf"{CMP_LEAD}(?P<v>{NUMV})\s*\+(?!\s*(?:NUM|PCT|FILE))", ">="),     # "AUC 0.75+ → export"
    (rf"{CMP_LEAD}(?P<v>{NUMV})\s+or\s+(?:lower|less|below|under|worse)", "<="),
    (rf"{CMP_LEAD}(?:above|over|greater\s+than|more\s+than|higher\s+than|bigger\s+than|larger\s+than|better\s+than|in\s+excess\s+of|north\s+of|upwards\s+of|>)\s+(?P<v>{NUMV})", ">"),
    (rf"{CMP_LEAD}(?:exceeds?|exceeding|exceeded|beats?|beating|tops|surpass(?:es|ed)?|clears?|outperforms?)\s+(?P<v>{NUMV})", ">"),
    (rf"{CMP_LEAD}(?:below|under|less\s+than|lower\s+than|smaller\s+than|worse\s+than|beneath|south\s+of|<)\s+(?P<v>{NUMV})", "<"),
    (rf"{CMP_LEAD}(?:reach(?:es|ed)?|hits?|gets\s+to|achieves?|attains?|is\s+up\s+to|makes\s+it\s+to)\s+(?P<v>{NUMV})", "reach"),
    (rf"(?:is|equals?|==)\s+(?:exactly\s+)?(?P<v>{NUMV})", "=="),
]

# "deploy it unless recall is below 0.5": a condition on the opposite comparison
NEGATED_OPS = {">": "<=", ">=": "<", "<": ">=", "<=": ">", "==": "!="}
IF_CUE = (r"(?:(?:but\s+)?only\s+(?:if|when|once)|if|when|whenever|provided(?:\s+that)?|as\s+long\s+as|in\s+case|"
          # formal: "in the event that the recall exceeds 0.5", "(solely) on condition that ..."
          r"in\s+the\s+event\s+that|(?:(?:solely|only)\s+)?on\s+(?:the\s+)?condition\s+that|"
          r"assuming|once|should(?=\s+(?:the\s+|its\s+|their\s+)?(?:[\w-]+\s+){0,2}(?:come|be|fall|drop|go|end|stay|reach|exceed|get|report|show))"
          # "Is the recall at least 0.65, export it": a question's order, opening its sentence
          r"|(?:(?<=[.;]\s)|^)(?:is|are)(?=\s+(?:the\s+|its\s+|their\s+)?[\w-]+(?:\s+[\w-]+)?\s+(?:at\s+least|at\s+most|above|below|over|under"
          r"|more\s+than|less\s+than|higher\s+than|lower\s+than|greater\s+than)\s+(?:NUM|PCT)\d+\s*,))")
METRIC_MOD = (r"(?:(?:best|top|final|overall|mean|average|test|resulting|measured|tuned|held-out|winning|chosen|selected"
              # "the winning trial's accuracy", "the best run's AUC", "the tuned model's F1"
              r"|(?:winning|best|top|chosen|selected|tuned|trained|final)\s+(?:trial|run|model|candidate)\s*'s"
              # "if that run's AUC is 0.7 or more", "if the winner's AUC is over 0.8"
              r"|(?:trial|run|candidate|model|winner)\s*'s"
              # "if that one's AUC is above 0.65", "if the best one's F1 is under 0.6"
              r"|(?:that|this|best|top|winning|chosen|picked|selected|kept|better)\s+one\s*'s)\s+)?")
# "accuracy on the test set is under 0.6": where the metric was measured, between it and its comparison
METRIC_WHERE = (r"(?:(?:on|of|for|over|in|from)\s+(?:the\s+)?(?:test|validation|val|held-out|holdout|eval|evaluation)\s*(?:set|split|data|rows)?\s+"
                r"|(?:of|for|from)\s+(?:the\s+|its\s+|our\s+)?(?:[\w-]+\s+){0,3}?(?:model|classifier|regressor|predictor)\s+)?")
ELSE_CUE = (r"(?:otherwise|else|if\s+not|failing\s+(?:that|which)|in\s+(?:the|any)\s+other\s+case|in\s+all\s+other\s+cases|in\s+the\s+opposite\s+case"
            r"|(?:(?<=;\s)|(?<=\.\s))is\s+(?:it|that)\s+not(?=\s*,)|(?:(?<=;\s)|(?<=\.\s))(?:below|under|lower|less)(?:\s+that)?(?=\s*:)|if\s+(?:it|they|that|the\s+\w+)\s+(?:falls?|fall)\s+short"
            r"|(?:(?:it|they)\s+)?(?:falls?|fell)\s+short(?=\s*\?)|(?:and\s+)?if\s+(?:it\s+)?(?:doesn't|does\s+not)\s*\?"
            # (not "keep everything from both sides even if it doesn't match": a join's rows)
            r"|(?<!even\s)(?:if|when)\s+(?:it|they)\s+(?:doesn't|don't|does\s+not|do\s+not)(?:\s+(?:make\s+it|pass|qualify|get\s+there))?"
            r"|if\s+(?:it|they)\s*(?:'s|is|are|'re)\s+(?:less|not\s+as)\s+accurate(?:\s+than\s+that)?"   # "if it's less accurate than that"
            r"|(?:if|when)\s+(?:it|they|that)\s+(?:isn't|is\s+not|aren't|are\s+not)(?=\s*[,;:])"   # "...; if it isn't, send 'x'"
            r"|(?:if|when)\s+(?:(?:it|that)\s*'s|they\s*'re)\s+not(?=\s*[,;:])"   # "..., and if it's not, just do a report"
            r"|if\s+(?:it|they)\s+(?:miss(?:es)?|fails?)\s+(?:(?:the\s+)?(?:bar|threshold|cut|mark|target)|that|this)"   # ("if it misses that")
            r"|(?:if|when)\s+(?:it|they)\s+(?:can't|cannot|can\s+not|won't|will\s+not)(?=\s*[,;:]|\s+(?:then|just)\b)"   # ("and if it can't, just send ...")
            r"|(?:below|under|short\s+of|anything\s+less\s+than)\s+(?:that|this|it)(?=\s*(?:->|=>|→|,|:|;))"
            r"|anything\s+(?:less|lower|under|below|worse|else)(?:\s+than\s+that)?(?=\s*(?:->|=>|→|,|:|;))"
            r"|(?<![\w'])(?:no|nope)(?=\s*\?)"   # "F1 >= 0.75? export it. No? then notify ..."
            r"|anything\s+else\s+(?:just\s+|only\s+)?(?:gets|get|goes\s+to|means))")   # "... anything else just gets a report"
# "If it's higher, I'd rather just get a report": the other side of the condition before it, said
# by its direction (checked against that condition's comparison): ``up``, ``down``, or ``worse``
# (up or down by the metric)
ELSE_DIRECTION = (r"(?:if|when|should)\s+(?:it|that|they|the\s+\w+|it\s*'s|that\s*'s)\s+(?:'s\s+|is\s+|are\s+|comes?\s+(?:in|out)\s+|turns?\s+out\s+|be\s+"
                  r"|(?:falls?|fall|drops?|lands?|ends\s+up|goes|go)\s+)?"   # ("If it falls below that figure, ...")
                  r"(?:(?P<up>higher|above|over|greater|bigger|larger|more)|(?P<down>lower|below|under|less|smaller|fewer)|(?P<worse>worse))"
                  # ("if it's lower send dubbing adapters below bar": a run-on, its step's verb right after)
                  # ("if it's below that, send ...", "below that figure")
                  r"(?:\s+(?:than\s+)?(?:that|this|it)(?:\s+(?:figure|mark|bar|threshold|level|value|number|score))?)?(?=\s*[,;:]|\s*->|\s*→|\s+(?:then\s+|just\s+)?(?:send|notify|post|ping|alert|email|message|"
                  r"write|save|export|deploy|serve|plot|retrain|report|produce|generate)\b)"
                  r"(?:\s*,\s*(?:i|we)\s*'d\s+rather(?:\s+just)?(?:\s+(?:get|have|see|receive))?)?")
UNTIL_CUE = (r"(?:(?:continu(?:e|ing)\s+|keep\s+going\s+|repeated\s+|repeating\s+|repeat\s+)?until|till|stop(?:ping)?(?:\s+early)?\s+(?:once|when|as\s+soon\s+as)"
             rf"|stop(?:ping)?\s+at(?=\s+(?:the\s+|an?\s+)?(?:val(?:idation)?\s+)?(?:{METRIC_RX})\b)"   # "stop at auc >= 0.75"
             r"|(?:and\s+)?stop\s+(?:training\s+)?(?:once|when))")
# "repeat while the val loss > 3.2": a loop that stops on the opposite comparison
WHILE_CUE = (r"(?:repeat(?:ing|ed)?|keep\s+(?:going|training|running|at\s+it)|continu(?:e|ing|ed)|loop(?:ing)?|go\s+on|iterate)"
             r"\s+(?:it\s+|this\s+|training\s+)?(?:while|(?:for\s+)?as\s+long\s+as)")   # ("repeating for as long as ...")
# what a connection, not a table, drops: "the share drops connections", "the Wi-Fi drops out sometimes"
DROPPED_WHAT = {"out", "off", "connections", "connection", "packets", "sometimes", "often", "occasionally"}
# the words before a noun: after one, a verb's word is the noun ("its own export: a.csv")
NOUN_DETERMINERS = ("a", "an", "the", "its", "their", "our", "my", "own", "this", "that", "each", "every")
# a count said to be the cap after it: "4 workers as the upper limit", "2 GPUs being the maximum"
AS_THE_LIMIT = (r"(?:as|being|is)\s+(?:the|an?|our|its)\s+(?:upper\s+|hard\s+|absolute\s+)?"
                r"(?:limit|cap|ceiling|maximum|max|bound)\b")
UNBOUNDED = (r"\b(?:forever|indefinitely|endlessly|without\s+(?:a\s+|any\s+)?(?:limit|bound|end|cap)|"
             r"until\s+(?:it\s+)?converges?|until\s+convergence|until\s+(?:it\s+is\s+|it\s*'s\s+)?perfect|"
             r"no\s+matter\s+how\s+long|as\s+long\s+as\s+(?:it\s+takes|needed|necessary)|"
             r"as\s+many\s+(?:rounds|times|iterations|attempts|retries|epochs)\s+as\s+(?:it\s+takes|needed|necessary|required)|"
             r"again\s+and\s+again|over\s+and\s+over|retry\s+until|"
             # "keep retrying it up to 5 times" is bounded
             r"keep\s+retrying(?![^.;:!?]*?\b(?:up\s+to|at\s+most|no\s+more\s+than|a\s+maximum\s+of)\s+(?:NUM\d+|once|twice|thrice)\b)|unlimited\s+(?:retries|attempts|rounds)|"
             r"no\s+limit\s+on\s+(?:the\s+)?(?:attempts|retries|rounds|iterations))\b")
BOUND = (r"(?:(?:but\s+|and\s+)?(?:for\s+)?(?:at\s+most|up\s+to|no\s+more\s+than|not\s+more\s+than|never\s+more\s+than|a\s+maximum\s+of|"
         r"maximum\s+of|max(?:imum)?|capped\s+at|cap\s*(?::|of|at)?|cap\s+(?:it|that|this|the\s+loop)\s+at|"
         r"limit\s+(?:it|that|this|the\s+loop)\s+to|(?:with\s+)?a\s+(?:maximum|limit|cap|ceiling)\s+of|limited\s+to)\s+"
         r"(?P<n>NUM\d+)(?!\d)(?!\s*(?:workers?|gpus?|gb|gib|ranks?|nodes?|replicas?|machines|processes|cpus?)\b)"
         r"\s*(?:times|rounds?|iterations?|attempts?|tries|repetitions?|passes|runs|chunks|cycles|epochs?)?"
         r"|(?:\bfor\s+)?(?P<n2>NUM\d+)\s+(?:times|rounds|iterations|attempts|tries|passes|runs|chunks|cycles)\s+(?:at\s+(?:the\s+)?most|max(?:imum)?|tops)"
         r"|(?:in|over)\s+(?:at\s+most\s+)?(?P<n3>NUM\d+)\s+(?:rounds|iterations|attempts|tries)"
         r"|(?:and\s+|but\s+)?(?:stop|stopping|give\s+up|giving\s+up|quit|quitting)\s+after\s+(?P<n4>NUM\d+)\s+(?:rounds|iterations|attempts|tries|times|runs|passes)(?:\s+(?:at\s+(?:the\s+)?most|max(?:imum)?|tops|regardless))?)"
         r"|\bor\s+(?:stop\s+|quit\s+)?after\s+(?P<n5>NUM\d+)\s+(?:rounds|iterations|attempts|tries|times|runs|passes|epochs|chunks|cycles)"
         r"(?:\s*,?\s*whichever\s+(?:comes\s+|happens\s+|is\s+)?(?:first|sooner|earlier))?"
         r"|(?P<n6>NUM\d+)\s*-?\s*(?:rounds?|iterations?|passes|pass|tries|attempts?|runs?)\s+(?:cap|limit|max(?:imum)?|ceiling)"
         # "with a hard stop at 8 rounds", "max_rounds=8"
         r"|(?:with\s+)?(?:a\s+)?hard\s+(?:stop|cap|limit)\s+(?:at|of|after)\s+(?P<n8>NUM\d+)\s+(?:rounds|iterations|passes|runs|chunks|cycles|epochs)"
         r"|\bmax_(?:rounds|iterations|iters)\s*[=:]\s*(?P<n9>NUM\d+)"
         # "with four rounds as the ceiling"
         r"|(?:with\s+)?(?P<n10>NUM\d+)\s+(?:rounds|iterations|passes|runs|chunks|cycles)\s+(?:as|is|being)\s+the\s+(?:hard\s+|upper\s+|absolute\s+)?(?:ceiling|cap|limit|maximum|max|most(?:\s+allowed)?)"   # "ten rounds is the limit"
         # "with round 12 as the last"
         r"|(?:with\s+)?(?:round|iteration|pass)\s+(?P<n11>NUM\d+)\s+(?:as|is|being)\s+the\s+(?:last|final)(?:\s+one)?"
         # "until accuracy exceeds 0.9 or 5 attempts have been made"
         r"|\bor\s+(?:(?:we|it|you)\s+(?:hit|reach|get\s+to)\s+)?(?P<n7>NUM\d+)\s+(?:rounds|iterations|attempts|tries|times|runs|passes|epochs)"
         r"(?:\s+(?:(?:have|has)\s+(?:been\s+(?:made|run|done|tried)|passed|gone\s+by|run|elapsed|finished)"
         r"|pass|elapse|go\s+by|are\s+(?:done|up|used(?:\s+up)?)))?")      # ("... or 10 rounds pass")
# "stop after 7 rounds no matter what", "round 10 is the last one regardless": words that stress
# a loop's bound, said right after it (never the run's exit handler, which runs whatever happens)
BOUND_STRESS = r"(?:regardless|no\s+matter\s+what|either\s+way|in\s+any\s+case|whatever\s+happens|in\s+all\s+cases)"
BOUND = rf"(?:{BOUND})(?:\s+(?:in\s+total|overall|altogether))?(?:\s*,?\s*{BOUND_STRESS}(?=\s*(?:[,;.)]|$|\s+(?:and|but|with|then)\b)))?"
# "epoch by epoch", "round after round", "keep going until": how a loop is written, not a step;
# PER_ROUND says what one round of the looped step runs ("epoch by epoch" = one epoch a round)
# a bare "keep" only where it says to go on ("keep on until ...", "keep it up"): "keep 30% for
# testing" in a sentence with a loop is the split's
LOOP_WORDS = (r"\b(?:keep(?:s|ing)?\s+(?:on\s+)?(?:training|running|fitting|iterating|repeating|going)"
              r"|repeat(?:ing)?\s+(?:the\s+)?(?:training|fitting|fit|pretraining|fine-tuning|run)|repeat(?:ing|edly)?|"   # "repeat training up to 3 times"
              r"(?:keep|keeps|keeping)(?=\s+(?:on|it\s+up|at\s+it|until|till|while|up)\b|\s+[\w-]*ing\b|\s*[,.;:]|\s*$)|again|iterat\w*|loop|loops|looping|re-?run\w*|rounds?|runs|at\s+a\s+time|"
              r"each\s+round|per\s+round|going|at\s+it|(?:round|epoch|pass)\s+(?:by|after)\s+(?:round|epoch|pass)|passes|chunks|cycles"
              r"|continu(?:e|es|ing)(?=\s+(?:in|with|for)\s)"   # ("continuing in one-epoch rounds until ...")
              # ("until the val loss is below 2.9, checking every 200 steps": a round's length, said as how often it is checked)
              r"|(?:checking|evaluating|validating|measuring|testing|checked|evaluated)\s+(?:it\s+)?every(?=\s+NUM\d+\s+(?:training\s+)?steps\b))\b")
ROUND_WORDS = r"\b(?:per|each|a)\s+(?:round|pass|chunk|cycle|iteration|block)\b|\bin\s+(?:chunks|blocks|batches|stints)\s+of\b"   # ("in blocks of 400 steps")
PER_ROUND = {r"\bepoch\s+(?:by|after)\s+epoch\b|\b(?:a\s+)?single\s+epoch\b(?:\s+(?:at\s+a\s+time|(?:per|each|a)\s+(?:iteration|round|pass)))?"
             r"|\b(?:an|one|NUM\d+)\s+epochs?(?=\s+at\s+a\s+time\b)"
             # "one epoch per round", "an epoch each iteration"
             r"|\b(?:an|NUM\d+)\s+epochs?\s+(?:per|each|a|every)\s+(?:iteration|round|pass|time)\b"
             # "in two-epoch increments", "in 3-epoch steps"
             r"|\b(?:in\s+)?(?:NUM\d+|single|one)\s*-?\s*epoch\s+(?:increments|steps|chunks|blocks|rounds|stints|passes|iterations)\b": {"epochs": 1}}
RETRY_WORDS = {"once": 1, "twice": 2, "thrice": 3}
# "if it fails", "if they crash", "on failure": a failure clause after a retry's count
_IF_FAILS = (r"(?:\s+(?:(?:if|when|should)\s+(?:it|they|that|training|the\s+step|the\s+(?:load|loading|read|reading|training|fit|split|export|deployment|run|job|write|save))\s+(?:fails?|crash(?:es)?|breaks?|errors?\s+out|dies|falls\s+over|blows\s+up|goes\s+down)"
             # "one retry if the node is preempted", "if the spot instance gets reclaimed": the machine under it lost
             r"|(?:if|when|should)\s+(?:the|a|our)\s+(?:node|machine|box|instance|spot\s+instance|worker|vm|gpu|server)\s+"
             r"(?:is|gets)\s+(?:preempted|reclaimed|killed|lost|restarted|rebooted)"
             r"|on\s+failures?|upon\s+failures?|in\s+case\s+of\s+failures?|if\s+(?:need\s+be|needed|necessary|required)))?")
# the step a retry names ("retry the load 2 times", "retry the training up to 3 times") -> its kind
RETRIED_KINDS = {"load": "load_data", "loading": "load_data", "reading": "load_data", "read": "load_data", "training": "train_model", "train": "train_model",
                 "fit": "train_model", "split": "split_data", "export": "export_model",
                 "deployment": "deploy_model", "deploy": "deploy_model", "evaluation": "evaluate_model", "write": "write_table",
                 "pretraining": "edit_pretrain", "fine-tune": "mlora_finetune", "fine-tuning": "mlora_finetune",
                 "save": "save",      # ("that save": the last step that saves, a table, a model or a report)
                 "search": "train_model", "sweep": "train_model", "tuning": "train_model"}   # (a search: its tuned training)
# the steps "the save" names
SAVING_STEPS = ("write_table", "export_model", "save_report")
# what a retry names before its count: "retry it", "retry the training", "retrying that step"
_RETRY_OBJECT = (r"(?:it\s+|them\s+|each(?:\s+one)?\s+|that\s+|(?:the|that|this)\s+(?:"
                 + "|".join(re.escape(w) for w in ("step", "job", "run", *RETRIED_KINDS)) + r")\s+|"
                 r"training\s+|on\s+failure\s+|if\s+it\s+fails\s+|when\s+it\s+fails\s+|"
                 r"(?:every|each|all(?:\s+the)?)\s+(?:steps?|stages?|tasks?|read|load|run|job)\s+)*")   # "retry every step twice", "retrying each read"
_RETRIED = "|".join(RETRIED_KINDS)
RETRIES = [
    # first: "if it fails, retry 3 times" is one retry ("retry 3 times" alone left "if it fails"
    # to be read as an exit handler)
    r"(?:if|when|should)\s+(?:it|they|that|training|the\s+step|the\s+(?:training|load|loading|split|export|deployment)(?:\s+of\s+(?P<sk>FILE\d+))?)\s+(?:fails?|crash(?:es)?|dies|breaks|errors\s+out|falls\s+over)\s*,?\s*(?:then\s+)?retry\s+(?:it\s+|them\s+)?(?:up\s+to\s+|at\s+most\s+)?"
    r"(?:(?P<n>NUM\d+)\s+times?|(?P<w>once|twice|thrice))",
    # "give the read two retries", "allow two retries on the write": the step named as the retries' holder
    r"(?:(?:each(?:\s+(?:one|run|job|fit|model|training|load|file))?|every\s+(?:one|run|job|fit|model|training|load|file)|all|both)"
    r"\s+(?:is\s+|are\s+)?(?:allowed|given|permitted|gets|get)\s+|(?:allow|allowing|give|giving|permit|permitting)\s+(?:(?:it|them|(?:the|that|every|each)\s+(?:" + _RETRIED + r"))\s+)?)"
    r"(?:up\s+to\s+)?(?P<n>NUM\d+)\s+retr(?:y|ies)(?:\s+(?:on|for|to)\s+(?:the|that)\s+(?:" + _RETRIED + r")|\s+(?:per|each|a)\s+(?:load|read|file|write|step)"
    r"|\s+(?:when|while)\s+(?:reading|loading)(?=\s+FILE\d+))?\b"   # ("allow three retries when reading g.csv": the file stays the load's)
    + _IF_FAILS,
    # "each load should get 2 retries", "the write has up to 3 retries": the step named as the retries' holder
    r"(?:each|every|the|that)\s+(?:" + _RETRIED + r")\s+(?:should\s+|must\s+|will\s+|can\s+)?(?:get|gets|have|has)\s+"
    r"(?:up\s+to\s+)?(?P<n>NUM\d+)\s+retr(?:y|ies)\b",
    r"(?:with\s+|and\s+)?(?:up\s+to\s+|at\s+most\s+|a\s+maximum\s+of\s+)?(?P<n>NUM\d+)\s+retr(?:y|ies)"
    r"(?:\s+(?:each|apiece|per\s+(?:step|model|run|value|load|read|file|write|training))|\s+(?:on|for)\s+(?:the|that)\s+(?:" + _RETRIED + r")\b)?" + _IF_FAILS,
    # "(if that fails, try again twice)": how many more attempts, said after "again"
    r"(?:if|when|should)\s+(?:it|they|that|this|(?:the|that)\s+(?:" + _RETRIED + r"))\s+(?:fails?|crash(?:es)?|breaks?|dies|errors?\s+out)\s*,?\s*(?:then\s+)?"
    r"(?:try|run|do)\s+(?:(?:it|that|them)\s+)?again\s+(?:up\s+to\s+|at\s+most\s+)?(?:(?P<w>once|twice|thrice)|(?P<n>NUM\d+)\s+(?:more\s+)?times?)\b",
    # "if it crashes try once more": the object left out after a failure clause
    r"(?:if|when|should)\s+(?:it|that|this|(?:the|that)\s+(?:" + _RETRIED + r"))\s+(?:fails?|crash(?:es)?|breaks?|dies|errors?\s+out)\s*,?\s*(?:then\s+)?"
    r"(?:try|run|do)\s+(?:(?:it|that|them)\s+)?(?:(?P<w>once|twice|thrice)\s+more|(?P<n>NUM\d+)\s+more\s+times?)\b",
    # "if that save fails, try it twice more"
    r"(?:(?:if|when|should)\s+(?:it|that|this|(?:the|that)\s+(?:" + _RETRIED + r"))\s+fails?\s*,?\s*)?(?:try|run|do)\s+(?:it|that|them)\s+"
    r"(?:(?P<w>once|twice|thrice)\s+more|(?P<n>NUM\d+)\s+more\s+times?)\b",
    # "let the save retry two times"
    r"let\s+(?:the|that|this|each|every)\s+(?:" + _RETRIED + r")\s+retry\s+(?:up\s+to\s+|at\s+most\s+)?(?:(?P<n>NUM\d+)\s+times?|(?P<w>once|twice|thrice))",
    # ("each run being retried at most twice in case of failure")
    r"(?:(?:each|both|it|they|all|(?:each|every)\s+(?:run|one|training|attempt|read|load|fit|model|job)|the\s+(?:read|load|write|save|training|export|search|sweep|tuning))\s+)?"
    r"(?:(?:is|are|gets?|being|may\s+be|can\s+be|should\s+be|will\s+be|must\s+be)\s+)?retried\s+(?:up\s+to\s+|at\s+most\s+|as\s+many\s+as\s+)?(?:(?P<w>once|twice|thrice)|(?P<n>NUM\d+)\s+times?)"
    r"(?:\s+(?:each|apiece))?(?:\s+(?:on|upon|after)\s+(?:a\s+)?failures?|\s+in\s+(?:the\s+)?case\s+of\s+(?:a\s+)?failures?"
    r"|\s+if\s+(?:it|they)\s+(?:fails?|falls?\s+over|crash(?:es)?|dies|die))?",
    r"(?:keep\s+)?retry(?:ing)?\s+" + _RETRY_OBJECT + r"(?:up\s+to\s+|at\s+most\s+)?(?P<w>once|twice|thrice)(?:\s+(?:each|apiece))?" + _IF_FAILS,
    r"(?:keep\s+)?retry(?:ing)?\s+" + _RETRY_OBJECT + r"(?:up\s+to\s+|at\s+most\s+)?(?P<n>NUM\d+)\s+times?(?:\s+(?:each|apiece))?" + _IF_FAILS,
    # "retry the load of events.csv up to 5 times", "retry loading events.csv 3 times": the file stays the load's
    r"(?:keep\s+)?retry(?:ing)?\s+(?:(?:the|that|this)\s+(?:load|loading|reading|read)\s+(?:of\s+)|(?:loading|reading)\s+)(?P<sk>FILE\d+)\s+"
    r"(?:up\s+to\s+|at\s+most\s+)?(?:(?P<n>NUM\d+)\s+times?|(?P<w>once|twice|thrice))" + _IF_FAILS,
    # "try it up to 3 times", "trying it up to two times if it crashes": attempts in all, one more than the retries
    r"(?:try|trying|attempt|attempting)\s+(?:it\s+|that\s+|this\s+)?(?:up\s+to\s+|at\s+most\s+)(?P<t>NUM\d+)\s+times" + _IF_FAILS,
    r"(?:(?:if|when|should)\s+(?:it|that|this|training|the\s+step)\s+fails?\s*,?\s*)?(?:try|run|attempt|do|start)\s+(?:it\s+|that\s+)?"
    r"(?:again|over)\s+(?:up\s+to\s+|at\s+most\s+|a\s+maximum\s+of\s+)?(?P<n>NUM\d+)\s+(?:more\s+|additional\s+|extra\s+)?times?",
    # ("giving it two more tries")
    r"(?:with\s+|allowing\s+|and\s+|(?:give|giving|allow|allowing)\s+(?:it|them|each\s+(?:one|of\s+them))\s+)?(?:up\s+to\s+|at\s+most\s+)?(?P<n>NUM\d+)\s+(?:more|additional|extra|further)\s+(?:attempts|tries|goes)" + _IF_FAILS,
    # "retries=1 each", "max_retries: 3", "retries 2": a setting, as a config or a list writes it
    r"(?:max_)?retr(?:y|ies)\s*(?:=|:)?\s*(?P<n>NUM\d+)(?!\s*(?:times|rounds|epochs|trials|workers|gpus))(?:\s+(?:each|apiece|per\s+(?:step|model|run|value)))?",
]

EXIT_CUES = [
    (r"\b(?<!even\s)(?:on|upon)\s+(?:a\s+|any\s+)?failures?(?:\s+(?:anywhere|at\s+any\s+(?:point|step)|along\s+the\s+way))?\b|\bfailure\s+anywhere\b|\b(?:a\s+|any\s+)?crash(?:es)?\s+(?:at\s+any\s+(?:point|stage|step)|anywhere)\b|\bany\s+failure\b|\b(?<!even\s)if\s+(?:it|something|anything|that|this)\s+(?:fails|breaks|falls\s+apart|dies|blows\s+up|crashes(?=\s+(?:partway|midway|halfway)))\b(?:\s+(?:anywhere|(?:somewhere\s+)?along\s+the\s+way|somewhere|at\s+any\s+(?:point|step|stage)|partway(?:\s+through)?|midway(?:\s+through)?|halfway(?:\s+through)?))?|\bin\s+case\s+of\s+(?:a\s+|any\s+)?(?:failures?|errors?)\b|"
     # ("if it stops with an error", "if anything at all blows up", "if any stage of this pipeline fails")
     r"\b(?<!even\s)(?<!also\s)(?:if|when|should)\s+(?:it|anything(?:\s+at\s+all)?|something|(?:any|a|some|one)\s+(?:step|stage|part|task)|any\s+of\s+(?:this|these|them|it)|"
     r"(?:the|this)\s+(?:(?:whole|entire|full)\s+)?(?:run|workflow|pipeline|job|training|whole\s+thing|flow|procedure|process|analysis"
     r"|fine-?tune|fine-?tuning|pre-?training|tuning|search|sweep)"        # ("if the fine-tune fails, notify 'x'")
     r"(?:\s+as\s+a\s+whole)?)"           # "if the procedure as a whole fails"
     r"(?:\s+(?:in|of)\s+(?:the\s+|this\s+)?(?:run|workflow|pipeline|job|it))?"       # "if something in the run breaks"
     r"\s+(?:fails?|failed|breaks?|go(?:es)?\s+wrong|"
     r"errors?(?:\s+out)?|crash(?:es|ed)?|blows?\s+up|blew\s+up|dies|died|falls?\s+over|fell\s+over|falls?\s+apart|goes\s+down|went\s+down"
     r"|(?:stops|ends|halts|exits)\s+(?:with|on)\s+(?:an?\s+)?error)"      # "If this job stops with an error"
     r"(?:\s+(?:anywhere|at\s+any\s+(?:point|step|stage)|(?:somewhere\s+)?along\s+the\s+way|somewhere|during\s+the\s+(?:run|job|pipeline|workflow)"
     r"|partway(?:\s+through)?|midway(?:\s+through)?|halfway(?:\s+through)?))?\b"
     r"|\bshould\s+(?:it|anything|something|the\s+(?:run|job|pipeline|workflow))\s+(?:fail|crash|break)\b"   # "Should it fail: ..."
     # "In case the run errors out, ...", "Failure → notify ..."
     r"|\bin\s+case\s+(?:it|anything|something|the\s+(?:run|job|pipeline|workflow))\s+(?:errors?\s+out|fails|crashes|breaks)\b"
     r"|(?:^|(?<=[.;]\s))(?:a\s+|any\s+)?failure(?=\s*(?:→|->|:))"
     r"|\b(?<!also\s)(?<!even\s)if\s+there\s+is\s+(?:an\s+)?error\b|\b(?:on|upon)\s+(?:an\s+|any\s+)?errors?\b(?:\s+anywhere\b)?"
     # "On a crash → empty the scratch area", "Crash → notify 'x'"
     r"|\b(?:on|upon|after|in\s+case\s+of)\s+(?:a\s+|any\s+)?crash\b|(?:(?m:^)|(?<=[.;]\s))crash(?:es)?(?=\s*(?:→|->|:))"
     # "On a failed run, send 'x'"
     r"|\b(?:on|upon|after|in\s+case\s+of|for)\s+(?:a\s+|any\s+)?failed\s+(?:run|job|attempt|pipeline|workflow)\b"
     # "In the event of a failure, ...", "in case of trouble"
     r"|\bin\s+the\s+event\s+of\s+(?:a\s+|any\s+)?(?:failure|error|crash|problem)s?\b|\bin\s+case\s+of\s+(?:any\s+)?(?:trouble|problems?)\b"
     r"|\bin\s+case\s+of\s+(?:an?\s+|any\s+)(?:error|failure|crash)s?\b"
     # "send 'x' if it crashes.": after the message, to the sentence's end
     r"|(?:(?<=QUOTE\d\s)|(?<=QUOTE\d\d\s))(?:if|when|should)\s+(?:it|the\s+(?:run|job|pipeline|workflow)|anything|something)\s+"
     r"(?:crashes|fails|breaks|dies|errors\s+out)(?=\s*(?:[.;!]|$))", "failure"),
    (r"\b(?:on|upon)\s+success\b|\b(?:on|upon|after)\s+(?:the\s+)?(?:successful|clean)\s+completion\b(?:\s+of\s+(?:the\s+)?(?:run|workflow|pipeline|job|whole\s+thing))?|\b(?:after|on)\s+a\s+(?:fully\s+|completely\s+|clean\s+)?successful\s+run\b|\b(?:if|when|once)\s+(?:everything|it\s+all|all\s+of\s+it|all\s+steps|"
     r"the\s+(?:(?:whole|entire|full)\s+)?(?:run|workflow|pipeline|job|whole\s+thing|procedure|process|analysis)(?:\s+as\s+a\s+whole)?)\s+(?:succeeds|succeeded|is\s+successful|"
     r"(?:has|have|\s*'s)\s+succeeded|"     # ("once the whole run has succeeded", "once everything's succeeded")
     r"completes\s+successfully|finishes\s+successfully|(?:has|have)\s+(?:completed|finished|run)\s+successfully|goes\s+well|goes\s+fine|works(?:\s+out)?|(?:finishes|completes|runs|goes\s+through|ends)\s+without\s+"
     r"(?:any\s+)?(?:errors?|failures?|problems|issues|a\s+hitch)|goes\s+through(?:\s+cleanly)?|go\s+through(?:\s+cleanly)?|"
     # "when the whole thing has gone through fine", "once it all has gone well"
     r"(?:has|have)\s+(?:gone\s+through|gone\s+well|worked)(?:\s+(?:fine|ok|okay|cleanly|successfully|without\s+(?:a\s+hitch|problems|errors)))?|"
     r"(?:runs|finishes|completes)\s+cleanly|passes|pass)\b"
     # "when all of the above has completed successfully", "when the job has run cleanly from start to finish",
     # "when it has all gone through ok", "when it's all done and went fine"
     r"|\b(?:if|when|once)\s+(?:all\s+(?:of\s+)?the\s+above|everything\s+above)\s+(?:has|have)\s+(?:completed|finished|run|gone\s+through)\s+"
     r"(?:successfully|cleanly|fine|ok|okay|without\s+(?:a\s+hitch|problems|errors))\b"
     r"|\b(?:if|when|once)\s+(?:it|the\s+(?:run|workflow|pipeline|job|whole\s+thing))\s+(?:has|have)\s+run\s+(?:cleanly|fine|ok|okay|successfully)"
     r"(?:\s+from\s+start\s+to\s+finish)?\b"
     r"|\b(?:if|when|once)\s+it\s+(?:has|'s)\s+all\s+(?:gone\s+through|gone\s+well|worked)(?:\s+(?:fine|ok|okay|cleanly|successfully))?\b"
     r"|\b(?:if|when|once)\s+it\s*'s\s+all\s+(?:done|finished|complete)\s+and\s+(?:went|gone|goes)\s+(?:fine|well|ok|okay|smoothly)\b"
     r"|\b(?:if|when|once)\s+(?:every|each)\s+step\s+(?:succeeds|passes|works|has\s+(?:succeeded|passed|worked))\b"
     r"|\b(?:if|when|once)\s+all\s+(?:the\s+)?steps\s+(?:succeed|pass|work|have\s+(?:succeeded|passed|worked))\b"
     # "if nothing fails", "if nothing goes wrong", "if there are no errors"
     r"|\b(?:if|when|once|provided)\s+(?:nothing|no\s+step|none\s+of\s+(?:it|them|the\s+steps))\s+(?:fails|failed|goes\s+wrong|went\s+wrong|breaks|errors(?:\s+out)?|crashes)\b"
     r"|\bif\s+there\s+(?:are|were)\s+no\s+(?:failures|errors|problems)\b"
     # "If successful, send ...", "send 'x' once it has finished successfully", "send 'x' if it worked"
     r"|(?:^|(?<=[.;?!]\s)|(?<=\band\s)|(?<=\bthen\s)|(?<=\bonly\s))if\s+(?:successful|all\s+goes\s+well|everything\s+goes\s+well|it\s+all\s+goes\s+well"
     r"|(?:all|everything)\s+(?:is|was)\s+(?:a\s+)?(?:success|successful|fine|ok|okay|good))(?=\s*,)"     # ("If all is success, send ...", "only if everything was success, ...")
     r"|(?:(?<=QUOTE\d\s)|(?<=QUOTE\d\d\s))(?:if|once|when)\s+(?:it|the\s+run|everything)\s+(?:worked|works|succeeds|succeeded|went\s+well|"
     r"(?:has\s+)?(?:finished|completed|run)\s+successfully)(?=\s*(?:[.;!]|$))", "success"),
    # ("(we always do this)": a habit, said of who writes, never a handler)
    (r"\b(?:(?<!we\s)(?<!i\s)(?<!they\s)(?<!you\s)always|no\s+matter\s+what(?:\s+happens)?|whatever\s+happens|"
     r"(?<!rounds\s)(?<!iterations\s)(?<!times\s)(?<!passes\s)(?<!attempts\s)(?<!tries\s)regardless(?:\s+of\s+(?:the\s+)?"
     r"(?:outcome|result|whether\s+it\s+succeeds(?:\s+or\s+(?:fails|not))?))?|in\s+any\s+case|in\s+all\s+cases|"
     r"come\s+what\s+may|succeed\s+or\s+fail|win\s+or\s+lose|rain\s+or\s+shine|even\s+if\s+(?:it|something|anything|the\s+(?:job|run|pipeline|workflow|whole\s+thing))\s+(?:fails|failed|crashes|crashed|blew\s+up|blows\s+up|breaks|broke|dies|died|falls\s+over|fell\s+over)|success\s+or\s+(?:not|failure)|"
     # "crashed or not", "crash or no crash", "even on failure", "whatever state the run ends in"
     r"crash(?:ed|es)?\s+or\s+(?:not|no\s+crash)|even\s+on\s+(?:a\s+)?failure|(?:succeeded|succeeds)\s+or\s+(?:failed|fails)|"
     r"(?:a\s+)?(?:failed|failing|successful|crashed)\s+(?:run|job)\s+or\s+not|"      # "..., failed run or not"
     r"(?:also|even)\s+when\s+(?:it|the\s+run)\s+fails|"
     r"(?:also|even)\s+(?:if|when)\s+there\s+(?:is|'s|are)\s+(?:an?\s+|any\s+)?(?:errors?|failures?|problems?|crash(?:es)?)|"   # ("at the end, also if there is an error")
     r"whatever\s+state\s+(?:it|the\s+(?:run|job|pipeline|workflow))\s+(?:ends|finishes)\s+in|"
     r"pass\s+or\s+fail|whatever\s+the\s+(?:outcome|result)|either\s+way|in\s+every\s+case|"
     r"whether\s+(?:it|the\s+run|everything)\s+(?:succeeds|succeeded|works|worked|passes|passed)\s+or\s+(?:not|fails|failed|crashes|crashed)|"
     # (a clause of their own: "classify good or bad reviews" names classes)
     r"(?:(?<=[,;.:]\s)|(?<=^))(?:good\s+(?:result\s+|outcome\s+|news\s+)?or\s+bad|successful\s+or\s+not)(?=\s*,)|"
     r"whether\s+or\s+not\s+(?:it|the\s+(?:run|job|pipeline|workflow)|everything)\s+(?:succeeds|works|passes|fails|succeeded|worked|passed|failed)|"
     r"(?:regardless\s+of|no\s+matter)\s+how\s+(?:it|the\s+(?:run|job|pipeline|workflow)|things)\s+(?:ends|goes|turns\s+out)|"
     r"however\s+(?:it|the\s+(?:run|job|pipeline|workflow)|things)\s+(?:ends|goes|turns\s+out|finishes|ended|went)|"
     # "When it stops for any reason, clear away the scratch files"
     r"(?:when(?:ever)?|once|if|after)\s+(?:it|the\s+(?:run|job|pipeline|workflow)|everything)\s+(?:stops|ends|finishes|is\s+over)"
     r"\s+for\s+(?:any|whatever)\s+reason(?:\s+at\s+all)?"
     r"|no\s+matter\s+(?:the|what\s+the)\s+(?:outcome|result)(?:\s+is)?)\b", "always"),
]
END_PHRASES = (r"\b(?:(?:when|once)\s+(?:it\s+is\s+|it\s*'s\s+|everything\s+is\s+)?(?:finished|complete|completed|done)|at\s+the\s+(?:very\s+)?end|"
               r"(?:on|at|upon)\s+exit|as\s+the\s+(?:very\s+)?last\s+(?:thing|step)|last\s+of\s+all|when\s+(?:it|everything|the\s+(?:run|workflow|pipeline|job))\s+"
               r"(?:finishes|is\s+(?:done|finished|over)|completes|ends|has\s+finished)|when\s+done|(?:on|upon|at)\s+completion|"
               # "notify 'x' when that's done", "once that's saved, ..."
               r"(?:when|once)\s+(?:that|this|it)\s*(?:'s|is|has)\s+(?:done|finished|been\s+done|saved|written|exported|been\s+saved|loaded|been\s+loaded|ready)|"
               r"once\s+(?:it\s+is|it\s*'s|everything\s+is)\s+(?:done|finished)|when\s+the\s+run\s+ends|"
               # "when that file exists, write a short report": the write just said, done
               r"(?:when|once)\s+(?:that|this|the)\s+file\s+(?:exists|is\s+(?:there|written|saved|ready)|has\s+been\s+(?:written|saved))|"
               r"after\s+(?:everything|all\s+steps|it\s+all)|at\s+the\s+close|(?:when|once)\s+it\s*'s\s+(?:all\s+)?over|"
               r"(?:when|once)\s+(?:it|everything)\s+is\s+(?:all\s+)?over|"
               r"at\s+the\s+end\s+of\s+(?:the\s+)?(?:run|job|pipeline|workflow)|"
               r"(?:when|once)\s+(?:it|everything|the\s+(?:run|workflow|pipeline|job))\s+(?:stops|has\s+stopped|ends|is\s+over))\b")
# words that restrict or rule out: never context ("(excluding refunds)" asks for a filter no step makes)
# words that take a step back or leave something out ("dedup x.csv without normalizing it")
NEGATIONS = {"without", "except", "excluding", "excepting", "never", "nor"}
RESTRICTING = NEGATIONS | {"only", "just", "not", "no", "but",
               "keep", "keeping", "filter", "filtered", "drop", "dropping", "remove", "removing", "skip", "skipping",
               "ignore", "ignoring", "omit", "omitting", "sorted", "sort", "where", "first", "last", "latest", "recent",
               "previous", "current", "top", "bottom", "newest", "oldest"}
# what opens a statement about the user or the data ("We run a chain of bakeries ...", "Our analysts ...")
SUBJECT_WORDS = {"we", "our", "the", "this", "these", "my", "i", "i'm", "it", "they", "their", "we're", "each", "every"}
# "when both are done": the join after a parallel group (the next step follows every member)
JOIN_PHRASES = (r"\b(?:when|once|after|as\s+soon\s+as)\s+(?:both(?:\s+of\s+(?:them|those|these))?|all(?:\s+of\s+them)?|they"
                r"|(?:these|those)(?:\s+(?:two|NUM\d+))?|the\s+(?:two|NUM\d+)|each|everything"   # ("when both of those have finished")
                r"|the\s+[a-z]+\s+and\s+the\s+[a-z]+)\s+"   # "when the file and the chart are both done"
                r"(?:(?:are|is|have|has)\s+)?(?:both\s+|all\s+)?(?:been\s+)?(?:done|finished|finish|complete|completed|complete|through|over|ready|run|loaded|read|in|arrived|landed|land)\b")
PARALLEL = (r"\b(?:as\s+(?:NUM\d+\s+)?(?:independent|parallel|concurrent|separate)\s+(?:branches|tasks|tracks)|"   # "as two independent branches"
            # "then do two things side by side: ..."
            r"(?:do|run)\s+(?:these\s+|the\s+(?:next|following)\s+)?(?:NUM\d+|both)\s+(?:things|steps|tasks|jobs)\s+(?:side\s+by\s+side|in\s+parallel|"
            r"at\s+once|at\s+the\s+same\s+time|concurrently|simultaneously)|"
            r"in\s+parallel|at\s+the\s+same\s+time|at\s+once|simultaneously|concurrently|side\s+by\s+side|"
            r"in\s+tandem|independently|independent(?:\s+of\s+each\s+other)?|parallel|concurrent|meanwhile|in\s+the\s+meantime|"
            r"neither\s+(?:one\s+)?(?:needs|depends\s+on|waits\s+(?:for|on)|should\s+wait\s+(?:for|on))\s+the\s+other|"
            r"no\s+dependency\s+between\s+them|"
            # "(since / as) they don't depend on each other"
            r"(?:(?:since|as|because)\s+)?(?:they|the\s+two)\s+(?:don't|do\s+not)\s+(?:depend\s+on|need|wait\s+(?:for|on))\s+each\s+other|"
            r"(?:start|run|kick\s+off|do)\s+(?:both|the\s+two)\s+(?:reads|loads)\s+together)\b")
SEQUENCE = (r"\b(?:and\s+then|then|after\s+that|afterwards|afterward|next(?!-)|finally|followed\s+by|"
            r"subsequently|lastly|(?<!NUM\d )(?<!NUM\d\d )(?<!-)(?<!\ba\s)(?<!\ban\s)(?<!\bour\s)(?:first|second|third|fourth|fifth)(?!\s+(?:NUM|PCT)\d+)(?!-)|firstly|secondly|thirdly|fourthly|once\s+that\s+is\s+done|when\s+that\s+is\s+done|"
            r"at\s+the\s+end|after\s+this|and\s+after\s+that|once\s+done)\b|->|=>|→|⇒|⟶")

PURPOSE = (r"\bfor\s+(?:the\s+|a\s+|our\s+)?(?:[a-z][\w-]*\s+){1,3}?(?:detection|prediction|analysis|classification|"
           r"project|use\s+case|task|team|experiment|study|demo|pipeline)\s*(?=,)")
# the one-table steps that make a new version of their table
TABLE_TRANSFORMS = ("clean_data", "dedup", "impute", "normalize", "sample")
# "glue the autumn file onto the end of the spring one": each table of a stack by a word of its
# file's name (table_refs matches the words to the files)
NAMED_SIDES = (r"\bthe\s+[a-z]+\s+(?:file|one|table|log|export|sheet)\s+(?:onto|on\s+to|to|after|under|below|beneath)\s+"
               r"(?:the\s+(?:end|bottom)\s+of\s+)?the\s+[a-z]+\s+(?:file|one|table|log|export|sheet)\b")
# the steps that read two tables: a join pairs their rows on a key, a concat stacks them
TWO_TABLE_SIDES = {"join": ("left", "right"), "concat": ("first", "second")}   # their inputs, first side first
TWO_TABLE_STEPS = tuple(TWO_TABLE_SIDES)
# steps that train a model: "retry the training" / "every model" name any of them, and an
# evaluation or deployment after one is that model's
PART_STEPS = ("elastic_dlrm", "edit_pretrain", "mlora_finetune")   # the parts' runs
TRAINING_STEPS = ("train_model", "tune", *PART_STEPS)
# steps that act on a table named in their own phrase ("aggregate the logs in q.parquet by user")
DATA_VERB_STEPS = {"dedup", "impute", "clean_data", "normalize", "sample", "stats", "plot", "aggregate",
                   "split_data"}
# Words that need no step of their own: articles, pronouns, politeness, glue.
FILLERS = set("""
a an the it its it\s*'s them their they this that these those to of on in into onto with and or plus
for by from as at my our your me us we i you please also then so just now next first finally
which each every all both some any one ones either other another too well here there
using use via step steps stage result results output outputs data dataset datasets model models
set sets table tables file files new resulting fresh final current given whole entire
can could would should will shall want need like lets let's let go ahead do run perform kick off apply applies applying
start begin carry out make sure ok okay kindly be is are was were been being have has had
what how do does did done finished finishes finish complete completed completes end ends
up out over after before while once again each one
simple small basic quick quickly tiny short little simple standard default plain usual
good nice proper properly carefully
afterwards afterward later thereafter subsequently lastly oh um uh alright basically following
the same everything thing things stuff
pretrained trained fitted tuned cleaned processed prepared deduplicated normalized sampled
winning chosen selected best 's counts totals sums averages statistics stats checkpoint
checkpoints top winner i'd i'll i'm we'd we'll we're you'd like love wish grab back
pls plz ok hi hey hello thanks thank cheers so here there's team folks guys really actually
basically simply quick toy demo job jobs run runs pipeline workflow flow task tasks stuff
get got gets put puts produce make makes take takes separate separately individually
candidate candidates option options version versions variant variants baseline
configuration configurations config configs
somebody someone anybody anyone
plan here's here what's i've we've you've
u ur pls plz thx obviously course naturally of em 'em
whichever whatever one one's anything something both either two-step across written
is are be it\s*'s that's them they those their its everything finally eventually
note notes etc e.g i.e via per each apiece respectively overall at ensure ensuring say
made taken performed carried possible able give gives only way
goes
""".split())
# a column's figure the statistics step reports ("compute the median price", "the std of amount")
COLUMN_STATS = ("average", "avg", "mean", "median", "minimum", "maximum", "min", "max", "lowest", "highest",
                "std", "stdev", "standard")    # "standard deviation"
# the held-out data a figure is said to be measured on: "the accuracy on the test set", "the
# held-out f1" (a training's own figures are measured on the rows it was fitted on)
# ("the validation loss" is a training's own figure, the loss on its split's held-out part)
_HELD_OUT = r"test|testing|held-out|holdout|hold-out|unseen|out-of-sample"
HELD_OUT_WORDS = rf"(?:{_HELD_OUT})"
HELD_OUT_DATA = rf"(?:on|against|over)\s+(?:the\s+)?(?:{_HELD_OUT}|validation)\s+(?:set|split|data|part|portion|rows|fold)\b"
# a figure of held-out data, its metric in group m or n: "the accuracy on the test set", "its test f1"
HELD_OUT_FIGURE = rf"\b(?P<m>{METRIC_RX})\s+{HELD_OUT_DATA}|\b{HELD_OUT_WORDS}\s+(?P<n>{METRIC_RX})\b"
# the words before a group key: "per city", "by city", "for each / every city", "in each city",
# "across each city", "grouped by / on city" (the key is the word after them)
GROUP_KEY_MARK = r"(?:per|by|for\s+(?:each|every)|in\s+(?:each|every)|across\s+(?:each|every)|grouped\s+(?:by|on))"
# plurals after "across" / "each of the" that are no group key ("the mean across all rows")
NOT_GROUPS = r"(?:rows|records|entries|columns|files|tables|datasets|features|values|samples|items|runs|seeds|models|folds)"
# words that open a clause: an object, purpose or description never runs across them
CLAUSE_WORDS = set("""
and or then but while also before after when whenever if until unless once where so
""".split())
# head nouns after which unknown words are read as describing the data or model
HEAD_NOUNS = set("""
data dataset datasets table tables file files records record rows row samples sample examples
example entries readings logs log events measurements observations transactions values
model models classifier classifiers regressor predictor predictors estimator learner
corpus text documents set features columns column log adapters adapter
dump export extract snapshot tables sheet spreadsheet frame dataframe readings signals
telemetry metrics scores results report reports run job jobs runs
""".split())
# methods and models the catalog does not have: their presence is never read as a description
# (a domain word that is also part of a method's name stays out: "network" in "Telecom network
# logs", "online" in "Online gaming", "hive" in "Beekeeping hive health"; the method is caught by
# its own word, "neural", "download", "sql")
UNSUPPORTED = set("""
forest forests random-forest gradient boosted boosting xgboost lightgbm catboost svm svms svc
neural mlp cnn rnn lstm gru bert gpt transformer transformers tree-based nn
naive bayes bayesian kmeans k-means cluster clusters clustering dbscan pca tsne t-sne
umap arima prophet ridge lasso elasticnet elastic-net perceptron
deep ensemble stacking bagging adaboost autoencoder gan diffusion vae reinforcement
one-hot onehot encode encoding tokenize tokenizer translate translation
internet download downloaded url http https scrape crawl kaggle hub huggingface
sql database databases spark bigquery snowflake redshift postgres mysql mongodb
whisper asr speech-to-text text-to-speech tts ocr transcribe transcribes transcribed transcription
transcriptions transcript transcripts machine-translate machine-translated translated translating
segment segmentation segmenting detect-objects yolo embed embedding embeddings vectorize
rag retrieval scraping scraped
crawler crawling diagnose diagnosis prescribe prescription
medication dose dosage symptoms poem essay letter email-campaign
""".split())
# domain words that are also a method's name ("Tree nursery", "apple trees"): a method only next
# to a word that makes them one ("decision tree", "a tree model", "boosted trees")
METHOD_IF_NEAR = {"tree": frozenset("decision boosted gradient random regression model models classifier classifiers "
                                    "regressor ensemble train fit build learn trained fitted".split()),
                  "trees": frozenset("decision boosted gradient random regression model models classifier ensemble "
                                     "extra".split()),
                  # "count the rows per decision": a column; "a decision tree" names the method
                  "decision": frozenset("tree trees stump stumps forest forests list lists rule rules boundary model models "
                                        "classifier classifiers regressor learner".split())}
# tasks and domains named as nouns ("sentiment", "captioning", "load forecasting"): the subject of
# a request, accepted as its context where it is one (a lead-in or title, a description before a
# head noun, a purpose), and refused like a method anywhere else ("run sentiment analysis")
TASK_NOUNS = set("""
sentiment summarization summarisation caption captions captioning chatbot chatbots
anomaly anomalies outlier outliers forecasting forecasts
""".split())
# the head of a title ("Crop yield regression:", "Payroll anomaly check"): a title ending in one
# names the request's subject even when one of its words is also a verb ("crop", "filter")
TOPIC_HEADS = set("""
regression classification classifier model prediction predictions forecasting forecast analysis
pipeline project study check checks triage monitoring experiment refresh screen screening review
report job run workflow scoring ranking model models detection recommendations recommender
""".split())
# operations on data or models the catalog has no step for: left unused, never a description
UNMAPPED_VERBS = set("""
export exports save saves persist persists serialize serialise dump dumps publish publishes
deploy deploys serve serves notify notifies plot plots evaluate evaluates
remove removes delete deletes drop drops filter filters exclude excludes discard discards convert
converts transform transforms encode encodes rename renames reshape pivot fix fixes correct corrects
mask masks anonymize anonymise anonymize redact encrypt compress upload uploads download downloads
move moves copy copies parse parses extract extracts label labels annotate annotates classify
detect detects rank ranks sort sorts shuffle shuffles augment augments balance oversample
undersample resample reweight weight crop resize rotate flip trim truncate backfill interpolate
predict predicts infer generate-images summarise summarize translate forecast
overwrite overwrites overwriting overwritten
removed deleted dropped discarded excluded filtered eliminated purged stripped converted transformed
removing deleting dropping discarding excluding eliminating purging stripping
removal filtering deletion extraction conversion transformation redaction anonymization anonymisation
""".split())
# word beginnings that name a method or task the catalog lacks ("transcribing", "clustered")
UNSUPPORTED_PREFIXES = ("transcri", "translat", "cluster", "scrape", "scrapi", "crawl",   # ("scrap the repeats" discards them)
                        "diagnos", "prescri")

# "train it again", "fit the model again": a retraining of the model trained before (a trigger,
# and what makes the model's kind the earlier one's)
TRAIN_AGAIN = r"\b(?:train|fit)\s+(?:it|them|the\s+model|that\s+model)?\s*again\b"

# the rows of a removal, by what they record ("admissions", "trips"): a plural noun, not a
# table's parts or a pronoun
ROW_NOUN = (r"(?:rows|records|entries|(?!(?:values|columns|cells|fields|features|numbers|this|its|is|was|has|does|goes|us|as|"
            r"less|unless|across|yes|models|files|tables|runs|results)\b)[a-z]{2,}s)")
# or one of them, said with "any" ("discard any claim w/o a unit_model")
ANY_ROW = r"(?:(?<=any\s)|(?<=every\s)|(?<=each\s))(?!(?:value|column|cell|field|feature|one|row|record|entry)\b)[a-z]{3,}"
# "train it on 80% of the data and test it on the rest": the share trained on (group ``a``), said
# with the rest tested after it (the split's trigger and extractor read it)
TRAINED_SHARE = r"\bon\s+(?:the\s+)?(?:first\s+)?(?P<a>PCT\d+)\s+of\s+(?:the\s+)?(?:data|rows|records|it|them)\b"
REST_TESTED = r"(?=\s+and\s+(?:test|evaluate|score|check)\w*(?:\s+it|\s+them)?\s+on\s+the\s+(?:rest|remainder|remaining))"
# a count that ends its clause, its rows unsaid ("keep only the first 10,000, de-dupe")
COUNT_ENDS_CLAUSE = r"(?=\s*[,;.)]|\s*$|\s+(?:and|then)\b)"
# a value said to be there ("is not missing", "is filled in", "is present")
PRESENT = r"(?:not\s+(?:missing|null|empty|blank|nan|na)|present|filled\s+in|populated|non-?null|non-?empty|known|recorded)\b"
LACKING = r"(?:that\s+(?:are|is)\s+missing|missing|without|lacking|with\s+no|with\s+(?:a\s+|an\s+)?(?:null|missing|empty|blank))"   # ("records with null weight_kg")
# a column written as code names it, with an underscore ("lap_time"; never a plain noun: "the blank
# fares" could be any column), the words for its gaps before it, and after it ("billable_h nulls")
SNAKE_COLUMN = r"[a-z][a-z0-9]*_[a-z0-9_]+"
ZERO_GAP = r"(?:empty|missing|blank|null|nan)"
GAPS_AFTER = r"(?:nulls|blanks|gaps|nans|empties|blank|empty|null)"
# the column they lack, as a name: "a price", "the category", "a recorded snr_db", "lap_time"
# (never "a match": "deliveries without a match are dropped" says what an inner join drops)
MISSING_COLUMN = (r"(?:a|an|any|the)\s+(?:recorded\s+|valid\s+)?(?!(?:values?|data|entries|fields?|cells?|info|information|readings?"
                  r"|match|matching\s+[a-z_]+|counterpart|partner)\b)[a-z_]"
                  r"|(?:recorded\s+|valid\s+)?[a-z][a-z0-9]*_[a-z0-9_]+\b")
