"""Linear stability of the uniform density on the circle (DESIGN.md section 2).

Conventions: ``rho`` is a probability density on ``[0, 2 pi)`` (``int rho = 1``)
and the velocity field is

- USA: ``v(theta) = int exp(beta cos(phi - theta)) sin(phi - theta) rho(phi) dphi``,
- SA: the same divided by ``Z(theta) = int exp(beta cos(phi - theta)) rho(phi) dphi``,
- Kuramoto (identical frequencies): ``v(theta) = c int sin(phi - theta) rho(phi) dphi``,

the ``n -> infinity`` limit of the particle models with unit masses.  A small
perturbation ``rho = 1/(2 pi) + eps cos(k theta)`` grows like ``exp(lambda_k t)``
with

- USA: ``lambda_k = k^2 I_k(beta) / beta - D k^2``,
- SA: ``lambda_k = k^2 I_k(beta) / (beta I_0(beta)) - D k^2``,
- Kuramoto: ``lambda_1 = c / 2 - D``, ``lambda_k = -D k^2`` for ``k >= 2``,

from ``int exp(beta cos u) sin u sin(k u) du = 2 pi k I_k(beta) / beta``.  For
noisy particles ``d theta = v dt + sigma dB`` the diffusion is ``D = sigma^2 / 2``.
Since ``I_k(beta)`` decreases in ``k``, the uniform density is stable exactly
when ``D > lambda_1(D=0)``: :func:`critical_diffusion`.
"""

from __future__ import annotations

import numpy as np
from scipy import special

#: models with a mean-field limit on the circle.
MEANFIELD_MODELS = ("usa", "sa", "kuramoto")


def _check(model: str, beta: float, D) -> None:
    if model not in MEANFIELD_MODELS:
        raise ValueError(f"model must be one of {', '.join(MEANFIELD_MODELS)}, got {model!r}")
    if not np.isfinite(beta) or beta < 0:
        raise ValueError(f"beta must be finite and >= 0, got {beta!r}")
    if not np.all(np.isfinite(D)) or np.any(np.asarray(D) < 0):
        raise ValueError(f"D must be finite and >= 0, got {D!r}")


def _attention_rate(k: np.ndarray, beta: float, model: str) -> np.ndarray:
    """``k^2 I_k(beta) / beta`` (USA) or divided by ``I_0(beta)`` (SA), shape of ``k``."""
    k = np.abs(k).astype(float)
    if beta == 0.0:
        # I_k(beta)/beta -> (beta/2)^(k-1) / (2 k!) ... : 1/2 for k = 1, 0 for k >= 2
        return np.where(k == 1, 0.5, 0.0)
    if model == "usa":
        # exp(beta) * ive = iv without overflow for large beta
        return k**2 * np.exp(beta) * special.ive(k, beta) / beta
    return k**2 * special.ive(k, beta) / (beta * special.ive(0, beta))


def growth_rate(k, beta: float, model: str = "usa", D=0.0,
                coupling: float = 1.0) -> np.ndarray:
    """Growth rate ``lambda_k`` of Fourier mode ``k`` around the uniform density.

    Parameters
    ----------
    k : int or array_like of int
        Mode numbers, any shape; ``k = 0`` (the mass) has rate 0.
    beta : float
        Inverse temperature (ignored for Kuramoto).
    model : {"usa", "sa", "kuramoto"}
    D : float or array_like
        Diffusion coefficient (``sigma^2 / 2`` for particle noise ``sigma``),
        broadcast against ``k``.
    coupling : float
        Kuramoto coupling ``c`` (ignored for SA and USA).

    Returns
    -------
    ndarray of float, the broadcast shape of ``k`` and ``D``
        ``lambda_k`` (positive: the mode grows).
    """
    D = np.asarray(D, dtype=float)
    _check(model, float(beta), D)
    k = np.asarray(k)
    if not np.issubdtype(k.dtype, np.integer):
        raise ValueError("k must be integer mode numbers")
    if model == "kuramoto":
        drift = np.where(np.abs(k) == 1, coupling / 2.0, 0.0)
    else:
        drift = _attention_rate(k, float(beta), model)
    return drift - D * k.astype(float) ** 2


def critical_diffusion(beta: float, model: str = "usa", coupling: float = 1.0) -> float:
    """Diffusion ``D_c`` above which the uniform density is linearly stable.

    ``D_c = I_1(beta) / beta`` (USA), ``I_1(beta) / (beta I_0(beta))`` (SA),
    ``c / 2`` (Kuramoto): the rate of mode 1, the last to stabilise.
    """
    return float(growth_rate(1, beta, model, 0.0, coupling))


def critical_noise(beta: float, model: str = "usa", coupling: float = 1.0) -> float:
    """Particle noise ``sigma_c = sqrt(2 D_c)`` of :func:`critical_diffusion`."""
    return float(np.sqrt(2.0 * critical_diffusion(beta, model, coupling)))


def fastest_mode(beta: float, model: str = "usa", D: float = 0.0, kmax: int = 4096) -> int:
    """The mode ``k >= 1`` with the largest growth rate (``argmax k^2 I_k(beta)``).

    This is about the number of clusters that form first from a near-uniform
    start.  Returns 1 for Kuramoto.
    """
    ks = np.arange(1, kmax + 1)
    return int(ks[np.argmax(growth_rate(ks, beta, model, D))])


def incoherent_order(n, beta: float, model: str = "usa", D: float = 0.0,
                     coupling: float = 1.0) -> np.ndarray:
    """Mean order parameter ``E r`` of ``n`` noisy tokens in the incoherent state.

    Above the threshold (``D > D_c``, :func:`critical_diffusion`) the uniform
    state is stable and ``z = (1/n) sum_j e^{i theta_j}`` fluctuates about 0: to
    linear order it is a complex Ornstein-Uhlenbeck process, relaxing at rate
    ``D - D_c`` and driven by the tokens' noise (intensity ``2 D / n``), so
    ``E |z|^2 = D / (n (D - D_c))`` and ``r = |z|`` is Rayleigh distributed with
    ``E r = sqrt(pi D / (4 n (D - D_c)))``: ``sqrt(pi / (4 n))`` (independent
    uniform angles) for ``D >> D_c``, enhanced near the threshold (the linear
    theory holds while that is still ``<< 1``; it diverges at ``D_c``).

    Parameters
    ----------
    n : int or array_like
        Number of tokens ``>= 1`` (broadcast against ``D``).
    beta, model
        As for :func:`growth_rate`.
    D : float or array_like
        Diffusion coefficient (``sigma^2 / 2``).
    coupling
        As for :func:`growth_rate`.

    Returns
    -------
    ndarray of float
        ``E r``; ``inf`` where ``D <= D_c`` (no incoherent steady state).
    """
    Dc = critical_diffusion(beta, model, coupling)
    n = np.asarray(n, dtype=float)
    D = np.asarray(D, dtype=float)
    if not np.all(np.isfinite(n)) or np.any(n < 1):
        raise ValueError(f"n must be >= 1, got {n!r}")
    if np.any(np.isnan(D)) or np.any(D < 0):
        raise ValueError(f"D must be >= 0, got {D!r}")
    # D / (D - D_c) as 1 / (1 - D_c / D): 1 at D = inf
    with np.errstate(divide="ignore", invalid="ignore"):
        enhancement = np.where(D > Dc, 1.0 / (1.0 - Dc / D), np.inf)
    return np.sqrt(np.pi * enhancement / (4.0 * n))
