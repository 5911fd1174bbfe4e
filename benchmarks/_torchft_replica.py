"""One torchft 0.2.0 replica group as its own process, for the torchft arm of the reliability
benchmark (benchmarks/reliability.py), which starts it, kills it with SIGKILL and starts it again:

    python benchmarks/_torchft_replica.py SPEC.json

SPEC: ``cfg`` (an EDiT config dict: model, data, steps, sync.h, inner and outer optimizer),
``replica`` (0 or 1), ``replicas``, ``lighthouse`` (address), ``out`` (result JSON path),
``timeout_s``. The replica trains DiLoCo (one fragment, ``sync.h`` inner steps per sync) on a
Manager of world size 1 (its own TCPStore and gloo ProcessGroup) until the Manager has committed
``steps / sync.h`` syncs. What the Manager heals a newcomer with, from a live peer, over
torchft's own HTTP checkpoint transport: the model, the inner AdamW state, DiLoCo's last synced
parameters and outer Nesterov momentum, and the committed-sync count; the data position is
not in torchft's state, so a healed replica skips its stream to the healed step itself.

On stdout, one JSON line per inner step: ``{"step", "syncs", "t"}`` (the driver watches these
to kill at a sync); at the end the result JSON: per-step losses and times, when the heal was
applied, the first step after it, and the validation loss of the final (synced) parameters.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from _torchft_common import torchft_inner_optimizer, torchft_manager, torchft_train
from raystack.config import load_config
from raystack.data import BatchStream
from raystack.data.pretrain import DataSources, open_token_corpus
from raystack.edit.config import EDiTConfig
from raystack.models import build_model, lm_loss

VAL_SEED = 12345          # the validation batches every EDiT arm evaluates on (EDiTWorker's)


def main(spec: dict) -> None:
    torch.set_num_threads(1)
    cfg = load_config(EDiTConfig, spec["cfg"])
    replica, d = spec["replica"], cfg.data
    # the EDiT ranks' corpus (their load_corpus), opened without importing Ray: a torchft
    # replica is a plain process and pays no import it does not need
    corpus = open_token_corpus(DataSources(tuple(d.paths), d.text_field, d.max_bytes, d.val_fraction),
                               cfg.model, cfg.tokenizer, d.cache_dir)
    model = build_model(cfg.model, seed=cfg.run.seed)
    manager, _store = torchft_manager(f"reliability_{replica}", spec["lighthouse"], model,
                                      spec["replicas"], timeout_s=spec["timeout_s"])
    inner = torchft_inner_optimizer(cfg, model)
    healed: dict = {}

    def load_inner(state: dict) -> None:          # applied with the rest of a heal
        inner.load_state_dict(state)
        healed["t"] = time.time()
    manager.register_state_dict_fn("inner_optimizer", load_inner, inner.state_dict)
    # a replica group holds the replica's whole batch (EDiT's S ranks split it)
    stream = BatchStream(corpus.train, d.batch_size * cfg.shards, d.seq_len, seed=cfg.run.seed,
                         rank=replica, world_size=spec["replicas"])
    marks: dict = {}

    def on_step(step: int, _diloco) -> None:
        syncs = manager.current_step()
        if "t" in healed and "heal_step" not in marks:
            marks["heal_step"] = step                  # the step whose sync healed this replica
            stream.skip(max(0, syncs * cfg.sync.h - (step + 1)))
        print(json.dumps({"step": step, "syncs": syncs, "t": time.time()}), flush=True)

    out = torchft_train(cfg, model, [model], manager, stream, on_step=on_step, inner=inner,
                        syncs=cfg.steps // cfg.sync.h)
    with torch.no_grad():
        val = BatchStream(corpus.val, d.batch_size, d.seq_len, seed=VAL_SEED)
        val_loss = sum(float(lm_loss(model, val.next_batch())) for _ in range(d.eval_batches)) / d.eval_batches
    heal_step = marks.get("heal_step")
    first = heal_step + 1 if heal_step is not None and heal_step + 1 < len(out["times"]) else None
    Path(spec["out"]).write_text(json.dumps({
        "losses": out["losses"], "times": out["times"], "steps": len(out["losses"]),
        "syncs": manager.current_step(), "healed_t": healed.get("t"), "heal_step": heal_step,
        "first_step_after_heal_t": out["times"][first] if first is not None else None, "val_loss": val_loss}))
    manager.shutdown(wait=False)


if __name__ == "__main__":
    main(json.loads(Path(sys.argv[1]).read_text()))
