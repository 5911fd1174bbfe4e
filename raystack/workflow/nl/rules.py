"""The offline rule planner: plain English to a draft, every word accounted for.

1. :func:`raystack.workflow.nl.safety.screen` refuses destructive requests outright.
2. Per sentence, construct cues are found first (exit handlers, conditions and their else
   branch, loops with their bound, retries, "in parallel"), then *actions*: phrases that name a
   catalog step ("drop duplicate rows", "fit a knn classifier", "pretrain an LLM with EDiT").
   Each action owns the words up to the next action or cue; its extractor reads parameters
   there (:mod:`raystack.workflow.nl.extract`).
3. Words no rule used must be fillers, or describe the data or model right before a head noun
   ("the telecom churn data", "a fraud classifier"). Anything else makes the plan a refusal
   that quotes the words: a guess is worse than an honest refusal.
4. The draft goes to :func:`raystack.workflow.nl.build.build` (wiring, checks, the IR).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from raystack.workflow.catalog import CATALOG
from raystack.workflow.ir import TuneSpec
from raystack.workflow.nl import lexicon as L
from raystack.workflow.nl.build import build
from raystack.workflow.nl.extract import EXTRACTORS, TABLE_EXT, Found, files, metric_of
from raystack.workflow.nl.plan import Cond, Draft, DraftStep, LoopSpec, Plan, PlanRefused
from raystack.workflow.nl.safety import screen
from raystack.workflow.nl.text import Text, Token, number, sentences

_SK = r"(?:[^\s,.;:]+\s+)"


def skip(n: int) -> str:
    """Up to n words inside a phrase; they stay unmarked, for extractors and the accounting."""
    return f"(?P<sk>{_SK}{{0,{n}}}?)"


MODEL_NOUN = r"(?:models?|classifiers?|regressors?|regression|predictors?|estimators?|learners?|k-?nn|knn|centroid|logistic|linear)"
# (catalog step, pattern) in priority order: an earlier, more specific phrase claims its words
TRIGGERS: list[tuple[str, str]] = [
    ("cleanup", rf"\b(?:clean\s*up|cleanup|remove|delete|erase|wipe|purge|clear|empty|tidy\s+up|get\s+rid\s+of)\s+{skip(3)}"
                r"(?:tmp|temp|temporary|scratch|intermediate|staging)\b(?:\s+(?:files?|director(?:y|ies)|folders?|dirs?|data|outputs?|space|area))?"),
    ("cleanup", r"\bclean\s*up\s+(?:afterwards|after\s+(?:itself|yourself|the\s+run)|at\s+the\s+end)\b|\bclean\s*up\b(?=\s*(?:[.;,]|$))"),
    ("load_checkpoint", rf"\b(?:load|read|restore|open|take|use|using|start\s+from|starting\s+from|from|resume\s+from|begin\s+(?:with|from))\s+"
                        rf"{skip(3)}checkpoints?\s+(?:at|in|from|under|stored\s+(?:at|in))?\s*FILE\d+"),
    ("edit_pretrain", r"\b(?:train|run|use|using)\w*\s+" + skip(3) + r"(?:llm|language\s+models?)\b(?!\s+adapters)"),
    ("edit_pretrain", r"\bpre-?train(?:s|ing)?\b|\bpre-training\b|\bpretraining\b"
                      r"|(?<!the )(?<!a )(?<!an )(?<!that )(?<!this )\bpre-?trained\b(?!\s+(?:checkpoint|model|weights|base|llm))"),
    ("edit_pretrain", r"\b(?:a-?edit|edit|diloco)\b(?:\s+local\s+sgd)?|\blocal\s+sgd\b"),
    ("mlora_finetune", r"\b(?:fine-?tun\w*|finetun\w*)\b"),
    ("mlora_finetune", rf"\b(?:train|trains|training|fit|learn|build|create|make)\s+{skip(3)}(?:lora|dora)?\s*adapters?\b"),
    ("mlora_finetune", r"\bmlora\b|\b(?:lora|dora)\s+adapters?\b"),
    ("serve_adapters", rf"\b(?:serve|serves|serving|deploy\w*|host|hosts|expose|publish)\s+{skip(3)}adapters?\b"
                       r"|(?<!with )(?<!using )(?<!via )(?<!on )\bray\s+serve\b"),
    ("evaluate_adapters", rf"\b(?:evaluat\w*|assess\w*|score|test|validate|measure|benchmark|check)\s+{skip(4)}adapters?\b(?:\s+do)?"),
    ("elastic_dlrm", rf"\b(?:train|trains|training|fit|fits|run|learn|build)\w*\s+{skip(5)}(?:dlrm|recommend\w*|recsys|"
                     r"click-?through(?:-rate)?|ctr|criteo|ad\s+click)\b(?:\s+(?:models?|training|prediction))?"),
    ("elastic_dlrm", r"\belastic(?:ally)?\b(?:\s+(?:training|dlrm))?|\bdlrm\b(?:\s+(?:models?|training))?|\brecommend(?:er|ation)\b|\brecsys\b"),
    ("dedup", r"\bde-?dup\w*\b|\bdeduplicat\w*\b"),
    ("dedup", rf"\b(?:drop|drops|remove|removes|delete|discard|eliminate|filter\s+out|get\s+rid\s+of|strip)\s+{skip(2)}duplicat\w*"
              r"(?:\s+(?:rows|records|entries|lines|transactions|events|clicks?))?"),
    ("dedup", r"\bkeep\s+(?:only\s+)?(?:the\s+)?unique\s+(?:rows|records)\b"),
    ("impute", r"\bimput\w*\b(?:\s+(?:the\s+|any\s+)?(?:missing|null|nan)\s*(?:values?|entries|cells|data)?)?"),
    ("impute", rf"\b(?:fill|fills|filling|replace|replaces|patch|substitute)\s+(?:in\s+)?{skip(2)}(?:missing|null|nan|nulls|nans|empty|blank|na|gaps)\b"
               r"(?:\s+(?:values?|entries|cells|data|fields))?"),
    ("clean_data", rf"\b(?:drop|drops|remove|removes|delete|discard|exclude|eliminate|filter\s+out|get\s+rid\s+of|throw\s+away|skip)\s+{skip(3)}"
                   r"(?:missing|null|nulls|nan|nans|empty|incomplete|blank|na|invalid)\b(?:\s+(?:values?|entries|cells|fields|rows|records|data))?"),
    ("clean_data", r"\bdropna\b|\bclean(?:s|ed|ing)?\s+up\s+(?:the\s+)?(?:data|dataset|table|records|rows)\b|\bclean(?:s|ed|ing)?\b(?!\s*up)"),
    ("normalize", r"\b(?:normali[sz]\w*|standardi[sz]\w*|re-?scal\w*|scale|scales|scaled|scaling|z-?scor\w*|min-?max)\b"
                  r"(?:\s+(?:the\s+|all\s+)?(?:numeric\s+|numerical\s+|feature\s+|input\s+)?(?:features|columns|values|inputs|variables))?"),
    ("split_data", r"\btrain\s*/\s*(?:test|validation|val)\b(?:\s+split)?|\btrain-test\s+split\b|\btrain\s+test\s+split\b|\bRATIO\d+\s+split\b"),
    ("split_data", r"\b(?:split|splits|splitting|partition\w*|divide)\b(?:\s+off)?|\bhold(?:ing)?\s+out\b|\bholdout\b|\bhold-out\b"),
    ("sample", r"\b(?:randomly\s+)?(?:sub-?sampl\w*|down-?sampl\w*|sample)\s+(?=NUM|PCT|the\b|a\b|an\b|it\b|them\b|down\b|rows\b)"),
    ("sample", r"\b(?:take|draw|pick|select|keep|grab|use)\s+(?:a\s+|an\s+)?(?:random\s+)?(?:PCT\d+\s+|NUM\d+\s+)?(?:random\s+)?(?:sample|subset|fraction|portion)\b"),
    ("sample", r"\b(?:take|draw|pick|select|keep|grab)\s+(?:a\s+|an\s+)?(?:random\s+)?(?:PCT\d+|NUM\d+)\s+(?:random\s+)?(?:rows|records|of)\b"),
    ("join", r"(?<!the )(?<!a )\b(?:join|joins|joined|joining|merge|merges|merged|merging|combine|combines|combined)\b"
             r"(?:\s+(?:them|the\s+two(?:\s+tables)?|both(?:\s+tables)?|the\s+tables|these|those))?"),
    ("aggregate", rf"\b(?:(?:compute|calculate|get|find|work\s+out|report)\s+(?:the\s+)?)?(?:sum|sums|total|totals|count|counts|"
                  rf"average|averages|avg|mean|tally|add\s+up)\w*\s+{skip(3)}(?:per|by|for\s+each)\s+(?!NUM)\w+"),
    ("aggregate", r"\b(?:aggregat\w*|group\w*\s+by|roll\s*up|summari[sz]e\w*\s+(?=\w+\s+(?:per|by)\b))\b"),
    ("stats", rf"\b(?:compute|calculate|get|produce|report|show|print|collect|gather|derive|generate)\s+{skip(2)}"
              r"(?:summary\s+|descriptive\s+|basic\s+|column\s+|some\s+)?(?:statistics|stats)\b"),
    ("stats", rf"\b(?:describe|profile|summari[sz]e)\w*\b(?:\s+{skip(3)}with\s+(?:summary\s+)?(?:statistics|stats))?|\b(?:summary|descriptive)\s+(?:statistics|stats)\b"),
    ("plot", r"\b(?:make|create|produce|generate)\s+(?:a|an)\s+(?:histogram|bar\s+chart|chart|graph|plot|figure)\b"),
    ("plot", r"\b(?:plot|plots|plotted|plotting|chart|charts|charted|graph|graphs|visuali[sz]\w*|draw|render)\b"
             r"(?:\s+(?:a|an|the)?\s*(?:histogram|bar\s+chart|chart|graph|plot|line\s+chart|figure))?"),
    ("save_report", rf"\b(?:write|writes|save|saves|store|produce|create|generate|dump|output|export|log|record|put)\w*\s+{skip(3)}"
                    r"(?:report|results|result|metrics|scores|findings)\b(?:\s+(?:to|in|into|as|at)\s+FILE\d+)?"
                    r"|\breport\s+(?:to|in|into|as)\s+FILE\d+"),
    ("save_report", rf"\breport\s+{skip(3)}(?:to|in|into|as)\s+FILE\d+"),
    ("write_table", rf"\b(?:write|writes|save|saves|store|stores|export|dump|persist|output|put)\w*\s+{skip(4)}(?:to|as|into|in)\s+(?P<f>FILE\d+)"),
    ("export_model", rf"\b(?:export|exports|save|saves|write|writes|store|dump|serialize|persist)\w*\s+{skip(4)}(?:to|as|into|in)\s+(?P<f>FILE\d+)"),
    ("select_best", rf"\b(?:select|pick|choose|keep|take|find|identify|determine|retain|get)\w*\s+{skip(2)}(?:best|winner|winning|top|better|"
                    r"strongest|highest[- ]scoring|top-performing|best-performing)\b(?:\s+(?:one|model|classifier|of\s+them|result|performer))?"),
    ("select_best", rf"\b(?:select|pick|choose|keep|take|use)\s+(?:whichever|the\s+one)\s+(?:one\s+)?(?:has|scores|gets|is|with)\s+"
                    r"(?:the\s+)?(?:higher|highest|best|better|greater|top)\b"),
    ("tune", r"\b(?:tune|tunes|tuning|hyper-?parameter\s+(?:search|tuning|optimi[sz]ation|sweep)|grid\s+search|random\s+search|"
             r"sweep|search)\b"),
    ("train_model", rf"\b(?:train|trains|trained|training|fit|fits|fitted|fitting|learn|build|builds|estimate|develop|"
                    rf"create|make|produce|retrain\w*|re-train\w*)\s+{skip(5)}{MODEL_NOUN}\b"),
    ("train_model", rf"\b{MODEL_NOUN}\s+(?:should|must|will|is|gets|has\s+to|needs\s+to)?\s*(?:be\s+)?"
                    r"(?:trained|fitted|fit|built|learned)\b"),
    ("evaluate_model", r"\b(?:evaluat\w*|assess\w*|score|scores|test|tests|validate|validates|measure|measures|benchmark|benchmarks|check)\b"),
    ("deploy_model", r"\b(?:deploy\w*|publish\w*|ship|ships|release|promote|(?<!ray )serve|push\w*\s+(?:it\s+|them\s+)?to\s+production|"
                     r"roll\s+out|put\s+(?:it\s+)?(?:in|into)\s+production)\b(?:\s+(?:to|into)\s+production)?"),
    ("notify", r"\bsend\s+(?:me\s+|us\s+)?(?:a\s+|an\s+|the\s+)?(?:notification|message|alert|note|email|e-mail|ping|update)\b|\blet\s+(?:me|us)\s+know\b"),
    ("notify", r"\b(?:notify|notifies|notified|alert|ping|message|tell|inform|email|e-mail|page|slack)\b(?:\s+(?:me|us|the\s+team|someone|everyone))?"),
    ("make_dataset", rf"\b(?:generate|generates|create|creates|make|makes|synthesi[sz]e|simulate|produce|build|fabricate|construct)\s+{skip(4)}"
                     r"(?:dataset|data\s+set|data|table|rows|samples|examples|records|points|observations|instances)\b"),
    ("make_dataset", r"\b(?:synthetic|toy|random|fake|dummy|artificial|simulated)\s+(?:\w+\s+)?(?:data|dataset|rows|samples|examples|table|records)\b"
                     r"|\bgenerated\s+(?:data|dataset)\b"),
    ("load_data", rf"\b(?:load|loads|loaded|loading|read|reads|reading|ingest\w*|import\w*|open|take|use|using|fetch|pull|start\s+with|"
                  rf"starting\s+with|get|for|grab|bring\s+in|pick\s+up)\b\s+{skip(7)}FILE\d+(?:\s*,\s*FILE\d+)*(?:\s*,?\s*(?:and|or)\s+FILE\d+)?"),
    ("load_data", r"\b(?:from|in|at|on|of)\s+FILE\d+"),
    ("load_data", r"\b(?:load|read|ingest|open|import)\s+(?:it|them|each(?:\s+one)?|every\s+one|the\s+files?)\b"),
    ("load_data", r"\bFILE\d+"),   # a data file named as the object of another step ("split iris.csv")
]
_TRIGGERS = [(e, re.compile(p)) for e, p in TRIGGERS]
PREPOSITIONS = {"on", "from", "using", "with", "over", "in", "via", "of", "at"}
EVAL_OBJECTS = {"it", "them", "the", "each", "every", "both", "all", "this", "that", "these", "those",
                "model", "models", "on", "how", "its", "their", "against", "one", "classifier", "every"}


@dataclass
class Action:
    entry: str
    lo: int                      # first token of the trigger
    hi: int                      # one past the action's last token (set per sentence)
    trig_end: int
    sentence: int
    prepositional: bool = False
    has_file: bool = False
    extra: list = field(default_factory=list)   # steps made before this one from its words
    zlo: int = -1                # first token of the action's words (its trigger, or the sentence start)
    found: Found = field(default_factory=Found)
    step: DraftStep | None = None


@dataclass
class Cue:
    kind: str                    # exit | cond | else | loop | retry | parallel
    lo: int
    hi: int
    sentence: int
    data: dict = field(default_factory=dict)


class RulePlanner:
    """The default offline planner (no model, no network)."""

    def plan(self, text: str, name: str = "planned") -> Plan:
        """A validated Plan for ``text``, or PlanRefused saying why not."""
        return build(self.draft(text), name)

    def draft(self, text: str) -> Draft:
        if not text or not text.strip():
            raise PlanRefused(["the request is empty"], "out_of_scope")
        screen(text)
        t = Text.parse(text)
        if re.search(L.UNBOUNDED, t.masked):
            raise PlanRefused([f"the request asks for an unbounded loop: "
                               f"{re.search(L.UNBOUNDED, t.masked).group(0)!r}"], "unbounded")
        actions: list[Action] = []
        cues: list[Cue] = []
        for si, (lo, hi) in enumerate(sentences(t)):
            s_cues = self._cues(t, lo, hi, si)
            s_actions = self._actions(t, lo, hi, si, s_cues)
            cues += s_cues
            actions += s_actions
        if not actions:
            raise PlanRefused([f"no workflow step in {text.strip()[:80]!r}"], "out_of_scope")
        self._resolve_context(t, actions)
        for a in actions:
            ex = EXTRACTORS.get(a.entry)
            if ex is not None:
                with t.claiming(a.entry):
                    ex(t, a.zlo, a.hi, a.found)
        steps = self._steps(t, actions, cues)
        self._account(t)
        return Draft(text.strip(), steps)

    # -- cues ---------------------------------------------------------------------------------
    def _cues(self, t: Text, lo: int, hi: int, si: int) -> list[Cue]:
        cues: list[Cue] = []
        for pat in L.RETRIES:
            for m, toks in t.finditer(pat, lo, hi, free_only=True):
                n = int(float(t.literal(m.group("n") or "").value())) if m.groupdict().get("n") else \
                    int(float(t.literal(m.group("t")).value())) - 1
                t.mark(toks, "retries")
                cues.append(Cue("retry", toks[0].i, toks[-1].i + 1, si, {"n": n}))
        for pat, kind in L.EXIT_CUES:
            for m, toks in t.finditer(pat, lo, hi, free_only=True):
                t.mark(toks, "exit")
                cues.append(Cue("exit", toks[0].i, toks[-1].i + 1, si, {"kind": kind}))
        for m, toks in t.finditer(L.END_PHRASES, lo, hi, free_only=True):
            t.mark(toks, "end")
        for m, toks in t.finditer(rf"\b{L.UNTIL_CUE}\s+(?:the\s+|its\s+|their\s+|it\s+|model's\s+)?"
                                  rf"{L.METRIC_MOD}(?P<m>{L.METRIC_RX})\s+", lo, hi, free_only=True):
            cmp = self._comparison(t, toks[-1].i + 1, hi)
            if cmp is None:
                raise PlanRefused([f"the loop condition {t.span_text(toks)!r}... is not a comparison "
                                   "with a number"])
            op, value, end = cmp
            metric = metric_of(m.group("m"))
            if op == "reach":
                op = "<=" if metric in L.LOWER_IS_BETTER else ">="
            t.mark(t.tokens[toks[0].i:end], "loop")
            b = t.finditer(L.BOUND, lo, hi, free_only=True)
            bound = next(b, None)
            if bound is None:
                raise PlanRefused([f"the loop {t.span_text(t.tokens[toks[0].i:end])!r} has no bound; "
                                   "say 'at most N times'"], "unbounded")
            bm, btoks = bound
            t.mark(btoks, "loop bound")
            n = next(g for g in (bm.group("n"), bm.group("n2"), bm.group("n3")) if g)
            cues.append(Cue("loop", toks[0].i, end, si, {"metric": metric, "op": op, "value": value,
                                                      "max": int(float(t.literal(n).value()))}))
            for m2, toks2 in t.finditer(r"\b(?:repeat(?:ing|edly)?|keep|keeps|keeping|again|iterat\w*|re-?run\w*|rounds?|runs)\b",
                                        lo, hi, free_only=True):
                t.mark(toks2, "loop")
        for m, toks in t.finditer(rf"\b{L.IF_CUE}\s+(?:the\s+|its\s+|their\s+|it's\s+|model's\s+)?"
                                  rf"{L.METRIC_MOD}(?P<m>{L.METRIC_RX})\s+", lo, hi, free_only=True):
            cmp = self._comparison(t, toks[-1].i + 1, hi)
            if cmp is None:
                continue
            op, value, end = cmp
            metric = metric_of(m.group("m"))
            if op == "reach":
                op = "<=" if metric in L.LOWER_IS_BETTER else ">="
            t.mark(t.tokens[toks[0].i:end], "condition")
            cues.append(Cue("cond", toks[0].i, end, si, {"metric": metric, "op": op, "value": value}))
        for m, toks in t.finditer(rf"\b{L.ELSE_CUE}\b", lo, hi, free_only=True):
            t.mark(toks, "otherwise")
            cues.append(Cue("else", toks[0].i, toks[-1].i + 1, si))
        for m, toks in t.finditer(L.PARALLEL, lo, hi, free_only=True):
            t.mark(toks, "parallel")
            cues.append(Cue("parallel", toks[0].i, toks[-1].i + 1, si))
        for m, toks in t.finditer(L.PURPOSE, lo, hi, free_only=True):
            if toks[0].i == lo:
                t.mark(toks, "purpose")
        for m, toks in t.finditer(L.SEQUENCE, lo, hi, free_only=True):
            t.mark(toks, "sequence")
            cues.append(Cue("seq", toks[0].i, toks[-1].i + 1, si))
        for tok in t.tokens[lo:hi]:
            if tok.text == ",":
                cues.append(Cue("comma", tok.i, tok.i + 1, si))
        return sorted(cues, key=lambda c: c.lo)

    def _comparison(self, t: Text, i: int, hi: int) -> tuple[str, float, int] | None:
        """(op, value, end token) of a comparison starting at token i."""
        for pat, op in L.COMPARISONS:
            hit = t.match_at(pat, i, hi)
            if hit is not None:
                m, toks = hit
                v = t.literal(m.group("v"))
                return op, number(float(v.value())), toks[-1].i + 1
        return None

    # -- actions ------------------------------------------------------------------------------
    def _actions(self, t: Text, lo: int, hi: int, si: int, cues: list[Cue]) -> list[Action]:
        found: list[Action] = []
        for entry, rx in _TRIGGERS:
            for m, toks in t.finditer(rx, lo, hi, free_only=True):
                if entry == "evaluate_model" and not self._is_eval_verb(t, toks[0]):
                    continue
                if entry == "write_table" and not t.literal(m.group("f")).low.endswith(TABLE_EXT[:4]):
                    continue
                if entry == "export_model" and t.literal(m.group("f")).low.endswith(TABLE_EXT[:4]):
                    continue
                if entry in ("load_data", "load_checkpoint") and "FILE" in m.group(0) and any(
                        x.kind == "path" and x.used and x.used != entry for x in toks):
                    continue
                if entry == "load_data" and "FILE" in m.group(0) and not any(
                        x.kind == "path" and (x.low.endswith(TABLE_EXT) or "." not in x.text.rsplit("/", 1)[-1])
                        for x in toks):
                    continue
                if entry == "save_report" and self._table_result(t, m, toks, hi):
                    entry_here = "write_table"
                else:
                    entry_here = entry
                skipped = set()
                if "sk" in rx.groupindex and m.group("sk"):
                    skipped = {x.i for x in t.covered(*m.span("sk"))}
                mark = [x for x in toks if x.i not in skipped]
                t.mark(mark, entry_here)
                entry_found = entry_here
                j = toks[0].i - 1
                while j > lo and t.tokens[j].low in ("a", "an", "the", "some", "our", "my"):
                    j -= 1  # "on a synthetic dataset": the preposition before the article
                prev = t.tokens[j].low if j >= lo and toks[0].i > lo else ""
                act = Action(entry_found, toks[0].i, hi, toks[-1].i + 1, si,
                             prepositional=prev in PREPOSITIONS or toks[0].low in PREPOSITIONS
                             or (entry_found == "load_data" and len(toks) == 1))
                act.has_file = any(x.kind == "path" for x in toks)
                found.append(act)
        found.sort(key=lambda a: a.lo)
        parts = ("elastic_dlrm", "edit_pretrain", "mlora_finetune")
        for k in range(len(found) - 1, 0, -1):  # "train a DLRM on the data in data/criteo/"
            a = found[k]
            if a.entry == "load_data" and found[k - 1].entry in parts and \
                    t.tokens[a.lo].low in ("from", "in", "at", "on", "of"):
                for x in t.tokens[a.lo:a.trig_end]:
                    if x.used == "load_data":
                        x.used = ""
                del found[k]
        merged: list[Action] = []
        for a in found:  # several phrases of one step ("use EDiT local SGD to pre-train an LLM")
            if merged and merged[-1].entry == a.entry and (
                    a.entry not in ("load_data", "train_model", "evaluate_model", "notify")
                    or (a.entry == "load_data" and not (a.has_file and merged[-1].has_file))):
                continue
            merged.append(a)
        embedded = {id(a) for a in merged if a.entry == "load_data" and a.trig_end - a.lo == 1}
        bounds = sorted({a.lo for a in merged if id(a) not in embedded}
                        | {c.lo for c in cues if c.kind in ("cond", "else", "exit")} | {hi})
        for k, a in enumerate(merged):
            if id(a) in embedded:  # a bare file name: its own word only, the rest stays its verb's
                a.hi, a.zlo = a.trig_end, a.lo
                continue
            a.hi = next(b for b in bounds if b > a.lo)
            a.zlo = lo if k == 0 else a.lo  # words before the sentence's first step are its own
        return merged

    @staticmethod
    def _table_result(t: Text, m: re.Match, toks: list[Token], hi: int) -> bool:
        """"store the result as totals.csv": results written to a table file are a table."""
        if not re.search(r"\bresults?\b", m.group(0)) or re.search(r"\b(?:report|metrics|scores)\b", m.group(0)):
            return False
        nxt = next((x for x in t.tokens[toks[0].i:min(hi, toks[-1].i + 4)] if x.kind == "path"), None)
        return nxt is not None and nxt.low.endswith(TABLE_EXT[:4])

    @staticmethod
    def _is_eval_verb(t: Text, tok: Token) -> bool:
        """"test" and "score" are verbs only at the start of a clause or before their object."""
        prev = t.tokens[tok.i - 1] if tok.i else None
        nxt = t.tokens[tok.i + 1] if tok.i + 1 < len(t.tokens) else None
        if tok.low.startswith(("evaluat", "assess", "validat", "measur", "benchmark")):
            return not (prev is not None and prev.low in ("the", "an", "a", "for", "of"))
        starts = prev is None or prev.kind == "punct" or prev.low in ("and", "then", "also", "to", "next", "finally", "first")
        return starts and (nxt is None or nxt.low in EVAL_OBJECTS or nxt.kind == "punct")

    def _resolve_context(self, t: Text, actions: list[Action]) -> None:
        """Steps whose name depends on what came before: evaluate/deploy an adapter set or a
        DLRM; a search that tunes a training step."""
        last_model: str | None = None
        for a in actions:
            if a.entry in ("train_model", "mlora_finetune", "elastic_dlrm", "edit_pretrain"):
                last_model = a.entry
            elif a.entry == "evaluate_model" and last_model == "elastic_dlrm":
                a.entry = "evaluate_dlrm"
            elif a.entry == "evaluate_model" and last_model == "mlora_finetune":
                a.entry = "evaluate_adapters"
            elif a.entry == "deploy_model" and last_model == "mlora_finetune":
                a.entry = "serve_adapters"
        for i, a in enumerate(actions):
            if a.entry == "tune":
                nxt = next((b for b in actions[i + 1:] if b.sentence == a.sentence
                            and b.entry == "train_model"), None)
                if nxt is not None:
                    nxt.lo = a.lo
                    a.entry = "_tune_absorbed"
                else:
                    a.entry = "train_model"
                    a.found.params["_tune"] = True
                    continue
                nxt.found.params["_tune"] = True
        actions[:] = [a for a in actions if a.entry != "_tune_absorbed"]
        for a in actions:
            if a.found.params.pop("_tune", False) or self._has_tune_words(t, a):
                a.found.params["_tune"] = True

    @staticmethod
    def _has_tune_words(t: Text, a: Action) -> bool:
        return a.entry == "train_model" and any(x.used == "tune" for x in t.tokens[a.lo:a.hi])

    # -- steps ----------------------------------------------------------------------------------
    def _steps(self, t: Text, actions: list[Action], cues: list[Cue]) -> list[DraftStep]:
        steps: list[DraftStep] = []
        joins = [a.lo for a in actions if a.entry == "join"]
        for k, a in enumerate(actions):
            f = a.found
            tune = None
            if f.params.pop("_tune", False):
                tune = self._tune(t, a, f)
            span = t.span_text([x for x in t.tokens[a.zlo:a.hi] if x.kind != "punct"])
            if a.entry == "load_data" and f.map and len(f.map[1]) == 2 and any(j > a.lo for j in joins):
                # "load customers.csv and orders.csv and join them": two tables, not a map
                first = DraftStep(f"s{k + 1}a", a.entry, {"path": f.map[1][0]}, {"path": f.map[1][0]},
                                  span=span)
                steps.append(first)
                s = DraftStep(f"s{k + 1}", a.entry, {"path": f.map[1][1]}, {"path": f.map[1][1]},
                              span=span)
                a.extra = [first]
            else:
                s = DraftStep(f"s{k + 1}", a.entry, dict(f.params), dict(f.stated), map=f.map,
                              tune=tune, bound=f.bound, span=span)
            a.step = s
            steps.append(s)
        self._apply_cues(actions, cues)
        self._hoist(actions)
        main = [a for a in actions if a.step.exit is None]
        for prev, a in zip(main, main[1:]):
            if not (a.step.concurrent and a.step.concurrent == prev.step.concurrent):
                a.step.follows = prev.step.label
        return [s for a in actions for s in [*a.extra, a.step]]

    def _tune(self, t: Text, a: Action, f: Found) -> TuneSpec:
        """A search over one parameter of a training step: its values (a list, or a range
        "between A and B"), trials, metric and mode, scheduler."""
        lo, hi = a.zlo, a.hi
        names = {"learning rate": "lr", "lr": "lr", "epochs": "epochs", "epoch": "epochs"}
        if f.map is not None:
            param, values = f.map
            space: dict = {param: list(values)}
            f.map = None
        else:
            pm = next(t.finditer(r"\b(?P<p>learning\s+rate|lr|epochs?)\b", lo, hi), None)
            if pm is None:
                raise PlanRefused([f"the search in {t.span_text(t.tokens[lo:hi])!r} does not say "
                                   "which parameter it tunes"])
            t.mark(pm[1], "tune")
            param = names[re.sub(r"\s+", " ", pm[0].group("p"))]
            rm = next(t.finditer(r"between\s+(?P<a>NUM\d+)\s+and\s+(?P<b>NUM\d+)|from\s+(?P<c>NUM\d+)\s+to\s+(?P<d>NUM\d+)",
                                 lo, hi, free_only=True), None)
            lm = None if rm is not None else next(t.finditer(rf"(?P<l>{L.NUMLIST})", lo, hi, free_only=True), None)
            if lm is not None:
                t.mark(lm[1], "tune values")
                space = {param: [number(float(t.literal(x).value())) for x in re.findall(r"(?:NUM|PCT)\d+", lm[0].group("l"))]}
            elif rm is not None:
                t.mark(rm[1], "tune range")
                g = rm[0]
                lo_v, hi_v = (float(t.literal(x).value()) for x in (g.group("a") or g.group("c"), g.group("b") or g.group("d")))
                space = {param: {"min": lo_v, "max": hi_v}}
            else:
                raise PlanRefused([f"the search in {t.span_text(t.tokens[lo:hi])!r} names no values to try"])
            for _, toks in t.finditer(r"\b(?:over|across|among|values?|in)\b", lo, hi, free_only=True):
                t.mark(toks, "tune")
        trials = 0
        m = next(t.finditer(r"(?P<n>NUM\d+)\s+(?:trials?|samples|configurations|configs|runs|tries)", lo, hi, free_only=True), None)
        if m:
            t.mark(m[1], "trials")
            trials = int(float(t.literal(m[0].group("n")).value()))
        metric, mode = "accuracy", "max"
        m = next(t.finditer(rf"\b(?P<v>maximi[sz]\w*|minimi[sz]\w*|optimi[sz]\w*(?:\s+for)?|by|on|for)\s+(?:the\s+)?"
                            rf"(?:validation\s+|test\s+)?(?P<m>{L.METRIC_RX})\b", lo, hi, free_only=True), None)
        if m:
            t.mark(m[1], "tune metric")
            metric = metric_of(m[0].group("m"))
            v = m[0].group("v")
            mode = "min" if v.startswith("minimi") or (not v.startswith("maximi") and metric in L.LOWER_IS_BETTER) else "max"
        sched = "fifo"
        m = next(t.finditer(r"\b(?P<s>asha|hyperband|successive\s+halving|early\s+stopping|fifo)\b(?:\s+scheduler)?", lo, hi, free_only=True), None)
        if m:
            t.mark(m[1], "scheduler")
            sched = "fifo" if m[0].group("s") == "fifo" else "asha"
        return TuneSpec(space=space, metric=metric, mode=mode, trials=trials, scheduler=sched)

    def _apply_cues(self, actions: list[Action], cues: list[Cue]) -> None:
        last_when: DraftStep | None = None
        for c in cues:
            acts = [a for a in actions if a.sentence == c.sentence]
            before = [a for a in acts if a.lo < c.lo]
            after = [a for a in acts if a.lo >= c.hi]
            if c.kind == "exit":
                targets = after[:1] if after else before[-1:]
                if not targets:
                    raise PlanRefused(["an exit handler cue names no step to run"])
                targets[0].step.exit = c.data["kind"]
            elif c.kind == "retry":
                earlier = [a for a in actions if a.sentence < c.sentence and not a.prepositional]
                tgt = before[-1] if before else (after[0] if after else (earlier[-1] if earlier else None))
                if tgt is None:
                    raise PlanRefused(["retries asked for, but for no step"])
                tgt.step.retries = c.data["n"]
            elif c.kind == "loop":
                tgt = before[-1] if before else (after[0] if after else None)
                if tgt is None:
                    raise PlanRefused(["a loop with no step to repeat"])
                tgt.step.loop = LoopSpec(c.data["metric"], c.data["op"], c.data["value"], c.data["max"])
            elif c.kind == "cond":
                else_at = next((e.lo for e in cues if e.kind == "else" and e.lo > c.lo
                                and e.sentence == c.sentence), None)
                fwd = [a for a in after if else_at is None or a.lo < else_at]
                targets = fwd if fwd and (not before or c.lo >= before[-1].hi) else before[-1:]
                if not targets:
                    raise PlanRefused(["a condition with no step to guard"])
                cond = Cond("", c.data["metric"], c.data["op"], c.data["value"])
                for a in targets:
                    a.step.when = cond
                last_when = targets[-1].step
                if else_at is not None:
                    for a in [a for a in acts if a.lo >= else_at]:
                        a.step.when, a.step.otherwise = cond, True
            elif c.kind == "else":
                if last_when is None:
                    raise PlanRefused(["'otherwise' with no condition before it"])
                if any(a.step.otherwise for a in acts if a.lo >= c.hi):
                    continue  # handled with its condition
                nxt = [a for a in actions if a.lo >= c.hi][:1]
                for a in nxt:
                    if a.step.when is None:
                        a.step.when, a.step.otherwise = last_when.when, True
            elif c.kind == "parallel":
                self._parallel(c, cues, before, after)
        self._resolve_conditions(actions)

    @staticmethod
    def _parallel(c: Cue, cues: list[Cue], before: list[Action], after: list[Action]) -> None:
        """"A and B in parallel" groups the steps of its clause before it (back to a comma or a
        "then"); "In parallel, A and B" groups the steps after it, up to the next "then"."""
        seq = [x.lo for x in cues if x.sentence == c.sentence and x.kind == "seq"]
        commas = [x.lo for x in cues if x.sentence == c.sentence and x.kind == "comma"]
        trailing = bool(before) and before[-1].hi > c.lo
        if trailing:
            start = max([x for x in seq + commas if x < before[-1].lo] or [-1])
            group = [a for a in before if a.lo > start]
        else:
            end = min([x for x in seq if x > c.hi] or [10 ** 9])
            group = [a for a in after if a.lo < end]
        for a in group:
            if a.step.exit is None:
                a.step.concurrent = f"par{c.sentence}"
                for x in a.extra:
                    x.concurrent = a.step.concurrent

    def _resolve_conditions(self, actions: list[Action]) -> None:
        for i, a in enumerate(actions):
            w = a.step.when
            if w is None or w.step:
                continue
            tested = next((b for b in reversed(actions[:i]) if w.metric in CATALOG[b.entry].metrics
                           and b.step.exit is None and b.step.when is None), None)
            if tested is None:
                raise PlanRefused([f"the condition on {w.metric!r} for {a.entry} has no earlier step "
                                   f"that reports {w.metric!r}"])
            cond = Cond(tested.step.label, w.metric, w.op, w.value)
            for b in actions:
                if b.step.when is w:
                    b.step.when = cond

    def _hoist(self, actions: list[Action]) -> None:
        """Producers named after their consumer ("train a model on generated data with a
        train/test split") move before it."""
        changed = True
        guard = 0
        while changed and guard < 20:
            changed, guard = False, guard + 1
            for i, a in enumerate(actions):
                if not a.prepositional and not (a.entry == "split_data" and i and actions[i - 1].entry == "train_model"):
                    continue
                out = CATALOG[a.entry].output
                for j in range(i - 1, -1, -1):
                    b = actions[j]
                    if b.sentence != a.sentence:
                        break
                    needs = [k for spec in CATALOG[b.entry].inputs.values() for k in spec.rstrip("*").split("|")]
                    if out in needs or (out == "table" and "split" in needs):
                        actions.insert(j, actions.pop(i))
                        changed = True
                        break
                if changed:
                    break

    # -- accounting -----------------------------------------------------------------------------
    def _account(self, t: Text) -> None:
        ordinal = re.search(r"\b(?:on|with|using|against|from|to|into)\s+the\s+(?:first|second|third|former|latter|"
                            r"other)(?:\s+one)?\b", t.masked)
        if ordinal:  # "train on the first and evaluate on the second": which is which is a guess
            raise PlanRefused([f"cannot tell which step {ordinal.group(0)!r} refers to"])
        unsupported = [x for x in t.tokens if x.low in L.UNSUPPORTED]
        if unsupported:
            raise PlanRefused([f"no catalog step does {t.span_text(r)!r}" for r in t.runs(unsupported)])
        left = [x for x in t.unused() if x.kind != "punct" and x.low not in L.FILLERS]
        bad = [x for x in left if x.low in L.UNSUPPORTED or x.kind != "word"]
        unknown = [x for x in left if x not in bad]
        for run in t.runs(unknown):
            if self._describes(t, run):
                t.mark(run, "description")
            else:
                bad += run
        if bad:
            quoted = [t.span_text(r) for r in t.runs(bad)]
            raise PlanRefused([f"no step or parameter for {q!r}" for q in quoted])

    @staticmethod
    def _describes(t: Text, run: list[Token]) -> bool:
        """Words right before a head noun, a file, or after 'to predict/detect' describe the
        data or the model; they need no step."""
        if len(run) > 4 or any(x.low in L.UNSUPPORTED for x in run):
            return False
        j = run[-1].i + 1
        while j < len(t.tokens) and t.tokens[j].low in ("the", "a", "an") :
            j += 1
        nxt = t.tokens[j] if j < len(t.tokens) else None
        if nxt is not None and (nxt.low.rstrip("s") in {h.rstrip("s") for h in L.HEAD_NOUNS}
                                or nxt.kind == "path"):
            return True
        if nxt is not None and nxt.low in ("in", "from", "at") and j + 1 < len(t.tokens) and \
                t.tokens[j + 1].kind == "path":
            return True
        prev = t.tokens[run[0].i - 1] if run[0].i else None
        if prev is not None and prev.low in ("predict", "predicting", "detect", "detecting", "classify",
                                             "classifying", "estimate", "identify", "flag", "spot"):
            prev.used = prev.used or "purpose"
            return True
        if run[-1].low.rstrip("s") in {h.rstrip("s") for h in L.HEAD_NOUNS}:
            return True
        return False

