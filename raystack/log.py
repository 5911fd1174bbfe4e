"""raystack's logging: one ``logging.getLogger(__name__)`` per module, quiet by default.

Every module logs through its own logger under ``raystack``; nothing is printed for
diagnostics (progress bars are for people and stay). By default only warnings and errors
show. ``RAYSTACK_LOG_LEVEL=INFO`` (or ``DEBUG``) in the environment, or ``raystack
--log-level INFO`` on the command line, shows more; actors started from such a driver get the
same level (the variable travels in their runtime environment).
"""
from __future__ import annotations

import logging
import os

ENV_VAR = "RAYSTACK_LOG_LEVEL"
DEFAULT_LEVEL = "WARNING"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
ROOT = "raystack"


def level_from_env() -> str | None:
    """The level the environment asks for (None when ``RAYSTACK_LOG_LEVEL`` is unset)."""
    value = os.environ.get(ENV_VAR, "").strip()
    return value.upper() or None


def configure_logging(level: str | int | None = None) -> int:
    """Give raystack's loggers one stderr handler and a level: ``level``, else
    ``$RAYSTACK_LOG_LEVEL``, else WARNING. Returns the numeric level. Idempotent."""
    chosen = level if level is not None else (level_from_env() or DEFAULT_LEVEL)
    if isinstance(chosen, str):
        numeric = logging.getLevelName(chosen.upper())
        if not isinstance(numeric, int):
            raise ValueError(f"log level must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {chosen!r}")
    else:
        numeric = int(chosen)
    root = logging.getLogger(ROOT)
    if not any(getattr(h, "raystack_handler", False) for h in root.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(FORMAT))
        handler.raystack_handler = True
        root.addHandler(handler)
    root.setLevel(numeric)
    root.propagate = False
    if level is not None:  # actors started from here log at the same level
        os.environ[ENV_VAR] = logging.getLevelName(numeric)
    return numeric
