"""Where a model or tokenizer comes from, and loading it.

``model:`` (EDiT), ``base:`` (mLoRA, Serve) and ``tokenizer:`` take one of

- a built-in name (``tiny-1m``, ``tiny-20m``, ``small-50m``): a Llama built from a seed, with
  the byte vocabulary;
- a local directory, as ``save_pretrained`` writes it (any causal LM ``AutoModelForCausalLM``
  loads; a tokenizer directory needs only the tokenizer files);
- a Hugging Face Hub id (``org/name``), resolved through the standard Hugging Face cache
  (``HF_HOME``, ``HF_HUB_CACHE``). With ``HF_HUB_OFFLINE=1`` only the cache is read and an id
  that is not there is an error naming it; otherwise a missing ``org/name`` id is downloaded
  into the cache (configs, safetensors weights, tokenizer files).

Resolution happens in every process that loads (a Ray actor on another node reads its own
cache); the string the user gave is what adapters record as their base.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import torch

from raystack.config import ConfigError, did_you_mean
from raystack.models.llama import MODEL_NAMES, builtin_model, model_config

BUILTIN, LOCAL, HUB = "builtin", "local", "hub"
MODEL_FILES = ("config.json",)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
# what a download fetches: configs, weights, tokenizer and chat-template files
HUB_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.tiktoken"]
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
_TRUE = {"1", "ON", "YES", "TRUE"}


@dataclass(frozen=True)
class ModelSource:
    """A resolved model or tokenizer: what the user gave, its kind, and its local directory."""

    given: str
    kind: str  # builtin | local | hub
    path: str | None = None  # directory with the files (None for built-in models)

    @property
    def builtin(self) -> bool:
        return self.kind == BUILTIN


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` forbids downloads (read now, not at import)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in _TRUE


def hub_cache_dir() -> Path:
    """The Hugging Face Hub cache this process reads (``HF_HUB_CACHE``, else ``$HF_HOME/hub``)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def _has_any(directory: Path, names: tuple[str, ...]) -> bool:
    return any((directory / n).is_file() for n in names)


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", ".", "~")) or text.endswith("/")


def _hub_snapshot(repo_id: str) -> tuple[Path | None, str]:
    """The cached snapshot of ``repo_id``, downloaded first unless offline; (None, why) if none."""
    from huggingface_hub import snapshot_download

    cache = hub_cache_dir()
    try:
        return Path(snapshot_download(repo_id, cache_dir=str(cache), local_files_only=True)), ""
    except Exception:  # not cached (huggingface_hub raises several types)
        pass
    if hub_offline():
        return None, " and HF_HUB_OFFLINE is set"
    if "/" not in repo_id:  # only ``org/name`` ids are fetched; a bare name is looked up in the cache
        return None, ""
    try:
        return Path(snapshot_download(repo_id, cache_dir=str(cache), allow_patterns=HUB_PATTERNS)), ""
    except Exception as exc:
        return None, f"; fetching it from the Hub failed ({type(exc).__name__}: {str(exc).splitlines()[0][:160]})"


def resolve_source(name_or_path: str, field: str = "model", need: tuple[str, ...] = MODEL_FILES) -> ModelSource:
    """Resolve a built-in name, a local directory (holding one of ``need``) or a Hub id."""
    if name_or_path in MODEL_NAMES:
        return ModelSource(name_or_path, BUILTIN)
    what = "checkpoint" if need == MODEL_FILES else "tokenizer"
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        if not _has_any(path, need):
            raise ConfigError(field, f"{name_or_path} has no {' or '.join(need)}: not a transformers {what} directory")
        return ModelSource(name_or_path, LOCAL, str(path.resolve()))
    if path.exists():
        raise ConfigError(field, f"{name_or_path} is a file; expected a transformers {what} directory")
    why = ""
    if not _looks_like_path(name_or_path) and _HUB_ID.fullmatch(name_or_path):
        snapshot, why = _hub_snapshot(name_or_path)
        if snapshot is not None:
            if not _has_any(snapshot, need):
                raise ConfigError(field, f"Hub id {name_or_path!r} (cached in {snapshot}) has no {' or '.join(need)}")
            return ModelSource(name_or_path, HUB, str(snapshot))
    kind = "model" if need == MODEL_FILES else "tokenizer"
    raise ConfigError(field, f"unknown {kind} {name_or_path!r}{did_you_mean(name_or_path, MODEL_NAMES)}: not one "
                             f"of {list(MODEL_NAMES)}, not a local "
                             f"{what} directory, and not a Hub id in the Hugging Face cache ({hub_cache_dir()}){why}")


def resolve_model(name_or_path: str, field: str = "model") -> ModelSource:
    """A model's source (see the module docstring); a clear ConfigError naming ``field`` if none."""
    return resolve_source(name_or_path, field, MODEL_FILES)


def load_model_config(name_or_path: str, field: str = "model"):
    """The model's transformers config, without loading weights."""
    source = resolve_model(name_or_path, field)
    if source.builtin:
        return model_config(source.given)
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(source.path, local_files_only=True)


def meta_model(name_or_path: str, field: str = "model") -> torch.nn.Module:
    """The model's structure on the meta device: no memory, no weights (for checks and plans)."""
    from transformers import AutoModelForCausalLM

    config = load_model_config(name_or_path, field)
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config)


def build_model(name_or_path: str = "tiny-1m", *, seed: int = 0, dtype: torch.dtype = torch.float32,
                field: str = "model") -> torch.nn.Module:
    """A fresh built-in model (weights from ``seed``), or a checkpoint loaded from a local
    directory or the Hugging Face cache."""
    source = resolve_model(name_or_path, field)
    if source.builtin:
        return builtin_model(source.given, seed=seed, dtype=dtype)
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(source.path, local_files_only=True, **dtype_kwarg(dtype))


def dtype_kwarg(dtype: torch.dtype) -> dict:
    """``from_pretrained``'s dtype argument: ``dtype`` in transformers 5, ``torch_dtype`` before."""
    import transformers

    return {"dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype": dtype}
