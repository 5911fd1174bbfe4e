"""The phrases that name catalog steps, in priority order: an earlier, more specific phrase
claims its words first. Patterns run on the masked text of :mod:`raystack.workflow.nl.text`
(``FILE3``, ``NUM4``...); verbs ("impute the gaps") and nouns ("imputation", "a 10% sample",
"a report") both name a step, so requests written as arrows or bullet lists plan too.
"""

from __future__ import annotations

import re

from raystack.workflow.nl.lexicon import BEST_ONE as _BEST_NAMED
from raystack.workflow.nl.lexicon import NOUN_DETERMINERS
from raystack.workflow.nl.lexicon import (ANY_ROW, COLUMN_STATS, COUNT_ENDS_CLAUSE, PRESENT, REST_TESTED, TRAINED_SHARE, GAPS_AFTER, SNAKE_COLUMN, ZERO_GAP, GROUP_KEY_MARK, LACKING, MISSING_COLUMN, ROW_NOUN, HELD_OUT_FIGURE, HELD_OUT_WORDS, METRIC_RX,
                                          NOT_GROUPS, NUMLIST, TRAIN_AGAIN)

_SK = r"(?:[^\s,.;:]+\s+)"
BEST_ONE = re.sub(r"\(\?P<\w+>", "(?:", _BEST_NAMED)    # in a step's phrase, its groups unnamed


def skip(n: int, never: str = "") -> str:
    """Up to n words inside a phrase; they stay unmarked, for extractors and the accounting.
    ``never``: words the skip may not pass over (the phrase's own verb said again nearer its
    object: "For our project I'd like to load x.csv" is the load's, not the "for"'s)."""
    word = rf"(?:(?!(?:{never})\b){_SK})" if never else _SK
    return f"(?P<sk>{word}{{0,{n}}}?)"


LOAD_VERBS = r"load|loads|loaded|loading|read|reads|reading|ingest\w*|import\w*"


# the words of a model kind the catalog trains itself (never a recommender)
CATALOG_MODEL_WORDS = r"logistic|linear|knn|k-?nn|centroid|regression|regressions|classifiers?|regressors?|nearest"
MODEL_NOUN = r"(?:models?|classifiers?|regressors?|regression|predictors?|estimators?|learners?|k-?nn|knn|centroid|logistic|linear|nearest[\s-]+neighbou?rs?)"
# a model named by its method: "logistic regression", "k-nearest neighbours", "nearest centroid"
MODEL_KIND = (r"(?<![\w-])(?:logistic(?:\s+(?:regressions?|reg(?![\w-])))?|linear\s+(?:regressions?|reg(?![\w-]))|linear(?=\s+(?:models?|regressors?|fit)\b)|"
              r"linear(?=\s+(?:&|and|or|\+|/)\s+(?:k-?nn|logistic|centroid|nearest)\b)|k-?nn|k-nearest(?:[\s-]+neighbou?rs?)?|k\s+nearest[\s-]+neighbou?rs?"
              r"|(?<=\d\s)nearest[\s-]+neighbou?rs?|(?<=NUM\d\s)nn|(?<=NUM\d\d\s)nn|nearest[\s-]+centroid|centroid)(?![\w-])")   # "a 5-nearest-neighbour model"
ARROW = r"(?:->|=>|→|⇒|⟶)"
# what a request exercises rather than a model to evaluate ("synthetic data to test the pipeline")
SYSTEM_NOUNS = r"(?:pipeline|pipelines|setup|workflow|flow|code|system|tooling|infra|infrastructure|plumbing|wiring)"
AFTER_ARROW = r"(?:(?<=->\s)|(?<==>\s)|(?<=→\s)|(?<=⇒\s)|(?<=⟶\s))"   # right after an arrow and its space
# a step said without a verb, as list items and arrow chains write one ("- 80/20", "→ dupes out →"):
# where its item opens (with its bullet), and where it ends
# (a spaced en or em dash separates items as an arrow does: "shouts.csv – 80/20 – logistic")
ITEM_OPEN = rf"{AFTER_ARROW}|(?<=\s–\s)|(?<=\s—\s)|(?m:^)(?:[-*•]\s)?"
ITEM_END = rf"(?=\s*(?:$|[.;,)|]|{ARROW})|\s+[–—]\s)"
# "the duplicates are dropped", "duplicates removed", "should be imputed": an object, an
# optional auxiliary, then the step's verb as a participle
AUX = (r"(?:\s+(?:is|are|was|were|get|gets|got|should|shall|must|will|can|need|needs|has|have|had|to|then|also|first|all|"
       r"each|both|be|been|being))*")


def passive(objects: str, participles: str) -> str:
    """A step named object first: ``objects`` then an auxiliary, then one of ``participles``."""
    return rf"\b(?:{objects})(?P<sk>\s+(?:in|from|of|within)\s+FILE\d+)?{AUX}\s+(?:{participles})\b"


DUPLICATES = (r"duplicat\w*(?:\s+(?:rows|records|entries|lines|[a-z]+s\b))?|dup(?:es?|s)?\b(?:\s+[a-z]+s\b)?|repeat(?:ed)?\s+(?:rows|records|entries|lines|[a-z]+s\b)"
              r"|duplicate\s+[a-z]+\s+(?:rows|records|entries|lines)\b"      # "duplicate loan records"
              r"|double\s+(?:entries|[a-z]{3,}s\b)|(?<=the\s)repeats"     # ("the double enrolments")
              r"|(?:identical|exact[\s-]+duplicate)\s+(?:rows|records|entries|lines)\b|(?<=out\s)repeats\b"   # "drop identical rows", "filter out repeats"
              # "rows that appear twice", "any ticket that shows up more than once"
              r"|(?:[a-z]{2,}s\s+(?:that\s+|which\s+)?(?:appear|occur|show\s+up)|(?:any|every|each)\s+[a-z]{2,}\s+(?:that|which)\s+(?:appears|occurs|shows\s+up)"
              r"|[a-z]{2,}s\s+(?:appearing|occurring|showing\s+up))\s+(?:twice|more\s+than\s+once|two\s+or\s+more\s+times)\b")
GAPS = (r"(?:missing|null|nan|empty|blank|na)\s*(?:values?|entries|cells|fields|data|readings|amounts)?"
        r"|gaps|blanks|holes|nulls|nans|missings")
# words a removal of duplicates never passes over to reach them: "drop nulls and duplicates" is
# two removals, the nulls' and the duplicates'
GAP_WORDS = r"nulls?|nans?|missing|empty|blank|incomplete|na"
ZERO = r"(?:zeros?|NUM\d+)\b"
# a verb that is no noun here: not after a determiner ("its own export: a.csv")
NOT_A_NOUN = "".join(rf"(?<!\b{w}\s)" for w in NOUN_DETERMINERS)
# what one report covers, said after it: "one report over the four cities", "a report covering all three sites"
# ("... on the regions": the things its loads hold, plural, after a determiner)
REPORT_COVERS = (r"(?:\s+(?:over|on|for|covering|across)\s+(?:all\s+)?(?:(?:the\s+|those\s+|these\s+)?(?:NUM\d+|both|all)\s+|(?:the|those|these)\s+)"
                 r"(?!(?:is|was|has|does|results|metrics|scores|models|adapters)\b)[a-z]+s\b)?")
ROW_ORDER = r"first|last|newest|latest|most\s+recent|final|oldest|earliest"     # rows named by their place in the file
# the rows by the data's own word for them ("the games", "the batches"), never its faults
ROW_THINGS = rf"(?!(?:duplicates|dupes|nulls|nans|blanks|gaps|holes|missings|things|bits|details|versions|times)\b){ROW_NOUN}"
BAD_ROWS = (r"(?:rows|records|entries|lines|anything|everything|any\s+row|any\s+record|every\s+row|every\s+record|each\s+row"
            rf"|frames|samples|observations|readings|measurements|cases|transactions|{ROW_THINGS})"     # ("Frames with any missing value were discarded")
            r"\s+(?:with|containing|that\s+have|that\s+has)\s+(?:a\s+|an\s+|any\s+)?(?:blanks|nulls|nans|gaps|missing|null|nan|empty|blank|"
            r"incomplete|invalid)\s*(?:values?|entries|entry|fields?|cells?|data|readings?|measurements?)?|(?:incomplete|invalid|bad|broken|corrupt(?:ed)?|"
            rf"malformed|junk|garbage|bogus|dirty|faulty|erroneous|unusable)\s+(?:rows|records|entries|lines|{ROW_THINGS})"
            # "rows where anything is missing": any value, not a named column's
            r"|(?:rows|records|entries|any\s+row|any\s+record|every\s+row|each\s+row)\s+(?:where|in\s+which)\s+"
            r"(?:anything|something|any\s+(?:value|field|column|cell)|a\s+value)\s+(?:is|are|'s)\s+(?:missing|null|empty|blank|nan)"
            # "rows where age is missing", "records whose amount is null": that column's (the extractor's)
            rf"|(?:rows|records|entries|{ROW_THINGS}|(?:any|every|each|a)\s+(?:row|record|entry))\s+(?:where|whose|in\s+which)\s+(?:the\s+|either\s+)?[a-z_]\w*"
            r"(?:(?:\s*,\s*[a-z_]\w*)*\s*,?\s+(?:or|and)\s+[a-z_]\w*)?(?:\s+columns?)?\s+(?:is|are)\s+"   # "where a or b is empty"
            r"(?:missing|null|empty|blank|nan|na)\b"
            r"|(?:rows|records|entries)\s+that\s+(?:aren't|are\s+not|isn't|is\s+not)\s+(?:complete|filled\s+in)"   # "rows that aren't complete"
            # "any row with a blank length_m or panels": the row missing any of those columns
            r"|(?:rows|records|any\s+row|any\s+record|every\s+row|each\s+row)\s+(?:with|having)\s+(?:a|an|any)\s+(?:missing|null|empty|blank)\s+"
            r"[a-z_]\w*(?:\s*,\s*[a-z_]\w*)*\s*,?\s+or\s+[a-z_]\w*(?!\s+(?:values?|fields?|cells?|entries|data)\b)"
            # formal: "readings lacking stage_m", "rows for which ring_width_mm was not recorded" (a column's own name)
            r"|(?:rows|records|entries|readings|samples|observations|measurements)\s+(?:lacking|without)\s+(?:a\s+|an\s+|any\s+)?"
            r"(?:value\s+(?:for|in)\s+)?[a-z]\w*_\w+"
            r"|(?:rows|records|entries|readings|samples|observations)\s+(?:for|in)\s+which\s+(?:the\s+)?[a-z]\w*_\w+\s+(?:was|were|is|are)\s+"
            r"(?:not\s+recorded|missing|absent|empty|blank|not\s+given)\b")
REMOVED = (r"dropped|removed|deleted|discarded|eliminated|filtered(?:\s+out)?|excluded|thrown\s+(?:away|out)|"
           r"stripped|purged|taken\s+out|weeded\s+out|cut|pruned")
# what the object of a cleanup never passes over: "clean up weather.csv and plot temp" plots the
# temperature column, it deletes nothing
CLEANUP_NEVER = r"FILE\d+|and|then"
PER_COLUMN = r"(?:\s+(?:per|for\s+(?:each|every))\s+column\b)?"    # "summary statistics per column": every column's
_STAT = rf"(?:standard\s+deviation|{'|'.join(COLUMN_STATS[:-1])})"    # a statistic of a column, by name
# (catalog step, pattern) in priority order: an earlier, more specific phrase claims its words
TRIGGERS: list[tuple[str, str]] = [
    ("cleanup", rf"\b(?:clean\s*up|clean-up|cleanup|clean|remove|delete|erase|wipe|purge|clear(?:\s+out|\s+away)?|empty|tidy(?:\s+(?:up|away))?|get\s+rid\s+of)\s+{skip(3, CLEANUP_NEVER)}"
                r"(?:tmp|temp|temporary|scratch|intermediate|staging)\b(?:\s+(?:files?|director(?:y|ies)|folders?|dirs?|data|outputs?|space|area))?"
                r"(?:\s+(?:up|away)\b)?"      # ("tidy the temp folder away")
                # "clear the temp files out of scratch"
                r"(?:\s+(?:out\s+)?(?:of|from|in)\s+(?:the\s+)?scratch(?:\s+(?:space|area|folder|dir(?:ectory)?))?\b)?"),
    # "clean the scratch files up", "tidy the temp folder away": the particle after the object
    ("cleanup", r"\b(?:clean|tidy|clear)\s+(?:the\s+|our\s+|its\s+|all\s+(?:the\s+)?)?(?:tmp|temp|temporary|scratch|intermediate|staging)\s+"
                r"(?:files?|director(?:y|ies)|folders?|dirs?|data|outputs?|space|area)\s+(?:up|away|out)\b"),
    ("cleanup", passive(r"(?:the\s+|our\s+|its\s+)?(?:(?:run|job|pipeline|workflow)\s+'s\s+)?(?:tmp|temp|temporary|scratch|intermediate)"
                        r"(?:\s+(?:files?|director(?:y|ies)|folders?|dirs?|data|outputs?|space|area))?",   # "scratch space must be cleared", "scratch gets emptied"
                        r"removed|deleted|cleaned(?:\s+up)?|wiped|purged|cleared(?:\s+(?:out|away))?|tidied(?:\s+(?:up|away))?|erased"
                        r"|disposed\s+of|emptied|discarded")),
    ("cleanup", r"\b(?:(?:the\s+)?(?:tmp|temp|temporary|scratch)\s+(?:files?\s+|dir(?:ectory)?\s+|folder\s+)?)?"     # "scratch cleanup"
                r"(?:clean\s*up|clean-up|cleanup|tidy\s+up)\b(?!\s+(?:the\s+|a\s+)?(?:data|dataset|table|records|rows|values|text|FILE\d+)\b)"),
    ("load_adapters", rf"\b(?:load|loads|loading|read|restore|open|take|use|using|reuse|start\s+from|starting\s+from|from|pick\s+up)\s+"
                      rf"{skip(3)}adapters?\s+(?:(?:saved|stored|kept|exported|written|that\s+(?:are|were)\s+saved)\s+)?(?:at|in|from|under|into)\s*FILE\d+"),
    ("load_adapters", passive(r"(?:the\s+)?(?:saved\s+|stored\s+|exported\s+)?adapters?\s+(?:saved\s+|stored\s+)?(?:at|in|from|under)\s+FILE\d+",
                              r"loaded|read|restored|reloaded")),
    ("load_adapters", r"\b(?:saved\s+|stored\s+|exported\s+)?adapters?\s+(?:saved\s+|stored\s+)?(?:at|in|under)\s+FILE\d+"),
    ("load_checkpoint", rf"\b(?:load|read|restore|open|take|use|using|start\s+from|starting\s+from|from|resume\s+from|begin\s+(?:with|from)|on|off)\s+"
                        rf"{skip(3)}checkpoints?\s+(?:at|in|from|under|stored\s+(?:at|in))?\s*FILE\d+"),
    # "we've got a base checkpoint saved at ./ckpt/b", "the base checkpoint is at ./ckpt/b": where it is
    # ("the base is the checkpoint sitting in ./ckpt/b": the base named first)
    ("load_checkpoint", r"\b(?:(?:the|our|a|my)\s+base(?:\s+model)?\s+(?:is|will\s+be|should\s+be)\s+)?(?:the|our|a|my)\s+(?:base\s+)?(?:checkpoint|ckpt)\s+(?:(?:is|was)\s+)?(?:(?:saved|stored|sitting|kept)\s+)?"
                        r"(?:at|in|under)\s+FILE\d+"),
    ("edit_pretrain", r"\b(?:train|run|use|using)\w*\s+" + skip(3) + r"(?:llm|language\s+models?)\b(?!\s+adapters)"),
    # "train a small transformer from scratch": a pretraining (a transformer as a classifier of a
    # table is a method the catalog lacks)
    ("edit_pretrain", r"\b(?:train|trains|training|build|builds)\s+" + skip(3) + r"(?:transformers?|gpts?|gpt-?\d|causal\s+lms?)\s+from\s+scratch\b"),
    ("edit_pretrain", r"\bpre-?train(?:s|ing)?\b|\bpre-training\b|\bpretraining\b"
                      r"|(?<!the )(?<!a )(?<!an )(?<!that )(?<!this )\bpre-?trained\b(?!\s+(?:checkpoint|model|weights|base|llm))"),
    # "train an EDiT model on corpus/": the method's model is a pretraining
    ("edit_pretrain", r"\b(?:train|trains|training|build|run)\s+(?:a|an|the)\s+(?:a-?edit|edit|diloco)\s+(?:model|run|job|lm)\b"),
    # "the EDiT checkpoint from ./ckpt": a checkpoint an earlier run made, no pretraining asked for
    ("edit_pretrain", r"\b(?:a-?edit|edit|diloco)\b(?!-?\s*(?:pretrained\s+)?(?:checkpoints?|weights|base)\b)(?:\s+local\s+sgd)?|\blocal\s+sgd\b"),
    ("mlora_finetune", r"\b(?:fine(?:-|\s+)?tun\w*|finetun\w*)\b"),
    ("mlora_finetune", r"\b(?:train|trains|training|trained|fit|learn|build|create|make)\s+(?P<sk>(?:[^\s.;:]+\s+){0,8}?)(?:lora|dora)?\s*adapters?\b"),
    ("mlora_finetune", r"\bmlora\b|\b(?:lora|dora)\s+adapters?\b"),
    ("serve_adapters", rf"\b(?:serve|serves|serving|deploy\w*|host|hosts|expose|publish)\s+{skip(3)}adapters?\b"
                       r"|(?<!with )(?<!using )(?<!via )(?<!on )(?<!through )(?<!behind )(?<!over )(?<!in )\bray\s+serve\b"
                       r"|\b(?:put|place|expose|host|publish)\s+(?:them|it|the\s+adapters)\s+(?:behind|on|with|via|through|using|over)\s+(?:ray\s+)?serve\b"
                       r"|\b(?:they|the\s+adapters)\s+(?:go|get\s+put|are\s+put|get\s+deployed|are\s+deployed|get\s+served|are\s+served)\s+"
                       r"(?:behind|on|with|via)\s+(?:ray\s+)?serve\b"),
    ("evaluate_adapters", rf"\b(?:evaluat\w*|eval|evals|assess\w*|score|test|validate|measure|benchmark|check)\s+{skip(4)}adapters?\b(?:\s+do)?"
                          r"|\badapter\s+evaluations?\b|\bevaluations?\s+of\s+(?:the\s+)?adapters\b"),
    # (not "train a logistic regression for recommended": a model the catalog has, for a column)
    ("elastic_dlrm", rf"\b(?:train|trains|training|re-?train|fit|fits|run|learn|build)\w*\s+{skip(5, CATALOG_MODEL_WORDS)}(?:dlrm|recommend\w*|recsys|"
                     r"click-?through(?:-rate)?|ctr|criteo|ad\s+click)\b(?:\s+(?:models?|training|prediction))?"),
    ("elastic_dlrm", r"\belastic(?:ally)?\b(?:\s+(?:training|dlrm))?|\bdlrm\b(?:\s+(?:models?|training))?"),
    ("dedup", r"\bde-?dup\w*\b|\bdeduplicat\w*\b|\b(?:duplicate|dupe)s?\s+removal\b|\bremoval\s+of\s+(?:the\s+)?(?:duplicates|dupes)\b"
              # "following removal of duplicate entries", "the elimination of repeated records"
              r"|\b(?:removal|elimination|exclusion|deletion)\s+of\s+(?:the\s+|any\s+|all\s+)?(?:duplicated?|repeated)\s+(?:rows|records|entries|events|lines)\b"),
    ("clean_data", r"\b(?:missing[\s-]+values?|nulls?|nans?|na|incomplete[\s-]+rows?|bad[\s-]+rows?)\s+removal\b"),
    ("dedup", rf"\b(?:drop|drops|dropping|remove|removes|removing|deleting|discarding|eliminating|delete|discard|eliminate|filter\s+out|get\s+rid\s+of|strip|kill|ditch|zap|scrap)\s+{skip(2, GAP_WORDS)}(?:(?:[a-z]+-)?duplicat\w*|(?<=the\s)repeats\b)"
              r"(?:\s+(?:rows|records|entries|lines|transactions|events|clicks?))?"),
    # a second object of the removal: "remove duplicates and rows with missing values", "drop
    # incomplete rows and duplicates" (the second was taken for the first step's object)
    ("clean_data", r"(?:(?<=duplicates and )|(?<=dupes and )|(?<=duplicate rows and )|(?<=duplicates, and )"
                   r"|(?<=no duplicates or )|(?<=no dupes or )|(?<=no duplicate rows or ))"   # "make sure there are no duplicates or nulls"
                   r"(?:the\s+|any\s+|all\s+)?(?:rows\s+(?:with|containing|that\s+have)\s+(?:missing|null|nan|empty|blank)\s*(?:values?|entries|fields|cells|data)?"
                   r"|(?:incomplete|invalid|bad|broken|corrupt(?:ed)?|malformed)\s+(?:rows|records|entries)|nulls|nans|missing\s+values|empty\s+rows)\b"),
    ("dedup", r"(?:(?<=values and )|(?<=nulls and )|(?<=nans and )|(?<=rows and )|(?<=records and )|(?<=values, and )"
              r"|(?<=no missing values or )|(?<=no nulls or )|(?<=no nans or ))"
              r"(?:the\s+|any\s+|all\s+)?(?:duplicates|dupes|duplicate\s+(?:rows|records))\b"),
    ("dedup", r"\b(?:has|have|contains?|there\s+are)\s+(?:some\s+|a\s+few\s+)?(?:dupes|duplicates|duplicate\s+rows)(?:\s+in\s+it)?\s*,?\s*"
              r"(?:so\s+|and\s+)?(?:get\s+rid\s+of|remove|drop|delete|strip|toss)\s+(?:those|them|these)\b"),   # "has dupes in it, get rid of those"
    # "check x.csv for duplicates and remove them", "find the dupes in x.csv and drop them": the
    # removal said after the search (dedup's extractor reads "and remove them")
    ("dedup", rf"\b(?:check|checks|checking|find|finds|finding|look\s+for|looking\s+for|search\s+for|identify|detect|spot)\s+"
              rf"{skip(3)}(?:any\s+|the\s+|all\s+)?(?:{DUPLICATES})(?=(?:\s+(?:rows|records|entries))?(?:\s+in\s+(?:FILE\d+|it))?\s*,?\s+"
              rf"(?:and\s+)?(?:then\s+)?(?:get\s+rid\s+of|remove|drop|delete|discard|strip|toss)\s+(?:them|those|these|any|all\s+of\s+them)\b)"),
    ("dedup", r"\b(?:make\s+sure|ensure)\s+(?:that\s+)?(?:there\s+are\s+|it\s+has\s+)?no\s+(?:duplicates|dupes|duplicate\s+(?:rows|records))\b"),
    # "make sure there are no missing values" planned the load alone
    ("clean_data", r"\b(?:make\s+sure|ensure)\s+(?:that\s+)?(?:there\s+are\s+|it\s+has\s+)?no\s+(?:missing\s+(?:values|data|entries)|nulls|nans|"
                   r"null\s+values|incomplete\s+(?:rows|records))\b"),
    ("dedup", r"\b(?:keep|retain|take)\s+(?:only\s+)?(?:the\s+)?(?:unique|distinct)\s+(?:rows|records|entries)\b"
              r"|\b(?:make|making)\s+(?:the\s+)?(?:rows|records)\s+unique\b|\bunique-?ify\b"
              # verbless, as an arrow step or a list item: "x.csv → unique rows only → ..."
              rf"|(?:{ITEM_OPEN}|(?<=[,;:]\s))(?:only\s+)?(?:unique|distinct)\s+(?:rows|records|entries)(?:\s+only)?"
              rf"{ITEM_END}"),
    ("dedup", rf"\b(?:drop|drops|dropping|remove|removes|removing|deleting|discarding|eliminating|delete|discard|eliminate|filter\s+out|get\s+rid\s+of|strip|purge|"
              rf"exclude|excluding|ignore|ignoring|omit|omitting|skip|skipping|"
              rf"weed\s+out|take\s+out|cut|throw\s+(?:away|out)|throwing\s+(?:away|out)|toss|tossing|strip\s+out|strip\s+away|clear\s+out)\s+{skip(2, GAP_WORDS)}(?:{DUPLICATES})"),
    # "keep one copy of each row", "keep a single instance of every record"
    ("dedup", r"\b(?:keep|keeping|retain|leave)\s+(?:only\s+)?(?:one|a\s+single)\s+(?:copy|instance|occurrence)\s+of\s+(?:each|every)\s+(?:row|record|entry|line)\b"),
    ("dedup", passive(rf"(?:{DUPLICATES})(?:\s+(?:rows|records|entries|lines|[a-z]+s))?", REMOVED)),
    # "... contain duplicates, which are to be removed"
    ("dedup", rf"\b(?:contains?|has|have|holds?|includes?)\s+(?:some\s+|a\s+few\s+|many\s+)?duplicates\s*,\s*which\s+"
              rf"(?:are|should\s+be|must\s+be|are\s+to\s+be|will\s+be)\s+(?:{REMOVED})\b"),
    # verbless, as list items and arrow steps write them: "- dupes out", "any row with a gap goes"
    # (opening their item: "keep rows with gaps out" is no removal of its own)
    ("dedup", rf"(?:{ITEM_OPEN}|(?<=[,;:)]\s))(?:the\s+|any\s+|all\s+)?(?:{DUPLICATES})\s+(?:out|gone|go|goes)\b"
              rf"{ITEM_END}"),
    ("clean_data", rf"(?:{ITEM_OPEN}|(?<=[,;:)]\s))(?:the\s+|all\s+)?(?:{BAD_ROWS})\s+(?:out|gone|go|goes)\b"
                   rf"{ITEM_END}"),
    ("impute", r"\bimput\w*\b(?:\s+(?:the\s+|any\s+)?(?:missing|null|nan)\s*(?:values?|entries|cells|data)?)?"),
    # "gaps → zeros", "blanks -> median": what fills the gaps, as an arrow says it
    ("impute", rf"\b(?:{GAPS})\s*(?:{ARROW}|:?\s*=)\s*(?:zeros?|NUM\d+|(?:column\s+)?(?:means?|medians?|averages?))\b"),   # "gaps = 0", "nulls := 0"
    ("impute", rf"\b(?:fill|fills|filling|replace|replaces|patch|patches|substitute|plug|plugs|complete)\s+(?:in\s+)?{skip(2)}(?:{GAPS})\b"
               # "swap any blanks for the column mean"
               rf"|\b(?:swap|swaps|switch|switches)\s+(?:any\s+|all\s+|the\s+)?(?:{GAPS})\s+(?=(?:for|with)\s+(?:the\s+)?(?:column\s+)?(?:means?|medians?|averages?|zeros?|NUM\d+)\b)"),
    # "use the median for missing entries", "substitute the column mean for any blanks": the value put in the gaps, said first
    ("impute", rf"\b(?:use|put|insert|substitute|write)\s+(?:the\s+|each\s+column's\s+|the\s+column's\s+)?(?:column\s+)?(?:means?|medians?|averages?|zeros?)\s+"
               rf"(?:for|in|into)\s+(?:the\s+|any\s+|all\s+|every\s+)?(?:{GAPS})\b"),
    # "x.csv has gaps; fill them with medians": the gaps said before, the fill said with its value
    ("impute", r"\b(?:fill|fills|filling|plug|plugs|patch|patches)\s+(?:(?:them|those|these|it|the\s+gaps|the\s+holes)\s+)?(?:in\s+)?"
               r"(?=(?:with|using)\s+(?:the\s+)?(?:column\s+)?(?:means?|medians?|averages?|zeros?|NUM\d+)\b)"),
    ("impute", passive(rf"(?:the\s+)?(?:{GAPS})", r"filled(?:\s+in)?|imputed|replaced|patched|plugged")),
    # "gaps in no2_ppb are to be replaced by that column's mean": the column between (read by the extractor)
    ("impute", rf"\b(?:the\s+)?(?:{GAPS})\s+in\s+(?P<sk>(?:the\s+)?[a-z_][a-z0-9_]*(?:\s+column)?){AUX}\s+(?:filled(?:\s+in)?|imputed|replaced|patched|plugged)\b"),
    # a named column's gaps set to zero, in the words people use for it: "Where feed_kg is empty, put 0",
    # "Set the resulting missing kwh_total values to 0", "Empty salt_t cells are set to zero", "billable_h
    # nulls set to 0", "an empty fault_count treated as 0" (a column named by a plain noun, "the blank
    # fares", stays refused: which column would be a guess)
    ("impute", rf"\bwhere\s+(?:the\s+)?{SNAKE_COLUMN}\s+(?:is|are)\s+{ZERO_GAP}\s*,?\s*(?:put|use|enter|write|insert|fill\s+in|set\s+it\s+to|make\s+it)\s+{ZERO}"
               rf"|\bset\s+(?:the\s+|any\s+|all\s+)?(?:resulting\s+)?{ZERO_GAP}\s+{SNAKE_COLUMN}(?:\s+(?:values?|cells?|entries|fields?))?\s+to\s+{ZERO}"
               rf"|(?:\b(?:the|an?|any|all)\s+)?\b{ZERO_GAP}\s+{SNAKE_COLUMN}(?:\s+(?:values?|cells?|entries|fields?))?\s+(?:(?:are|is|get|gets|should\s+be|must\s+be|to\s+be|be)\s+)?"
               rf"(?:(?:set|treated|counted|taken)\s+(?:to|as)|counts?\s+as)\s+{ZERO}"
               # "a missing salt_t means nothing was spread, so make it 0": why the gap is a zero, then the fill
               rf"|(?:\b(?:the|an?|any)\s+)?\b{ZERO_GAP}\s+{SNAKE_COLUMN}\s+means\s+(?:[\w']+\s+){{1,6}}?,?\s*(?:so\s+|and\s+)?"
               rf"(?:make\s+it|set\s+(?:it|them|those(?:\s+cells)?)\s+to|treat\s+(?:it|them)\s+as|fill\s+(?:it|them)\s+with)\s+{ZERO}"
               rf"|\b{SNAKE_COLUMN}\s+{GAPS_AFTER}\s+(?:(?:are|get)\s+)?(?:set\s+to|to|as|{ARROW}|=)\s*{ZERO}"),
    # "mean-fill no2_ppb", "median-fill the gaps": the fill said as one verb
    ("impute", r"\b(?:mean|median|average)-fill(?:s|ed|ing)?\b"),
    # "zero out the blanks" (zero reads as a number)
    ("impute", rf"\bNUM\d+\s+out\s+(?:the\s+|any\s+|all\s+)?(?:{GAPS})\b"),
    # "put zeros in the empty cells", "write the median into missing fields": the fill said first
    ("impute", rf"\b(?:put|puts|putting|insert|inserts|inserting|write|writing)\s+(?=(?:a\s+|the\s+)?(?:column\s+)?(?:zeros?|NUM\d+|means?|medians?|averages?)"
               rf"\s+(?:in|into)\s+(?:(?:the\s+|any\s+|all\s+)?(?:{GAPS})|them|those)\b)"),
    # "drop rows without a price", "remove records lacking an email", "drop admissions with no
    # discharge_ward", "drop the rows that are missing the category": the rows missing that column
    ("clean_data", r"\b(?:drop|drops|dropping|remove|removes|removing|delete|discard|exclude|filter\s+out|get\s+rid\s+of|throw\s+(?:away|out)|toss)\s+"
                   rf"(?:the\s+|all\s+|any\s+|every\s+)?(?:{ROW_NOUN}|{ANY_ROW}|(?<=any\s)(?:row|record|entry)|(?<=every\s)(?:row|record|entry))"
                   rf"\s+{LACKING}\s+(?={MISSING_COLUMN})"),
    # "any row without a stop_reason goes", "- rows lacking a unit_model go": the removal said after its object
    ("clean_data", rf"(?:(?<=[,;:)]\s)|{ITEM_OPEN})(?:any|every|each|all)\s+(?:row|record|entry|rows|records|entries)\s+{LACKING}\s+"
                   rf"(?:a\s+|an\s+|the\s+|any\s+)?{SNAKE_COLUMN}(?:\s+(?:value|entry|time|date|field))?\s+(?:goes|go|is\s+dropped|are\s+dropped|gets\s+dropped|is\s+removed|are\s+removed)\b"),
    # "Admissions lacking a recorded discharge_ward are to be excluded": the same, object first
    ("clean_data", passive(rf"(?:the\s+|all\s+|any\s+)?{ROW_NOUN}\s+{LACKING}\s+(?={MISSING_COLUMN})"
                           r"(?:(?:a|an|any|the)\s+)?(?:recorded\s+|valid\s+)?[a-z_]\w*(?:\s+(?:values?|entry|entries|field))?", REMOVED)),
    ("clean_data", rf"\b(?:drop|drops|dropping|remove|removes|removing|deleting|discarding|eliminating|delete|discard|exclude|eliminate|filter\s+out|get\s+rid\s+of|throw\s+away|skip)\s+{skip(3)}"
                   r"(?:missing|null|nulls|nan|nans|empty|incomplete|blank|na|invalid)\b(?:\s+(?:values?|entries|cells|fields|rows|records|data))?"),
    ("clean_data", passive(rf"(?:the\s+)?(?:{BAD_ROWS}|nulls|nans)", REMOVED + r"|cleaned(?:\s+(?:up|out))?")),
    # ("bin any row where something's blank": bin as in the rubbish bin, its object the bad rows)
    ("clean_data", rf"\b(?:drop|remove|discard|exclude|excluding|filter\s+out|throw\s+(?:away|out)|weed\s+out|get\s+rid\s+of|ditch|toss|bin|chuck(?:\s+out|\s+away)?|lose|"
                   rf"ignore|ignoring|omit|omitting|skip|skipping|leave\s+out|leaving\s+out|delete|strip\s+out|clear\s+out|purge)\s+{skip(2)}(?:{BAD_ROWS})"),
    # "keep only rows where consent is not missing", "keep the records whose email is filled in": the
    # rows missing that column dropped (the extractor reads the column)
    ("clean_data", r"\b(?:keep|keeps|keeping|retain|retaining)\s+(?:only\s+|just\s+)?(?:the\s+)?(?:rows|records|entries|cases)\s+"
                   r"(?:where|whose|in\s+which)\s+(?:the\s+)?[a-z_]\w*(?:\s+column)?\s+(?:is|are)\s+" + PRESENT + r"(?:\s+only)?"),
    # "keep only complete rows", "keep just the complete records": the rows with a gap dropped
    ("clean_data", r"\b(?:keep|keeping|retain|use)\s+(?:only|just)\s+(?:the\s+)?(?:complete|fully\s+populated)\s+(?:rows|records|entries|cases)\b"
                   r"|\b(?:keep|keeping|retain)\s+(?:the\s+)?(?:complete|fully\s+populated)\s+(?:rows|records|entries|cases)\s+only\b"),
    ("clean_data", r"\b(?:tidy|scrub|sanitize|sanitise|cleanse)\w*\b(?!\s+up\s+(?:the\s+)?(?:tmp|temp|scratch))"),
    ("clean_data", r"\bdropna\b|\bclean(?:s|ed|ing)?\s+up\s+(?:the\s+)?(?:data|dataset|table|records|rows)\b|\bclean(?:s|ed|ing)?\s+up(?=\s+FILE\d+)|(?<!-)\bclean(?:s|ed|ing)?\b(?!\s*up)(?!-)"
                   # ("Gutter cleaning business", "window cleaning rounds": a trade, no cleaning of the data)
                   r"(?!\s+(?:business|businesses|company|firm|service|services|crew|crews|contractor|team|rounds?|agency|van))"),
    # "convert the features to z-scores": what the values are turned into names the scaling
    ("normalize", r"\b(?:convert|converts|converting|transform|transforms|transforming|turn|turns|turning)\s+(?:the\s+|all\s+|every\s+)?"
                  r"(?:numeric\s+|numerical\s+|input\s+)?(?:features?|columns?|values|inputs|variables|data|readings)\s+(?:in)?to\s+z-?scores?\b"),
    # "on a log scale", "a linear scale": the noun, a chart's axis, is no scaling of the data
    ("normalize", r"\b(?:normali[sz]\w*|standardi[sz]\w*|re-?scal\w*|(?<!log )(?<!logarithmic )(?<!linear )(?<!a )scale|scales|scaled|scaling|z-?scor\w*|min-?max)\b"
                  r"(?:\s+(?:the\s+|all\s+)?(?:numeric\s+|numerical\s+|feature\s+|input\s+)?(?:features|columns|values|inputs|variables))?"),
    # "the price and area columns are normalised": named columns, said first
    ("normalize", passive(r"(?:the\s+)?[a-z_]\w*(?:\s*,\s*[a-z_]\w*)*\s*,?\s*(?:and|&)\s+[a-z_]\w*\s+columns",
                          r"normali[sz]ed|standardi[sz]ed|scaled|rescaled|z-scored")),
    ("normalize", passive(r"(?:the\s+)?(?:numeric\s+|numerical\s+|input\s+)?(?:features|columns|values|inputs|variables|data)",
                          r"normali[sz]ed|standardi[sz]ed|scaled|rescaled|z-scored")),
    # "... -> 75/25 -> ...", "- 80/20" or "2. 80/20" as a list's item
    ("split_data", rf"(?:{ITEM_OPEN}|(?<=[,;:.)|]\s))RATIO\d+{ITEM_END}"),     # ("x.csv | zscore | 80/20 | kNN")
    # "a quarter is held out", "25% of the loans are set apart for testing", "a quarter is kept for testing"
    ("split_data", rf"\b(?:a\s+|the\s+)?PCT\d+(?:\s+of\s+(?:it|that|this|the\s+[a-z]+(?:\s+[a-z]+)?))?{AUX}\s+(?:held\s+(?:out|back|aside)|set\s+(?:aside|apart)|"
                   r"kept\s+(?:back|aside|apart)|put\s+aside|reserved|withheld|kept(?=\s+(?:for|as)\s+(?:a\s+|the\s+)?(?:test|testing|evaluation|validation)))\b"),
    # "evaluate it on a held-out 20%", "on a 20% held-out set": a share held out is the split
    # "hold 20% out", "set a quarter aside": the share between the verb and its particle
    ("split_data", r"\b(?:hold|holds|holding|keep|keeps|keeping|set|sets|setting|put|putting|carve|carving|leave|leaving|lay|laying)\s+"
                   r"PCT\d+(?:\s+of\s+(?:it|them|the\s+[a-z]+))?\s+(?:out|aside|back|apart|off|unseen|to\s+(?:one|the)\s+side)\b"
                   r"(?:\s+to\s+test\s+(?:on|with)\b)?"     # "hold out 25% to test with"
                   r"|\btest\s+(?:it\s+)?on\s+(?:a|the)\s+PCT\d+\s+(?:slice|share|portion|part|chunk|subset)\b"),   # "test on a 20% slice"
    ("split_data", r"\bheld[\s-]out\s+PCT\d+\b|\bPCT\d+\s+held[\s-]out\b(?:\s+(?:set|split|portion|part|sample|subset))?"),
    # "churn.csv -> logistic -> 30% test", "x.csv, 30% test, knn": a share named as an item is the split's
    # "30% goes to test", "a quarter of the rows as test": the test share, said as an item
    ("split_data", r"(?:(?<=[,:;]\s)|^)(?:a\s+|the\s+)?PCT\d+(?:\s+of\s+(?:it|them|the\s+(?:data|rows|records)))?\s+"
                   r"(?:(?:goes|go|is|are)\s+(?:to|into|for)|as|for)\s+(?:the\s+)?(?:test|testing|validation|holdout|hold-out)(?:\s+(?:set|split))?\b"),
    ("split_data", rf"(?:{AFTER_ARROW}|(?<=[,:;(]\s)|(?<=\()|^)PCT\d+\s+(?:test|testing|validation|holdout|hold-out|held-out)\b"
                   rf"(?=\s*(?:{ARROW}|$|[,.;)])|\s+[–—]\s)"),     # ("..., 25% test — then kNN", "(30% test)")
    # "make 20% the test split", "make a quarter of it the holdout": the share named the test set
    ("split_data", r"\bmake\s+PCT\d+(?:\s+of\s+(?:it|them|the\s+(?:data|rows|records)))?\s+(?:the|a|our)\s+"
                   r"(?:test|testing|validation|holdout|hold-out)(?:\s+(?:set|split|portion|part))?\b"),
    # "evaluate it on a 30% test set": the held-out share the evaluation reads is the split's
    ("split_data", r"(?:(?<=\bon\s)|(?<=\bagainst\s)|(?<=\busing\s))(?:a\s+|the\s+)?PCT\d+\s+(?:test|testing|validation|eval|evaluation)\s+"
                   r"(?:set|split|portion|part|sample|subset)\b"),
    # "keep a 30% test set", "hold back a 20% holdout", "set aside a 25% test split", "with a 30% test set"
    ("split_data", r"\b(?:keep|keeps|keeping|hold\s+(?:out|back)|holding\s+(?:out|back)|set\s+aside|setting\s+aside|reserve|reserving|carve\s+out"
                   r"|make|making|create|creating|with|use|using)\s+(?:a|an|the)\s+PCT\d+\s+(?:test|testing|validation|holdout|hold-out|held-out)"
                   r"(?:\s+(?:set|split|portion|part|sample|subset))?\b"),
    ("split_data", r"\btrain\s*/\s*(?:test|validation|val)\b(?:\s+split)?|\btrain-test\s+split\b|\btrain\s+test\s+split\b|\bRATIO\d+\s+split\b"),
    # "train a knn on 80% of the data and test it on the rest": the split, said by the share trained on
    ("split_data", TRAINED_SHARE + REST_TESTED),
    # "then a quarter of it goes to testing", "20% goes to the test set"
    ("split_data", r"\b(?:a\s+quarter|a\s+fifth|a\s+third|a\s+tenth|half|PCT\d+)(?:\s+of\s+(?:it|them|the\s+(?:data|rows|records)))?\s+"
                   r"(?:goes|go|is\s+going|gets\s+set\s+aside)\s+(?:to|for|into)\s+(?:testing|test|the\s+test(?:\s+set)?|a\s+test\s+set)\b"),
    # "- export: ./models/k", "export → ./ckpt/x": where a model goes, said as a setting (a table file is a write's)
    # (never the noun: "each region sends its own export: n.csv, s.csv")
    ("export_model", rf"{NOT_A_NOUN}\b(?:export|save)\s*(?::|=|{ARROW})\s*(?P<f>FILE\d+)"),
    ("write_table", rf"{NOT_A_NOUN}\b(?:write|save|export|output)\s*(?::|=|{ARROW})\s*(?P<f>FILE\d+)"),
    ("load_data", r"\b(?:load|read|open|import)\s*:\s*FILE\d+"),    # "- load: x.csv"
    # "Fit kNN on d.csv, test on 30%": the share the model is tested on
    # (never "evaluate it on a 20% holdout": an evaluation, its split read by arrange.held_out_evaluation)
    ("split_data", r"\b(?:test|tested|testing)\s+(?:it\s+)?on\s+(?:a\s+|the\s+)?(?:PCT\d+|a\s+quarter|a\s+fifth|a\s+third)"
                   r"(?:\s+(?:of\s+(?:it|the\s+data|the\s+rows)|holdout|hold-out|split|sample|held[\s-]out))?\b"),
    # "test = 25%", "test: 0.2": the share, said as a setting
    ("split_data", r"(?:(?<=[;,\n]\s)|(?<=[;,\n])|^)(?:test|holdout|hold-out)\s*[:=]\s*(?:PCT\d+|NUM\d+)\b"),
    # "(k=5, test size 0.25)", "using a 0.3 test fraction", "test_size=0.2": the split's share, said as its parameter
    # ("the test split should be 25%", "test set is 20%": the share said of the split)
    ("split_data", r"\btest[\s_-]+(?:size|fraction|share|split|set|portion|part)\s*(?:(?:should|will|must)\s+be|is|of|=|:)?\s*(?:NUM|PCT)\d+"
                   r"|\b(?:a\s+)?(?:NUM|PCT)\d+\s+test[\s_-]+(?:size|fraction|share)\b"),
    # ("the split times per crew": a split time is a measurement, no split of the data)
    ("split_data", r"\b(?:split|splits|splitting|partition\w*|divide)\b(?!\s+(?:times?|pace|splits)\b)(?:\s+off)?|\bhold(?:ing)?\s+out\b|\bholdout\b|\bhold-out\b|\bheld\s+out\b"
                   r"|\b(?:carve|carving|set|setting|hold|holding|keep|keeping|put|putting|reserve|reserving|held|kept)\s+(?:out|aside|back|apart)\b"
                   r"|\breserve\s+(?=PCT|a\s+quarter|the\s+last)"
                   # "keep a fifth back for test", "carve off 30% as a test set": the share between
                   r"|\b(?:carv|set|hold|keep|put|reserv|tak|leav|lay|us)\w*\s+(?:off\s+|aside\s+|back\s+|out\s+)?"
                   r"(?=PCT\d+(?:\s+of\s+(?:it|them|the\s+(?:data|rows|table)))?(?:\s+(?:out|aside|back|apart|off))?\s+(?:as|for)\s+(?:a\s+|the\s+)?"
                   r"(?:test|testing|validation|hold-?out|eval))"),   # "use 15% of it as a test set"
    # "keep the first 100 rows", "take the last 5,000 records": a subset in file order (which end
    # and how many stay unmarked for the extractor); "keep only 30% of it": a random share
    # ("work only with the last 10,000 rows", "trust only the newest 5,000 records")
    ("sample", r"\b(?:keep|keeps|keeping|take|takes|taking|use|uses|using|select|grab|retain|retains|retaining|get|pull|extract"
               r"|work\s+(?:only\s+|just\s+)?(?:with|on)|trust|stick\s+to|focus\s+on)"
               r"\s+(?:it\s+|them\s+|the\s+(?:data|table|rows)\s+)?(?:only\s+|just\s+)?(?P<sk>(?:the\s+|its\s+|their\s+)?"
               rf"(?:{ROW_ORDER})\s+"
               # "the first 500 customers": rows named by what each one is
               r"(?:NUM\d+\s+(?:rows?|records?|lines?|entries|(?!(?:models|adapters|runs|epochs|steps|trials|times|rounds|workers|features|columns)\b)[a-z]+s\b)"
               r"|PCT\d+\s+of\s+(?:it|them|the\s+(?:rows|data|records|table))"
               # "keep only the first 10,000, de-dupe": the rows left unsaid, the clause ending at the count
               rf"|NUM\d+{COUNT_ENDS_CLAUSE})(?!\s+(?:as|for|to)\b))"),
    # "x.csv, first 5,000 rows only; 70/30 split": a subset in file order said as an item of a list
    ("sample", rf"(?:{AFTER_ARROW}|(?<=[,;:]\s)|^)(?P<sk>(?:the\s+)?(?:first|last)\s+NUM\d+\s+(?:rows?|records?|lines?|entries))\s+only"
               rf"{ITEM_END}"),
    # "stockouts.jsonl: tail 100k rows → ...": the last rows, as the shell's tail (head) says it
    ("sample", rf"(?:{AFTER_ARROW}|(?<=[,;:]\s)|^)(?:tail|head)(?=\s+NUM\d+\s+(?:rows?|records?|lines?|entries)(?:\s+only)?{ITEM_END})"),
    # "load the first 500 rows of x.csv": a load of part of a file is the load, then that subset
    ("sample", rf"\b(?:{LOAD_VERBS}|open|opens|opened)\s+(?:only\s+|just\s+)?(?P<sk>(?:the\s+)?(?:first|last)\s+NUM\d+\s+)"
               r"(?:rows?|records?|lines?|entries)\b(?=\s+(?:of|from|in)\s+FILE)"),
    # verbless, as a list item or an arrow step: "2) random sample, 25 percent", "→ a 10% sample →"
    ("sample", rf"(?:{ITEM_OPEN}|(?<=[;:)]\s))(?:a\s+)?(?:PCT\d+\s+)?random\s+(?:sub-?)?sample\b"
               rf"(?=\s*(?:$|[.;)]|,\s*PCT\d+\s*(?:$|[.;)]|{ARROW})|{ARROW}))"),
    ("sample", r"\b(?:limit|limits|limiting|truncate|truncates|truncating|trim|trims|trimming|cap|caps|capping|restrict|restricts|restricting)\s+(?:it\s+|them\s+|the\s+(?:data|table|rows)\s+)?to\s+"
               rf"(?P<sk>(?:the\s+|its\s+|their\s+)?(?:{ROW_ORDER})\s+NUM\d+\s+)(?:rows?|records?|lines?|entries)\b"),
    ("sample", r"\b(?:keep|keeps|keeping|retain|retains|retaining)\s+(?:only\s+|just\s+)(?=(?:a\s+random\s+)?PCT\d+\s+of\s+(?:it|them|the\s+(?:rows|data|records|table|result|(?:joined|merged|cleaned)\s+(?:table|data|rows)))\b"
               r"(?!\s+(?:as|for|to)\b))"),
    ("sample", r"\b(?:randomly\s+)?(?:sub-?sampl\w*|down-?sampl\w*|sample)\s+(?=NUM|PCT|FILE|the\b|a\b|an\b|it\b|them\b|down\b|rows\b|each\b|every\b)"
               r"|\b(?:sub-?sampl\w*|down-?sampl\w*)\s+(?:it\s+|them\s+)?to\s+(?=PCT\d+|NUM\d+\s+(?:rows?|records?))"),   # "downsample to 10%"
    # "keep only a random 2,000 rows": a random subset of the rows (never made-up data)
    ("sample", r"\b(?:keep|keeps|keeping|take|takes|taking|use|using|draw|pick|select|grab|retain)\s+(?:only\s+|just\s+)?(?:a\s+)?random\s+"
               r"(?=NUM\d+\s+(?:rows?|records?|entries|samples|lines)\b|PCT\d+)"),
    # "→ random sample of five thousand rows →"
    ("sample", r"\b(?:a\s+)?random\s+(?:sub-?)?sample\s+of\s+(?=NUM\d+\s+(?:rows?|records?|entries|responses)\b|PCT\d+)"),
    ("sample", r"\b(?:take|draw|pick|select|keep|grab|use|pull|get|make|create|build|extract|work\s+(?:on|with)|stick\s+to)\s+(?:a\s+|an\s+)?(?:random\s+)?(?:PCT\d+\s+|NUM\d+\s*(?:-\s*)?(?:rows?\s+|records?\s+)?)?(?:random\s+)?(?:samples?|subsets?|fraction|portion|subsamples?)\b"),
    # "randomly pick 100 rows", "keep only 5000 random rows", "keep a random 10%"
    ("sample", r"\b(?:randomly\s+)?(?:take|draw|pick|select|keep|grab|(?:give|show|get)\s+(?:me|us))\s+(?:a\s+|an\s+)?(?:random\s+)?(?:PCT\d+|NUM\d+)\s+(?:random\s+)?(?:rows|records|of)\b"
               r"|\b(?:take|draw|pick|select|keep|grab)\s+(?:only\s+|just\s+)?(?:NUM\d+\s+random\s+(?:rows|records)\b|(?:a\s+)?random\s+PCT\d+)"
               r"(?!\s+(?:of\s+\w+\s+)?(?:as|for|to)\b)"),
    ("sample", rf"(?:\b(?:take|draw|pick|grab|pull|make|get)\s+)?(?:{NUMLIST})\s*-?\s*(?:rows?|records?)\s+(?:random\s+)?(?:sub-?)?samples?\b"),
    ("sample", r"(?:\b(?:random\s+)?PCT\d+|\bNUM\d+\s*(?:-\s*)?(?:rows?|records?))\s+(?:random\s+)?(?:sub-?)?samples?\b"
               r"|\b(?:sub-?)?samples?\s+(?:of\s+)?(?=PCT)|\b(?:NUM\d+\s+)?samples\s*(?:—|–|:|-|\()\s*(?=PCT)"),
    # "... but only the most recent 100,000 events come from the new system, so keep just those", "only
    # the first 5,000 orders were checked by hand, so stick to those": the rows kept, said with why
    # (asides.kept_rows: the why and the "keep those" are the step's, or the request is refused)
    ("sample", rf"(?:\bbut\s+(?:it\s*'s\s+|it\s+is\s+)?)?\bonly\s+(?=the\s+(?:{ROW_ORDER})\s+"
               r"NUM\d+\s+(?:[a-z-]+\s+)?[a-z-]+s\b)"),
    # "left join them", "do an inner join on id": the kind stays unmarked for the join's extractor
    ("join", r"\b(?:(?:do|does|perform|performs|run|runs)\s+(?:a|an)\s+)?(?P<sk>(?:left|right|inner|full|outer)(?:[\s-]+outer)?[\s-]+)"
             r"(?:join|joins|joined|joining|merge|merges|merged|merging)\b"
             r"(?:\s+(?:them|the\s+(?:two|NUM\d+)(?:\s+tables)?|both(?:\s+tables)?|the\s+tables|these|those))?"),
    ("join", r"\b(?:do|does|perform|performs|run|runs)\s+(?:a|an)\s+(?:join|merge)\b"),
    # "a.csv + b.csv, full-outer on transect_id →", "a.csv ⋈ b.csv (inner, key item_id)": the kind alone
    # before its key, and the join's symbol (the kind stays unmarked for the join's extractor)
    ("join", rf"(?:{AFTER_ARROW}|(?<=[,;:]\s))(?P<sk>(?:full|left|right)[\s-]+outer|inner|outer)(?=\s+on\s+[a-z_][a-z0-9_]*\s*(?:{ARROW}|[,;.]|$))"
             r"|(?<=FILE\d\s)⋈(?=\s+FILE)|(?<=FILE\d\d\s)⋈(?=\s+FILE)"),
    # "stack them", "append feb.csv to jan.csv", "concatenate the two tables": rows of one table
    # after the other's (a join pairs rows on a key); only with its tables as the object
    ("concat", r"\b(?:concatenat(?:e|es|ed|ing)|concat|stack|stacks|stacked|stacking|union|unions|unioned|unioning|"
               r"append|appends|appended|appending|stitch|stitches|stitched|stitching|glue|glues|glued|gluing|tack|tacks|tacked|tacking)\b"
               r"(?:\s+(?:them|both(?:\s+tables|\s+files)?|the\s+(?:two|NUM\d+)(?:\s+(?:tables|files))?|the\s+(?:tables|files)|these|those)"
               r"(?:\s+(?:together|vertically|row-?wise))?|(?=\s+FILE)"
               r"|\s+one\s+(?:to|onto|under|below|beneath|after)\s+the\s+other\b"     # "append one to the other"
               rf"|(?<=concat)(?=\s*(?:[,;]|$|{ARROW}))"    # "→ concat, EU first →": an item of its own
               r"|(?=\s+the\s+[a-z]+\s+(?:file|one|table|log|export|sheet)\s+(?:onto|on\s+to|to|after|under|below|beneath)\s)"
               r"|(?=\s+the\s+[a-z][\w-]*\s+(?:rows|records|entries|ones)\s+(?:on\s+top\s+of|above|over|before|ahead\s+of)\s)"   # "stack the EU rows on top of the US ones"
               # "stack 2025 under 2024", "h2 appended beneath h1": one table's name word under the other's
               r"|(?<=stack)(?=\s+(?:NUM\d+|[a-z][\w-]*)\s+(?:underneath|under|below|beneath)\s+(?:NUM\d+|[a-z][\w-]*)\b)"
               # "append south to north": the one appended to the other, by a word of their names
               r"|(?<=append)(?=\s+(?:NUM\d+|[a-z][\w-]*)\s+(?:to|onto)\s+(?:NUM\d+|[a-z][\w-]*)\s*(?:[,;.)]|$))"
               r")"),
    ("concat", r"\b(?!(?:is|are|was|were|be|been|get|gets|got|then|also|rows|data)\b)(?:NUM\d+|[a-z][\w-]*)\s+(?:appended|stacked)"
               r"(?=\s+(?:underneath|under|below|beneath)\s+(?:NUM\d+|[a-z][\w-]*)\b)"),
    # "put the market hall rows underneath the high street ones": one table's rows under the other's
    ("concat", r"\b(?:put|puts|place|places|add|adds)\s+(?=the\s+(?:[a-z][\w-]*\s+){1,2}(?:rows|records|entries|data)\s+"
               r"(?:underneath|under|below|beneath|on\s+top\s+of|above)\s+the\s+(?:[a-z][\w-]*\s+){1,2}(?:ones|rows|records|entries|data)\b)"),
    # "combine a.csv with b.csv (...) by putting one under the other": the rows of one under the other's
    ("concat", r"\b(?:combine|combines|combining|merge|merges|merging)\b(?=[^.;]*?\bby\s+(?:putting|placing|setting|stacking)\s+"
               r"one\s+(?:under|below|beneath|after|on\s+top\s+of)\s+the\s+other\b)"),
    # "Combine jan.csv and feb.csv into one table (same columns)", "merge a.csv and b.csv (identical columns)":
    # tables said to share one layout, combined, are stacked (a join of them paired rows on a guessed key)
    ("concat", r"\b(?:combine|combines|combined|combining|merge|merges|merged|merging)\b(?=\s+(?:FILE\d+|them|both|the\s+(?:two|files|tables))"
               r"[^.;]*?\(\s*(?:(?:they|both|all)\s+(?:share|have)\s+(?:the\s+)?)?(?:same|identical|matching)\s+(?:columns|schema|layout|format|headers)\b)"),
    # "→ one combined table (they share columns) →": tables of one layout, combined, are stacked
    ("concat", r"\b(?:one|a|a\s+single)\s+(?:combined|merged|stacked)\s+table\b(?=\s*\(\s*(?:(?:they|both|all)\s+(?:share|have)|the\s+same|same|identical))"),
    # "combine q1.csv and q2.csv row-wise", "merge them vertically": the rows of one, then the other
    ("concat", r"\b(?:combine|combines|combined|combining|merge|merges|merged|merging|put|puts)\b"
               r"(?=(?:\s+(?:FILE\d+|them|both|the\s+(?:two|tables|files)|and|,))*\s+(?:row-?wise|by\s+rows|vertically|"
               r"on\s+top\s+of\s+(?:each\s+other|one\s+another))\b)"),
    # ("the radio link is flaky": a link as a noun after a describing word, no join)
    ("join", r"(?<!the )(?<!a )\b(?:join|joins|joined|joining|merge|merges|merged|merging|"
             r"(?:combine|combines|combined)(?!\s+(?:report|summary|write-?up|overview)\b)(?!\s+(?:them|both|these|those|the\s+(?:two|results|outputs))\s+(?:into|in)\s+"
             r"(?:a|one|the|a\s+single)\s+(?:short\s+|brief\s+|final\s+|single\s+)?(?:report|summary|write-?up))|enrich|enriches|enriched|(?<!radio )(?<!network )(?<!data )(?<!internet )(?<!satellite )link|links|linked|"
             r"match\s+up)\b"
             r"(?:\s+(?:them|the\s+(?:two|NUM\d+)(?:\s+tables)?|both(?:\s+tables)?|the\s+tables|these|those))?"
             # "match them up on office_id"
             r"|\bmatch\s+(?:them|the\s+(?:two|NUM\d+)(?:\s+tables)?|both(?:\s+tables)?|the\s+tables)\s+up(?=\s+(?:on|by|using)\b)"
             # "attach customers.csv to it on customer_id": one table's columns added to the other's rows by a key
             r"|\battach(?:es|ed|ing)?\b(?=\s+FILE\d+\s+(?:to|onto)\s+(?:it|them|FILE\d+)\s+(?:on|by|using)\b)"),
    # "count how many bookings each castle got", "3) how many bookings each castle had": a count per key
    ("aggregate", r"\b(?:(?:count|tally|work\s+out|find(?:\s+out)?)\s+)?how\s+many\s+[a-z_]+\s+(?=each\s+[a-z_]+\s+"
                  r"(?:got|had|has|gets|received|made|took|saw|logged|sold|booked)\b)"),
    ("aggregate", r"\b(?:the\s+)?[a-z_]\w*\s+(?:are|is|get|gets|got)\s+(?:then\s+)?(?:rolled\s+up|aggregated|summed(?:\s+up)?|"
                  r"total(?:l)?ed(?:\s+up)?|grouped|tallied(?:\s+up)?)(?=\s+(?:by|per|for\s+each)\s)"),   # "sales are rolled up by site"
    ("aggregate", r"\b(?:hourly|daily|weekly|monthly|quarterly|yearly|annual)\s+(?:totals?|sums?|counts?|averages?|means?|aggregates?|roll-?ups?|rollups?)\b"
                  r"(?=\s*\(?\s*(?:per|by|for\s+each)\s+(?!NUM)\w+)"),   # "hourly totals (by hour)"
    # "count how many repairs we did for each handset_model": the rows counted per key, said of what was done
    ("aggregate", rf"\b(?:(?:count|tally|work\s+out|find(?:\s+out)?)\s+)?how\s+many\s+[a-z_]+\s+(?:we|they|you|i)\s+"
                  rf"(?:did|made|sold|had|handled|got|logged|received|booked|took|fixed|repaired|ran|ran|served|delivered)\s+"
                  rf"(?=(?:{GROUP_KEY_MARK})\s+(?!NUM)\w+)"),
    # "work out revenue totals per store": the measure named before the function's noun
    ("aggregate", r"\b(?:compute|calculate|get|find|work\s+out|figure\s+out|produce|report|(?:give|show)\s+(?:me|us))\s+(?:the\s+)?(?P<sk>(?:[a-z_]+\s+){1,2}?)"
                  r"(?:totals?|sums?|counts?|averages?|means?|medians?)\s+(?=per\s|by\s|for\s+each\s)"),
    # ("we'd like to know the median wait per clinic": what the writer wants to know, computed)
    ("aggregate", rf"\b(?:(?:compute|calculate|get|find|work\s+out|figure\s+out|find\s+out|report|(?:tell|show|give)\s+(?:me|us)|(?<=\bto\s)(?:know|see|learn))\s+(?:the\s+)?)?(?:sum(?:s|med|ming)?|total(?:s|ed|led|ing|ling)?|count(?:s|ed|ing)?|"
                  rf"average(?:s|d)?|averaging|avg|means?|medians?|tall(?:y|ies|ied|ying)|add(?:s|ed|ing)?\s+up|number\s+of|summari[sz](?:e|es|ed|ing)"
                  rf"|max|min|maximum|minimum|lowest|highest|smallest|largest)\b\s+{skip(3)}"
                  rf"(?:grouped\s+)?(?:{GROUP_KEY_MARK}|(?:for|in)\s+each\s+of\s+the|across(?:\s+the)?(?=\s+(?!{NOT_GROUPS}\b)(?!NUM)[a-z_]\w*[^s\W]s\b))\s+(?!NUM)\w+"),   # "the max temp per sensor" (never "minutes per line")
    # "the yield per field is to be summed", "the total yield_kg per field is to be computed": the
    # aggregate in the passive, its measure and key first
    ("aggregate", passive(r"(?:the\s+)?(?:(?:total|sum|mean|average|median|maximum|minimum|max|min|count|number)\s+(?:of\s+)?(?:the\s+)?)?"
                          r"[a-z_]\w*\s+(?:per|by|for\s+each)\s+(?!NUM)[a-z_]\w*",
                          r"summed|totalled|totaled|averaged|counted|aggregated|computed|calculated|worked\s+out|added\s+up|tallied")),
    # "work out each region's total revenue", "find each driver's lowest lap_time": the key said as whose the figure is
    ("aggregate", r"\b(?:(?:compute|calculate|get|find|work\s+out|figure\s+out|find\s+out|show|report|give\s+me|tell\s+me)\s+)?"
                  r"each\s+(?!(?:column|field|feature|variable|col)\b)[a-z_][a-z0-9_]*\s*'s\s+(?:total|average|mean|median|maximum|minimum|max|min|highest|lowest|largest|smallest"
                  r"|count|number)\b(?:\s+(?:of\s+)?[a-z_][a-z0-9_]*)?"),
    # "how many rows per city are there?": a count per group, not the row count
    ("aggregate", rf"\bhow\s+many\s+(?:rows|records|entries|(?!times\b)[a-z_]\w*s)\s+(?=(?:{GROUP_KEY_MARK})\s+(?!NUM)\w+)"),
    ("aggregate", r"\broll(?:s|ed|ing)?\s+(?:the\s+|it\s+|them\s+)?(?:[\w-]+\s+){0,3}?up\s+(?=by\s|per\s)"),   # "roll the merged rows up by press"
    ("aggregate", r"\b(?:aggregat\w*|(?:group|bucket|bin)(?:s|ed|ing)?\s+(?:it\s+|them\s+|the\s+(?:rows|data|records)\s+)?by|groupby|group-by|(?:group|bucket|bin)(?:s|ed|ing)?(?=\s+FILE\d+\s+by\b)|(?<!the )(?<!a )(?<!that )(?<!this )roll(?:s|ed|ing)?\s*(?:it\s+|them\s+)?up(?=\s+(?:[\w-]+\s+){0,6}?(?:by|per|to)\b)|"
                  r"summari[sz]e\w*\s+(?=\w+\s+(?:per|by)\b))\b|\bbreak\w*\s+(?:[\w-]+\s+){0,3}?down\s+(?=by|per)|\bbreakdowns?\s+(?=by|per)"
                  r"|\bbreakdowns?\s+of\s+(?:the\s+)?(?:[a-z_]+\s+){1,2}?(?=by\s|per\s)"      # "a breakdown of sales by channel"
                  r"|\bbucket(?:s|ed|ing)?\s+(?:the\s+)?[a-z_]+s\s+by(?=\s+[a-z_])"
                  r"|\b(?:totals?|sums?|counts?|averages?|means?|medians?)\s+(?=per\s+|by\s+)|\b(?:(?:compute|calculate|get|find|work\s+out|figure\s+out|find\s+out|report|show|produce)\s+(?:the\s+)?)?per-[a-z_]\w*\s+(?:[a-z_]+\s+)?(?:totals?|sums?|counts?|averages?|means?|aggregates?|rollups?|roll-ups?)\b"),
    # "put together one report covering ...", "add a short report"
    # "combine them into a report": one report on the results before it, no join
    ("save_report", r"\bcombin(?:e|es|ed|ing)\s+(?:them|both|these|those|the\s+(?:two|results|outputs))\s+(?:into|in)\s+"
                    r"(?:a|one|the|a\s+single)\s+(?:short\s+|brief\s+|final\s+|single\s+)?(?:report|summary|write-?up)\b"),
    ("save_report", r"\b(?:put|puts|putting|pull|pulls)\s+together\s+(?:a|one|the)\s+(?:single\s+|short\s+|final\s+|combined\s+)?report\b"
                    r"|\badd\s+(?=(?:a|an)\s+(?:short\s+|brief\s+|final\s+|quick\s+)?report\b)"),
    ("save_report", rf"\bsummari[sz]e\w*\s+{skip(2)}(?:in|into|as|with)\s+(?:a\s+|the\s+)?report\b"),
    # "report" a verb, not the noun of "save a report with its statistics"
    # ("check the stats before anything else": the statistics looked at, computed first)
    ("stats", rf"\b(?:compute|calculate|get|produce|(?<!\ba )(?<!\bthe )report|show|print|collect|gather|derive|generate|run|work\s+out"
              rf"|check|inspect|review|examine|look\s+at|(?:take|have)\s+a\s+look\s+at)\s+{skip(2)}"
              rf"(?:summary\s+|descriptive\s+|basic\s+|column\s+|per[\s-]column\s+|some\s+)?(?:statistics|stats)\b{PER_COLUMN}"),
    # "-> column stats ->": the statistics as an arrow chain's stage
    ("stats", rf"{AFTER_ARROW}(?:column|summary|descriptive|basic)\s+(?:stats|statistics)(?=\s*(?:{ARROW}|$|[,;.]))"),
    ("stats", passive(r"(?:summary\s+|descriptive\s+|basic\s+)?(?:statistics|stats)|(?:a\s+|the\s+)?(?:data\s+)?profile",
                      r"computed|calculated|produced|generated|collected|gathered|derived|reported|run")),
    ("stats", rf"\b(?:describe|summari[sz]e)(?!rs?\b)\w*\b(?:\s+{skip(3)}with\s+(?:summary\s+)?(?:statistics|stats)|\s+(?:the|all\s+the|each\s+of\s+the|every)\s+columns?\b)?|\b(?:summary|descriptive)\s+(?:statistics|stats)\b{PER_COLUMN}"
              r"|\b(?:a|the)\s+(?:statistical|descriptive)\s+(?:summary|profile|overview)\b"     # "a statistical summary"
              r"|\bprofil(?:e|es|ing)\s+(?=it\b|them\b|the\b|this\b|that\b|each\b|every\b|all\b|FILE\d+)"),
    # "per-column stats", "summary statistics per column": the statistics of every column
    ("stats", r"\b(?:per[\s-]column|column-?wise|column-level)\s+(?:summary\s+|descriptive\s+)?(?:stats|statistics)\b"
              r"|\b(?:(?:summary|descriptive|basic)\s+)?(?:stats|statistics)\s+(?:per|for\s+(?:each|every))\s+column\b"),
    # "count the rows", "tell me the row count", "how many records are left": the statistics
    # hold the row count; only the phrase whole, with nothing after it that narrows the rows
    # ("count the rows with missing values", "how many rows have nulls": not the row count; a
    # count per group is an aggregate, claimed above)
    ("stats", r"(?:\b(?:(?:tell\s+me|give\s+me|show\s+me|report|print|get|find|compute|calculate|return|log|check|what\s+(?:is|'s|was))\s+)?"
              r"(?:the\s+|its\s+|their\s+)?(?:(?:row|record)\s+counts?|(?:number|count)\s+of\s+(?:rows|records|entries))"
              r"|\bcount(?:s|ing)?\s+(?:the\s+|its\s+|their\s+|all\s+(?:the\s+)?)?(?:rows|records|entries)"
              r"|\bcount\s+what\s*(?:'s|is)\s+(?:left|remaining)|\bcount\s+what\s+remains"     # "drop ..., and count what's left"
              r"|\b(?:(?:tell\s+me|report|print|show\s+me|say)\s+)?how\s+many\s+(?:rows|records|entries)"
              r"(?:\s+(?:are|is)\s+(?:left|remaining|there)|\s+remain|\s+there\s+are|\s+(?:it|each|the\s+(?:result|table|output|sample|join))\s+(?:has|holds)|\s+they\s+(?:have|hold)"
              r"|\s+(?:does|do)(?:\s+it\s+(?:have|hold)|(?=\s+FILE\d+\s+(?:have|hold)\b)))?)\b"
              r"(?=\s*(?:[?.,;:!]|$)|\s+(?:in|of|from)\s+FILE|\s+(?:and|then|after|before|once|when)\b|\s+FILE\d+\s+(?:have|hold)\b)"),
    # "compute the average price", "give me the maximum of amount", "what is the median price?",
    # "what are the mean and max of amount?":
    # a column's mean, median, standard deviation, minimum or maximum is in the statistics (per
    # group it is an aggregate, claimed above; a metric's average is a report's)
    ("stats", rf"\b(?:(?:compute|calculate|get|find|take|report|print|show\s+me|give\s+me|tell\s+me|work\s+out|figure\s+out|find\s+out|what\s+(?:is|'s|are|was)"
              # "I need the max price from x.csv", "we'd like the average of the price column"
              rf"|(?<=\bi )(?:want|need|'d\s+like|would\s+like)|(?<=\bwe )(?:want|need|'d\s+like|would\s+like))\s+)"
              rf"(?:the\s+|its\s+)?{_STAT}(?:\s*(?:,|and|&|,\s*and)\s+(?:the\s+)?{_STAT})*\s+(?:of\s+(?:the\s+)?)?"
              rf"(?:(?:every|each)\s+(?:numeric\s+)?column|all\s+(?:the\s+)?(?:numeric\s+)?columns"   # "of every column"
              rf"|(?!(?:{METRIC_RX})\b|it\b|them\b|each\b|all\b|every\b)[a-z_][a-z0-9_]*\b(?:\s+column\b)?)"
              r"(?!\s+(?:per|by|for\s+each|across|over)\b)(?=\s*(?:[.,;:!?]|$|\s+(?:and|then|of|in|from)\b))"
              # ("the median price and the max price per region": the group said once, for both)
              rf"(?!\s*,?\s+and\s+(?:the\s+)?{_STAT}\s+(?:of\s+)?[a-z_][a-z0-9_]*\s+(?:per|by|for\s+each)\b)"),
    # ("statistics office", "a stats team": a trade named by what it does, no statistics asked for)
    ("stats", r"(?<!those )(?<!these )(?<!the )(?<!of )\b(?:stats|statistics)\b(?!\s+(?:office|offices|team|unit|department|bureau|agency|desk|group))"
              r"(?:\s+(?:comparison|summary|overview))?"
              # "give me the stats": asked for, not the stats of an earlier step (the step was dropped)
              r"|\b(?:(?:give|show|send|get)\s+(?:me|us)|want|need|see|output|display|return|print(?:\s+out)?)\s+(?:the|its|their)\s+"
              r"(?:summary\s+|basic\s+|descriptive\s+)?(?:stats|statistics)\b"),
    # "... and save the chart as out/p.png": where the chart drawn before goes (rules.RulePlanner
    # joins it to that plot)
    # "show that on a line chart"
    ("plot", r"\bshow\s+(?:it|that|them|this|those|these)\s+(?:on|in|as)\s+(?:a|an)\s+(?:line\s+|bar\s+)?(?:chart|plot|graph)\b"),
    ("plot", r"\b(?:save|saves|store|stores|write|writes|export|exports|keep|keeps)\s+(?:the\s+|that\s+|this\s+)?"
             r"(?:chart|plot|histogram|figure|graph|image|picture)\b(?=\s+(?:to|as|in|into|at)\s+FILE)"),
    ("plot", r"\b(?:(?:draw|make|create|produce|render|build|plot|give\s+me|show(?:\s+me)?|display)\s+(?:a\s+|an\s+|the\s+)?)?"
             r"(?:bar|line|pie|scatter)\s*-?\s*(?:charts?|graphs?|plots?)\b"),     # with its verb: "draw a bar chart"
    ("plot", r"\b(?:(?:show|shows|display|displays)(?:\s+me|\s+us)?|(?:give|get|make)\s+(?:me|us))\s+(?:a\s+|an\s+|the\s+)?(?:histogram|distribution|bar\s+chart|"
             r"line\s+chart|chart|graph|plot)\b(?=\s+of\b|\s*(?:[.,;:!?]|$))"),   # "show the distribution of temp"
    ("plot", rf"\b(?P<sk>(?:{METRIC_RX})\s+)(?:plot|chart|graph|curve|figure|histogram)s?\b"),   # "a val loss plot"
    ("plot", rf"\b(?P<sk>(?:the\s+|its\s+|their\s+)?(?:{METRIC_RX})(?:\s+(?:curves?|values?|history))?){AUX}\s+"
             r"(?:plotted|charted|graphed|visuali[sz]ed|drawn)\b"),   # passive, the metric first: "the RMSE is plotted"
    # ("build me a chart of ...": for whom, between the verb and the chart)
    ("plot", r"\b(?:make|create|produce|generate|build|draw|render|sketch|knock\s+up|whip\s+up)\s+(?:me\s+|us\s+)?(?:a|an)\s+(?:\w+\s+)?(?:histogram|bar\s+chart|chart|graph|plot|figure|visuali[sz]ation)s?\b"),
    ("plot", passive(r"(?:a\s+|the\s+)?(?:histogram|bar\s+chart|chart|graph|plot|figure|visuali[sz]ation)s?",
                     r"drawn|made|produced|created|generated|rendered|plotted|built")),
    ("plot", r"(?:^|(?<=[,;:.>→]\s)|(?<=\bthen\s)|(?<=\band\s)|(?<=\bwant\s)|(?<=\bneed\s)|(?<=\blike\s))(?:a|an)\s+(?:final\s+|quick\s+|simple\s+)?(?:histogram|bar\s+chart|line\s+chart|chart|plot|graph|figure)\b"),   # "then a histogram"
    ("plot", r"\b(?:plot|plots|plotted|plotting|chart|charts|charted|graph|graphs|visuali[sz]\w*|draw|render)\b"
             r"(?:\s+(?:a|an|the)?\s*(?:histogram|bar\s+chart|chart|graph|plot|line\s+chart|figure))?"),
    ("save_report", rf"(?<!per )(?<!by )(?<!each )(?<!every )\b(?:write|writes|save|saves|store|produce|create|generate|dump|output|log(?!istic)|record|put)\w*\s+{skip(3)}"
                    r"(?:report|results|result|metrics|scores|findings|evaluations?)\b(?:\s+(?:(?:to|in|into|as|at)\s+)?FILE\d+)?"
                    r"|\breport\s+(?:to|in|into|as)\s+FILE\d+"
                    # "compile a report", "assemble the final report"
                    r"|\b(?:compile|compiles|compiled|compiling|assemble|assembles|assembled|assembling|draft|drafts|drafted|drafting"
                    r"|build|builds|building|make|makes|making|prepare|prepares|preparing)\s+(?:a|an|the|one)\s+"   # ("build one report over ...")
                    rf"(?:(?:final|short|single|combined|summary|brief)\s+)?report\b{REPORT_COVERS}"),
    # "document the results in a report", "record everything in a short report"
    ("save_report", r"\b(?:document|documents|record|records|capture|captures|write\s+up|summari[sz]e)\s+(?:the\s+|all\s+the\s+)?(?:results|findings|outcome|everything|it\s+all)\s+"
                    r"(?:in|into|as)\s+(?:a|one|the)\s+(?:single\s+|final\s+|short\s+|brief\s+|summary\s+)?report\b"),
    # "put all three into a single report", "pull a report together"
    ("save_report", rf"\b(?:put|puts|pull|pulls|gather|gathers|combine|combines|collect|collects|bring|brings)\s+{skip(3)}"
                    r"(?:in|into|together\s+in(?:to)?)\s+(?:a|one|the)\s+(?:single\s+|final\s+|short\s+|combined\s+|summary\s+)?report\b"
                    r"|\b(?:pull|put)\s+(?:a|the)\s+(?:final\s+|short\s+)?report\s+together\b"),
    ("save_report", rf"(?:^|(?<=[),;:.!?>→*-]\s)|(?<=\bthen\s)|(?<=\band\s)|(?<=\bwe\s))report\s+(?:the\s+|its\s+|their\s+)?(?:final\s+|last\s+|best\s+)?(?=(?:{HELD_OUT_WORDS}\s+)?(?:{METRIC_RX})\b)"),
    # "... and tell me the accuracy", "show us its AUC": the metrics reported back
    ("save_report", r"(?:(?<=\band\s)|(?<=\bthen\s)|(?<=[,;:]\s)|(?<=→\s)|(?<=->\s))report\s+(?:on\s+)?(?:it|them|both|all\s+of\s+them|the\s+results?"
                    r"|all\s+(?:the\s+)?(?:NUM\d+\s+)?[a-z]+s)\b"),   # "and report them", "→ report on all three events"
    ("save_report", rf"\b(?:tell|show|give)\s+(?:me|us)\s+(?:the\s+|its\s+|their\s+|what\s+the\s+)?(?=(?:{HELD_OUT_WORDS}\s+)?(?:{METRIC_RX})\b)"),
    # "fit a knn and print its accuracy", "..., then show the f1", "..., reporting f1"
    ("save_report", rf"(?:(?<=\band\s)|(?<=\bthen\s)|(?<=[,;:]\s))(?:print|show|display|output|reporting|printing|showing)\s+(?:out\s+)?(?:the\s+|its\s+|their\s+)?"
                    rf"(?=(?:{METRIC_RX})\b)"),
    ("save_report", rf"\breport\s+{skip(3)}(?:to|in|into|as)\s+FILE\d+|\breport\s*(?:{ARROW}|:|\()?\s*FILE\d+"),
    ("save_report", r"\b(?:wrap|write|sum)\s+(?:it\s+|everything\s+|things\s+|it\s+all\s+|them\s+)?up\b(?:\s+(?:in|into|as|with)?\s*(?:a|the)\s+(?:final\s+|short\s+|summary\s+)?report\b)?"),
    # "the findings are written up in a report": the results, said first
    ("save_report", passive(r"(?:the\s+)?(?:findings|results|numbers|outcomes?|scores|metrics)",
                            r"(?:written|summari[sz]ed|collected|gathered|put)(?:\s+up)?\s+(?:in|into)\s+(?:a|the)\s+"
                            r"(?:final\s+|short\s+|summary\s+|brief\s+)?report")),
    # ("After the report, send 'x'": the report said before, as the time of the next step)
    ("save_report", r"(?<!after\s)(?<!following\s)(?<!before\s)(?<!once\s)\b(?:a|the|final|short|brief|one|NUM\d+)\s+(?:final\s+|short\s+|summary\s+|brief\s+|saved\s+|written\s+|single\s+|"
                    r"combined\s+)?report\b(?:\s+only(?=\s*(?:[.;,!]|$)))?"    # "one report across the three"; "otherwise a report only"
                    rf"{REPORT_COVERS}"),
    # ("Evaluate + report afterwards.": a report after the plus that joins it to the step before)
    ("save_report", rf"(?:(?m:^)|(?<=[),;:>→.!?]\s)|(?<=\s-\s)|(?<=\s–\s)|(?<=\s—\s)|(?<=\bthen\s)|(?<=\band\s)|(?<=\s\+\s)|(?<=\s&\s))(?:final\s+|summary\s+)?report\b"
                    rf"(?=\s*(?:(?m:$)|[.;,)]|\((?![^)]*FILE)|{ARROW}|(?:when|once|after)\s+(?:both|all|they|everything|it|the\s+(?:two|three|NUM\d+))\b"
                    r"|(?:afterwards|after\s+that|at\s+the\s+end)\s*(?:$|[.;,])))"),
    ("export_model", rf"(?<!per )(?<!by )(?<!each )(?<!every )\b(?:export|exports|save|saves|write|writes|store|dump|serialize|persist)\w*\s+(?:{BEST_ONE})\s+(?:to|as|into|in|at)\s+(?P<f>FILE\d+)"),
    # "export what comes out to ./models/m": the model the step before made
    # (or what the step before found: "export what the search finds to ./models/b")
    ("export_model", r"\b(?:export|exports|save|saves|store|stores|copy|copies)\s+(?:what|whatever)\s+(?:(?:comes|came)\s+out"
                     r"(?:\s+of\s+(?:it|that|this|the\s+(?:training|tuning|search|run|pretraining|fine-tuning)))?"
                     r"|the\s+(?:search|tuning|sweep|training|run|pretraining)\s+(?:finds|found|picks|picked|produces|produced|returns|returned|"
                     r"comes\s+up\s+with|came\s+up\s+with))\s+(?:to|as|into|in|at)\s+(?P<f>FILE\d+)"),
    ("export_model", rf"(?:{BEST_ONE}){AUX}\s+(?:exported|saved|written|stored|dumped|serialized)\s+(?:to|as|into|in|at)\s+(?P<f>FILE\d+)"),
    # "copy the finished checkpoint to ./ckpt/x", "copy the model to ./m": a model or checkpoint, exported
    ("export_model", r"\bcop(?:y|ies|ying)\s+(?:it|them|the\s+(?:finished\s+|final\s+|trained\s+|resulting\s+|best\s+)?"
                     r"(?:model|checkpoint|ckpt|winner|adapters))\s+(?:to|into)\s+(?P<f>FILE\d+)"),
    ("deploy_model", rf"\b(?:deploy\w*|ship|release|promote|publish)\s+(?:{BEST_ONE})|(?:{BEST_ONE}){AUX}\s+(?:deployed|shipped|released|promoted|published)\b"),
    ("write_table", rf"(?<!per )(?<!by )(?<!each )(?<!every )\b(?:write|writes|save|saves|store|stores|export|dump|persist|output|put)\w*\s+{skip(4)}(?:to|as|into|in|at)\s+(?P<f>FILE\d+)"),
    ("write_table", r"(?<!per )(?<!by )(?<!each )(?<!every )\b(?:write|writes|save|saves|store|stores|dump|persist|output|export)\w*\s+(?:the\s+|a\s+)?"
                    r"(?:tables?|results?|output|scores)\s*:?\s+(?P<f>FILE\d+)"    # "write table out/dept.csv", "write scores: s.csv"
                    r"|\b(?:write|writes|save|saves|store|stores)\s+(?:out\s+)?(?P<g>FILE\d+)(?=\s*(?:[.,;!]|$))"),    # "... and write out/q1.parquet."
    ("write_table", r"\b(?:written|saved|stored|exported|dumped|persisted)\s+(?:out\s+)?(?:to|into|as|at|in)\s+(?P<f>FILE\d+)"),
    # "then evaluate, results into out/silo_eval.csv": what the step before made, written there
    ("write_table", r"(?:(?<=[,;:]\s)|^)(?:the\s+|its\s+)?(?:results?|metrics|scores)\s+(?:go\s+|goes\s+)?(?:into|to|in)\s+(?P<f>FILE\d+)"),
    # "the table should land in out/x.csv": where the result ends up, written there
    ("write_table", r"\b(?:lands?|landing|should\s+land|must\s+land|to\s+land|ends?\s+up)\s+(?:in|at|as)\s+(?P<f>FILE\d+)"),
    # "shipments.csv in, deduped, out/s.parquet out": the file said to come out is written
    ("write_table", r"(?<!\bFILE\d )(?P<f>FILE\d+)\s+out\b(?=\s*(?:[.,;!]|$))"),
    ("write_table", r"\b(?P<f>FILE\d+)\s+(?:gets|receives|holds|takes|stores)\s+(?:the\s+|that\s+)?(?:table|result|results|output|scores|rows|it)\b"
                    r"|\b(?:the\s+)?(?:(?:output|result|results|final|score|scores|summary)\s+)?(?:table|result|results|output|scores)\s+"
                    r"(?:goes|go|is\s+sent|gets\s+written|is\s+written|gets\s+saved|is\s+saved|lands)\s+(?:to|into|in|at)\s+(?P<g>FILE\d+)"),
    ("save_report", r"\b(?:(?:the\s+)?(?:scores|results|metrics|totals|counts)\s+(?:are\s+|get\s+)?)?"    # "→ scores written to s.jsonl"
                    r"(?:written|saved|stored|dumped|persisted)\s+(?:out\s+)?(?:to|into|as|at|in)\s+FILE\d+"),
    ("write_table", rf"\boutput\s+(?P<f>FILE\d+)|\b(?:\w+\s+)?(?:table|tables|results|scores)\s*{ARROW}\s*(?P<g>FILE\d+)"),
    # verbless, as an arrow step or a list item: "... → evaluate → scores to out/s.csv"
    ("write_table", rf"(?:{ITEM_OPEN})(?:the\s+)?(?:table|results?|scores|totals|counts|output)\s+"
                    rf"(?:to|into|as|in)\s+(?P<f>FILE\d+){ITEM_END}"),
    # "simultaneously: scores into out/s.csv and a chart of F1": an item of a list after a colon
    # "- write out/kwh.csv (2 retries)": the verb and the file, as a list item says it
    ("write_table", rf"(?:{ITEM_OPEN}|(?<=[,;:]\s))(?:write|save)\s+(?P<f>FILE\d+)(?=[ \t]*(?:$|\n|[.,;:(]|{ARROW}))"),
    ("write_table", r"(?<=[:;]\s)(?:the\s+)?(?:table|results?|scores|totals|counts|output|predictions)\s+"
                    r"(?:to|into|as|in)\s+(?P<f>FILE\d+)(?=\s*(?:$|[.;,)])|\s+(?:and|&)\s)"),
    ("write_table", rf"(?<!per )(?<!by )(?<!each )(?<!every )\b(?:write|writes|written|save|saves|store|stores|dump|persist|output|put|export)\w*\s+{skip(3)}(?:to|as|into|in)\s+"
                    r"(?:a\s+|the\s+|one\s+)?(?:table|parquet(?:\s+file)?|csv(?:\s+file)?)\b(?:\s+(?:at|in|to|under)\s+(?P<f>FILE\d+))?"
                    r"|\b(?:write|save|output|produce|make)\s+(?:a\s+|the\s+)?(?:score\s+|scores\s+|results\s+|output\s+)?table\b(?!\s+(?:to|as|into|in|at)\s+FILE)"
                    r"|\b(?:a\s+|the\s+)?(?:score|scores|results?|summary|output)?\s*tables?\s+(?:of\s+(?:the\s+)?(?:scores|results|predictions)\s*)?"
                    r"(?:at|to|in|into|under)\s+(?P<g>FILE\d+)|\b(?:a\s+|the\s+)?tables?\s+of\s+(?:the\s+)?(?:scores|results|predictions)\b"),
    ("export_model", rf"(?<!per )(?<!by )(?<!each )(?<!every )\b(?:export|exports|save|saves|write|writes|store|dump|serialize|persist)\w*\s+{skip(4)}(?:to|as|into|in|at|under|{ARROW})\s+(?P<f>FILE\d+)"
                     rf"|\bexport\s+(?P<g>FILE\d+)(?=\s*(?:[.,;!:]|$|{ARROW}))"),    # "... -> export models/m.json"
    ("export_model", r"\b(?:export|exports|save|saves|serialize|persist)\s+(?:it|them|the\s+(?:model|winner|result|run|checkpoint))"
                     r"(?=\s+(?:afterwards|afterward|later|then|next|finally)\s+(?:to|into|as|at)\s+FILE\d+)"),   # "export it afterwards to ./m"
    # "... and export it if recall is at least 0.75": no file named, the step's default one (in its
    # own folder)
    ("export_model", r"\bexports?\s+(?:it|them|the\s+(?:trained\s+|final\s+)?(?:model|models|classifier|winner|checkpoint))\b"
                     r"(?=\s*(?:[.,;!]|$|\s+(?:if|when|unless|only|once|and|then|as\s+well|too)\b))"),
    ("select_best", rf"(?<!whichever )(?<!which )\b(?:select|pick|choose|keep|take|find|identify|determine|retain|get|go\s+with|settle\s+on|opt\s+for|"
                    rf"stick\s+with|crown|declare|promote|prefer|favou?r|single\s+out|choosing)\w*\s+{skip(2)}(?:best|winner|winning|top|better|"
                    r"strongest|stronger|highest[- ]scoring|top-performing|best-performing)\b(?:\s+(?:one|model|classifier|of\s+them|result|performer))?"),
    # "tell me which one is best", "show us the best one", "let me know which k did best": the
    # choice reported to the user (the select step's result is the run's result)
    # ", with the best recall chosen": the pick said after the runs, in the passive
    ("select_best", rf"\bwith\s+the\s+(?:best|highest|top|lowest|smallest|largest)\s+(?P<sk>{METRIC_RX})\s+(?:one\s+|run\s+|model\s+)?"
                    r"(?:chosen|picked|kept|selected|taken|retained)\b"),
    ("select_best", r"\b(?:(?:tell|show|let)\s+(?:me|us)\s+(?:know\s+)?|report\s+|say\s+)(?:which|what)\s+(?:one\s+|of\s+them\s+|model\s+|run\s+|setting\s+|"
                    r"value\s+|k\s+|configuration\s+|config\s+)?(?:is|was|works?|worked|did|does|performs?|performed|scores?|scored|comes?\s+out|came\s+out)"
                    r"\s+(?:the\s+)?(?:best|better|top|highest)\b"
                    r"|\b(?:show|tell)\s+(?:me|us)\s+the\s+(?:best|top|winning|strongest)\s+(?:one|model|run|result|of\s+them)\b"
                    # "tell me which has the best recall": the metric named (the pick's extractor reads it)
                    rf"|\b(?:(?:tell|show|let)\s+(?:me|us)\s+(?:know\s+)?)(?:which|what)\s+(?:one\s+|of\s+them\s+|model\s+)?(?:has|gets|gives|scores)\s+"
                    rf"(?:the\s+)?(?:best|highest|top|lowest|better|higher|lower)\s+(?=(?:{METRIC_RX})\b)"),
    # "compare them by F1 (, and export the winner)": a comparison by a named metric picks
    ("select_best", rf"\bcompar(?:e|es|ing)\s+(?:them|both|all\s+three|the\s+(?:two|three|models|results|runs|candidates))"
                    rf"(?:\s+(?:by|on|using|in\s+terms\s+of)\s+(?:their\s+|the\s+)?(?=(?:{METRIC_RX})\b))"
                    rf"|\bcompar(?:e|es|ing)(?=\s+(?:their\s+|the\s+)?(?:{METRIC_RX})\b)"),   # "compare their f1", "compare auc"
    ("select_best", rf"\b(?:select|pick|choose)\s+by\s+(?=(?:{METRIC_RX})\b)"    # "select by AUC"
                    rf"|\b(?:select|pick|choose)\s+on\s+(?=(?:{METRIC_RX})\s*\(\s*(?:smallest|lowest|largest|highest|min|max)\s*\))"   # "select on RMSE (smallest)"
                    # "(2) best = lowest val loss", "winner: highest AUC"
                    rf"|(?:{ITEM_OPEN}|(?<=[,;:)]\s)|^)(?:best|winner|pick)\s*(?:=|:)\s*(?:the\s+)?(?:lower|lowest|higher|highest|smaller|smallest|"
                    rf"larger|largest|min|max)\s+(?=(?:{METRIC_RX})\b)"),
    # "The highest-AUC run should be selected": the pick, object first
    ("select_best", rf"\b(?:the\s+)?(?:highest|best|lowest|top|smallest|largest)[\s-](?:{METRIC_RX})\s+(?:run|model|one|candidate|configuration|version)"
                    rf"\s+(?:should|is\s+to|will|must|is\s+then\s+to)\s+be\s+(?:selected|chosen|picked|kept|retained)\b"),
    ("select_best", rf"(?:{AFTER_ARROW}|(?<=[,;:]\s)|^)(?:the\s+)?best\s+(?:one\s+|model\s+)?(?:by|on)\s+(?=(?:{METRIC_RX})\b)"
                    rf"|(?:{AFTER_ARROW}|{ITEM_OPEN})(?:the\s+)?(?:best|top|highest|lowest)\s+(?=(?:{METRIC_RX})\s*(?:{ARROW}|$|[,;.]))"),   # "-> best AUC ->"
    ("select_best", rf"\b(?:select|pick|choose|keep|take|retain|go\s+with)\s+(?:the\s+(?:one|run|model|checkpoint|base|version|candidate|classifier)\s+with\s+)?(?:the\s+)?(?:lower|lowest|higher|highest|smaller|smallest|larger|largest|better|best|min|max)\s+(?=(?:{METRIC_RX})\b)"),
    # "carry on with the one whose validation loss is lower", "keep whichever base ends lower on val loss"
    ("select_best", rf"\b(?:keep|pick|choose|select|take|use|go\s+with|carry\s+on\s+with|continue\s+with|go\s+forward\s+with|"
                    rf"proceed\s+with|stick\s+with|retain)\s+(?:the\s+(?:one|base|model|run|checkpoint|candidate|classifier)|whichever(?:\s+(?:one|base|model|run))?)\s+"
                    # ("keep the base whose validation loss comes out smaller", "retain the one whose recall is highest")
                    rf"(?:whose\s+(?=(?:(?:final|last|resulting)\s+)?(?:{METRIC_RX})\s+(?:is|comes\s+out|ends\s+up|turns\s+out)\s+(?:the\s+)?"
                    r"(?:lower|higher|smaller|larger|better|lowest|highest|smallest|largest|best)\b)"
                    rf"|ends?\s+(?:up\s+)?(?=(?:lower|higher|better)\s+on\s+(?:the\s+)?(?:{METRIC_RX})\b))"),
    # "; highest-AUC run → export ...": the selection said without a verb, as an item
    ("select_best", rf"(?:{ITEM_OPEN}|(?<=[,;:]\s))(?:the\s+)?(?:lower|lowest|higher|highest|smaller|smallest|larger|largest|better|best|top)-"
                    rf"(?:{METRIC_RX})\s+(?:one|model|run|classifier|candidate)\b"),
    # "keep the lowest-RMSE one", "hang on to the lower-val-loss one"
    # ("carry forward the min-val-loss run")
    ("select_best", rf"\b(?:select|pick|choose|keep|take|retain|go\s+with|hang\s+on\s+to|hold\s+on\s+to|stick\s+with|carry\s+forward|take\s+forward|"
                    rf"bring\s+forward)\s+the\s+"
                    rf"(?=(?:lower|lowest|higher|highest|smaller|smallest|larger|largest|better|best|top|min|max)-(?:{METRIC_RX})\s+(?:one|model|run|classifier|candidate)\b)"),
    # ("carry forward whichever finishes on the smallest validation loss")
    # ("go with the one that has the best F1", "choose the k that gives the best F1")
    ("select_best", r"\b(?:select|pick|choose|keep|take|use|carry\s+forward|take\s+forward|go\s+forward\s+with|go\s+with)\s+(?:whichever|the\s+(?:one|run|model|version|candidate)"
                    r"|the\s+(?:k|lr|learning\s+rate|value|setting|configuration|config|epochs?)(?=\s+(?:that|which)\s))\s+"
                    r"(?:one\s+)?(?:(?:that|which)\s+)?(?:has|scores|gets|is|with|ends|finishes(?:\s+(?:on|with))?|ends\s+up\s+(?:on|with)|gives|yields|produces)\s+"
                    r"(?:the\s+|with\s+the\s+)?(?:higher|highest|best|better|greater|top|lower|lowest|smaller|smallest)\b"),
    ("select_best", r"\b(?:(?:keep|pick|choose|select|take|use|go\s+with|go\s+forward\s+with|carry\s+on\s+with|proceed\s+with|"
                    r"retain|promote)\s+)?(?:whichever|the\s+(?:more|most)\s+(?:accurate|precise)|"
                    r"the\s+one\s+that\s+(?:does|scores|performs)\s+better)\b(?:\s+(?:one|model|run|is\s+more\s+accurate|is\s+better))?"
                    r"(?:\s+of\s+(?:the\s+)?(?:NUM\d+|them|these|those))?"      # "whichever of the two scores ..."
                    r"(?:\s+(?:has|gets|reaches|achieves|scores|shows|ends\s+(?:up\s+)?with|wins|does\s+better|performs\s+better|comes\s+out\s+with)\b)?"),
    ("select_best", rf"\b(?:the\s+)?(?:one|model|classifier|candidate|run)\s+(?:with|that\s+has|having)\s+(?:the\s+)?(?:best|top|highest|lowest|higher|lower|better)"
                    rf"(?P<sk>\s+(?:{METRIC_RX}))?{AUX}\s+(?:kept|selected|chosen|picked|retained)\b"),
    # "best accuracy wins and is deployed ...": the pick, then what is done with it (a search's
    # "best F1 wins)" is its metric, read with the search)
    ("select_best", rf"\b(?:the\s+)?(?:best|top|highest|lowest|higher|lower|smallest|largest)\s+(?P<sk>{METRIC_RX})\s+wins"
                    r"(?=\s+and\s+(?:is|gets|goes)\b)"),
    # a clause or arrow step of its own: "-> lower val loss wins ->", "-> smallest RMSE is the keeper",
    # "; lowest RMSE is kept and exported to ./m"
    # (", best F1 wins)" inside a search names the search's metric: "wins" only as an arrow's step)
    ("select_best", rf"(?:{AFTER_ARROW}|(?<=[,;:]\s)|^)(?:the\s+)?(?:best|top|highest|lowest|higher|lower|smallest|smaller|largest|larger)\s+"
                    rf"(?P<sk>{METRIC_RX})\s+(?:is\s+the\s+(?:keeper|winner)|(?:is|gets)\s+(?:kept|chosen|picked|selected))\b"),
    ("select_best", rf"{AFTER_ARROW}(?:the\s+)?(?:best|top|highest|lowest|higher|lower|smallest|smaller|largest|larger)\s+"
                    rf"(?P<sk>{METRIC_RX})\s+wins\b"),
    # "; higher F1 gets deployed under ruck-risk": the selection, then what is done with the winner
    ("select_best", rf"(?:{AFTER_ARROW}|(?<=[,;:.]\s)|^)(?:the\s+)?(?:best|top|highest|lowest|higher|lower|smallest|smaller|largest|larger)\s+"
                    rf"(?P<sk>{METRIC_RX})\s+(?=(?:gets|is)\s+(?:deployed|exported|served|pushed|put\s+live|saved)\b)"),
    ("select_best", rf"\b(?:the\s+)?(?:best|top|winner|winning|strongest|better)(?:\s+(?:one|model|classifier|result|of\s+them))?"
                    rf"(?P<sk>\s+(?:by|on|in\s+terms\s+of)\s+[\w-]+(?:\s+[\w-]+)?)?{AUX}\s+(?:kept|selected|chosen|picked|retained)\b"),
    # "the run whose RMSE is smallest is selected": the pick in the passive
    ("select_best", rf"\b(?:the\s+)?(?:run|one|model|candidate|classifier|base)\s+whose\s+(?:(?:final|last)\s+)?(?={METRIC_RX}\s+is\s+(?:the\s+)?"
                    r"(?:smallest|lowest|highest|largest|best)\s+(?:is|gets)\s+(?:then\s+)?(?:selected|chosen|kept|picked|retained)\b)"),
    # "take the F1 winner"
    ("select_best", rf"\b(?:take|keep|pick|use|go\s+with|choose)\s+the\s+(?=(?:{METRIC_RX})\s+winner\b)"),
    ("tune", r"(?<![\w-])hpo(?![\w-])(?:\s+(?:sweep|search|run|job))?"),    # hyperparameter optimisation, as practitioners write it
    # "search the hyperparameters of a kNN", "tune hyperparameters for a linear model"
    ("tune", r"\b(?:search|searching|tune|tuning|sweep|sweeping|optimi[sz]e|optimi[sz]ing)\s+(?:the\s+|its\s+)?hyper-?param(?:eter)?s"
             r"(?:\s+(?:of|for)(?=\s+(?:an?|the|our|its)\s))?"),
    ("tune", r"\b(?:hunt|hunting|look|looking|search|searching|scan|scanning)\s+for\s+(?:the\s+)?(?:best|optimal|right|ideal)\s+"
             r"(?=k\b|lr\b|learning\s+rate|epochs?\b|batch\s+size|neighbou?rs\b|number\s+of\s+neighbou?rs)"),   # "hunt for the best k"
    ("tune", r"(?<!the )(?<!this )(?<!that )(?<!best )(?<!-)\btuned\b(?!\s+(?:model|one|classifier|version))|(?<!-)\b(?:tune|tunes|tuning|hyper-?param(?:eter)?\s+(?:search|tuning|optimi[sz]ation|sweep)|grid\s+search|random\s+search|"
             # ("Chimney-sweep bookings", "piano tuning service": a trade's name, no search)
             # ("a search tool", "the search assistant": a product's name; "SWEEP-22:" a ticket's)
             r"sweep|search)\b(?!-\w*\d)(?![\s-]+(?:ranking|rankings|engines?|quer(?:y|ies)|results|logs?|terms|index|relevance|traffic|ads?|bar|box|history"
             r"|tools?|assistants?|bots?|apps?|portals?|pages?|features?|widgets?|interfaces?|functions?"
             r"|services?|company|business|shops?|studio|appointments?|customers?|bookings?|technicians?|visits?)\b)"),
    ("train_model", rf"\b(?:train|trains|trained|training|fit|fits|fitted|fitting|learn|build|builds|estimate|develop|"
                    rf"create|make|produce|retrain\w*|re-train\w*|refit\w*|re-fit\w*|try|tries|trying)\s+{skip(5)}{MODEL_NOUN}\b"
                    r"(?!\s+(?:datasets?|data|tables?|problems?|tasks?)\b)"),   # "make a synthetic regression dataset"
    ("train_model", r"\b(?:retrain|re-train|refit|re-fit)(?:s|ed|ing)?\b(?=\s+(?:it|them|with|on|using|the\s+model)\b)"),
    # "..., then train it": the model named before (step_references.announced_models)
    # ("and train 3 epochs a round until ...": the verb and the training's settings, its model named before)
    ("train_model", r"\b(?:train|fit)\s+(?:(?:it|them)\b(?!\s+again\b)|(?=(?:for\s+)?NUM\d+\s+(?:epochs?|rounds?|passes)\b))"),
    # "train a knn with k = 3; then, if accuracy < 0.8, try k = 7": a training again, with that value
    # ("..., try again with 50 epochs")
    ("train_model", r"(?<=[,;:]\s)(?:try|tries|trying)\s+(?:again\s+)?(?:with\s+)?(?=(?:k|lr|learning\s+rate|epochs)\s*(?:=|of\b|NUM)|NUM\d+\s+epochs\b)"),
    ("train_model", TRAIN_AGAIN),   # "train it again": a retraining
    # ("export the model trained to ./m", "the model trained earlier": the model made before, named)
    ("train_model", passive(rf"(?:(?:linear|logistic|k-?nn|centroid)\s+)?{MODEL_NOUN}", r"trained|fitted|fit|built|learned|learnt|estimated|re-?trained")
     + r"(?!\s+(?:(?:to|into)\s+FILE\d+|as\s|earlier|above|before|previously)\b)"),
    ("train_model", r"\b(?:train|trains|fit|fits|try|build|run)\s+(?:them\s+)?(?:both|each|all\s+of\s+them|each\s+of\s+them|"
                    rf"both\s+of\s+them|them\s+all|all\s+(?:two|three|four|NUM\d+))\b(?!\s+(?:a|an|the|models?|classifiers?)\b|\s+{MODEL_KIND})"),   # "train both": a question's candidates
    ("train_model", rf"{AFTER_ARROW}linear(?=\s*(?:{ARROW}|$|[,.;]))"),   # "80/20 -> linear -> evaluate"
    ("train_model", rf"\b(?:a\s+|the\s+)?(?:final\s+|plain\s+|simple\s+)?{MODEL_KIND}\b(?:\s+(?:models?|classifiers?|regressors?|"
                    r"candidates?|baselines?|fit|run))?"),
    # "How accurate is a knn on iris.csv?", "how well does it do?": a question its evaluation answers
    ("evaluate_model", r"^(?:so\s+|and\s+)?how\s+(?:accurate|well)\b"),
    # "then build a logistic regression and check how it does": its evaluation
    # ("show me how it does on the test data", "tell us how well the model performs")
    ("evaluate_model", r"\b(?:check|see|find\s+out|look\s+at|(?:show|tell)\s+(?:me|us))\s+how\s+(?:well\s+)?(?:it|they|the\s+model)\s+(?:does|do|did|performs?|performed|holds?\s+up|scores?)\b"
                       r"(?:\s+on\s+the\s+(?:test|held-out|holdout|hold-out)\s+(?:data|set|split|rows))?"),
    # "measure its performance", "look at the model's performance", "gauge its quality": its evaluation
    ("evaluate_model", r"\b(?:measure|check|gauge|assess|look\s+at|examine|review|judge)\s+(?:its|their|the\s+(?:model|classifier|regressor)\s*'s)\s+"
                       r"(?:performance|quality|skill)\b"),
    # "knn -> f1", "-> accuracy on a 25% holdout": a metric alone as an arrow's stage is its evaluation;
    # so is one ending a list right after the model ("churn.csv, logistic, recall.")
    ("evaluate_model", rf"{AFTER_ARROW}(?:{METRIC_RX})(?=\s*(?:{ARROW}|$|[,.;!])|\s+(?:on|against)\b)"
                       rf"|(?<=[,;]\s)(?:{METRIC_RX})(?=\s*(?:[.;!]|$))"),
    ("evaluate_model", r"\b(?:they|it|the\s+(?:adapters|model|models|classifier|winner))\s+(?:get|gets|are|is|will\s+be)\s+(?:then\s+)?"
                       r"(?:scored|evaluated|assessed|tested|validated|benchmarked)\b"),   # "they get scored"
    # "split it into train and test": the split's parts, not an evaluation
    ("evaluate_model", r"\b(?:evaluat\w*|evalut\w*|evaulat\w*|assess\w*|score|scores|(?<!train and )(?<!training and )(?<!train & )(?<!train/)(?<!train-)"
                       r"(?:test|tests)|validate|validates|measure|measures|benchmark|benchmarks|check)\b"
                       rf"(?!\s+(?:the\s+|our\s+|my\s+)?{SYSTEM_NOUNS}\b)"
                       r"|\beval\b(?!\s*(?:loss|accuracy|acc|set|split|data|metrics?|f1|auc|rmse|recall)\b)"   # the abbreviation
                       r"|(?:(?<=[;,:>→|]\s)|^)eval(?=\s+(?:accuracy|acc|f1|auc|rmse|recall|precision)\s*(?:[;,.|]|$))"),   # "; eval f1;"
    # "report the accuracy on the test set", "its held-out f1": a figure of held-out data is an
    # evaluation's (the training's own figures are of the rows it was fitted on); after the
    # evaluation verbs, so an evaluation said already keeps it (rules.RulePlanner._actions)
    ("evaluate_model", HELD_OUT_FIGURE),
    # "→ eval", "- eval": the evaluation as practitioners shorten it, an item of its own
    ("evaluate_model", rf"(?:{ITEM_OPEN}|(?<=[,;:]\s))eval(?=[ \t]*(?:$|\n|[.;,)]|{ARROW})|\s+[–—]\s)"),
    ("deploy_model", r"\b(?:deploy\w*|publish(?:es|ed|ing)?\b(?!\s+(?:house|company|firm))|ship|ships|release|promote|(?<!ray )(?<!behind )(?<!with )(?<!via )(?<!through )(?<!using )serve|(?<!ray )served(?=\s*(?:[.;,!)]|$))|push\w*\s+(?:it\s+|them\s+)?to\s+production|(?:take|takes|move|moves|put|puts|get|gets)\s+(?:it|them|the\s+(?:model|winner|best\s+one))\s+(?:to|into)\s+production|"
                     r"roll\s+(?:it\s+|them\s+|that\s+|this\s+|the\s+(?:winner|model|best\s+one)\s+)?out|put\s+(?:it\s+)?(?:in|into)\s+production|"
                     # "put it live under the name X", "push it live as X", "take the winner live"
                     # (its object said: "make live predictions" asks for inference, no deployment)
                     r"(?:put|push|take)\s+(?:it|them|that|the\s+(?:winner|model|best\s+one))\s+live|go\s+live"
                     # "they only get served if ...", "the model is to be deployed as x": the object first
                     r"|(?:(?:they|it|the\s+(?:model|adapters|classifier|winner))\s+(?:only\s+)?(?:get|gets|should\s+be|will\s+be|must\s+be|is\s+to\s+be|are\s+to\s+be|are|is|shall\s+be)\s+(?:only\s+)?)(?:served|deployed)\b"
                     # "the model goes live as tint-qc"
                     r"|(?:(?:the\s+)?(?:model|classifier|winner|it|they)\s+)(?:goes|going|should\s+go|will\s+go|is\s+to\s+go)\s+live"
                     # "switch it on as no-show-flag", "turn it on as x": put into service under a name
                     r"|(?:switch|turn)\s+(?:it|them|that|the\s+(?:winner|model|best\s+one))\s+on(?=\s+(?:as|under)\b))\b(?:\s+(?:to|into)\s+production)?"),
    # "put the model behind an endpoint called churn-api", "stand it up as a service named churn-api"
    ("deploy_model", r"\b(?:put|place|expose)\s+(?:it|them|the\s+(?:model|winner|classifier))\s+behind\s+(?:an?\s+|the\s+)?(?:endpoint|api|service)\b"
                     r"|\bstand\s+(?:it|them|the\s+(?:model|winner|classifier))\s+up\s+as\s+(?:an?\s+)?(?:endpoint|api|service)\b"),
    ("notify", r"\b(?:raise|fire|trigger|issue|post)\s+(?:an?\s+|the\s+)?(?:alert|alarm|notification|warning)\b"),   # "raise an alert if ..."
    ("notify", r"\b(?:send|post)\s+(?:me\s+|us\s+)?(?:a\s+|an\s+|the\s+)?(?:notification|message|alert|note|email|e-mail|ping|update)\b|\blet\s+(?:me|us|everyone|someone|people|ops|oncall|on-call|(?:the|our)\s+(?:[a-z][\w-]*\s+)?[a-z][\w-]*)\s+know\b(?:\s+with(?=\s+QUOTE))?"
               r"|\b(?:give|send)\s+(?:me\s+|us\s+|the\s+team\s+)?a\s+heads-?up\b|\bdrop\s+(?:me|us)\s+a\s+(?:line|note|message)\b"
               # "shoot me a message saying ...", "drop a note in the channel: '...'"
               r"|\b(?:shoot|fire\s+off|ping)\s+(?:me|us|the\s+team)\s+(?:a|an)\s+(?:quick\s+)?(?:message|note|email|e-mail|text|line)\b"
               r"|\b(?:drop|leave|post)\s+(?:a|an)\s+(?:quick\s+)?(?:note|message|line)\s+in\s+(?:the\s+|our\s+)?(?:[a-z-]+\s+)?(?:channel|chat|slack)\b"
               r"|\b(?:send|post)\s+(?:me\s+|us\s+)?(?=QUOTE)"
               # "post 'reorder model looks usable' to the team", "post 'done' in the channel"
               r"|\bpost\s+(?=QUOTE\d+)"
               # "send tow model run failed", "send duty free totals ready": a status line sent as
               # it is said, unquoted (extract_messages keeps it only when its words run to the
               # clause's end and close on a status word)
               r"|\bsend(?=\s+(?!(?:me|us|the|a|an|it|them|this|that|these|those|my|our|its|their|him|her|everyone|"
               r"someone|everything|results|out|off|back|over|in|to|for|along|on)\b)[a-z][\w-]*\s+[a-z])"
               r"(?![^.;,]*\bas\s+(?:a\s+|an\s+)?(?:message|note|notification|alert|text|ping)\b)"),   # (that is "sent as a message")
    ("notify", r"(?:(?:\b(?:a|an|the)\s+)?QUOTE\d+(?:\s+(?:notification|message|alert|note|e-?mail))?|\b(?:a|an|the)\s+(?:notification|message|alert|note|e-?mail))\s+(?:is|gets|will\s+be|should\s+be|(?:is|are)\s+to\s+be|must\s+be)\s+sent\b(?:\s+instead\b)?"
               r"|QUOTE\d+\s+(?:goes|go|is\s+sent|gets\s+sent|should\s+go)\s+out(?:\s+as\s+(?:a\s+|an\s+)?(?:notification|message|alert|note|e-?mail))?"),
    # "On success: 'x'", "if anything fails: 'x'": a message alone after a handler's or a condition's
    # colon (rules.RulePlanner keeps it only there)
    ("notify", r"(?<=:\s)QUOTE\d+(?=\s*(?:[.;!]|$))"),
    # "visits per page", "one row for each message": a grouping key, not a notification
    # "tell me the average amount per region": a figure asked for, not a notification
    # ("deploy it as pit-alert": a hyphenated name holds no notification)
    ("notify", r"(?<!per )(?<!each )(?<!every )(?<![\w-])(?:notify|notifies|notified|notifying|notification|notifications|alert|ping|message|"
               r"tell(?!\s+(?:me|us)\s+(?:the|what|which|how|its|their)\b)|inform|(?<!by )email|(?<!by )e-mail|page|slack"
               r"|text(?=\s+(?:me|us|the\s+team)\b))\b"
               # "the email column", "message ids": a column's name, not a message sent
               r"(?!\s+(?:columns?|fields?|address(?:es)?|ids?|text|body|domains?|counts?|lengths?)\b)"
               # "tell the front desk 'ready'": who is told, a group of people
               r"(?:\s+(?:me|us|the\s+team|someone|everyone|the\s+(?:[a-z-]+\s+)?(?:team|desk|staff|crew|office|manager|managers|owner|owners|channel|group)))?"),
    ("make_dataset", rf"\b(?:generate|generates|generating|create|creates|creating|make|makes|making|synthesi[sz]e|simulate|produce|build|fabricate|construct|"
                     # ("build the claims-per-model table": a table the request derives, named by what it holds)
                     rf"(?:fake|mock|whip|cook|dummy|spin)\s+up)\s+(?!sure\b|certain\b)(?!the\s+(?:[\w-]+\s+){{0,3}}table\b){skip(4)}"
                     r"(?:dataset|data\s+set|data|table|rows|samples|examples|records|points|observations|instances)\b"),
    ("make_dataset", r"\b(?:synthetic|toy|random|fake|dummy|artificial|simulated|generated|made-up|made\s+up|invented|mock)\s+(?:[\w-]+\s+)?(?:data|dataset|rows|samples|examples|table|records)\b"),
    # ("for the three files a.csv, b.csv and c.csv, load each one and ...": the files a map goes over)
    ("load_data", r"\b(?:(?:load|read|ingest|import|open)\s+)?(?:for\s+)?(?:each|every|all|(?<=for\s)(?:the|these|those|all)(?:\s+NUM\d+)?(?=\s+(?:files|tables|inputs)))\s+(?:of\s+)?(?:the\s+)?(?:files?|tables?|inputs?)?\s*(?:in|of|among|from)?\s*"
                  r"FILE\d+(?:\s*,\s*FILE\d+)*(?:\s*,?\s*(?:and|or|&|\+|plus)\s+FILE\d+)?"),    # "for every file in a.csv, b.csv"
    ("load_data", rf"\b(?:{LOAD_VERBS}|open|take|use|using|fetch|pull|start\s+(?:with|from)|"
                  rf"starting\s+(?:with|from)|get|grab|bring\s+in|pick\s+up)\b\s+{skip(7, LOAD_VERBS)}FILE\d+(?:\s*,\s*FILE\d+)*(?:\s*,?\s*(?:and|or|&|\+|plus)\s+FILE\d+)?"),
    ("load_data", passive(r"FILE\d+(?:\s+(?:data|file|table|dataset))?",
                          r"loaded|read|ingested|imported|fetched|pulled(?:\s+in)?|in|available|ready")),
    ("load_data", r"\b(?:from|in|at|on|of|for)\s+FILE\d+"),     # "statistics for sensors.csv"
    ("load_data", r"(?:(?<=[,;(]\s)|^)(?:the\s+)?(?:input|source)\s+FILE\d+"),   # "Prepayment model, input loan_tape.parquet."
    ("load_data", r"\b(?:load|read|ingest|open|import)\s+(?:it|them|each(?:\s+one)?|every\s+one|the\s+files?)\b"),
    ("load_data", r"(?:(?<=joined to )|(?<=linked to )|(?<=matched to )|(?<=merged to )|(?<!to ))(?<!into )(?<!onto )\bFILE\d+"),   # a data file named as the object of another step ("split iris.csv"), never a destination
    # "fit a logistic model to credit.csv": the data a model is fitted to (rules.RulePlanner keeps
    # it only right after a fit's phrase; elsewhere a file after "to" is where something is written)
    ("load_data", r"\bto\s+FILE\d+"),
    # "append feb.csv to jan.csv", "join customers.csv onto orders.csv": the other side of a
    # two-table step named just before (rules.RulePlanner keeps it only after a join or concat)
    ("load_data", "(?:" + "|".join(rf"(?<=FILE{d} {p} )" for d in (r"\d", r"\d\d") for p in ("to", "into", "onto")) + r")FILE\d+"),
]


def _passive_first(triggers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Within each kind's run of phrases, the object-first (passive) ones go first, so that
    "the blanks are imputed" claims its object before the bare verb "imputed" does."""
    out: list[tuple[str, str]] = []
    for entry, pat in triggers:
        if out and out[-1][0] == entry and AUX in pat:
            k = len(out)
            while k > 0 and out[k - 1][0] == entry and AUX not in out[k - 1][1]:
                k -= 1
            out.insert(k, (entry, pat))
        else:
            out.append((entry, pat))
    return out


TRIGGERS = _passive_first(TRIGGERS)
COMPILED = [(e, re.compile(p)) for e, p in TRIGGERS]
PREPOSITIONS = {"on", "from", "using", "with", "over", "in", "via", "of", "at", "for"}
EVAL_OBJECTS = {"it", "them", "the", "each", "every", "both", "all", "this", "that", "these", "those",
                "model", "models", "on", "how", "its", "their", "against", "one", "classifier", "every"}


