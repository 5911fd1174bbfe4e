"""Collectives among actors with byte/time accounting and a simulated network.

The names load on first use (PEP 562): ``raystack.comm.network`` (the link model, pure Python)
is read by config validation, which must not pay for importing torch (``group``)."""
from __future__ import annotations

import importlib

_HOME = {"CommGroup": "group", "CommHandle": "group", "OpStats": "group", "default_backend": "group",
         "NetworkModel": "network", "SimulatedLink": "network", "ring_bytes": "network"}
__all__ = list(_HOME)


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
