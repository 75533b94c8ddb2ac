"""Compiled row operations shared by the integrators (one system, shape (n, d))."""

from __future__ import annotations

from functools import cache

import numpy as np

from particles._numba import jit, kernel_key, specialize


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
    for i in range(n):
        s = 0.0
        for a in range(d):
            s += X[i, a] * X[i, a]
        inv = 1.0 / np.sqrt(s)
        for a in range(d):
            X[i, a] *= inv


@jit
def axpy_rows(X, h, Y, out):
    """``out = X + h Y`` for arrays of shape (n, d); ``out`` may alias X or Y."""
    n, d = X.shape
    for i in range(n):
        for a in range(d):
            out[i, a] = X[i, a] + h * Y[i, a]


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
