"""A pipeline stage's memory as the stage measures it: its device's capacity, and a calibration.

:func:`calibrate` runs a few throwaway micro-batches through a :class:`StageModel` with a probe
adapter, twice (the first pass pays one-off costs: thread pools, caches), and returns the bytes
each kept for backward and the peak they reached over the resident footprint: the memory
model's first samples, before any job runs. Nothing here knows about Ray.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import torch

from raystack.mlora.batchlora import AdapterSpec, Segment
from raystack.mlora.probe import MemoryProbe, release_freed_memory, trim_heap
from raystack.mlora.stage import MicroBatch, OptimSpec, StageModel
from raystack.runtime.messages import Message

PROBE_ADAPTER = "memory_probe"  # the throwaway adapter a stage measures its activations with
# passes over the probe shapes that are measured, after one that is not: the allocator makes the
# same micro-batches peak 10-25% apart (above the resident footprint) from pass to pass: each
# measured pass is one observation of the memory model (its expected ratio starts at their mean,
# the admission bound at their largest)
MEASURED_PASSES = 2


@dataclass(frozen=True)
class Calibration(Message):
    """What one micro-batch of each probe shape kept for backward, and the peak they reached."""

    samples: list[tuple[int, int, int]]  # (rows, tokens, bytes saved for backward)
    passes: tuple[tuple[int, int], ...]  # (resident before the probe micro-batches, peak) of each measured pass
    fixed_bytes: int  # after, with the probe adapter dropped


def calibrate(stage: StageModel, probe: MemoryProbe, shapes: Sequence[tuple[int, int]], targets: Sequence[str],
              r: int, seed: int = 0) -> Calibration:
    """Run one micro-batch of each ``(rows, tokens)`` shape through ``stage`` with a probe
    adapter on ``targets`` (random tokens or hidden states): every forward, then the backwards
    in reverse order, so all of them are held at once as a window holds its micro-batches in
    flight (the allocator keeps more per held byte then than with one at a time); in
    ``1 + MEASURED_PASSES`` passes; reports each measured pass's resident and peak bytes."""
    conf = stage.base.config
    stage.add_adapter(AdapterSpec(PROBE_ADAPTER, r=r, alpha=float(r), target_modules=tuple(targets)), OptimSpec())
    g = torch.Generator().manual_seed(seed)
    passes = []
    for attempt in range(1 + MEASURED_PASSES):  # the first pass pays one-off costs: not measured
        trim_heap()  # (no garbage collection: 0.3 s a call, and nothing here is cyclic)
        pass_resident = probe.current()
        probe.reset_peak()
        held = []  # every forward first, then the backwards in reverse: several in flight, as in a window
        for i, (rows, seq) in enumerate(shapes):
            x = (torch.randint(0, conf.vocab_size, (rows, seq), generator=g) if stage.first
                 else torch.randn(rows, seq, conf.hidden_size, generator=g))
            labels = torch.randint(0, conf.vocab_size, (rows, seq), generator=g) if stage.last else None
            mb = MicroBatch(("calibrate", i), [Segment(PROBE_ADAPTER, 0, rows)], {PROBE_ADAPTER: float(rows * seq)})
            held.append((mb, stage.forward(mb, x, labels)))
        for mb, out in reversed(held):
            stage.backward(mb, None if stage.last else torch.randn(out.shape, generator=g))
        del held
        if attempt:
            passes.append((pass_resident, probe.peak()))
    samples, stage.activation_bytes = stage.activation_bytes[-len(shapes):], []
    stage.remove_adapter(PROBE_ADAPTER)
    release_freed_memory()
    return Calibration(samples, tuple(passes), probe.current())


def device_capacity(device: torch.device) -> int:
    """Bytes of memory of ``device``: the GPU's, or the host's RAM."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    import psutil

    return int(psutil.virtual_memory().total)


def default_budgets(capacities: Sequence[int], nodes: Sequence[str], gpu_share: float | None = None) -> list[float]:
    """Each stage's budget when the config sets none: its GPU share of the GPU's memory, or on
    the CPU an equal share of its node's memory among the stages on that node."""
    if gpu_share is not None:
        return [c * gpu_share for c in capacities]
    per_node = Counter(nodes)
    return [c / per_node[n] for c, n in zip(capacities, nodes)]
