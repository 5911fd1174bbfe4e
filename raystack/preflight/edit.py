"""Preflight of an EDiT job: model and data files, checkpoint to resume, sizes, cluster fit."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

from raystack.config import Problems, check_config
from raystack.edit.config import EDiTConfig
from raystack.preflight.files import (FIRST_RECORDS, PreflightError, check_model_dir, check_text_head,
                                      check_torch_file, read_first_records, require_fields)
from raystack.preflight.llm import model_shape
from raystack.preflight.report import PreflightReport, check_fit, raise_problems
from raystack.preflight.resources import (PROCESS_OVERHEAD_BYTES, ClusterResources, adam_training_bytes,
                                          transformer_activation_bytes)
from raystack.runtime.storage import StorageError, find_run

MAX_FILES_CHECKED = 256      # files of a data directory opened by the preflight (the rest are counted)
MAX_FILES_LISTED = 100_000   # files of one data directory, at most


def check_data_path(path: Path, field: str, text_field: str) -> int:
    """Open one entry of ``data.paths`` (a file or a directory of them); returns its bytes."""
    from raystack.data.suffixes import DATA_SUFFIXES, TEXT_SUFFIXES

    if path.is_dir():
        found = itertools.islice((p for p in path.rglob("*") if p.suffix.lower() in DATA_SUFFIXES and p.is_file()),
                                 MAX_FILES_LISTED + 1)
        files = sorted(found)
        if len(files) > MAX_FILES_LISTED:
            raise PreflightError(field, f"{path} holds more than {MAX_FILES_LISTED:,} data files; name the files or "
                                        f"a smaller directory")
        if not files:
            raise PreflightError(field, f"{path} holds no data files ({', '.join(sorted(DATA_SUFFIXES))})")
        for f in files[:MAX_FILES_CHECKED]:
            check_data_path(f, field, text_field)
        return sum(f.stat().st_size for f in files)
    if not path.is_file():
        raise PreflightError(field, f"no such file or directory: {path}")
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        check_text_head(path, field)
    elif suffix in (".jsonl", ".json", ".parquet"):
        records = read_first_records(path, field, FIRST_RECORDS)
        require_fields(records, [text_field], path, "data.text_field")
    else:
        raise PreflightError(field, f"{path}: unsupported file type {suffix!r}; expected one of "
                                    f"{sorted(DATA_SUFFIXES)}")
    return path.stat().st_size


def check_resume_checkpoint(cfg: EDiTConfig) -> None:
    """With ``run.resume``, the run ``run.run_id`` names must exist in ``run.out_dir``, and its
    checkpoint (if any) must be whole and match."""
    if not cfg.run.resume:
        return
    try:
        run = find_run(cfg.run.out_dir, cfg.run.run_id, field="run.out_dir", run_id_field="run.run_id")
    except StorageError as exc:
        raise PreflightError("run.run_id", str(exc).split(": ", 1)[-1]) from None
    ckpt = run.local_path("checkpoint")
    if ckpt is None or not ckpt.exists():  # a remote location is read by the ranks themselves
        return
    field = "run.resume"
    try:
        meta = json.loads((ckpt / "driver.json").read_text())
        saved = meta["config"]
        shape = (saved["ranks"], saved["shards"])
    except (OSError, ValueError, KeyError, TypeError):
        raise PreflightError(field, f"{ckpt / 'driver.json'} is missing or not a raystack EDiT checkpoint") from None
    if shape != (cfg.ranks, cfg.shards):
        raise PreflightError(field, f"checkpoint in {ckpt} is for ranks={shape[0]}, shards={shape[1]}; this run "
                                    f"has ranks={cfg.ranks}, shards={cfg.shards}")
    for rank in range(cfg.ranks):
        f = ckpt / f"rank{rank}.pt"
        if not f.is_file():
            raise PreflightError(field, f"checkpoint in {ckpt} has no {f.name}")
        check_torch_file(f, field)
    if (ckpt / "model").is_dir():
        check_model_dir(ckpt / "model", field)


def preflight_edit(cfg: EDiTConfig, resources: ClusterResources | None = None) -> PreflightReport:
    """Check an EDiT job before any actor starts; raise `PreflightError` naming each problem."""
    check_config(cfg)
    problems = Problems()
    shape = model_shape(cfg.model, "model")
    d = cfg.data
    if shape.max_positions is not None and d.seq_len > shape.max_positions:
        problems.add("data.seq_len", f"must be <= the model's {shape.max_positions} positions, got {d.seq_len}")
    corpus_bytes = 0
    for i, p in enumerate(d.paths):
        try:
            corpus_bytes += check_data_path(Path(p), f"data.paths[{i}]", d.text_field)
        except PreflightError as exc:
            problems.add_error(exc)
    if not d.paths:
        corpus_bytes = d.max_bytes
    windows = corpus_bytes // d.seq_len
    if not problems and windows < (cfg.ranks + 1) * d.batch_size:
        problems.add("data", f"about {corpus_bytes:,} bytes of text make ~{windows:,} windows of seq_len="
                     f"{d.seq_len}; {cfg.ranks} ranks x batch_size={d.batch_size} plus a validation batch "
                     f"need at least {(cfg.ranks + 1) * d.batch_size:,}")
    try:
        check_resume_checkpoint(cfg)
    except PreflightError as exc:
        problems.add_error(exc)
    raise_problems(problems)

    extra_state = 8.0 * shape.parameters / cfg.shards   # theta_sync and outer momentum, 1/S each
    per_rank = (PROCESS_OVERHEAD_BYTES + adam_training_bytes(shape.parameters, cfg.inner.optimizer) + extra_state
                + transformer_activation_bytes(d.batch_size, d.seq_len, shape.hidden, shape.layers, shape.heads,
                                               shape.vocab))
    # the corpus is not counted per rank: ranks memory-map its token shards (page cache, shared)
    gpus = 0.0
    if cfg.run.device == "cuda" or (cfg.run.device == "auto" and resources is not None and resources.gpus >= 1):
        gpus = min(float(cfg.ranks), resources.gpus if resources is not None else float(cfg.ranks))
    report = PreflightReport("edit", cfg.ranks, cfg.ranks * cfg.run.cpus_per_rank, gpus,
                             cfg.ranks * per_rank, per_rank, resources)
    if resources is not None:
        if cfg.run.device == "cuda" and resources.gpus < 1:
            problems.add("run.device", f"device: cuda, but the cluster has {resources.gpus:g} GPUs "
                                          f"({resources.where}); use auto or cpu")
        check_fit(problems, resources, field="ranks", what=f"{cfg.ranks} ranks x run.cpus_per_rank="
                  f"{cfg.run.cpus_per_rank:g}", cpus=report.cpus, actor_cpus=cfg.run.cpus_per_rank,
                  memory=report.memory_bytes, actor_memory=per_rank)
    raise_problems(problems)
    return report
