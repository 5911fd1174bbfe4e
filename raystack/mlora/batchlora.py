"""BatchLoRA: several LoRA/DoRA adapters trained in one batch over one frozen base.

Each adapter owns a contiguous range of batch rows (a *segment*). A :class:`BatchLoRALinear`
runs the frozen base linear layer once over the whole batch and adds each adapter's low-rank
update to that adapter's rows only. Losses are computed per adapter and summed for a single
backward: since adapter ``i``'s parameters only touch adapter ``i``'s rows, the gradient of
the sum with respect to them is exactly the gradient of adapter ``i``'s own loss.

Dropout is exact too: every (adapter, module) pair draws its masks from its own random
stream (seeded from the adapter's seed and the module's path), so adapter ``i`` sees the
same masks whether it trains alone or batched with others, in one process or split into
pipeline stages.
"""

from __future__ import annotations

import math
import re
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Literal, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from raystack.mlora.frozen import FrozenLinear, dtype_device

AdapterKind = Literal["lora", "dora"]
ADAPTER_TENSORS = ("lora_A", "lora_B", "magnitude", "lora_B_bias")  # names in adapter_state keys
DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")


@dataclass(frozen=True)
class AdapterSpec:
    """What an adapter is: its type, rank, scaling, dropout, targets and seed.

    The optional fields carry what peft can write beyond that (``raystack.mlora.export``
    reads them from ``adapter_config.json``): per-module ranks and alphas (peft's
    ``rank_pattern``/``alpha_pattern``, keys matched against the end of a module path),
    rank-stabilised scaling α/√r (``use_rslora``), a trained bias on B (``lora_bias``), and
    an explicit set of module paths (``modules``; e.g. only some layers) instead of every
    module whose short name is in ``target_modules``.
    """

    name: str
    kind: AdapterKind = "lora"
    r: int = 8
    alpha: float = 16.0
    dropout: float = 0.0
    target_modules: tuple[str, ...] = DEFAULT_TARGETS
    seed: int = 0
    rank_pattern: tuple[tuple[str, int], ...] = ()
    alpha_pattern: tuple[tuple[str, float], ...] = ()
    use_rslora: bool = False
    lora_bias: bool = False
    modules: frozenset[str] | None = None

    @property
    def scaling(self) -> float:
        return self.scaling_for("")

    def targets(self, path: str) -> bool:
        """Whether the module at ``path`` carries this adapter."""
        if self.modules is not None:
            return path in self.modules
        return path.rsplit(".", 1)[-1] in self.target_modules

    def rank_for(self, path: str) -> int:
        return int(_pattern_value(self.rank_pattern, path, self.r))

    def scaling_for(self, path: str) -> float:
        """The update's scale on the module at ``path``: α/r, or α/√r with rsLoRA."""
        r, alpha = self.rank_for(path), float(_pattern_value(self.alpha_pattern, path, self.alpha))
        return alpha / math.sqrt(r) if self.use_rslora else alpha / r


def _pattern_value(patterns: Sequence[tuple[str, float]], path: str, default: float) -> float:
    """peft's rule: the first pattern that matches the end of the module path wins."""
    for pattern, value in patterns:
        if path and re.match(rf"(.*\.)?({pattern})$", path):
            return value
    return default


def layer_dims(module: nn.Module) -> tuple[int, int]:
    """(in features, out features) of a linear layer (``nn.Linear``, a :class:`FrozenLinear`
    or GPT-2's ``Conv1D``)."""
    if isinstance(module, (nn.Linear, FrozenLinear)):
        return module.in_features, module.out_features
    return module.nx, module.nf  # transformers Conv1D: weight [in, out]


def dense_weight(module: nn.Module) -> torch.Tensor:
    """The layer's weight as [out, in], whichever way the layer stores it (a quantised or
    sharded :class:`FrozenLinear` materialises it)."""
    return module.weight if isinstance(module, (nn.Linear, FrozenLinear)) else module.weight.t()


def is_linear(module: nn.Module) -> bool:
    """A layer BatchLoRA can adapt: ``nn.Linear``, ``Conv1D`` (a transposed linear), or a
    :class:`FrozenLinear` (a base layer stored quantised or sharded)."""
    return isinstance(module, (nn.Linear, FrozenLinear)) or type(module).__name__ == "Conv1D"


@dataclass(frozen=True)
class Segment:
    """Rows ``[start, end)`` of the batch belong to adapter ``adapter``; ``length``: how many
    positions they would have alone (None: all), when a shared micro-batch pads them further."""

    adapter: str
    start: int
    end: int
    length: int | None = None


@dataclass
class BatchContext:
    """The segments of the batch currently flowing through the model (shared by its layers)."""

    segments: list[Segment] = field(default_factory=list)


def _stable_seed(*parts: object) -> int:
    return zlib.crc32("/".join(str(p) for p in parts).encode()) & 0x7FFFFFFF


class AdapterWeights(nn.Module):
    """One adapter's trainable tensors on one linear layer: A [r, in], B [out, r], DoRA magnitude,
    and with ``lora_bias`` a bias of B [out]."""

    def __init__(self, spec: AdapterSpec, base: nn.Module, path: str) -> None:
        super().__init__()
        self.spec = spec
        self.r, self.scaling = spec.rank_for(path), spec.scaling_for(path)
        in_f, out_f = layer_dims(base)
        dtype, device = dtype_device(base)  # a quantised base computes (and its adapters train) in its float dtype
        g = torch.Generator().manual_seed(_stable_seed(spec.seed, spec.name, path, "init"))
        a = torch.empty(self.r, in_f, dtype=dtype)
        bound = 1.0 / math.sqrt(in_f)  # kaiming_uniform(a=sqrt(5)) bound, as nn.Linear
        a.uniform_(-bound, bound, generator=g)
        # Initialised on the CPU generator (the same numbers on every device), then moved to the base's device.
        self.lora_A = nn.Parameter(a.to(device))
        self.lora_B = nn.Parameter(torch.zeros(out_f, self.r, dtype=dtype, device=device))
        self.lora_B_bias = (nn.Parameter(torch.zeros(out_f, dtype=dtype, device=device))
                            if spec.lora_bias else None)
        if spec.kind == "dora":
            with torch.no_grad():
                norm = torch.linalg.norm(dense_weight(base).detach() + self.scaling * (self.lora_B @ self.lora_A), dim=1)
            self.magnitude = nn.Parameter(norm.clone())
        else:
            self.magnitude = None
        self.dropout_rng = torch.Generator().manual_seed(_stable_seed(spec.seed, spec.name, path, "dropout"))

    def delta(self, x: torch.Tensor, base: nn.Module, base_out: torch.Tensor, training: bool,
              length: int | None = None) -> torch.Tensor:
        """The adapter's additive update on its rows ``x`` (``base_out`` = base(x) on those rows;
        positions from ``length`` on are padding another adapter's longer rows added)."""
        spec = self.spec
        dropped = training and spec.dropout > 0.0
        if dropped:
            # The mask comes from the adapter's CPU generator, so it is the same on CPU and GPU,
            # and is drawn for the adapter's own positions only: the same masks alone or batched.
            pad = 0 if length is None or x.dim() < 3 else x.shape[-2] - length
            keep = (torch.rand((*x.shape[:-2], x.shape[-2] - pad, x.shape[-1]) if pad else x.shape,
                               generator=self.dropout_rng) >= spec.dropout).to(x.dtype)
            if pad:
                keep = torch.cat([keep, keep.new_ones((*x.shape[:-2], pad, x.shape[-1]))], dim=-2)
            x = x * keep.to(x.device) / (1.0 - spec.dropout)
        lora = F.linear(F.linear(x, self.lora_A), self.lora_B, self.lora_B_bias)
        if self.magnitude is None:
            return lora * self.scaling
        # DoRA: W' = m * (W + sBA) / ||W + sBA||_row, the norm treated as a constant (DoRA sec. 4.3).
        weight = dense_weight(base)
        weight_norm = torch.linalg.norm(weight + self.scaling * (self.lora_B @ self.lora_A).detach(), dim=1)
        scale = (self.magnitude / weight_norm.detach()).view(*([1] * (x.dim() - 1)), -1)
        if dropped:
            plain = F.linear(x, weight)
        else:
            plain = base_out if base.bias is None else base_out - base.bias
        return (scale - 1) * plain + scale * lora * self.scaling

    def rng_state(self) -> torch.Tensor:
        return self.dropout_rng.get_state()

    def set_rng_state(self, state: torch.Tensor) -> None:
        self.dropout_rng.set_state(state)


class BatchLoRALinear(nn.Module):
    """A frozen linear layer (``nn.Linear``, GPT-2's ``Conv1D``, or a quantised/sharded
    :class:`FrozenLinear`) plus any number of adapters, each applied to its own rows."""

    def __init__(self, base: nn.Module, path: str, ctx: BatchContext) -> None:
        super().__init__()
        self.base = base
        self.path = path
        self.ctx = ctx
        self.adapters = nn.ModuleDict()
        for p in base.parameters():
            p.requires_grad_(False)

    def add_adapter(self, spec: AdapterSpec) -> None:
        self.adapters[spec.name] = AdapterWeights(spec, self.base, self.path)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.base(x)
        segs = [s for s in self.ctx.segments if s.adapter in self.adapters]
        if not segs:
            return out
        n = x.shape[0]
        pieces: list[torch.Tensor] = []
        pos = 0
        for s in sorted(segs, key=lambda s: s.start):
            if s.start < pos or s.end > n:
                raise ValueError(f"segments overlap or exceed the batch of {n} rows: {segs}")
            if s.start > pos:
                pieces.append(out.new_zeros((s.start - pos, *out.shape[1:])))
            w = self.adapters[s.adapter]
            pieces.append(w.delta(x[s.start : s.end], self.base, out[s.start : s.end], self.training, s.length))
            pos = s.end
        if pos < n:
            pieces.append(out.new_zeros((n - pos, *out.shape[1:])))
        return out + torch.cat(pieces, dim=0)


def linear_module_names(model: nn.Module) -> set[str]:
    """The short names (``q_proj``...) of the model's linear modules, the possible targets."""
    return {name.rsplit(".", 1)[-1] for name, m in model.named_modules() if is_linear(m)}


class BatchLoRAModel(nn.Module):
    """A causal LM whose target linear layers carry many adapters, trained as one batch.

    Layers of the base that are missing (``None`` or removed by a pipeline stage) are skipped,
    so the same class serves a whole model and one stage's slice of it.
    """

    def __init__(self, base_model: nn.Module) -> None:
        super().__init__()
        self.base_model = base_model
        self.ctx = BatchContext()
        self.specs: dict[str, AdapterSpec] = {}
        for p in base_model.parameters():
            p.requires_grad_(False)

    # -- adapters -------------------------------------------------------------------------
    def _targets(self, spec: AdapterSpec) -> list[tuple[str, nn.Module]]:
        found = []
        for name, module in self.base_model.named_modules():
            if spec.targets(name) and (is_linear(module) or isinstance(module, BatchLoRALinear)):
                found.append((name, module))
        return found

    def add_adapter(self, spec: AdapterSpec) -> None:
        """Attach a fresh adapter (B = 0, so the model's outputs are unchanged)."""
        if spec.name in self.specs:
            raise ValueError(f"adapter {spec.name!r} already exists")
        if not spec.name.isidentifier():
            raise ValueError(f"adapter name {spec.name!r} must be an identifier")
        for name, module in self._targets(spec):
            if not isinstance(module, BatchLoRALinear):
                parent_name, _, child = name.rpartition(".")
                parent = self.base_model.get_submodule(parent_name) if parent_name else self.base_model
                module = BatchLoRALinear(module, name, self.ctx)
                setattr(parent, child, module)
            module.add_adapter(spec)
            module.train(self.training)  # new layers follow the model's train/eval mode
        self.specs[spec.name] = spec

    def remove_adapter(self, name: str) -> None:
        for m in self.lora_layers():
            if name in m.adapters:
                del m.adapters[name]
        self.specs.pop(name, None)

    def lora_layers(self) -> list[BatchLoRALinear]:
        return [m for m in self.base_model.modules() if isinstance(m, BatchLoRALinear)]

    def base_weight(self, path: str) -> torch.Tensor:
        """The frozen weight of the base's module at ``path``, as [out, in] for linear layers."""
        module = self.base_model.get_submodule(path)
        if isinstance(module, BatchLoRALinear):
            module = module.base
        return dense_weight(module) if is_linear(module) else module.weight

    def adapter_weights(self, name: str) -> dict[str, AdapterWeights]:
        """``{module path: weights}`` of one adapter, in model order."""
        return {m.path: m.adapters[name] for m in self.lora_layers() if name in m.adapters}

    def adapter_parameters(self, name: str) -> list[nn.Parameter]:
        return [p for w in self.adapter_weights(name).values() for p in w.parameters()]

    def adapter_state(self, name: str) -> dict[str, torch.Tensor]:
        """Flat tensors ``{"<path>.lora_A": ..., "<path>.lora_B": ..., "<path>.magnitude": ...}``
        (and ``"<path>.lora_B_bias"`` with ``lora_bias``)."""
        out: dict[str, torch.Tensor] = {}
        for path, w in self.adapter_weights(name).items():
            for kind in ADAPTER_TENSORS:
                t = getattr(w, kind)
                if t is not None:
                    out[f"{path}.{kind}"] = t.detach().clone()
        return out

    def load_adapter_state(self, name: str, state: dict[str, torch.Tensor], strict: bool = True) -> None:
        """Load what :meth:`adapter_state` returned (keys of missing modules ignored unless strict)."""
        weights = self.adapter_weights(name)
        seen = set()
        with torch.no_grad():
            for key, value in state.items():
                path, _, tensor = key.rpartition(".")
                if path not in weights:
                    if strict:
                        raise KeyError(f"adapter {name!r} has no module {path!r}")
                    continue
                getattr(weights[path], tensor).copy_(value)
                seen.add(path)
        if strict and seen != set(weights):
            raise KeyError(f"state for adapter {name!r} misses modules {sorted(set(weights) - seen)}")

    def rng_states(self, name: str) -> dict[str, torch.Tensor]:
        return {p: w.rng_state() for p, w in self.adapter_weights(name).items()}

    def set_rng_states(self, name: str, states: dict[str, torch.Tensor]) -> None:
        for p, w in self.adapter_weights(name).items():
            if p in states:
                w.set_rng_state(states[p])

    # -- running --------------------------------------------------------------------------
    @contextmanager
    def segments(self, segments: Sequence[Segment]) -> Iterator[None]:
        """Route rows to adapters for the forward passes run inside the block."""
        old = self.ctx.segments
        self.ctx.segments = list(segments)
        try:
            yield
        finally:
            self.ctx.segments = old

    def forward(self, input_ids: torch.Tensor, segments: Sequence[Segment] = ()) -> torch.Tensor:
        """Logits ``[batch, seq, vocab]`` with each adapter applied to its rows."""
        with self.segments(segments):
            return self.base_model(input_ids=input_ids).logits


def segments_for(sizes: Sequence[tuple[str, int]]) -> list[Segment]:
    """Consecutive segments for ``[(adapter, rows), ...]``."""
    out, pos = [], 0
    for name, n in sizes:
        out.append(Segment(name, pos, pos + n))
        pos += n
    return out


def per_adapter_loss(
    logits: torch.Tensor, labels: torch.Tensor, segments: Sequence[Segment], denominators: dict[str, float] | None = None
) -> dict[str, torch.Tensor]:
    """Next-token cross entropy per adapter over its rows (labels ``-100`` are ignored).

    ``labels`` are already aligned with ``logits`` (label t is the target of position t).
    The loss is a sum over tokens divided by ``denominators[adapter]`` (default: the adapter's
    token count in this batch), so micro-batches of one batch add up to the batch's mean.
    """
    losses = {}
    for s in segments:
        lg = logits[s.start : s.end].reshape(-1, logits.shape[-1])
        lb = labels[s.start : s.end].reshape(-1)
        total = F.cross_entropy(lg, lb, ignore_index=-100, reduction="sum")
        denom = denominators[s.adapter] if denominators else max(int((lb != -100).sum()), 1)
        losses[s.adapter] = total / denom
    return losses
