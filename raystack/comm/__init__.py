"""Collectives among actors with byte/time accounting and a simulated network.

The names load on first use (PEP 562): ``raystack.comm.network`` (the link model, pure Python)
is read by config validation, which must not pay for importing torch (``group``)."""
from __future__ import annotations

from raystack.lazy import lazy_exports

_HOME = {"CommGroup": "group", "CommHandle": "group", "OpStats": "group", "default_backend": "group",
         "NetworkModel": "network", "SimulatedLink": "network", "ring_bytes": "network"}
__all__ = list(_HOME)
__getattr__, __dir__ = lazy_exports(__name__, _HOME)
