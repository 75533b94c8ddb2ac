"""The one place that holds Numba compilation flags and specialisation.

Every compiled kernel in the package is decorated through :func:`jit`, so the
flags (fast-math subset, caching, error model) are chosen once.  ``reassoc``
and ``contract`` let LLVM vectorise reductions and fuse multiply-adds; we do
*not* allow ``nnan``/``ninf``, so NaN and infinity checks keep working.

Composed kernels (an integrator step around a field, a runner around a step)
are built by :func:`specialize` from plain template functions whose free
global names are bound per composition.  Unlike closures, these copies can be
cached on disk: Numba keys its cache on the function's qualified name and
bytecode, so the qualified name carries the composition and a hash of the
kernel sources (a changed kernel anywhere invalidates every composed cache).

On-disk caching is switched off (:data:`DISK_CACHE`): with ``reassoc`` the
rounding of a vectorised sum depends on the context LLVM optimises a kernel
in, and a process that loads a cached entry point runs different code for
the kernels it calls than a process that compiled them (measured: 1 ulp per
step, so a resumed run drifted from an uninterrupted one).  Compiling in
every process keeps every run bit-identical; the price is the compile time
of the first call in each process.  Only entry points are marked for the
cache, so that deterministic reductions (explicit vector lanes, no
``reassoc``) can switch it back on.
"""

from __future__ import annotations

import hashlib
import re
import types
from pathlib import Path
from typing import Any

#: on-disk cache for entry points marked ``cache=True`` (see the module docstring).
DISK_CACHE = False

#: fast-math flags safe for our kernels: reordering sums and FMA only.
FASTMATH = {"reassoc", "contract", "nsz", "arcp"}


def jit(*args, parallel: bool = False, cache: bool = False, fastmath=FASTMATH, **kwargs):
    """``numba.njit`` with the package's flags.

    Parameters
    ----------
    parallel : bool
        Compile ``prange`` loops as parallel regions.
    cache : bool
        Cache the compiled code on disk (module-level kernels and
        :func:`specialize` copies; never closures over dispatchers).
    fastmath : set of str
        LLVM fast-math flags; defaults to :data:`FASTMATH`.
    """
    opts = dict(parallel=parallel, cache=cache, fastmath=set(fastmath), error_model="numpy",
                **kwargs)
    if args and callable(args[0]):
        return LazyDispatcher(args[0], opts)
    if args:
        raise TypeError("jit takes a function, or keyword options only (no signatures)")
    return lambda fn: LazyDispatcher(fn, opts)


class _Prange:
    """Stands for ``numba.prange`` until Numba is loaded (plain ``range`` in Python)."""

    def __call__(self, *args: int) -> range:
        return range(*args)

    def __repr__(self) -> str:
        return "particles._numba.prange"


#: ``numba.prange`` for kernels: swapped for the real one when a kernel compiles.
prange = _Prange()


class LazyDispatcher:
    """A ``numba.njit`` dispatcher made on first use (see the module docstring).

    Calls, attribute reads (``signatures``, ``inspect_types``, ...) and typing
    by a compiling caller (``_numba_type_``) go to the real dispatcher;
    ``py_func`` is the plain function and never loads Numba.
    """

    def __init__(self, fn, opts: dict[str, Any]) -> None:
        self.py_func = fn
        self._opts = opts
        self._dispatcher = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__

    @property
    def dispatcher(self):
        """The real Numba dispatcher (made, not compiled, on first access)."""
        if self._dispatcher is None:
            import numba

            scope = self.py_func.__globals__
            for name, value in list(scope.items()):
                if value is prange:
                    scope[name] = numba.prange
            self._dispatcher = numba.njit(**self._opts)(self.py_func)
        return self._dispatcher

    @property
    def _numba_type_(self):
        return self.dispatcher._numba_type_

    def __call__(self, *args, **kwargs):
        return self.dispatcher(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __repr__(self) -> str:
        state = "loaded" if self._dispatcher is not None else "not loaded"
        return f"<LazyDispatcher {self.__qualname__} ({state})>"


def _source_hash() -> str:
    # every module that compiles kernels imports this one; modules that do not
    # (I/O, plotting, CLI) cannot change compiled code and stay out of the key
    digest = hashlib.sha1()
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        text = path.read_bytes()
        if path.name == "_numba.py" or b"particles._numba" in text:
            digest.update(path.name.encode())
            digest.update(text)
    return digest.hexdigest()[:12]


#: hash of the kernel sources, part of every specialised kernel's cache key.
SOURCE_HASH = _source_hash()


def kernel_key(fn) -> str:
    """A stable identifier of a compiled (or plain) function, for specialisation keys."""
    py = getattr(fn, "py_func", fn)
    return f"{py.__module__}.{py.__qualname__}"


def specialize(template, key: str, *, parallel: bool = False, cache: bool = False,
               fastmath=FASTMATH, **bindings):
    """Compile a copy of ``template`` with some of its global names rebound.

    Parameters
    ----------
    template : function
        Plain Python function written against module-level names (for
        example ``drift``) that ``bindings`` replace.
    key : str
        Identifies the bindings (e.g. :func:`kernel_key` of the bound kernel);
        it becomes part of the qualified name and so of the cache key.
    parallel, fastmath
        As in :func:`jit`.
    cache : bool
        Mark as an entry point called from Python, cached on disk when
        :data:`DISK_CACHE` is on (see the module docstring).
    **bindings
        Global names to rebind: compiled functions or constants.

    Returns
    -------
    numba dispatcher
        When cached, keyed on disk by template, key and :data:`SOURCE_HASH`.
    """
    # without bindings the module's live namespace serves (names defined later
    # in the module resolve at compile time); with bindings, a copy
    scope = template.__globals__
    if bindings:
        scope = {**scope, **bindings}
    fn = types.FunctionType(template.__code__, scope, template.__name__,
                            template.__defaults__, template.__closure__)
    safe = re.sub(r"\W", "_", key)
    fn.__qualname__ = f"{template.__qualname__}__{safe}__{SOURCE_HASH}"
    fn.__module__ = template.__module__
    fn.__doc__ = template.__doc__
    return jit(fn, parallel=parallel, cache=cache and DISK_CACHE, fastmath=fastmath)


def cached(*, parallel: bool = False, fastmath=FASTMATH):
    """Decorator for module-level entry points called from Python: :func:`jit`
    with an on-disk cache keyed by :data:`SOURCE_HASH` when :data:`DISK_CACHE` is on.  (Numba's own
    ``cache=True`` only checks the caller's source file, so a change in a
    kernel it calls from another module would leave it stale.)
    """
    return lambda fn: specialize(fn, "cached", parallel=parallel, cache=True, fastmath=fastmath)

