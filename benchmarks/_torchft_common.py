"""torchft 0.2.0 as the benchmarks drive it (DiLoCo / Streaming DiLoCo on a Manager of world
size 1 per replica group), importable without Ray: the EDiT benchmarks run it in Ray actors
(_edit_workers.TorchFTWorker) and threads (edit_quality), the reliability benchmark in plain
processes it can kill (_torchft_replica)."""
from __future__ import annotations

import math
import time

import torch

from raystack.edit.inner import inner_optimizer


def llama_fragments(model, count: int) -> list:
    """``count`` consecutive groups of a Llama's blocks (embeddings, layers, norm + head)."""
    base = model.model
    mods = [base.embed_tokens, *base.layers, torch.nn.ModuleList([base.norm, model.lm_head])]
    cut = math.ceil(len(mods) / count)
    return [torch.nn.ModuleList(mods[i:i + cut]) for i in range(0, len(mods), cut)]


def torchft_manager(replica_id: str, lighthouse: str, model, min_replicas: int = 2, timeout_s: float = 60.0):
    """A torchft Manager for one replica (world size 1): its own TCPStore and gloo ProcessGroup,
    joined to ``lighthouse``; returns the manager and the store (keep it alive)."""
    from datetime import timedelta

    import torch.distributed as dist
    from torchft import Manager, ProcessGroupGloo
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    t = timedelta(seconds=timeout_s)
    manager = Manager(pg=ProcessGroupGloo(timeout=t), min_replica_size=min_replicas, use_async_quorum=False,
                      load_state_dict=lambda sd: model.load_state_dict(sd["model"]),
                      state_dict=lambda: {"model": model.state_dict()}, replica_id=replica_id,
                      store_addr="127.0.0.1", store_port=store.port, rank=0, world_size=1,
                      lighthouse_addr=lighthouse, timeout=t, quorum_timeout=t, connect_timeout=t)
    return manager, store


def torchft_inner_optimizer(cfg, model) -> torch.optim.Optimizer:
    """The inner AdamW of every torchft arm (raystack's inner settings)."""
    return inner_optimizer(cfg.inner, model.parameters())


def torchft_train(cfg, model, fragments: list, manager, stream, delay: int = 0, slow_s: float = 0.0,
                  on_step=None, inner=None, syncs: int | None = None) -> dict:
    """Train ``cfg.steps`` inner steps under torchft's DiLoCo (Streaming DiLoCo when there are
    several ``fragments``, with ``delay`` as fragment_sync_delay): the same AdamW, learning-rate
    schedule and clipping as raystack's arms. ``slow_s`` sleeps each step (a simulated straggler);
    ``on_step(step, diloco)`` runs after each step. Per step: loss, wall time, sync time so far.
    ``inner``: the inner optimizer to use (one whose state the Manager heals). ``syncs``: train
    until the Manager has committed that many syncs instead (a replica that joined late, or
    whose window was discarded, runs the steps it needs), the learning rate following the
    global step (committed syncs x steps per sync + steps since the last)."""
    from torchft.local_sgd import DiLoCo

    from raystack.models import lm_loss
    c = cfg.inner
    inner = inner if inner is not None else torchft_inner_optimizer(cfg, model)
    outer = [torch.optim.SGD(f.parameters(), lr=cfg.outer.lr, momentum=cfg.outer.momentum, nesterov=True)
             for f in fragments]
    losses, times, exposed = [], [], []
    sync_s, stepped = 0.0, [0.0]
    period = cfg.sync.h // len(fragments)       # inner steps between two (fragment) syncs
    # registered before DiLoCo's own post-step hook, so it marks the end of AdamW's update:
    # what follows inside inner.step() is DiLoCo's sync work
    mark = inner.register_step_post_hook(lambda *_: stepped.__setitem__(0, time.perf_counter()))
    with DiLoCo(manager, fragments, inner, outer if len(fragments) > 1 else outer[0], sync_every=cfg.sync.h,
                backup_device=torch.device("cpu"), pin_memory=False, fragment_sync_delay=delay) as diloco:
        step = 0
        while (step < cfg.steps) if syncs is None else (manager.current_step() < syncs):
            at = step if syncs is None else manager.current_step() * period + step % period
            for g in inner.param_groups:
                g["lr"] = c.lr_at(at, cfg.steps)
            loss = lm_loss(model, stream.next_batch())
            inner.zero_grad()
            loss.backward()
            if c.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), c.grad_clip)
            if slow_s > 0:
                time.sleep(slow_s)
            inner.step()                 # DiLoCo's hooks prepare and perform the syncs here
            sync_s += time.perf_counter() - stepped[0]
            losses.append(float(loss.detach()))
            times.append(time.time())
            exposed.append(sync_s)
            if on_step is not None:
                on_step(step, diloco)
            step += 1
    mark.remove()
    return {"losses": losses, "times": times, "exposed": exposed}
