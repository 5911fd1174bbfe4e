"""EDiT / A-EDiT: local-SGD pretraining with layer-wise, sharded, penalised synchronisation.

Pure library code: the sync triggers, the pseudo-gradient penalty, the outer optimizer, the
shard layout, the layer-wise sync hooks and the per-rank training step. The Ray actors that
run it live in ``raystack.actors.edit``; :func:`pretrain` starts them (through the runtime's
part registry, so this package never imports the actors).
"""
from __future__ import annotations


def pretrain(cfg=None, *, wait: bool = True, progress: bool = True, callbacks=(), address: str | None = None,
             preflight: bool = True):
    """Pretrain with EDiT / A-EDiT: ``cfg`` is an :class:`~raystack.edit.config.EDiTConfig`, a
    dict or a YAML path, validated first. Returns the run's
    :class:`~raystack.runtime.result.Result` (history: one row per segment); with
    ``wait=False`` a :class:`~raystack.runtime.run.Run` to use as a context manager."""
    from raystack.runtime.run import run_part
    return run_part("edit", cfg, wait=wait, progress=progress, callbacks=callbacks, address=address,
                    preflight=preflight)
