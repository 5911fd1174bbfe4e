"""What one batched health poll of an actor group found, as typed values.

Each member of an :class:`~raystack.runtime.group.ActorGroup` is ALIVE (it answered), DEAD
(its actor died: killed, crashed, or its constructor failed), NODE_LOST (it died because its
node died: a replacement needs a new placement, the old bundle points at the dead node) or
UNREACHABLE (no answer within the timeout, or Ray says the actor is temporarily unavailable:
busy, starting, or a node that is not declared dead yet).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping


class Health(enum.Enum):
    ALIVE = "alive"
    DEAD = "dead"
    NODE_LOST = "node_lost"
    UNREACHABLE = "unreachable"

    @property
    def failed(self) -> bool:
        """Whether the member needs replacing (it died, alone or with its node)."""
        return self in (Health.DEAD, Health.NODE_LOST)


# worst first: the health a failure event carries when several members failed differently
SEVERITY = (Health.NODE_LOST, Health.DEAD, Health.UNREACHABLE, Health.ALIVE)


def worst(healths) -> Health:
    """The most severe of ``healths`` (ALIVE when empty)."""
    found = set(healths)
    return next((h for h in SEVERITY if h in found), Health.ALIVE)


@dataclass(frozen=True)
class MemberStatus:
    """One member's health, why, and what it answered (the poll method's typed reply)."""

    key: str
    health: Health
    reason: str = ""
    reply: Any = None


@dataclass(frozen=True)
class GroupStatus:
    """The result of one batched health poll, member by member (in the group's order)."""

    members: Mapping[str, MemberStatus] = field(default_factory=dict)

    def keys_with(self, *healths: Health) -> list[str]:
        return [k for k, m in self.members.items() if m.health in healths]

    @property
    def alive(self) -> list[str]:
        return self.keys_with(Health.ALIVE)

    @property
    def failed(self) -> list[str]:
        """Members whose actor died (DEAD or NODE_LOST)."""
        return self.keys_with(Health.DEAD, Health.NODE_LOST)

    @property
    def unreachable(self) -> list[str]:
        return self.keys_with(Health.UNREACHABLE)

    @property
    def healthy(self) -> bool:
        return all(m.health is Health.ALIVE for m in self.members.values())

    def replies(self) -> dict[str, Any]:
        """Each alive member's reply to the poll method."""
        return {k: m.reply for k, m in self.members.items() if m.health is Health.ALIVE}

    def reasons(self, keys=None) -> dict[str, str]:
        return {k: m.reason for k, m in self.members.items()
                if (keys is None or k in keys) and m.reason}
