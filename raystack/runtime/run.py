"""One way to run each part from Python: validate the config, start, step, clean up.

``raystack.edit.pretrain(cfg)``, ``raystack.mlora.finetune(cfg)`` and
``raystack.elastic.train(cfg)`` all come here. ``cfg`` may be the part's config object, a
dict or a YAML path; it is validated first (every field, before Ray is touched). By default
the call runs to the end, cleans up and returns the :class:`Result`. With ``wait=False`` it
returns a :class:`Run`, a context manager: entering starts the run's actors, ``step()``
advances it one controller step, ``result()`` runs it to the end, and leaving the ``with``
block stops every actor and removes every placement group it made (detached ones too),
whatever happened inside.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from raystack.config import config_to_dict, load_config
from raystack.runtime import registry
from raystack.runtime.controller import Controller, ControllerState, MetricsCallback, RunFailedError
from raystack.runtime.result import Result

ConfigSource = Any  # the part's config object, a dict, a YAML path, or None (the defaults)


def load_part_config(part: str, source: ConfigSource = None):
    """The part's config from an object, a dict, a YAML path or None, validated (types and
    rules; raises ConfigError naming the field)."""
    cls = registry.config_class(part)
    if isinstance(source, cls):
        return load_config(cls, config_to_dict(source))
    if source is None or isinstance(source, (Mapping, str, Path)):
        return load_config(cls, source)
    raise TypeError(f"{part}: expected a {cls.__name__}, a dict or a YAML path, got {type(source).__name__}")


class Driver(Protocol):
    """What the registry names for a part: built with the validated config (and tracking
    callbacks); ``controller`` is its kernel Controller (None before the first step)."""

    controller: Controller | None

    def __init__(self, cfg, *, callbacks: Sequence[MetricsCallback] = (), progress: bool = True) -> None: ...
    def step(self) -> ControllerState: ...
    def result(self) -> Result: ...
    def shutdown(self) -> None: ...


class Run:
    """A part's run on the connected (or an embedded) Ray cluster; a context manager."""

    def __init__(self, part: str, cfg, *, progress: bool = True, callbacks: Sequence[MetricsCallback] = (),
                 address: str | None = None, preflight: bool = True) -> None:
        self.part, self.config = part, cfg
        self.progress, self.callbacks, self.address = progress, list(callbacks), address
        self.preflight = preflight
        self.driver: Driver | None = None
        self._result: Result | None = None
        self._closed = False

    def __enter__(self) -> "Run":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """Connect to Ray and build the part's driver (its actors start on the first step)."""
        if self._closed:
            raise RuntimeError(f"{self.part} run is closed")
        if self.driver is None:
            import ray

            if self.preflight:  # files, sizes and the cluster's resources, before anything starts
                from raystack.cluster import planned_resources
                from raystack.preflight import preflight
                preflight(self.config, planned_resources(self.address))
                self.preflight = False
            if not ray.is_initialized():
                from raystack.cluster import connect
                connect(self.address)
            cls = registry.driver_class(self.part)
            self.driver = cls(self.config, callbacks=self.callbacks, progress=self.progress)

    @property
    def state(self) -> ControllerState:
        return self.driver.controller.state if self.driver is not None else ControllerState.STARTING

    @property
    def done(self) -> bool:
        return self.state.terminal

    def step(self) -> ControllerState:
        """One controller step (STARTING starts the actors)."""
        self.start()
        return self.driver.step()

    def result(self) -> Result:
        """Run to the end and return the result; if the run failed, raise the part's error (a
        RunFailedError, e.g. ElasticJobError) saying why."""
        if self._result is None:
            while not self.step().terminal:
                pass
            result = self.driver.result()  # raises if the run errored
            if self.state is ControllerState.ERRORED:  # a driver that did not: still an error
                raise RunFailedError(f"{self.part} run failed: {self.driver.controller.error}")
            self._result = result
            self.driver.controller.end(self._result)
        return self._result

    def close(self) -> None:
        """Stop the run's actors and remove its placement groups."""
        if self.driver is not None and not self._closed:
            self.driver.shutdown()
        self._closed = True


def run_part(part: str, cfg: ConfigSource = None, *, wait: bool = True, progress: bool = True,
             callbacks: Sequence[MetricsCallback] = (), address: str | None = None,
             preflight: bool = True) -> Result | Run:
    """Validate ``cfg`` for ``part``; run it to the end (``wait``) or hand back the Run.
    ``preflight=False`` skips the file and resource checks (for a caller that just ran them
    against the same cluster, as the CLI does)."""
    config = load_part_config(part, cfg)
    run = Run(part, config, progress=progress, callbacks=callbacks, address=address, preflight=preflight)
    if not wait:
        return run
    with run:
        return run.result()
