"""The contract between fields and the integrators: :class:`CompiledField`.

Kept apart from the model registry (``particles.fields``) so that field
modules can build one without importing the registry that lists them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


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
