"""Shared fixtures: one embedded local Ray cluster for every cluster test in the session."""
from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
# Metrics reach the Prometheus endpoint every 2 s (Ray default 10 s): dashboard tests wait less.
os.environ.setdefault("RAY_metrics_report_interval_ms", "2000")
# raystack's own caches (token shards, file hashes) live in a fresh folder per session, so no
# test reads what an earlier run left (Ray workers inherit the variable from this process)
if "RAYSTACK_CACHE" not in os.environ or os.environ.get("PYTEST_XDIST_WORKER"):  # one per xdist worker too
    os.environ["RAYSTACK_CACHE"] = tempfile.mkdtemp(prefix="raystack-cache-")
    atexit.register(shutil.rmtree, os.environ["RAYSTACK_CACHE"], True)


# Under `pytest -n 2 --dist loadscope` (`make test`), every test module that starts Ray, a
# subprocess or a server (directly or through a fixture) runs in ONE worker, in collection order,
# on one shared embedded cluster, exactly as without xdist; the modules that need none of them
# (algorithms, configs, the planner, models built in-process) run in the other worker meanwhile,
# on the CPU the cluster tests leave idle while they wait on Ray: actor starts, health checks,
# simulated links and slowed workers. A module is a cluster module when its source mentions one
# of these (a test written against a new fixture that starts Ray must name it here).
_NEEDS_CLUSTER = re.compile(r"ray_cluster|\bnodes\b|\bsim\b|import ray|\bray\.|subprocess|Popen|nbclient|"
                            r"connect\(|cluster_utils|SimulatedCluster")
CLUSTER_SCOPE = "cluster"
# A module that starts only Ray instances of its own, in processes it runs (benchmark scripts,
# notebook kernels, `raystack up`), and never touches the shared cluster, says so with
# `pytest.mark.own_ray` in its `pytestmark`. Those modules form a second work unit, which the other worker
# takes beside the pure modules while the cluster worker runs the shared cluster's modules: their
# processes' Ray starts and simulated waits then overlap the cluster tests' waits instead of
# following them. They stay in one unit, so at most one of them runs at a time, and under xdist
# they run niced (OWN_RAY_NICE, inherited by every process they start): the cluster worker's
# modules, the suite's critical path and the ones with timeouts on recovery, keep the CPU they
# had alone, and the own-Ray processes take what it leaves idle.
OWN_RAY_SCOPE = "own-ray"
# Ray starts its workers 15 above the process that started Ray (RAY_worker_niceness): the
# cluster worker's actors run at 15, so an own-Ray driver, raylet or GCS at 10 would outrank
# them. At 19 every own-Ray process (their workers too, capped at 19) ranks below them.
OWN_RAY_NICE = 19
_OWN_RAY = re.compile(r"\bpytest\.mark\.own_ray\b")
# what an own-Ray module must not do: ask for the shared cluster, or start Ray in-process
SHARED_OR_IN_PROCESS_RAY = re.compile(r"\bray_cluster\b|\bray\.init\(|\bconnect\(")
_ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _module_source(path: str) -> str:
    """The text of the test module at ``path`` (relative to the repository), read once."""
    return (_ROOT / path).read_text()


def module_needs_cluster(path: str) -> bool:
    """Whether the test module at ``path`` (relative to the repository) starts Ray, a process or a server."""
    return bool(_NEEDS_CLUSTER.search(_module_source(path)))


def module_owns_ray(path: str) -> bool:
    """Whether the test module at ``path`` is marked ``own_ray`` (see OWN_RAY_SCOPE)."""
    return bool(_OWN_RAY.search(_module_source(path)))


@functools.cache
def work_unit(path: str) -> str:
    """The xdist work unit of the test module at ``path``: the shared cluster's, the own-Ray
    modules', or the module's own."""
    if module_owns_ray(path):
        return OWN_RAY_SCOPE
    return CLUSTER_SCOPE if module_needs_cluster(path) else path


def pytest_collection_modifyitems(config, items):
    """Multi-node tests last: their simulated cluster replaces the embedded one for good."""
    items.sort(key=lambda item: "tests/multinode/" in item.nodeid.replace("\\", "/"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope``: one work unit holding every module on the shared cluster, one holding
    the own-Ray modules, one per other module."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ClusterScopeScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid.split("::", 1)[0])

    return ClusterScopeScheduling(config, log)


@pytest.fixture(scope="module", autouse=True)
def _own_ray_niced(request):
    """Under xdist, lower this worker's priority before an own-Ray module starts its processes
    (once: the rest of the worker's modules, pure ones, also fill idle CPU from then on)."""
    path = str(request.path.relative_to(_ROOT))
    if os.environ.get("PYTEST_XDIST_WORKER") and module_owns_ray(path) and os.nice(0) < OWN_RAY_NICE:
        os.nice(OWN_RAY_NICE - os.nice(0))
    yield


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
