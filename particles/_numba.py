"""The one place that holds Numba compilation flags, caching and specialisation.

Every compiled kernel in the package is decorated through :func:`jit`, so the
flags (floating-point semantics, caching, error model) are chosen once.

Deterministic code.  Kernels compile with *no* fast-math flags: without
``reassoc``, ``contract``, ``arcp`` or ``nsz`` LLVM may only apply
value-preserving transformations, so the bits a kernel computes are fixed by
its source alone, whatever it is inlined into, however it is vectorised and
whether it was compiled in this process or loaded from the disk cache (with
``reassoc`` the shape of a vectorised sum depended on the optimisation
context: a cached entry point and a freshly compiled one rounded 1 ulp apart
per step).  Speed comes from constructions that need no licence:

* :func:`fma` is ``llvm.fma``, an exactly rounded fused multiply-add (the
  FMA instruction; a libm call on a CPU without one: slower, same bits);
* reductions in hot loops keep :data:`LANES` explicit partial sums
  (``acc[l] += w[j + l]`` for blocks of ``LANES`` elements, lanes combined
  in a fixed order, :mod:`particles.fastexp`), or vectorise across
  independent outputs (the attention rows of a tile), each summed in order:
  element-wise code that LLVM vectorises without reassociating anything.

The on-disk cache (:data:`DISK_CACHE`) is therefore on for every entry point
(functions called from Python: the runners, observables and analysis
kernels, the fields' drifts and the integrators' steps that tests and
benchmarks call, marked by :func:`cached` or ``specialize(..., cache=True)``).
A cached callee keeps its LLVM bitcode beside its object code, so a caller
compiled later still links (and may inline) it.

Composed kernels (an integrator step around a field, a runner around a step)
are built by :func:`specialize` from plain template functions whose free
global names are bound per composition.  Unlike closures, these copies can be
cached on disk: Numba keys its cache on the function's qualified name,
bytecode, signature and CPU (name and features) and on a hash of the
template's file, so the qualified name carries the composition and a hash of
every kernel source (:data:`SOURCE_HASH`: a changed kernel anywhere
invalidates every cached entry point).

Where the cache lives (:func:`cache_dir`): ``NUMBA_CACHE_DIR`` when set;
otherwise ``__pycache__`` beside the sources when writable; otherwise a
per-user directory, ``$XDG_CACHE_HOME/particles/numba`` (default
``~/.cache/particles/numba``).  A read-only cache still serves loads
(:func:`cache_load_dirs`: a filled cache in a shared software tree, a
read-only ``NUMBA_CACHE_DIR``), while new entries go to the per-user
directory (Numba alone skips a location it cannot write, recompiling every
kernel and writing them into the installation's tree).  A stale entry (other sources, CPU, Numba or
Python) is never used; a corrupted one (truncated, or failing its checksum)
is recompiled and rewritten, with one :class:`CacheWarning` per process.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import hashlib
import marshal
import os
import re
import types
import warnings
from pathlib import Path
from typing import Any

#: on-disk cache for entry points marked ``cache=True`` (see the module docstring).
DISK_CACHE = True

#: LLVM fast-math flags of every kernel: none (strict IEEE, see the module docstring).
FASTMATH: frozenset[str] = frozenset()

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
        LLVM fast-math flags; defaults to :data:`FASTMATH` (none).  Any flag
        makes results depend on the compilation context: do not.
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


class _Objmode:
    """Stands for ``numba.objmode`` until Numba is loaded (in plain Python a
    ``with objmode():`` block simply runs)."""

    def __call__(self, **types):
        return contextlib.nullcontext()

    def __repr__(self) -> str:
        return "particles._numba.objmode"


#: ``numba.objmode`` for kernels that call Python (the S^2 transforms of
#: :mod:`particles.fields.spectral`): swapped for the real one when a kernel compiles.
objmode = _Objmode()


class _Fma:
    """Stands for the compiled :func:`fma` until Numba is loaded.

    In plain Python (``py_func``, ``NUMBA_DISABLE_JIT``) it computes
    ``a * b + c`` with two roundings, not one: exact only in compiled code.
    """

    def __call__(self, a: float, b: float, c: float) -> float:
        return a * b + c

    def __repr__(self) -> str:
        return "particles._numba.fma"


#: ``fma(a, b, c) = a * b + c`` rounded once, for kernels: ``llvm.fma.f32`` when
#: all three arguments are float32, else ``llvm.fma.f64`` (a float64 result).
fma = _Fma()
_FMA_INTRINSIC = None


def _fma_intrinsic():
    """The Numba intrinsic behind :data:`fma` (made on first use)."""
    global _FMA_INTRINSIC
    if _FMA_INTRINSIC is None:
        from llvmlite import ir
        from numba.core import types as nbtypes
        from numba.extending import intrinsic

        @intrinsic
        def fma_float(typingctx, a, b, c):
            if not all(isinstance(t, (nbtypes.Float, nbtypes.Integer, nbtypes.Boolean))
                       for t in (a, b, c)):
                return None
            # float32 only when nothing is wider: a float64 or integer argument
            # (a plain literal is one) computes in float64, as arithmetic would
            single = all(t == nbtypes.float32 for t in (a, b, c))
            ty = nbtypes.float32 if single else nbtypes.float64
            sig = ty(a, b, c)

            def codegen(context, builder, signature, args):
                vals = [context.cast(builder, v, t, ty)
                        for v, t in zip(args, signature.args, strict=True)]
                flt = ir.FloatType() if single else ir.DoubleType()
                fn = builder.module.declare_intrinsic("llvm.fma", [flt],
                                                      ir.FunctionType(flt, [flt, flt, flt]))
                return builder.call(fn, vals)

            return sig, codegen

        _FMA_INTRINSIC = fma_float
    return _FMA_INTRINSIC


class _View2d:
    """``view2d(a, rows, cols)``: the first ``rows * cols`` entries of a
    contiguous 1-D array ``a`` as a C-contiguous (rows, cols) view.

    What ``a[:rows * cols].reshape((rows, cols))`` gives, without the
    general reshape's out-of-line stride computation (about 25 ns a call,
    measured: a tenth of a small system's attention step when every scratch
    view is a reshape).  Raises ValueError if ``a`` is too short or a size
    is negative.
    """

    def __call__(self, a, rows: int, cols: int):
        if rows < 0 or cols < 0 or rows * cols > a.shape[0]:
            raise ValueError("view2d: the array is too short for the view")
        return a[:rows * cols].reshape((rows, cols))

    def __repr__(self) -> str:
        return "particles._numba.view2d"


#: C-contiguous 2-D view of a 1-D scratch array (see :class:`_View2d`), for kernels.
view2d = _View2d()
_VIEW2D_INTRINSIC = None


def _view2d_intrinsic():
    """The Numba intrinsic behind :data:`view2d` (made on first use), built
    from the array-model helpers Numba's own reshape uses
    (``tests/core/test_kernel_helpers.py`` checks it on every install)."""
    global _VIEW2D_INTRINSIC
    if _VIEW2D_INTRINSIC is None:
        from numba.core import cgutils
        from numba.core import types as nbtypes
        from numba.core.imputils import impl_ret_borrowed
        from numba.extending import intrinsic
        from numba.np.arrayobj import make_array, populate_array

        @intrinsic
        def view2d_c(typingctx, a, rows, cols):
            if not (isinstance(a, nbtypes.Array) and a.ndim == 1 and a.layout == "C"
                    and isinstance(rows, nbtypes.Integer) and isinstance(cols, nbtypes.Integer)):
                return None
            ret = nbtypes.Array(a.dtype, 2, "C")
            sig = ret(a, rows, cols)

            def codegen(context, builder, signature, args):
                aryty = signature.args[0]
                ary = make_array(aryty)(context, builder, args[0])
                r = context.cast(builder, args[1], signature.args[1], nbtypes.intp)
                c = context.cast(builder, args[2], signature.args[2], nbtypes.intp)
                zero = context.get_constant(nbtypes.intp, 0)
                length = cgutils.unpack_tuple(builder, ary.shape, 1)[0]
                bad = builder.or_(builder.or_(builder.icmp_signed("<", r, zero),
                                              builder.icmp_signed("<", c, zero)),
                                  builder.icmp_signed(">", builder.mul(r, c), length))
                with builder.if_then(bad, likely=False):
                    context.call_conv.return_user_exc(
                        builder, ValueError, ("view2d: the array is too short for the view",))
                itemsize = ary.itemsize
                out = make_array(signature.return_type)(context, builder)
                populate_array(out, data=ary.data, shape=[r, c],
                               strides=[builder.mul(c, itemsize), itemsize],
                               itemsize=itemsize, meminfo=ary.meminfo, parent=ary.parent)
                return impl_ret_borrowed(context, builder, signature.return_type,
                                         out._getvalue())

            return sig, codegen

        _VIEW2D_INTRINSIC = view2d_c
    return _VIEW2D_INTRINSIC


def _take_names(wrapper, fn) -> None:
    """Give a dispatcher wrapper the names and docstring of its function."""
    for name in ("__name__", "__qualname__", "__module__", "__doc__"):
        setattr(wrapper, name, getattr(fn, name))


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
        _take_names(self, fn)

    @property
    def dispatcher(self):
        """The real Numba dispatcher (made, not compiled, on first access)."""
        if self._dispatcher is None:
            configure_cpu()  # before the first dispatcher fixes Numba's codegen
            import numba

            scope = self.py_func.__globals__
            # (this module defines no kernel: its own prange/fma stay stubs)
            for name, value in list(scope.items()):
                if value is prange:
                    scope[name] = numba.prange
                elif value is objmode:
                    scope[name] = numba.objmode
                elif value is fma and not numba.config.DISABLE_JIT:
                    scope[name] = _fma_intrinsic()
                elif value is view2d and not numba.config.DISABLE_JIT:
                    scope[name] = _view2d_intrinsic()
            opts = dict(self._opts)
            cache = opts.pop("cache", False)
            dispatcher = numba.njit(**opts)(self.py_func)
            if cache and hasattr(dispatcher, "_cache"):  # not under NUMBA_DISABLE_JIT
                dispatcher._cache = _robust_cache_class()(self.py_func)
            self._dispatcher = dispatcher
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


# -- the CPU's features and vector width -----------------------------------------------

#: the LLVM feature that the package adds on AVX-512 hosts (see :func:`configure_cpu`).
WIDE_VECTORS = "-prefer-256-bit"

_CPU_CHOICE: str | None = None


def configure_cpu() -> str:
    """Choose the CPU features Numba compiles the kernels for; once per process,
    before Numba's code generator exists (the first dispatcher makes it).

    On an AVX-512 host the features are the host's plus :data:`WIDE_VECTORS`:
    LLVM's tuning for most AVX-512 CPUs (every Intel one) carries
    ``prefer-256-bit``, which keeps loops at 256-bit vectors, half the width
    (on such a host the exponential ran 1.5x and whole steps 1.27-1.59x
    faster without it; on Zen 4 LLVM chose 512 bits already, and 256-bit code
    ran the exponential 1.3x slower there).  Elsewhere Numba's own choice
    stands.  The features go into ``NUMBA_CPU_FEATURES`` (so the processes
    this one starts compile for the same) and into Numba's configuration.

    Returns
    -------
    str
        ``"wide"`` (set as above), ``"host"`` (no AVX-512: Numba's choice),
        ``"user"`` (``NUMBA_CPU_NAME`` or ``NUMBA_CPU_FEATURES`` was set: it
        is respected, and is how to opt out) or ``"late"`` (Numba had compiled
        something before the package's first kernel: its code generator keeps
        the features it chose).

    Notes
    -----
    Numba keys its disk cache on ``(triple, CPU name, features)`` of the code
    generator that compiled an entry (``codegen.magic_tuple()``), so an entry
    made with other features, or on another CPU, is never loaded: it is
    compiled again (``tests/core/test_cpu_features.py``).  The vector width
    does not change a kernel's bits (strict IEEE code, see the module
    docstring; checked by the same tests).
    """
    global _CPU_CHOICE
    if _CPU_CHOICE is not None:
        return _CPU_CHOICE
    from numba.core import codegen, config
    from numba.core.registry import cpu_target

    if os.environ.get("NUMBA_CPU_NAME") or os.environ.get("NUMBA_CPU_FEATURES"):
        choice = "user"
    elif "_toplevel_target_context" in vars(cpu_target):
        choice = "late"
    else:
        features = codegen.get_host_cpu_features()  # (honours NUMBA_ENABLE_AVX)
        if "+avx512f" in features.split(","):
            features = f"{features},{WIDE_VECTORS}"
            # the environment too: Numba re-reads it before every compilation
            os.environ["NUMBA_CPU_FEATURES"] = config.CPU_FEATURES = features
            choice = "wide"
        else:
            choice = "host"
    _CPU_CHOICE = choice
    return choice


def compile_target() -> dict[str, str]:
    """What the kernels of this process are compiled for.

    Returns
    -------
    dict
        ``triple``, ``cpu`` (LLVM's CPU name), ``features`` (the feature
        string in the cache key) and ``choice`` (:func:`configure_cpu`).
    """
    choice = configure_cpu()
    from numba.core.registry import cpu_target

    triple, cpu, features = cpu_target.target_context.codegen().magic_tuple()
    return {"triple": triple, "cpu": cpu, "features": features, "choice": choice}


_VECTOR_BITS: int | None = None


def kernel_vector_bits() -> int:
    """The width (bits) of the vectors LLVM gives the kernels' loops here: 512,
    256 or 128, read off the machine code of a small float64 loop (compiled
    once per process)."""
    global _VECTOR_BITS
    if _VECTOR_BITS is None:
        import numpy as np

        # a copy with globals of its own: making a dispatcher swaps the stubs in
        # its function's module for the intrinsics, and this module keeps its stubs
        probe = jit(types.FunctionType(_axpy_probe.__code__, {"__builtins__": builtins}))
        a = np.zeros(64)
        probe(a, a)
        asm = probe.inspect_asm(probe.signatures[0])
        _VECTOR_BITS = 512 if "zmm" in asm else 256 if "ymm" in asm else 128
    return _VECTOR_BITS


def _axpy_probe(x, out):
    for i in range(x.shape[0]):
        out[i] = 2.0 * x[i] + 1.0


def _source_hash() -> str:
    # every module that compiles kernels imports this one; modules that do not
    # (I/O, plotting, CLI) cannot change compiled code and stay out of the key
    # (a file that only mentions this module, or reads the cache state through
    # `from particles import _numba`, compiles nothing and stays out)
    digest = hashlib.sha1()
    kernels = re.compile(rb"^\s*from particles\._numba import", re.M)
    for path in sorted(Path(__file__).parent.rglob("*.py")):
        text = path.read_bytes()
        if path.name == "_numba.py" or kernels.search(text):
            digest.update(path.name.encode())
            digest.update(text)
    return digest.hexdigest()[:12]


#: hash of the kernel sources, part of every specialised kernel's cache key.
SOURCE_HASH = _source_hash()


def opt_suffix() -> str:
    """``""`` at Numba's default optimisation level, else ``_O<level>``.

    Numba's cache key omits the optimisation level (``NUMBA_OPT``), so an
    entry compiled at another level would be served to every later process:
    code built at ``NUMBA_OPT=1`` (the test suite's, for compile time) to a
    production run.  The level goes into the qualified name instead; the
    bits do not depend on it (strict IEEE code, see the module docstring).
    """
    opt = os.environ.get("NUMBA_OPT", "").strip().lower()
    return "" if opt in ("", "3") else "_O" + re.sub(r"\W", "_", opt)


def kernel_key(fn) -> str:
    """A stable identifier of a compiled (or plain) function, for specialisation keys.

    The module and qualified name; for a function defined outside the package
    (a kernel registered by a user or a test, whose source :data:`SOURCE_HASH`
    does not cover) also a hash of its code, so that a changed definition under
    the same name is never served the compiled code of the old one.
    """
    py = getattr(fn, "py_func", fn)
    key = f"{py.__module__}.{py.__qualname__}"
    if not (py.__module__ == "particles" or py.__module__.startswith("particles.")):
        key += "_" + hashlib.sha1(marshal.dumps(py.__code__)).hexdigest()[:10]
    return key


#: longest specialisation key kept as it is; longer ones end in a hash of the rest.
MAX_KEY = 96


def specialize(template, key: str, *, parallel: bool = False, cache: bool = False,
               fastmath=FASTMATH, nogil: bool = False, **bindings):
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
    nogil : bool
        Release the GIL while it runs (a long call: other Python threads, the
        interrupt watchdog among them, go on meanwhile; the bits are the same).
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
    if len(safe) > MAX_KEY:  # nested compositions: a cache file name has 255 bytes
        safe = f"{safe[:MAX_KEY - 13]}_{hashlib.sha1(safe.encode()).hexdigest()[:12]}"
    fn.__qualname__ = f"{template.__qualname__}__{safe}__{SOURCE_HASH}{opt_suffix()}"
    fn.__module__ = template.__module__
    fn.__doc__ = template.__doc__
    return jit(fn, parallel=parallel, cache=cache and DISK_CACHE, fastmath=fastmath,
               nogil=nogil)


def cached(*, parallel: bool = False, fastmath=FASTMATH):
    """Decorator for module-level entry points called from Python: :func:`jit`
    with an on-disk cache keyed by :data:`SOURCE_HASH` when :data:`DISK_CACHE` is on.  (Numba's own
    ``cache=True`` only checks the caller's source file, so a change in a
    kernel it calls from another module would leave it stale.)

    A ``parallel`` entry point is a :class:`ByThreads` pair: called with one
    Numba thread it runs its serial compilation (``prange`` as ``range``).
    """
    if not parallel:
        return lambda fn: specialize(fn, "cached", cache=True, fastmath=fastmath)
    return lambda fn: ByThreads(specialize(fn, "cached_serial", cache=True, fastmath=fastmath),
                                specialize(fn, "cached", parallel=True, cache=True,
                                           fastmath=fastmath))


class ByThreads:
    """A parallel entry point and its serial twin, chosen per call by
    ``numba.get_num_threads()``: with one thread the serial compilation runs
    (the same bits: iterations of a ``prange`` write disjoint results, and a
    one-thread parallel region runs them in order), and a one-thread process
    (a sweep's worker) compiles no parallel region, which takes about twice as
    long to compile.  Compiled callers, attributes and ``py_func`` see the
    parallel dispatcher.
    """

    def __init__(self, serial: LazyDispatcher, parallel: LazyDispatcher) -> None:
        self.serial = serial
        self.parallel = parallel
        self.py_func = parallel.py_func
        _take_names(self, parallel.py_func)

    def __call__(self, *args, **kwargs):
        import numba

        one = numba.get_num_threads() == 1
        return (self.serial if one else self.parallel)(*args, **kwargs)

    @property
    def _numba_type_(self):
        return self.parallel._numba_type_

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.parallel, name)

    def __repr__(self) -> str:
        return f"<ByThreads {self.__qualname__}>"



# -- the disk cache ---------------------------------------------------------------

_WARNED: set[str] = set()

#: cache directory -> entries loaded from it by this process (what served the loads).
LOADS: collections.Counter[str] = collections.Counter()

#: cache directory -> entries this process wrote into it.
SAVES: collections.Counter[str] = collections.Counter()


def user_cache_dir() -> Path:
    """The per-user cache directory: ``$XDG_CACHE_HOME/particles/numba``
    (``~/.cache/particles/numba`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "particles" / "numba"


def _writable_dir(path: Path) -> bool:
    """Whether ``path`` exists (or can be made) and takes a new file."""
    import tempfile

    try:
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return False
    return True


_WRITABLE: dict[str, bool] = {}


def _writable_once(path: str) -> bool:
    """:func:`_writable_dir`, asked once per directory and process (every cached
    kernel's cache asks it)."""
    if path not in _WRITABLE:
        _WRITABLE[path] = _writable_dir(Path(path))
    return _WRITABLE[path]


def cache_dir() -> tuple[Path, str]:
    """Where the entry points of this installation write new cache entries, and why.

    Returns
    -------
    path : Path
        ``NUMBA_CACHE_DIR`` when set and writable; else ``__pycache__``
        directories beside the sources (this one is the package's top level)
        when writable and no NUMBA_CACHE_DIR is set; else :func:`user_cache_dir`.
    reason : str
        ``"NUMBA_CACHE_DIR"``, ``"in-tree"`` or ``"per-user"`` (a read-only
        ``NUMBA_CACHE_DIR`` or installation: :func:`cache_load_dirs` names it).
    """
    env = os.environ.get("NUMBA_CACHE_DIR")
    if env:
        if _writable_dir(Path(env)):
            return Path(env), "NUMBA_CACHE_DIR"
        return user_cache_dir(), "per-user"  # NUMBA_CACHE_DIR still serves loads
    tree = Path(__file__).parent / "__pycache__"
    if _writable_dir(tree):
        return tree, "in-tree"
    return user_cache_dir(), "per-user"


def cache_load_dirs() -> list[Path]:
    """Every directory entries are loaded from, in the order they are tried: the
    one :func:`cache_dir` writes to, then the preferred one when it is read-only
    (a filled cache in a shared software tree, a read-only ``NUMBA_CACHE_DIR``),
    which serves loads while new entries go to the writable one."""
    write, _ = cache_dir()
    env = os.environ.get("NUMBA_CACHE_DIR")
    preferred = Path(env) if env else Path(__file__).parent / "__pycache__"
    return [write] + ([preferred] if preferred != write and preferred.is_dir() else [])


def _warn_once(what: str, exc: BaseException) -> None:
    if "corrupt" in _WARNED:
        return
    _WARNED.add("corrupt")
    from particles.errors import CacheWarning

    warnings.warn(f"compiled-kernel cache entry unusable ({what}: {type(exc).__name__}); "
                  "recompiling it (later ones silently)", CacheWarning, stacklevel=2)


def _key_digest(key) -> str:
    """16 hex digits naming the data file of an index key (signature, target,
    code hashes: plain values whose ``repr`` is stable)."""
    return hashlib.sha256(repr(key).encode()).hexdigest()[:16]


@contextlib.contextmanager
def _index_lock(index_path: str):
    """An exclusive ``flock`` on ``<index>.lock`` where the file system has one
    (elsewhere the update runs unlocked, as Numba's does)."""
    try:
        import fcntl

        fd = os.open(index_path + ".lock", os.O_RDWR | os.O_CREAT, 0o666)
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # closing releases the lock


_ROBUST_CACHE = None


def _robust_cache_class():
    """Numba's ``FunctionCache`` with the locations of :func:`cache_dir`, a
    checksum on every data file, and corrupted entries treated as misses."""
    global _ROBUST_CACHE
    if _ROBUST_CACHE is not None:
        return _ROBUST_CACHE
    from numba.core import caching
    from numba.core import config as numba_config

    _ROBUST_CACHE = _robust_cache_of(caching, numba_config, _impl_class(caching, numba_config),
                                     _checked_file_class(caching))
    return _ROBUST_CACHE


def _impl_class(caching, numba_config):
    """Numba's ``CompileResultCacheImpl`` with the locations of :func:`cache_dir`."""

    class PerUserLocator(caching.UserWideCacheLocator):
        """``user_cache_dir()/<source dir>_<hash>`` (Numba's own user-wide
        locator uses its own application name)."""

        def __init__(self, py_func, py_file):
            super().__init__(py_func, py_file)
            self._cache_path = os.path.join(user_cache_dir(),
                                            self.get_suitable_cache_subpath(py_file))

    class Impl(caching.CompileResultCacheImpl):
        _locator_classes = (caching.UserProvidedCacheLocator, caching.InTreeCacheLocator,
                            PerUserLocator)

        def __init__(self, py_func):
            if numba_config.CACHE_DIR:
                # a NUMBA_CACHE_DIR that cannot take writes: new entries go to the
                # per-user cache, never silently into the installation's tree
                self._locator_classes = (caching.UserProvidedCacheLocator, PerUserLocator)
            super().__init__(py_func)

    return Impl


def _checked_file_class(caching):
    """Numba's ``IndexDataCacheFile`` with a checksum on every data file."""
    import pickle

    class CheckedFile(caching.IndexDataCacheFile):
        """Data files carry a SHA-256 of their payload, checked on load; the
        index is updated under a lock and data files are named by their key.

        Numba's own ``save`` reads the index, picks the first free number for
        the data file and writes both back: two processes compiling the same
        function at once (the workers of a test run, of a Dask cluster on one
        file system) both took number 1, the last index written lost the other
        entry, and the last data file written sat under the other's key.
        """

        def save(self, key, data):
            name = f"{self._index_name.removesuffix('.nbi')}.{_key_digest(key)}.nbc"
            self._save_data(name, data)  # first: an index entry never names a missing file
            with _index_lock(self._index_path):
                overloads = self._load_index()
                if overloads.get(key) != name:
                    overloads[key] = name
                    self._save_index(overloads)

        def _save_data(self, name, data):
            payload = self._dump(data)
            with self._open_for_write(self._data_path(name)) as f:
                f.write(hashlib.sha256(payload).digest())
                f.write(payload)

        def _load_data(self, name):
            with open(self._data_path(name), "rb") as f:
                raw = f.read()
            digest, payload = raw[:32], raw[32:]
            if len(raw) < 32 or hashlib.sha256(payload).digest() != digest:
                raise pickle.UnpicklingError(f"checksum mismatch in {name}")
            return pickle.loads(payload)

    return CheckedFile


def _load_paths(caching, numba_config, py_func, py_file) -> list[str]:
    """The read-only cache directory of ``py_func`` that would be used if it
    could take writes (a read-only NUMBA_CACHE_DIR, or the installation's
    ``__pycache__`` when no NUMBA_CACHE_DIR is set), which then serves loads;
    a writable one is the only cache (an empty NUMBA_CACHE_DIR is cold)."""
    if numba_config.CACHE_DIR:
        preferred = caching.UserProvidedCacheLocator(py_func, py_file).get_cache_path()
    else:
        preferred = caching.InTreeCacheLocator(py_func, py_file).get_cache_path()
    return [] if _writable_once(preferred) else [preferred]


def _robust_cache_of(caching, numba_config, impl, checked_file):
    """Numba's ``FunctionCache`` on the locations of ``impl`` and the files of
    ``checked_file``, which also loads from read-only caches and takes a
    corrupted entry for a miss."""
    import inspect

    class RobustCache(caching.FunctionCache):
        _impl_class = impl

        def __init__(self, py_func):
            super().__init__(py_func)
            old = self._cache_file
            self._cache_file = checked_file(old._cache_path, self._impl.filename_base,
                                            old._source_stamp)
            # where entries are also loaded from: the directories a read-only
            # cache may be in (a shared software tree, a read-only NUMBA_CACHE_DIR)
            self._readers = [
                checked_file(path, self._impl.filename_base, old._source_stamp)
                for path in _load_paths(caching, numba_config, py_func,
                                         inspect.getfile(py_func))
                if path != old._cache_path and os.path.isdir(path)]

        def _load_overload(self, sig, target_context):
            data = super()._load_overload(sig, target_context)
            if data is not None or not self._enabled:
                if data is not None:
                    LOADS[self._cache_path] += 1
                return data
            key = self._index_key(sig, target_context.codegen())
            for reader in self._readers:
                found = reader.load(key)
                if found is not None:
                    LOADS[reader._cache_path] += 1
                    return self._impl.rebuild(target_context, found)
            return None

        def load_overload(self, sig, target_context):
            try:
                return super().load_overload(sig, target_context)
            except Exception as exc:  # any unreadable entry is a miss
                _warn_once(self._py_func.__name__, exc)
                return None

        def save_overload(self, sig, data):
            try:
                super().save_overload(sig, data)
                SAVES[self._cache_path] += self._enabled
                return
            except Exception as exc:
                first = exc
            try:  # a corrupted index: start it afresh, once
                self._cache_file._save_index({})
                super().save_overload(sig, data)
                SAVES[self._cache_path] += self._enabled
            except Exception:
                _warn_once(self._py_func.__name__, first)

    return RobustCache


def cache_entries(path: Path | None = None) -> tuple[int, int]:
    """``(entries, bytes)`` of compiled data files (``*.nbc``) under ``path``
    (default: :func:`cache_dir`; for the in-tree cache every ``__pycache__``
    of the package)."""
    if path is None:
        path, reason = cache_dir()
        if reason == "in-tree":
            files = list(Path(__file__).parent.rglob("__pycache__/*.nbc"))
            return len(files), sum(f.stat().st_size for f in files)
    files = list(Path(path).rglob("*.nbc")) if Path(path).is_dir() else []
    return len(files), sum(f.stat().st_size for f in files)

