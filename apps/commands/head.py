"""`raystack up | down | status`: a local Ray head for `ray job submit` and the dashboard."""
from __future__ import annotations

import argparse

from raystack import cluster


def add_up_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=6390, help="GCS port (default 6390)")
    p.add_argument("--dashboard-port", type=int, default=8265, help="dashboard and job API port (default 8265)")
    p.add_argument("--client-port", type=int, default=cluster.DEFAULT_CLIENT_PORT,
                   help=f"Ray Client server port, ray:// (default {cluster.DEFAULT_CLIENT_PORT})")
    p.add_argument("--num-cpus", type=int, default=None, help="logical CPUs (default: the machine's)")


def add_down_arguments(p: argparse.ArgumentParser) -> None:
    pass


def add_status_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--address", default=None, help="Ray address (default: RAY_ADDRESS, else the raystack head)")


def run_up(args) -> int:
    print("starting a local Ray head (token auth on)...", flush=True)
    state = cluster.start_head(port=args.port, dashboard_port=args.dashboard_port, num_cpus=args.num_cpus,
                               client_port=args.client_port)
    print(f"Ray head is up ({len(state.pids)} processes, ids saved in {cluster.STATE_DIR / 'head.json'})")
    print(f"  GCS address : {state.gcs_address}")
    print(f"  dashboard   : {state.dashboard_url}")
    print(f"  Ray Client  : {state.client_address}")
    print(f"  jobs        : RAY_AUTH_MODE=token ray job submit --address {state.dashboard_url} "
          f"--working-dir . -- python -m raystack.apps.jobs.<part> --config <file>")
    print(f"  drivers     : RAY_AUTH_MODE=token RAY_ADDRESS={state.gcs_address} raystack <part> ...")
    print(f"  token       : {cluster.TOKEN_PATH} (the dashboard asks for it in the browser)")
    print("stop it with `raystack down`")
    return 0


def run_down(args) -> int:
    state = cluster.read_head_state()
    if state is None:
        print("no raystack head is recorded as running")
        return 0
    pids = cluster.stop_head()
    print(f"stopped the Ray head at {state.gcs_address} ({len(pids)} processes, Ray Client server included)")
    return 0


def run_status(args) -> int:
    import os

    address = args.address or os.environ.get("RAY_ADDRESS")
    state = cluster.read_head_state()
    if address is None and state is not None:
        address = state.gcs_address
    if address is None:
        print("no cluster configured: raystack commands start an embedded local cluster")
        return 0
    cluster.check_reachable(address)
    info = cluster.connect(address)
    print(f"connected to {info.address}; dashboard {info.dashboard_url}; resources {info.resources}")
    cluster.disconnect()
    return 0
