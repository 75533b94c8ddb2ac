"""The one place that holds Numba compilation flags.

Every compiled kernel in the package is decorated through :func:`jit`, so the
flags (fast-math subset, caching, error model) are chosen once.  ``reassoc``
and ``contract`` let LLVM vectorise reductions and fuse multiply-adds; we do
*not* allow ``nnan``/``ninf``, so NaN and infinity checks keep working.
"""

from __future__ import annotations

import numba

#: fast-math flags safe for our kernels: reordering sums and FMA only.
FASTMATH = {"reassoc", "contract", "nsz", "arcp"}


def jit(*args, parallel: bool = False, cache: bool = False, fastmath=FASTMATH, **kwargs):
    """``numba.njit`` with the package's flags.

    Parameters
    ----------
    parallel : bool
        Compile ``prange`` loops as parallel regions.
    cache : bool
        Cache the compiled code on disk (only for module-level kernels that
        do not close over other dispatchers).
    fastmath : set of str
        LLVM fast-math flags; defaults to :data:`FASTMATH`.
    """
    opts = dict(parallel=parallel, cache=cache, fastmath=set(fastmath), error_model="numpy",
                **kwargs)
    if args and callable(args[0]):
        return numba.njit(**opts)(args[0])
    return numba.njit(*args, **opts)


prange = numba.prange
