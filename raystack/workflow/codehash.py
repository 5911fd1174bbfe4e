"""The code a step reaches, as one hash: the cache key's code part.

A step's fingerprint covers its own source and, transitively, the source of every function and
class it reaches by name within *own* code (raystack itself and the user's modules: anything not
installed under site-packages or the standard library), the values of simple module constants
it reads, and the versions of the installed libraries it touches (``numpy==2.1.0``). So an edit
to a helper changes the fingerprint of exactly the steps that call it, directly or through other
helpers, and upgrading a library changes the steps that use it. Names are found in the compiled
code (``co_names``, nested code objects, closures), not by running anything.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import linecache
import sys
import sysconfig
import textwrap
import types
from functools import lru_cache
from typing import Any, Callable

_LIB_DIRS = tuple({sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib", "platstdlib")})
_OWN_TOP = ("raystack",)
_SIMPLE = (int, float, str, bytes, bool, type(None))


def is_own_module(name: str) -> bool:
    """True for raystack's and the user's modules (hashed by source), False for libraries."""
    if name.split(".")[0] in _OWN_TOP or name == "__main__":
        return True
    mod = sys.modules.get(name)
    path = getattr(mod, "__file__", None)
    if mod is None or path is None:
        return name not in sys.builtin_module_names and mod is None
    return not str(path).startswith(_LIB_DIRS)


@lru_cache(maxsize=None)
def library_version(top: str) -> str:
    """``name==version`` of the distribution providing top-level package ``top`` ('' if none)."""
    if top in sys.builtin_module_names or top in getattr(sys, "stdlib_module_names", ()):
        return ""
    try:
        dists = importlib.metadata.packages_distributions().get(top, [top])
        return f"{dists[0]}=={importlib.metadata.version(dists[0])}"
    except (importlib.metadata.PackageNotFoundError, IndexError):
        return ""


@lru_cache(maxsize=8192)
def _source_of(path: str, mtime_ns: int, module: str, qualname: str, target: Any) -> bytes:
    """The source of ``target`` as the file at ``path`` holds it at ``mtime_ns`` (memoised:
    finding a class's source parses its whole module)."""
    linecache.checkcache(path)  # the file may have been edited since it was read
    return textwrap.dedent(inspect.getsource(target)).encode()


def _source(obj: Any) -> bytes:
    target = inspect.unwrap(obj) if callable(obj) else obj
    try:
        path = inspect.getsourcefile(target)
        if path:
            import os
            return _source_of(path, os.stat(path).st_mtime_ns, getattr(target, "__module__", ""),
                              getattr(target, "__qualname__", ""), target)
        return textwrap.dedent(inspect.getsource(target)).encode()
    except (OSError, TypeError):
        code = getattr(target, "__code__", None)
        if code is not None:
            return code.co_code + repr(code.co_consts).encode()
        return repr(target).encode()


def _code_objects(code: types.CodeType):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _code_objects(c)


def _names(fn: Any) -> tuple[set[str], dict[str, Any]]:
    """(global/attribute names the code uses, closure values by name)."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return set(), {}
    names = {n for c in _code_objects(code) for n in c.co_names}
    closure = {}
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        try:
            closure[name] = cell.cell_contents
        except ValueError:  # empty cell
            pass
    return names, closure


class _Walker:
    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.parts: list[bytes] = []
        self.libs: set[str] = set()

    def lib(self, obj: Any) -> None:
        mod = getattr(obj, "__module__", None) or getattr(obj, "__name__", "")
        if isinstance(obj, types.ModuleType):
            mod = obj.__name__
        top = str(mod).split(".")[0]
        v = library_version(top) if top else ""
        if v:
            self.libs.add(v)

    def visit(self, obj: Any, names: set[str] | None = None) -> None:
        """Add ``obj`` (a function, class or module) and what it reaches."""
        if isinstance(obj, types.ModuleType):
            if not is_own_module(obj.__name__):
                self.lib(obj)
                return
            for n in sorted(names or ()):  # the module's attributes this code uses
                if n in vars(obj):
                    self.value(f"{obj.__name__}.{n}", vars(obj)[n], names)
            return
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        module = getattr(obj, "__module__", None) or ""
        if not is_own_module(module):
            self.lib(obj)
            return
        self.parts.append(f"{module}:{getattr(obj, '__qualname__', '')}\n".encode() + _source(obj))
        if inspect.isclass(obj):
            members = [m for m in vars(obj).values()
                       if inspect.isfunction(m) or isinstance(m, (staticmethod, classmethod, property))]
            for m in members:
                f = getattr(m, "__func__", None) or getattr(m, "fget", None) or m
                self.follow(f)
            return
        self.follow(obj)

    def follow(self, fn: Any) -> None:
        names, closure = _names(fn)
        glb = getattr(inspect.unwrap(fn), "__globals__", {})
        for n in sorted(names):
            if n in glb:
                self.value(n, glb[n], names)
        for n, v in closure.items():
            self.value(n, v, names)

    def value(self, name: str, v: Any, names: set[str]) -> None:
        if isinstance(v, types.ModuleType):
            self.visit(v, names)
        elif inspect.isfunction(v) or inspect.isclass(v) or inspect.ismethod(v):
            self.visit(v)
        elif isinstance(v, _SIMPLE) or (isinstance(v, (tuple, frozenset)) and
                                        all(isinstance(x, _SIMPLE) for x in v)):
            self.parts.append(f"{name}={v!r}\n".encode())
        elif callable(v):
            self.lib(v)


def code_fingerprint(fn: Callable) -> str:
    """A hash of the code ``fn`` reaches (own source, transitively) and the library versions it
    touches; independent of line numbers and file location."""
    w = _Walker()
    w.visit(fn)
    if not w.parts:  # a library function as a step: its own identity
        w.parts.append(f"{getattr(fn, '__module__', '')}:{getattr(fn, '__qualname__', repr(fn))}".encode())
    h = hashlib.sha256()
    for p in w.parts:
        h.update(p)
        h.update(b"\x00")
    for v in sorted(w.libs):
        h.update(v.encode())
    h.update(f"python{sys.version_info.major}.{sys.version_info.minor}".encode())
    return h.hexdigest()[:16]
