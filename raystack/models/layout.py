"""Where a causal LM keeps its parts, so raystack can split it into units and run a slice.

A decoder-only causal LM is a sequence of *units*: the embeddings (unit 0), each decoder layer
(units 1..n) and the final norm with the LM head (unit n + 1). EDiT syncs a model unit by
unit; an mLoRA pipeline stage owns a contiguous range of units and runs only those. Two
layouts cover the supported families:

- Llama's (Llama, Qwen2, Mistral): ``model.model`` with ``embed_tokens``, ``layers``,
  ``norm`` and rotary positions; Qwen2's sliding-window layers and Mistral's sliding window
  get their own masks, as in the models' own forward;
- GPT-2's: ``model.transformer`` with ``wte`` + ``wpe`` (learned positions), ``h``, ``ln_f``.

Running a slice reproduces the model's own forward (tested against it for every family).
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import torch
from torch import nn

FULL, SLIDING = "full_attention", "sliding_attention"


class DecoderLayout:
    """The parts of one family of causal LMs; subclasses say where each part lives."""

    family = ""
    model_types: tuple[str, ...] = ()
    inner_name = ""
    embed_names: tuple[str, ...] = ()
    layers_name = ""
    norm_name = ""
    head_name = "lm_head"

    # -- structure ------------------------------------------------------------------------
    def inner(self, model: nn.Module) -> nn.Module:
        """The decoder inside the causal LM (``model.model`` / ``model.transformer``)."""
        return getattr(model, self.inner_name)

    def layers(self, model: nn.Module) -> nn.ModuleList:
        return getattr(self.inner(model), self.layers_name)

    def num_units(self, model: nn.Module) -> int:
        return len(self.layers(model)) + 2

    def embedding_weight_name(self) -> str:
        """The checkpoint key of the token embeddings (an LM head tied to them reads it)."""
        return f"{self.inner_name}.{self.embed_names[0]}.weight"

    def units(self, model: nn.Module) -> list[tuple[str, list[nn.Module]]]:
        """``[(name, modules)]`` in order: ``embed``, ``layer.0`` ... ``layer.{n-1}``, ``head``."""
        inner = self.inner(model)
        out: list[tuple[str, list[nn.Module]]] = [("embed", [getattr(inner, n) for n in self.embed_names])]
        out += [(f"layer.{i}", [layer]) for i, layer in enumerate(self.layers(model))]
        out.append(("head", [getattr(inner, self.norm_name), getattr(model, self.head_name)]))
        return out

    def keep_units(self, model: nn.Module, start: int, end: int) -> None:
        """Drop every unit outside ``[start, end)`` (layers become ``nn.Identity``, the
        embeddings, norm and head ``None``), so the model holds only its slice."""
        inner, layers = self.inner(model), self.layers(model)
        for i in range(len(layers)):
            if not start <= i + 1 < end:
                layers[i] = nn.Identity()
        if start > 0:
            for name in self.embed_names:
                setattr(inner, name, None)
        if end < len(layers) + 2:
            setattr(inner, self.norm_name, None)
            setattr(model, self.head_name, None)

    def rebuild_buffers(self, model: nn.Module) -> None:
        """Recompute non-persistent buffers after ``to_empty`` (none unless a family has some)."""

    # -- running a slice ------------------------------------------------------------------
    def embed(self, model: nn.Module, ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def layer_inputs(self, model: nn.Module, h: torch.Tensor, pos: torch.Tensor) -> Callable[[int], dict]:
        """A function of the layer index giving that layer's keyword arguments (masks, positions)."""
        raise NotImplementedError

    def head(self, model: nn.Module, h: torch.Tensor) -> torch.Tensor:
        return getattr(model, self.head_name)(getattr(self.inner(model), self.norm_name)(h))

    def run_layer(self, layer: nn.Module, h: torch.Tensor, kwargs: dict) -> torch.Tensor:
        out = layer(h, **kwargs)
        return out[0] if isinstance(out, tuple) else out  # transformers 4.x layers return tuples


class LlamaLayout(DecoderLayout):
    family = "llama"
    model_types = ("llama", "qwen2", "mistral")
    inner_name, embed_names, layers_name, norm_name = "model", ("embed_tokens",), "layers", "norm"

    def rebuild_buffers(self, model: nn.Module) -> None:
        inner = self.inner(model)
        inner.rotary_emb = type(inner.rotary_emb)(config=model.config)

    def embed(self, model: nn.Module, ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return self.inner(model).embed_tokens(ids)

    def layer_inputs(self, model: nn.Module, h: torch.Tensor, pos: torch.Tensor) -> Callable[[int], dict]:
        config = model.config
        kinds = layer_attention_kinds(config)
        masks = {kind: _causal_mask(config, h, pos, kind) for kind in set(kinds)}
        pe = self.inner(model).rotary_emb(h, position_ids=pos)
        return lambda i: {"attention_mask": masks[kinds[i]], "position_embeddings": pe, "position_ids": pos}


class GPT2Layout(DecoderLayout):
    family = "gpt2"
    model_types = ("gpt2",)
    inner_name, embed_names, layers_name, norm_name = "transformer", ("wte", "wpe"), "h", "ln_f"

    def embed(self, model: nn.Module, ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        inner = self.inner(model)
        return inner.drop(inner.wte(ids) + inner.wpe(pos))

    def layer_inputs(self, model: nn.Module, h: torch.Tensor, pos: torch.Tensor) -> Callable[[int], dict]:
        mask = _causal_mask(model.config, h, pos, FULL)
        return lambda i: {"attention_mask": mask}


LAYOUTS: tuple[DecoderLayout, ...] = (LlamaLayout(), GPT2Layout())
SUPPORTED_MODEL_TYPES = tuple(t for lay in LAYOUTS for t in lay.model_types)


def layout_of(model_or_config: Any, strict: bool = True) -> DecoderLayout:
    """The layout of a model (or its config) by ``model_type``. With ``strict=False`` an
    unknown type whose modules sit where Llama's do is taken as Llama-like (enough to find
    its units; running a slice needs a known type)."""
    config = getattr(model_or_config, "config", model_or_config)
    model_type = getattr(config, "model_type", None)
    for layout in LAYOUTS:
        if model_type in layout.model_types:
            return layout
    if not strict and isinstance(model_or_config, nn.Module):
        inner = getattr(model_or_config, "model", None)
        if all(hasattr(inner, n) for n in ("embed_tokens", "layers", "norm")) and hasattr(model_or_config, "lm_head"):
            return LAYOUTS[0]
    raise ValueError(f"model_type {model_type!r} is not supported: raystack splits {list(SUPPORTED_MODEL_TYPES)} "
                     "causal LMs into units")


def layer_attention_kinds(config: Any) -> list[str]:
    """Per decoder layer: full or sliding-window attention, as the model's own forward decides."""
    n = config.num_hidden_layers
    if getattr(config, "layer_types", None):
        return list(config.layer_types)[:n]
    if getattr(config, "model_type", None) == "mistral" and getattr(config, "sliding_window", None):
        return [SLIDING] * n
    return [FULL] * n


@functools.lru_cache(maxsize=None)
def _params_of(fn: Callable) -> frozenset[str]:
    return frozenset(inspect.signature(fn).parameters)


def _causal_mask(config: Any, h: torch.Tensor, pos: torch.Tensor, kind: str) -> Any:
    from transformers import masking_utils

    fn = masking_utils.create_sliding_window_causal_mask if kind == SLIDING else masking_utils.create_causal_mask
    return fn(**mask_kwargs(fn, config, h, pos))


def mask_kwargs(create_mask: Callable, config: Any, h: torch.Tensor, pos: torch.Tensor) -> dict:
    """Arguments of transformers' ``create_causal_mask`` for a no-cache forward, whichever
    release is installed (4.5x names ``input_embeds``/``past_key_values``/``cache_position``,
    5.x ``inputs_embeds``/``cache``). ``pos`` of shape [B, L] whose positions restart marks
    packed sequences: the mask then keeps each sequence to itself."""
    params = _params_of(create_mask)
    kw: dict[str, Any] = {"config": config, "attention_mask": None, "position_ids": pos}
    kw["inputs_embeds" if "inputs_embeds" in params else "input_embeds"] = h
    for name in ("cache", "past_key_values"):
        if name in params:
            kw[name] = None
    if "cache_position" in params:
        kw["cache_position"] = torch.arange(h.shape[1], device=h.device)
    return kw
