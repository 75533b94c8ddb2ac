"""The contract between fields and the integrators: :class:`CompiledField`.

Kept apart from the model registry (``particles.fields``) so that field
modules can build one without importing the registry that lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


class DriftSet(NamedTuple):
    """A single-head drift pair as a kernel or normalisation provides it.

    ``serial`` and ``parallel`` are ``drift(X, p, out, ws)``, ``workspace(nchunks)``
    the scratch length, ``name`` the path taken and ``blas`` whether the
    drift multiplies row blocks with BLAS (see :attr:`CompiledField.blas`).
    """

    serial: Callable
    parallel: Callable
    workspace: Callable[[int], int]
    name: str
    blas: bool = False


@dataclass(frozen=True)
class CompiledField:
    """A drift ready for the compiled integrators.

    Attributes
    ----------
    serial, parallel : numba dispatcher
        ``drift(X, p, out, ws)`` with ``X, out`` of shape (n, d) and ``ws`` a
        1-D float64 scratch array; ``parallel`` splits rows over threads.
    params : tuple
        The ``p`` argument.
    workspace : callable
        ``workspace(nchunks) -> int``, the scratch length for ``nchunks`` row
        chunks (1 for ``serial``).
    reference : callable
        ``reference(X) -> Y``, plain NumPy, shape (n, d) -> (n, d).
    name : str
        Path taken (for logs and benchmarks).
    pairwise : bool
        True when an evaluation costs O(n^2) (attention); O(n) fields (the
        Kuramoto mean field) gain nothing from splitting rows over threads.
    layer_params : callable, optional
        ``layer_params(layer) -> p``: the parameters of layer ``layer`` (random
        weights redrawn per layer); None for fields without weights.
    speed : float, optional
        Upper bound on token speeds, over every system (None: unknown, and no
        step-size warning is given).
    select : numba dispatcher, optional
        ``select(p, b) -> p_b`` when the systems of a batch have their own
        parameters (``weight_draws="independent"``): ``params`` and
        ``layer_params`` then stack the per-system entries along a leading
        batch axis, and runners hand system ``b`` its ``p_b``.  None when
        every system runs with ``params``.
    layer_time : float, optional
        Length of a layer: layer ``l`` (parameters ``layer_params(l)``) holds
        on ``[l * layer_time, (l + 1) * layer_time)``; None: one layer.
    rates : ndarray, shape (n,), optional
        Per-token bounds on the speeds (over every system), for step-size
        warnings that count the fast tokens (Kuramoto: ``|c| + |omega_i|``);
        None when one bound, :attr:`speed`, holds for all.
    blas : bool
        Whether the drift multiplies row blocks with BLAS: the engine then
        keeps BLAS single-threaded while Numba threads run (two spinning
        thread pools on two cores made a step many times slower).
    """

    serial: Callable
    parallel: Callable
    params: tuple
    workspace: Callable[[int], int]
    reference: Callable[[np.ndarray], np.ndarray]
    name: str
    pairwise: bool = True
    layer_params: Callable[[int], tuple] | None = None
    speed: float | None = None
    select: Callable | None = None
    layer_time: float | None = None
    rates: np.ndarray | None = None
    blas: bool = False
