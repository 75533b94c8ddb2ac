"""Sliced Wasserstein-1 distance on S^2: tokens against a density (or other tokens).

Definition.  For a direction ``u`` on S^2 let ``P_u(x) = <x, u>`` (in ``[-1, 1]``)
and ``P_u # mu`` the law of the projection.  The sliced distance is

    SW1(mu, nu) = (1/K) sum_k W1(P_{u_k} # mu, P_{u_k} # nu),

the 1-D ``W1(p, q) = int_{-1}^{1} |F_p(s) - F_q(s)| ds`` (``F`` the cumulative
distributions) averaged over ``K`` fixed directions ``u_k`` (:func:`directions`:
i.i.d. uniform on S^2 from a seeded generator, so the number is reproducible).
It is a Monte Carlo estimate of the average over all directions,
``SW1_inf = E_u W1(P_u # mu, P_u # nu)``, which is rotation invariant and
bounded by the geodesic W1 on S^2 (``|<x - y, u>| <= |x - y| <= d(x, y)``);
``K`` directions estimate it with a relative standard error of about
``cv / sqrt(K)``, ``cv`` the coefficient of variation of the 1-D W1 over
directions (order 1).  For ``n`` i.i.d. tokens of a smooth density it decays as
``n^{-1/2}``.

The density side is exact for a band-limited density.  A density ``f`` relative
to the uniform measure ``sigma`` (``int f dsigma = 1``) of degree ``<= lmax``
on the Gauss-Legendre grid of :mod:`particles.meanfield.sphere` (ring weights
``w``) projects, by the Funk-Hecke formula, to

    g_u(t) = (1/2) sum_l f_l(u) P_l(t),   f_l(u) = (2 l + 1) int f(x) P_l(<x, u>) dsigma(x),

``P_l`` the Legendre polynomials and ``f_l`` the degree-``l`` part of ``f``
(:func:`degree_parts`: the coefficients ``a_lm`` by the grid's quadrature,
exact when it integrates degree ``2 lmax``, as the solver's dealiased grid
does, then summed at ``u`` by ducc0).  Its distribution
``G_u(s) = int_{-1}^{s} g_u`` is then exact too
(``int_{-1}^{s} P_l = (P_{l+1}(s) - P_{l-1}(s)) / (2 l + 1)``).  ``G_u`` is
evaluated at ``cells + 1`` equispaced nodes and interpolated linearly (the
projected law taken piecewise constant on ``cells`` cells of width
``h = 2 / cells``), so the 1-D W1 against the tokens is computed exactly for
that interpolant; its error is at most ``(h^2 / 4) max |g_u'|`` (zero for the
uniform density, ``g_u = 1/2``).  A density that dips below zero (Gibbs
ripples of a solve) is allowed: the 1-D formula is then the
Kantorovich-Rubinstein norm of the difference.
"""

from __future__ import annotations

import numpy as np
from ducc0.sht import experimental as sht
from numpy.typing import ArrayLike

from particles.meanfield.wasserstein import point_masses

__all__ = [
    "DIRECTIONS",
    "degree_parts",
    "directions",
    "projected_cdf",
    "sliced_w1_density",
    "sliced_w1_samples",
]

#: number of directions by default.
DIRECTIONS = 64

#: directions projected together (memory: n x BLOCK floats).
BLOCK = 8

#: cells of the projected law on [-1, 1] by default (h = 2 / CELLS).
CELLS = 1024


def directions(count: int = DIRECTIONS, seed: int = 0) -> np.ndarray:
    """``count`` i.i.d. uniform unit vectors of R^3 from a seeded generator.

    Returns
    -------
    ndarray, shape (count, 3)
    """
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"count must be an integer >= 1, got {count!r}")
    g = np.random.default_rng(seed).standard_normal((int(count), 3))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def _directions(u: ArrayLike | None) -> np.ndarray:
    if u is None:
        return directions()
    u = np.asarray(u, dtype=float)
    if u.ndim != 2 or u.shape[1] != 3 or u.shape[0] == 0 or not np.all(np.isfinite(u)):
        raise ValueError(f"directions must be a finite array of shape (K, 3), got {u.shape}")
    norm = np.linalg.norm(u, axis=1, keepdims=True)
    if np.any(norm == 0):
        raise ValueError("directions must be non-zero vectors")
    return u / norm


def _points(x: ArrayLike, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 2 or x.shape[1] != 3 or x.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty array of points of shape (n, 3), "
                         f"got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite")
    return x


def _w1_atoms(ta: np.ndarray, ca: np.ndarray, tb: np.ndarray, cb: np.ndarray) -> float:
    """Exact 1-D W1 between two sorted point sets (``c``: 0 then the cumulated masses)."""
    knots = np.union1d(ta, tb)  # F_a - F_b is constant on [knots[i], knots[i+1])
    fa = ca[np.searchsorted(ta, knots[:-1], side="right")]
    fb = cb[np.searchsorted(tb, knots[:-1], side="right")]
    return float(np.sum(np.abs(fa - fb) * np.diff(knots)))


def _w1_atoms_cdf(t: np.ndarray, cum: np.ndarray, nodes: np.ndarray, G: np.ndarray) -> float:
    """Exact 1-D W1 between sorted atoms ``t`` (``cum``: 0 then the cumulated masses) and
    the piecewise-linear CDF taking the values ``G`` at the increasing ``nodes``."""
    idx = np.searchsorted(t, nodes, side="right")  # the knots: atoms and nodes, merged
    knots = np.insert(t, idx, nodes)
    F = np.insert(cum[1:], idx, cum[idx])  # F on [knots[i], knots[i+1])
    Gk = np.insert(np.interp(t, nodes, G), idx, G)
    u, v = F[:-1] - Gk[:-1], F[:-1] - Gk[1:]  # F - G is linear on each interval
    length = np.diff(knots)
    same = u * v >= 0
    cross = (u * u + v * v) / (2.0 * np.where(same, 1.0, np.abs(v - u)))
    return float(np.sum(length * np.where(same, np.abs(0.5 * (u + v)), cross)))


def _sorted_projections(x: np.ndarray, m: np.ndarray, u: np.ndarray):
    """Per direction ``u_k``: the sorted ``<x, u_k>`` and their cumulated masses (0 first),
    ``BLOCK`` directions projected at a time."""
    equal = bool(np.all(m == m[0]))
    cum_equal = np.arange(m.size + 1) / m.size
    for lo in range(0, u.shape[0], BLOCK):
        t = u[lo:lo + BLOCK] @ x.T  # (block, n): each row contiguous for its sort
        if equal:  # no masses to carry along
            t.sort(axis=1)
            yield from ((row, cum_equal) for row in t)
        else:
            for row in t:
                order = np.argsort(row, kind="stable")
                yield row[order], np.concatenate([[0.0], np.cumsum(m[order])])


def sliced_w1_samples(x_a: ArrayLike, x_b: ArrayLike, weights_a: ArrayLike | None = None,
                      weights_b: ArrayLike | None = None, *,
                      directions: ArrayLike | None = None) -> float:
    """Sliced W1 between two (weighted) point sets on S^2 (module docstring).

    Parameters
    ----------
    x_a : array_like, shape (n_a, 3)
        Points of the first measure (on the unit sphere; not checked).
    x_b : array_like, shape (n_b, 3)
        Points of the second measure.
    weights_a, weights_b : array_like, shape (n_a,) and (n_b,), optional
        Non-negative masses, normalised to sum 1 (default: equal).
    directions : array_like, shape (K, 3), optional
        Projection directions (normalised here); default :func:`directions`.

    Returns
    -------
    float
        ``(1/K) sum_k W1(<x_a, u_k>, <x_b, u_k>)``, exact for the given directions.
    """
    xa, xb = _points(x_a, "x_a"), _points(x_b, "x_b")
    ma = point_masses(weights_a, xa.shape[0], "weights_a")
    mb = point_masses(weights_b, xb.shape[0], "weights_b")
    u = _directions(directions)
    total = sum(_w1_atoms(ta, ca, tb, cb) for (ta, ca), (tb, cb)
                in zip(_sorted_projections(xa, ma, u), _sorted_projections(xb, mb, u),
                       strict=True))
    return total / u.shape[0]


def _rings(theta: np.ndarray, phi0: np.ndarray, nphi: np.ndarray) -> dict:
    """A ring geometry for ducc0's general transforms (ring ``i`` starts at ``sum nphi[:i]``)."""
    nphi = np.asarray(nphi, dtype=np.uint64)
    start = np.concatenate([[0], np.cumsum(nphi)[:-1]]).astype(np.uint64)
    return {"theta": np.ascontiguousarray(theta, dtype=float), "nphi": nphi,
            "phi0": np.ascontiguousarray(phi0, dtype=float), "ringstart": start}


def degree_parts(f: ArrayLike, theta: ArrayLike, phi: ArrayLike, weights: ArrayLike,
                 lmax: int, u: ArrayLike) -> np.ndarray:
    """The degree-``l`` parts ``f_l(u_k)`` of a band-limited grid density.

    ``f_l(u) = (2 l + 1) int f(x) P_l(<x, u>) dsigma(x)`` (the addition theorem),
    ``f`` normalised to unit mass; computed as one weighted adjoint transform of
    the grid (the coefficients ``a_lm``, exact for the quadrature) and one
    synthesis per degree at the ``K`` directions (ducc0, no approximation).

    Parameters
    ----------
    f, theta, phi, weights, lmax, u
        As in :func:`projected_cdf`.

    Returns
    -------
    ndarray, shape (K, lmax + 1)
    """
    f, theta, phi, weights = _check_grid(f, theta, phi, weights)
    return _parts(f, theta, phi, weights, int(lmax), _directions(u))


def _parts(f: np.ndarray, theta: np.ndarray, phi: np.ndarray, weights: np.ndarray,
           lmax: int, u: np.ndarray) -> np.ndarray:
    geometry = _rings(theta, np.full(theta.size, phi[0]), np.full(theta.size, phi.size))
    # ducc0's harmonics are orthonormal on the area: f = sum a_lm Y_lm needs 4 pi sigma-weights
    grid = np.ascontiguousarray((f * (4.0 * np.pi * weights)[:, None]).ravel())
    a = sht.adjoint_synthesis(map=grid[None], lmax=lmax, spin=0, nthreads=1, **geometry)[0]
    ell = np.concatenate([np.arange(m, lmax + 1) for m in range(lmax + 1)])
    cos_t = np.clip(u[:, 2], -1.0, 1.0)
    at = _rings(np.arccos(cos_t), np.mod(np.arctan2(u[:, 1], u[:, 0]), 2 * np.pi),
                np.ones(u.shape[0]))
    out = np.empty((u.shape[0], lmax + 1))
    for degree in range(lmax + 1):
        part = np.where(ell == degree, a, 0.0)
        out[:, degree] = sht.synthesis(alm=part[None], lmax=lmax, spin=0, nthreads=1,
                                       **at)[0]
    return out


def _legendre_integrals(s: np.ndarray, lmax: int) -> np.ndarray:
    """``int_{-1}^{s} P_l`` for l = 0 .. lmax, shape (lmax + 1, S)."""
    P = np.empty((lmax + 2, s.size))
    P[0] = 1.0
    P[1] = s
    for ell in range(1, lmax + 1):
        P[ell + 1] = ((2 * ell + 1) * s * P[ell] - ell * P[ell - 1]) / (ell + 1)
    out = np.empty((lmax + 1, s.size))
    out[0] = s + 1.0
    for ell in range(1, lmax + 1):
        out[ell] = (P[ell + 1] - P[ell - 1]) / (2 * ell + 1)
    return out


def _check_grid(f, theta, phi, weights) -> tuple[np.ndarray, ...]:
    f = np.asarray(f, dtype=float)
    theta, phi = np.asarray(theta, dtype=float), np.asarray(phi, dtype=float)
    weights = np.asarray(weights, dtype=float)
    if theta.ndim != 1 or phi.ndim != 1 or f.shape != (theta.size, phi.size):
        raise ValueError(f"the density must have shape (ntheta, nphi) = ({theta.size}, "
                         f"{phi.size}), got {f.shape}")
    if weights.shape != theta.shape:
        raise ValueError(f"weights must have shape ({theta.size},), got {weights.shape}")
    if not np.all(np.isfinite(f)):
        raise ValueError("the density must be finite")
    mass = float(np.sum(f * weights[:, None]))
    if not mass > 0:
        raise ValueError("the density must have positive mass")
    return f / mass, theta, phi, weights


def projected_cdf(f: ArrayLike, theta: ArrayLike, phi: ArrayLike, weights: ArrayLike,
                  lmax: int, u: ArrayLike, s: ArrayLike) -> np.ndarray:
    """Distributions ``G_u(s)`` of ``<x, u>`` under a band-limited grid density (exact).

    Parameters
    ----------
    f : array_like, shape (ntheta, nphi)
        The density relative to the uniform measure at the grid points
        (normalised here to unit mass), of degree ``<= lmax``.
    theta : array_like, shape (ntheta,)
        Colatitudes of the rings.
    phi : array_like, shape (nphi,)
        Longitudes.
    weights : array_like, shape (ntheta,)
        Quadrature weight of each point of a ring (exact to degree ``2 lmax``).
    lmax : int
        Degree of ``f``.
    u : array_like, shape (K, 3)
        Directions (normalised here).
    s : array_like, shape (S,)
        Levels in ``[-1, 1]``.

    Returns
    -------
    ndarray, shape (K, S)
        ``G_u(s) = sigma_f({x : <x, u> <= s})`` (module docstring).
    """
    f, theta, phi, weights = _check_grid(f, theta, phi, weights)
    lmax = int(lmax)
    u = _directions(u)
    s = np.clip(np.asarray(s, dtype=float), -1.0, 1.0)
    return 0.5 * _parts(f, theta, phi, weights, lmax, u) @ _legendre_integrals(s, lmax)


def sliced_w1_density(x: ArrayLike, f: ArrayLike, theta: ArrayLike, phi: ArrayLike,
                      weights: ArrayLike, lmax: int, *, masses: ArrayLike | None = None,
                      directions: ArrayLike | None = None, cells: int = CELLS) -> float:
    """Sliced W1 between points on S^2 and a band-limited grid density (module docstring).

    Parameters
    ----------
    x : array_like, shape (n, 3)
        The points (the tokens of a run on S^2).
    f, theta, phi, weights, lmax
        The density on its Gauss-Legendre grid, as in :func:`projected_cdf`
        (a frame of a density file on S^2: ``rho[k]``, ``theta``, ``phi``,
        ``weights``, ``config.lmax``).
    masses : array_like, shape (n,), optional
        Masses of the points (default: equal).
    directions : array_like, shape (K, 3), optional
        Default :func:`directions`.
    cells : int
        Cells of the projected law on ``[-1, 1]``; the error is at most
        ``(h^2 / 4) max |g_u'|``, ``h = 2 / cells``.

    Returns
    -------
    float
    """
    pts = _points(x, "x")
    m = point_masses(masses, pts.shape[0], "masses")
    if isinstance(cells, bool) or not isinstance(cells, (int, np.integer)) or cells < 1:
        raise ValueError(f"cells must be an integer >= 1, got {cells!r}")
    u = _directions(directions)
    nodes = np.linspace(-1.0, 1.0, int(cells) + 1)
    G = projected_cdf(f, theta, phi, weights, lmax, u, nodes)
    total = sum(_w1_atoms_cdf(t, cum, nodes, G[k])
                for k, (t, cum) in enumerate(_sorted_projections(pts, m, u)))
    return total / u.shape[0]
