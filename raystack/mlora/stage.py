"""One pipeline stage's computation: a slice of the base model with BatchLoRA adapters.

A :class:`StageModel` owns pipeline units ``[start, end)`` of a causal LM (unit 0 is the
embedding, units 1..n the decoder layers, unit n+1 the final norm and head; the families and
where they keep these parts are in :mod:`raystack.models.layout`). It runs
micro-batches forward (keeping what backward needs), backward (given the gradient of its
output), and steps each adapter's own optimizer once a step's gradients are all back. With
all units it is the single-process BatchLoRA trainer; the pipeline actors wrap one each.
Nothing here knows about Ray.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch import nn

from raystack.mlora.batchlora import AdapterSpec, BatchLoRAModel, Segment, per_adapter_loss
from raystack.mlora.probe import SavedTensorMeter, release_freed_memory
from raystack.models.layout import layout_of


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
    # [B, L] position of each token in its own example, when rows pack several examples
    # (positions restart at 0: attention stays within each example); None: 0..L-1
    positions: torch.Tensor | None = None


def _without_dropout(base: nn.Module) -> None:
    """Switch off the frozen base's own dropout (GPT-2 has some; Llama-like configs may set an
    attention dropout), so every split of the base computes the same numbers in training; the
    adapters keep their own seeded dropout."""
    for m in base.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if isinstance(getattr(m, "attention_dropout", None), float):
            m.attention_dropout = 0.0


class StageModel:
    """Units ``[start, end)`` of ``base`` plus adapters; forward/backward/step of micro-batches."""

    def __init__(self, base: nn.Module, start: int, end: int) -> None:
        self.layout = layout_of(base)
        n_layers = len(self.layout.layers(base))
        self.n_units = n_layers + 2
        if not 0 <= start < end <= self.n_units:
            raise ValueError(f"bad unit range [{start}, {end}) for {self.n_units} units")
        self.start, self.end = start, end
        self.first, self.last = start == 0, end == self.n_units
        # drop what this stage does not own, so a stage holds only its slice of the base
        self.layer_ids = [i for i in range(n_layers) if start <= i + 1 < end]
        self.layout.keep_units(base, start, end)
        _without_dropout(base)
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
    def _run(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        lay, base = self.layout, self.base
        pos = positions if positions is not None else torch.arange(x.shape[1], device=x.device).unsqueeze(0)
        h = lay.embed(base, x, pos) if self.first else x
        if self.layer_ids:
            inputs = lay.layer_inputs(base, h, pos)
            layers = lay.layers(base)
            for i in self.layer_ids:
                h = lay.run_layer(layers[i], h, inputs(i))
        if self.last:
            h = lay.head(base, h)
        return h

    def forward(self, mb: MicroBatch, x: torch.Tensor, labels: torch.Tensor | None = None) -> Any:
        """Run the micro-batch; returns the output activation (detached), or on the last stage
        the per-adapter losses ``{adapter: float}``."""
        x = x.to(self.device)  # inputs arrive from the CPU (data, or the previous stage)
        if labels is not None:
            labels = labels.to(self.device)
        inp = x if self.first else x.detach().requires_grad_(True)
        positions = None if mb.positions is None else mb.positions.to(self.device)
        with SavedTensorMeter(self.model) as saved, self.model.segments(mb.segments):
            out = self._run(inp, positions)
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


def load_stage(base: str, seed: int, start: int, end: int) -> nn.Module:
    """The frozen base of a stage owning units ``[start, end)``: only those tensors when the
    base is a safetensors checkpoint (a local directory or a Hub snapshot), else the whole
    model (a built-in one, built from ``seed``), which :class:`StageModel` then slices."""
    from pathlib import Path

    from raystack.models import build_model, resolve_model

    source = resolve_model(base, field="base")
    if not source.builtin and any(Path(source.path).glob("*.safetensors")):
        return load_stage_base(source.path, start, end)
    model = build_model(base, seed=seed, field="base")
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def load_stage_base(path: str, start: int, end: int) -> nn.Module:
    """Load only units ``[start, end)`` of a local safetensors checkpoint (the rest stays on
    the meta device and is dropped by :class:`StageModel`), so a stage never holds the
    whole base in memory. Weights of the model's dtype stay memory-mapped from the file
    (copy-on-write), like ``from_pretrained``'s. Any family of :mod:`raystack.models.layout`."""
    from pathlib import Path

    from safetensors import safe_open
    from transformers import AutoConfig, AutoModelForCausalLM

    files = sorted(Path(path).glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{path}: no .safetensors files to load a stage from")
    config = AutoConfig.from_pretrained(path)
    layout = layout_of(config)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    every_name = {n for n, _ in model.named_parameters(remove_duplicate=False)}
    layout.keep_units(model, start, end)
    model.to_empty(device="cpu")
    layout.rebuild_buffers(model)  # non-persistent buffers (rotary frequencies): recompute
    wanted = dict(model.named_parameters(remove_duplicate=False))
    tied_head = getattr(config, "tie_word_embeddings", False) and f"{layout.head_name}.weight" in wanted
    prefix = getattr(model, "base_model_prefix", "")
    loaded: set[str] = set()
    for f in files:
        with safe_open(str(f), framework="pt") as sf:
            for key in sf.keys():
                # older GPT-2 files name their keys without the model's ``transformer.`` prefix
                name = f"{prefix}.{key}" if key not in every_name and f"{prefix}.{key}" in every_name else key
                targets = [name] if name in wanted else []
                if name == layout.embedding_weight_name() and tied_head:
                    targets.append(f"{layout.head_name}.weight")
                for target in targets:
                    t, param = sf.get_tensor(key), wanted[target]
                    with torch.no_grad():
                        if t.dtype == param.dtype and t.shape == param.shape:
                            # keep the tensor safetensors maps from the file, as from_pretrained
                            # does: no copy, and the page cache maps these frozen weights in
                            # large pages; a stage's matmuls ran 10-25% slower on an
                            # anonymous-memory copy on our CPU machine
                            param.data = t
                        else:
                            param.copy_(t)  # another dtype: convert
                    loaded.add(target)
    missing = set(wanted) - loaded
    if missing:
        raise KeyError(f"{path}: checkpoint lacks {sorted(missing)[:3]}")
    return model.eval()
