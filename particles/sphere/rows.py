"""Compiled row twins of the sphere's geometry (one system, shape (n, d)).

The integrators' building blocks on the sphere: tangent projection,
normalisation and the exponential map, row by row, writing into given arrays.
Their NumPy twins are :func:`particles.sphere.tangent_projection`,
:func:`particles.sphere.normalize` and :func:`particles.sphere.exp_map`.
"""

from __future__ import annotations

import numpy as np

from particles._numba import jit


@jit
def project_rows(X, Y, out):
    """Tangent projection ``out_i = y_i - <x_i, y_i> x_i``; X, Y, out of shape (n, d).

    ``out`` may alias ``Y``.
    """
    n, d = X.shape
    for i in range(n):
        s = 0.0
        for a in range(d):
            s += X[i, a] * Y[i, a]
        for a in range(d):
            out[i, a] = Y[i, a] - s * X[i, a]


@jit
def normalize_rows(X):
    """Scale every row of X (n, d) to unit norm, in place."""
    n, d = X.shape
    # d = 2, 3 written out (the same operations in the same order: s starts at
    # 0.0 + x_0^2 = x_0^2) so that the loop over rows vectorises
    if d == 2:
        for i in range(n):
            x0, x1 = X[i, 0], X[i, 1]
            inv = 1.0 / np.sqrt(x0 * x0 + x1 * x1)
            X[i, 0] = x0 * inv
            X[i, 1] = x1 * inv
        return
    if d == 3:
        for i in range(n):
            x0, x1, x2 = X[i, 0], X[i, 1], X[i, 2]
            inv = 1.0 / np.sqrt((x0 * x0 + x1 * x1) + x2 * x2)
            X[i, 0] = x0 * inv
            X[i, 1] = x1 * inv
            X[i, 2] = x2 * inv
        return
    for i in range(n):
        s = 0.0
        for a in range(d):
            s += X[i, a] * X[i, a]
        inv = 1.0 / np.sqrt(s)
        for a in range(d):
            X[i, a] *= inv


@jit
def exp_map_rows(X, h, W, out):
    """Exponential map ``out_i = exp_{x_i}(h w_i)`` for tangent rows w_i; shapes (n, d).

    ``cos(t) x + sin(t)/t * h w`` with ``t = h |w|``; below ``t ~ 1e-4`` the
    Taylor series of ``sin(t)/t`` and ``cos(t)`` replaces them (exact to
    round-off and smooth at 0).  The result is renormalised so that round-off
    does not drift off the sphere.  ``out`` may alias X.
    """
    n, d = X.shape
    for i in range(n):
        s = 0.0
        for a in range(d):
            s += W[i, a] * W[i, a]
        t = h * np.sqrt(s)
        if t < 1e-4:
            t2 = t * t
            c = 1.0 - 0.5 * t2 + t2 * t2 / 24.0
            sc = 1.0 - t2 / 6.0 + t2 * t2 / 120.0
        else:
            c = np.cos(t)
            sc = np.sin(t) / t
        nrm = 0.0
        for a in range(d):
            v = c * X[i, a] + sc * h * W[i, a]
            out[i, a] = v
            nrm += v * v
        inv = 1.0 / np.sqrt(nrm)
        for a in range(d):
            out[i, a] *= inv
