"""``rk4``: classical Runge-Kutta.

On the sphere it acts on the projected field and normalises after each step:
the field ``f(x)_i = P_{x_i}(y_i(x))`` extends off the sphere and leaves it
invariant, so RK4 in the ambient space followed by a normalisation (an O(h^5)
correction) keeps order 4.  In a flat space (the angle form on the circle)
it is plain RK4 on the drift: no projection, no normalisation.
"""

from __future__ import annotations

from particles._numba import kernel_key, specialize
from particles.integrators._rows import axpy_rows, space_field
from particles.sphere.rows import normalize_rows

ORDER = 4
STRONG_ORDER = None
SPACES = ("sphere", "flat")
STAGES = 5
#: drift evaluations of one step
EVALUATIONS = 4

field = None  # bound by make_step
NORMALIZE = True  # bound by make_step: False in a flat space


def _step(X, t, h, p, ws, S, key, counter):
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
    if NORMALIZE:
        normalize_rows(X)


def make_step(drift, space: str = "sphere"):
    """Compile ``step(X, t, h, p, ws, S, key, counter)``; X (n, d) in place,
    S (5, n, d) scratch.  Deterministic: ``t``, ``key`` and ``counter`` are unused."""
    return specialize(_step, f"{kernel_key(drift)}_{space}", cache=True,
                      field=space_field(drift, space), NORMALIZE=space == "sphere")
