"""Exact Wasserstein-1 distance on the circle, via cumulative distributions.

On the circle of length ``2 pi`` with the geodesic (arc-length) distance, the
optimal-transport distance between probability measures ``mu`` and ``nu`` is

    W1(mu, nu) = min_c int_0^{2 pi} |F(theta) - G(theta) - c| dtheta,

``F`` and ``G`` the cumulative distributions from the cut at ``theta = 0``; the
minimising ``c`` is a median of ``F - G`` under the Lebesgue measure
(Rabin, Delon and Gousseau, "Transportation distances on the circle", 2011).
Both measures here are empirical measures (weighted points: ``F`` is a step
function) or densities on the grid ``theta_j = 2 pi j / M`` of
:mod:`particles.meanfield`, taken **piecewise constant** on the cells
``[theta_j - pi/M, theta_j + pi/M)`` (``F`` piecewise linear).  ``F - G`` is then
piecewise linear, and the median and the integral are computed exactly (no
quadrature, no sampling); the cost is ``O(K log K)`` for ``K`` points plus cells.

Angles may be any real numbers (taken mod ``2 pi``).  Weights and densities are
normalised to total mass 1 (a density ``rho`` is normalised by
``sum(rho) * 2 pi / M``), so only their shape matters.  Small negative density
values (a PDE that loses positivity) are allowed: the formula is then the
Kantorovich-Rubinstein norm of the difference.

:func:`sample_density` (i.i.d. tokens, W1 ~ ``n^{-1/2}``) and
:func:`quantile_angles` (deterministic quantile tokens, W1 ~ ``pi / (2 n)``)
draw particles from a grid density in the same cell convention.
"""

from __future__ import annotations

import numpy as np

TWO_PI = 2.0 * np.pi

__all__ = [
    "point_masses",
    "quantile_angles",
    "sample_density",
    "w1_circle_densities",
    "w1_circle_density",
    "w1_circle_samples",
]


def _angles(theta, name: str) -> np.ndarray:
    theta = np.asarray(theta, dtype=float)
    if theta.ndim != 1 or theta.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of angles, got shape {theta.shape}")
    if not np.all(np.isfinite(theta)):
        raise ValueError(f"{name} must be finite")
    theta = np.mod(theta, TWO_PI)
    theta[theta >= TWO_PI] = 0.0  # mod of a tiny negative number rounds to 2 pi
    return theta


def point_masses(weights, n: int, name: str) -> np.ndarray:
    """Masses of ``n`` points, normalised to sum 1 (None: equal), shape (n,).

    Raises
    ------
    ValueError
        Not of shape (n,), not finite, negative or all zero (one line naming ``name``).
    """
    if weights is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"{name} must be finite, >= 0 and not all zero")
    return w / w.sum()


def _cell_masses(rho, name: str) -> np.ndarray:
    rho = np.asarray(rho, dtype=float)
    if rho.ndim != 1 or rho.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D density, got shape {rho.shape}")
    if not np.all(np.isfinite(rho)):
        raise ValueError(f"{name} must be finite")
    total = rho.sum()
    if total <= 0:
        raise ValueError(f"{name} must have positive total mass")
    return rho / total


class _Measure:
    """Atoms (positions, masses) and cells (left edges, masses) in ``[0, 2 pi)``."""

    def __init__(self, atoms=None, atom_mass=None, cells_m=None):
        self.atoms = np.empty(0) if atoms is None else atoms
        self.atom_mass = np.empty(0) if atom_mass is None else atom_mass
        self.cells = cells_m  # masses of the M cells [theta_j - pi/M, theta_j + pi/M), or None

    def knots(self) -> np.ndarray:
        k = [self.atoms]
        if self.cells is not None:
            M = self.cells.size
            k.append((np.arange(M) + 0.5) * (TWO_PI / M))  # upper cell edges in (0, 2 pi]
        return np.concatenate(k)

    def density_on(self, mid: np.ndarray) -> np.ndarray:
        """Density (mass per unit angle) at the points ``mid`` (interval midpoints)."""
        if self.cells is None:
            return np.zeros_like(mid)
        M = self.cells.size
        j = np.floor(mid * (M / TWO_PI) + 0.5).astype(np.int64) % M
        return self.cells[j] * (M / TWO_PI)


def _w1(a: _Measure, b: _Measure) -> float:
    knots = np.unique(np.concatenate([[0.0, TWO_PI], a.knots(), b.knots()]))
    knots = knots[(knots >= 0.0) & (knots <= TWO_PI)]
    length = np.diff(knots)                      # (K,) intervals [knots[i], knots[i+1])
    mid = 0.5 * (knots[:-1] + knots[1:])
    slope = a.density_on(mid) - b.density_on(mid)
    # atom masses at each left knot (an atom at 0 sits at knots[0])
    jump = np.zeros(knots.size)
    for m, sign in ((a, 1.0), (b, -1.0)):
        if m.atoms.size:
            idx = np.searchsorted(knots, m.atoms)
            np.add.at(jump, idx, sign * m.atom_mass)
    # h = F - G on each interval: h0 just right of the left knot, h1 just left of the right one
    h0 = np.cumsum(jump[:-1] + np.concatenate([[0.0], slope[:-1] * length[:-1]]))
    h1 = h0 + slope * length
    c = _median(h0, h1, length)
    return float(_abs_integral(h0, h1, length, c))


def _below(lo, hi, length, c, strict: bool) -> float:
    """Lebesgue measure of ``{h < c}`` (``strict``) or ``{h <= c}`` for linear pieces."""
    w = hi - lo
    flat = w <= 0
    frac = np.clip((c - lo) / np.where(flat, 1.0, w), 0.0, 1.0)
    frac = np.where(flat, (lo < c) if strict else (lo <= c), frac)
    return float(np.sum(length * frac))


def _median(h0, h1, length) -> float:
    """A ``c`` with ``|{h < c}| <= pi <= |{h <= c}|``, ``h`` linear on each interval."""
    lo, hi = np.minimum(h0, h1), np.maximum(h0, h1)
    half = 0.5 * float(np.sum(length))
    cand = np.unique(np.concatenate([lo, hi]))
    # largest a with |{h < cand[a]}| <= half (cand[0] = min h, so a exists)
    left, right = 0, cand.size - 1
    if _below(lo, hi, length, cand[right], True) <= half:
        left = right
    while right - left > 1:
        mid = (left + right) // 2
        if _below(lo, hi, length, cand[mid], True) <= half:
            left = mid
        else:
            right = mid
    c0 = cand[left]
    m0 = _below(lo, hi, length, c0, False)
    if m0 >= half or left == cand.size - 1:
        return float(c0)
    c1 = cand[left + 1]
    m1 = _below(lo, hi, length, c1, True)  # |{h < c}| is linear on (c0, c1)
    return float(c0 + (c1 - c0) * np.clip((half - m0) / (m1 - m0), 0.0, 1.0))


def _abs_integral(h0, h1, length, c) -> float:
    """``sum_i int |h - c|`` over intervals where ``h`` goes linearly from h0 to h1."""
    u, v = h0 - c, h1 - c
    same = u * v >= 0
    dh = np.abs(v - u)
    cross = (u * u + v * v) / (2.0 * np.where(same, 1.0, dh))
    return float(np.sum(length * np.where(same, np.abs(0.5 * (u + v)), cross)))


def w1_circle_samples(theta_a, theta_b, weights_a=None, weights_b=None) -> float:
    """Exact W1 distance on the circle between two (weighted) point sets.

    Parameters
    ----------
    theta_a : array_like, shape (n_a,)
        Angles of the first measure (any real numbers, taken mod 2 pi).
    theta_b : array_like, shape (n_b,)
        Angles of the second measure.
    weights_a, weights_b : array_like, shape (n_a,) and (n_b,), optional
        Non-negative masses, normalised to sum 1 (default: equal masses).

    Returns
    -------
    float
        ``W1`` with the arc-length distance, in ``[0, pi]`` (``pi``: two
        antipodal points).
    """
    ta, tb = _angles(theta_a, "theta_a"), _angles(theta_b, "theta_b")
    a = _Measure(ta, point_masses(weights_a, ta.size, "weights_a"))
    b = _Measure(tb, point_masses(weights_b, tb.size, "weights_b"))
    return _w1(a, b)


def w1_circle_density(theta_samples, rho, weights=None) -> float:
    """Exact W1 distance between an empirical measure and a grid density.

    Parameters
    ----------
    theta_samples : array_like, shape (n,)
        Angles of the points (any real numbers, taken mod 2 pi), e.g. the
        tokens of a particle run on the circle.
    rho : array_like, shape (M,)
        Density on ``theta_j = 2 pi j / M``, piecewise constant on the cells
        ``[theta_j - pi/M, theta_j + pi/M)``; normalised to mass 1.
    weights : array_like, shape (n,), optional
        Masses of the points (default: equal).

    Returns
    -------
    float
        ``W1(mu_n, rho)``.
    """
    t = _angles(theta_samples, "theta_samples")
    a = _Measure(t, point_masses(weights, t.size, "weights"))
    b = _Measure(cells_m=_cell_masses(rho, "rho"))
    return _w1(a, b)


def w1_circle_densities(rho_a, rho_b) -> float:
    """Exact W1 distance between two grid densities.

    Parameters
    ----------
    rho_a : array_like, shape (M_a,)
        Density on ``theta_j = 2 pi j / M_a``, piecewise constant on the cells
        ``[theta_j - pi/M_a, theta_j + pi/M_a)``; normalised to mass 1.
    rho_b : array_like, shape (M_b,)
        The same on its own grid (``M_b`` may differ from ``M_a``).

    Returns
    -------
    float
        ``W1(rho_a, rho_b)``.
    """
    a = _Measure(cells_m=_cell_masses(rho_a, "rho_a"))
    b = _Measure(cells_m=_cell_masses(rho_b, "rho_b"))
    return _w1(a, b)


def _inverse_cdf(rho, u: np.ndarray) -> np.ndarray:
    """Quantiles ``F^{-1}(u)`` of a piecewise-constant grid density, shape of ``u``."""
    m = _cell_masses(rho, "rho")
    if np.any(m < 0):
        raise ValueError("rho must be >= 0 to draw tokens from it")
    M = m.size
    cdf = np.cumsum(m)
    cdf /= cdf[-1]
    j = np.minimum(np.searchsorted(cdf, u, side="right"), M - 1)
    lo = np.concatenate([[0.0], cdf[:-1]])[j]
    frac = np.clip((u - lo) / np.where(m[j] > 0, cdf[j] - lo, 1.0), 0.0, 1.0)
    return (j - 0.5 + frac) * (TWO_PI / M)


def _count(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    return int(n)


def sample_density(rho, n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` i.i.d. angles from a grid density (exact inverse distribution).

    Parameters
    ----------
    rho : array_like, shape (M,)
        Non-negative density on ``theta_j = 2 pi j / M``, piecewise constant on
        the cells ``[theta_j - pi/M, theta_j + pi/M)`` (the convention of the
        W1 functions here); normalised to mass 1.
    n : int
        Number of samples, ``>= 1``.
    rng : numpy.random.Generator
        Source of the uniforms (``n`` of them).

    Returns
    -------
    ndarray, shape (n,)
        Angles in ``[-pi/M, 2 pi - pi/M)`` (cell 0 straddles 0).  Their W1
        distance to ``rho`` is about ``c / sqrt(n)``.
    """
    n = _count(n)
    return _inverse_cdf(rho, rng.uniform(0.0, 1.0, n))


def quantile_angles(rho, n: int) -> np.ndarray:
    """The ``n`` midpoint quantiles ``F^{-1}((i + 1/2) / n)`` of a grid density.

    A deterministic n-token approximation of ``rho`` (cut at ``-pi/M``), with
    ``W1 = pi / (2 n) (1 + O(1/n))`` for a smooth positive density; under a
    smooth flow the tokens stay quantiles of the transported density, so this
    W1 persists (a sharp particles-versus-PDE check).

    Parameters
    ----------
    rho : array_like, shape (M,)
        As in :func:`sample_density`.
    n : int
        Number of tokens, ``>= 1``.

    Returns
    -------
    ndarray, shape (n,)
        Increasing angles in ``[-pi/M, 2 pi - pi/M)``.
    """
    n = _count(n)
    return _inverse_cdf(rho, (np.arange(n) + 0.5) / n)
