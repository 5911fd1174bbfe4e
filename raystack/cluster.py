"""Connecting to Ray: an existing cluster by address, or an embedded local one.

Token authentication (on by default in Ray 2.60) is kept on: raystack clusters use
`RAY_AUTH_MODE=token` with the token in `~/.ray/auth_token` (made on first use). A client on
the same machine (`ray job submit`, the dashboard API, `ray.init(address=...)`) then needs
only `RAY_AUTH_MODE=token` in its environment; `head_env()` gives exactly that.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
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


def planned_resources(address: str | None = None, *, num_cpus: int | None = None,
                      resources: dict | None = None):
    """The resources a job will run on, as `raystack.preflight.ClusterResources`: the connected
    cluster's; else those of the cluster at ``address`` (or RAY_ADDRESS), connecting to it; else
    those an embedded cluster started with ``num_cpus``/``resources`` would have, without
    starting it (so a job that cannot fit is refused before Ray starts)."""
    import ray

    from raystack.preflight.resources import from_ray, this_machine

    if ray.is_initialized():
        return from_ray()
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        connect(address)
        return from_ray()
    return this_machine(num_cpus, resources=resources)


# -- a local head for `ray job submit`: `raystack up` / `raystack down` --------------------------

DEFAULT_CLIENT_PORT = 10001   # Ray Client server (ray://), Ray's default


class HeadError(RuntimeError):
    """`raystack up` cannot start a head (a port is taken, one is already running, Ray failed)."""


@dataclass
class HeadState:
    gcs_address: str
    dashboard_url: str
    temp_dir: str
    pids: list[int]
    pgid: int                 # the session id every process of the head shares (`ray start`'s pid)
    started_at: float
    client_address: str = ""
    ports: list[int] = field(default_factory=list)


def _state_file(state_dir: Path) -> Path:
    return state_dir / "head.json"


def port_in_use(port: int) -> bool:
    """Whether a TCP port is taken on this machine (listening, or bound, on any address)."""
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            return True
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed port in TIME_WAIT is free
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


def session_processes(session_id: int, since: float) -> list[int]:
    """Process ids in session ``session_id`` started at or after ``since`` (minus a little), and
    their descendants: every process `ray start` made (GCS, raylet, dashboard, Ray Client server,
    workers), none of another session's, whatever their command lines say."""
    import psutil

    found: set[int] = set()
    for proc in psutil.process_iter(["pid", "create_time"]):
        try:
            if os.getsid(proc.pid) == session_id and proc.info["create_time"] >= since - 5.0:
                found.add(proc.pid)
                found.update(c.pid for c in proc.children(recursive=True))
        except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError, PermissionError):
            continue
    return sorted(found)


def start_head(port: int = 6390, dashboard_port: int = 8265, num_cpus: int | None = None,
               state_dir: Path = STATE_DIR, timeout_s: float = 60.0,
               client_port: int = DEFAULT_CLIENT_PORT) -> HeadState:
    """Start a local Ray head with token auth, remember every process id it started, return its
    addresses. A port already taken is refused before anything starts."""
    state_dir.mkdir(parents=True, exist_ok=True)
    old = read_head_state(state_dir)
    if old is not None and any(_alive(p) for p in old.pids):
        raise HeadError(f"a raystack head is already running at {old.gcs_address}; `raystack down` first")
    wanted = {"port": port, "dashboard_port": dashboard_port, "client_port": client_port}
    if len(set(wanted.values())) < len(wanted):
        raise HeadError(f"--port, --dashboard-port and --client-port must differ, got {wanted}")
    for what, p in wanted.items():
        if not 1 <= p <= 65535:
            raise HeadError(f"--{what.replace('_', '-')} must be a TCP port in [1, 65535], got {p}")
        if port_in_use(p):
            raise HeadError(f"{what} {p} is already in use; pick another with --{what.replace('_', '-')}")
    ensure_auth_token()
    temp_dir = f"/tmp/raystack-{port}"
    agent_port = free_port_pair()[0]
    cmd = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", f"--port={port}",
           f"--dashboard-port={dashboard_port}", "--dashboard-host=127.0.0.1", f"--temp-dir={temp_dir}",
           "--include-dashboard=true", "--disable-usage-stats", f"--ray-client-server-port={client_port}",
           f"--dashboard-agent-listen-port={agent_port}"]
    if num_cpus is not None:
        cmd.append(f"--num-cpus={num_cpus}")
    env = {**os.environ, **head_env()}
    started = time.time()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # every process of the head shares this session id
    state = HeadState(gcs_address=f"127.0.0.1:{port}", dashboard_url=f"http://127.0.0.1:{dashboard_port}",
                      temp_dir=temp_dir, pids=[proc.pid], pgid=proc.pid, started_at=started,
                      client_address=f"ray://127.0.0.1:{client_port}", ports=[port, dashboard_port, client_port])
    _write_state(state_dir, state)  # recorded at once: `down` finds the processes even if `up` fails now
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop_head(state_dir)
        raise HeadError(f"`ray start --head` did not finish within {timeout_s:.0f} s") from None
    if proc.returncode != 0:
        stop_head(state_dir)
        raise HeadError(f"`ray start --head` failed (exit {proc.returncode}): {out.strip().splitlines()[-1:]}")
    state.pids = session_processes(proc.pid, started)
    _write_state(state_dir, state)
    _wait_http(state.dashboard_url, timeout_s)
    _wait_port(agent_port, timeout_s, "dashboard agent")  # jobs are refused until the node's agent listens
    _wait_port(client_port, timeout_s, "Ray Client server")  # `up` prints ray://...: it must answer on return
    state.pids = session_processes(proc.pid, started)  # the dashboard's and agents' children too
    _write_state(state_dir, state)
    return state


def _write_state(state_dir: Path, state: HeadState) -> None:
    tmp = _state_file(state_dir).with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2))
    tmp.replace(_state_file(state_dir))


def _wait_port(port: int, timeout_s: float, what: str) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise HeadError(f"the Ray head's {what} did not listen on port {port} within {timeout_s:.0f} s")


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
    if not f.exists():
        return None
    data = json.loads(f.read_text())
    known = {f.name for f in dataclasses.fields(HeadState)}
    return HeadState(**{k: v for k, v in data.items() if k in known})


def stop_head(state_dir: Path = STATE_DIR, grace_s: float = 10.0) -> list[int]:
    """Stop the head `start_head` started: its recorded process ids and every later process of
    its session (workers, job drivers and their children). Returns the pids that were signalled."""
    import psutil

    state = read_head_state(state_dir)
    if state is None:
        return []
    pids = set(session_processes(state.pgid, state.started_at))
    for pid in state.pids:
        try:
            p = psutil.Process(pid)
            if p.create_time() >= state.started_at - 5.0:  # not a reused pid
                pids.add(pid)
                pids.update(c.pid for c in p.children(recursive=True))
        except psutil.NoSuchProcess:
            continue
    procs = []
    for pid in sorted(pids):
        try:
            procs.append(psutil.Process(pid))
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
    psutil.wait_procs(alive, timeout=grace_s)
    _state_file(state_dir).unlink(missing_ok=True)
    return [p.pid for p in procs]


# Ports Ray and Serve take by default when not told otherwise: GCS, dashboard, Ray Client, the
# dashboard agent's HTTP server, Serve's HTTP and gRPC proxies. 52365 lies in Linux's ephemeral
# range, so the OS can hand it out as "free" before a head starts, and the head then refuses to
# start (seen in CI: a simulated cluster's dashboard drew 52365, its agent's default).
RAY_DEFAULT_PORTS = frozenset({6379, 8265, 10001, 52365, 8000, 9000})


# Where to look for a port to listen on: above Ray's worker ports (10002-19999 by default) and
# below the range the OS takes local ports of outgoing connections from (Linux's
# ip_local_port_range, 32768-60999 by default; IANA's 49152 elsewhere). A port the OS offers as
# free (bind to port 0) lies inside that range, and on a busy node an outgoing connection (Ray
# opens many) can take it before its caller binds it: seen in CI, where a re-formed comm group's
# rendezvous then failed with DistNetworkError. Below the range only an explicit bind takes it.
_LISTEN_BAND_START = 20000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def listen_band() -> range:
    """The ports `free_port` draws from (empty where the OS's ephemeral range starts too low)."""
    try:
        start = int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        start = 49152
    return range(_LISTEN_BAND_START, max(_LISTEN_BAND_START, start))


def free_port(host: str = "127.0.0.1", avoid: frozenset[int] | set[int] = frozenset()) -> int:
    """A TCP port free on ``host`` right now, none of Ray's defaults and none in ``avoid``: drawn
    at random from `listen_band` (so no outgoing connection takes it before the caller binds
    it), or offered by the OS if that band is empty or too full."""
    band, draw = listen_band(), random.SystemRandom()   # no shared seed: forked callers differ
    for _ in range(64 if len(band) >= 1024 else 0):
        port = draw.randrange(band.start, band.stop)
        if port in RAY_DEFAULT_PORTS or port in avoid:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        return port
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if port not in RAY_DEFAULT_PORTS and port not in avoid:
            return port


def free_port_pair() -> tuple[int, int]:
    """Two distinct free TCP ports on localhost (for a GCS and a dashboard), none of Ray's defaults."""
    first = free_port()
    return first, free_port(avoid={first})


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
