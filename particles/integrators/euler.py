"""``euler``: the discrete Transformer layer ``x_i <- normalize(x_i + h y_i)``.

Exactly the residual update plus layer normalisation of the papers' code, with
the *unprojected* attention output ``y_i = sum_j A_ij V x_j``.  First order for
the flow ``dx_i/dt = P_{x_i}(y_i)`` since ``normalize(x + h y) = x + h P_x(y) + O(h^2)``.
"""

from __future__ import annotations

from particles._numba import kernel_key, specialize
from particles.integrators._rows import axpy_rows
from particles.sphere.rows import normalize_rows

ORDER = 1
STRONG_ORDER = None
SPACES = ("sphere",)
STAGES = 1
#: drift evaluations of one step
EVALUATIONS = 1

drift = None  # bound by make_step


def _step(X, t, h, p, ws, S, key, counter):
    Y = S[0]
    drift(X, p, Y, ws)
    axpy_rows(X, h, Y, X)
    normalize_rows(X)


def make_step(drift, space: str = "sphere"):
    """Compile ``step(X, t, h, p, ws, S, key, counter)`` for a drift; X (n, d) in
    place, S (1, n, d).  Deterministic: ``t``, ``key`` and ``counter`` are unused."""
    if space not in SPACES:
        raise ValueError(f"euler is a sphere integrator (the layer normalises), got {space!r}")
    return specialize(_step, kernel_key(drift), cache=True, drift=drift)
