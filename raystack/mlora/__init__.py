"""mLoRA: many LoRA/DoRA adapters fine-tuned at once on one frozen base, pipelined.

:func:`finetune` runs the Ray pipeline (``raystack.actors.mlora``) through the runtime's part
registry, so this package never imports the actors."""
from __future__ import annotations


def finetune(cfg=None, *, wait: bool = True, progress: bool = True, callbacks=(), address: str | None = None,
             preflight: bool = True):
    """Fine-tune every task's adapter: ``cfg`` is an :class:`~raystack.mlora.config.MLoRAConfig`,
    a dict or a YAML path, validated first. Returns the run's
    :class:`~raystack.runtime.result.Result` (history: one row per window; artifacts: each
    adapter's PEFT directory); with ``wait=False`` a :class:`~raystack.runtime.run.Run`."""
    from raystack.runtime.run import run_part
    return run_part("mlora", cfg, wait=wait, progress=progress, callbacks=callbacks, address=address,
                    preflight=preflight)
