"""A saved adapter set: the directory ``mlora_finetune`` exported, readable again later.

``mlora_finetune`` exports one peft adapter directory per adapter under its output directory;
beside them it writes an index (:data:`INDEX_FILE`: each adapter's directory, relative, and the
run's details: base, adapter names, losses, the mLoRA config) so that a later workflow can load
the set by its path ("evaluate the saved adapters in ./adapters/retail-v3") and evaluate or
serve it exactly as it would the step's own output. A directory without the index is refused
with the file it lacks: without the config, the adapters' tasks and held-out data are unknown.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from raystack.workflow.artifacts import ADAPTER_SET, Artifact, ArtifactError, make_artifact

INDEX_FILE = "adapter_set.json"
PEFT_CONFIG = "adapter_config.json"


def write_index(directory: str, files: Mapping[str, str], info: Mapping[str, Any]) -> str:
    """Write the index of the adapter set exported under ``directory``; returns its path."""
    root = Path(directory)
    rel = {name: os.path.relpath(path, root) for name, path in files.items()}
    target = root / INDEX_FILE
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps({"adapters": rel, "info": dict(info)}, indent=2, default=str))
    os.replace(tmp, target)
    return str(target)


def read_adapter_set(directory: str) -> Artifact:
    """The adapter set saved under ``directory`` (its index and every adapter it lists)."""
    root = Path(directory)
    index = root / INDEX_FILE
    if not index.is_file():
        raise FileNotFoundError(f"adapters {directory!r}: no {INDEX_FILE} (expected a directory "
                                "written by mlora_finetune)")
    doc = json.loads(index.read_text())
    files = {name: str((root / rel).resolve()) for name, rel in doc.get("adapters", {}).items()}
    missing = [n for n, p in files.items() if not (Path(p) / PEFT_CONFIG).is_file()]
    if not files or missing:
        raise ArtifactError(f"adapters {directory!r}: adapters {missing or 'none'} have no {PEFT_CONFIG}")
    info = dict(doc.get("info", {}))
    info["source"] = "loaded"
    return make_artifact(ADAPTER_SET, str(root.resolve()), files=files, info=info)


def stand_in_adapter_set(directory: str) -> None:
    """Untrained adapters of the default mLoRA config over the tiny base, saved with their
    index: what a dry run reads where a plan loads a saved adapter set."""
    from raystack.config import config_to_dict
    from raystack.mlora.batchlora import BatchLoRAModel
    from raystack.mlora.config import MLoRAConfig
    from raystack.mlora.export import base_reference, save_peft
    from raystack.mlora.trainer import build_base

    if (Path(directory) / INDEX_FILE).is_file():
        return
    cfg = MLoRAConfig()
    model = BatchLoRAModel(build_base(cfg))
    ref = base_reference(cfg.base, cfg.seed)
    files = {}
    for a in cfg.adapters:
        model.add_adapter(a.spec())
        files[a.name] = str(save_peft(Path(directory) / a.name, a.spec(), model.adapter_state(a.name), ref))
    write_index(directory, files, {"base": cfg.base, "adapters": sorted(files), "config": config_to_dict(cfg)})
