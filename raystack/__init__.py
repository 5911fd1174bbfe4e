"""raystack: train large models on cheap, mixed and unreliable clusters, on Ray.

One namespace, three layers (dependencies point ``apps -> actors -> raystack``):
``raystack.*`` the library (algorithms, configs, data, models), ``raystack.actors`` the Ray
actors and the controllers that own them, ``raystack.apps`` the entry points. In the source
tree the last two are the top-level folders ``actors/`` and ``apps/``; an installed wheel
holds them as ``raystack/actors`` and ``raystack/apps``.
"""
from pathlib import Path as _Path

from raystack.log import configure_logging as _configure_logging
from raystack.log import level_from_env as _level_from_env

__version__ = "0.1.0"

if _level_from_env():  # RAYSTACK_LOG_LEVEL=INFO: this process (a driver or an actor) logs at it
    _configure_logging()

# A source checkout (or a `ray job submit --working-dir .` copy of one): let
# `raystack.actors` and `raystack.apps` resolve to the folders beside this package.
_root = _Path(__file__).resolve().parent.parent
if not _Path(__file__).resolve().parent.joinpath("actors").is_dir() and \
        _root.joinpath("actors", "__init__.py").is_file():
    __path__.append(str(_root))  # noqa: F821  (a package's __path__)
