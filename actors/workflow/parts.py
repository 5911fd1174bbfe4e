"""Catalog steps that run the other raystack parts through their job entry points
(``python -m raystack.apps.jobs.<part> --config FILE``), so a workflow can chain them.

Each raises a clear error when that part is not installed in this checkout yet.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from typing import Optional

import yaml


def _run_part(part: str, config: dict) -> dict:
    if importlib.util.find_spec(f"raystack.apps.jobs.{part}") is None:
        raise RuntimeError(f"the raystack part {part!r} is not installed (no raystack.apps.jobs.{part}); "
                           f"this catalog step needs it")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(config, f)
        path = f.name
    t0 = time.time()
    try:
        proc = subprocess.run([sys.executable, "-m", f"raystack.apps.jobs.{part}", "--config", path],
                              capture_output=True, text=True, env=dict(os.environ))
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise RuntimeError(f"{part} job failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return {"part": part, "config": config, "seconds": time.time() - t0,
            "log_tail": proc.stdout[-2000:]}


def _merge(config: Optional[dict], **fields) -> dict:
    """The part's config: ``config`` plus the named fields that were given (not None).

    Field names follow the part's own config file (see docs/<part>.md); unknown ones are
    rejected by that part with a ConfigError naming them.
    """
    out = dict(config or {})
    out.update({k: v for k, v in fields.items() if v is not None})
    return out


def edit_pretrain(model: Optional[str] = None, steps: Optional[int] = None,
                  workers: Optional[int] = None, config: Optional[dict] = None) -> dict:
    """Pretrain a language model with EDiT (the ``edit`` part)."""
    return _run_part("edit", _merge(config, model=model, steps=steps, workers=workers))


def mlora_finetune(adapters: Optional[int] = None, steps: Optional[int] = None,
                   config: Optional[dict] = None) -> dict:
    """Fine-tune LoRA adapters with mLoRA (the ``mlora`` part)."""
    return _run_part("mlora", _merge(config, adapters=adapters, steps=steps))


def elastic_dlrm(steps: Optional[int] = None, workers: Optional[int] = None,
                 config: Optional[dict] = None) -> dict:
    """Train a DLRM elastically (the ``elastic`` part)."""
    return _run_part("elastic", _merge(config, steps=steps, workers=workers))
