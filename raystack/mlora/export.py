"""Adapter files: export in the PEFT format, import back (raystack's or peft's), and checkpoints.

PEFT format: a directory with ``adapter_config.json`` and ``adapter_model.safetensors`` whose
keys are ``base_model.model.<module path>.lora_A.weight`` / ``.lora_B.weight`` (and
``.lora_magnitude_vector`` for DoRA, ``.lora_B.bias`` with ``lora_bias``), so
``peft.PeftModel.from_pretrained(base, dir)`` and ``AutoPeftModelForCausalLM`` load it.
``base_model_name_or_path`` is the base as the user gave it (a Hub id, or the path as given)
and the safetensors header carries a content hash of the base's weights: raystack refuses to
attach the adapter to a base whose weights differ.

Reading a peft-written adapter handles every LoRA/DoRA option that changes the computation
(``use_rslora``, ``rank_pattern``, ``alpha_pattern``, ``layers_to_transform``, ``lora_bias``,
``fan_in_fan_out``, an ``lm_head`` target with the head's weights saved beside it) or refuses
the adapter naming the option: never silently different logits.

Checkpoints (``torch.save``) hold the adapter tensors, optimizer state, the dropout random
streams, the step and the data position, enough to resume exactly.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from raystack.mlora.batchlora import AdapterSpec, BatchLoRAModel
from raystack.runtime.storage import Storage, torch_bytes, torch_load_bytes

_PREFIX = "base_model.model."
CONFIG_FILE, WEIGHTS_FILE = "adapter_config.json", "adapter_model.safetensors"
META_BASE, META_SHA = "raystack.base", "raystack.base_sha256"  # safetensors header entries
PEFT_FORMAT_VERSION = "0.21.2"  # the peft release whose format is written when peft is not installed
_SUFFIXES = {"lora_A": "lora_A.weight", "lora_B": "lora_B.weight", "magnitude": "lora_magnitude_vector",
             "lora_B_bias": "lora_B.bias"}
_READ_SUFFIXES = (("lora_A.weight", "lora_A"), ("lora_B.weight", "lora_B"), ("lora_B.bias", "lora_B_bias"),
                  ("lora_magnitude_vector.weight", "magnitude"), ("lora_magnitude_vector", "magnitude"))
# adapter_config.json keys read into the spec, or that do not change a loaded adapter's output
_HANDLED = {"peft_type", "task_type", "base_model_name_or_path", "revision", "r", "lora_alpha", "lora_dropout",
            "target_modules", "exclude_modules", "fan_in_fan_out", "bias", "use_rslora", "rank_pattern",
            "alpha_pattern", "layers_to_transform", "layers_pattern", "use_dora", "lora_bias", "inference_mode",
            "peft_version", "auto_mapping", "init_lora_weights", "modules_to_save", "runtime_config",
            "megatron_core", "qalora_group_size", "ensure_weight_tying", "eva_config", "lora_ga_config",
            "corda_config", "loftq_config"}
# initialisations that change the base's weights too: the adapter only fits that modified base
_BASE_CHANGING_INITS = ("pissa", "olora", "corda", "loftq")


class AdapterFormatError(ValueError):
    """An adapter raystack cannot reproduce exactly (the message names the option or key)."""


@dataclass(frozen=True)
class BaseRef:
    """What an adapter records about its base: the name as the user gave it, a content hash
    of its weights, and whether its layers store weights transposed (GPT-2's Conv1D)."""

    name: str | None
    sha256: str | None = None
    fan_in_fan_out: bool = False


@functools.lru_cache(maxsize=8)
def base_reference(base: str, seed: int = 0) -> BaseRef:
    """The :class:`BaseRef` of a base (hashing its weights once per process; see
    :func:`raystack.models.identity.base_weights_sha256`)."""
    from raystack.models import meta_model
    from raystack.models.identity import base_weights_sha256

    meta = meta_model(base, field="base")
    conv1d = any(type(m).__name__ == "Conv1D" for m in meta.modules())
    return BaseRef(base, base_weights_sha256(base, seed), conv1d)


def peft_version() -> str:
    """The installed peft's version (the format written), or the release the format matches."""
    try:
        from importlib.metadata import version

        return version("peft")
    except Exception:  # peft is a test dependency, not a runtime one
        return PEFT_FORMAT_VERSION


def peft_config(spec: AdapterSpec, base: BaseRef | str | None = None) -> dict[str, Any]:
    """The ``adapter_config.json`` content for an adapter."""
    ref = base if isinstance(base, BaseRef) else BaseRef(base)
    targets = sorted(spec.modules) if spec.modules is not None else sorted(spec.target_modules)
    return {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "peft_version": peft_version(),
        "base_model_name_or_path": ref.name,
        "r": spec.r,
        "lora_alpha": spec.alpha,
        "lora_dropout": spec.dropout,
        "target_modules": targets,
        "use_dora": spec.kind == "dora",
        "bias": "none",
        "fan_in_fan_out": ref.fan_in_fan_out,
        "init_lora_weights": True,
        "inference_mode": True,
        "use_rslora": spec.use_rslora,
        "rank_pattern": dict(spec.rank_pattern),
        "alpha_pattern": dict(spec.alpha_pattern),
        "lora_bias": spec.lora_bias,
        "modules_to_save": None,
    }


def state_to_peft(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename :meth:`BatchLoRAModel.adapter_state` keys to PEFT's."""
    out = {}
    for key, value in state.items():
        path, _, kind = key.rpartition(".")
        out[f"{_PREFIX}{path}.{_SUFFIXES[kind]}"] = value.detach().contiguous().clone()
    return out


def peft_to_state(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Inverse of :func:`state_to_peft` (a key raystack cannot use raises, naming it)."""
    out = {}
    for key, value in tensors.items():
        if not key.startswith(_PREFIX):
            raise AdapterFormatError(f"not a PEFT LoRA key: {key!r}")
        body = key[len(_PREFIX):]
        for suffix, kind in _READ_SUFFIXES:
            if body.endswith("." + suffix):
                out[f"{body[: -len(suffix) - 1]}.{kind}"] = value
                break
        else:
            raise AdapterFormatError(f"unsupported PEFT key: {key!r} (raystack adapts linear layers with "
                                     "lora_A/lora_B[/lora_magnitude_vector]; embedding LoRA and saved modules are not supported)")
    return out


def save_peft(directory: str | os.PathLike, spec: AdapterSpec, state: dict[str, torch.Tensor],
              base_name: BaseRef | str | None = None, tokenizer: Any = None) -> Path:
    """Write one adapter in the PEFT format; returns the directory. ``base_name``: the base as
    the user gave it, or a :class:`BaseRef` with its weights' hash; ``tokenizer`` (the base's)
    is saved beside it, as trainers do, so ``AutoTokenizer`` loads the directory too."""
    ref = base_name if isinstance(base_name, BaseRef) else BaseRef(base_name)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    meta = {"format": "pt", **({META_BASE: ref.name} if ref.name else {}), **({META_SHA: ref.sha256} if ref.sha256 else {})}
    save_file(state_to_peft(state), str(d / WEIGHTS_FILE), metadata=meta)
    (d / CONFIG_FILE).write_text(json.dumps(peft_config(spec, ref), indent=2))
    if tokenizer is not None:
        tokenizer.save_pretrained(d)
    return d


@dataclass
class PeftAdapter:
    """A PEFT adapter directory as raystack reads it."""

    spec: AdapterSpec
    state: dict[str, torch.Tensor]  # adapter_state keys
    base_layers: dict[str, torch.Tensor] = field(default_factory=dict)  # module path -> saved base weight
    base_name: str | None = None
    base_sha256: str | None = None


def _refuse_options(cfg: dict, where: Path) -> None:
    """Refuse, by name, every option raystack would not reproduce exactly."""
    if cfg.get("peft_type", "LORA") != "LORA":
        raise AdapterFormatError(f"{where}: peft_type {cfg.get('peft_type')!r} is not LORA")
    if cfg.get("bias", "none") != "none":
        raise AdapterFormatError(f"{where}: bias={cfg['bias']!r} trains the base's biases; raystack supports 'none' "
                                 "(use lora_bias for a trained bias on the update)")
    if cfg.get("modules_to_save"):
        raise AdapterFormatError(f"{where}: modules_to_save={cfg['modules_to_save']} replaces whole modules per "
                                 "adapter; raystack shares one base between adapters")
    init = cfg.get("init_lora_weights", True)
    if isinstance(init, str) and init.lower().startswith(_BASE_CHANGING_INITS):
        raise AdapterFormatError(f"{where}: init_lora_weights={init!r} fits a modified base; convert it to a plain "
                                 "LoRA adapter with peft first")
    if cfg.get("loftq_config"):
        raise AdapterFormatError(f"{where}: loftq_config fits a quantised, modified base")
    if cfg.get("use_dora") and cfg.get("lora_bias"):
        raise AdapterFormatError(f"{where}: lora_bias together with use_dora is not supported")
    for key, value in cfg.items():
        if key not in _HANDLED and value not in (None, False, [], {}, ""):
            raise AdapterFormatError(f"{where}: option {key}={value!r} is not supported by raystack (it would "
                                     "change the adapter's output)")


def read_peft(directory: str | os.PathLike, name: str) -> tuple[AdapterSpec, dict[str, torch.Tensor]]:
    """Read a PEFT LoRA/DoRA adapter directory as (spec, adapter state); see :func:`read_adapter`."""
    adapter = read_adapter(directory, name)
    return adapter.spec, adapter.state


def read_adapter(directory: str | os.PathLike, name: str) -> PeftAdapter:
    """Read a PEFT LoRA/DoRA adapter directory (written by raystack or by peft)."""
    d = Path(directory)
    cfg_path = d / CONFIG_FILE
    if not cfg_path.exists():
        raise FileNotFoundError(f"{cfg_path} not found: not a PEFT adapter directory")
    cfg = json.loads(cfg_path.read_text())
    _refuse_options(cfg, cfg_path)
    with safe_open(str(d / WEIGHTS_FILE), framework="pt") as f:
        meta = f.metadata() or {}
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    base_layers = {}
    for key in [k for k in tensors if k.endswith(".base_layer.weight")]:
        # peft saves a targeted lm_head's (or embedding's) own weights beside its LoRA
        base_layers[key[len(_PREFIX):-len(".base_layer.weight")]] = tensors.pop(key)
    try:
        state = peft_to_state(tensors)
    except AdapterFormatError as exc:
        raise AdapterFormatError(f"{d}: {exc}") from None
    paths = frozenset(k.rpartition(".")[0] for k in state)
    spec = AdapterSpec(
        name=name, kind="dora" if cfg.get("use_dora") else "lora", r=int(cfg["r"]),
        alpha=float(cfg.get("lora_alpha", 8)), dropout=float(cfg.get("lora_dropout", 0.0)),
        target_modules=tuple(sorted({p.rsplit(".", 1)[-1] for p in paths})),
        rank_pattern=tuple((k, int(v)) for k, v in (cfg.get("rank_pattern") or {}).items()),
        alpha_pattern=tuple((k, float(v)) for k, v in (cfg.get("alpha_pattern") or {}).items()),
        use_rslora=bool(cfg.get("use_rslora")), lora_bias=bool(cfg.get("lora_bias")), modules=paths)
    for path in sorted(paths):
        a = state.get(f"{path}.lora_A")
        if a is not None and a.shape[0] != spec.rank_for(path):
            raise AdapterFormatError(f"{d}: {path} has rank {a.shape[0]} but r/rank_pattern give {spec.rank_for(path)}")
    return PeftAdapter(spec, state, base_layers, meta.get(META_BASE, cfg.get("base_model_name_or_path")),
                       meta.get(META_SHA))


def load_peft_adapter(model: BatchLoRAModel, directory: str | os.PathLike, name: str,
                      base_sha256: str | None = None) -> AdapterSpec:
    """Attach a PEFT adapter directory to ``model`` under ``name``. With ``base_sha256`` (the
    model's weights' hash), an adapter that records another base is refused."""
    adapter = read_adapter(directory, name)
    if base_sha256 and adapter.base_sha256 and adapter.base_sha256 != base_sha256:
        raise AdapterFormatError(f"{directory} was trained on base {adapter.base_name!r} with weights sha256 "
                                 f"{adapter.base_sha256[:12]}..., but this base's weights hash to {base_sha256[:12]}...")
    for path, weight in adapter.base_layers.items():
        try:
            mine = model.base_weight(path)
        except (AttributeError, KeyError):
            raise AdapterFormatError(f"{directory}: saved base weights for {path!r}, a module this base lacks") from None
        if mine.shape != weight.shape or not torch.allclose(mine.float(), weight.float().to(mine.device), atol=1e-6):
            raise AdapterFormatError(f"{directory}: {path}.base_layer.weight differs from the base's {path} (resized or "
                                     "trained): raystack shares one base between adapters")
    model.add_adapter(adapter.spec)
    try:
        model.load_adapter_state(name, adapter.state)
    except (KeyError, RuntimeError) as exc:
        model.remove_adapter(name)
        raise AdapterFormatError(f"{directory} does not fit this base: {exc}") from None
    return adapter.spec


class RunFiles:
    """An mLoRA run's files in its run folder (any pyarrow filesystem, through a Storage):
    ``checkpoints/<adapter>.pt`` (written atomically) and ``adapters/<adapter>/`` (published
    whole)."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def load(self, name: str) -> dict[str, Any] | None:
        """The adapter's training checkpoint, or None."""
        path = ("checkpoints", f"{name}.pt")
        return torch_load_bytes(self.storage.read_bytes(*path)) if self.storage.exists(*path) else None

    def save(self, name: str, payload: dict[str, Any]) -> None:
        self.storage.write_bytes(torch_bytes(payload), "checkpoints", f"{name}.pt")

    def drop(self, name: str) -> None:
        self.storage.delete_file("checkpoints", f"{name}.pt")

    def adapter_dir(self, name: str) -> str:
        return self.storage.path("adapters", name)

    def export(self, name: str, spec: AdapterSpec, state: dict[str, torch.Tensor], base: BaseRef | str | None,
               tokenizer: Any = None) -> str:
        """Write the adapter in the PEFT format (locally, then published whole); its path."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="raystack-adapter-") as tmp:
            save_peft(Path(tmp) / name, spec, state, base, tokenizer)
            return self.storage.upload(Path(tmp) / name, "adapters", name)
