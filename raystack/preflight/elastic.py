"""Preflight of an elastic DLRM job: data files (or room to generate them), sizes, cluster fit."""
from __future__ import annotations

import shutil
from pathlib import Path

from raystack.config import Problems, check_config
from raystack.elastic.config import ElasticConfig
from raystack.preflight.files import PreflightError, parquet_columns, read_first_records
from raystack.preflight.report import PreflightReport, check_fit, raise_problems
from raystack.preflight.resources import PROCESS_OVERHEAD_BYTES, ClusterResources

GENERATED_BYTES_PER_ROW = 280    # an uncompressed Criteo-schema row (upper side of the Parquet size)
TABLE_COPIES = 3                 # a PS holds each embedding row, its Adagrad accumulator, and a touched mark


def check_parquet_data(path: str, problems: Problems) -> None:
    """``data.path``: Parquet files (or a directory of them) in the Criteo schema, each readable and
    not empty, at least two (the last is held out)."""
    from raystack.data.criteo import COLUMNS

    field = "data.path"
    p = Path(path)
    files = sorted(p.glob("*.parquet")) if p.is_dir() else [p]
    if not p.exists():
        problems.add(field, f"no such file or directory: {p}")
        return
    if len(files) < 2:
        problems.add(field, f"{p} holds {len(files)} Parquet file(s); need >= 2 (the last is held out for AUC)")
        return
    for f in files:
        try:
            names, rows = parquet_columns(f, field)
            missing = [c for c in COLUMNS if c not in names]
            if missing:
                raise PreflightError(field, f"{f} has no column {missing[0]!r} (the Criteo schema needs "
                                            f"sample_id, label, I1..I13, C1..C26)")
            if rows == 0:
                raise PreflightError(field, f"{f} is an empty Parquet file (0 rows)")
            read_first_records(f, field, 4)
        except PreflightError as exc:
            problems.add_error(exc)
            return


def check_room_to_generate(cfg: ElasticConfig, problems: Problems) -> None:
    """Generated data: reused if its digests match, else there must be disk room to write it."""
    from raystack.data.criteo import generated_is_current

    d = cfg.data
    if generated_is_current(d.out_dir, d.generate_rows, d.generate_files, d.vocab, d.zipf_s, cfg.model.seed):
        return
    existing = Path(d.out_dir).resolve()
    while not existing.exists():
        existing = existing.parent
    need, free = d.generate_rows * GENERATED_BYTES_PER_ROW, shutil.disk_usage(existing).free
    if need > free:
        problems.add("data.generate_rows", f"{d.generate_rows:,} rows need about {need / 1e9:.1f} GB in "
                     f"{d.out_dir}; the disk has {free / 1e9:.1f} GB free")


def preflight_elastic(cfg: ElasticConfig, resources: ClusterResources | None = None) -> PreflightReport:
    """Check an elastic job before any actor starts; raise `PreflightError` naming each problem."""
    from raystack.data.criteo import N_CAT

    check_config(cfg)
    problems = Problems()
    if cfg.data.path is not None:
        check_parquet_data(cfg.data.path, problems)
    else:
        check_room_to_generate(cfg, problems)
    raise_problems(problems)

    r, m = cfg.resources, cfg.model
    tables = TABLE_COPIES * 4.0 * N_CAT * cfg.data.vocab * m.dim
    widths = [13, *m.bottom, *m.top, N_CAT * m.dim]
    worker = PROCESS_OVERHEAD_BYTES + 4.0 * m.batch_size * (sum(widths) * 3 + N_CAT * m.dim)
    ps = PROCESS_OVERHEAD_BYTES + tables / r.initial_ps
    unit_cpus = max(r.cpu_choices) * r.ray_cpus_per_cpu
    first = (r.initial_workers + r.initial_ps) * r.cpu_choices[0] * r.ray_cpus_per_cpu
    report = PreflightReport("elastic", r.initial_workers + r.initial_ps, first, 0.0,
                             r.initial_workers * worker + r.initial_ps * ps, max(worker, ps), resources)
    if resources is not None:
        check_fit(problems, resources, field="resources.initial_workers",
                  what=f"the first plan ({r.initial_workers} workers + {r.initial_ps} PS x {r.cpu_choices[0]:g} CPUs "
                       f"x ray_cpus_per_cpu={r.ray_cpus_per_cpu:g})",
                  cpus=first, actor_cpus=unit_cpus, memory=report.memory_bytes, actor_memory=report.actor_memory_bytes)
        budget = r.max_cpus * r.ray_cpus_per_cpu
        if budget > resources.cpus + 1e-9:
            problems.add("resources.max_cpus", f"the budget (max_cpus={r.max_cpus:g} x ray_cpus_per_cpu="
                         f"{r.ray_cpus_per_cpu:g}) may reserve {budget:g} Ray CPUs; {resources.where} has "
                         f"{resources.cpus:g}")
        if r.reserve_memory and r.max_mem_gb * 1e9 > resources.memory_bytes:
            problems.add("resources.max_mem_gb", f"{r.max_mem_gb:g} GB reserved in placement groups; "
                         f"{resources.where} has {resources.memory_bytes / 1e9:.1f} GB")
        missing = [f"sim_node_{k}" for k in range(r.sim_nodes) if f"sim_node_{k}" not in resources.custom]
        if missing:
            problems.add("resources.sim_nodes", f"{r.sim_nodes} simulated nodes need the custom resource "
                         f"{missing[0]!r}, which {resources.where} lacks")
    raise_problems(problems)
    return report
