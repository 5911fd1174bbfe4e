"""One pipeline stage's computation: a slice of the base model with BatchLoRA adapters.

A :class:`StageModel` owns pipeline units ``[start, end)`` of a Llama-family causal LM (unit 0
is the embedding, units 1..n the decoder layers, unit n+1 the final norm and head). It runs
micro-batches forward (keeping what backward needs), backward (given the gradient of its
output), and steps each adapter's own optimizer once a step's gradients are all back. With
all units it is the single-process BatchLoRA trainer; the pipeline actors wrap one each.
Nothing here knows about Ray.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch
from torch import nn

from raystack.mlora.batchlora import AdapterSpec, BatchLoRAModel, Segment, per_adapter_loss
from raystack.mlora.probe import SavedTensorMeter, release_freed_memory


@dataclass(frozen=True)
class OptimSpec:
    """An adapter's optimizer and learning-rate schedule."""

    optimizer: str = "adamw"
    lr: float = 3e-3
    weight_decay: float = 0.0
    schedule: str = "constant"
    warmup_steps: int = 0
    total_steps: int = 1


def lr_factor(spec: OptimSpec, step: int) -> float:
    """Multiplier of the base learning rate at (0-based) ``step``."""
    if spec.warmup_steps and step < spec.warmup_steps:
        return (step + 1) / spec.warmup_steps
    span = max(spec.total_steps - spec.warmup_steps, 1)
    progress = min(max(step - spec.warmup_steps, 0) / span, 1.0)
    if spec.schedule == "linear":
        return 1.0 - progress
    if spec.schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    return 1.0


def make_optimizer(params: list[nn.Parameter], spec: OptimSpec) -> torch.optim.Optimizer:
    if spec.optimizer == "sgd":
        return torch.optim.SGD(params, lr=spec.lr, momentum=0.9, weight_decay=spec.weight_decay)
    return torch.optim.AdamW(params, lr=spec.lr, weight_decay=spec.weight_decay)


@dataclass
class MicroBatch:
    """What a stage needs to know about a micro-batch besides its tensors."""

    key: tuple  # unique id, e.g. (lane, step, micro)
    segments: list[Segment]
    denominators: dict[str, float]  # per adapter: loss tokens over the whole step's batch
    step_adapters: tuple[str, ...] = ()  # adapters whose step ends with this micro-batch


class StageModel:
    """Units ``[start, end)`` of ``base`` plus adapters; forward/backward/step of micro-batches."""

    def __init__(self, base: nn.Module, start: int, end: int) -> None:
        inner = base.model
        n_layers = len(inner.layers)
        self.n_units = n_layers + 2
        if not 0 <= start < end <= self.n_units:
            raise ValueError(f"bad unit range [{start}, {end}) for {self.n_units} units")
        self.start, self.end = start, end
        self.first, self.last = start == 0, end == self.n_units
        # drop what this stage does not own, so a stage holds only its slice of the base
        self.layer_ids = [i for i in range(n_layers) if start <= i + 1 < end]
        for i in range(n_layers):
            if i not in self.layer_ids:
                inner.layers[i] = nn.Identity()
        if not self.first:
            inner.embed_tokens = None
        if not self.last:
            inner.norm = None
            base.lm_head = None
        self.base = base
        self.device = next(base.parameters()).device
        release_freed_memory()  # the dropped layers' memory back to the OS
        self.model = BatchLoRAModel(base).train()
        self.optims: dict[str, torch.optim.Optimizer] = {}
        self.optim_specs: dict[str, OptimSpec] = {}
        self.steps: dict[str, int] = {}
        self.saved: dict[tuple, tuple[torch.Tensor | None, torch.Tensor]] = {}
        self.activation_bytes: list[tuple[int, int, int]] = []  # (rows, seq, bytes saved for backward)

    # -- adapters -------------------------------------------------------------------------
    def add_adapter(self, spec: AdapterSpec, optim: OptimSpec) -> None:
        self.model.add_adapter(spec)
        params = self.model.adapter_parameters(spec.name)
        self.optims[spec.name] = make_optimizer(params, optim) if params else None
        self.optim_specs[spec.name] = optim
        self.steps[spec.name] = 0

    def remove_adapter(self, name: str) -> None:
        self.model.remove_adapter(name)
        for d in (self.optims, self.optim_specs, self.steps):
            d.pop(name, None)

    def adapter_state(self, name: str) -> dict[str, torch.Tensor]:
        return self.model.adapter_state(name)

    def checkpoint(self, name: str) -> dict[str, Any]:
        """This stage's part of an adapter: weights, optimizer state, dropout streams, step."""
        opt = self.optims.get(name)
        # deep copy: a state_dict holds references to tensors the optimizer keeps updating
        return {"weights": self.model.adapter_state(name), "optim": copy.deepcopy(opt.state_dict()) if opt else None,
                "rng": self.model.rng_states(name), "step": self.steps[name]}

    def restore(self, name: str, ckpt: dict[str, Any]) -> None:
        self.model.load_adapter_state(name, ckpt["weights"], strict=False)
        if self.optims.get(name) is not None and ckpt.get("optim") is not None:
            self.optims[name].load_state_dict(ckpt["optim"])
        self.model.set_rng_states(name, ckpt["rng"])
        self.steps[name] = int(ckpt["step"])

    # -- compute --------------------------------------------------------------------------
    def _run(self, x: torch.Tensor) -> torch.Tensor:
        from transformers.masking_utils import create_causal_mask

        inner = self.base.model
        h = inner.embed_tokens(x) if self.first else x
        pos = torch.arange(h.shape[1], device=h.device).unsqueeze(0)
        if self.layer_ids:
            mask = create_causal_mask(**_mask_kwargs(create_causal_mask, self.base.config, h, pos))
            pe = inner.rotary_emb(h, position_ids=pos)
            for i in self.layer_ids:
                h = inner.layers[i](h, attention_mask=mask, position_embeddings=pe, position_ids=pos)
                if isinstance(h, tuple):  # transformers 4.x layers return (hidden_states, ...)
                    h = h[0]
        if self.last:
            h = self.base.lm_head(inner.norm(h))
        return h

    def forward(self, mb: MicroBatch, x: torch.Tensor, labels: torch.Tensor | None = None) -> Any:
        """Run the micro-batch; returns the output activation (detached), or on the last stage
        the per-adapter losses ``{adapter: float}``."""
        x = x.to(self.device)  # inputs arrive from the CPU (data, or the previous stage)
        if labels is not None:
            labels = labels.to(self.device)
        inp = x if self.first else x.detach().requires_grad_(True)
        with SavedTensorMeter(self.model) as saved, self.model.segments(mb.segments):
            out = self._run(inp)
            if self.last:
                losses = per_adapter_loss(out, labels, mb.segments, mb.denominators)
                out = sum(losses.values())
        self.activation_bytes.append((int(x.shape[0]), int(x.shape[1]), saved.bytes))
        self.saved[mb.key] = (None if self.first else inp, out)
        if self.last:
            return {k: v.item() for k, v in losses.items()}
        return out.detach()

    def backward(self, mb: MicroBatch, grad: torch.Tensor | None = None) -> torch.Tensor | None:
        """Backward of a forwarded micro-batch; returns the gradient of this stage's input
        (None on the first stage). After the last micro-batch of a step, steps its adapters."""
        inp, out = self.saved.pop(mb.key)
        if out.requires_grad:
            if self.last:
                out.backward()
            else:
                out.backward(grad.to(out.device))
        g = None if inp is None else (inp.grad if inp.grad is not None else torch.zeros_like(inp))
        if mb.step_adapters:
            self.step_adapters(mb.step_adapters)
        return g

    def step_adapters(self, names: Sequence[str]) -> None:
        for name in names:
            opt = self.optims.get(name)
            if opt is not None:
                f = lr_factor(self.optim_specs[name], self.steps[name])
                for group in opt.param_groups:
                    group["lr"] = self.optim_specs[name].lr * f
                opt.step()
                opt.zero_grad(set_to_none=True)
            self.steps[name] += 1

    def train_step(self, micro_batches: Sequence[tuple[MicroBatch, torch.Tensor, torch.Tensor]]) -> dict[str, float]:
        """Single-process training step (all units): forward+backward each micro-batch."""
        if not (self.first and self.last):
            raise RuntimeError("train_step needs a stage holding the whole model")
        total: dict[str, float] = {}
        for mb, ids, labels in micro_batches:
            for k, v in self.forward(mb, ids, labels).items():
                total[k] = total.get(k, 0.0) + v
            self.backward(mb)
        return total


@functools.lru_cache(maxsize=None)
def _params_of(fn: Callable) -> frozenset[str]:
    return frozenset(inspect.signature(fn).parameters)


def _mask_kwargs(create_causal_mask: Callable, config: Any, h: torch.Tensor, pos: torch.Tensor) -> dict:
    """Arguments of transformers' ``create_causal_mask`` for a no-cache forward, whichever
    release is installed (4.5x names ``input_embeds``/``past_key_values``/``cache_position``,
    5.x ``inputs_embeds``/``cache``)."""
    params = _params_of(create_causal_mask)
    kw: dict[str, Any] = {"config": config, "attention_mask": None, "position_ids": pos}
    kw["inputs_embeds" if "inputs_embeds" in params else "input_embeds"] = h
    for name in ("cache", "past_key_values"):
        if name in params:
            kw[name] = None
    if "cache_position" in params:
        kw["cache_position"] = torch.arange(h.shape[1], device=h.device)
    return kw


def load_stage_base(path: str, start: int, end: int) -> nn.Module:
    """Load only units ``[start, end)`` of a local safetensors checkpoint (the rest stays on
    the meta device and is dropped by :class:`StageModel`), so a stage never holds the
    whole base in memory. Weights of the model's dtype stay memory-mapped from the file
    (copy-on-write), like ``from_pretrained``'s."""
    from pathlib import Path

    from safetensors import safe_open
    from transformers import AutoConfig, AutoModelForCausalLM

    files = sorted(Path(path).glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{path}: no .safetensors files to load a stage from")
    config = AutoConfig.from_pretrained(path)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    inner, n_layers = model.model, config.num_hidden_layers
    for i in range(n_layers):
        if not start <= i + 1 < end:
            inner.layers[i] = nn.Identity()
    first, last = start == 0, end == n_layers + 2
    if not first:
        inner.embed_tokens = None
    if not last:
        inner.norm, model.lm_head = None, None
    model.to_empty(device="cpu")
    inner.rotary_emb = type(inner.rotary_emb)(config=config)  # non-persistent buffers: recompute
    wanted = dict(model.named_parameters(remove_duplicate=False))
    loaded: set[str] = set()
    for f in files:
        with safe_open(str(f), framework="pt") as sf:
            for key in sf.keys():
                targets = [key] if key in wanted else []
                if key == "model.embed_tokens.weight" and "lm_head.weight" in wanted and config.tie_word_embeddings:
                    targets.append("lm_head.weight")
                for name in targets:
                    t, param = sf.get_tensor(key), wanted[name]
                    with torch.no_grad():
                        if t.dtype == param.dtype and t.shape == param.shape:
                            # keep the tensor safetensors maps from the file, as from_pretrained
                            # does: no copy, and the page cache maps these frozen weights in
                            # large pages; a stage's matmuls ran 10-25% slower on an
                            # anonymous-memory copy on our CPU machine
                            param.data = t
                        else:
                            param.copy_(t)  # another dtype: convert
                    loaded.add(name)
    missing = set(wanted) - loaded
    if missing:
        raise KeyError(f"{path}: checkpoint lacks {sorted(missing)[:3]}")
    return model.eval()
