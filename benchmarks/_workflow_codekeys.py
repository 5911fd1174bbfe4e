"""The code part of the workflow cache key on a replayed multi-run trace with code edits.

A generated project (a helpers module and a steps module, written to a temporary directory):
steps call helpers, helpers call other helpers. Between runs one function is edited (its source
changes; the modules are reloaded). Each key strategy decides per step whether the cache
serves it; ground truth says whether it should (some code the step reaches changed since the
entry was stored). Step costs are simulated (lognormal, median 1 s); the fingerprints are the
real ones computed from the edited files.

Strategies: ``transitive`` (raystack's: the step's source and every own function it reaches),
``own_source`` (the step's own source only, the previous key), ``module`` (all the project's
source: any edit invalidates every step).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import os
import random
import sys
from pathlib import Path


def _project(rng: random.Random, n_helpers: int, n_steps: int) -> tuple[str, str, dict, dict]:
    """(helpers source, steps source, helper -> helpers it calls, step -> helpers it calls)."""
    calls = {f"h{i}": sorted({f"h{j}" for j in rng.sample(range(i + 1, n_helpers), k=min(rng.randint(0, 2), n_helpers - i - 1))})
             for i in range(n_helpers)}
    uses = {f"s{i}": sorted({f"h{j}" for j in rng.sample(range(n_helpers), k=rng.randint(0, 2))})
            for i in range(n_steps)}
    hs = [f"def {h}(x):\n    y = x + {i}\n" + "".join(f"    y = {c}(y)\n" for c in cs) + "    return y\n"
          for i, (h, cs) in enumerate(calls.items())]
    ss = [f"def {s}(x: int = 1) -> int:\n    y = x\n" + "".join(f"    y = H.{h}(y)\n" for h in hs_) + "    return y\n"
          for s, hs_ in uses.items()]
    return "\n\n".join(hs), "\n\n".join(ss), calls, uses


def _reach(uses: list[str], calls: dict) -> set[str]:
    out, stack = set(), list(uses)
    while stack:
        h = stack.pop()
        if h not in out:
            out.add(h)
            stack += calls[h]
    return out


def replay(workdir: str, runs: int = 20, n_helpers: int = 24, n_steps: int = 40, seed: int = 0) -> dict:
    from raystack.workflow.codehash import code_fingerprint
    rng = random.Random(seed)
    hsrc, ssrc, calls, uses = _project(rng, n_helpers, n_steps)
    tag = f"cke{seed}_{os.getpid()}"
    d = Path(workdir)
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{tag}_h.py").write_text(hsrc)
    (d / f"{tag}_s.py").write_text(f"import {tag}_h as H\n\n" + ssrc)
    sys.path.insert(0, str(d))
    hmod = importlib.import_module(f"{tag}_h")
    smod = importlib.import_module(f"{tag}_s")
    cost = {s: rng.lognormvariate(0, 1.0) for s in uses}
    version = {f: 0 for f in [*calls, *uses]}
    reach = {s: _reach(u, calls) for s, u in uses.items()}

    def truth(s: str) -> tuple:
        return (version[s],) + tuple(sorted((h, version[h]) for h in reach[s]))

    def module_hash() -> str:
        return hashlib.sha256((d / f"{tag}_h.py").read_bytes() + (d / f"{tag}_s.py").read_bytes()).hexdigest()

    strategies = {
        "transitive": lambda fn: code_fingerprint(fn),
        "own_source": lambda fn: hashlib.sha256(inspect.getsource(fn).encode()).hexdigest(),
        "module": lambda fn: module_hash(),
    }
    caches: dict[str, dict] = {k: {} for k in strategies}
    out = {k: {"hits": 0, "misses": 0, "stale_hits": 0, "recompute_s": 0.0} for k in strategies}
    needed_s = 0.0
    stored_truth: dict[str, tuple] = {}
    edits = []
    for r in range(runs):
        if r:
            target = rng.choice([*calls, *calls, *uses])   # helpers edited twice as often as steps
            path = d / (f"{tag}_h.py" if target.startswith("h") else f"{tag}_s.py")
            src = path.read_text()
            head = src.index(f"def {target}(")
            body = src.index("\n", head) + 1
            path.write_text(src[:body] + f"    _edit = {r}\n" + src[body:])
            st = path.stat()
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
            importlib.reload(hmod)
            importlib.reload(smod)
            version[target] += 1
            edits.append(target)
        for s in uses:
            t = truth(s)
            if stored_truth.get(s) != t:
                needed_s += cost[s]
            stored_truth[s] = t
            fn = getattr(smod, s)
            for name, key_of in strategies.items():
                key = (s, key_of(fn))
                c = caches[name]
                if key in c:
                    out[name]["hits"] += 1
                    out[name]["stale_hits"] += c[key] != t
                else:
                    out[name]["misses"] += 1
                    out[name]["recompute_s"] += cost[s]
                    c[key] = t
    sys.path.remove(str(d))
    for v in out.values():
        v["hit_rate"] = v["hits"] / max(1, v["hits"] + v["misses"])
    return {"strategies": out, "needed_recompute_s": needed_s, "runs": runs, "steps": n_steps,
            "helpers": n_helpers, "edits": len(edits)}
