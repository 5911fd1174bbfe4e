"""The mLoRA scheduler's per-stage memory model and admission policy (its OOM avoidance).

A pipeline stage's peak memory over a window is predicted as

    peak_s = fixed_s + sum_jobs adapter_s(job) + gamma_s * (A_s + T_s)

- ``fixed_s``: the stage's footprint with its base shard loaded and no adapter, measured when
  the stage starts (RSS on the CPU, the CUDA allocator on a GPU);
- ``adapter_s(job)``: the job's adapter weights, gradients and optimizer state on that stage,
  exact from the base's layer shapes (:func:`adapter_state_bytes`);
- ``A_s``: the most activation bytes the stage holds at once, for the micro-batches whose
  forward ran and whose backward has not, found by walking the stage's op order in the
  schedule the pipeline runs (lanes, micro-batches, the in-flight cap);
- ``T_s``: the largest single micro-batch's activation bytes (the running op's working memory);
- one micro-batch's activation bytes on stage ``s``: :class:`ActivationModel`, the paper's
  ``b0 + b1*B*L + b2*B*L^2`` (B rows, L tokens) fitted to what the stage saved for backward;
- ``gamma_s``: fitted online, by least squares through the origin, from the measured peak of
  each window: (measured - fixed - adapters) over ``A_s + T_s``. It absorbs what the
  saved-tensor count misses (temporaries, the allocator's slack, transfer buffers).

That is the expected peak (reported beside the measured one). Admission gates on a bound:
the same sum with ``gamma_s`` replaced by the largest ratio any recent window (or the
calibration) measured. The measured peak of the same micro-batches varies from window to window
(on the CPU, with the allocator's state: +-7% of a stage's peak in the admission test), and
the fit weighs each window by its activation bytes squared, so one low window after start
outweighed the calibration and lowered the prediction of every larger set: a job was let in
whose set then measured over the budget. The bound never predicts a load below what a recent
window measured for it; the margin is on top. ``fixed_s`` follows what the stage keeps between
windows (its resident footprint less the adapters' state: Ray's shared-memory pages, one-off
allocations of the first steps), so that growth is not read as activations.

:class:`AdmissionPolicy` admits pending jobs (priority, then arrival) only when every stage's
peak bound for the running set plus the job, with a safety margin, stays within that stage's
budget; others wait; a job that would not fit even alone is refused, with the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from torch import nn

from raystack.mlora.batchlora import is_linear, layer_dims
from raystack.mlora.config import AdapterConfig, TaskConfig
from raystack.mlora.footprint import Calibration
from raystack.mlora.jobs import form_lanes
from raystack.mlora.schedule import LaneWork, Op, lorapp_schedule
from raystack.models.layout import layout_of

MB = 2**20
PREDICT_STEPS = 3  # steps of the simulated schedule: the in-flight pattern repeats from step 2 on
GAMMA_HISTORY = 16  # windows a stage's gamma and its bound are taken over (the allocator's behaviour drifts)
OPTIMIZER_SLOTS = {"adamw": 2, "sgd": 1}  # state tensors per parameter (moments; momentum)


class ActivationModel:
    """Bytes one micro-batch of B rows and L tokens keeps for backward on one stage:
    least-squares fit of ``b0 + b1*B*L + b2*B*L^2`` to the latest observation of each shape."""

    def __init__(self, prior: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> None:
        self.beta = np.asarray(prior, dtype=float)
        self.by_shape: dict[tuple[int, int], float] = {}

    @staticmethod
    def _features(b: float, l: float) -> np.ndarray:
        return np.array([1.0, b * l, b * l * l])

    def observe(self, batch: int, seq_len: int, nbytes: float) -> None:
        self.by_shape[(int(batch), int(seq_len))] = float(nbytes)
        self._fit()

    def _fit(self) -> None:
        shapes = list(self.by_shape)
        # with fewer distinct shapes than coefficients, fit the leading terms only
        cols = {1: [1], 2: [1, 2]}.get(len(shapes), [0, 1, 2])
        x = np.stack([self._features(b, l)[cols] for b, l in shapes])
        y = np.array([self.by_shape[s] for s in shapes])
        beta = np.zeros(3)
        beta[cols] = np.linalg.lstsq(x, y, rcond=None)[0]
        self.beta = beta

    @property
    def fitted(self) -> bool:
        return len(self.by_shape) >= 3

    def predict(self, batch: int, seq_len: int) -> float:
        return max(float(self._features(batch, seq_len) @ self.beta), 0.0)


@dataclass(frozen=True)
class JobRequest:
    """A training job as the memory model and the scheduler see it."""

    name: str
    micro_batch_size: int
    micro_batches: int  # per step
    last_micro_rows: int  # rows of a step's last micro-batch
    seq_len: int  # tokens per row at most (the task's cutoff)
    adapter_bytes: tuple[float, ...]  # per stage: weights, gradients and optimizer state
    priority: int = 0
    arrival: int = 0

    def rows(self, micro: int) -> int:
        """Rows of micro-batch ``micro`` (0-based) of a step (0 past the last)."""
        if micro >= self.micro_batches:
            return 0
        return self.last_micro_rows if micro == self.micro_batches - 1 else self.micro_batch_size


@dataclass(frozen=True)
class StageLoad:
    """A stage's predicted peak and its parts, in bytes: expected (``total``) and the bound
    admission checks (``bound``)."""

    fixed: float
    adapters: float
    in_flight: float  # A: activations held at once at the worst point of the op order
    working: float  # T: the largest single micro-batch's activations
    gamma: float  # expected peak ratio (least-squares fit)
    gamma_bound: float = 0.0  # the largest ratio recent windows measured (never below gamma)

    @property
    def activations(self) -> float:
        return self.gamma * (self.in_flight + self.working)

    @property
    def total(self) -> float:
        """The expected peak."""
        return self.fixed + self.adapters + self.activations

    @property
    def bound_activations(self) -> float:
        return max(self.gamma, self.gamma_bound) * (self.in_flight + self.working)

    @property
    def bound(self) -> float:
        """The peak admission checks: no lower than any recent window measured for this load."""
        return self.fixed + self.adapters + self.bound_activations

    def describe(self) -> str:
        """The bound's parts."""
        return (f"base {self.fixed / MB:.0f} + adapters {self.adapters / MB:.1f} "
                f"+ activations {self.bound_activations / MB:.0f} MB")


Shape = tuple[int, int]  # (rows, tokens) of a micro-batch


def lane_shapes(lane: Sequence[JobRequest]) -> list[Shape]:
    """The (rows, tokens) of each micro-batch of one step of a lane: its jobs' rows of the same
    micro-batch index side by side, padded to the longest job's length (as ``lane_step``)."""
    out = []
    for m in range(max(j.micro_batches for j in lane)):
        parts = [j for j in lane if j.rows(m)]
        out.append((sum(j.rows(m) for j in parts), max(j.seq_len for j in parts)))
    return out


def activation_peak(order: Sequence[Op], act: Callable[[Op], float]) -> tuple[float, float]:
    """``(A, T)`` for one stage's op order: the most activation bytes held at once (forward
    done, backward not yet) and the largest single micro-batch's."""
    held = peak = largest = 0.0
    for op in order:
        b = act(op)
        largest = max(largest, b)
        if op.kind == "F":
            held += b
            peak = max(peak, held)
        else:
            held -= b
    return peak, largest


def adapter_state_bytes(meta_model: nn.Module, bounds: Sequence[tuple[int, int]], target_modules: Sequence[str],
                        r: int, dora: bool = False, optimizer: str = "adamw", element_size: int = 4) -> list[float]:
    """Per stage: bytes of one adapter's weights, gradients and optimizer state (``bounds``:
    each stage's pipeline units; unit 0 is the embedding, 1..n the layers, n+1 the head), for
    any model family :mod:`raystack.models.layout` knows."""
    unit_of = {id(sub): u for u, (_, mods) in enumerate(layout_of(meta_model).units(meta_model))
               for m in mods for sub in m.modules()}
    copies = 2 + OPTIMIZER_SLOTS.get(optimizer, 2)  # weight + gradient + optimizer slots
    out = [0.0] * len(bounds)
    for name, module in meta_model.named_modules():
        if not is_linear(module) or name.rsplit(".", 1)[-1] not in target_modules or id(module) not in unit_of:
            continue
        in_f, out_f = layer_dims(module)
        params = r * (in_f + out_f) + (out_f if dora else 0)
        unit = unit_of[id(module)]
        for s, (a, b) in enumerate(bounds):
            if a <= unit < b:
                out[s] += params * element_size * copies
    return out


class PipelineMemoryModel:
    """Predicts each stage's peak for a set of jobs, and learns from measured peaks."""

    def __init__(self, num_stages: int, fixed_prior: Sequence[float],
                 activation_prior: Sequence[tuple[float, float, float]], *, stage_costs: Sequence[float] | None = None,
                 max_lanes: int | None = None, in_flight_cap: int | None = None, gamma_prior: float = 1.0,
                 window_steps: int = PREDICT_STEPS) -> None:
        self.num_stages = num_stages
        self.fixed = [float(f) for f in fixed_prior]
        self.activations = [ActivationModel(p) for p in activation_prior]
        costs = list(stage_costs or [1.0] * num_stages)
        self.forward_cost = [c / max(costs) for c in costs]
        self.max_lanes = max_lanes
        self.in_flight_cap = in_flight_cap
        self.gamma_prior = gamma_prior
        self.predict_steps = max(1, min(window_steps, PREDICT_STEPS))
        self._peaks: list[list[tuple[float, float]]] = [[] for _ in range(num_stages)]  # (A + T, excess)

    # -- learning ---------------------------------------------------------------------------
    def set_fixed(self, stage: int, nbytes: float) -> None:
        """The stage's measured footprint with its base and no adapter."""
        self.fixed[stage] = float(nbytes)

    def calibrate(self, stage: int, cal: Calibration) -> None:
        """Learn from a stage's calibration: activation samples, the first peak ratios (every
        probe micro-batch held at once, the largest one's backward working; one per measured
        pass, so the expected ratio starts at their mean and the bound at their largest), the
        footprint."""
        self.observe_activations(stage, cal.samples)
        sizes = [self.activations[stage].predict(rows, seq) for rows, seq, _ in cal.samples]
        for resident, peak in cal.passes:
            self.observe_peak(stage, StageLoad(resident, 0.0, sum(sizes), max(sizes), 1.0, 1.0), peak)
        self.set_fixed(stage, cal.fixed_bytes)

    def observe_activations(self, stage: int, samples: Sequence[tuple[int, int, float]]) -> None:
        """``(rows, tokens, bytes saved for backward)`` of micro-batches the stage ran."""
        for rows, seq, nbytes in samples:
            self.activations[stage].observe(rows, seq, nbytes)

    def observe_peak(self, stage: int, predicted: StageLoad, measured: float, resident: float | None = None) -> None:
        """A window's measured peak, against the loads it was predicted from. ``resident``: the
        stage's footprint after the window, its freed memory returned to the OS; what it keeps
        beyond ``fixed`` and the adapters' state stays for later windows too, so it raises
        ``fixed`` instead of counting as this window's activations."""
        if resident is not None:
            self.fixed[stage] = max(self.fixed[stage], float(resident) - predicted.adapters)
        x = predicted.in_flight + predicted.working
        if x > 0:
            hist = self._peaks[stage]
            hist.append((x, measured - max(predicted.fixed, self.fixed[stage]) - predicted.adapters))
            del hist[:-GAMMA_HISTORY]

    def gamma(self, stage: int) -> float:
        """The expected peak ratio: least squares through the origin over recent windows."""
        hist = self._peaks[stage]
        if not hist:
            return self.gamma_prior
        return max(sum(x * y for x, y in hist) / sum(x * x for x, _ in hist), 0.0)

    def gamma_bound(self, stage: int) -> float:
        """The largest peak ratio a recent window (or the calibration) measured."""
        hist = self._peaks[stage]
        if not hist:
            return self.gamma_prior
        return max(max(y / x for x, y in hist), 0.0)

    # -- predicting -------------------------------------------------------------------------
    def lanes(self, jobs: Sequence[JobRequest]) -> list[list[JobRequest]]:
        """The lanes the pipeline forms for ``jobs`` (same rule, same order)."""
        by_name = {j.name: j for j in jobs}
        return [[by_name[n] for n in lane] for lane in form_lanes(sorted(by_name), self.num_stages, self.max_lanes)]

    def predict(self, jobs: Sequence[JobRequest]) -> list[StageLoad]:
        """Each stage's peak while ``jobs`` run together (a simulated window of their schedule)."""
        if not jobs:
            return [StageLoad(f, 0.0, 0.0, 0.0, self.gamma(s), self.gamma_bound(s)) for s, f in enumerate(self.fixed)]
        shapes = [lane_shapes(lane) for lane in self.lanes(jobs)]
        sched = lorapp_schedule(self.num_stages, [LaneWork(self.predict_steps, len(s)) for s in shapes],
                                forward_cost=self.forward_cost, backward_cost=[2 * c for c in self.forward_cost],
                                max_in_flight=self.in_flight_cap)
        return self.predict_order(sched.order, lambda op: shapes[op.lane][op.micro], jobs)

    def predict_order(self, order: Sequence[Sequence[Op]], shape_of: Callable[[Op], Shape],
                      jobs: Sequence[JobRequest]) -> list[StageLoad]:
        """Each stage's peak for a given per-stage op order (``shape_of(op)``: its micro-batch's
        rows and tokens), e.g. the schedule a window is about to run."""
        loads = []
        for s, ops in enumerate(order):
            model = self.activations[s]
            a, t = activation_peak(ops, lambda op: model.predict(*shape_of(op)))
            loads.append(StageLoad(self.fixed[s], sum(j.adapter_bytes[s] for j in jobs), a, t, self.gamma(s),
                                   self.gamma_bound(s)))
        return loads


@dataclass(frozen=True)
class AdmissionDecision:
    start: list[str] = field(default_factory=list)
    waiting: dict[str, str] = field(default_factory=dict)  # why a pending job waits
    refused: dict[str, str] = field(default_factory=dict)  # why a job can never run here
    loads: list[StageLoad] = field(default_factory=list)  # predicted peaks of the admitted set


class AdmissionPolicy:
    """Start pending jobs by (priority desc, arrival asc) while under ``max_concurrent`` and
    while every stage's peak bound (:attr:`StageLoad.bound`), times ``1 + margin``, stays
    within its budget.

    A job that does not fit waits without blocking smaller, lower-priority jobs behind it
    (backfill), unless ``strict_priority``. A job that would not fit on an empty pipeline is
    refused.
    """

    def __init__(self, model: PipelineMemoryModel, budgets: Sequence[float], max_concurrent: int,
                 strict_priority: bool = False, margin: float = 0.1) -> None:
        if len(budgets) != model.num_stages:
            raise ValueError(f"need one budget per stage ({model.num_stages}), got {len(budgets)}")
        self.model = model
        self.budgets = [float(b) for b in budgets]
        self.max_concurrent = max_concurrent
        self.strict = strict_priority
        self.margin = margin

    def over_budget(self, loads: Sequence[StageLoad]) -> int | None:
        """The first stage whose peak bound (with the margin) exceeds its budget, if any."""
        for s, (load, budget) in enumerate(zip(loads, self.budgets)):
            if load.bound * (1 + self.margin) > budget:
                return s
        return None

    def decide(self, running: Sequence[JobRequest], pending: Sequence[JobRequest]) -> AdmissionDecision:
        admitted = list(running)
        decision = AdmissionDecision(loads=self.model.predict(admitted))
        blocked = False
        for job in sorted(pending, key=lambda j: (-j.priority, j.arrival, j.name)):
            alone = self.model.predict([job])
            s = self.over_budget(alone)
            if s is not None:
                decision.refused[job.name] = (
                    f"job {job.name!r} can never fit: alone it needs ~{alone[s].bound * (1 + self.margin) / MB:.0f} MB "
                    f"on stage {s} ({alone[s].describe()}, +{self.margin:.0%} margin), over the stage's budget of "
                    f"{self.budgets[s] / MB:.0f} MB")
                continue
            if blocked:
                decision.waiting[job.name] = "behind a higher-priority job that waits (strict priority)"
                continue
            if len(admitted) >= self.max_concurrent:
                decision.waiting[job.name] = f"concurrency cap {self.max_concurrent} reached"
                continue
            loads = self.model.predict([*admitted, job])
            s = self.over_budget(loads)
            if s is not None:
                decision.waiting[job.name] = (
                    f"stage {s} would peak at ~{loads[s].bound * (1 + self.margin) / MB:.0f} MB with it "
                    f"({loads[s].describe()}, +{self.margin:.0%} margin), budget {self.budgets[s] / MB:.0f} MB")
                blocked = self.strict
                continue
            admitted.append(job)
            decision.start.append(job.name)
            decision.loads[:] = loads
        return decision


def activation_prior(meta_model: nn.Module, bounds: Sequence[tuple[int, int]],
                     element_size: int = 4) -> list[tuple[float, float, float]]:
    """A rough per-stage ``(b0, b1, b2)`` before anything is measured: per decoder layer about
    16 hidden-sized vectors per token and 3 attention maps; the head keeps the logits."""
    conf = meta_model.config  # (GPT-2's config maps hidden_size, num_attention_heads to its own names)
    n_layers = len(layout_of(meta_model).layers(meta_model))
    out = []
    for a, b in bounds:
        layers = sum(1 for u in range(a, b) if 1 <= u <= n_layers)
        per_token = layers * 16 * conf.hidden_size + (2 * conf.vocab_size if b == n_layers + 2 else 0)
        out.append((0.0, float(element_size * per_token), float(element_size * 3 * conf.num_attention_heads * layers)))
    return out


def calibration_shapes(max_seq_len: int) -> list[Shape]:
    """Three micro-batch shapes whose ``B*L`` and ``B*L^2`` are independent, up to the longest
    task's length: enough to fit all three coefficients before the first window."""
    half = max(max_seq_len // 2, 1)
    return [(1, half), (2, half), (2, max_seq_len)]


def job_request(task: TaskConfig, adapter: AdapterConfig, meta_model: nn.Module,
                bounds: Sequence[tuple[int, int]], arrival: int = 0) -> JobRequest:
    """A task as the memory model sees it (its adapter's state bytes on each stage)."""
    n_micro = task.micro_batches
    return JobRequest(task.adapter, task.micro_batch_size, n_micro,
                      task.batch_size - (n_micro - 1) * task.micro_batch_size, task.cutoff_len,
                      tuple(adapter_state_bytes(meta_model, bounds, adapter.target_modules, adapter.r,
                                                adapter.type == "dora", adapter.optimizer)),
                      task.priority, arrival)
