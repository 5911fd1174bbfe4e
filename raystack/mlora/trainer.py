"""Building an mLoRA run from its config, single-process BatchLoRA training, and evaluation.

:func:`train_single_process` is BatchLoRA in one process (all adapters' rows in one batch per
step). The Ray pipeline (``actors/mlora.py``) runs the same jobs split over stage actors and
must give the same adapter weights for the same data order.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from raystack.config import ConfigError
from raystack.data.sft import SFTBatcher, exact_match, greedy_generate
from raystack.mlora.batchlora import BatchLoRAModel, Segment, linear_module_names
from raystack.mlora.config import MLoRAConfig, check_against_model
from raystack.mlora.jobs import JobState, lane_step
from raystack.mlora.quantize import quantize_base
from raystack.mlora.stage import OptimSpec, StageModel
from raystack.models.layout import layout_of
from raystack.models.tokenizer import check_tokenizer_fits, load_tokenizer, pad_token_id


def build_base(cfg: MLoRAConfig, device: str | torch.device | None = None) -> nn.Module:
    """The frozen base model (``device="meta"`` builds only the structure, for checks)."""
    from raystack.models import build_model, meta_model

    if device == "meta":
        return meta_model(cfg.base, field="base")
    model = build_model(cfg.base, seed=cfg.seed, field="base")
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def tokenizer_of(cfg: MLoRAConfig):
    """The tokenizer the jobs encode with (the base's own unless ``tokenizer`` is set)."""
    return load_tokenizer(cfg.base, cfg.tokenizer, model_field="base")


def check_config(cfg: MLoRAConfig) -> None:
    """Checks needing the base (built on the meta device: no memory, no weights) and its
    tokenizer: a supported architecture, target modules that exist, enough units for the
    stages, a tokenizer that fits the embeddings and has a chat template for chat data."""
    meta = build_base(cfg, device="meta")
    try:
        layout = layout_of(meta)
    except ValueError as exc:
        raise ConfigError("base", f"{cfg.base!r}: {exc}") from None
    tok = check_tokenizer_fits(cfg.base, cfg.tokenizer, model_field="base")
    check_against_model(cfg, linear_module_names(meta), layout.num_units(meta), tok)


def make_jobs(cfg: MLoRAConfig) -> dict[str, JobState]:
    """One :class:`JobState` per task, in config order."""
    jobs = {}
    tok = tokenizer_of(cfg)
    for t in cfg.tasks:
        a, d = cfg.adapter(t.adapter), cfg.dataset(t.dataset)
        batcher = SFTBatcher(d.examples(tok), t.batch_size, t.cutoff_len, seed=cfg.seed * 7919 + d.seed,
                             tokenizer=tok, packing=t.packing)
        steps = t.max_steps if t.max_steps is not None else max(1, math.ceil(t.epochs * batcher.steps_per_epoch))
        optim = OptimSpec(a.optimizer, a.lr, a.weight_decay, a.schedule, a.warmup_steps, steps)
        jobs[a.name] = JobState(a.name, batcher, steps, t.micro_batch_size, optim, t.priority)
    return jobs


@torch.no_grad()
def evaluate(model: BatchLoRAModel, adapter: str | None, examples, max_new_tokens: int = 8, tok=None) -> float:
    """Exact-match accuracy of greedy answers (``adapter=None``: the bare base)."""
    was = model.training
    model.eval()

    def logits(ids: torch.Tensor) -> torch.Tensor:
        segs = [Segment(adapter, 0, ids.shape[0])] if adapter else []
        return model(ids, segs)

    try:
        preds = greedy_generate(logits, [e.prompt for e in examples], max_new_tokens, tok)
    finally:
        model.train(was)
    return exact_match(preds, examples)


def train_single_process(cfg: MLoRAConfig, *, lanes: list[list[str]] | None = None,
                         on_step: Callable[[str, int, float], None] | None = None,
                         base: nn.Module | None = None) -> tuple[StageModel, dict[str, JobState]]:
    """BatchLoRA in one process: every step, each lane's jobs share one batch.

    ``lanes`` defaults to one lane holding all jobs (the whole BatchLoRA batch). Returns the
    trained model (one stage holding every unit) and the jobs.
    """
    torch.manual_seed(cfg.seed)
    base = base if base is not None else build_base(cfg)
    if cfg.quantize:  # the frozen base's linear layers, after loading (adapters stay full precision)
        quantize_base(base, cfg.quantize)
    stage = StageModel(base, 0, layout_of(base).num_units(base))
    jobs = make_jobs(cfg)
    for name, job in jobs.items():
        stage.add_adapter(cfg.adapter(name).spec(), job.optim)
    lanes = lanes or [list(jobs)]
    pad = pad_token_id(tokenizer_of(cfg))
    step = 0
    while any(not jobs[n].done for lane in lanes for n in lane):
        for li, lane in enumerate(lanes):
            active = [jobs[n] for n in lane if not jobs[n].done]
            if not active:
                continue
            losses = stage.train_step(lane_step(li, step, active, pad))
            for j in active:
                j.step += 1
                j.losses.append(losses[j.name])
                if on_step:
                    on_step(j.name, j.step, losses[j.name])
        step += 1
    return stage, jobs


@torch.no_grad()
def token_accuracy(model: BatchLoRAModel, adapter: str | None, examples, cutoff_len: int = 32, tok=None) -> float:
    """Teacher-forced accuracy on the response tokens (a smoother measure than exact match)."""
    from raystack.data.sft import IGNORE, collate, encode

    was = model.training
    model.eval()
    try:
        pad = None if tok is None else pad_token_id(tok)
        ids, labels = collate([encode(e, cutoff_len, tok) for e in examples], pad)
        segs = [Segment(adapter, 0, ids.shape[0])] if adapter else []
        pred = model(ids, segs).argmax(-1)
    finally:
        model.train(was)
    mask = labels != IGNORE
    return float((pred[mask] == labels[mask]).float().mean())


def evaluate_adapters(cfg: MLoRAConfig, exported: dict[str, str], max_examples: int = 64) -> dict[str, dict[str, float]]:
    """Per adapter: exact-match and token accuracy on its dataset's held-out set, before
    (the bare base: a fresh adapter is the identity) and after (the exported PEFT adapter)."""
    from raystack.mlora.export import base_reference, load_peft_adapter

    model = BatchLoRAModel(build_base(cfg)).eval()
    tok = tokenizer_of(cfg)
    sha = base_reference(cfg.base, cfg.seed).sha256
    out = {}
    for t in cfg.tasks:
        if t.adapter not in exported:
            continue
        examples = cfg.dataset(t.dataset).eval_set(tok)[:max_examples]
        load_peft_adapter(model, exported[t.adapter], t.adapter, base_sha256=sha)
        out[t.adapter] = {
            "exact_before": evaluate(model, None, examples, tok=tok),
            "exact_after": evaluate(model, t.adapter, examples, tok=tok),
            "token_before": token_accuracy(model, None, examples, t.cutoff_len, tok),
            "token_after": token_accuracy(model, t.adapter, examples, t.cutoff_len, tok)}
        model.remove_adapter(t.adapter)
    return out
