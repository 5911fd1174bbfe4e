"""`ray job submit` against a head that `raystack up` started: a real head, a real job."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from raystack.cluster import (ClusterUnreachableError, check_reachable, free_port_pair, read_head_state,
                              session_processes)

ROOT = Path(__file__).resolve().parents[2]
# own_ray: see tests/conftest.py, OWN_RAY_SCOPE; the timeout covers the waits below (120 + 180 + 240 + 90 s)
pytestmark = [pytest.mark.slow, pytest.mark.own_ray, pytest.mark.timeout(900)]


def test_up_submit_a_part_job_read_logs_then_down(tmp_path):
    from ray.job_submission import JobStatus

    from raystack.cluster import job_client

    port, dash = free_port_pair()
    client_port = next(p for p in (*free_port_pair(), *free_port_pair()) if p not in (port, dash))
    env = {**os.environ, "RAYSTACK_HOME": str(tmp_path / "home"), "RAY_AUTH_MODE": "token"}
    env.pop("RAY_ADDRESS", None)
    cmd = [sys.executable, "-m", "raystack.apps.cli", "up", "--port", str(port), "--dashboard-port", str(dash),
           "--client-port", str(client_port), "--num-cpus", "2"]
    with socket.socket() as taken:  # a port in use is refused before anything starts
        taken.bind(("127.0.0.1", client_port))
        taken.listen()
        busy = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert busy.returncode == 2 and busy.stderr.strip() == (
        f"raystack up: error: client_port {client_port} is already in use; pick another with --client-port")
    assert not (tmp_path / "home" / "head.json").exists()
    up = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"ray job submit --address http://127.0.0.1:{dash}" in up.stdout
    assert f"ray://127.0.0.1:{client_port}" in up.stdout
    head = read_head_state(tmp_path / "home")
    check_reachable(f"127.0.0.1:{client_port}", timeout_s=10)  # the Ray Client server is up, and is ours
    try:
        config = tmp_path / "edit.yaml"
        config.write_text(yaml.safe_dump({
            "model": "tiny-1m", "ranks": 2, "steps": 6,
            "sync": {"h": 2, "warmup_steps": 1},
            "data": {"max_bytes": 200_000, "batch_size": 2, "seq_len": 32, "eval_batches": 1},
            "run": {"out_dir": str(tmp_path / "edit-run"), "checkpoint_every": 0, "eval_every": 0,
                    "cpus_per_rank": 0.5}}))
        client = job_client(f"http://127.0.0.1:{dash}")
        job = client.submit_job(entrypoint=f"{sys.executable} -m raystack.apps.jobs.edit --config {config}",
                                runtime_env={"working_dir": str(ROOT),
                                             "excludes": [".venv", "runs", "benchmarks/results", ".git"]})
        deadline, status = time.time() + 240, None
        while time.time() < deadline:
            status = client.get_job_status(job)
            if status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED):
                break
            time.sleep(2)
        logs = client.get_job_logs(job)
        assert status == JobStatus.SUCCEEDED, logs[-3000:]
        assert "| tokens_per_s |" in logs and "| val_loss |" in logs  # the summary table reached the log
        assert (tmp_path / "edit-run").exists()
    finally:
        down = subprocess.run([sys.executable, "-m", "raystack.apps.cli", "down"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=90)
    assert down.returncode == 0 and "stopped the Ray head" in down.stdout
    for p in (port, dash, client_port):  # GCS, dashboard and the Ray Client server are all gone
        with pytest.raises(ClusterUnreachableError):
            check_reachable(f"127.0.0.1:{p}", timeout_s=2)
    assert session_processes(head.pgid, head.started_at) == []  # no process `up` started is left
    assert not (tmp_path / "home" / "head.json").exists()
