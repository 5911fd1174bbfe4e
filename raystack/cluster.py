"""Connecting to Ray: an existing cluster by address, or an embedded local one.

Token authentication (on by default in Ray 2.60) is kept on: raystack clusters use
`RAY_AUTH_MODE=token` with the token in `~/.ray/auth_token` (made on first use). A client on
the same machine (`ray job submit`, the dashboard API, `ray.init(address=...)`) then needs
only `RAY_AUTH_MODE=token` in its environment; `head_env()` gives exactly that.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

AUTH_MODE_VAR = "RAY_AUTH_MODE"
TOKEN_PATH = Path.home() / ".ray" / "auth_token"
STATE_DIR = Path(os.environ.get("RAYSTACK_HOME", Path.home() / ".raystack"))


class ClusterUnreachableError(ConnectionError):
    """The Ray address given does not answer."""


@dataclass
class ClusterInfo:
    address: str
    dashboard_url: str | None
    embedded: bool
    resources: dict = field(default_factory=dict)


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a GCS or client address; None for 'auto'/'local'."""
    if address in ("auto", "local"):
        return None
    parsed = urlparse(address if "://" in address else f"gcs://{address}")
    if not parsed.hostname or not parsed.port:
        raise ClusterUnreachableError(f"cannot parse Ray address {address!r}; expected host:port or ray://host:port")
    return parsed.hostname, parsed.port


def check_reachable(address: str, timeout_s: float = 3.0) -> None:
    """Raise ClusterUnreachableError within `timeout_s` if nothing listens at `address`."""
    hp = _host_port(address)
    if hp is None:
        return
    try:
        with socket.create_connection(hp, timeout=timeout_s):
            return
    except OSError as exc:
        raise ClusterUnreachableError(
            f"no Ray cluster answers at {address} ({exc.strerror or exc}); start one with `raystack up` "
            f"or `ray start --head`, or unset RAY_ADDRESS to use the embedded local cluster") from None


def ensure_auth_token() -> Path:
    """Make sure a token file exists (unless auth is explicitly disabled or the token is in the env).

    This process's own auth mode is left to Ray: `ray.init` turns token auth on for a new local
    cluster and picks up the token file when connecting to an existing one."""
    if os.environ.get(AUTH_MODE_VAR, "token") == "token" and not TOKEN_PATH.exists() \
            and "RAY_AUTH_TOKEN" not in os.environ:
        import secrets
        TOKEN_PATH.parent.mkdir(parents=True, exist_ok=True)
        TOKEN_PATH.write_text(secrets.token_hex(32))
        TOKEN_PATH.chmod(0o600)
    return TOKEN_PATH


def head_env() -> dict:
    """Environment a local client needs to talk to a raystack-started cluster."""
    return {AUTH_MODE_VAR: os.environ.get(AUTH_MODE_VAR, "token")}


def connect(address: str | None = None, *, num_cpus: int | None = None, resources: dict | None = None,
            dashboard: bool = True, namespace: str = "raystack", log_to_driver: bool = True,
            object_store_memory: int | None = None) -> ClusterInfo:
    """Connect to `address` (or RAY_ADDRESS), or start an embedded local cluster.

    Idempotent: if Ray is already initialised in this process, returns its info.
    """
    import ray

    if ray.is_initialized():
        return current_info()
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        check_reachable(address)
        ray.init(address=address, namespace=namespace, log_to_driver=log_to_driver)
        return current_info(embedded=False)
    ctx = ray.init(address="local", num_cpus=num_cpus, resources=resources, include_dashboard=dashboard,
                   dashboard_host="127.0.0.1", namespace=namespace, log_to_driver=log_to_driver,
                   object_store_memory=object_store_memory)
    info = current_info(embedded=True)
    if dashboard and getattr(ctx, "dashboard_url", None):
        info.dashboard_url = "http://" + ctx.dashboard_url.removeprefix("http://")
    return info


_embedded = False


def current_info(embedded: bool | None = None) -> ClusterInfo:
    import ray

    global _embedded
    if embedded is not None:
        _embedded = embedded
    ctx = ray.get_runtime_context()
    gcs = ctx.gcs_address
    dash = None
    try:
        from ray._private.worker import global_worker
        url = global_worker.node.address_info.get("webui_url") if global_worker.node else None
        dash = f"http://{url}" if url else None
    except Exception:
        pass
    return ClusterInfo(address=gcs, dashboard_url=dash, embedded=_embedded,
                       resources=dict(ray.cluster_resources()))


def job_client(address: str):
    """A `ray.job_submission.JobSubmissionClient` for a dashboard address, carrying the token of
    `~/.ray/auth_token` (or RAY_AUTH_TOKEN) so it works whatever this process's auth mode."""
    from ray.job_submission import JobSubmissionClient

    token = os.environ.get("RAY_AUTH_TOKEN") or (TOKEN_PATH.read_text().strip() if TOKEN_PATH.exists() else None)
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return JobSubmissionClient(address, headers=headers)


def disconnect() -> None:
    """Disconnect this driver (an embedded cluster stops with it)."""
    import ray

    if ray.is_initialized():
        ray.shutdown()


# -- a local head for `ray job submit`: `raystack up` / `raystack down` --------------------------

@dataclass
class HeadState:
    gcs_address: str
    dashboard_url: str
    temp_dir: str
    pids: list[int]
    pgid: int
    started_at: float


def _state_file(state_dir: Path) -> Path:
    return state_dir / "head.json"


def _session_pids(temp_dir: str) -> list[int]:
    """Process ids whose command line mentions our head's temp dir (gcs, raylet, dashboard...)."""
    import psutil

    pids = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if any(temp_dir in part for part in (proc.info["cmdline"] or [])):
                pids.append(proc.info["pid"])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return pids


def start_head(port: int = 6390, dashboard_port: int = 8265, num_cpus: int | None = None,
               state_dir: Path = STATE_DIR, timeout_s: float = 60.0) -> HeadState:
    """Start a local Ray head with token auth, remember its process ids, return its addresses."""
    state_dir.mkdir(parents=True, exist_ok=True)
    if _state_file(state_dir).exists():
        old = json.loads(_state_file(state_dir).read_text())
        if any(_alive(p) for p in old["pids"]):
            raise RuntimeError(f"a raystack head is already running at {old['gcs_address']}; `raystack down` first")
    for p, what in ((port, "port"), (dashboard_port, "dashboard_port")):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", p)) == 0:
                raise RuntimeError(f"{what} {p} is already in use; pick another with --{what.replace('_', '-')}")
    ensure_auth_token()
    temp_dir = f"/tmp/raystack-{port}"
    agent_port = free_port_pair()[0]
    cmd = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", f"--port={port}",
           f"--dashboard-port={dashboard_port}", "--dashboard-host=127.0.0.1", f"--temp-dir={temp_dir}",
           "--include-dashboard=true", "--disable-usage-stats",
           f"--dashboard-agent-listen-port={agent_port}"]
    if num_cpus is not None:
        cmd.append(f"--num-cpus={num_cpus}")
    env = {**os.environ, **head_env()}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise RuntimeError(f"`ray start --head` did not finish within {timeout_s:.0f} s")
    if proc.returncode != 0:
        raise RuntimeError(f"`ray start --head` failed (exit {proc.returncode}):\n{out[-2000:]}")
    state = HeadState(gcs_address=f"127.0.0.1:{port}", dashboard_url=f"http://127.0.0.1:{dashboard_port}",
                      temp_dir=temp_dir, pids=_session_pids(temp_dir), pgid=proc.pid, started_at=time.time())
    _state_file(state_dir).write_text(json.dumps(asdict(state), indent=2))
    _wait_http(state.dashboard_url, timeout_s)
    _wait_port(agent_port, timeout_s)  # jobs are refused until the node's dashboard agent listens
    return state


def _wait_port(port: int, timeout_s: float) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise RuntimeError(f"the Ray head's dashboard agent did not listen on port {port} within {timeout_s:.0f} s")


def _wait_http(url: str, timeout_s: float) -> None:
    import urllib.request

    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except Exception as exc:  # 401 means up, with auth
            if getattr(exc, "code", None) is not None:
                return
            time.sleep(0.5)


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def read_head_state(state_dir: Path = STATE_DIR) -> HeadState | None:
    f = _state_file(state_dir)
    return HeadState(**json.loads(f.read_text())) if f.exists() else None


def stop_head(state_dir: Path = STATE_DIR, grace_s: float = 10.0) -> list[int]:
    """Stop the head `start_head` started, by its recorded process ids (and any new ones of its
    session, such as workers). Returns the pids that were signalled."""
    import psutil

    state = read_head_state(state_dir)
    if state is None:
        return []
    pids = sorted(set(state.pids) | set(_session_pids(state.temp_dir)))
    procs = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            procs.extend([p, *p.children(recursive=True)])
        except psutil.NoSuchProcess:
            continue
    for p in procs:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    _state_file(state_dir).unlink(missing_ok=True)
    return [p.pid for p in procs]


def free_port_pair() -> tuple[int, int]:
    """Two distinct free TCP ports on localhost (for a GCS and a dashboard)."""
    socks = [socket.socket() for _ in range(2)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return socks[0].getsockname()[1], socks[1].getsockname()[1]
    finally:
        for s in socks:
            s.close()


def metrics_url() -> str:
    """The Prometheus endpoint of this driver's node (`ray_<name>` series, as the dashboard shows)."""
    import ray
    from ray._private.worker import global_worker

    if not ray.is_initialized() or global_worker.node is None:
        raise RuntimeError("not connected to a Ray cluster started on this machine")
    node = global_worker.node
    return f"http://{node.node_ip_address}:{node.metrics_export_port}/metrics"


def scrape_series(prefix: str = "ray_raystack_", timeout_s: float = 5.0
                  ) -> list[tuple[str, dict[str, str], float]]:
    """Every Prometheus series starting with `prefix`: (name, labels, value)."""
    import re
    import urllib.request

    text = urllib.request.urlopen(metrics_url(), timeout=timeout_s).read().decode()
    out = []
    for line in text.splitlines():
        if not line.startswith(prefix):
            continue
        head, _, value = line.rpartition(" ")
        name, _, rest = head.partition("{")
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', rest))
        try:
            out.append((name.strip(), labels, float(value)))
        except ValueError:
            continue
    return out


def scrape_metrics(prefix: str = "ray_raystack_", timeout_s: float = 5.0) -> dict[str, float]:
    """Current values of the Prometheus series starting with `prefix`, summed over label sets."""
    out: dict[str, float] = {}
    for name, _, value in scrape_series(prefix, timeout_s):
        out[name] = out.get(name, 0.0) + value
    return out
