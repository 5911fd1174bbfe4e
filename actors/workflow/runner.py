"""Run a workflow IR on Ray: one plain ``ray.remote`` task per step, ObjectRefs as edges.

Ray starts each task when its input ObjectRefs are ready, so independent steps run at once
up to the cluster's resources. Each task calls :func:`raystack.workflow.engine.execute_step`
(cache lookup, ``when`` conditions and ``while`` loops decided at run time, the step's
timeout); retries are Ray's own (``max_retries`` with ``retry_exceptions``), and a step whose
worker or node is lost is retried even when its ``retries`` is 0 (``NODE_LOSS_RETRIES`` times). Before submitting,
the driver walks the graph and leaves out every step whose artifact is already stored and
intact, so an unchanged re-run submits nothing. Large workflows are split into parts, each
run by its own :class:`WorkflowRunner` actor; a runner lost with its node is replaced and its
part runs again, served from the cache up to where it stopped.
"""

from __future__ import annotations

import sys
import sysconfig
import time
from dataclasses import replace
from typing import Any, Callable, Sequence

import ray

from raystack import metrics
from raystack.workflow.api import validate
from raystack.workflow.context import RunContext, new_context
from raystack.workflow.engine import (RunReport, StepFailed, StepResult, cacheable,
                                      children_count, execute_step, runner_kwargs, step_key,
                                      with_code_hashes)
from raystack.workflow.eviction import POLICIES
from raystack.workflow.functions import resolve
from raystack.workflow.ir import StepSpec, WorkflowIR, topo_order
from raystack.workflow.split import split, sub_workflow
from raystack.workflow.store import ArtifactStore

_SITE = (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"])
NODE_LOSS_RETRIES = 2  # runs of a step again after its worker or node died (not its own errors)
RUNNER_RESTARTS = 2  # times a part runs again after its runner was lost
_OURS = ("raystack", "actors", "apps")


def _pickle_by_value_if_needed(fn: Callable) -> None:
    """Functions from user files, notebooks or tests travel by value (workers can't import them)."""
    mod = sys.modules.get(fn.__module__)
    if mod is None or fn.__module__.split(".")[0] in _OURS:
        return
    path = getattr(mod, "__file__", None) or ""
    if fn.__module__ == "__main__" or not path.startswith(_SITE):
        try:
            ray.cloudpickle.register_pickle_by_value(mod)
        except (ValueError, TypeError):
            pass


def prepare_functions(ir: WorkflowIR, functions: dict[str, Callable] | None = None,
                      allow: Sequence[str] = ()) -> dict[str, Callable]:
    """Every step function of ``ir`` resolved here (catalog, registry or ``allow``ed modules
    only), ready to ship to workers and runners: they never import a function by name."""
    out = {}
    registry = ir.registry(functions)
    for s in ir.steps:
        if s.fn not in out:
            out[s.fn] = resolve(s.fn, registry, allow)
            _pickle_by_value_if_needed(out[s.fn])
    return out


def _ray_tuner(fn: Callable, kwargs: dict, spec, call) -> tuple[Any, dict]:
    from raystack.actors.workflow.tune import search_step
    return search_step(fn, kwargs, spec)


@ray.remote
def _step_task(spec: StepSpec, fn: Callable, store: ArtifactStore | None, reuse: int,
               extra: dict, context: RunContext | None, *inputs: StepResult) -> StepResult:
    """One step as a Ray task; ``inputs`` arrive resolved from upstream ObjectRefs."""
    if "torch" in sys.modules:  # steps share few cores: keep torch to one thread
        sys.modules["torch"].set_num_threads(1)
    try:
        return execute_step(spec, fn, {r.step: r for r in inputs}, store, reuse=reuse,
                            extra=extra, context=context, tuner=_ray_tuner)
    except StepFailed:
        raise
    except Exception as e:  # noqa: BLE001 - name the step in the error Ray reports
        raise StepFailed(spec.id, f"{type(e).__name__}: {e}") from e


_STEP_STATES = metrics.gauge("workflow_steps", "Workflow steps by state in the latest run",
                             tag_keys=("workflow", "state"))
_EXECUTED = metrics.counter("workflow_steps_executed", "Workflow steps executed (cache misses)",
                            tag_keys=("workflow",))


def known_from_cache(ir: WorkflowIR, store: ArtifactStore | None, verify: bool = True,
                     given: dict[str, StepResult] | None = None,
                     functions: dict[str, Callable] | None = None) -> dict[str, StepResult]:
    """Steps whose result is already stored (and intact), found without running anything.

    A step is known when every upstream step is known, it has no side effect, and its key is
    stored. Corrupted or refused artifacts are deleted here so the step recomputes.
    """
    known: dict[str, StepResult] = dict(given or {})
    if store is None:
        return known
    by_id = ir.by_id()
    for sid in topo_order(ir, set(known)):
        spec = by_id[sid]
        fn = (functions or {}).get(spec.fn)
        if spec.exit is not None or not cacheable(spec, fn) or sid in known:
            continue
        if any(d not in known for d in spec.deps()):
            continue
        key = step_key(spec, known)
        m = store.meta(key) if key else None
        if m is None:
            continue
        if verify and not store.verify(key):
            store.delete(key)
            continue
        upstream = sum(known[d].cost_s for d in spec.deps())
        known[sid] = StepResult(sid, "cached", key, m.digest, cost_s=m.compute_s + upstream)
    return known


def _options(spec: StepSpec, workflow: str) -> dict[str, Any]:
    r = dict(spec.resources)
    # Ray retries a task whose worker or node died up to max_retries, its own exceptions too
    # with retry_exceptions: a step without retries of its own still survives a lost node
    retries = spec.retries if spec.retries > 0 else NODE_LOSS_RETRIES
    opts: dict[str, Any] = {"name": f"{workflow}:{spec.id}", "max_retries": retries,
                            "retry_exceptions": spec.retries > 0, "num_cpus": r.pop("num_cpus", 1)}
    if "num_gpus" in r:
        opts["num_gpus"] = r.pop("num_gpus")
    if "memory" in r:
        opts["memory"] = int(r.pop("memory"))
    if r:
        opts["resources"] = r
    return opts


def _submit(ir: WorkflowIR, functions: dict[str, Callable], store: ArtifactStore | None,
            given: dict[str, StepResult], reuse: dict[str, int],
            context: RunContext | None) -> tuple[dict, dict]:
    """Submit every main step that is not already known; returns (known, step id -> ref)."""
    known = known_from_cache(ir, store, given=given, functions=functions)
    by_id = ir.by_id()
    fn_refs: dict[str, Any] = {}
    store_ref = ray.put(store)
    refs: dict[str, Any] = {}
    for sid in topo_order(ir, set(given)):
        spec = by_id[sid]
        if spec.exit is not None or sid in known:
            continue
        if spec.fn not in fn_refs:
            fn = functions[spec.fn]
            _pickle_by_value_if_needed(fn)
            fn_refs[spec.fn] = ray.put(fn)
        args = [refs[d] if d in refs else known[d] for d in spec.deps()]
        refs[sid] = _step_task.options(**_options(spec, ir.name)).remote(
            spec, fn_refs[spec.fn], store_ref, reuse.get(sid, 1), {}, context, *args)
    return known, refs


def _collect(refs: dict[str, Any], progress: Any = None,
             on_batch: Callable[[dict, dict, int], None] | None = None) -> tuple[dict, dict]:
    """Wait for the submitted steps; returns (results, failures: step id -> error text).

    ``on_batch(results, failed, pending)`` is called after each batch of finished steps.
    """
    results: dict[str, StepResult] = {}
    failed: dict[str, str] = {}
    by_ref = {r: sid for sid, r in refs.items()}
    pending = list(refs.values())
    while pending:
        # Block for the first finished step only, then take every other one already done:
        # waiting for many returns would hold finished steps until the timeout.
        ready, pending = ray.wait(pending, num_returns=1, timeout=0.5)
        if ready and pending:
            more, pending = ray.wait(pending, num_returns=len(pending), timeout=0)
            ready += more
        for r in ready:
            sid = by_ref[r]
            try:
                results[sid] = ray.get(r)
            except ray.exceptions.RayTaskError as e:
                cause = e.cause if isinstance(getattr(e, "cause", None), StepFailed) else None
                if cause is not None and cause.step == sid:
                    failed[sid] = cause.error
                elif cause is None:
                    failed[sid] = str(e).strip().splitlines()[-1]
            except (ray.exceptions.RayError,) as e:  # worker crash after retries, cancelled
                failed[sid] = f"{type(e).__name__}: {e}"
            if progress is not None:
                progress.update(1)
        if ready and on_batch is not None:
            on_batch(results, failed, len(pending))
    return results, failed


@ray.remote(num_cpus=0)
class WorkflowRunner:
    """Runs one sub-workflow (a part of a split workflow) as Ray tasks it owns."""

    def run_part(self, ir_dict: dict, functions: dict[str, Callable],
                 store: ArtifactStore | None, given: dict[str, StepResult],
                 reuse: dict[str, int], context: RunContext | None = None) -> tuple[dict, dict]:
        ir = WorkflowIR.from_dict(ir_dict)
        if any(not s.code_hash for s in ir.steps):  # keys need the code the steps reach
            ir = with_code_hashes(ir, functions)
        known, refs = _submit(ir, functions, store, given, reuse, context)
        results, failed = _collect(refs)
        own = {k: v for k, v in known.items() if k not in given}
        results.update(own)
        if store is not None:  # the values stay in the store; ship only keys and digests
            results = {k: replace(v, value=None, has_value=False) for k, v in results.items()}
        return results, failed


def run_workflow(ir: WorkflowIR, *, functions: dict[str, Callable] | None = None,
                 store: ArtifactStore | None = None, progress: bool = True,
                 split_budget: int | None = None, max_runners: int = 4,
                 eviction: str = "couler", allow: Sequence[str] = (),
                 context: RunContext | None = None) -> RunReport:
    """Run ``ir`` on the connected Ray cluster; returns the RunReport.

    ``store``: the artifact store (None disables caching). ``split_budget``: above this many
    steps the workflow is split into parts, each run by a WorkflowRunner actor. ``allow``:
    modules beyond the catalog whose functions the IR may name. ``context``: the run's scratch
    space, output directory and deletable paths (default: a fresh temporary scratch space).
    """
    if not ray.is_initialized():
        from raystack.cluster import connect
        connect()
    t0 = time.perf_counter()
    validate(ir, functions, allow=allow)
    functions = prepare_functions(ir, functions, allow)
    ir = with_code_hashes(ir, functions)
    context = context or new_context(ir.name)
    reuse = children_count(ir)
    main = ir.main_steps()
    bar = _bar(len(main), ir.name) if progress else None
    if split_budget is not None and len(main) > split_budget:
        results, failed = _run_split(ir, functions, store, reuse, split_budget, max_runners, bar,
                                     context)
    else:
        known, refs = _submit(ir, functions, store, {}, reuse, context)
        if bar is not None:
            bar.update(len(known))

        def live_states(done: dict, failed_now: dict, pending: int) -> None:
            _set_step_states(ir.name, {**known, **done}, failed_now, pending)
        live_states({}, {}, len(refs))
        results, failed = _collect(refs, bar, on_batch=live_states)
        results = {**known, **results}
    if bar is not None:
        bar.close()
    status = "failed" if failed else "succeeded"
    exits = _run_exits(ir, functions, results, status, failed, context)
    rep = RunReport(ir.name, status, results, failed, time.perf_counter() - t0, store, exits,
                    context)
    _record_metrics(rep)
    if store is not None:
        used = [r.key for r in results.values() if r.key and r.status in ("cached", "done")]
        store.touch(used)
        store.enforce(POLICIES[eviction](), protect=used)
    return rep


def _run_split(ir, functions, store, reuse, budget, max_runners, bar,
               context) -> tuple[dict, dict]:
    parts = split(ir, max_steps=budget)
    runners = [WorkflowRunner.remote() for _ in range(min(max_runners, len(parts)))]
    results: dict[str, StepResult] = {}
    failed: dict[str, str] = {}
    done: set[int] = set()
    running: dict[Any, tuple[int, Any]] = {}
    free = list(runners)
    todo = list(parts)
    lost: dict[int, int] = {}  # part -> runs lost with their runner
    by_id = ir.by_id()
    try:
        while todo or running:
            for p in [p for p in todo if p.depends_on <= done][: len(free)]:
                todo.remove(p)
                sub = sub_workflow(ir, p)
                need = {d for s in p.steps for d in by_id[s].deps() if d not in set(p.steps)}
                if any(d in failed or d not in results for d in need):
                    done.add(p.index)  # upstream failed: this part cannot run
                    continue
                r = free.pop()
                ref = r.run_part.remote(sub.to_dict(), functions, store,
                                        {d: results[d] for d in need}, reuse, context)
                running[ref] = (p, r)
            if not running:
                if todo and not any(p.depends_on <= done for p in todo):
                    break
                continue
            ready, _ = ray.wait(list(running), num_returns=1)
            p, r = running.pop(ready[0])
            try:
                part_results, part_failed = ray.get(ready[0])
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
                # the runner (or its node) was lost: a new runner runs the part again, and the
                # steps it had finished are served from the cache
                ray.kill(r)
                lost[p.index] = lost.get(p.index, 0) + 1
                if lost[p.index] > RUNNER_RESTARTS:
                    failed.update({s: f"runner lost {lost[p.index]} times: {type(exc).__name__}" for s in p.steps})
                    done.add(p.index)
                else:
                    todo.insert(0, p)
                runners.append(WorkflowRunner.remote())
                free.append(runners[-1])
                continue
            results.update(part_results)
            failed.update(part_failed)
            done.add(p.index)
            free.append(r)
            if bar is not None:
                bar.update(len(part_results) + len(part_failed))
    finally:
        for r in runners:
            ray.kill(r)
    return results, failed


def _run_exits(ir, functions, results, status, failed, context) -> dict[str, StepResult]:
    out = {}
    refs = {}
    for spec in ir.exit_steps():
        if spec.exit == "always" or (spec.exit == "failure") == bool(failed):
            fn = functions[spec.fn]
            _pickle_by_value_if_needed(fn)
            args = [results[d] for d in spec.deps() if d in results]
            refs[spec.id] = _step_task.options(**_options(spec, ir.name)).remote(
                spec, fn, None, 1, runner_kwargs(fn, context.for_step(spec.id, None), status),
                context, *args)
    got, errs = _collect(refs)
    out.update(got)
    failed.update(errs)
    return out


def _bar(total: int, name: str):
    try:
        from tqdm import tqdm
        return tqdm(total=total, desc=f"workflow {name}", unit="step", leave=False)
    except ImportError:  # pragma: no cover
        return None


def _set_step_states(name: str, results: dict[str, StepResult], failed: dict[str, str],
                     pending: int) -> None:
    """The dashboard's step-state gauges: pending, executed, cached, skipped, failed."""
    counts = {"pending": pending, "executed": 0, "cached": 0, "skipped": 0, "failed": len(failed)}
    for r in results.values():
        state = "executed" if r.status == "done" else r.status
        if state in counts:
            counts[state] += 1
    for state, n in counts.items():
        _STEP_STATES.set(n, tags={"workflow": name, "state": state})


def _record_metrics(rep: RunReport) -> None:
    _set_step_states(rep.name, rep.results, rep.failed, 0)
    _EXECUTED.inc(len(rep.executed), tags={"workflow": rep.name})
