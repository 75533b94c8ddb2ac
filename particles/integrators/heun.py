"""``heun``: stochastic Heun on great circles (Stratonovich), the default with noise.

For ``dX_i = f_i dt + sigma P_{X_i} o dB_i`` on the sphere, with ``dB = sqrt(h) xi``:

    v1 = h P_x f(x) + sigma P_x dB,          x_p = exp_x(v1),
    v2 = h P_{x_p} f(x_p) + sigma P_{x_p} dB,
    x' = exp_x((v1 + P_x v2) / 2).

Every stage moves along great circles, so norms stay 1 to round-off.  Without
noise it is the exponential-map Heun (trapezoidal) rule, order 2.  With noise
the mean increment is ``h P_x f`` plus the exponential map's curvature term,
``-(d - 1) sigma^2 h x / 2``: the Ito drift of Brownian motion on S^{d-1}.
Strong order 1/2 on the sphere (the noise fields do not commute: no
increment-only scheme does better), with a smaller error constant than
:mod:`~particles.integrators.em`.

In a flat space (the circle's angle form, additive noise) it is the
stochastic Heun method,

    theta_p = theta + h f(theta) + sigma dW,
    theta' = theta + h (f(theta) + f(theta_p)) / 2 + sigma dW,

strong order 1 (order 2 in the drift).  ``sigma`` is the last entry of ``p``.
"""

from __future__ import annotations

from functools import cache

from particles._numba import kernel_key, specialize
from particles.integrators._rows import space_field, tangent_increment
from particles.integrators.noise import make_noisy_step
from particles.sphere.rows import exp_map_rows, project_rows

ORDER = 2
STRONG_ORDER = 0.5
#: strong order per space: additive noise on the angle form gives order 1.
STRONG_ORDERS = {"sphere": 0.5, "flat": 1.0}
SPACES = ("sphere", "flat")
STAGES = 4
#: drift evaluations of one step
EVALUATIONS = 2

field = None  # bound by make_increment_step
SPHERE = True  # bound by make_increment_step
advance = None  # bound by make_step


def _advance(X, t, h, p, ws, S, dW):
    v1, Xp, v2 = S[0], S[1], S[2]
    n, d = X.shape
    field(X, p, v1, ws)
    if SPHERE:
        tangent_increment(X, h, v1, dW, v1)
        exp_map_rows(X, 1.0, v1, Xp)
        field(Xp, p, v2, ws)
        tangent_increment(Xp, h, v2, dW, v2)
        project_rows(X, v2, v2)  # carried to the tangent space at x
        for i in range(n):
            for a in range(d):
                v1[i, a] = 0.5 * (v1[i, a] + v2[i, a])
        exp_map_rows(X, 1.0, v1, X)
    else:
        for i in range(n):
            for a in range(d):
                Xp[i, a] = X[i, a] + h * v1[i, a] + dW[i, a]
        field(Xp, p, v2, ws)
        for i in range(n):
            for a in range(d):
                X[i, a] += 0.5 * h * (v1[i, a] + v2[i, a]) + dW[i, a]


@cache
def make_increment_step(drift, space: str = "sphere"):
    """Compile ``advance(X, t, h, p, ws, S, dW)``: one step driven by a given
    increment ``dW`` (n, d) (``sigma`` times the Brownian increment), ``p``
    the drift's parameters (no ``sigma``); S (4, n, d), ``S[3]`` may hold dW."""
    return specialize(_advance, f"heun_{kernel_key(drift)}_{space}",
                      field=space_field(drift, space), SPHERE=space == "sphere")


def make_step(drift, space: str = "sphere"):
    """Compile ``step(X, t, h, p, ws, S, key, counter)``; X (n, d) in place, S (4, n, d)
    scratch, ``p[-1]`` the noise amplitude sigma."""
    return make_noisy_step(f"heun_{kernel_key(drift)}_{space}",
                           make_increment_step(drift, space))
