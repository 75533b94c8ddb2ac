"""Fourier multipliers of the mean-field velocity on the circle.

Grid ``theta_j = 2 pi j / M`` (``j = 0..M-1``) and NumPy's real FFT
``rho_hat_k = sum_j rho_j exp(-i k theta_j)`` (``k = 0..M//2``).  A convolution
``g(theta) = int G(u) rho(theta + u) du`` has ``g_hat_k = G~(k) rho_hat_k`` with
``G~(k) = int_0^{2 pi} G(u) exp(i k u) du``, and the two kernels of the
attention models are diagonal in Fourier space with modified Bessel functions
(``int exp(beta cos u) cos(k u) du = 2 pi I_k(beta)``):

- ``exp(beta cos u)``           -> ``2 pi I_k(beta)``          (SA normaliser Z),
- ``exp(beta cos u) sin u``     -> ``i 2 pi k I_k(beta) / beta`` (USA velocity),
- ``c sin u`` (Kuramoto)        -> ``i c pi`` at ``k = 1``, 0 elsewhere.

At ``beta = 0`` the velocity multiplier takes its limit ``i pi`` at ``k = 1``
(USA and SA are then Kuramoto with ``c = 1``).  The Bessel functions are
evaluated as ``scipy.special.ive`` (``I_k(beta) e^{-beta}``): SA only needs
the ratio ``v / Z`` and stays finite for any beta; USA multiplies back by
``e^beta`` and is limited to ``beta <= 700`` (:data:`USA_MAX_BETA`), unless
``usa_scale="n_exp_beta"``: the kernel ``exp(beta (cos u - 1)) sin u`` of the
particle option of that name (the time change ``t -> e^beta t``), finite for
every beta.
The Nyquist coefficient (``k = M/2``) of every odd multiplier and of the
derivative is set to zero (the usual convention: it has no real derivative).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

#: USA speeds grow like e^beta; above this e^beta overflows float64 soon.
USA_MAX_BETA = 700.0

#: the USA normalisations (as the particles' ``usa_scale``): ``exp(beta cos) / n`` or
#: ``exp(beta (cos - 1)) / n``.
USA_SCALES = ("n", "n_exp_beta")


@dataclass(frozen=True)
class Multipliers:
    """Fourier multipliers of one model on an ``M``-point grid (all shape ``(M//2 + 1,)``).

    Attributes
    ----------
    k : ndarray of float
        Wave numbers ``0..M//2``.
    velocity : ndarray of complex
        ``v_hat = velocity * rho_hat`` (SA: the numerator of ``v``, scaled by ``e^{-beta}``).
    normaliser : ndarray of float or None
        SA only: ``Z_hat = normaliser * rho_hat`` (scaled by ``e^{-beta}`` like ``velocity``).
    potential : ndarray of float
        ``Phi_hat = potential * rho_hat`` with ``Phi = dE/drho`` the first variation
        of the energy ``E_beta`` (``inf`` where ``e^beta`` overflows).
    flow_potential : ndarray of float
        ``s potential`` with the time scale ``s`` (``e^{-beta}`` for USA with
        ``usa_scale="n_exp_beta"``, else 1), finite for every beta in the scaled form.
    gradient : ndarray of complex
        ``i k flow_potential``: ``d_theta (s Phi)`` is the USA (or Kuramoto) velocity.
    derivative : ndarray of complex
        ``i k`` (zero at the Nyquist wave number).
    """

    k: np.ndarray
    velocity: np.ndarray
    normaliser: np.ndarray | None
    potential: np.ndarray
    flow_potential: np.ndarray
    gradient: np.ndarray
    derivative: np.ndarray


def wave_numbers(M: int) -> np.ndarray:
    """Wave numbers ``0..M//2`` of the real FFT of length ``M``, float64."""
    return np.arange(M // 2 + 1, dtype=np.float64)


def multipliers(M: int, beta: float, model: str, coupling: float = 1.0,
                usa_scale: str = "n") -> Multipliers:
    """The Fourier multipliers of ``model`` on an ``M``-point grid.

    Parameters
    ----------
    M : int
        Grid points (even).
    beta : float
        Inverse temperature (ignored for Kuramoto).
    model : {"usa", "sa", "kuramoto"}
    coupling : float
        Kuramoto coupling ``c``.
    usa_scale : {"n", "n_exp_beta"}
        USA normalisation (ignored by SA and Kuramoto).

    Returns
    -------
    Multipliers
    """
    k = wave_numbers(M)
    ik = 1j * k
    nyq = M % 2 == 0
    if nyq:
        ik[-1] = 0.0
    kint = np.arange(M // 2 + 1)
    normaliser = None
    if model == "kuramoto":
        pot = np.where(kint == 1, coupling * np.pi, 0.0)  # (c/2) r^2: Phi = c int cos(.) rho
        fpot = pot
    elif beta == 0.0:
        pot = np.where(kint == 1, np.pi, 0.0)
        fpot = pot
        if model == "sa":
            normaliser = np.where(kint == 0, 2.0 * np.pi, 0.0)
    else:
        ive = special.ive(kint, beta)
        # Phi = (1/beta) exp(beta cos) * rho, d_theta Phi = v (USA); E_beta is the same for SA
        if beta <= USA_MAX_BETA:
            pot = 2.0 * np.pi * np.exp(beta) * ive / beta
        else:
            pot = np.full(k.shape, np.inf)
        fpot = pot
        if model == "usa" and usa_scale == "n_exp_beta":
            fpot = 2.0 * np.pi * ive / beta  # e^{-beta} Phi
        elif model == "sa":
            normaliser = 2.0 * np.pi * ive
            sa_velocity = ik * (2.0 * np.pi * ive / beta)  # e^{-beta} d_theta Phi
    with np.errstate(invalid="ignore"):  # 0 * inf where e^beta overflows
        grad = ik * fpot
    grad[ik == 0] = 0.0
    vel = sa_velocity if normaliser is not None and beta > 0.0 else grad
    return Multipliers(k=k, velocity=vel, normaliser=normaliser, potential=pot,
                       flow_potential=fpot, gradient=grad, derivative=ik)


def velocity(rho: np.ndarray, beta: float, model: str, coupling: float = 1.0,
             usa_scale: str = "n") -> np.ndarray:
    """The mean-field velocity ``v[rho]`` on the grid (shape ``(M,)``), see
    :mod:`particles.meanfield.linear` for the formulas (``usa_scale="n_exp_beta"``:
    USA's times ``e^{-beta}``)."""
    rho = np.asarray(rho, dtype=np.float64)
    M = rho.shape[0]
    m = multipliers(M, beta, model, coupling, usa_scale)
    rh = np.fft.rfft(rho)
    v = np.fft.irfft(rh * m.velocity, M)
    if m.normaliser is not None:
        v = v / np.fft.irfft(rh * m.normaliser, M)
    return v
