"""``rk4``: classical Runge-Kutta on the projected field, normalised after each step.

The field ``f(x)_i = P_{x_i}(y_i(x))`` extends off the sphere and leaves it
invariant, so RK4 in the ambient space followed by a normalisation (an O(h^5)
correction) keeps order 4.
"""

from __future__ import annotations

from particles._numba import kernel_key, specialize
from particles.integrators._rows import axpy_rows, normalize_rows, tangent_field

ORDER = 4
STAGES = 5

field = None  # bound by make_step


def _step(X, h, p, ws, S):
    k1, k2, k3, k4, Xt = S[0], S[1], S[2], S[3], S[4]
    field(X, p, k1, ws)
    axpy_rows(X, 0.5 * h, k1, Xt)
    field(Xt, p, k2, ws)
    axpy_rows(X, 0.5 * h, k2, Xt)
    field(Xt, p, k3, ws)
    axpy_rows(X, h, k3, Xt)
    field(Xt, p, k4, ws)
    n, d = X.shape
    c = h / 6.0
    for i in range(n):
        for a in range(d):
            X[i, a] += c * (k1[i, a] + 2.0 * k2[i, a] + 2.0 * k3[i, a] + k4[i, a])
    normalize_rows(X)


def make_step(drift):
    """Compile ``step(X, h, p, ws, S)``; X (n, d) in place, S (5, n, d) scratch."""
    return specialize(_step, kernel_key(drift), field=tangent_field(drift))
