"""Layer-wise sync during the forward pass, via forward pre-hooks.

On a sync step each block is synced right before its own forward, and the next block's
collective is launched while the current block computes. The class knows nothing of the
math: it calls ``launch(b)`` (start block b's async collective) and ``finish(b)`` (wait for it,
apply the outer step, write θ_sync into the block) on a syncer object.

With a delay of τ forwards (the overlapped outer update), the first τ forwards after the sync
only call ``progress()`` (let the syncer start what is ready, never blocking); the blocks are
finished in the pre-hooks of forward τ + 1.

An armed sync may cover only some blocks (one fragment, ``sync.fragments``); the others' hooks
pass through.
"""
from __future__ import annotations

from typing import Protocol

from torch import nn


class BlockSyncer(Protocol):
    """What :class:`LayerwiseSync` drives."""

    def launch(self, block: int) -> None: ...

    def finish(self, block: int) -> None: ...

    def progress(self) -> None: ...


class LayerwiseSync:
    """Installs one forward pre-hook per block module; armed by :meth:`arm` for one forward."""

    def __init__(self, modules: list[nn.Module], syncer: BlockSyncer, prefetch: bool = True) -> None:
        self.modules = modules
        self.syncer = syncer
        self.prefetch = prefetch
        self._launched: set[int] = set()
        self._finished: set[int] = set()
        self._armed: list[int] = []              # the blocks this sync covers, in forward order
        self.active = False
        self.order: list[tuple[str, int]] = []   # ("launch"|"finish", block): for tests/tracing
        self._delay = 0                          # forwards to let pass before finishing
        self._forwards = 0                       # forwards started since arm()
        # prepend: run before other pre-hooks (FSDP2 gathers a block's shards in its own)
        self._handles = [m.register_forward_pre_hook(self._hook_for(i), prepend=True)
                         for i, m in enumerate(modules)]

    def arm(self, launch_first: bool = True, delay_forwards: int = 0, blocks: list[int] | None = None) -> None:
        """Sync every block (or ``blocks``) during the forward ``delay_forwards`` + 1 from now
        (with no delay, optionally start the first block's collective now)."""
        self._launched.clear()
        self._finished.clear()
        self.order.clear()
        self._armed = sorted(blocks) if blocks is not None else list(range(len(self.modules)))
        self.active = True
        self._delay, self._forwards = delay_forwards, 0
        if launch_first and delay_forwards == 0:
            self._launch(self._armed[0])

    def flush(self) -> None:
        """Finish every block not yet synced (a sync without a forward: end of run, checkpoint)."""
        if not self.active:
            return
        for b in self._armed:
            self._complete(b)
        self.active = False

    def remove(self) -> None:
        """Uninstall the hooks."""
        for h in self._handles:
            h.remove()
        self._handles = []

    def _launch(self, b: int | None) -> None:
        if b is not None and b not in self._launched:
            self._launched.add(b)
            self.order.append(("launch", b))
            self.syncer.launch(b)

    def _complete(self, b: int) -> None:
        if b in self._finished:
            return
        self._launch(b)
        if self.prefetch:
            self._launch(next((a for a in self._armed if a > b), None))
        self._finished.add(b)
        self.order.append(("finish", b))
        self.syncer.finish(b)

    def _hook_for(self, b: int):
        def hook(module, args):
            if not self.active:
                return None
            if b == 0:
                self._forwards += 1
            if self._forwards <= self._delay:    # an overlapped update: not due in this forward
                self.syncer.progress()
                return None
            # Blocks run in order; a block whose hook did not fire (unused module) is done here.
            for earlier in self._armed:
                if earlier > b:
                    break
                self._complete(earlier)
            if len(self._finished) == len(self._armed):
                self.active = False
            return None
        return hook
