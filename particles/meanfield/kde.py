"""A density on the mean-field grid from particles: a kernel density estimate on the circle.

:func:`kde_density` turns token angles into the solver's grid density
``rho(theta_j)``, ``theta_j = 2 pi j / M``, with the von Mises kernel

    rho(theta) = (1/n) sum_i exp(kappa cos(theta - theta_i)) / (2 pi I_0(kappa)),
    kappa = 1 / h^2,

which is periodic and positive by construction and, for small ``h``, a
Gaussian of standard deviation ``h`` (radians) around each token: its
Fourier coefficients are ``I_k(kappa) / I_0(kappa) ~ exp(-k^2 h^2 / 2)``, so
a mode ``k`` of the tokens' empirical measure is kept whole while ``k h``
is small.  The default bandwidth (:func:`default_bandwidth`) is two grid
cells, ``h = 4 pi / M``: the narrowest kernel the grid resolves (its mode
``M/2`` is damped by ``exp(-2 pi^2) ~ 3e-9``, so nothing aliases), which
keeps every mode that can grow (``k^2 I_k(beta)/beta > D k^2`` for the few
lowest ``k``) as the tokens have it: a mean-field solve started from it
follows the particles' own initial fluctuations, not a different draw.
The grid density is normalised to unit mass (``sum(rho) 2 pi / M = 1``), as
every initial density of :mod:`particles.meanfield.initial` is.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from particles.meanfield.initial import grid

__all__ = ["default_bandwidth", "kde_density"]

#: token angles evaluated against the grid per block (bounds the memory: block x M).
BLOCK = 4096


def default_bandwidth(M: int) -> float:
    """Two grid cells, ``4 pi / M`` radians (see the module docstring)."""
    return 4.0 * math.pi / int(M)


def kde_density(angles: ArrayLike, M: int, bandwidth: float | None = None) -> np.ndarray:
    """The von Mises kernel density estimate of ``angles`` on the ``M``-point grid.

    Parameters
    ----------
    angles : array_like, shape (n,)
        Token angles (radians, any range).
    M : int
        Grid points (even, >= 8).
    bandwidth : float, optional
        Kernel width ``h`` in radians (``kappa = 1 / h^2``), at least one grid
        cell ``2 pi / M``; default :func:`default_bandwidth`.

    Returns
    -------
    ndarray, shape (M,)
        Positive, ``sum(rho) * 2 pi / M == 1`` to round-off.

    Raises
    ------
    ValueError
        No angles, non-finite angles, or a bandwidth below one grid cell or
        above ``pi`` (a kernel that wide is nearly flat).
    """
    theta = np.asarray(angles, dtype=np.float64).ravel()
    if theta.size == 0 or not np.all(np.isfinite(theta)):
        raise ValueError(f"a density needs finite angles, got {theta.size} values"
                         + ("" if theta.size == 0 else " with NaN or infinity"))
    M = int(M)
    h = default_bandwidth(M) if bandwidth is None else float(bandwidth)
    if not 2.0 * math.pi / M <= h <= math.pi:
        raise ValueError(f"bandwidth must be in [2 pi / M, pi] = [{2 * math.pi / M:.4g}, "
                         f"{math.pi:.4g}] radians (one grid cell at least), got {bandwidth!r}")
    kappa = 1.0 / (h * h)
    nodes = grid(M)
    rho = np.zeros(M)
    for a in range(0, theta.size, BLOCK):
        # exp(kappa (cos - 1)) <= 1: no overflow at any kappa; the constant cancels
        # in the normalisation below
        u = nodes[None, :] - theta[a:a + BLOCK, None]
        rho += np.exp(kappa * (np.cos(u) - 1.0)).sum(axis=0)
    return rho / (rho.sum() * 2.0 * math.pi / M)
