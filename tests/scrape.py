"""Scraping the cluster's Prometheus endpoint (what the Ray dashboard reads) while a run goes on.

A part's fault test and tests/apps/test_dashboard_metrics.py scrape during a real run and check
the series the README documents. Counters carry Prometheus' ``_total`` suffix. The session
cluster exports metrics every 2 s (RAY_metrics_report_interval_ms, set in tests/conftest.py).
"""
from __future__ import annotations

import threading
import time

from raystack.cluster import scrape_series

P = "ray_raystack_"


def _series(snap, name: str, labels: dict[str, str]) -> list[tuple[dict[str, str], float]]:
    """(labels, value) of ``name``'s series in one snapshot whose labels include ``labels``."""
    return [(lab, v) for n, lab, v in snap if n == P + name and all(lab.get(k) == x for k, x in labels.items())]


class Scraper:
    """Scrapes the metrics endpoint in the background; keeps every snapshot taken."""

    def __init__(self, every_s: float = 0.5) -> None:
        self.every_s = every_s
        self.snapshots: list[list[tuple[str, dict[str, str], float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.snapshots.append(scrape_series())
            except OSError:
                pass  # the endpoint restarts with the metrics agent: try again
            self._stop.wait(self.every_s)

    def __enter__(self) -> "Scraper":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def settle(self, names: list[str], quiet_s: float = 2.5, timeout_s: float = 20.0) -> None:
        """Wait until what earlier runs in this process left has reached the endpoint or gone:
        the counters among ``names`` (``*_total``) unchanged for ``quiet_s`` (over an export
        interval) and the gauges gone (Ray drops a gauge two export intervals after it was last
        set); then forget the snapshots so far, so ``increase`` and ``values`` see this run only."""
        counters = [n for n in names if n.endswith("_total")]
        gauges = [n for n in names if not n.endswith("_total")]

        def now() -> tuple:
            snap = self.snapshots[-1] if self.snapshots else []
            return tuple(sum(v for _, v in _series(snap, c, {})) for c in counters)

        def gauges_left() -> bool:
            return bool(self.snapshots) and any(_series(self.snapshots[-1], g, {}) for g in gauges)

        deadline = time.time() + timeout_s
        last, since = now(), time.time()
        while time.time() < deadline and (time.time() - since < quiet_s or gauges_left()):
            time.sleep(0.25)
            if (cur := now()) != last:
                last, since = cur, time.time()
        del self.snapshots[:-1]

    def values(self, name: str, **labels: str) -> list[float]:
        """Per snapshot where the series appears: its value summed over matching label sets."""
        out = []
        for snap in self.snapshots:
            if hits := _series(snap, name, labels):
                out.append(sum(v for _, v in hits))
        return out

    def increase(self, name: str, **labels: str) -> float:
        """How much a counter rose during the scrape: earlier runs in this session count from
        the first snapshot (taken before this run's first export)."""
        first = _series(self.snapshots[0], name, labels) if self.snapshots else []
        return max(self.values(name, **labels), default=0.0) - sum(v for _, v in first)

    def snapshot_labels(self, name: str, key: str, **labels: str) -> list[dict[str, float]]:
        """Per snapshot: {label value of ``key``: value} of the series matching ``labels``."""
        out = []
        for snap in self.snapshots:
            row = {lab.get(key, ""): v for lab, v in _series(snap, name, labels)}
            if row:
                out.append(row)
        return out

    def wait_until(self, done, timeout_s: float = 20.0) -> None:
        """Keep scraping until ``done()`` holds (a later export reached the endpoint) or time is up."""
        deadline = time.time() + timeout_s
        while time.time() < deadline and not done():
            time.sleep(0.3)

    def wait_for(self, names: list[str], timeout_s: float = 20.0) -> None:
        """Keep the run's metrics a little longer if the last export was not scraped yet."""
        deadline = time.time() + timeout_s
        while time.time() < deadline and not all(self.values(n) for n in names):
            time.sleep(0.5)


def scraped(run, shutdown, names: list[str], settled=None):
    """``run()`` with the endpoint scraped throughout, then ``shutdown()``; (result, Scraper).

    The endpoint settles first (``Scraper.settle``): an earlier run in this process may still
    have counter increments on their way to it, or gauges not yet dropped. ``settled(result, scraper)``,
    when given, is waited for before the shutdown: a short run can end between two exports, and
    the values it set last reach the endpoint only with the next export, while its actors still
    live."""
    try:
        with Scraper() as s:
            s.settle(names)
            res = run()
            s.wait_for(names)
            if settled is not None:
                s.wait_until(lambda: settled(res, s))
    finally:
        shutdown()
    for n in names:
        assert s.values(n), f"{n} never reached the endpoint"
    return res, s
