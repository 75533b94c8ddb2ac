"""Geometry on the unit sphere: normalisation, tangent projection, exp and log maps,
distances, inner products, and the circle's angle <-> point maps."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from particles.sphere.checks import (
    TWO_PI,
    FloatArray,
    as_f64,
    check_int,
    check_real,
    finish,
)

#: the chord distance at which two points are one: four ulps of 1, positions that
#: agree to round-off (the default ``collapse_tol``, :mod:`particles.models.collapse`).
COLLAPSE_TOL = 4 * float(np.finfo(np.float64).eps)

# Below these norms the closed forms sin(t)/t and θ/sin(θ) are 0/0; the
# truncated series are exact to double precision there (next terms ~ t^6 < 1e-24).
_EXP_TAYLOR = 1e-4
_LOG_TAYLOR = 1e-4


def normalize(x: ArrayLike) -> FloatArray:
    """Project nonzero vectors radially onto the unit sphere.

    Parameters
    ----------
    x : array_like, shape (..., d)
        Vectors; the last axis is the ambient coordinate.

    Returns
    -------
    ndarray, shape (..., d)
        ``x / ||x||`` row by row.

    Raises
    ------
    ValueError
        If some row is the zero vector (its direction is undefined; we refuse
        rather than return NaN).
    """
    x = as_f64(x)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    if np.any(norms == 0.0):
        bad = int(np.count_nonzero(norms == 0.0))
        raise ValueError(f"cannot normalize a zero vector ({bad} row(s) have norm 0)")
    return x / norms


def tangent_projection(x: ArrayLike, y: ArrayLike) -> FloatArray:
    """Orthogonal projection onto the tangent space at ``x``.

    ``P_x(y) = y - <x, y> x``, row by row (geomstats' ``to_tangent``).

    Parameters
    ----------
    x : array_like, shape (..., d)
        Base points, assumed to lie on the sphere.
    y : array_like, shape (..., d)
        Ambient vectors; broadcast against ``x``.

    Returns
    -------
    ndarray, shape (..., d)
        Tangent vectors at ``x``.
    """
    x = as_f64(x)
    y = as_f64(y)
    return y - np.sum(x * y, axis=-1, keepdims=True) * x


def exp_map(x: ArrayLike, v: ArrayLike) -> FloatArray:
    """Riemannian exponential map of the sphere.

    ``exp_x(v) = cos(|v|) x + sin(|v|) v / |v|``, with ``sin(t)/t`` replaced by
    its Taylor series ``1 - t²/6 + t⁴/120`` for ``|v| < 1e-4`` so that
    ``v -> 0`` is exact (``exp_x(0) = x``) and smooth.  The result is
    renormalized to absorb rounding.

    Parameters
    ----------
    x : array_like, shape (..., d)
        Base points on the sphere.
    v : array_like, shape (..., d)
        Tangent vectors at ``x`` (not re-projected: a normal component would
        only be renormalized away); broadcast against ``x``.

    Returns
    -------
    ndarray, shape (..., d)
        Points on the sphere at geodesic distance ``|v|`` (mod 2π) from ``x``.
    """
    x = as_f64(x)
    v = as_f64(v)
    t = np.linalg.norm(v, axis=-1, keepdims=True)
    small = t < _EXP_TAYLOR
    t_safe = np.where(small, 1.0, t)  # keeps the unused branch free of 0/0
    t2 = t * t
    sinc = np.where(small, 1.0 - t2 / 6.0 + t2 * t2 / 120.0, np.sin(t_safe) / t_safe)
    y = np.cos(t) * x + sinc * v
    return y / np.linalg.norm(y, axis=-1, keepdims=True)


def _antipodal_direction(x: FloatArray) -> FloatArray:
    """Deterministic unit tangent at ``x``: the projection of the least-aligned axis."""
    # The axis e_k with the smallest |x_k| has |P_x(e_k)|² = 1 - x_k² >= 1 - 1/d,
    # so the normalization below is always well conditioned.
    k = np.argmin(np.abs(x), axis=-1)[..., None]
    xk = np.take_along_axis(x, k, axis=-1)
    p = -xk * x
    np.put_along_axis(p, k, np.take_along_axis(p, k, axis=-1) + 1.0, axis=-1)
    return p / np.linalg.norm(p, axis=-1, keepdims=True)


def log_map(x: ArrayLike, y: ArrayLike) -> FloatArray:
    """Riemannian logarithm map of the sphere.

    Returns the tangent vector at ``x`` pointing along the minimizing geodesic
    to ``y``, of length ``geodesic_distance(x, y)``.

    The tangent part ``u = y - <x, y> x`` (of length sin θ) is formed as
    ``(y - x) + (|y - x|²/2) x`` when ``<x, y> >= 0`` and as
    ``(y + x) - (|y + x|²/2) x`` otherwise, which avoids the cancellation of
    the textbook form near θ = 0 and θ = π.  For θ < 1e-4 the factor
    ``θ / sin θ`` is replaced by its series ``1 + θ²/6 + 7θ⁴/360``, so ``y = x``
    gives exactly 0.

    Antipodal points (``y = -x`` exactly, where ``u`` vanishes) have no unique
    logarithm; we then return a vector of length π along the deterministic
    tangent direction ``P_x(e_k) / |P_x(e_k)|``, with ``k`` the first index of
    the smallest ``|x_k|``.  The result is never NaN.

    Parameters
    ----------
    x : array_like, shape (..., d)
        Base points on the sphere.
    y : array_like, shape (..., d)
        Target points on the sphere; broadcast against ``x``.

    Returns
    -------
    ndarray, shape (..., d)
        Tangent vectors at ``x`` with norm in [0, π].
    """
    x, y = np.broadcast_arrays(as_f64(x), as_f64(y))
    diff = y - x
    summ = y + x
    nd = np.linalg.norm(diff, axis=-1, keepdims=True)
    ns = np.linalg.norm(summ, axis=-1, keepdims=True)
    theta = 2.0 * np.arctan2(nd, ns)
    # |y ∓ x|²/2 equals 1 ∓ <x, y> exactly on the sphere, without cancellation.
    u = np.where(nd <= ns, diff + (0.5 * nd * nd) * x, summ - (0.5 * ns * ns) * x)
    nu = np.linalg.norm(u, axis=-1, keepdims=True)
    small = theta < _LOG_TAYLOR
    th2 = theta * theta
    # Away from 0 we rescale u to length θ directly (|u| is more accurate than sin θ).
    coef = np.where(
        small,
        1.0 + th2 / 6.0 + 7.0 * th2 * th2 / 360.0,
        theta / np.where(nu > 0.0, nu, 1.0),
    )
    out = coef * u
    degenerate = (~small) & (nu == 0.0)
    if np.any(degenerate):
        out = np.where(degenerate, math.pi * _antipodal_direction(x), out)
    return out


def geodesic_distance(x: ArrayLike, y: ArrayLike) -> FloatArray:
    """Great-circle distance ``arccos <x, y>``, computed stably.

    Uses Kahan's form ``2 atan2(|x - y|, |x + y|)``: it equals ``arccos <x, y>``
    on the sphere, is accurate to relative precision for tiny angles (where
    ``arccos`` of a rounded ``<x, y> ≈ 1`` returns 0 below ~1e-8 rad), is as
    good near π, needs no clipping (never NaN, even when rounding pushes
    ``|<x, y>|`` past 1), is exactly symmetric and gives exactly 0 for ``x == y``.

    Parameters
    ----------
    x, y : array_like, shape (..., d)
        Points on the sphere; broadcast against each other.

    Returns
    -------
    ndarray, shape (...)
        Distances in [0, π].
    """
    x = as_f64(x)
    y = as_f64(y)
    return 2.0 * np.arctan2(np.linalg.norm(x - y, axis=-1), np.linalg.norm(x + y, axis=-1))


def inner_products(x: ArrayLike) -> FloatArray:
    """Gram matrix of the tokens, ``G[..., i, j] = <x_i, x_j>``.

    A helper for analysing small systems: it materializes all n² pairs, so it
    costs O(n² d) time and O(n²) memory.  Entries are not clipped to [-1, 1].

    Parameters
    ----------
    x : array_like, shape (..., n, d)
        Tokens.

    Returns
    -------
    ndarray, shape (..., n, n)
        Symmetric Gram matrices.
    """
    x = as_f64(x)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., n, d), got shape {x.shape}")
    return x @ np.swapaxes(x, -1, -2)


# --------------------------------------------------------------------------
# circle helpers (d = 2)
# --------------------------------------------------------------------------


def angles_to_circle(theta: ArrayLike) -> FloatArray:
    """Points on S^1 from their angles.

    Parameters
    ----------
    theta : array_like, shape (..., n)
        Angles in radians.

    Returns
    -------
    ndarray, shape (..., n, 2)
        ``(cos θ, sin θ)``.
    """
    theta = as_f64(theta)
    return np.stack((np.cos(theta), np.sin(theta)), axis=-1)


def circle_to_angles(x: ArrayLike) -> FloatArray:
    """Angles of points on S^1.

    Parameters
    ----------
    x : array_like, shape (..., n, 2)
        Points on the circle (any nonzero radius).

    Returns
    -------
    ndarray, shape (..., n)
        Angles in [0, 2π).
    """
    x = as_f64(x)
    if x.ndim < 1 or x.shape[-1] != 2:
        raise ValueError(f"x must have shape (..., 2), got shape {x.shape}")
    theta = np.mod(np.arctan2(x[..., 1], x[..., 0]), TWO_PI)
    # mod() of a tiny negative angle rounds to exactly 2π; fold it back to 0.
    return np.where(theta >= TWO_PI, 0.0, theta)


def equispaced_circle(n: int, *, phase: float = 0.0) -> FloatArray:
    """``n`` equally spaced points on S^1.

    Parameters
    ----------
    n : int
        Number of points, >= 1.
    phase : float
        Angle of the first point, in radians.

    Returns
    -------
    ndarray, shape (n, 2)
        The points at angles ``phase + 2πk/n``, k = 0, ..., n-1.
    """
    n = check_int("n", n, 1)
    phase = check_real("phase", phase)
    return finish(angles_to_circle(phase + TWO_PI * np.arange(n) / n))
