"""ElasticController: the elastic DLRM job on Ray, end to end.

It prepares the data (generated Criteo-like Parquet by default), cuts it into shards, starts
the ShardService, and steps an :class:`ElasticLoop` (the pure state machine) over a
:class:`RayBackend` until the data is trained, then evaluates AUC on the held-out file and
audits the sample ids. ``train(cfg)`` is the Python API; the CLI and the job script call it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import ray

from raystack.actors.elastic.backend import RayBackend
from raystack.data.criteo import auc, generate, list_files, read_rows
from raystack.elastic.config import ElasticConfig
from raystack.elastic.control import ElasticLoop, State
from raystack.elastic.dlrm import DLRMDense, DLRMSpec, predict
from raystack.elastic.perfmodel import JobConfig
from raystack.elastic.planner import Budget, PlannerSettings, ThreeStagePlanner
from raystack.elastic.shards import make_shards
from raystack.elastic.stragglers import StragglerDetector


class ElasticJobError(RuntimeError):
    """The job stopped (a shard failed repeatedly, a service was lost, or it timed out)."""


@dataclass
class ElasticResult:
    auc: float
    rows: int
    seconds: float
    samples_per_s: float
    lost: int
    duplicated: int
    final_config: dict
    events: list[str] = field(default_factory=list)
    recoveries_s: list[float] = field(default_factory=list)


def prepare_data(cfg: ElasticConfig) -> tuple[list[tuple[str, int]], str]:
    """(training files with row counts, held-out file)."""
    d = cfg.data
    files = list_files(d.path) if d.path else generate(
        Path(d.out_dir), d.generate_rows, d.generate_files, d.vocab, d.zipf_s, cfg.model.seed)
    if len(files) < 2:
        raise ElasticJobError("need >= 2 Parquet files: the last one is held out for AUC")
    return files[:-1], files[-1][0]


def spec_of(cfg: ElasticConfig) -> DLRMSpec:
    m = cfg.model
    return DLRMSpec(vocab=cfg.data.vocab, dim=m.dim, bottom=tuple(m.bottom), top=tuple(m.top))


class ElasticController:
    """Owns one job: the backend (actors, placement groups) and the loop (decisions)."""

    def __init__(self, cfg: ElasticConfig, adopt: bool = False) -> None:
        self.cfg = cfg
        self.spec = spec_of(cfg)
        self.train_files, self.eval_file = prepare_data(cfg)
        self.shards = make_shards(self.train_files, cfg.data.rows_per_shard)
        self.total_rows = sum(n for _, n in self.train_files)
        self.backend = RayBackend(cfg, self.spec, self.shards, self.total_rows, adopt=adopt)
        r = cfg.resources
        budget = Budget(r.max_cpus, r.max_mem_gb, r.max_workers, r.max_ps, tuple(r.cpu_choices))
        default = JobConfig(r.initial_workers, r.initial_ps, r.cpu_choices[0], r.cpu_choices[0],
                            1.0, 1.0)
        self.planner = ThreeStagePlanner(budget, cfg.model.batch_size, default=default,
                                         settings=PlannerSettings())
        f = cfg.faults
        self.loop = ElasticLoop(self.planner, self.backend,
                                detector=StragglerDetector(f.straggler_factor, f.straggler_min_rows),
                                measure_s=cfg.measure_s, settle_s=cfg.settle_s,
                                autoscale=r.autoscale, max_relaunches=f.max_relaunches)
        if adopt:  # carry on with the running units, skip the initial plan
            self.loop.units = dict(self.backend.units)
            self.loop.state = State.RUNNING
            self.loop._next_id = 1 + max(int(u.split("-")[1]) for u in self.loop.units)
            self.planner.stage = self.planner.stage.__class__.RUNTIME if not r.autoscale \
                else self.planner.stage.__class__.WARMUP
            self.planner._probes = []

    def step(self) -> State:
        return self.loop.step()

    def run(self, progress: Callable[[dict], None] | None = None,
            on_step: Callable[["ElasticController"], None] | None = None) -> ElasticResult:
        t0 = time.time()
        while self.loop.step() is State.RUNNING or self.loop.state is State.STARTING:
            if on_step is not None:
                on_step(self)
            if progress is not None:
                progress(self.snapshot())
            if time.time() - t0 > self.cfg.timeout_s:
                raise ElasticJobError(f"job {self.cfg.name} timed out after {self.cfg.timeout_s}s")
            time.sleep(self.cfg.poll_s)
        if self.loop.state is State.FAILED:
            raise ElasticJobError(f"job {self.cfg.name} failed: {self.loop.error}")
        seconds = time.time() - t0
        return self.finish(seconds, t0)

    def snapshot(self) -> dict:
        c, p = self.loop.config, self.loop.last_poll
        ev = self.loop.events[-1].detail if self.loop.events else ""
        rates = sum(r for r, _ in p.worker_rates.values()) if p else 0.0
        return {"config": c, "stage": self.planner.stage.value, "last_event": ev,
                "rows_done": p.rows_done if p else 0, "rows_total": p.rows_total if p else 1,
                "samples_per_s": rates, "plans": sum(e.kind == "plan" for e in self.loop.events)}

    def finish(self, seconds: float, t0: float = 0.0) -> ElasticResult:
        counts = self.backend.audit()
        rows = int(counts.sum())
        result = ElasticResult(
            auc=self.evaluate(), rows=rows, seconds=seconds, samples_per_s=rows / seconds,
            lost=int((counts == 0).sum()), duplicated=int((counts > 1).sum()),
            final_config=dict(vars(self.loop.config)) if self.loop.config else {},
            events=[f"{e.time - t0:.1f}s {e.kind}: {e.detail}" for e in self.loop.events],
            recoveries_s=list(self.backend.recoveries))
        return result

    def evaluate(self) -> float:
        dense, tables = self.backend.model_state()
        import torch
        model = DLRMDense(self.spec)
        model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in dense.items()})
        n = min(self.cfg.data.eval_rows, list_files(self.eval_file)[0][1])
        b = read_rows(self.eval_file, 0, n, self.spec.vocab)
        return auc(b.label, predict(model, b.dense, b.cat, tables))

    def shutdown(self) -> None:
        self.backend.shutdown()


def train(cfg: ElasticConfig, progress: Callable[[dict], None] | None = None) -> ElasticResult:
    """Run the job to the end on the connected Ray cluster; clean up its actors. The job is
    checked first (data, sizes, the cluster's resources): a refused job raises `PreflightError`
    before any actor or placement group exists."""
    from raystack.cluster import connect, planned_resources
    from raystack.preflight import preflight

    preflight(cfg, planned_resources())  # before an embedded cluster starts, when none runs
    if not ray.is_initialized():
        connect()
    ctl = ElasticController(cfg)
    try:
        return ctl.run(progress)
    finally:
        ctl.shutdown()
