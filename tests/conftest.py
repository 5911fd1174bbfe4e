"""Shared fixtures: one embedded local Ray cluster for every cluster test in the session."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
# Metrics reach the Prometheus endpoint every 2 s (Ray default 10 s): dashboard tests wait less.
os.environ.setdefault("RAY_metrics_report_interval_ms", "2000")
# raystack's own caches (token shards, file hashes) live in a fresh folder per session, so no
# test reads what an earlier run left (Ray workers inherit the variable from this process)
if "RAYSTACK_CACHE" not in os.environ:
    os.environ["RAYSTACK_CACHE"] = tempfile.mkdtemp(prefix="raystack-cache-")
    atexit.register(shutil.rmtree, os.environ["RAYSTACK_CACHE"], True)


def pytest_collection_modifyitems(config, items):
    """Multi-node tests last: their simulated cluster replaces the embedded one for good."""
    items.sort(key=lambda item: "tests/multinode/" in item.nodeid.replace("\\", "/"))


@pytest.fixture(scope="session")
def ray_cluster():
    """The embedded local cluster (4 logical CPUs, no dashboard), started once per session."""
    import ray
    from raystack.cluster import connect

    os.environ.pop("RAY_ADDRESS", None)
    if ray.is_initialized():
        ray.shutdown()
    info = connect(num_cpus=4, dashboard=False, log_to_driver=False, object_store_memory=512 * 1024**2)
    yield info
    ray.shutdown()
