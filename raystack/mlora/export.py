"""Adapter files: export in the PEFT format, import back, and training checkpoints.

PEFT format: a directory with ``adapter_config.json`` and ``adapter_model.safetensors`` whose
keys are ``base_model.model.<module path>.lora_A.weight`` / ``.lora_B.weight`` (and
``.lora_magnitude_vector`` for DoRA), so ``peft.PeftModel.from_pretrained(base, dir)`` loads it.
Checkpoints (``torch.save``) hold the adapter tensors, optimizer state, the dropout random
streams, the step and the data position, enough to resume exactly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from raystack.mlora.batchlora import AdapterSpec, BatchLoRAModel

_PREFIX = "base_model.model."


def peft_config(spec: AdapterSpec, base_name: str | None = None) -> dict[str, Any]:
    """The ``adapter_config.json`` content for an adapter."""
    return {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_name,
        "r": spec.r,
        "lora_alpha": spec.alpha,
        "lora_dropout": spec.dropout,
        "target_modules": sorted(spec.target_modules),
        "use_dora": spec.kind == "dora",
        "bias": "none",
        "fan_in_fan_out": False,
        "init_lora_weights": True,
        "inference_mode": True,
        "use_rslora": False,
        "modules_to_save": None,
    }


def state_to_peft(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename :meth:`BatchLoRAModel.adapter_state` keys to PEFT's."""
    out = {}
    for key, value in state.items():
        path, _, kind = key.rpartition(".")
        suffix = {"lora_A": "lora_A.weight", "lora_B": "lora_B.weight", "magnitude": "lora_magnitude_vector"}[kind]
        out[f"{_PREFIX}{path}.{suffix}"] = value.detach().contiguous().clone()
    return out


def peft_to_state(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Inverse of :func:`state_to_peft`."""
    out = {}
    for key, value in tensors.items():
        if not key.startswith(_PREFIX):
            raise ValueError(f"not a PEFT LoRA key: {key!r}")
        body = key[len(_PREFIX):]
        for suffix, kind in (("lora_A.weight", "lora_A"), ("lora_B.weight", "lora_B"),
                             ("lora_magnitude_vector", "magnitude"), ("lora_magnitude_vector.weight", "magnitude")):
            if body.endswith("." + suffix):
                out[f"{body[: -len(suffix) - 1]}.{kind}"] = value
                break
        else:
            raise ValueError(f"unsupported PEFT key: {key!r}")
    return out


def save_peft(directory: str | os.PathLike, spec: AdapterSpec, state: dict[str, torch.Tensor],
              base_name: str | None = None) -> Path:
    """Write one adapter in the PEFT format; returns the directory."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    save_file(state_to_peft(state), str(d / "adapter_model.safetensors"))
    (d / "adapter_config.json").write_text(json.dumps(peft_config(spec, base_name), indent=2))
    return d


def read_peft(directory: str | os.PathLike, name: str) -> tuple[AdapterSpec, dict[str, torch.Tensor]]:
    """Read a PEFT LoRA/DoRA adapter directory as (spec, adapter state)."""
    d = Path(directory)
    cfg_path = d / "adapter_config.json"
    if not cfg_path.exists():
        raise FileNotFoundError(f"{cfg_path} not found: not a PEFT adapter directory")
    cfg = json.loads(cfg_path.read_text())
    if cfg.get("peft_type", "LORA") != "LORA":
        raise ValueError(f"{cfg_path}: peft_type {cfg.get('peft_type')!r} is not LORA")
    targets = cfg["target_modules"]
    spec = AdapterSpec(name=name, kind="dora" if cfg.get("use_dora") else "lora", r=int(cfg["r"]),
                       alpha=float(cfg.get("lora_alpha", 8)), dropout=float(cfg.get("lora_dropout", 0.0)),
                       target_modules=tuple([targets] if isinstance(targets, str) else targets))
    return spec, peft_to_state(load_file(str(d / "adapter_model.safetensors")))


def load_peft_adapter(model: BatchLoRAModel, directory: str | os.PathLike, name: str) -> AdapterSpec:
    """Attach a PEFT adapter directory to ``model`` under ``name``."""
    spec, state = read_peft(directory, name)
    model.add_adapter(spec)
    model.load_adapter_state(name, state)
    return spec


def save_checkpoint(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Atomically write a checkpoint (write to a temp file, then rename)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(p.suffix + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, p)


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any] | None:
    p = Path(path)
    return torch.load(p, weights_only=False) if p.exists() else None
