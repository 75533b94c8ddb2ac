"""``em``: geodesic Euler-Maruyama for ``dX_i = f_i dt + sigma P_{X_i} o dB_i``.

On the sphere one step moves every token along the great circle of its
increment,

    x' = exp_x(h P_x f(x) + sigma P_x dB),   dB = sqrt(h) xi,  xi ~ N(0, I_d),

so norms stay 1 to round-off.  The exponential map's curvature term
``-|v|^2 x / 2`` has mean ``-(d - 1) sigma^2 h x / 2``: exactly the Ito drift
of Brownian motion on S^{d-1} (generator ``f . grad + (sigma^2 / 2) Laplacian``),
so the scheme is weakly first order.  Strong order 1/2: the noise fields
``g_k(x) = P_x e_k`` do not commute, and no scheme that only sees the
increments dB does better (Clark-Cameron).

In a flat space (the circle's angle form, where the noise is additive,
``d theta_i = f_i dt + sigma dW_i``) it is plain Euler-Maruyama,
``theta' = theta + h f + sigma dW``: strong order 1 (additive noise).

Without noise (``sigma = 0``) it is the exponential-map Euler step, order 1.
The amplitude ``sigma`` is the last entry of ``p`` (appended by the engine);
the drift receives ``p[:-1]``.
"""

from __future__ import annotations

from functools import cache

from particles._numba import kernel_key, specialize
from particles.integrators._rows import space_field, tangent_increment
from particles.integrators.noise import make_noisy_step
from particles.sphere.rows import exp_map_rows

ORDER = 1
STRONG_ORDER = 0.5
#: strong order per space: additive noise on the angle form gives order 1.
STRONG_ORDERS = {"sphere": 0.5, "flat": 1.0}
SPACES = ("sphere", "flat")
STAGES = 2
#: drift evaluations of one step
EVALUATIONS = 1

field = None  # bound by make_increment_step
SPHERE = True  # bound by make_increment_step
advance = None  # bound by make_step


def _advance(X, t, h, p, ws, S, dW):
    f = S[0]
    field(X, p, f, ws)
    if SPHERE:
        tangent_increment(X, h, f, dW, f)
        exp_map_rows(X, 1.0, f, X)
    else:
        n, d = X.shape
        for i in range(n):
            for a in range(d):
                X[i, a] += h * f[i, a] + dW[i, a]


@cache
def make_increment_step(drift, space: str = "sphere"):
    """Compile ``advance(X, t, h, p, ws, S, dW)``: one step driven by a given
    increment ``dW`` (n, d) (``sigma`` times the Brownian increment), ``p``
    the drift's parameters (no ``sigma``); S (2, n, d), ``S[1]`` may hold dW."""
    return specialize(_advance, f"em_{kernel_key(drift)}_{space}",
                      field=space_field(drift, space), SPHERE=space == "sphere")


def make_step(drift, space: str = "sphere"):
    """Compile ``step(X, t, h, p, ws, S, key, counter)``; X (n, d) in place, S (2, n, d)
    scratch, ``p[-1]`` the noise amplitude sigma."""
    return make_noisy_step(f"em_{kernel_key(drift)}_{space}",
                           make_increment_step(drift, space))
