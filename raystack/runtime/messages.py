"""The base of the typed messages actors send to their controllers.

Every report that crosses an actor boundary is a frozen dataclass that derives from
:class:`Message` (EDiT's segment reports, mLoRA's stage stats, elastic's worker status, PS
stats and shard-service replies live beside their part). Read fields as attributes;
``msg["field"]`` also works, so code written against the dict replies these replaced keeps
reading them.
"""
from __future__ import annotations

import dataclasses
from typing import Any


class Message:
    """Mixin for frozen dataclass messages: dict-style reads and a plain-dict view."""

    def __getitem__(self, name: str) -> Any:
        if name not in self.field_names():
            raise KeyError(f"{type(self).__name__} has no field {name!r}")
        return getattr(self, name)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    def as_dict(self) -> dict[str, Any]:
        """The fields as a shallow dict (values are not copied)."""
        return {name: getattr(self, name) for name in self.field_names()}
