"""The runtime kernel every part runs on (see docs/architecture.md).

- :class:`ActorGroup` (``group.py``): placement groups, spawn/respawn, fan-out calls with
  typed replies, one batched health poll -> :class:`GroupStatus` (``health.py``);
- :class:`FailurePolicy` (``policy.py``): ``decide(FailureEvent) -> Restart | Raise``;
- :class:`Controller` (``controller.py``): STARTING -> RUNNING (<-> RECOVERING) ->
  FINISHED | ERRORED, calling a part's hooks;
- :class:`Result` (``result.py``), experiment tracking (``tracking.py``), the part registry
  (``registry.py``) and the Python entry point (``run.py``).
"""
from raystack.runtime.controller import (Controller, ControllerState, Hooks, MetricsCallback, Progress,
                                         RunFailedError, Transition)
from raystack.runtime.group import ActorGroup, Call, MemberFailure, MemberSpec, PlacementSpec, Spawner
from raystack.runtime.health import GroupStatus, Health, MemberStatus
from raystack.runtime.policy import FailureEvent, FailurePolicy, Raise, Restart
from raystack.runtime.result import Result, history_table

__all__ = ["ActorGroup", "Call", "Controller", "ControllerState", "FailureEvent", "FailurePolicy",
           "GroupStatus", "Health", "Hooks", "MemberFailure", "MemberSpec", "MemberStatus",
           "MetricsCallback", "PlacementSpec", "Progress", "Raise", "Restart", "Result",
           "RunFailedError", "Spawner", "Transition", "history_table"]
