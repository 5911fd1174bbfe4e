"""One simulated multi-node cluster for every multi-node test: a head (the driver's node, no
CPUs) and four nodes of 2 CPUs, each with its own working directory (no disk shared with the
driver's), short node health checks; the head runs Ray's autoscaler over the fake multi-node
provider, which may launch up to three "big" nodes of 4 CPUs (bundles too large for the static
nodes ask for them). These tests run last in a session (tests/conftest.py orders them), after
the embedded single-node cluster is shut down."""
from __future__ import annotations

import pytest

from raystack.simcluster import SimulatedCluster

NODES, CPUS = 4, 2.0
BIG = {"big": {"resources": {"CPU": 4}, "max_workers": 3}}  # what the autoscaler may launch


@pytest.fixture(scope="session")
def sim(tmp_path_factory):
    import ray

    if ray.is_initialized():  # the embedded cluster of the single-node tests
        ray.shutdown()
    cluster = SimulatedCluster(nodes=NODES, cpus_per_node=CPUS, node_dirs=str(tmp_path_factory.mktemp("nodes")),
                               autoscale_node_types=BIG)
    cluster.start()
    yield cluster
    cluster.shutdown()


@pytest.fixture
def nodes(sim):
    """The cluster with NODES nodes again before a test (a test may have removed some), and no
    other node alive: nodes a test removed are declared dead and nodes the autoscaler launched
    are gone, so no actor of the next test lands on a node that is about to disappear."""
    while len(sim.members) < NODES:
        sim.add(cpus=CPUS, wait=False)
    sim.wait_for_nodes()
    sim.wait_settled()
    return sim
