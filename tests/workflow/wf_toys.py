"""Small step functions used by the workflow tests (a log file records real executions)."""

from __future__ import annotations

import os
import time
from typing import Optional


def _log(log: Optional[str], name: str) -> None:
    if log:
        with open(log, "a") as f:
            f.write(name + "\n")


def source(n: int, log: Optional[str] = None) -> list:
    """Numbers 0..n-1."""
    _log(log, f"source:{n}")
    return list(range(n))


def scale(xs: list, factor: float = 1.0, log: Optional[str] = None) -> list:
    _log(log, f"scale:{factor}")
    return [x * factor for x in xs]


def total(xs: list, log: Optional[str] = None) -> float:
    _log(log, "total")
    return float(sum(xs))


def add(a: float, b: float, log: Optional[str] = None) -> float:
    _log(log, "add")
    return a + b


def collect(values: list, log: Optional[str] = None) -> list:
    _log(log, "collect")
    return list(values)


def label(text: str, log: Optional[str] = None) -> str:
    _log(log, f"label:{text}")
    return text


def grow(x: float = 0.0, step: float = 1.0, log: Optional[str] = None) -> dict:
    """One loop iteration: x + step."""
    _log(log, f"grow:{x}")
    return {"x": x + step, "done": x + step >= 3}


def flaky(fail_times: int, counter: str, log: Optional[str] = None) -> str:
    """Fails the first ``fail_times`` calls (counted in the file ``counter``)."""
    n = int(open(counter).read()) if os.path.exists(counter) else 0
    with open(counter, "w") as f:
        f.write(str(n + 1))
    if n < fail_times:
        raise RuntimeError(f"flaky failure {n + 1}")
    _log(log, "flaky")
    return "ok"


def boom(x: float = 0.0, log: Optional[str] = None) -> float:
    _log(log, "boom")
    raise ValueError("boom: this step always fails")


def sleepy(seconds: float, log: Optional[str] = None) -> float:
    _log(log, "sleepy")
    time.sleep(seconds)
    return seconds


def burn(n: int, seed: int = 0) -> float:
    """CPU-bound pure-Python work."""
    s = seed
    for i in range(n):
        s = (s * 1103515245 + 12345 + i) % 2147483648
    return float(s)


def status_note(workflow_status: str = "", path: Optional[str] = None) -> str:
    if path:
        with open(path, "a") as f:
            f.write(workflow_status + "\n")
    return workflow_status


def mix(values: list, log: Optional[str] = None) -> float:
    """Sum of the (possibly nested) numbers in ``values``, modulo 1e6."""
    _log(log, "mix")

    def flat(v):
        return sum(flat(x) for x in v) if isinstance(v, list) else float(v)
    return flat(values) % 1e6


def quadratic(x: float, y: float = 0.0) -> dict:
    """A cheap objective with its maximum at x = 0.3, y = -0.2."""
    return {"score": -((x - 0.3) ** 2) - (y + 0.2) ** 2}


def learning_curve(lr: float, iterations: int = 9):
    """A seeded training curve: converges to a level set by lr (best near lr = 0.1)."""
    import math
    level = 1.0 - abs(math.log10(lr) + 1.0) / 3.0
    for i in range(1, iterations + 1):
        yield {"score": level * (1.0 - math.exp(-i / 2.0))}


def diamond(log: Optional[str], factor: float = 2.0):
    """src -> (a, b) -> (ta, tb) -> sum: the workflow the cache and runner tests share."""
    from raystack.workflow import Workflow

    wf = Workflow("diamond")
    s = wf.step(source, id="src", n=4, log=log, ignore=["log"])
    a = wf.step(scale, id="a", xs=s, factor=factor, log=log, ignore=["log"])
    b = wf.step(scale, id="b", xs=s, factor=10.0, log=log, ignore=["log"])
    ta = wf.step(total, id="ta", xs=a, log=log, ignore=["log"])
    tb = wf.step(total, id="tb", xs=b, log=log, ignore=["log"])
    wf.step(add, id="sum", a=ta, b=tb, log=log, ignore=["log"])
    return wf.build()
