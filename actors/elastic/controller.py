"""ElasticController: the elastic DLRM job on Ray, end to end, and its driver for the entry API.

It prepares the data (generated Criteo-like Parquet by default), cuts it into shards, starts
the ShardService, and steps an :class:`ElasticLoop` (the part's strategy over the kernel
Controller) over a :class:`RayBackend` until the data is trained, then evaluates AUC on the
held-out file and audits the sample ids. ``raystack.elastic.train(cfg)`` runs it through
:class:`ElasticDriver` and returns the one ``Result``; the CLI and the job script call that.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from raystack.actors.elastic.backend import RayBackend
from raystack.config import config_to_dict
from raystack.data.criteo import auc, generate, list_files, read_rows
from raystack.elastic.config import ElasticConfig
from raystack.elastic.control import ElasticLoop, State
from raystack.elastic.dlrm import DLRMDense, DLRMSpec, predict
from raystack.elastic.perfmodel import JobConfig
from raystack.elastic.planner import Budget, PlannerSettings, Stage, ThreeStagePlanner
from raystack.elastic.shards import make_shards
from raystack.elastic.stragglers import StragglerDetector
from raystack.runtime.controller import Controller, ControllerState, MetricsCallback, RunFailedError
from raystack.runtime.result import Result, history_table
from raystack.runtime.storage import RunDir, Storage, find_run, open_run
from raystack.runtime.tracking import make_loggers, tracking_artifacts

logger = logging.getLogger(__name__)


class ElasticJobError(RunFailedError):
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
    d = cfg.data  # absolute here: workers on other nodes do not share the driver's directory
    files = list_files(str(Path(d.path).resolve())) if d.path else generate(
        Path(d.out_dir).resolve(), d.generate_rows, d.generate_files, d.vocab, d.zipf_s, cfg.model.seed)
    if len(files) < 2:
        raise ElasticJobError("need >= 2 Parquet files: the last one is held out for AUC")
    return files[:-1], files[-1][0]


def check_audit(counts: np.ndarray, job: str) -> tuple[int, int]:
    """(lost, duplicated) samples of the audit (how often each sample id was trained); raises
    ElasticJobError unless both are 0: a job that lost or repeated samples never succeeds."""
    lost, duplicated = int((counts == 0).sum()), int((counts > 1).sum())
    if lost or duplicated:
        raise ElasticJobError(f"job {job}: the audit found {lost} samples never trained and "
                              f"{duplicated} trained more than once (of {len(counts)})")
    return lost, duplicated


def spec_of(cfg: ElasticConfig) -> DLRMSpec:
    m = cfg.model
    return DLRMSpec(vocab=cfg.data.vocab, dim=m.dim, bottom=tuple(m.bottom), top=tuple(m.top))


class ElasticController:
    """Owns one job: the backend (actors, placement groups) and the loop (decisions)."""

    def __init__(self, cfg: ElasticConfig, adopt: bool = False,
                 callbacks: Sequence[MetricsCallback] = ()) -> None:
        self.cfg = cfg
        self.spec = spec_of(cfg)
        self.train_files, self.eval_file = prepare_data(cfg)
        self.shards = make_shards(self.train_files, cfg.data.rows_per_shard)
        self.total_rows = sum(n for _, n in self.train_files)
        self.run_dir = self._run_dir(cfg, adopt)
        self.backend = RayBackend(cfg, self.spec, self.shards, self.total_rows, self.run_dir, adopt=adopt)
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
                                autoscale=r.autoscale, max_relaunches=f.max_relaunches,
                                callbacks=callbacks)
        self.history: list[dict] = []  # one row per poll
        self._t0 = time.time()
        if adopt:  # carry on with the running units, skip the initial plan
            self.loop.adopt(self.backend.units)
            self.planner.adopt(Stage.WARMUP if r.autoscale else Stage.RUNTIME)

    @staticmethod
    def _run_dir(cfg: ElasticConfig, adopt: bool) -> RunDir:
        """This job's run folder in ``<work_dir>/<name>``: a new one, or (adopting a running
        job) the one its ShardService names."""
        location = Storage(cfg.work_dir, field="work_dir").child(cfg.name)
        if adopt:
            import ray

            state = ray.get(ray.get_actor(f"{cfg.name}-shards").get_controller_state.remote())
            return find_run(location, state["run_id"])
        return open_run(location, "elastic", run_id=cfg.run_id, field="work_dir")

    @property
    def controller(self) -> Controller:
        return self.loop.controller

    def step(self) -> ControllerState:
        """One controller step: a poll of the job and what it decides."""
        state = self.loop.step()
        p = self.loop.last_poll
        if p is not None:
            c = self.loop.config
            self.history.append({"seconds": round(p.now - self._t0, 3), "rows_done": p.rows_done,
                                 "rows_total": p.rows_total, "samples_per_s": p.samples_per_s,
                                 "workers": c.workers if c else 0, "ps": c.ps if c else 0,
                                 "stage": self.planner.stage.value, "state": state.value})
        return state

    def run(self, progress: Callable[[dict], None] | None = None,
            on_step: Callable[["ElasticController"], None] | None = None) -> ElasticResult:
        t0 = self._t0 = time.time()
        while not self.step().terminal:
            if on_step is not None:
                on_step(self)
            if progress is not None:
                progress(self.snapshot())
            self.check_timeout()
            time.sleep(self.cfg.poll_s)
        self.raise_if_failed()
        return self.finish(time.time() - t0, t0)

    def check_timeout(self) -> None:
        if time.time() - self._t0 > self.cfg.timeout_s:
            raise ElasticJobError(f"job {self.cfg.name} timed out after {self.cfg.timeout_s}s")

    def raise_if_failed(self) -> None:
        if self.loop.state is State.FAILED:
            raise ElasticJobError(f"job {self.cfg.name} failed: {self.loop.error}")

    def snapshot(self) -> dict:
        c, p = self.loop.config, self.loop.last_poll
        ev = self.loop.events[-1].detail if self.loop.events else ""
        return {"config": c, "stage": self.planner.stage.value, "last_event": ev,
                "rows_done": p.rows_done if p else 0, "rows_total": p.rows_total if p else 1,
                "samples_per_s": p.samples_per_s if p else 0.0,
                "plans": sum(e.kind == "plan" for e in self.loop.events)}

    def finish(self, seconds: float, t0: float = 0.0) -> ElasticResult:
        """Evaluate and audit the trained job; raises ElasticJobError if any sample was lost or
        trained twice (a job that lost samples never reports success)."""
        counts = self.backend.audit()
        rows = int(counts.sum())
        lost, duplicated = check_audit(counts, self.cfg.name)
        return ElasticResult(
            auc=self.evaluate(), rows=rows, seconds=seconds, samples_per_s=rows / seconds,
            lost=lost, duplicated=duplicated,
            final_config=dict(vars(self.loop.config)) if self.loop.config else {},
            events=[f"{e.time - t0:.1f}s {e.kind}: {e.detail}" for e in self.loop.events],
            recoveries_s=list(self.backend.recoveries))

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


class ElasticDriver:
    """The elastic part behind ``raystack.elastic.train(cfg)``: one ElasticController, a
    progress bar for people, experiment tracking, and the run's :class:`Result`."""

    part = "elastic"

    def __init__(self, cfg: ElasticConfig, *, callbacks: Sequence[MetricsCallback] = (),
                 progress: bool = True) -> None:
        self.cfg, self.callbacks, self.progress = cfg, list(callbacks), progress
        self.job: ElasticController | None = None
        self._bar = None
        self._shown = 0
        self._t0 = 0.0
        self._outcome: ElasticResult | None = None

    @property
    def controller(self) -> Controller | None:
        return self.job.controller if self.job is not None else None

    @property
    def run_dir(self) -> RunDir | None:
        return self.job.run_dir if self.job is not None else None

    def step(self) -> ControllerState:
        """One poll of the job (the first builds the data, the ShardService and the plan);
        sleeps ``poll_s`` between polls; raises ElasticJobError past ``timeout_s``."""
        if self.job is None:
            self._t0 = time.time()
            self.job = ElasticController(self.cfg, callbacks=self.callbacks)
            loggers = make_loggers(self.cfg.loggers, self.run_dir.tracking_dir(), self.part,
                                   config_to_dict(self.cfg), run_name=f"{self.cfg.name}-{self.run_dir.run_id}")
            self.job.controller.callbacks.extend(loggers)
            logger.info("elastic %s: %d training files, %d rows, %d shards; held out: %s", self.cfg.name,
                        len(self.job.train_files), self.job.total_rows, len(self.job.shards),
                        self.job.eval_file)
            if self.progress:
                from tqdm import tqdm
                self._bar = tqdm(total=self.job.total_rows * self.cfg.epochs, unit="sample",
                                 desc=f"elastic[{self.cfg.name}]")
        else:
            time.sleep(self.cfg.poll_s)
        state = self.job.step()
        self._show()
        if not state.terminal:
            self.job.check_timeout()
        return state

    def _show(self) -> None:
        events = self.job.loop.events[self._shown:]
        self._shown += len(events)
        for e in events:
            logger.info("[%6.1fs] %s: %s", e.time - self._t0, e.kind, e.detail)
        if self._bar is None:
            return
        for e in events:  # what the controller changed, for people watching
            self._bar.write(f"  [{e.time - self._t0:6.1f}s] {e.kind}: {e.detail}")
        s = self.job.snapshot()
        self._bar.update(s["rows_done"] - self._bar.n)
        c = s["config"]
        if c is not None:
            self._bar.set_postfix_str(f"{c.workers}w/{c.ps}ps {s['stage']} {s['samples_per_s']:.0f}/s")

    def result(self) -> Result:
        job = self.job
        job.raise_if_failed()
        if self._bar is not None:
            self._bar.close()
        seconds = time.time() - self._t0
        res = self._outcome = job.finish(seconds, self._t0)
        store = self.run_dir.storage
        events = store.write_json(res.events, "events.json")
        c = res.final_config
        metrics = {"auc": res.auc, "rows": res.rows, "seconds": res.seconds,
                   "samples_per_s": res.samples_per_s, "lost": res.lost, "duplicated": res.duplicated,
                   "relaunches": sum(e.kind == "relaunch" for e in job.loop.events),
                   "plan_changes": sum(e.kind == "plan" for e in job.loop.events),
                   **{f"final_{k}": float(v) for k, v in c.items()}}
        if res.recoveries_s:
            metrics["recovery_max_s"] = max(res.recoveries_s)
        restores = job.backend.restores
        metrics["ps_restores"] = float(len(restores))
        metrics["rows_redone"] = float(sum(r.rows_redone for r in restores))
        artifacts = {"events": events, "eval_file": job.eval_file, "run": store.uri,
                     "data": str(Path(self.cfg.data.path or self.cfg.data.out_dir).resolve())}
        artifacts.update(tracking_artifacts(self.cfg.loggers, self.run_dir.tracking_dir()))
        return Result("elastic", metrics, history_table(job.history), store.path("ps"),
                      artifacts, config_to_dict(self.cfg))

    def shutdown(self) -> None:
        if self._bar is not None:
            self._bar.close()
        if self.job is not None:
            self.job.shutdown()

