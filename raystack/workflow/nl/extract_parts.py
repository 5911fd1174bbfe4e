"""Parameters of the part steps read from the words of one action: EDiT pretraining (base
model, steps, ranks or a bound on them, mode), mLoRA fine-tuning (the adapters by name or
count, base, steps, epochs, rank), elastic DLRM (job name, epochs, a bound on workers, data) and
serving. Each reads only what the request states; the part's own config fills the rest.
"""

from __future__ import annotations

import os
import re
from typing import Any

from raystack.data.suffixes import DATA_SUFFIXES, RECORD_SUFFIXES
from raystack.workflow.nl.extract import (BASE_MODEL, CAP, EDIT_MODES, MAX_ADAPTERS, SYNTH_TASKS,
                                          TABLE_EXT, WORKERS, Found, _list, _num, _search,
                                          _set_map, claim_count, consume, epochs_said_per_run, files, whole_epochs)
from raystack.workflow.nl.lexicon import AS_THE_LIMIT, NUMLIST, SERVE_AS_PLACE
from raystack.workflow.nl.plan import PlanRefused
from raystack.workflow.nl.text import Text, number


def bound_unit(matched: str) -> str:
    """The bound's parameter: "at most 2 GPUs" bounds ``gpus``, workers, ranks and nodes ``workers``."""
    return "gpus" if re.search(r"\bgpus?\b", matched, re.I) else "workers"


def _workers(text: Text, lo: int, hi: int) -> tuple[str, int | list, str] | None:
    """('bound', n, unit) for "at most n workers" / "no more than 2 GPUs" (unit: the bound's
    parameter, workers or gpus), ('exact', n, "workers") for "n workers", ('list', [...], "workers")."""
    m = _search(text, lo, hi, rf"{CAP}\s*(?P<n>NUM\d+)\s+(?:\w+\s+)?{WORKERS}"
                              rf"|(?:(?:with|on|using)\s+)?(?P<m>NUM\d+)\s+{WORKERS}\s+(?:max(?:imum)?|at\s+(?:the\s+)?most|tops|limit|cap|ceiling|{AS_THE_LIMIT})\b"
                              # "keep it to four workers or fewer", "on 2 GPUs or less"
                              rf"|(?:(?:keep|keeping)\s+(?:it|them|this|the\s+(?:job|run))\s+(?:to|on|at|within|under)\s+)?(?P<o>NUM\d+)\s+{WORKERS}"
                              r"\s+or\s+(?:fewer|less)\b", "workers bound")
    if m:
        return "bound", int(_num(text, m.group("n") or m.group("m") or m.group("o"))), bound_unit(m.group(0))
    m = _search(text, lo, hi, rf"\bbetween\s+(?P<a>NUM\d+)\s+and\s+(?P<b>NUM\d+)\s+{WORKERS}"
                              rf"|\b(?:from\s+|with\s+|on\s+|using\s+)?(?P<c>NUM\d+)\s+(?:up\s+)?(?:to|-)\s+(?P<d>NUM\d+)\s+{WORKERS}",
                "workers range")   # "between 2 and 6 workers", "from 2 to 6 workers", "with 2 to 6 workers"
    if m:     # "between 2 and 6 workers": start at the first, at most the second
        a, b = (int(_num(text, m.group(x))) for x in (("a", "b") if m.group("a") else ("c", "d")))
        if a > b:
            raise PlanRefused([f"between {a} and {b} workers: the first must not exceed the second"])
        return "range", [a, b], bound_unit(m.group(0))
    shared = _shared_cap(text, lo, hi)
    if shared is not None:
        return shared
    m = _search(text, lo, hi, rf"(?:on|with|across|using)?\s*(?P<l>{NUMLIST})\s+{WORKERS}", "workers")
    if m:
        return "list", [int(v) for v in _list(text, m.group("l"))], "workers"
    m = _search(text, lo, hi, rf"(?:(?:on|with|across|using|over)\s+)?(?P<n>NUM\d+)\s+(?:\w+\s+)?{WORKERS}", "workers") or \
        _search(text, lo, hi, rf"{WORKERS}\s*(?:=|:)\s*(?P<n>NUM\d+)", "workers")
    if m:
        return "exact", int(_num(text, m.group("n"))), "workers"
    return None


def _shared_cap(text: Text, lo: int, hi: int) -> tuple[str, int, str] | None:
    """"no more than 6 rounds or 8 workers": a count of workers after "or" / "and" that shares
    the cap said of the loop's rounds just before it is a bound too, never an exact count."""
    for m, toks in text.finditer(rf"(?:\bor|\band|,)\s+(?P<n>NUM\d+)\s+{WORKERS}", lo, hi, free_only=True):
        k = toks[0].i - 1
        run = []
        while k >= 0 and text.tokens[k].used == "loop bound":
            run.insert(0, text.tokens[k])
            k -= 1
        if run and re.match(CAP, " ".join(x.low for x in run)):
            text.mark(toks, "workers bound")
            return "bound", int(_num(text, m.group("n"))), bound_unit(m.group(0))
    return None


def _steps(text: Text, lo: int, hi: int, f: Found, param: str = "steps") -> None:
    m = _search(text, lo, hi, rf"(?P<l>{NUMLIST})\s+(?:training\s+)?steps", "steps")
    if m:
        _set_map(f, param, [int(v) for v in _list(text, m.group("l"))])
        # "..., one run per length", "(one run per step budget)": the map's own words
        consume(text, lo, hi, r"\b(?:(?:a|one)\s+(?:run|pretraining|model)\s+)?(?:per|for\s+each)\s+(?:length|budget|step\s+budget|step\s+count|"
                              r"value|setting)\b", "map")
        return
    m = _search(text, lo, hi, r"(?P<n>NUM\d+)\s*-?\s*(?:training\s+|inner\s+)?steps?\b", "steps") or \
        _search(text, lo, hi, r"steps\s*(?:=|:|of)\s*(?P<n>NUM\d+)", "steps")
    if m:
        f.set(param, int(_num(text, m.group("n"))))


def _base_models(text: Text, lo: int, hi: int) -> list[str]:
    """Named base models in the range: one, or a list ("tiny-1m and tiny-20m", "tiny-1m vs
    tiny-20m")."""
    names = []
    for m, toks in text.finditer(BASE_MODEL, lo, hi, free_only=True):
        text.mark(toks, "model")
        if m.group(0) not in names:
            names.append(m.group(0))
    if len(names) > 1:
        consume(text, lo, hi, r"\b(?:vs|versus|against)\b", "model list")
    if names:    # "fine-tune a LoRA on sft.jsonl starting from tiny-20m"
        consume(text, lo, hi, r"\b(?:starting|initiali[sz]ed|initiali[sz]ing|beginning|warm-?started)(?=\s+(?:from|with)\s+(?:the\s+)?"
                              r"(?:base\s+(?:model\s+)?)?" + BASE_MODEL + r")", "model")
    return names


# words between two methods named as alternatives ("DiLoCo and EDiT", "with EDiT vs with DiLoCo")
_MODE_COORDINATORS = {"and", "or", "vs", "versus", "against", ",", "with", "both", "once", "then"}
_MODE_ALTERNATIVES = {"and", "or", "vs", "versus", "against", "then"}    # one of them must stand between


def _compared_modes(text: Text, lo: int, hi: int) -> list[str]:
    """The methods a pretraining request names side by side as alternatives ("with DiLoCo and
    with EDiT", "EDiT vs A-EDiT"), in order; [] when it names one (EDiT alone names the part)."""
    rx = "|".join(f"(?P<m{k}>{p})" for k, (p, _) in enumerate(EDIT_MODES))
    found: list[tuple[list, str]] = []    # (tokens, mode) of each method named
    for m, toks in text.finditer(rf"\b(?:{rx}|(?<![-\w])edit(?![-\w]))\b", lo, hi):
        found.append((toks, next((mode for k, (_, mode) in enumerate(EDIT_MODES) if m.group(f"m{k}")), "edit")))
    modes = list(dict.fromkeys(mode for _, mode in found))
    if len(modes) < 2:
        return []
    for (a, _), (b, _) in zip(found, found[1:]):
        gap = text.tokens[a[-1].i + 1:b[0].i]
        if any(x.low not in _MODE_COORDINATORS for x in gap) or not any(x.low in _MODE_ALTERNATIVES for x in gap):
            return []
    for toks, _ in found:
        text.mark(toks, "mode")
    return modes


def edit_pretrain(text: Text, lo: int, hi: int, f: Found) -> None:
    consume(text, lo, hi, r"\b(?:pre-?train\w*|pre-training|edit|local\s+sgd|llm|large\s+language\s+models?|"
                          r"language\s+models?|from\s+scratch)\b", "edit")     # ("pretrain a small model from scratch": what pretraining is)
    # "... and save the checkpoint": the run writes its checkpoint (the step's output) anyway;
    # a destination ("save the checkpoint to ./x") is not consumed here and stays unaccounted
    consume(text, lo, hi, r"\b(?:save|keep|write|store)s?\s+(?:the|its|a)\s+(?:model\s+|final\s+)?checkpoint\b"
                          r"(?!\s+(?:to|in|into|at|as|under)\b)", "edit")
    compared = _compared_modes(text, lo, hi)
    if compared:        # "with DiLoCo and with EDiT": one run per method
        _set_map(f, "mode", compared)
    else:
        for p, mode in EDIT_MODES:
            if _search(text, lo, hi, rf"\b(?:{p})\b", "mode", free=False):
                f.set("mode", mode)
                break
    models = _base_models(text, lo, hi)
    if models:
        consume(text, lo, hi, r"\bbase(?:\s+model)?\b", "model")
    if len(models) > 1:
        _set_map(f, "model", models)
        claim_count(text, lo, hi, len(models))
    elif models:
        f.set("model", models[0])
    w = _workers(text, lo, hi)
    if w is not None:
        kind, n, unit = w
        if kind == "range":
            raise PlanRefused([f"between {n[0]} and {n[1]} workers: EDiT runs a fixed number of ranks; "
                               "say how many, or give a bound ('at most N workers')"])
        if kind == "bound":       # EDiT runs a fixed size: at most n ranks is n ranks, kept as a bound
            f.params["ranks"] = n
            f.bound = {"param": unit, "op": "<=", "value": n}
        elif kind == "list":
            _set_map(f, "ranks", n)
            f.stated_map = ("workers", n)
        else:
            f.set("ranks", n, "workers")
    # before the step count: "a sync every 8 steps" is the interval, not the run's length
    m = _search(text, lo, hi, r"sync(?:hroni[sz](?:e|es|ing|ed)|ing|s|ed)?\s+(?:the\s+replicas\s+)?every\s+(?P<n>NUM\d+)\s+steps?",
                "sync interval") or \
        _search(text, lo, hi, r"\b(?:with\s+)?(?:h|sync\.h|sync\s+interval)\s*(?:=|:|of)\s*(?P<n>NUM\d+)", "sync interval")  # "H=8"
    if m:
        f.params.setdefault("sync", {})["h"] = int(_num(text, m.group("n")))
        f.stated["sync_every"] = int(_num(text, m.group("n")))
    # A-EDiT syncs by the clock: "syncing every 3 seconds", "a 3 second sync period"
    m = _search(text, lo, hi, r"sync(?:hroni[sz](?:e|es|ing|ed)|ing|s|ed)?\s+(?:the\s+replicas\s+)?every\s+(?P<n>NUM\d+)\s*(?:seconds?|secs?|s)\b"
                              r"|(?P<m>NUM\d+)\s*-?\s*(?:seconds?|secs?|s)\s+sync(?:\s+(?:period|interval))?\b"
                              r"|\bsync\s+(?:period|interval)\s+(?:of\s+)?(?P<p>NUM\d+)\s*(?:seconds?|secs?|s)\b", "sync period")
    if m:
        secs = _num(text, m.group("n") or m.group("m") or m.group("p"))
        if f.params.get("mode") != "aedit":
            raise PlanRefused([f"a sync every {number(secs)} seconds is A-EDiT's (sync by the clock); EDiT syncs every H "
                               "steps: say 'with A-EDiT', or give the steps"])
        f.params.setdefault("sync", {})["t_seconds"] = secs
        f.stated["sync_seconds"] = number(secs)
    _steps(text, lo, hi, f)
    if f.map is not None:
        claim_count(text, lo, hi, len(f.map[1]))
    _outer_and_sharding(text, lo, hi, f)
    m = _search(text, lo, hi, r"(?:inner\s+)?(?:learning[\s-]+rate|lr)\s*(?:=|:|of|at)?\s*(?P<n>NUM\d+)", "learning rate")
    if m:
        f.params.setdefault("inner", {})["lr"] = _num(text, m.group("n"))
        f.stated["lr"] = number(_num(text, m.group("n")))
    _corpus_files(text, lo, hi, f)


def _outer_and_sharding(text: Text, lo: int, hi: int, f: Found) -> None:
    """"a 0.5 outer learning rate", "outer momentum 0.9": the outer optimizer's (read before the
    inner learning rate, which "outer learning rate of 0.5" would otherwise set); "2 shards per
    replica", "with full sharding" / "FSDP": the replica's ranks and their full sharding."""
    for name, words in (("lr", r"(?:learning[\s-]+rate|lr)"), ("momentum", r"momentum")):
        m = _search(text, lo, hi, rf"(?P<n>NUM\d+)\s+outer\s+{words}\b|\bouter\s+{words}\s*(?:=|:|of|at)?\s*(?P<m>NUM\d+)",
                    f"outer {name}")
        if m:
            f.params.setdefault("outer", {})[name] = _num(text, m.group("n") or m.group("m"))
    m = _search(text, lo, hi, r"(?P<n>NUM\d+)\s+shards?\s+(?:per|each|for\s+each|in\s+each)\s+replica\b"
                              r"|\bshards?\s*(?:=|:|of)\s*(?P<m>NUM\d+)", "shards")
    if m:
        f.set("shards", int(_num(text, m.group("n") or m.group("m"))))
    if _search(text, lo, hi, r"\b(?:with\s+|using\s+)?(?:full(?:y)?[\s-]+shard(?:ed|ing)?|fsdp2?)\b", "full sharding"):
        f.set("full_shard", True)


# "pretrain with EDiT on corpus/", "on the text files in data/wiki", "using a.jsonl and b.jsonl",
# "on wiki.txt and on books.txt" (the preposition said again)
_AGAIN = r"(?:(?:on|over|using|from)\s+)?"
CORPUS_FILES = (r"(?:\b(?:on|over|using)\s+(?:the\s+|my\s+|our\s+)?|\b(?:text|jsonl?|parquet)?\s*(?:files?|documents?|corpus|"
                rf"texts?|dataset|data)\s+(?:in|at|under|from)\s+)(?P<f>FILE\d+(?:\s*,\s*{_AGAIN}FILE\d+)*"
                rf"(?:\s*,?\s*and\s+{_AGAIN}FILE\d+)?)")


def _corpus_files(text: Text, lo: int, hi: int, f: Found) -> None:
    """The user's own text the run pretrains on: ``data.paths`` (files or folders of them)."""
    m = _search(text, lo, hi, CORPUS_FILES, "corpus files")
    if m is None:
        return
    paths = [text.literal(ph).text for ph in re.findall(r"FILE\d+", m.group("f"))]
    wrong = [p for p in paths if os.path.splitext(p.rstrip("/"))[1].lower() not in ("", *DATA_SUFFIXES)]
    if wrong:
        raise PlanRefused([f"pretraining reads text, JSON, JSONL or Parquet files ({', '.join(sorted(DATA_SUFFIXES))}) "
                           f"or folders of them, not {', '.join(wrong)}"])
    f.params.setdefault("data", {})["paths"] = paths
    f.stated["paths"] = paths


def _adapter_count(text: Text, lo: int, hi: int) -> int | None:
    """"2 rank-8 DoRA adapters": the count a few words before "adapters"; "a DoRA adapter of rank
    4", "a single adapter": one (the default config's four were trained)."""
    for tok in text.tokens[lo:hi]:
        if tok.low.startswith("adapter"):
            before = text.tokens[max(lo, tok.i - 4):tok.i]
            num = next((x for x in reversed(before) if x.kind == "num" and (not x.used or x.used == text.claim)), None)
            if num is None:
                one = [x for x in before[-3:] if x.low in ("a", "an", "single")]
                if tok.low != "adapter" or not one:
                    return None
                text.mark([x for x in one if x.low == "single"], "adapters")
                return 1
            text.mark([num], "adapters")
            n = int(float(num.value()))
            if not 1 <= n <= MAX_ADAPTERS:
                raise PlanRefused([f"{n} adapters: between 1 and {MAX_ADAPTERS}"])
            return n
    return None


def mlora_finetune(text: Text, lo: int, hi: int, f: Found) -> None:
    consume(text, lo, hi, r"\b(?:fine-?tun\w*|finetun\w*|mlora|lora|adapters?|together|jointly|at\s+once|"
                          r"on\s+top\s+of\s+(?:it|that|them)|on\s+(?:the|that)\s+pretrained\s+model"
                          # "fine-tune that base with mLoRA adapters": the base picked just before
                          r"|(?<=fine-tune\s)(?:that|this|the\s+(?:chosen|selected|winning|kept|better|best))\s+base(?:\s+model)?"
                          # "over the EDiT checkpoint from ./ckpt": the base, an earlier run's checkpoint
                          r"|(?:over|on|from)\s+(?:the|an?|our|my)\s+(?:a-?edit|edit|diloco|pretrained)(?:-pretrained)?\s+checkpoint"
                          r"(?=\s+(?:from|in|at|under)\s+FILE\d+))\b", "mlora")
    # "of rank 8 and 16", "with ranks 4, 8 and 16": one rank per adapter, in order
    m = _search(text, lo, hi, r"\branks?\s*(?:=|of)?\s*(?P<l>NUM\d+(?:\s*,\s*NUM\d+)*\s*,?\s*(?:and|&)\s+NUM\d+)\b", "rank")
    ranks = [int(_num(text, n)) for n in re.findall(r"NUM\d+", m.group("l"))] if m else []
    # "rank-8 and rank-16 adapters", "(rank 4 and rank 8)": the word said before each (the second
    # rank was dropped: one adapter of rank 8)
    one = r"rank(?:-\d+|\s+NUM\d+)"
    m = None if ranks else _search(text, lo, hi, rf"\b{one}(?:\s*,\s*{one})*\s*,?\s*(?:and|&)\s+{one}\b", "rank")
    ranks = [int(d) if d else int(_num(text, n)) for d, n in re.findall(r"rank(?:-(\d+)|\s+(NUM\d+))", m.group(0))] \
        if m else ranks
    # before the count, so "a rank 8 adapter" is one adapter of rank 8, not eight adapters
    m = None if ranks else (_search(text, lo, hi, r"\b(?:rank|r)\s*(?:=|of)?\s*(?P<n>NUM\d+)", "rank")
                            or _search(text, lo, hi, r"\brank-(?P<r>\d+)\b", "rank"))
    if m:       # one rank for every adapter
        ranks = [int(_num(text, m.group("n"))) if m.groupdict().get("n") else int(m.group("r"))]
    n_adapters = _adapter_count(text, lo, hi)
    if len(ranks) > 1 and n_adapters is not None and n_adapters != len(ranks):
        raise PlanRefused([f"{n_adapters} adapters but {len(ranks)} ranks ({', '.join(map(str, ranks))})"])
    n_adapters = len(ranks) if len(ranks) > 1 and n_adapters is None else n_adapters
    names = [x.text for x in text.named.pop("adapters", [])]
    if names and n_adapters is not None and n_adapters != len(names):
        raise PlanRefused([f"{n_adapters} adapters but {len(names)} names ({', '.join(names)})"])
    from raystack.config import config_to_dict
    from raystack.mlora.config import MLoRAConfig
    tasks = []
    for m2, toks in text.finditer(r"\b(?P<t>" + "|".join(SYNTH_TASKS) + r")\b", lo, hi, free_only=True):
        text.mark(toks, "task")
        tasks.append(m2.group("t"))
    if tasks:
        _search(text, lo, hi, r"\btasks?\b", "task")
    kind = "dora" if _search(text, lo, hi, r"\bdora\b", "adapter type", free=False) else None
    # "using int8 quantization of the base", "with the base quantized to 8-bit": the frozen base in int8
    if _search(text, lo, hi, r"\b(?:int8|8-?bit)\s+quanti[sz]\w*(?:\s+of\s+the\s+base(?:\s+model)?)?"
                             r"|\b(?:the\s+)?base(?:\s+model)?\s+quanti[sz]ed\s+(?:to|in|as)\s+(?:int8|8-?bit)\b"
                             r"|\bquanti[sz]\w*\s+(?:the\s+base(?:\s+model)?\s+)?(?:to|in|as|with)\s+(?:int8|8-?bit)\b", "quantize"):
        f.set("quantize", "int8")
    m = _search(text, lo, hi, r"(?:learning[\s-]+rate|lr)\s*(?:=|:|of|at)?\s*(?P<n>NUM\d+)", "learning rate")
    lr = _num(text, m.group("n")) if m else None
    _steps(text, lo, hi, f)
    m = _search(text, lo, hi, r"(?P<n>NUM\d+)\s*-?\s*(?:training\s+)?(?:epochs?|passes)\b", "epochs")
    epochs = int(_num(text, m.group("n"))) if m else None
    base = [t for t in files(text, lo, hi) if not t.low.endswith(TABLE_EXT)]
    if base:
        text.mark(base[:1], "base")
        f.set("base", base[0].text)
    else:
        models = _base_models(text, lo, hi)
        if models:
            consume(text, lo, hi, r"\b(?:base|base\s+model)\b", "base")
            f.set("base", models[0])
    records = _record_files(text, lo, hi)
    if n_adapters is None and not tasks and kind is None and not ranks and lr is None and not names \
            and epochs is None and not records:
        return
    d = config_to_dict(MLoRAConfig())
    count = len(names) or n_adapters or len(tasks) or len(records) or len(SYNTH_TASKS)
    if records and tasks:
        raise PlanRefused([f"adapters trained on {', '.join(records)} and on the built-in {', '.join(tasks)} "
                           "task: say which adapter learns which"])
    if len(records) > 1 and len(records) != count:
        raise PlanRefused([f"{count} adapters but {len(records)} data files ({', '.join(records)}): give one file, "
                           "or one per adapter"])
    chosen = tasks or [SYNTH_TASKS[i % len(SYNTH_TASKS)] for i in range(count)]
    if n_adapters is not None and tasks and len(tasks) != n_adapters:
        raise PlanRefused([f"{n_adapters} adapters but {len(tasks)} tasks named"])
    if names and tasks and len(tasks) != len(names):
        raise PlanRefused([f"{len(names)} adapters named but {len(tasks)} tasks"])
    datasets, adapters, jobs = [], [], []
    for i, task in enumerate(chosen):
        # a name as written ("legal-qa") is the adapter's; its config needs an identifier ("legal_qa")
        if records:     # named after its file ("sft0", "sft1" when adapters share one)
            stem = os.path.splitext(os.path.basename(records[i % len(records)]))[0]
            own = f"{stem}{i}" if len(set(records)) < count else stem
        else:
            own = f"{task}{i}" if chosen.count(task) > 1 else task
        name = re.sub(r"\W", "_", names[i] if names else own)
        if records:   # the user's records: one file for every adapter, or one each
            datasets.append({"name": name, "path": records[i % len(records)], "seed": i})
        else:
            datasets.append({"name": name, "synthetic": task, "seed": i})
        a = {**d["adapters"][i % len(d["adapters"])], "name": name if names else f"{name}_lora", "seed": i}
        a["type"] = kind or "lora"
        if ranks:   # one each (their count is the adapters'), or one for all
            r = ranks[i % len(ranks)]
            a["r"], a["alpha"] = r, 2.0 * r
        if lr is not None:
            a["lr"] = lr
        adapters.append(a)
        job = {**d["tasks"][i % len(d["tasks"])], "adapter": a["name"], "dataset": name}
        if epochs is not None:
            job.update(epochs=float(epochs), max_steps=None)
        jobs.append(job)
    f.params.update({"datasets": datasets, "adapters": adapters, "tasks": jobs})
    if names:
        f.stated["adapters"] = names
    elif n_adapters is not None:
        f.stated["adapters"] = n_adapters
    if tasks:
        f.stated["tasks"] = tasks
    if records:
        f.stated["data"] = records
    if kind:
        f.stated["type"] = kind
    if ranks:
        f.stated["rank"] = ranks if len(ranks) > 1 else ranks[0]
    if lr is not None:
        f.stated["lr"] = number(lr)
    if epochs is not None:
        f.stated["epochs"] = epochs


def _record_files(text: Text, lo: int, hi: int) -> list[str]:
    """"fine-tune adapters on tiny-1m using the data in sft.jsonl": files of records (a prompt and
    its response, or chat messages) the adapters learn from; a table of another type is refused."""
    out = []
    for tok in files(text, lo, hi, TABLE_EXT):
        if not tok.low.endswith(RECORD_SUFFIXES):
            raise PlanRefused([f"fine-tuning reads records from {', '.join(RECORD_SUFFIXES)} files, not {tok.text}"])
        text.mark([tok], "records")
        out.append(tok.text)
    if out:
        consume(text, lo, hi, r"\b(?:using|with|on|from)?\s*(?:the\s+|my\s+|our\s+)?(?:data|records|examples|dataset)"
                              r"(?:\s+(?:in|from|at))?\b", "records")
    return out


JOB_NAME = r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+|[a-z]+\d+[a-z0-9]*"
APPOSITION = 5      # tokens before an elastic DLRM's words that may name the job ("Train toy-picks, an")


def elastic_dlrm(text: Text, lo: int, hi: int, f: Found) -> None:
    consume(text, lo, hi, r"\belastic(?:ally)?\b|\b(?:dlrm|recommend\w*|recsys|click-?through(?:-rate)?|ctr|criteo|"
                          r"ad\s+click|training|run|job|launch|launches|launching)\b", "elastic")
    # (a word of its own: "class-picks" holds "as" and was named "s-picks")
    m = _search(text, lo, hi, r"\b(?:(?:job\s+)?name[sd]?|called|as|(?:name|call)\s+it)\s*(?::|=)?\s*(?P<n>" + JOB_NAME + r")\b", "job name") or \
        _search(text, lo, hi, r"\b(?:job|dlrm(?:\s+(?:model|job))?|(?:runs?|jobs?)\s+of)\s+(?P<n>" + JOB_NAME + r")\b", "job name") or \
        _search(text, lo, hi, r"\b(?:named|called|name\s*[:=])\s*(?P<n>(?!(?:the|a|an|it|after|for|by|on|in|with)\b)[a-z][a-z0-9]*)\b",
                "job name") or \
        _search(text, lo, hi, r"(?<=dlrm\s)job\s+(?P<n>(?!(?:for|with|on|in|at|to|and|then|that|which|the|a|an|of|using|runs?|is|was|"
                              r"should|will|can|names?|named|called|again|once|twice)\b)[a-z][a-z0-9]{2,})(?=\s+(?:for|with|on|using)\b|\s*[,.;]|$)",
                "job name") or \
        _search(text, lo, hi, r"\b(?:(?:job\s+)?name[sd]?|called|as)\s*(?::|=)?\s*(?P<q>QUOTE\d+)", "job name") or \
        _search(text, lo, hi, r"\b(?P<n>" + JOB_NAME + r")\s+(?:\(\s*|as\s+(?:an?\s+|the\s+)?)?elastic\b", "job name") or \
        _search(text, lo, hi, r"(?<=dlrm\s,\s)(?P<n>" + JOB_NAME + r")(?=\s*,)", "job name") or \
        _search(text, max(0, lo - APPOSITION), hi,     # "Train toy-picks, an elastic DLRM, ...": the job, then what it is
                r"\b(?:train|run|launch|fit|start|kick\s+off)\s+(?P<n>" + JOB_NAME + r")\s*,\s*(?:an?|the|our)\s+(?=elastic\b)",
                "job name") or \
        _search(text, max(0, lo - APPOSITION), hi,     # "fit lot-recs on elastic DLRM": the job, then the part it runs on
                r"\b(?:train|trains|run|runs|fit|fits)\s+(?P<n>" + JOB_NAME + r")\s+(?:on|with|using)\s+(?:the\s+)?(?=elastic\b)",
                "job name") or \
        _search(text, max(0, lo - APPOSITION), hi,     # "gig-recs — elastic DLRM, ...": the job's name as the request's title
                r"(?:^|(?<=\n))(?P<n>" + JOB_NAME + r")\s*(?:—|–|:)\s*(?=(?:an?\s+)?elastic\b)", "job name") or \
        _search(text, max(0, lo - APPOSITION), hi,     # "we've got job-match, it's an elastic DLRM model"
                r"\b(?:got|have|run|own)\s+(?P<n>" + JOB_NAME + r")\s*,\s*(?:it\s*'s|it\s+is|which\s+is)\s+(?:an?\s+|our\s+)?(?=elastic\b)",
                "job name")
    if m:
        f.set("name", m.group("n") if m.groupdict().get("n") else text.literal(m.group("q")).value())
    per_run = epochs_said_per_run(text, lo, hi)     # ("do a run at one epoch, one at three, one at five")
    m = None if per_run else _search(text, lo, hi, rf"(?:for\s+)?(?P<l>{NUMLIST})\s+(?:training\s+)?epochs\b", "epochs") or \
        _search(text, lo, hi, r"\bepochs\s*(?:=|:)?\s*(?P<l>NUM\d+(?:\s*/\s*NUM\d+)+)(?!\d)", "epochs") or \
        _search(text, lo, hi, r"\bepochs\s*(?:=|:|∈|in)\s*(?P<l>[\[{(]\s*NUM\d+(?:\s*,\s*NUM\d+)+\s*[\]})])", "epochs") or \
        _search(text, lo, hi, r"\b(?:with\s+)?epochs\s*(?:=|:)?\s*(?P<l>NUM\d+(?:\s*,\s*NUM\d+)+)(?!\d)(?!\s*,?\s*(?:and|or)\b)(?!\s+(?:runs?|jobs?|models?|times?)\b)",
                "epochs")   # "epochs = 1 / 2 / 3", "epochs 2, 4, 6"
    if per_run or m:      # "for 1, 2 and 3 epochs": one run per value
        # ("(one run each)": what the map does)
        consume(text, lo, hi, r"\b(?:NUM\d+|a|a\s+separate|a\s+single)\s+(?:run|job)\s+(?:each|apiece|per\s+(?:value|setting|option|choice)|for\s+each(?:\s+(?:value|setting|one))?)\b", "map")
        _set_map(f, "epochs", per_run or [int(v) for v in _list(text, m.group("l"))])
        claim_count(text, lo, hi, len(f.map[1]))
    m = m or _search(text, lo, hi, r"(?P<n>NUM\d+)\s*-?\s*(?:training\s+)?epochs?|\bepochs?\s*(?:=|:)\s*(?P<n2>NUM\d+)(?!\s*[,/]\s*NUM)",
                     "epochs")    # "epochs=1 per pass"
    if m and f.map is None and m.group("n2"):
        f.set("epochs", whole_epochs(_num(text, m.group("n2"))))
    elif m and f.map is None:
        f.set("epochs", whole_epochs(_num(text, m.group("n"))))
    res: dict[str, Any] = {}
    w = _workers(text, lo, hi)
    if w is not None:
        kind, n, unit = w
        if kind == "list":
            raise PlanRefused(["a list of worker counts for elastic DLRM: the job sizes itself; "
                               "give a bound ('at most N workers')"])
        if kind == "range":     # the job starts at the lower end and sizes itself up to the upper
            res.update(initial_workers=n[0], max_workers=n[1])
            f.bound = {"param": unit, "op": "<=", "value": n[1]}
        elif kind == "bound":
            res["max_workers"] = n
            res["initial_workers"] = min(2, n)
            f.bound = {"param": unit, "op": "<=", "value": n}
        else:
            res.update(max_workers=n, initial_workers=n, autoscale=False)
            f.stated["workers"] = n
    m = _search(text, lo, hi, r"(?:at\s+most|up\s+to|no\s+more\s+than|max(?:imum)?)\s+(?P<n>NUM\d+)\s+cpus?", "cpus")
    if m:
        res["max_cpus"] = _num(text, m.group("n"))
        f.bound = {"param": "cpus", "op": "<=", "value": number(_num(text, m.group("n")))}
    m = _search(text, lo, hi, r"(?P<n>NUM\d+)\s+(?:parameter\s+servers?|ps)\b", "parameter servers")
    if m:
        n = int(_num(text, m.group("n")))
        res.update(max_ps=n, initial_ps=n)
        f.stated["ps"] = n
    if res:
        f.params["resources"] = res
    m = _search(text, lo, hi, r"(?P<n>NUM\d+)\s+(?:generated\s+|synthetic\s+|training\s+)?(?:rows|samples|examples|records|impressions)", "rows")
    if m:
        f.params["data"] = {"generate_rows": int(_num(text, m.group("n")))}
        f.stated["rows"] = int(_num(text, m.group("n")))
    m = _search(text, lo, hi, r"batch\s+size\s*(?:=|of)?\s*(?P<n>NUM\d+)", "batch size")
    if m:
        f.params["model"] = {"batch_size": int(_num(text, m.group("n")))}
        f.stated["batch_size"] = int(_num(text, m.group("n")))
    m = _search(text, lo, hi, r"(?P<f>FILE\d+)", "data path")
    if m:
        f.params.setdefault("data", {})["path"] = text.literal(m.group("f")).text
        f.stated["path"] = text.literal(m.group("f")).text


def serve_adapters(text: Text, lo: int, hi: int, f: Found) -> None:
    consume(text, lo, hi, SERVE_AS_PLACE, "serve")
    m = _search(text, lo, hi, r"\b(?:as|named|called|under\s+the\s+name)\s+(?!a\b|an\b|the\b|it\b|them\b)(?P<n>[a-z_][a-z0-9_\-]*)", "name")
    if m:
        f.set("name", m.group("n"))


