"""Trigonometric moments of a density on the circle: the mean field's order parameter.

On the solver's grid ``theta_j = 2 pi j / M`` the ``k``-th moment of a density is
``z_k = sum_j rho_j exp(i k theta_j) / sum_j rho_j`` (the grid quadrature of
``int rho e^{i k theta} / int rho``, exact for the trigonometric polynomials the
grid resolves); ``z_1 = r e^{i psi}`` is the continuum twin of the particles'
order parameter (:func:`particles.observables.order.order_parameter`: the same
convention, the mean of ``e^{i theta}``), and ``|z_k|`` the amplitude of Fourier
mode ``k`` relative to the mass, whose log-slope is the mode's growth rate
(:func:`particles.meanfield.linear.growth_rate`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from particles.observables.order import OrderParameter

__all__ = ["density_moment", "density_order_parameter"]


def density_moment(rho: ArrayLike, k: int = 1) -> np.ndarray:
    """The ``k``-th trigonometric moment ``z_k`` of densities on the grid.

    Parameters
    ----------
    rho : array_like, shape (..., M)
        Densities at ``theta_j = 2 pi j / M`` (any leading axes: frames); need
        not be normalised (the moment is divided by the grid mass).
    k : int
        Mode number (``k = 0`` gives 1).

    Returns
    -------
    ndarray of complex, shape (...)

    Raises
    ------
    ValueError
        ``rho`` not finite or of grid mass <= 0 (any row), or ``k`` not an integer.
    """
    r = np.asarray(rho, dtype=np.float64)
    if r.ndim < 1 or r.shape[-1] < 1:
        raise ValueError(f"rho must have shape (..., M) with M >= 1, got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("rho must be finite, got NaN or inf entries")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"k must be an integer mode number, got {k!r}")
    mass = r.sum(axis=-1)
    if not np.all(mass > 0):
        raise ValueError("rho must have a positive mass on the grid (every row)")
    M = r.shape[-1]
    phase = np.exp(2j * np.pi * int(k) * np.arange(M) / M)
    return (r @ phase) / mass


def density_order_parameter(rho: ArrayLike) -> OrderParameter:
    """Order parameter ``r e^{i psi} = z_1`` of densities on the grid.

    Parameters
    ----------
    rho : array_like, shape (..., M)
        As for :func:`density_moment` (``DensityResult.rho``: one per frame).

    Returns
    -------
    OrderParameter
        ``r`` in [0, 1] for a non-negative density (0: uniform) and ``psi``, shape (...).
    """
    z = density_moment(rho, 1)
    return OrderParameter(r=np.abs(z), psi=np.angle(z))
