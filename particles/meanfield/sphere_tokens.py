"""Tokens and densities on S^2: von Mises-Fisher caps and their mixtures, the kernel
density estimate of tokens, and tokens drawn from a density (issue 42, item 1).

Densities are relative to the uniform probability measure ``sigma`` (1 = uniform)
and coefficients ``a_lm`` are in ducc0's layout (orthonormal on the sphere's area,
``m >= 0``), as in :mod:`particles.meanfield.sphere`: a unit mass has
``a_00 = sqrt(4 pi)``.

**Caps.**  The von Mises-Fisher cap about a unit vector ``c``,
``exp(kappa <x, c>) / i_0(kappa)`` (unit mass; ``i_l`` the modified spherical
Bessel functions), is the plane wave ``sum_l (2l + 1) (i_l / i_0)(kappa) P_l(<x,
c>)``; with the addition theorem ``P_l(<x, c>) = 4 pi / (2l + 1) sum_m Y_lm(x)
Y_lm(c)^*`` a mixture with weights ``w_k`` (summing to 1) has

    a_lm = 4 pi (i_l / i_0)(kappa) sum_k w_k Y_lm(c_k)^*,

one adjoint transform at the centres (ducc0's ``adjoint_synthesis_general``, to
1e-12), kept to ``l <= lmax``: no grid, so nothing aliases
(:func:`cap_coefficients`).  ``i_l / i_0`` are the Bessel ratios of
:func:`particles.meanfield.zonal.bessel_ratios` (``nu = 1/2``), finite at any
``kappa``.  The truncation is the only error: ``(i_l / i_0)(kappa) ~ exp(-l (l +
1) / (2 kappa))``, so a cap of ``kappa <~ lmax^2 / 40`` keeps its tail below
1e-8 and stays positive.

**Kernel density estimate.**  The tokens' empirical measure smoothed by the cap
of width ``h`` (``kappa = 1 / h^2``; for small ``h`` a Gaussian of standard
deviation ``h`` radians about each token) is the mixture of caps about the
tokens (:func:`kde_coefficients`).  The default width, :func:`default_bandwidth`
``= 2 pi / lmax``, damps degree ``lmax`` by ``exp(-2 pi^2) ~ 3e-9``, as the
circle's two grid cells do (:func:`particles.meanfield.kde.default_bandwidth`):
the narrowest kernel the degrees resolve, which keeps the low degrees that grow
as the tokens have them.

**Drawing tokens.**  :func:`sample_sphere_density` draws i.i.d. tokens from a
band-limited density by rejection from ``sigma``: a uniform proposal ``x`` is kept
with probability ``f(x) / B``, ``f(x)`` summed from the coefficients at ``x``
(ducc0's ``synthesis_general``), ``B`` a certified bound of ``max f``
(:func:`density_bound`): every point of the sphere lies within ``delta`` of a
node of an equiangular grid, and Bernstein's inequality for spherical
polynomials of degree ``L`` (``|grad f| <= L max |f|``, the trigonometric one
along the great circle through the point) gives ``max f <= max_nodes f / (1 -
delta L)``, with ``delta L <= 1/4`` here.  The draws are then exactly i.i.d. from
``f`` (to the transforms' 1e-12); a token costs ``B`` proposals on average
(``B ~ 2 kappa`` for a cap).
"""

from __future__ import annotations

import math

import numpy as np
from ducc0.sht import experimental as sht
from numpy.typing import ArrayLike
from scipy.fft import next_fast_len

from particles.fields.spectral import locations
from particles.meanfield.zonal import bessel_ratios

__all__ = ["cap_coefficients", "default_bandwidth", "density_bound", "density_power",
           "grid_coefficients", "kde_coefficients", "sample_sphere_density",
           "uniform_directions"]

#: accuracy asked of ducc0's transforms at arbitrary points (it refuses less than 2e-13).
TRANSFORM_EPS = 1e-12

#: Bernstein margin: the bound's grid puts every point within ``1 / (4 lmax)`` of a node.
MARGIN = 0.25

#: grid values of the bound computed per block of rings (memory: about this many floats).
BLOCK = 1 << 21

#: proposals drawn (and evaluated) at a time.
PROPOSALS = 1 << 14

#: a density below ``-NEGATIVE * max f`` somewhere is not drawn from (the solver's rule).
NEGATIVE = 1e-6


def _points(x: ArrayLike, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != 3 or x.shape[0] == 0 or not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite points of shape (n, 3), got shape {x.shape}")
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    if not np.all(norm > 0):
        raise ValueError(f"{name} must be non-zero vectors")
    return x / norm


def _degree(lmax: int) -> int:
    if isinstance(lmax, bool) or not isinstance(lmax, (int, np.integer)) or lmax < 1:
        raise ValueError(f"lmax must be an integer >= 1, got {lmax!r}")
    return int(lmax)


def degrees(lmax: int) -> np.ndarray:
    """The degree ``l`` of every coefficient in ducc0's layout, shape ((lmax+1)(lmax+2)/2,)."""
    return np.concatenate([np.arange(m, lmax + 1) for m in range(lmax + 1)])


def uniform_directions(count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` i.i.d. uniform unit vectors of R^3 (normalised Gaussians), shape (count, 3)."""
    g = rng.standard_normal((int(count), 3))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def cap_coefficients(centres: ArrayLike, kappa: float, lmax: int,
                     weights: ArrayLike | None = None) -> np.ndarray:
    """Coefficients of the mixture of von Mises-Fisher caps (module docstring).

    Parameters
    ----------
    centres : array_like, shape (K, 3)
        Cap centres (normalised here).
    kappa : float
        Concentration ``>= 0`` of every cap (0: the uniform density).
    lmax : int
        Highest degree kept.
    weights : array_like, shape (K,), optional
        Positive weights (normalised to sum 1; default equal).

    Returns
    -------
    ndarray of complex, shape ((lmax+1)(lmax+2)/2,)
        ``a_lm`` of ``sum_k w_k exp(kappa <x, c_k>) / i_0(kappa)``, ``a_00 = sqrt(4 pi)``.
    """
    c = _points(centres, "centres")
    lmax = _degree(lmax)
    kappa = float(kappa)
    if not (math.isfinite(kappa) and kappa >= 0):
        raise ValueError(f"kappa must be finite and >= 0, got {kappa!r}")
    w = np.ones(c.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (c.shape[0],) or not np.all(np.isfinite(w)) or not np.all(w > 0):
        raise ValueError(f"weights must be {c.shape[0]} positive numbers, got {weights!r}")
    alm = sht.adjoint_synthesis_general(lmax=lmax, spin=0, map=(w / w.sum())[None],
                                        loc=locations(c), epsilon=TRANSFORM_EPS,
                                        nthreads=1)[0]
    ratio = bessel_ratios(0.5, kappa, lmax)
    return 4.0 * math.pi * ratio[degrees(lmax)] * alm


def default_bandwidth(lmax: int) -> float:
    """``2 pi / lmax`` radians: degree ``lmax`` damped by ``exp(-2 pi^2)`` (module docstring)."""
    return 2.0 * math.pi / int(lmax)


def kde_coefficients(x: ArrayLike, lmax: int, bandwidth: float | None = None,
                     masses: ArrayLike | None = None) -> np.ndarray:
    """The kernel density estimate of tokens on S^2, as coefficients.

    Parameters
    ----------
    x : array_like, shape (n, 3)
        Tokens (normalised here).
    lmax : int
        Highest degree (``>= 1``).
    bandwidth : float, optional
        Kernel width ``h`` in radians (``kappa = 1 / h^2``), in ``[pi / (2 lmax), pi]``
        (half a degree's wavelength at least); default :func:`default_bandwidth`.
    masses : array_like, shape (n,), optional
        Token masses (default equal).

    Returns
    -------
    ndarray of complex, shape ((lmax+1)(lmax+2)/2,)
        ``a_lm`` of the estimate (unit mass).

    Raises
    ------
    ValueError
        Bad tokens or masses, a bandwidth outside the range.
    """
    lmax = _degree(lmax)
    h = default_bandwidth(lmax) if bandwidth is None else float(bandwidth)
    low = math.pi / (2 * lmax)
    if not low <= h <= math.pi:
        raise ValueError(f"bandwidth must be in [pi / (2 lmax), pi] = [{low:.4g}, "
                         f"{math.pi:.4g}] radians, got {bandwidth!r}")
    return cap_coefficients(_points(x, "tokens"), 1.0 / (h * h), lmax, masses)


def grid_coefficients(rho: ArrayLike, lmax: int) -> np.ndarray:
    """Coefficients of a density of degree ``<= lmax`` given on a Gauss-Legendre grid.

    Parameters
    ----------
    rho : array_like, shape (ntheta, nphi)
        Values at ducc0's Gauss-Legendre rings (colatitudes increasing from the north
        pole) and ``nphi`` equispaced longitudes from 0: any such grid with
        ``ntheta > lmax`` and ``nphi > 2 lmax`` (a density file's, whatever ``nphi``
        the solver that wrote it used).
    lmax : int

    Returns
    -------
    ndarray of complex, shape ((lmax+1)(lmax+2)/2,)
        Exact for a band-limited ``rho`` (the quadrature integrates degree ``2 lmax``).
    """
    f = np.asarray(rho, dtype=np.float64)
    lmax = _degree(lmax)
    if f.ndim != 2 or f.shape[0] <= lmax or f.shape[1] <= 2 * lmax:
        raise ValueError(f"a density of degree {lmax} needs a grid of more than {lmax} x "
                         f"{2 * lmax} points, got shape {f.shape}")
    ntheta, nphi = f.shape
    cell = sht.get_gridweights("GL", ntheta)[:, None] / nphi
    return sht.adjoint_synthesis_2d(map=(f * cell)[None], spin=0, lmax=lmax, geometry="GL",
                                    nthreads=1)[0]


def density_power(rho: ArrayLike, lmax: int) -> np.ndarray:
    """The normalised degree-l power of a density on S^2, the continuum's
    :func:`particles.analysis.harmonics.normalized_power`.

    ``Q_l = E_{x, y ~ f} G_l(<x, y>) = sum_m |a_lm|^2 / (4 pi (2l + 1))`` (``G_l = P_l``
    on S^2; ``m`` of both signs): 1 at ``l = 0`` for unit mass, ``(i_l / i_0)(kappa)^2``
    for a cap, 0 for ``l >= 1`` of the uniform density.  ``n`` tokens drawn i.i.d. from
    ``f`` have ``E Q_l = (1 - 1/n) Q_l(f) + 1/n``.

    Parameters
    ----------
    rho : array_like, shape (ntheta, nphi)
        As :func:`grid_coefficients`.
    lmax : int

    Returns
    -------
    ndarray, shape (lmax + 1,)
    """
    lmax = _degree(lmax)
    a = grid_coefficients(rho, lmax)
    ell = degrees(lmax)
    twice = np.where(np.arange(ell.size) > lmax, 2.0, 1.0)  # the m > 0 entries follow m = 0
    power = np.bincount(ell, weights=twice * (a.real**2 + a.imag**2), minlength=lmax + 1)
    return power / (4 * math.pi * (2 * np.arange(lmax + 1) + 1))


def _grid_extremes(alm: np.ndarray, lmax: int) -> tuple[float, float, float]:
    """Max and min of the function of ``alm`` over an equiangular grid (poles included),
    and ``delta``: no point of the sphere is farther than it from a node."""
    ntheta = math.ceil(math.pi * lmax / MARGIN) + 1
    nphi = next_fast_len(math.ceil(2 * math.pi * lmax / MARGIN))
    theta = np.linspace(0.0, math.pi, ntheta)
    delta = 0.5 * (math.pi / (ntheta - 1) + 2 * math.pi / nphi)
    hi, lo = -math.inf, math.inf
    rings = max(1, BLOCK // nphi)
    for a in range(0, ntheta, rings):
        th = theta[a:a + rings]
        k = th.size
        vals = sht.synthesis(alm=alm[None], theta=th, lmax=lmax, spin=0,
                             nphi=np.full(k, nphi, dtype=np.uintp), phi0=np.zeros(k),
                             ringstart=(np.arange(k) * nphi).astype(np.uintp), nthreads=1)[0]
        hi, lo = max(hi, float(vals.max())), min(lo, float(vals.min()))
    return hi, lo, delta


def density_bound(alm: ArrayLike, lmax: int) -> float:
    """A certified upper bound of ``max f`` over the sphere for the function of ``alm``
    (degree ``<= lmax``): the maximum over a grid within ``delta`` of every point,
    divided by ``1 - delta lmax`` (Bernstein; module docstring).

    Raises
    ------
    ValueError
        ``f`` is not positive somewhere on the grid (below ``-1e-6 max f``).
    """
    alm = np.asarray(alm, dtype=np.complex128)
    lmax = _degree(lmax)
    hi, lo, delta = _grid_extremes(alm, lmax)
    if not hi > 0 or lo < -NEGATIVE * hi:
        raise ValueError(f"not a probability density: its minimum {lo:.3g} is below "
                         f"-{NEGATIVE:g} times its maximum {hi:.3g}")
    # Bernstein bounds sup |f|: take the larger side (f may dip slightly below 0)
    return max(hi, -lo) / (1.0 - delta * lmax)


def sample_sphere_density(rho: ArrayLike, lmax: int, n: int,
                          rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` i.i.d. tokens from a density on S^2 (exact rejection; module docstring).

    Parameters
    ----------
    rho : array_like, shape (ntheta, nphi)
        A density of degree ``<= lmax`` on a Gauss-Legendre grid
        (:func:`grid_coefficients`; a frame of a density file of ``particles
        meanfield --d 3``), relative to the uniform measure (its mass need not be 1).
    lmax : int
    n : int
        Number of tokens, ``>= 1``.
    rng : numpy.random.Generator
        Source of the proposals and uniforms, drawn in blocks of :data:`PROPOSALS`:
        the same generator draws the same tokens, and the first ``k`` of ``n`` are
        the ``k`` it draws when asked for ``k``.

    Returns
    -------
    ndarray, shape (n, 3)
        Unit vectors, in the order drawn.

    Raises
    ------
    ValueError
        A grid too small for ``lmax``, or a density that is negative somewhere.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    alm = grid_coefficients(rho, lmax)
    lmax = _degree(lmax)
    bound = density_bound(alm, lmax)
    out, have = [], 0
    while have < n:
        # proposals in blocks of a fixed size: the first k of n tokens are the k drawn
        # alone from the same generator (as the circle's inverse distribution does)
        x = uniform_directions(PROPOSALS, rng)
        u = rng.uniform(0.0, bound, PROPOSALS)
        f = sht.synthesis_general(alm=alm[None], spin=0, lmax=lmax, loc=locations(x),
                                  epsilon=TRANSFORM_EPS, nthreads=1)[0]
        keep = x[u < f][: n - have]
        out.append(keep)
        have += keep.shape[0]
    return np.concatenate(out)
