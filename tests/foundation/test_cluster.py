import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from raystack.cluster import ClusterUnreachableError, check_reachable, connect

ROOT = Path(__file__).resolve().parents[2]


def test_dead_address_is_a_clear_error_within_seconds():
    t0 = time.monotonic()
    with pytest.raises(ClusterUnreachableError, match="no Ray cluster answers at 127.0.0.1:1"):
        check_reachable("127.0.0.1:1")
    with pytest.raises(ClusterUnreachableError, match="cannot parse"):
        check_reachable("nonsense")
    assert time.monotonic() - t0 < 10


def test_cli_reports_dead_ray_address(tmp_path):
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:1", "RAYSTACK_HOME": str(tmp_path)}
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "raystack.apps.cli", "status"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "no Ray cluster answers at 127.0.0.1:1" in out.stderr
    assert time.monotonic() - t0 < 30


@pytest.mark.cluster
def test_connect_is_idempotent_and_reports_resources(ray_cluster):
    info = connect()
    assert info.address == ray_cluster.address
    assert info.resources.get("CPU") == 4


def test_free_ports_skip_the_ports_ray_takes_by_default(monkeypatch):
    """The OS may offer 52365 (the dashboard agent's default, inside Linux's ephemeral range) as
    free before a head starts; a head given it for its dashboard then refuses to start. (The
    OS's offer is the fallback where no band below its ephemeral range is left.)"""
    import raystack.cluster as C

    monkeypatch.setattr(C, "listen_band", lambda: range(0))

    offered = iter([52365, 8265, 41000, 41000, 41001])

    class FakeSocket:
        def __init__(self, *a):
            self.port = next(offered)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def bind(self, addr):
            pass

        def getsockname(self):
            return ("127.0.0.1", self.port)

    monkeypatch.setattr(C.socket, "socket", FakeSocket)
    assert C.free_port_pair() == (41000, 41001)     # Ray's defaults skipped, the pair distinct
    assert {52365, 8265, 6379, 10001} <= C.RAY_DEFAULT_PORTS


def test_free_ports_lie_below_the_range_outgoing_connections_take_theirs_from(monkeypatch):
    """A port the OS offers (bind to 0) is one an outgoing connection can take before the caller
    binds it; free_port draws from below that range, at random, and hands out only ports it
    could bind."""
    import socket

    import raystack.cluster as C

    band = C.listen_band()
    ephemeral = range(32768, 61000)
    if C._EPHEMERAL_RANGE.exists():
        lo, hi = map(int, C._EPHEMERAL_RANGE.read_text().split())
        ephemeral = range(lo, hi + 1)
    assert len(band) >= 1024 and band.stop <= ephemeral.start
    ports = {C.free_port() for _ in range(20)}
    assert len(ports) > 1 and all(p in band and p not in C.RAY_DEFAULT_PORTS for p in ports)
    taken_port = C.free_port()
    draws = iter([taken_port, taken_port, taken_port + 1])

    class Draw:
        def randrange(self, start, stop):
            return next(draws)

    monkeypatch.setattr(C.random, "SystemRandom", Draw)
    with socket.socket() as taken:                    # a port already bound is never handed out
        taken.bind(("127.0.0.1", taken_port))
        assert C.free_port() == taken_port + 1
