"""The simulated cluster itself: a node whose raylet registers with the GCS later than Ray's
fixed startup wait (30 s; a loaded CI machine can exceed it) is stopped and started again, so a
slow start costs a retry, not the test session, and the stopped raylet leaves nothing alive."""
from __future__ import annotations

import time

import psutil
import pytest
import ray

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


class _ClockPastTheWait:
    """Stands in for the ``time`` module inside ``ray._private.node``: its monotonic clock
    jumps a minute a call, so the first wait for the raylet to register runs out at once."""

    def __init__(self):
        self._now = time.monotonic()

    def monotonic(self):
        self._now += 60.0
        return self._now

    def __getattr__(self, name):
        return getattr(time, name)


def processes_of(node_id: str) -> list[psutil.Process]:
    """The live processes started for the node ``node_id`` (its raylet and agents name it)."""
    out = []
    for proc in psutil.process_iter(["cmdline"]):
        if any(node_id in arg for arg in (proc.info["cmdline"] or [])):
            out.append(proc)
    return out


def test_a_node_that_misses_rays_startup_wait_is_stopped_and_started_again(nodes, monkeypatch, caplog):
    import ray._private.node as ray_node
    import ray._private.services as services

    real_get_node = services.get_node
    refused = []

    def slow_registration(gcs_address, node_id):
        if not refused:  # the first new node is not found in the GCS before the (fake) wait ends
            refused.append((node_id, processes_of(node_id)))
            raise RuntimeError("node not registered yet (test)")
        return real_get_node(gcs_address, node_id)

    monkeypatch.setattr(services, "get_node", slow_registration)
    monkeypatch.setattr(ray_node, "time", _ClockPastTheWait())
    with caplog.at_level("WARNING", logger="raystack.simcluster"):
        started = nodes.add(name="late-node", cpus=1.0)
    monkeypatch.undo()
    try:
        first_id, first_processes = refused[0]
        assert first_id != started.node_id  # the node that joined is a second raylet
        assert "late-node did not register" in caplog.text
        alive = {n["NodeID"]: n for n in ray.nodes() if n["Alive"]}
        assert started.node_id in alive and alive[started.node_id]["Resources"].get("late-node") == 1.0
        assert first_processes, "the first start left no process to stop"
        # the first start's raylet is stopped; its agents follow it out (they watch their raylet)
        _, still_running = psutil.wait_procs(first_processes, timeout=30)
        assert not [p for p in still_running if p.status() != psutil.STATUS_ZOMBIE]
        nodes.wait_settled()  # the first raylet, if it ever registered, is declared dead
    finally:
        dead = started.node_id
        nodes.remove("late-node")
        nodes.wait_dead(dead)
