"""The runtime kernel every part runs on (see docs/architecture.md).

- :class:`ActorGroup` (``group.py``): placement groups, spawn/respawn, fan-out calls with
  typed replies, one batched health poll -> :class:`GroupStatus` (``health.py``);
- :class:`FailurePolicy` (``policy.py``): ``decide(FailureEvent) -> Restart | Raise``;
- :class:`Controller` (``controller.py``): STARTING -> RUNNING (<-> RECOVERING) ->
  FINISHED | ERRORED, calling a part's hooks;
- :class:`Result` (``result.py``), experiment tracking (``tracking.py``), the part registry
  (``registry.py``) and the Python entry point (``run.py``).

Names are imported on first use, so importing one module (e.g. ``tracking`` from a config)
does not load the others.
"""
from __future__ import annotations

import importlib

_WHERE = {
    "Controller": "controller", "ControllerState": "controller", "Hooks": "controller",
    "MetricsCallback": "controller", "Progress": "controller", "RunFailedError": "controller",
    "Transition": "controller",
    "ActorGroup": "group", "Call": "group", "MemberFailure": "group", "MemberSpec": "group",
    "PlacementSpec": "group", "Spawner": "group",
    "GroupStatus": "health", "Health": "health", "MemberStatus": "health",
    "FailureEvent": "policy", "FailurePolicy": "policy", "Raise": "policy", "Restart": "policy",
    "Result": "result", "history_table": "result",
    "Run": "run", "run_part": "run",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        return getattr(importlib.import_module(f"raystack.runtime.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'raystack.runtime' has no attribute {name!r}")
