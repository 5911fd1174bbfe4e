"""Parameters read from the words of one action: what each catalog step's phrase may say.

Each extractor gets the request's :class:`Text` and the token range of the action, marks the
tokens it reads, and fills two dicts: ``params`` (the step's real parameters, e.g. EDiT's
``ranks``) and ``stated`` (what the request said, as it said it, e.g. ``workers: 2``), plus an
optional map (a list of values for one parameter) or a bound ("at most 8 workers").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from raystack.workflow.nl.lexicon import AS_THE_LIMIT, COUNT_ENDS_CLAUSE, METRIC_RX, METRICS, NUMLIST, REST_TESTED, SERVE_AS_PLACE, TRAINED_SHARE, metrics_rx
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text, Token, number

TABLE_EXT = (".csv", ".tsv", ".parquet", ".pq", ".json", ".jsonl")
IMAGE_EXT = (".png", ".jpg", ".jpeg", ".svg", ".pdf")
MODEL_KINDS = [(r"logistic(?:\s+(?:regressions?|reg)\b)?|logit", "logistic"),    # "linear reg"
               (r"linear(?:\s+(?:regressions?|reg)\b)?|least[\s-]+squares|ols", "linear"),
               (r"k-?nn|k-nearest(?:\s+neighbou?rs?)?|(?:k\s+)?nearest[\s-]+neighbou?rs?(?:\s+classifier)?"
                r"|(?<=NUM\d )nn|(?<=NUM\d\d )nn", "knn"),     # "a 5-NN model" (a bare "NN" is a neural network)
               (r"(?:nearest\s+)?centroid", "centroid")]
SYNTH_TASKS = ("copy", "reverse", "sort", "arithmetic")
EDIT_MODES = [(r"a-?edit|asynchronous\s+edit|async(?:hronous)?", "aedit"), (r"diloco", "diloco"),
              (r"post[\s-]+local[\s-]+sgd", "post_local_sgd"),
              (r"synchronous(?:\s+data[\s-]+parallel)?|ddp|data[\s-]+parallel", "sync")]
MODEL_NAMES = ("tiny-1m", "tiny-20m", "small-50m")
# a named base model: "tiny-20m", "small-50m", "llama-7b" (the part's config checks it exists)
BASE_MODEL = r"\b[a-z][a-z0-9]*-\d+(?:\.\d+)?[mkb]\b"
COUNT_NOUNS = ("models", "runs", "times", "samples", "adapters", "candidates", "variants", "jobs",
               "configs", "configurations", "separate", "different", "sizes", "settings", "values", "ways",
               "learning", "rates", "lrs", "seeds")
WORKERS = r"(?:workers?|ranks?|replicas?|processes|nodes|machines|gpus?|devices)"
MAX_ADAPTERS = 16


@dataclass
class Found:
    """What an action's words set."""

    params: dict[str, Any] = field(default_factory=dict)
    stated: dict[str, Any] = field(default_factory=dict)
    map: tuple[str, list] | None = None
    stated_map: tuple[str, list] | None = None
    bound: dict[str, Any] | None = None
    refs: dict[str, str] = field(default_factory=dict)   # param -> key of the tuned step's output

    def set(self, param: str, value: Any, stated_name: str | None = None, stated: Any = None) -> None:
        self.params[param] = value
        self.stated[stated_name or param] = value if stated is None else stated


def _search(text: Text, lo: int, hi: int, pattern: str, why: str, free: bool = True):
    """The first match in the range, its tokens marked with ``why``; None when none."""
    for m, toks in text.finditer(pattern, lo, hi, free_only=free):
        text.mark(toks, why)
        return m
    return None


def _num(text: Text, ph: str) -> float:
    return float(text.literal(ph).value())


def _list(text: Text, s: str) -> list:
    return [number(_num(text, p)) for p in re.findall(r"(?:NUM|PCT)\d+", s)]


def files(text: Text, lo: int, hi: int, exts: tuple[str, ...] | None = None) -> list[Token]:
    """Unused path tokens in the range (with one of ``exts`` when given)."""
    out = []
    for t in text.tokens[lo:hi]:
        if t.kind == "path" and (not t.used or t.used == text.claim):
            if exts is None or t.low.endswith(exts):
                out.append(t)
    return out


def claim_count(text: Text, lo: int, hi: int, n: int, before: int = 4) -> None:
    """A count that agrees with a list read from the same phrase ("three models (logistic,
    knn, centroid)", "three times, for 200, 400 and 800 steps"): the number is accounted for."""
    for tok in text.tokens[max(0, lo - before):hi]:
        if tok.kind != "num" or (tok.used and tok.used != text.claim) or tok.value() != n:
            continue
        nxt = text.tokens[tok.i + 1] if tok.i + 1 < len(text.tokens) else None
        if tok.text.isalpha() or (nxt is not None and nxt.low in COUNT_NOUNS):
            text.mark([tok] + ([nxt] if nxt is not None and nxt.low in ("times", "separate", "different", "ways", "sizes")
                               and not nxt.used else []), "count")
            return


def consume(text: Text, lo: int, hi: int, pattern: str, why: str) -> None:
    """Mark every match in the range (the step's own vocabulary, said more than once)."""
    for _, toks in text.finditer(pattern, lo, hi, free_only=True):
        text.mark(toks, text.claim or why)


def _metric_key(word: str) -> str:
    """A metric's name with each run of spaces or hyphens as one space, as METRIC_RX matches it."""
    return re.sub(r"[\s-]+", " ", word.strip().lower())


_METRIC_BY_KEY = {_metric_key(k): v for k, v in METRICS.items()}


def metric_of(word: str) -> str:
    return _METRIC_BY_KEY[_metric_key(word)]     # "val loss", "val-loss", "held-out loss"


def _path_param(text: Text, lo: int, hi: int, f: Found, param: str, exts: tuple[str, ...] | None,
                why: str) -> None:
    m = _search(text, lo, hi, r"(?:(?:to|as|into|in|at|under)\s+)?(?P<f>FILE\d+)", why)
    if m:
        tok = text.literal(m.group("f"))
        if exts is None or tok.low.endswith(exts) or "." not in os.path.basename(tok.text):
            f.set(param, tok.text)


# -- per step ---------------------------------------------------------------------------------
def make_dataset(text: Text, lo: int, hi: int, f: Found) -> None:
    consume(text, lo, hi, r"\b(?:synthetic|toy|random|fake|dummy|artificial|simulated|generated)\b(?!\s+seed)", "data")
    noun = r"(?:[a-z][\w-]*\s+){0,3}?(?:rows?|samples?|examples?|records?|points?|observations?|instances?)\b"
    m = _search(text, lo, hi, rf"(?P<l>{NUMLIST})\s+{noun}", "rows")
    if m:
        f.map = ("rows", [int(v) for v in _list(text, m.group("l"))])
    else:
        m = _search(text, lo, hi, rf"(?P<n>NUM\d+)\s*(?:-\s*)?{noun}", "rows") or \
            _search(text, lo, hi, r"(?:rows|samples|examples)\s*(?:=|:|of)?\s*(?P<n>NUM\d+)", "rows")
        if m:
            f.set("rows", int(_num(text, m.group("n"))))
    m = _search(text, lo, hi, r"(?P<n>NUM\d+)\s+(?:features?|columns?|dimensions?|dims|variables)", "features")
    if m:
        f.set("features", int(_num(text, m.group("n"))))
    _seed(text, lo, hi, f)
    # "with 0.2 noise", "noise of 0.3", "noise level 0.1": the generator's label noise
    m = _search(text, lo, hi, r"\b(?P<n>NUM\d+)\s+(?:label\s+)?noise\b|\bnoise(?:\s+level)?\s*(?:=|:|of|at)?\s*(?P<m>NUM\d+)", "noise")
    if m:
        f.set("noise", float(_num(text, m.group("n") or m.group("m"))))
    m = _search(text, lo, hi, r"\b(?P<t>regression|classification)\s+(?=dataset|data\b|task|problem|rows|samples|examples|table)"
                              r"|\bfor\s+(?P<u>regression|classification)\b", "task")
    if m:
        f.set("task", m.group("t") or m.group("u"))


def load_data(text: Text, lo: int, hi: int, f: Found) -> None:
    paths = [t for t in files(text, lo, hi) if t.low.endswith(TABLE_EXT) or "." not in os.path.basename(t.text.rstrip("/"))]
    if len(paths) > 1:
        text.mark(paths, "path")
        f.map = ("path", [t.text for t in paths])
    elif paths:
        text.mark(paths, "path")
        f.set("path", paths[0].text)


def load_checkpoint(text: Text, lo: int, hi: int, f: Found) -> None:
    ps = files(text, lo, hi)
    if ps:
        text.mark(ps[:1], "path")
        f.set("path", ps[0].text)
    # "using the checkpoint in ./ckpt as the base, fine-tune ...": what the checkpoint is for
    consume(text, lo, hi, r"\bas\s+(?:the\s+|a\s+|our\s+)?(?:base|starting\s+point)(?:\s+(?:model|checkpoint))?\b", "checkpoint")


def _seed(text: Text, lo: int, hi: int, f: Found) -> None:
    """"seed 7", "with random seed 42", "seed=3": the step's random seed (generated data, a
    sample drawn, a split)."""
    m = _search(text, lo, hi, r"\b(?:(?:with|using)\s+)?(?:a\s+|the\s+)?(?:random\s+)?seed\s*(?:=|of|:)?\s*(?P<n>NUM\d+)", "seed")
    if m:
        f.set("seed", int(_num(text, m.group("n"))))


ROWS_UNIT = r"(?:rows?|records?|examples|entries)"
NEWEST = r"newest|latest|most\s+recent|final"      # the rows at a time-ordered file's end
OLDEST = r"oldest|earliest"
ROWS_UNIT_OR_LINES = r"(?:rows?|records?|examples|entries|lines?)"


def sample(text: Text, lo: int, hi: int, f: Found) -> None:
    _seed(text, lo, hi, f)
    m = _search(text, lo, hi, rf"\b(?:the\s+|its\s+|their\s+)?(?P<w>first|last|head|tail|{NEWEST}|{OLDEST})(?=\s+NUM\d+\s+(?:{ROWS_UNIT_OR_LINES}|[a-z]+s)\b"
                              rf"|\s+PCT\d+\s+of\b|\s+NUM\d+{COUNT_ENDS_CLAUSE})", "which rows")
    if m:      # "keep the first 100 rows": in file order, not drawn ("tail 100k rows": the last, as the shell says it;
        # "the newest 200,000 rows": the last, the rows appended in time order)
        w = re.sub(r"\s+", " ", m.group("w"))
        f.set("which", "first" if w in ("head", "oldest", "earliest") else "last" if w != "first" else "first")
    else:      # "sample 2,000 rows at random", "sample 5% (random)": how a sample is drawn anyway
        consume(text, lo, hi, r"\b(?:(?:drawn|chosen|picked|selected)\s+)?at\s+random\b|\brandomly(?:\s+(?:drawn|chosen|picked|selected))?\b"
                              r"|\(\s*(?:random|randomly|at\s+random)\s*\)", "random draw")
    rows = _search(text, lo, hi, rf"(?P<l>{NUMLIST})\s*-?\s*(?:random\s+)?{ROWS_UNIT}\b", "row counts") or \
        _search(text, lo, hi, rf"(?P<l>NUM\d+\s+{ROWS_UNIT}(?:\s*,\s*NUM\d+\s+{ROWS_UNIT})*"      # "2,000 rows, 8,000 rows"
                              rf"(?:\s*,?\s*(?:(?:and|or|&)\s+)?NUM\d+\s+{ROWS_UNIT}))\b", "row counts")
    if rows and not re.search(r"PCT\d+", rows.group("l")):   # "samples of 1k, 5k and 10k rows"
        f.map = ("rows", [int(v) for v in _list(text, rows.group("l"))])
        claim_count(text, lo, hi, len(f.map[1]))
        return
    m = rows or _search(text, lo, hi, rf"(?P<l>{NUMLIST})", "fractions")
    if m and all(x.startswith("PCT") for x in re.findall(r"(?:NUM|PCT)\d+", m.group("l"))):
        f.map = ("fraction", _list(text, m.group("l")))
        claim_count(text, lo, hi, len(f.map[1]))
        return
    if m:
        raise PlanRefused([f"sample sizes {text.span_text(text.covered(*m.span('l')))!r}: give "
                           "percentages or row counts"])
    m = _search(text, lo, hi, r"(?P<p>PCT\d+)", "fraction") or \
        _search(text, lo, hi, r"fraction\s*(?:of|=)?\s*(?P<p>NUM\d+)", "fraction")
    if m:
        f.set("fraction", number(_num(text, m.group("p"))))
        return
    m = _search(text, lo, hi, r"(?P<n>NUM\d+)\s*-?\s*(?:random\s+)?(?:rows?|records?|samples|examples|entries|lines?)\b", "rows") or \
        _search(text, lo, hi, r"(?:(?<=first\s)|(?<=last\s)|(?<=latest\s)|(?<=newest\s)|(?<=recent\s)|(?<=final\s)|(?<=oldest\s)|(?<=earliest\s))"
                              rf"(?P<n>NUM\d+)(?:\s+[a-z]+s\b|{COUNT_ENDS_CLAUSE})", "rows")   # "the first 500 customers", "the latest 100,000 events", "the first 10,000,"
    if m:
        f.set("rows", int(_num(text, m.group("n") or m.groupdict().get("m"))))


def split_data(text: Text, lo: int, hi: int, f: Found) -> None:
    _seed(text, lo, hi, f)
    consume(text, lo, hi, r"(?<=PCT\d\s)to\s+test\s+(?:on|with)\b|(?<=PCT\d\d\s)to\s+test\s+(?:on|with)\b", "split")   # "hold out 25% to test with"
    # "keep 25% back as the test portion"
    consume(text, lo, hi, r"\bas\s+(?:the\s+|a\s+|our\s+)?(?:test|testing|holdout|hold-out|validation)\s+(?:portion|part|set|split|share|slice)\b", "split")
    # "a 25% test share is reserved", "the holdout set is kept back": the split said in the passive
    consume(text, lo, hi, r"(?:(?<=share\s)|(?<=set\s)|(?<=portion\s)|(?<=split\s)|(?<=slice\s)|(?<=part\s))"
                          r"(?:is|gets|should\s+be|will\s+be|is\s+to\s+be)\s+(?:reserved|held\s+(?:out|back)|set\s+aside|kept\s+(?:back|aside)|withheld)\b",
            "split")
    consume(text, lo, hi, r"\b(?:into\s+)?(?:(?:a|the)\s+)?(?:training|train)\s+(?:and|/)\s+(?:test(?:ing)?|validation|eval)"
                          r"(?:\s+(?:sets?|splits?|portions?|parts?|data))?|\b(?:ratio|proportion)\b", "split")
    m = _search(text, lo, hi, r"(?P<r>RATIO\d+)", "ratio")
    if m:
        a, b = (int(x) for x in re.findall(r"\d+", text.literal(m.group("r")).text))
        if a + b != 100:
            raise PlanRefused([f"split {a}/{b}: the parts do not add up to 100"])
        f.set("test_fraction", number(round(b / 100.0, 4)))
        return
    # "into 90% train and 10% test", "90% training / 10% test data": both parts named with their shares
    part = r"(?:sets?|splits?|portions?|parts?|data|rows)"
    m = _search(text, lo, hi, rf"\b(?:into\s+)?(?P<a>PCT\d+)\s+(?:for\s+)?(?:training|train)(?:\s+{part})?\s*(?:and|/|,)\s*"
                              rf"(?P<b>PCT\d+)\s+(?:for\s+)?(?:test(?:ing)?|hold-?out|validation|eval(?:uation)?)(?:\s+{part})?\b", "ratio")
    if m:
        a, b = _num(text, m.group("a")), _num(text, m.group("b"))
        if abs(a + b - 1.0) > 1e-9:
            raise PlanRefused([f"split {number(a * 100)}% / {number(b * 100)}%: the parts do not add up to 100"])
        f.set("test_fraction", number(round(b, 4)))
        return
    # "train it on 80% of the data and test it on the rest": the share trained on, the rest the test's
    # (the trigger saw the rest said after it; the split's own words end at "the data")
    trained_share = next(text.finditer(TRAINED_SHARE + REST_TESTED, lo, len(text.tokens)), None)
    m = _search(text, lo, hi, TRAINED_SHARE, "ratio") if trained_share is not None and trained_share[1][0].i < hi else None
    if m:
        # "... and test it on the rest": the evaluation's words for the split's other part
        consume(text, lo, len(text.tokens), r"(?<=\bon\s)the\s+(?:rest|remainder|remaining(?:\s+(?:PCT\d+|rows|data))?)\b", "split")
        f.set("test_fraction", number(round(1.0 - _num(text, m.group("a")), 4)))
        return
    if _search(text, lo, hi, r"\b(?:in|into)\s+(?:(?:two|NUM\d+)\s+)?(?:half|halves|equal\s+(?:halves|parts))\b", "halves"):
        f.set("test_fraction", 0.5)     # "split it in half"
        return
    m = _search(text, lo, hi, r"(?P<p>PCT\d+)(?:\s+(?:of\s+(?:the\s+)?(?:data|rows|it|them)\s+)?(?:(?:out|aside|back|apart|off)\s+)?"
                              r"(?:(?:as|for)\s+(?:a\s+|the\s+)?|(?:goes|go|is|are)\s+(?:to|into|for)\s+(?:the\s+)?)?"   # "30% goes to test"
                              r"(?:test(?:ing)?|hold-?out|validation|eval(?:uation)?)"
                              r"(?:\s+(?:set|split|data|fraction))?)?", "test fraction") or \
        _search(text, lo, hi, r"test[\s_-]+(?:fraction|size|share|split|set|portion|part)\s*(?:(?:should|will|must)\s+be|is|of|=|:)?\s*"
                              r"(?P<p>NUM\d+|PCT\d+)", "test fraction") or \
        _search(text, lo, hi, r"(?P<p>NUM\d+)\s+test[\s_-]+(?:fraction|size|share)\b", "test fraction")
    if m:
        share = _num(text, m.group("p"))
        if not 0 < share < 1:   # "test size of 2020" set a share the split rejects only when it runs
            raise PlanRefused([f"a test share of {text.literal(m.group('p')).text}: say it as a percentage or a fraction "
                               "between 0 and 1"])
        f.set("test_fraction", number(share))


def report(text: Text, lo: int, hi: int, f: Found) -> None:
    """A report's file, and the metrics it names (they say what it reports)."""
    _path_param(text, lo, hi, f, "path", None, "output file")
    consume(text, lo, hi, rf"\b(?:(?:its|the|their)\s+)?(?:{METRIC_RX})\b", "report")
    consume(text, lo, hi, r"\b(?:summary|final|short|brief|full|detailed|json|markdown|html|text|written|saved|stored)\b", "report")
    # "a short report of the findings", "a report on the results": what the report holds, the results before it
    consume(text, lo, hi, r"(?<=\breport\s)(?:of|on|with|about)\s+(?:the|its|their|our)\s+(?:findings|results|outcomes?|numbers|figures)\b", "report")
    # "a report on the three trails together": one report over all of them
    consume(text, lo, hi, r"(?<=\breport\s)(?:on|of|for|covering)\s+(?:the\s+|all\s+(?:the\s+)?)?(?:NUM\d+|both|all)\s+[a-z][\w-]*\s+together\b"
                          r"|(?<=\breport\s)(?:on|of|for|covering)\s+(?:them|all\s+of\s+them|both(?:\s+of\s+them)?)\s+together\b", "report")


def write_table(text: Text, lo: int, hi: int, f: Found) -> None:
    """The table's file; "save it as csv" with no file named: the step's default name, in CSV."""
    model = next(text.finditer(r"\b(?:the|that|this|its|our)\s+(?:trained\s+|fitted\s+|final\s+|best\s+)?"
                               r"(?:model|classifier|regressor|checkpoint|adapters?)\b(?=\s+(?:to|as|into|in)\s+FILE\d+)", lo, hi), None)
    if model is not None:    # "write the model to out/model.csv" wrote the loaded table there
        raise PlanRefused([f"{text.span_text(model[1])!r}: a table file holds no model; export it to a directory "
                           "('export the model to ./models/x')"])
    _table_file(text, lo, hi, f)
    # "a copy written to out/t.parquet": the table written is a copy of it
    consume(text, max(0, lo - 3), hi, r"\b(?:a\s+|one\s+)?copy(?=\s+(?:(?:saved|written|stored)\s+)?(?:to|as|in|into)\s+FILE\d+)"
                                      r"|\b(?:a\s+|one\s+)?copy(?=\s+(?:written|saved|stored)\b)", "write_table")
    # "save them as JSON to out/x.json", "export it as a Parquet file to out/x.parquet": the format the file's name says
    consume(text, lo, hi, r"\bas\s+(?:a\s+)?(?:json(?:\s+lines)?|jsonl|csv|tsv|parquet)(?:\s+file)?(?=\s+(?:to|in|into|at)\s+FILE\d+)", "output file")
    if "path" not in f.params and _search(text, lo, hi, r"\bcsv\b", "output file", free=False):
        f.set("path", "table.csv")
    # "write the rollup to x.parquet": the table an earlier step made, by what it holds
    consume(text, lo, hi, r"\b(?:the|that|this|those|these)\s+(?:rollup|roll-up|rollups|totals|aggregates?|aggregation|"
                          r"breakdown|counts|averages|sums|means|medians|maxima|minima|maximums|minimums|tallies"
                          r"|per-[a-z_]+\s+(?:totals|counts|averages|sums|means|medians))\b", "output file")


def file_out(param: str = "path", exts: tuple[str, ...] | None = None, noun: str = "") -> Callable:
    def ex(text: Text, lo: int, hi: int, f: Found) -> None:
        _path_param(text, lo, hi, f, param, exts, "output file")
        if noun:
            consume(text, lo, hi, rf"\b{noun}(?:as\s+|to\s+|into\s+)?(?:a\s+|the\s+)?(?:tables?|parquet|csv)\b", "output file")
    return ex


_table_file = file_out("path", TABLE_EXT, "(?:table\\s+)?")


def train_model(text: Text, lo: int, hi: int, f: Found) -> None:
    kinds: list[str] = []
    for m, toks in text.finditer("|".join(rf"\b(?:{p})\b" for p, _ in MODEL_KINDS), lo, hi, free_only=True):
        # ("nn" matches only after a number, which fullmatch cannot see: a "5-NN" is a knn)
        kind = next((k for p, k in MODEL_KINDS if re.fullmatch(p, m.group(0))), "knn")
        text.mark(toks, "model kind")
        if kind not in kinds:
            kinds.append(kind)
    if len(kinds) == 1:
        f.set("model", kinds[0])
    elif kinds:
        f.map = ("model", kinds)
        claim_count(text, lo, hi, len(kinds))
    m = _search(text, lo, hi, r"\b(?:with|using|at)\s+(?:the\s+|that\s+|this\s+|its\s+)?(?:best|winning|tuned|chosen|selected|optimal)\s+"
                              r"(?P<p>k|lr|learning\s+rate|batch\s+size|epochs)\b", "tuned value")
    if m:
        f.refs[{"learning rate": "lr", "batch size": "batch_size"}.get(re.sub(r"\s+", " ", m.group("p")), m.group("p"))] = "best"
    ep = EPOCH_WORDS
    per_run = epochs_said_per_run(text, lo, hi)
    m = None if per_run else _search(text, lo, hi, rf"(?:for\s+)?(?P<l>{NUMLIST})\s+{ep}", "epochs") or \
        _search(text, lo, hi, rf"(?:(?:at|with)\s+)?{ep}\s*(?:=|:|∈|in|of)?\s*(?P<l>{NUMLIST})", "epochs")   # "at epochs=5, 15, 30", "epochs 5 | 10 | 20"
    if per_run or m:
        _set_map(f, "epochs", per_run or [int(v) for v in _list(text, m.group("l"))])
        claim_count(text, lo, hi, len(f.map[1]))     # "three logistic models for 10, 20 and 40 epochs"
    else:
        # "epochs=40" before "N epochs": in "lr=0.05 epochs=40" the 0.05 is the learning rate's
        m = _search(text, lo, hi, rf"{ep}\s*(?:=|:)\s*(?P<n>NUM\d+)", "epochs") or \
            _search(text, lo, hi, rf"(?<![=:]\s)(?<![=:])(?P<n>NUM\d+)\s*-?\s*{ep}", "epochs") or \
            _search(text, lo, hi, rf"{ep}\s*(?:of)?\s*(?P<n>NUM\d+)", "epochs")
        if m:
            f.set("epochs", whole_epochs(_num(text, m.group("n"))))
    # ("one knn per k value, 3, 7 and 11", "one per k: 3, 7, 11")
    m = _search(text, lo, hi, rf"\b(?:(?:for\s+)?(?:each|every)\s+|per\s+)?k(?:[\s-]+values?(?:\s*,)?)?\s*(?:=|:|∈|in|of|from|at|set\s+to)?\s*(?P<l>{NUMLIST})"
                              # "with k=3 and k=5": the name said with each value
                              r"|\bk\s*=\s*(?P<r>NUM\d+(?:\s*(?:,|,?\s*(?:and|or|&))\s*k\s*=\s*NUM\d+)+)"     # (", k=15, k=25")
                              rf"|(?P<n>{NUMLIST})\s*(?:nearest[\s-]+)?neighbou?rs\b", "k values")
    if m:      # ("trying a few values of k (3, 5, 9)": how the values are said)
        consume(text, lo, hi, r"\b(?:trying|try|testing|with)\s+(?:a\s+few\s+|several\s+|some\s+|different\s+|a\s+couple\s+of\s+|NUM\d+\s+)?"
                              r"(?:values|settings|choices)\s+(?:of|for)(?=\s+k\b)", "k values")
    if m:      # "three kNN classifiers with k = 3, 7 and 15", "one kNN for each k in 3, 7, 15",
        # "k set to 3, 5 and 9", "with 3, 5 and 7 neighbours"
        _set_map(f, "k", [int(_num(text, v)) for v in re.findall(r"NUM\d+", m.group("r"))] if m.group("r")
                 else [int(v) for v in _list(text, m.group("l") or m.group("n"))])
        claim_count(text, lo, hi, len(f.map[1]))
    elif m := _search(text, lo, hi, r"\b(?:(?:for\s+)?(?:each|every)\s+)?k(?:[\s-]+values?)?\s*(?:(?:ranging|going|running)\s+)?(?:(?:from|=|:|in)\s*(?P<a>NUM\d+)\s+(?:to|through|thru|up\s+to)"
                                    r"|between\s+(?P<b>NUM\d+)\s+and)\s+(?P<z>NUM\d+)", "k range"):
        _set_map(f, "k", _int_range(text, m.group("a") or m.group("b"), m.group("z"), "k"))   # "for k from 1 to 5"
        claim_count(text, lo, hi, len(f.map[1]))
    m = _search(text, lo, hi, r"\bk\s*(?:=|:|of|(?:equal|set)\s+to|equals|is|should\s+be|must\s+be|will\s+be)?\s*(?P<n>NUM\d+)|(?P<m>NUM\d+)\s*-?\s*(?:nearest[\s-]+)?neighbou?rs?\b", "k") or \
        _search(text, lo, hi, r"(?P<m>NUM\d+)(?=\s*-?\s*(?:nearest[\s-]+neighbou?rs?|nn)\b)", "k")   # "a 5-nearest-neighbour model", "5-NN"
    if m:      # "kNN (k = 7)", "retrain with k = 3", "5 neighbours"
        f.set("k", int(_num(text, m.groupdict().get("n") or m.group("m"))))
        # "a 7-nearest-neighbour classifier (kNN, k=7, ...)": the same k said twice
        for m2, toks in text.finditer(r"\bk\s*(?:=|:)?\s*(?P<n>NUM\d+)|(?P<m>NUM\d+)(?=\s*-?\s*(?:nearest[\s-]+neighbou?rs?|nn)\b)",
                                      lo, hi, free_only=True):
            if int(_num(text, m2.group("n") or m2.group("m"))) == f.params["k"]:
                text.mark(toks, "k")
    lr = r"(?:learning[\s-]+rates?|lrs?|step\s+sizes?)(?:\s+values?)?"     # ("one run per lr value (0.001 / 0.01)")
    # ("at three learning rates (0.01, 0.03, 0.1)", "... rates — 0.001, 0.01 and 0.1 —": the list set off)
    m = _search(text, lo, hi, rf"{lr}\s*(?:\(|—|–|=|:|of|at|in|∈|over|set\s+to)?\s*(?P<l>{NUMLIST})(?:\s*[)—–])?",
                "learning rate") or \
        _search(text, lo, hi, rf"(?:with\s+)?(?P<l>{NUMLIST})\s+as\s+(?:the\s+|its\s+)?{lr}", "learning rate") or \
        _search(text, lo, hi, rf"(?:for\s+)?each\s+{lr}\s+(?:in|of|from)\s+(?P<l>{NUMLIST})", "learning rate")
    if m:
        _set_map(f, "lr", _list(text, m.group("l")))
        claim_count(text, lo, hi, len(f.map[1]))     # "at three learning rates (0.01, 0.03, 0.1)"
    else:
        m = _search(text, lo, hi, rf"{lr}\s*(?:=|:|of|at)?\s*(?P<n>NUM\d+)", "learning rate")
        if m:
            f.set("lr", number(_num(text, m.group("n"))))
    # "once for each batch size: 8, 32 and 128": one model per batch size
    m = None if f.map is not None else _search(
        text, lo, hi, rf"(?:(?:once\s+)?(?:for\s+)?(?:each|every)\s+)?batch[\s_-]*sizes?\s*(?:\(|—|–|=|:|of|at|in|∈|set\s+to)?\s*"
                      rf"(?P<l>{NUMLIST})(?:\s*[)—–])?", "batch size")
    if m:
        _set_map(f, "batch_size", [int(v) for v in _list(text, m.group("l"))])
        claim_count(text, lo, hi, len(f.map[1]))
    # "with batch size 16", "a batch size of 32", "in mini-batches of 64 rows", "64-row batches"
    m = None if m else _search(text, lo, hi, r"(?:a\s+|the\s+)?batch[\s_-]*size\s*(?:=|:|of)?\s*(?P<n>NUM\d+)"
                              r"|(?:in\s+)?(?:mini-?)?batch(?:es)?\s+of\s+(?P<m>NUM\d+)(?:\s+(?:rows|examples|samples|records))?"
                              r"|(?P<r>NUM\d+)\s*-?\s*(?:rows?|examples?|samples?)\s+(?:mini-?)?batch(?:es)?", "batch size")
    if m:
        f.set("batch_size", int(_num(text, m.group("n") or m.group("m") or m.group("r"))))
    if f.map is not None:   # "with k set to 3, 6 and 9 in turn", "(one model per rate)": the map's own words
        consume(text, lo, hi, r"\b(?:each\s+)?in\s+turn\b|\b(?:(?:a|one)\s+(?:model|run)\s+)?(?:per|for\s+each)\s+"
                              r"(?:rate|value|setting|k|lr|learning\s+rate|choice|size|batch\s+size)(?:\s+values?)?\b"
                              # "a separate fit for each", "one model for each"
                              r"|\b(?:a|one)\s+(?:separate\s+)?(?:fit|model|run|training)\s+(?:for|per)\s+each(?:\s+(?:one|value|k))?\b", "map")
    m = _search(text, lo, hi, TARGET_COLUMN, "target") or _search(text, lo, hi, TARGET_WORD, "target")
    column = next((v for v in m.groupdict().values() if v), None) if m else None
    if column is not None and column not in NOT_TARGETS:
        f.set("target", column)
    elif column is None:
        _target_said_predicted(text, lo, hi, f)


def whole_epochs(value: float) -> int:
    """An epoch count as said: a whole number of at least one ("0.5 epochs" ran 0, silently)."""
    if value != int(value) or value < 1:
        raise PlanRefused([f"{number(value)} epochs: a training runs a whole number of epochs, at least one"])
    return int(value)


def _target_said_predicted(text: Text, lo: int, hi: int, f: Found) -> None:
    """"we'd like to predict kg donated ... train a linear model on kg": a model "on" one word is
    that word's model when the request says the word is what it predicts (alone, "on kg" could
    name the input, as in "regress y on x")."""
    for m, toks in text.finditer(rf"(?:(?<=model\s)|(?<=regression\s)|(?<=regressor\s)|(?<=classifier\s))on\s+(?P<h>{_COLUMN})"
                                 + _CLAUSE_END, lo, hi, free_only=True):
        word = m.group("h")
        if re.search(rf"\b(?:predict|predicting|predicts|forecast|forecasting)\s+(?:the\s+)?{re.escape(word)}\b", text.masked):
            text.mark(toks, "target")
            f.set("target", word)
            return


# the column a model predicts, said as a column: "to predict the power column", "a classifier for the
# delayed column", "with price as the target", "target column: churn", "label = y" ("to predict
# finish times" stays the model's purpose)
TARGET_COLUMN = (r"\b(?:to\s+)?(?:predict|predicting|forecast|forecasting|estimate|estimating|classify|classifying)\s+"
                 r"(?:the\s+|its\s+)?(?:values?\s+(?:of|in)\s+(?:the\s+)?)?(?P<a>[a-z_][a-z0-9_]*)\s+column\b"
                 r"|\b(?:model|classifier|regression|regressor|predictor)\s+for\s+(?:the\s+)?(?P<b>[a-z_][a-z0-9_]*)\s+column\b"
                 r"|\b(?:with|using|taking)\s+(?:the\s+)?(?P<c>[a-z_][a-z0-9_]*)\s+(?:column\s+)?as\s+(?:the\s+|its\s+)?"
                 r"(?:target|label|outcome|response|dependent)(?:\s+(?:column|variable))?\b"
                 # "fit a linear regression, labour_hours being the target", "(minutes is the target)"
                 r"|(?<=\(\s)(?P<h2>[a-z_][a-z0-9_]*)\s+is\s+(?:the\s+)?(?:target|label)(?=\s*\))"
                 r"|(?<=,\s)(?P<h>[a-z][a-z0-9]*_[a-z0-9_]+)\s+being\s+(?:the\s+|its\s+)?(?:target|label)(?:\s+column)?\b"
                 r"|\b(?:whose\s+|the\s+)?(?:target|label)(?:\s+column\s*(?:=|:|is)?|\s*(?:=|:)|\s+column\s+named)\s*(?P<d>[a-z_][a-z0-9_]*)\b"
                 r"|\b(?:whose|the)\s+(?:target|label)\s+is\s+(?P<d2>[a-z_][a-z0-9_]*)\b")    # "whose label is y", "the target is y"
# words after "predicting" / "target" that name no column: a pronoun, a time word (and a metric:
# "target rmse")
NOT_TARGETS = {"the", "a", "an", "it", "its", "them", "this", "that", "which", "what", "whether", "how", "who", "when",
               "each", "every", "all", "future", "later", "now", "us", "me", "you", "of", "is", "value", "values"}
# (an auxiliary ends it too: "a logistic model predicting won is trained ...")
_CLAUSE_END = (r"(?=\s*(?:[,.;:!?()\]]|->|→|—|–|$)|\s+(?:from|on|with|using|and|then|in|at|over|under|no|not|capped|limited"
               r"|is|are|was|were|gets|get|will|should|must|after|before|once)\b"
               # "predicting churn for 3 epochs", "... for k = 5, 15 and 25": a setting of the training follows
               r"|\s+for\s+(?:NUM\d+|k\s*=|(?:up\s+to|at\s+most|max(?:imum)?)\s+NUM\d+|(?:each|every)\s+(?:k|NUM\d+)\b)"
               r"|\s+per\s+k\b)")     # ("one knn for churn per k value, 3, 7 and 11")
_COLUMN = rf"(?!(?:{'|'.join(sorted(NOT_TARGETS))}|{METRIC_RX})\b)[a-z_][a-z0-9_]*"
# what is predicted may be named like a metric that is also a column's everyday name ("kNN ...,
# predicting score"); a model's own figures (rmse, accuracy, auc, ...) are never predicted
PREDICTABLE_METRICS = {"score", "error", "loss"}
_PREDICTED = (rf"(?!(?:{'|'.join(sorted(NOT_TARGETS))}|{metrics_rx(k for k in METRICS if k not in PREDICTABLE_METRICS)})\b)"
              r"[a-z_][a-z0-9_]*")
# the column said as one word right after what names it, the word ending a clause: "a linear model
# predicting minutes, ...", "linear regression, target heat_mwh", "a regression for minutes with
# ..." ("predicting finish times", two words, stays the model's purpose)
TARGET_WORD = (rf"\b(?:predicting|to\s+predict|that\s+predicts|which\s+predicts|forecasting|to\s+forecast|to\s+estimate|estimating"
               rf"|to\s+classify|classifying|that\s+classifies)\s+(?P<e>{_PREDICTED})"
               + _CLAUSE_END + rf"|(?:(?<=regression\s)|(?<=regressor\s)|(?<=model\s)|(?<=classifier\s)|(?<=knn\s)|(?<=regressions\s)"
               rf"|(?<=\blinear\s)|(?<=\blogistic\s)|(?<=\bcentroid\s)"   # ("tune linear for intake_kg")
               rf"|(?<=regressors\s)|(?<=models\s)|(?<=classifiers\s)"   # ("kNN classifiers for water_claim")
               rf"|(?<=model\strained\s)|(?<=model\sfitted\s)|(?<=model\sbuilt\s)|(?<=is\strained\s)|(?<=are\strained\s))for\s+(?P<f>{_COLUMN})"
               + _CLAUSE_END + rf"|\b(?:target|label)\s+(?P<g>{_COLUMN})" + _CLAUSE_END
               # "a k-nearest-neighbour classifier targeting churn"; "a knn, k of 5, for churn": the column after the
               # training's settings, set off by a comma
               + rf"|\btarget(?:t)?ing\s+(?P<tg>{_COLUMN})" + _CLAUSE_END
               + rf"|(?<=,\s)for\s+(?P<fc>{_COLUMN})(?=\s*(?:[.;!]|$))"
               # "knn models with k 3, 5 and 7 for churn", "a logistic model for 20 epochs for churn": after its settings
               + rf"|(?:(?<=NUM\d\s)|(?<=NUM\d\d\s)|(?<=\bepochs\s)|(?<=\bneighbours\s)|(?<=\bneighbors\s))for\s+(?P<fn>{_COLUMN})" + _CLAUSE_END
               # "fit a logistic regression on it for churn": the data named, then the column
               # ("a nearest centroid classifier on iris.csv for species": the file named, then the column)
               + rf"|(?:(?<=\bon\sit\s)|(?<=\bon\sthem\s)|(?<=\bthe\sdata\s)|(?<=\btraining\sset\s)|(?<=\btraining\ssplit\s)|(?<=\btrain\ssplit\s)"
               r"|(?<=\bon\sFILE\d\s)|(?<=\bon\sFILE\d\d\s))"
               rf"for\s+(?P<fo>{_COLUMN})" + _CLAUSE_END
               # "a days_to_sale regression": a column written as a name before the model's noun (never
               # a table's or a version's name: "a sales_data model", "a churn_v2 model")
               + r"|(?:(?<=\ba\s)|(?<=\ban\s))(?P<u>[a-z][a-z0-9]*_(?![a-z0-9_]*_(?:data|table|rows|set|model)\b)"
                 r"(?!(?:data|table|rows|set|model|v\d+)\b)[a-z0-9_]+)(?=\s+(?:regression|regressor|classifier|predictor|model)\b)"
               # "a logistic model of prepaid_12m": a column written as a name after "model of"
               + r"|(?:(?<=model\s)|(?<=regression\s)|(?<=classifier\s))of\s+(?P<o>[a-z][a-z0-9]*_[a-z0-9_]+)" + _CLAUSE_END
               # "train linear regression on eggs_sold three times": a column written as a name after
               # "on" (never a split's or a table's: "on train_rows", "on sales_data")
               + r"|(?:(?<=model\s)|(?<=regression\s)|(?<=classifier\s)|(?<=regressor\s)|(?<=knn\s)|(?<=decoder\s)|(?<=models\s)"
               r"|(?<=classifiers\s)|(?<=regressions\s)|(?<=neighbours\s)|(?<=neighbors\s)"
               r"|(?<=\blogistic\s)|(?<=\blinear\s)|(?<=\bcentroid\s)"      # ("logistic on rejected", as "logistic for rejected")
               # ("a k nearest neighbours with k three on slow_stop": after the model's k)
               r"|(?<=\bk\sNUM\d\s)|(?<=\bk\sNUM\d\d\s)|(?<=\bk=NUM\d\s)|(?<=\bk\s=\sNUM\d\s)"
               r"|(?<=\bepochs\s)|(?<=\bneighbours\s)|(?<=\bneighbors\s))on\s+"     # ("... with 10 and 20 epochs on price_usd")
               r"(?P<n>(?!(?:train|test|val|valid|validation|training|holdout|eval)_)(?![a-z0-9_]*_(?:set|split|data|rows|features|df|table)\b)"
               r"[a-z][a-z0-9]*_[a-z0-9_]+)(?=\s+NUM\d+\s+times\b|" + _CLAUSE_END[3:])


BOUND_UNITS = [(r"workers?|ranks?|replicas?|processes|nodes|machines", "workers"), (r"gpus?", "gpus"),
               (r"gb|gib|gigs?|gigabytes?", "memory_gb")]
_UNIT = "|".join(rf"(?P<u{i}>{p})" for i, (p, _) in enumerate(BOUND_UNITS))
# what caps a count: "at most 8 workers", "never on more than 6 nodes"
CAP = (r"(?:at\s+most|up\s+to|no\s+more\s+than|not\s+more\s+than|never\s+(?:on\s+|with\s+|using\s+|use\s+)?more\s+than|"
       # "the job never being given more than eight workers", "never using over 24 GB of memory"
       r"(?:the\s+(?:job|run|training)\s+)?never\s+(?:being\s+given|given|getting|using|taking|needing)\s+(?:more\s+than|over|above)|a\s+maximum\s+of|maximum\s+of|max(?:imum)?|capped\s+at|limited\s+to|<=|≤"
       # "don't let it grow beyond 6 workers", "keeping it to 2 GPUs", "with a cap of 4 GPUs"
       r"|(?:don't|do\s+not|never)\s+let\s+it\s+(?:grow|go|scale|expand|use)\s+(?:beyond|past|above|over|more\s+than)"
       r"|keep(?:ing|s)?\s+(?:it|this|the\s+(?:job|run)|memory|ram|the\s+memory)\s+(?:to|under|within|at)(?!\s+NUM\d+\s*\S*\s+or\s+(?:fewer|less)\b)"
       r"|(?:with\s+)?a\s+(?:cap|limit|ceiling)\s+of"
       r"|under|within"     # ("under 16 GB of memory", as "keep it under" says)
       r"|limit(?:s|ed)?\s+(?:it|that|this|them|the\s+(?:job|run|training|fine-tune|fine-tuning))\s+to"   # ("Limit it to 1 GPU.")
       # "allowed as many as 8 workers", "(and) don't use more than 16 workers"
       r"|(?:allowed|allowing|given|giving\s+it|permitted)\s+(?:as\s+many\s+as|up\s+to|at\s+most)"
       r"|(?:don't|do\s+not|never)\s+(?:use|give\s+it|run\s+(?:it\s+)?on)\s+more\s+than)")
BOUND_PATTERNS = [
    rf"(?:(?:with|and)\s+)?(?:the\s+)?(?:(?P<w>workers?|gpus?)(?:\s+count)?|memory|ram)\s+(?:capped|limited)\s+(?:at|to)\s+(?P<n>NUM\d+)\s*(?:{_UNIT})?\b",
    # "cap memory at 8GB", "capping the workers at 4"
    rf"\bcap(?:ping|s)?\s+(?:the\s+)?(?:(?P<w>workers?|gpus?)(?:\s+count)?|memory|ram)\s+(?:at|to)\s+(?P<n>NUM\d+)\s*(?:{_UNIT})?\b",
    # "GPU budget of 2", "a worker limit of 4"
    rf"(?:(?:with|and|under|within)\s+)?(?:a\s+|the\s+)?(?:(?P<w>workers?|gpus?)|memory|ram)\s+(?:budget|cap|limit|ceiling)\s+(?:of|at|:)?\s*(?P<n>NUM\d+)\s*(?:{_UNIT})?\b",
    rf"(?:(?:on|with|using|across|over|in)\s+)?(?:(?:memory|ram|mem)\s*)?{CAP}\s*(?P<n>NUM\d+)\s*(?:{_UNIT})\b(?:\s+of\s+(?:memory|ram))?",
    # "workers ≤ 6", "gpus <= 2", "max_workers=6": a setting, as a list or a config writes it
    r"\b(?:max_)?(?P<w>workers?|gpus?)\s*(?:<=|≤|=|:)\s*(?P<n>NUM\d+)\b(?:\s+(?:at\s+(?:the\s+)?most|max(?:imum)?|tops)\b)?",   # ("GPUs: 2 at most")
    # "a 16GB memory cap", "an 8-worker limit", "4 GPUs max"
    rf"(?:(?:with|and|under|within)\s+)?(?:a\s+|an\s+)?(?P<n>NUM\d+)\s*-?\s*(?:{_UNIT})\s+(?:of\s+)?(?:memory\s+|ram\s+)?"
    rf"(?:cap|limit|ceiling|budget|max(?:imum)?|at\s+(?:the\s+)?most|tops)\b",
    # "with 4 workers as the upper limit", "2 GPUs being the maximum"
    rf"(?:(?:with|and|on|using)\s+)?(?P<n>NUM\d+)\s*(?:{_UNIT})\s+{AS_THE_LIMIT}",
    # "keep it to four workers or fewer", "on 4 GPUs or less"
    rf"(?:(?:keep|keeping)\s+(?:it|them|this|the\s+(?:job|run)|memory|ram|the\s+memory)\s+to\s+|(?:on|with|using)\s+)?(?P<n>NUM\d+)\s*(?:{_UNIT})\s+or\s+(?:fewer|less)\b",
]


def resource_bound(text: Text, lo: int, hi: int, f: Found) -> None:
    """"on at most 4 workers", "no more than 16 GB of memory", "GPUs capped at 4": a bound on
    the resources of any step (one per step), kept as a bound, never a parameter."""
    for pat in BOUND_PATTERNS:
        m = _search(text, lo, hi, pat, "resource bound")
        if m is None:
            continue
        unit = next((name for i, (_, name) in enumerate(BOUND_UNITS) if m.groupdict().get(f"u{i}")), None)
        if unit is None:
            w = (m.groupdict().get("w") or "").lower()
            unit = "gpus" if w.startswith("gpu") else "workers" if w else "memory_gb"
        f.bound = {"param": unit, "op": "<=", "value": number(_num(text, m.group("n")))}
        return


MAX_RANGE = 32


def _int_range(text: Text, lo_num: str, hi_num: str, param: str) -> list[int]:
    """The whole numbers from one to the other, both included ("k from 1 to 5")."""
    a, b = _num(text, lo_num), _num(text, hi_num)
    if a != int(a) or b != int(b) or a > b:
        raise PlanRefused([f"{param} from {number(a)} to {number(b)}: give whole numbers, the smaller first"])
    if b - a + 1 > MAX_RANGE:
        raise PlanRefused([f"{param} from {int(a)} to {int(b)} is {int(b - a + 1)} runs (at most {MAX_RANGE} in a map): "
                           "give a shorter range or a list, or tune it"])
    return list(range(int(a), int(b) + 1))


EPOCH_WORDS = r"(?:epochs?|passes|training\s+epochs)"


def epochs_said_per_run(text: Text, lo: int, hi: int) -> list[int] | None:
    """A run per number of epochs, each said on its own: "one with 5 epochs, one with 10 and one
    with 20", "a run at one epoch, one at three, one at five", "five epochs, fifteen epochs and
    thirty epochs" (the values; None: not said so)."""
    one = rf"(?:one|a\s+run|a\s+model|NUM\d+)\s+(?:with|at|for|of)\s+NUM\d+(?:\s+{EPOCH_WORDS})?"
    m = _search(text, lo, hi, rf"(?P<l>{one}(?:\s*,\s*{one})*\s*,?\s*(?:(?:and|&)\s+)?{one})", "epochs")
    if m is not None and re.search(EPOCH_WORDS, m.group("l")):
        return [int(_num(text, v)) for v in re.findall(r"\b(?:with|at|for|of)\s+(NUM\d+)", m.group("l"))]
    each = rf"NUM\d+\s+{EPOCH_WORDS}"
    m = _search(text, lo, hi, rf"(?P<l>{each}(?:\s*,\s*{each})*\s*,?\s*(?:and|or|&)\s+{each})", "epochs")
    return [int(v) for v in _list(text, m.group("l"))] if m else None


def _set_map(f: Found, param: str, values: list) -> None:
    if f.map is not None:
        raise PlanRefused([f"two lists to map over ({f.map[0]} and {param}); give one list per step"])
    f.map = (param, values)


def deploy_model(text: Text, lo: int, hi: int, f: Found) -> None:
    consume(text, lo, hi, SERVE_AS_PLACE, "serve")    # "deploy it behind Ray Serve"
    consume(text, lo, hi, r"\b(?:to|into|in)\s+(?:prod|production|live)\b", "deploy")    # "promote to prod as x"
    m = _search(text, lo, hi, r"\b(?:under\s+the\s+name|named|called|with\s+the\s+name|as)\s+(?!a\b|an\b|the\b|it\b|well\b|soon\b|QUOTE)"
                              r"(?P<n>[a-z_][a-z0-9_\-]*)", "name") or \
        _search(text, lo, hi, r"\bunder\s+(?P<n>[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+)\b", "name") or \
        _search(text, lo, hi, r"(?<=deploy\s)(?P<n>[a-z][a-z0-9]*(?:-[a-z0-9]+)+)\b", "name") or \
        _search(text, lo, hi, r"\b(?:under\s+the\s+name|named|called|as)\s+(?P<q>QUOTE\d+)", "name") or \
        _search(text, lo, hi, r"\(\s*name\s*[:=]\s*(?P<n>[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*)\s*\)", "name")   # "(name: enrol-forecast)"
    if m:
        f.set("name", m.group("n") if m.groupdict().get("n") else text.literal(m.group("q")).value())
    m = _search(text, lo, hi, r"(?:to|into|in)\s+(?P<d>FILE\d+)", "directory")
    if m:
        f.set("directory", text.literal(m.group("d")).text)


def cleanup(text: Text, lo: int, hi: int, f: Found) -> None:
    # a directory only when named as one ("the tmp directory"); "the scratch space / directory",
    # "temp files" are the run's own scratch, the step's default
    m = _search(text, lo, hi, r"\b(?P<d>tmp|scratch|staging|work)\s+(?=dir\b|dirs\b|directory|directories|folders?\b)", "directory", free=False)
    if m:
        if m.group("d") != "scratch":
            f.set("directory", m.group("d"))
        return
    ps = files(text, lo, hi)
    if ps:
        text.mark(ps[:1], "directory")
        f.set("directory", ps[0].text.rstrip("/"))


from raystack.workflow.nl import extract_charts as C  # noqa: E402 - they use the helpers above
from raystack.workflow.nl import extract_cleaning as K  # noqa: E402
from raystack.workflow.nl import extract_evals as E  # noqa: E402
from raystack.workflow.nl import extract_groups as G  # noqa: E402
from raystack.workflow.nl import extract_messages as M  # noqa: E402
from raystack.workflow.nl import extract_parts as P  # noqa: E402
from raystack.workflow.nl import extract_tables as T  # noqa: E402

EXTRACTORS: dict[str, Callable[[Text, int, int, Found], None]] = {
    "make_dataset": make_dataset, "load_data": load_data, "load_checkpoint": load_checkpoint, "load_adapters": load_checkpoint,
    "impute": K.impute, "dedup": K.dedup, "clean_data": K.clean_data, "normalize": K.normalize, "sample": sample, "split_data": split_data, "join": T.join, "concat": T.concat,
    "aggregate": G.aggregate, "plot": C.plot, "save_report": report,
    "write_table": write_table, "export_model": file_out("path"),
    "train_model": train_model, "evaluate_model": E.evaluate_model, "evaluate_dlrm": E.evaluate_dlrm,
    "evaluate_adapters": E.evaluate_adapters, "select_best": E.metric_param(with_mode=True),
    "deploy_model": deploy_model, "notify": M.notify, "cleanup": cleanup,
    "edit_pretrain": P.edit_pretrain, "mlora_finetune": P.mlora_finetune,
    "elastic_dlrm": P.elastic_dlrm, "serve_adapters": P.serve_adapters,
}
