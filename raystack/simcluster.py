"""A multi-node Ray cluster on one machine, to rehearse node loss and autoscaling on a laptop.

:class:`SimulatedCluster` starts a head and N worker nodes as real raylets
(``ray.cluster_utils.Cluster``): each node has its own CPUs, a label ``raystack/node=<name>``
and a custom resource of the same name, and, if asked, its own working directory (so nothing
can rely on a disk shared with the driver). ``remove(name)`` kills a node without warning, as
a lost machine. Node failure detection is the GCS health check: Ray's default declares a node
dead after about 15-30 s; ``health_check_period_ms``/``health_check_failure_threshold`` shorten it.

:func:`start_fake_autoscaling` starts the head with an autoscaling config of Ray's fake
multi-node provider (``RAY_FAKE_CLUSTER=1``): the autoscaler launches and terminates simulated
nodes of the types in the config, driven by pending placement groups and
``request_resources``. (``ray.cluster_utils.AutoscalingCluster`` runs ``ray stop --force``,
which stops every Ray process on the machine; this does not.)

Nothing here is simulated but the machines: the raylets, the GCS, the autoscaler and the
object stores are Ray's own, on one host.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from raystack.cluster import free_port

logger = logging.getLogger(__name__)

NODE_LABEL = "raystack/node"      # every simulated node carries raystack/node=<name>
SHORT_HEALTH_CHECK = {"health_check_period_ms": 500, "health_check_failure_threshold": 3,
                      "health_check_timeout_ms": 500, "health_check_initial_delay_ms": 0}
NODE_ID_LABEL = "ray.io/node-id"


START_ATTEMPTS = 3                # tries to start one node before its startup error is raised


def _node_raising(exc: BaseException):
    """The ``ray._private.node.Node`` whose constructor raised ``exc`` (a node that started its
    processes but did not register in time), or None when ``exc`` came from elsewhere: the
    cluster never received that object, so only the traceback can stop its processes."""
    from ray._private.node import Node

    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code is Node.__init__.__code__ and isinstance(frame.f_locals.get("self"), Node):
            return frame.f_locals["self"]
        tb = tb.tb_next
    return None


@contextlib.contextmanager
def _cwd(path: Path | None) -> Iterator[None]:
    if path is None:
        yield
        return
    before = os.getcwd()
    path.mkdir(parents=True, exist_ok=True)
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


@dataclass
class SimNode:
    name: str
    handle: Any                       # ray._private.node.Node
    node_id: str
    cwd: str | None = None
    cpus: float = 1.0


@dataclass
class SimulatedCluster:
    """A head (no CPUs by default: the driver's node) and named worker nodes."""

    nodes: int = 3
    cpus_per_node: float = 1.0
    head_cpus: float = 0.0
    short_health_check: bool = True
    system_config: Mapping[str, Any] = field(default_factory=dict)
    node_dirs: str | None = None       # give each node its own working directory under here
    object_store_bytes: int = 80 * 1024**2
    head_args: Mapping[str, Any] = field(default_factory=dict)
    # node types Ray's autoscaler (fake multi-node provider) may launch beside the static nodes:
    # name -> {"resources": {...}, "max_workers": n}; empty: no autoscaler
    autoscale_node_types: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    idle_timeout_minutes: float = 0.05

    def __post_init__(self) -> None:
        self.cluster = None
        self.members: dict[str, SimNode] = {}
        self._count = 0

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self, connect: bool = True) -> "SimulatedCluster":
        from ray.cluster_utils import Cluster

        sys_cfg = {**(SHORT_HEALTH_CHECK if self.short_health_check else {}), **self.system_config}
        # the dashboard serves Ray's state API (where each actor runs); on a free port
        self.dashboard_port = free_port()
        head = {"num_cpus": self.head_cpus, "object_store_memory": self.object_store_bytes,
                "include_dashboard": True, "dashboard_port": self.dashboard_port, **self.head_args}
        if self.autoscale_node_types:
            head.update(self._autoscaling_head())
        if sys_cfg:
            head["_system_config"] = dict(sys_cfg)
        self.cluster = Cluster()
        self._start_node("head", None, wait=True, **head)
        for _ in range(self.nodes):
            self.add(wait=False)          # the raylets start side by side; joined below
        if connect:
            self.connect()
        self.wait_for_nodes()
        return self

    def _autoscaling_head(self) -> dict:
        """Head arguments that run Ray's autoscaler over the fake multi-node provider."""
        port = free_port()
        cfg = fake_autoscaling_config(f"127.0.0.1:{port}", self.autoscale_node_types, head_cpus=self.head_cpus,
                                      idle_timeout_minutes=self.idle_timeout_minutes)
        path = Path(tempfile.mkdtemp(prefix="raystack-autoscale-")) / "autoscaling.json"
        path.write_text(json.dumps(cfg))
        os.environ["RAY_FAKE_CLUSTER"] = "1"  # the head's autoscaler (a child process) needs it
        return {"gcs_server_port": port, "autoscaling_config": str(path)}

    def connect(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        ray.init(address=self.address, log_to_driver=False)
        os.environ["RAY_ADDRESS"] = self.address  # tools that look the cluster up find this one

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    @property
    def address(self) -> str:
        return self.cluster.address

    def add(self, name: str | None = None, cpus: float | None = None,
            resources: Mapping[str, float] | None = None, wait: bool = True) -> SimNode:
        """Start one more worker node (named ``node-<k>`` unless given). ``wait=False`` returns
        once its raylet is started, before it has joined: nodes added so start together, and
        :meth:`wait_for_nodes` waits for them all."""
        name = name or f"node-{self._count}"
        self._count += 1
        cpus = self.cpus_per_node if cpus is None else cpus
        cwd = Path(self.node_dirs) / name if self.node_dirs else None
        handle = self._start_node(name, cwd, wait=wait, num_cpus=cpus, resources={name: 1.0, **(resources or {})},
                                  labels={NODE_LABEL: name}, object_store_memory=self.object_store_bytes)
        node = SimNode(name, handle, handle.node_id, str(cwd) if cwd else None, cpus)
        self.members[name] = node
        return node

    def _start_node(self, name: str, cwd: Path | None, wait: bool, **args: Any):
        """``Cluster.add_node`` (the head first), tried up to START_ATTEMPTS times: Ray waits a
        fixed 30 s for a new raylet to register with the GCS, and on a loaded machine it can take
        longer. A node that missed the wait is stopped and started again."""
        for attempt in range(1, START_ATTEMPTS):
            try:
                with _cwd(cwd):
                    return self.cluster.add_node(wait=wait, **args)
            except Exception as exc:
                started = _node_raising(exc)
                if started is None:
                    raise
                logger.warning("node %s did not register within Ray's startup wait (%s); stopping it and "
                               "starting it again (attempt %d of %d)", name, exc, attempt + 1, START_ATTEMPTS)
                with contextlib.suppress(Exception):
                    started.kill_all_processes(check_alive=False, allow_graceful=False, wait=True)
        with _cwd(cwd):       # the last attempt: its error is raised as it is
            return self.cluster.add_node(wait=wait, **args)

    def remove(self, name: str) -> float:
        """Kill a node at once (no graceful drain), as a machine that is lost; returns the time."""
        node = self.members.pop(name)
        t = time.time()
        self.cluster.remove_node(node.handle, allow_graceful=False)
        logger.info("removed %s (%s)", name, node.node_id[:8])
        return t

    @staticmethod
    def _alive_ids() -> set[str]:
        import ray

        return {n["NodeID"] for n in ray.nodes() if n["Alive"]}

    def _poll_alive(self, missing, timeout_s: float, what: str) -> None:
        """Poll the alive node ids until ``missing(alive)`` is empty; else TimeoutError."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            left = missing(self._alive_ids())
            if not left:
                return
            time.sleep(0.2)
        raise TimeoutError(f"nodes {sorted(x[:8] for x in left)} {what} within {timeout_s:g}s")

    def wait_for_nodes(self, timeout_s: float = 60.0) -> None:
        want = {n.node_id for n in self.members.values()}
        self._poll_alive(lambda alive: want - alive, timeout_s, "did not join")

    def wait_settled(self, timeout_s: float = 90.0) -> None:
        """Wait until the alive nodes are exactly the head and the members: nodes removed
        earlier declared dead and nodes the autoscaler launched terminated, so that nothing
        placed next lands on a node about to go."""
        want = {n.node_id for n in self.members.values()} | {self.cluster.head_node.node_id}
        self._poll_alive(lambda alive: alive - want, timeout_s, "still alive")

    def wait_dead(self, node_id: str, timeout_s: float = 120.0) -> float:
        """Wait until the GCS declares ``node_id`` dead; returns when it did (time.time())."""
        import ray

        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if not any(n["NodeID"] == node_id and n["Alive"] for n in ray.nodes()):
                return time.time()
            time.sleep(0.1)
        raise TimeoutError(f"node {node_id[:8]} was not declared dead within {timeout_s:g}s")

    def shutdown(self) -> None:
        """Stop the nodes the autoscaler launched (asked to, then by process id), then the
        cluster this object started."""
        import ray

        launched = self._autoscaler_processes()
        if ray.is_initialized():
            if self.autoscale_node_types:
                with contextlib.suppress(Exception):
                    from ray.autoscaler.sdk import request_resources
                    request_resources(bundles=[])
                    deadline = time.time() + 30
                    while autoscaled_nodes() and time.time() < deadline:
                        time.sleep(0.5)
            ray.shutdown()
        if os.environ.get("RAY_ADDRESS") == getattr(self.cluster, "address", None):
            os.environ.pop("RAY_ADDRESS")
        if self.cluster is not None:
            self.cluster.shutdown()
            self.cluster = None
        for proc in launched:  # raylets the autoscaler started and that outlived it
            with contextlib.suppress(Exception):
                if proc.is_running():
                    proc.kill()
        self.members.clear()

    def _autoscaler_processes(self) -> list:
        """Every process below the head's autoscaler (the nodes it launched)."""
        if self.cluster is None or not self.autoscale_node_types:
            return []
        import psutil

        out = []
        for info in self.cluster.head_node.all_processes.get("monitor", []):
            with contextlib.suppress(psutil.Error):
                out += psutil.Process(info.process.pid).children(recursive=True)
        return out

    def __enter__(self) -> "SimulatedCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.shutdown()

    # ---- where things are --------------------------------------------------------------------------
    def name_of(self, node_id: str) -> str:
        """The simulated node's name for a Ray node id (``head`` for the head)."""
        for n in self.members.values():
            if n.node_id == node_id:
                return n.name
        return "head" if node_id == self.cluster.head_node.node_id else node_id[:8]

    def actor_nodes(self, actors: Mapping[str, Any]) -> dict[str, str]:
        """key -> the simulated node's name where each actor runs (Ray's state API)."""
        return {k: self.name_of(n) if n else None
                for k, n in actor_nodes(actors, address=self.dashboard_url).items()}


def actor_nodes(actors: Mapping[str, Any], address: str | None = None) -> dict[str, str | None]:
    """key -> Ray node id of each actor, read from Ray's state API (the dashboard's)."""
    from ray.util.state import get_actor

    out = {}
    for key, actor in actors.items():
        info = get_actor(actor._actor_id.hex(), address=address)
        out[key] = info.node_id if info is not None else None
    return out


# ---- Ray's fake multi-node autoscaler ---------------------------------------------------------------
def fake_autoscaling_config(gcs_address: str, node_types: Mapping[str, Mapping[str, Any]], *,
                            head_cpus: float = 0, idle_timeout_minutes: float = 0.05,
                            max_workers: int = 8) -> dict:
    """An autoscaling config for the fake multi-node provider. ``node_types``:
    name -> {"resources": {...}, "min_workers": n, "max_workers": n}."""
    types = {"ray.head.default": {"resources": {"CPU": head_cpus}, "node_config": {}, "max_workers": 0}}
    for name, t in node_types.items():
        types[name] = {"node_config": {}, "min_workers": 0, **t}
    return {
        "cluster_name": "raystack-fake", "max_workers": max_workers, "upscaling_speed": 10.0,
        "idle_timeout_minutes": idle_timeout_minutes,
        "provider": {"type": "fake_multinode", "gcs_address": gcs_address, "disable_launch_config_check": True,
                     "disable_node_updaters": True, "use_node_id_as_ip": True},
        "auth": {"ssh_user": "nobody"},
        "available_node_types": types, "head_node_type": "ray.head.default",
        "file_mounts": {}, "cluster_synced_files": [], "file_mounts_sync_continuously": False,
        "rsync_exclude": [], "rsync_filter": [], "initialization_commands": [], "setup_commands": [],
        "head_setup_commands": [], "worker_setup_commands": [], "head_start_ray_commands": [],
        "worker_start_ray_commands": [],
    }


def start_fake_autoscaling(node_types: Mapping[str, Mapping[str, Any]], *, nodes: int = 0, head_cpus: float = 0,
                           idle_timeout_minutes: float = 0.05, short_health_check: bool = True) -> SimulatedCluster:
    """A :class:`SimulatedCluster` (``nodes`` static nodes) whose head runs Ray's autoscaler
    over the fake multi-node provider, launching nodes of ``node_types`` on demand. Sets
    ``RAY_FAKE_CLUSTER=1`` in this process (the head's autoscaler inherits it)."""
    return SimulatedCluster(nodes=nodes, head_cpus=head_cpus, short_health_check=short_health_check,
                            autoscale_node_types=node_types, idle_timeout_minutes=idle_timeout_minutes).start()


def autoscaled_nodes() -> list[dict]:
    """The alive nodes the fake autoscaler launched (their ids start with ``fffff``)."""
    import ray

    return [n for n in ray.nodes() if n["Alive"] and n["NodeID"].startswith("fffff")]
