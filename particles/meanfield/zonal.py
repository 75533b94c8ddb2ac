"""Zonal kernels on S^{d-1}: Funk-Hecke coefficients, Gegenbauer polynomials and the
linear theory of the uniform density in any dimension (DESIGN.md section 2).

Conventions (``d >= 3``, ``nu = (d - 2) / 2``): densities are taken relative
to the uniform probability measure ``sigma`` of the sphere (the uniform
density is 1; on S^2 a density ``rho`` per unit area is ``f / (4 pi)``), so
nothing overflows for ``d`` up to thousands.  The kernel ``exp(beta <x, y>)``
acts on a harmonic of degree ``l`` by the Funk-Hecke factor

    mu_l = int exp(beta <x, y>) Y_l(y) dsigma(y) / Y_l(x)
         = Gamma(nu + 1) (2 / beta)^nu I_{l + nu}(beta),

``mu_0 = E_sigma exp(beta t)`` (= ``sinh(beta) / beta`` on S^2), and the
Laplace-Beltrami operator by ``-l (l + d - 2)``.  Around the uniform density
the degree-``l`` part of ``f`` grows at

- USA (``v = grad (K f) / beta``): ``l (l + d - 2) (s mu_l / beta - D)``,
- SA (``v = grad (K f) / (beta K f)``): ``l (l + d - 2) (mu_l / (beta mu_0) - D)``,

with ``s = e^{-beta}`` for ``usa_scale="n_exp_beta"`` (else 1); at ``d = 2``
these are the circle's rates of :mod:`particles.meanfield.linear`.  Since
``I_{l + nu}`` decreases in ``l``, the uniform state is stable exactly above
``D_c`` = the ``l = 1`` drift (:func:`critical_diffusion_sphere`).

The ratios ``I_{l + nu}(beta) / I_nu(beta)`` come from Miller's backward
recurrence and ``mu_0`` from its power series ``0F1(; nu + 1; beta^2 / 4)``
(in logarithms), both valid for any ``nu`` (``scipy.special.ive`` underflows
for ``nu`` in the hundreds).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import linalg, special

#: models of the solvers on S^{d-1} (Kuramoto has no zonal analogue here).
SPHERE_MODELS = ("usa", "sa")


def bessel_ratios(nu: float, beta: float, lmax: int) -> np.ndarray:
    """``I_{nu + l}(beta) / I_nu(beta)`` for ``l = 0..lmax``, shape (lmax + 1,).

    Miller's algorithm: the recurrence ``I_{v-1} = (2 v / beta) I_v + I_{v+1}``
    run downwards from far above ``nu + lmax`` (where the start's error has
    died out), rescaled against overflow.  ``beta = 0`` gives ``[1, 0, 0, ...]``.
    """
    out = np.zeros(lmax + 1)
    out[0] = 1.0
    if beta == 0.0:
        return out
    start = lmax + int(beta + 10.0 * math.sqrt(beta)) + 40
    hi, lo = 0.0, 1e-300  # I_{v+1}, I_v at v = nu + start
    vals = np.zeros(lmax + 1)
    for k in range(start, 0, -1):
        v = nu + k
        hi, lo = lo, (2.0 * v / beta) * lo + hi  # lo <- I_{v-1}
        if k - 1 <= lmax:
            vals[k - 1] = lo
        if lo > 1e250:
            hi, lo = hi * 1e-250, lo * 1e-250
            vals *= 1e-250
    return vals / vals[0]


def uniform_mean(nu: float, beta: float) -> float:
    """``log mu_0 = log E_sigma exp(beta t) = log 0F1(; nu + 1; beta^2 / 4)`` (series
    in logarithms: finite for any ``nu`` and ``beta <= 700``)."""
    if beta == 0.0:
        return 0.0
    k = np.arange(int(2.0 * beta) + 60, dtype=np.float64)
    logs = 2.0 * k * math.log(beta / 2.0) - special.gammaln(k + 1) \
        - (special.gammaln(nu + 1 + k) - special.gammaln(nu + 1))
    return float(special.logsumexp(logs))


def funk_hecke(d: int, beta: float, lmax: int, *, log_scale: float = 0.0) -> np.ndarray:
    """Funk-Hecke factors ``mu_l e^{-log_scale}`` of ``exp(beta <x, y>)`` on S^{d-1},
    relative to the uniform probability measure, shape (lmax + 1,).

    ``log_scale = beta`` gives the factors of ``exp(beta (<x, y> - 1))`` (finite for
    every beta); ``log_scale = log mu_0`` those normalised by ``mu_0`` (SA).
    """
    nu = (d - 2) / 2.0
    return math.exp(uniform_mean(nu, beta) - log_scale) * bessel_ratios(nu, beta, lmax)


def laplace_eigenvalues(d: int, lmax: int) -> np.ndarray:
    """``l (l + d - 2)`` for ``l = 0..lmax`` (minus the Laplace-Beltrami eigenvalues)."""
    ell = np.arange(lmax + 1, dtype=np.float64)
    return ell * (ell + d - 2.0)


def drift_rates(d: int, beta: float, lmax: int, model: str = "usa",
                usa_scale: str = "n") -> np.ndarray:
    """``s mu_l / beta`` (USA) or ``mu_l / (beta mu_0)`` (SA), ``l = 0..lmax``: the growth
    rate of degree ``l`` divided by ``l (l + d - 2)``, before diffusion.

    At ``beta = 0`` the limit: ``1 / d`` at ``l = 1``, 0 elsewhere (both models).
    """
    if model not in SPHERE_MODELS:
        raise ValueError(f"model must be one of {', '.join(SPHERE_MODELS)}, got {model!r}")
    if not math.isfinite(beta) or beta < 0:
        raise ValueError(f"beta must be finite and >= 0, got {beta!r}")
    out = np.zeros(lmax + 1)
    if beta == 0.0:
        if lmax >= 1:
            out[1] = 1.0 / d
        return out
    nu = (d - 2) / 2.0
    if model == "sa":
        scale = uniform_mean(nu, beta)
    else:
        scale = beta if usa_scale == "n_exp_beta" else 0.0
    return funk_hecke(d, beta, lmax, log_scale=scale) / beta


def growth_rate_sphere(ell, d: int, beta: float, model: str = "usa", D: float = 0.0,
                       usa_scale: str = "n") -> np.ndarray:
    """Growth rate of degree ``ell`` about the uniform density on S^{d-1} (module docstring).

    Parameters
    ----------
    ell : int or array_like of int
        Degrees ``>= 0``, any shape (``l = 0``, the mass, has rate 0).
    d : int
        Ambient dimension ``>= 2`` (``d = 2``: the circle's rates).
    beta : float
    model : {"usa", "sa"}
    D : float
        Diffusion coefficient (``sigma^2 / 2`` for particle noise ``sigma``).
    usa_scale : {"n", "n_exp_beta"}

    Returns
    -------
    ndarray of float, the shape of ``ell``
    """
    ell = np.asarray(ell)
    if not np.issubdtype(ell.dtype, np.integer) or np.any(ell < 0):
        raise ValueError("ell must be integer degrees >= 0")
    if not math.isfinite(D) or D < 0:
        raise ValueError(f"D must be finite and >= 0, got {D!r}")
    lmax = int(ell.max()) if ell.size else 0
    drift = drift_rates(d, beta, max(lmax, 1), model, usa_scale)
    return laplace_eigenvalues(d, max(lmax, 1))[ell] * (drift[ell] - D)


def critical_diffusion_sphere(d: int, beta: float, model: str = "usa",
                              usa_scale: str = "n") -> float:
    """Diffusion ``D_c`` above which the uniform density on S^{d-1} is linearly stable:
    the ``l = 1`` drift ``mu_1 / beta`` (USA; SA: divided by ``mu_0``)."""
    return float(drift_rates(d, beta, 1, model, usa_scale)[1])


# ------------------------------------------------------------- Gegenbauer basis
def _recurrence(d: int, n: int) -> np.ndarray:
    """``b_l`` (``l = 1..n``) of the orthonormal recurrence ``t q_l = b_{l+1} q_{l+1} +
    b_l q_{l-1}`` for the weight ``(1 - t^2)^{(d-3)/2}`` (Gegenbauer ``lambda = nu``)."""
    lam = (d - 2) / 2.0
    ell = np.arange(1, n + 1, dtype=np.float64)
    return np.sqrt(ell * (ell + 2 * lam - 1) / (4 * (ell + lam) * (ell + lam - 1)))


def gauss_nodes(d: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss quadrature for ``t = cos(theta)`` on S^{d-1} (``d >= 3``): nodes (increasing)
    and weights summing to 1, each shape (n,); exact for polynomials of degree
    ``< 2 n`` against the normalised weight ``(1 - t^2)^{(d-3)/2}``.  Nodes from the
    Jacobi matrix (Golub-Welsch), weights as Christoffel numbers ``1 / sum_l q_l(t)^2``
    (accurate to round-off relative to each weight, also the tiny outer ones)."""
    if n == 1:
        return np.zeros(1), np.ones(1)
    nodes = linalg.eigh_tridiagonal(np.zeros(n), _recurrence(d, n - 1), eigvals_only=True)
    nodes = 0.5 * (nodes - nodes[::-1])  # exactly symmetric, as the weight is
    q, _ = gegenbauer(d, n - 1, nodes)
    w = 1.0 / np.sum(q * q, axis=0)
    return nodes, w / w.sum()


def gegenbauer(d: int, lmax: int, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The orthonormal zonal polynomials ``q_l`` (``E_sigma q_l q_k = delta_lk``, ``q_0 = 1``,
    ``q_l(1) > 0``) and their derivatives at ``t``, each shape (lmax + 1, len(t))."""
    t = np.asarray(t, dtype=np.float64)
    b = _recurrence(d, lmax + 1)  # b[l - 1] = b_l
    q = np.zeros((lmax + 1, t.size))
    dq = np.zeros_like(q)
    q[0] = 1.0
    if lmax >= 1:
        q[1] = t / b[0]
        dq[1] = 1.0 / b[0]
    for ell in range(1, lmax):
        q[ell + 1] = (t * q[ell] - b[ell - 1] * q[ell - 1]) / b[ell]
        dq[ell + 1] = (q[ell] + t * dq[ell] - b[ell - 1] * dq[ell - 1]) / b[ell]
    return q, dq
