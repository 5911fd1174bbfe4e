"""Ray custom metrics shared by every part, with an exact local value beside them.

`counter`, `gauge` and `histogram` return small wrappers: in a process connected to Ray they
also record to `ray.util.metrics` (shown in the dashboard and on the Prometheus endpoint as
`ray_raystack_<name>`); everywhere they keep `.value` (and `.values` per tag set), so pure code
and tests can read what was recorded. Wrappers are cached per process by name.
"""
from __future__ import annotations

import threading
from typing import Sequence

PREFIX = "raystack_"
_lock = threading.Lock()
_registry: dict[str, "_Metric"] = {}


def _ray_ready() -> bool:
    try:
        import ray
        return ray.is_initialized()
    except Exception:
        return False


def _key(tags: dict | None) -> tuple:
    return tuple(sorted((tags or {}).items()))


class _Metric:
    kind = ""

    def __init__(self, name: str, description: str, tag_keys: Sequence[str], **extra):
        self.name = PREFIX + name
        self.description = description
        self.tag_keys = tuple(tag_keys)
        self._extra = extra
        self._ray = None
        self.values: dict[tuple, float] = {}

    def _ray_metric(self):
        if self._ray is None and _ray_ready():
            from ray.util import metrics as rm
            cls = {"counter": rm.Counter, "gauge": rm.Gauge, "histogram": rm.Histogram}[self.kind]
            self._ray = cls(self.name, description=self.description, tag_keys=self.tag_keys, **self._extra)
        return self._ray

    def _check_tags(self, tags: dict | None) -> None:
        extra = set(tags or {}) - set(self.tag_keys)
        if extra:
            raise ValueError(f"metric {self.name}: unknown tag keys {sorted(extra)}; declared {list(self.tag_keys)}")

    @property
    def value(self) -> float:
        """The sum over tag sets (counter), or the last value set without tags (gauge)."""
        if self.kind == "gauge":
            return self.values.get((), sum(self.values.values()) if self.values else 0.0)
        return sum(self.values.values())


class Counter(_Metric):
    kind = "counter"

    def inc(self, value: float = 1.0, tags: dict | None = None) -> None:
        if value < 0:
            raise ValueError(f"counter {self.name} can only go up, got {value}")
        self._check_tags(tags)
        k = _key(tags)
        self.values[k] = self.values.get(k, 0.0) + value
        m = self._ray_metric()
        if m is not None and value > 0:
            m.inc(value, tags=tags)


class Gauge(_Metric):
    kind = "gauge"

    def set(self, value: float, tags: dict | None = None) -> None:
        self._check_tags(tags)
        self.values[_key(tags)] = float(value)
        m = self._ray_metric()
        if m is not None:
            m.set(value, tags=tags)


class Histogram(_Metric):
    kind = "histogram"

    def __init__(self, name, description, tag_keys, boundaries):
        super().__init__(name, description, tag_keys, boundaries=list(boundaries))
        self.count = 0

    def observe(self, value: float, tags: dict | None = None) -> None:
        self._check_tags(tags)
        k = _key(tags)
        self.values[k] = self.values.get(k, 0.0) + value
        self.count += 1
        m = self._ray_metric()
        if m is not None:
            m.observe(value, tags=tags)


def _get(cls, name: str, description: str, tag_keys: Sequence[str], **extra):
    with _lock:
        existing = _registry.get(name)
        if existing is not None:
            if not isinstance(existing, cls):
                raise ValueError(f"metric {name!r} already registered as a {existing.kind}")
            return existing
        metric = cls(name, description, tag_keys, **extra)
        _registry[name] = metric
        return metric


def counter(name: str, description: str, tag_keys: Sequence[str] = ()) -> Counter:
    return _get(Counter, name, description, tag_keys)


def gauge(name: str, description: str, tag_keys: Sequence[str] = ()) -> Gauge:
    return _get(Gauge, name, description, tag_keys)


def histogram(name: str, description: str, boundaries: Sequence[float], tag_keys: Sequence[str] = ()) -> Histogram:
    return _get(Histogram, name, description, tag_keys, boundaries=boundaries)
