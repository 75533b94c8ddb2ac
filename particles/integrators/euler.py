"""``euler``: the discrete Transformer layer ``x_i <- normalize(x_i + h y_i)``.

Exactly the residual update plus layer normalisation of the papers' code, with
the *unprojected* attention output ``y_i = sum_j A_ij V x_j``.  First order for
the flow ``dx_i/dt = P_{x_i}(y_i)`` since ``normalize(x + h y) = x + h P_x(y) + O(h^2)``.
"""

from __future__ import annotations

from particles._numba import kernel_key, specialize
from particles.integrators._rows import axpy_rows, normalize_rows

ORDER = 1
STAGES = 1

drift = None  # bound by make_step


def _step(X, h, p, ws, S):
    Y = S[0]
    drift(X, p, Y, ws)
    axpy_rows(X, h, Y, X)
    normalize_rows(X)


def make_step(drift):
    """Compile the step ``step(X, h, p, ws, S)`` for a drift; X (n, d) in place, S (1, n, d)."""
    return specialize(_step, kernel_key(drift), drift=drift)
