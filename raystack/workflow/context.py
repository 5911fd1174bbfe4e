"""What a run gives its steps: its id, its own scratch space, where files go, what may be deleted.

A step function that declares a parameter named ``run_context`` receives the run's
:class:`RunContext` (a workflow file or a plan cannot set it: the name is reserved). Deleting
files is confined: :func:`deletable` accepts a path only inside the run's scratch directory or
inside a path the user listed in the workflow *config* (``delete_paths``), never one that a
prompt or an IR file names on its own.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from raystack.runtime.storage import new_run_id

RUN_CONTEXT_PARAM = "run_context"
STATUS_PARAM = "workflow_status"
RESERVED_PARAMS = (RUN_CONTEXT_PARAM, STATUS_PARAM)


class ConfinementError(PermissionError):
    """A step tried to change something outside what the run may touch."""


@dataclass(frozen=True)
class RunContext:
    """One run of one workflow, as its steps see it."""

    workflow: str
    run_id: str
    scratch_dir: str                      # the run's own scratch space (created at run start)
    out_dir: str                          # files written by steps go under here, per step
    delete_paths: tuple[str, ...] = ()    # from the user's config only
    status: str = ""                      # "succeeded" / "failed" for exit handlers
    tiny: bool = False                    # a dry run: part steps shrink to tiny sizes
    step_id: str = ""                     # the step being run (set per step by the engine)
    step_key: str = ""                    # its cache key, when it has one

    def step_dir(self) -> str:
        """A directory for the current step's files: one per cache key when the step has one
        (a re-run with other inputs never writes over an earlier run's files), else per run."""
        sid = self.step_id or "step"
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in sid)
        tag = self.step_key[:12] if self.step_key else self.run_id
        d = Path(self.out_dir) / self.workflow / f"{safe}-{tag}"
        d.mkdir(parents=True, exist_ok=True)
        return str(d)

    def for_step(self, step_id: str, key: str | None) -> "RunContext":
        return replace(self, step_id=step_id, step_key=key or "")

    def with_status(self, status: str) -> "RunContext":
        return replace(self, status=status)


def new_context(workflow: str, scratch_root: str | None = None, out_dir: str | None = None,
                delete_paths: tuple[str, ...] | list[str] = (), tiny: bool = False) -> RunContext:
    """A fresh run: a new id (the same kind every part's run folder gets) and an empty scratch
    directory of its own."""
    run_id = new_run_id()
    if scratch_root is None:
        scratch = tempfile.mkdtemp(prefix=f"raystack-{workflow[:20]}-{run_id}-")
    else:
        scratch = str(Path(scratch_root).resolve() / f"{workflow}-{run_id}")
        os.makedirs(scratch, exist_ok=True)
    out = str(Path(out_dir or os.path.join(scratch, "out")).resolve())
    for p in delete_paths:
        check_delete_root(p)
    return RunContext(workflow, run_id, scratch, out,
                      tuple(str(Path(p).resolve()) for p in delete_paths), tiny=tiny)


def check_delete_root(path: str) -> None:
    """Refuse a configured deletable path that would expose a whole tree (/, home, cwd)."""
    p = Path(path).resolve()
    forbidden = {Path("/"), Path.home().resolve(), Path.cwd().resolve()}
    if p in forbidden or len(p.parts) < 3:
        raise ConfinementError(f"delete_paths: {path!r} is too broad to allow deletions in "
                               "(name a dedicated directory, at least two levels below /)")


def deletable(path: str, ctx: RunContext) -> Path:
    """The resolved path if the run may delete it, else ConfinementError naming the rule.

    Relative paths are taken inside the run's scratch directory. Symbolic links are resolved
    first, so a link cannot lead a deletion outside.
    """
    scratch = Path(ctx.scratch_dir).resolve()
    p = (scratch / path).resolve() if not os.path.isabs(path) else Path(path).resolve()
    roots = [scratch, *(Path(r).resolve() for r in ctx.delete_paths)]
    for root in roots:
        if p == root or root in p.parents:
            return p
    raise ConfinementError(
        f"may not delete {str(p)!r}: deletions are confined to the run's scratch space "
        f"({scratch}) and to the paths listed in the workflow config's delete_paths")
