"""Compiled row operations shared by the integrators (one system, shape (n, d)).

The sphere's own row maps (projection, normalisation, exponential map) live in
:mod:`particles.sphere.rows`; these are the linear-algebra steps and the
projected field.
"""

from __future__ import annotations

from functools import cache

from particles._numba import jit, kernel_key, specialize
from particles.sphere.rows import project_rows


@jit
def axpy_rows(X, h, Y, out):
    """``out = X + h Y`` for arrays of shape (n, d); ``out`` may alias X or Y."""
    n, d = X.shape
    if d == 2:  # written out so that the loop over rows vectorises
        for i in range(n):
            out[i, 0] = X[i, 0] + h * Y[i, 0]
            out[i, 1] = X[i, 1] + h * Y[i, 1]
        return
    if d == 3:
        for i in range(n):
            out[i, 0] = X[i, 0] + h * Y[i, 0]
            out[i, 1] = X[i, 1] + h * Y[i, 1]
            out[i, 2] = X[i, 2] + h * Y[i, 2]
        return
    for i in range(n):
        for a in range(d):
            out[i, a] = X[i, a] + h * Y[i, a]


drift = None  # bound by tangent_field


def _tangent(X, p, out, ws):
    drift(X, p, out, ws)
    project_rows(X, out, out)


@cache
def tangent_field(drift):
    """Compile ``field(X, p, out, ws)``: the drift projected on the tangent spaces,
    ``out_i = P_{x_i}(y_i)``."""
    return specialize(_tangent, kernel_key(drift), drift=drift)


#: the spaces a state can live in: rows on the unit sphere (tangent projection,
#: normalisation or exponential map), or flat coordinates (the angle form on the
#: circle: no projection, no normalisation).
SPACES = ("sphere", "flat")


def space_field(drift, space: str):
    """The field the stages evaluate: the tangent field on the sphere, the drift
    itself in a flat space."""
    if space == "sphere":
        return tangent_field(drift)
    if space == "flat":
        return drift
    raise ValueError(f"space must be one of {SPACES}, got {space!r}")


@jit
def copy_rows(src, dst):
    """``dst[:, :] = src`` for (n, d) arrays, written as a loop: Numba's slice
    assignment compiles a shape-mismatch error message (seconds per process)."""
    for i in range(src.shape[0]):
        for a in range(src.shape[1]):
            dst[i, a] = src[i, a]


@jit
def tangent_increment(X, h, F, dW, out):
    """``out_i = h F_i + P_{x_i} dW_i`` (F tangent at x_i); shapes (n, d).

    The increment of one stochastic step on the sphere: the drift part
    ``h F`` plus the Brownian increment projected on the tangent space.
    ``out`` may alias F.
    """
    n, d = X.shape
    for i in range(n):
        s = 0.0
        for a in range(d):
            s += X[i, a] * dW[i, a]
        for a in range(d):
            out[i, a] = h * F[i, a] + dW[i, a] - s * X[i, a]
