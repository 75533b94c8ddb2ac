"""``geodesic``: exponential-map midpoint rule, order 2, exactly on the sphere.

    k1 = f(x),  x_m = exp_x(h/2 k1),  k2 = P_x f(x_m),  x' = exp_x(h k2),

with ``f(x)_i = P_{x_i}(y_i(x))`` the tangent field.

Every stage moves along great circles (the tangent velocity at the midpoint is
projected back to the tangent space at ``x``), so no normalisation is needed
beyond round-off.  Second order: ``<x, Df f> = -|f|^2`` makes the projection
term cancel the curvature term of the exponential map at O(h^2).
"""

from __future__ import annotations

from particles._numba import kernel_key, specialize
from particles.integrators._rows import tangent_field
from particles.sphere.rows import exp_map_rows, project_rows

ORDER = 2
STRONG_ORDER = None
SPACES = ("sphere",)
STAGES = 2
#: drift evaluations of one step
EVALUATIONS = 2

field = None  # bound by make_step


def _step(X, t, h, p, ws, S, key, counter):
    k, Xm = S[0], S[1]
    field(X, p, k, ws)
    exp_map_rows(X, 0.5 * h, k, Xm)
    field(Xm, p, k, ws)  # the field at x_m ...
    project_rows(X, k, k)  # ... carried to the tangent space at x
    exp_map_rows(X, h, k, X)


def make_step(drift, space: str = "sphere"):
    """Compile ``step(X, t, h, p, ws, S, key, counter)``; X (n, d) in place,
    S (2, n, d) scratch.  Deterministic: ``t``, ``key`` and ``counter`` are unused."""
    if space not in SPACES:
        raise ValueError(f"geodesic moves on great circles (sphere only), got {space!r}")
    return specialize(_step, kernel_key(drift), cache=True, field=tangent_field(drift))
