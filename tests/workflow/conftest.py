"""The workflow tests' cluster fixture: the shared embedded cluster (connect() is idempotent,
so this coexists with the session fixture of tests/conftest.py)."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def ray_cluster():
    """The embedded local cluster (4 logical CPUs, no dashboard), started once per session."""
    from raystack.cluster import connect

    os.environ.pop("RAY_ADDRESS", None)
    return connect(num_cpus=4, dashboard=False, log_to_driver=False,
                   object_store_memory=512 * 1024**2)
