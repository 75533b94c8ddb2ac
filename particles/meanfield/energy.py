"""Interaction energy, free energy and dissipation of a density on the circle.

For a probability density ``rho`` on the grid of :mod:`particles.meanfield.spectral`:

- ``E_beta[rho] = 1/(2 beta) int int exp(beta cos(t - s)) rho(t) rho(s) dt ds``, the
  ``n -> infinity`` limit of the particle energy of :mod:`particles.observables`
  (``1/(2 beta n^2) sum_ij exp(beta <x_i, x_j>)``, unit masses).  At ``beta = 0``
  it is the limit up to a constant, ``r^2 / 2`` with ``r = |int e^{i t} rho|``,
  and for Kuramoto with coupling ``c``, ``c r^2 / 2``.  It depends on the model
  only through Kuramoto's coupling: SA and USA share ``E_beta``.
- ``Phi = dE/drho = (1/beta) exp(beta cos) * rho`` its first variation; the USA
  velocity is ``v = d_theta Phi`` (USA is the Wasserstein gradient *ascent* of
  ``E``), and so is Kuramoto's.
- With diffusion, ``d_t rho = -d_theta(rho u)``, ``u = v - D d_theta log rho``, and
  the free energy ``F = -E + D int rho log rho`` satisfies

      dF/dt = -int rho (d_theta Phi - D d_theta log rho) u   (= -``dissipation``).

  For USA and Kuramoto ``u = d_theta Phi - D d_theta log rho`` and the
  dissipation is ``int rho |v - D d_theta log rho|^2 >= 0`` (the
  Wasserstein-gradient-flow identity: ``F`` decreases, ``E`` increases when
  ``D = 0``).  For SA, ``v = d_theta Phi / Z``: without diffusion the
  dissipation ``int rho Z v^2`` is still ``>= 0`` (``E`` increases, as for the
  particles, DESIGN.md section 2), with diffusion it is the rate of ``-F`` but
  has no sign.

With ``usa_scale="n_exp_beta"`` (USA in the time ``e^beta t``) the flow is the
gradient ascent of ``e^{-beta} E``, so ``F = -e^{-beta} E + D int rho log rho``
and ``Phi`` is scaled alike in the dissipation; ``energy`` stays ``E_beta``
(the particles' ``energy`` observable), ``free_energy`` and ``dissipation``
take ``usa_scale``.

Integrals are spectral (Parseval) or the trapezoidal rule on the grid, both
exact for trigonometric polynomials of degree below ``M/2``.  On the grid the
identity ``dF/dt = -dissipation`` holds up to the aliasing error of ``log rho``
(its spectral derivative is not exactly ``d rho / rho``): to round-off when
``log rho`` is resolved, about 1e-3 relative when its spectrum reaches the
top modes.
"""

from __future__ import annotations

import numpy as np

from particles.meanfield.spectral import multipliers


def _weights(M: int) -> np.ndarray:
    """Multiplicity of each real-FFT coefficient in the full spectrum, shape (M//2 + 1,)."""
    w = np.full(M // 2 + 1, 2.0)
    w[0] = 1.0
    if M % 2 == 0:
        w[-1] = 1.0
    return w


def _half_pairing(rho: np.ndarray, pot: np.ndarray) -> float:
    """``(1/2) int rho (G * rho)`` for the even multiplier ``pot`` of ``G`` (Parseval)."""
    M = rho.shape[0]
    if not np.all(np.isfinite(pot)):
        return float("inf")
    rh = np.fft.rfft(rho)
    # int rho g = (2 pi / M^2) sum_k pot_k |rho_hat_k|^2 over the full spectrum
    s = float(np.sum(_weights(M) * pot * (rh.real**2 + rh.imag**2)))
    return np.pi * s / M**2


def energy(rho: np.ndarray, beta: float, model: str = "usa", coupling: float = 1.0) -> float:
    """Interaction energy ``E_beta[rho]`` (module docstring).

    Parameters
    ----------
    rho : ndarray, shape (M,)
        Density on the grid ``theta_j = 2 pi j / M``.
    beta : float
    model : {"usa", "sa", "kuramoto"}
    coupling : float
        Kuramoto coupling.

    Returns
    -------
    float
        ``inf`` when ``e^beta`` overflows (``beta > 700``).
    """
    rho = np.asarray(rho, dtype=np.float64)
    return _half_pairing(rho, multipliers(rho.shape[0], beta, model, coupling).potential)


def rho_log_rho(rho: np.ndarray) -> float:
    """``int rho log rho`` (trapezoidal rule; ``0 log 0 = 0``, NaN if ``rho < 0`` somewhere)."""
    rho = np.asarray(rho, dtype=np.float64)
    if rho.min() < 0.0:
        return float("nan")
    pos = rho > 0.0
    return float(2.0 * np.pi / rho.shape[0] * np.sum(rho[pos] * np.log(rho[pos])))


def free_energy(rho: np.ndarray, beta: float, model: str = "usa", D: float = 0.0,
                coupling: float = 1.0, usa_scale: str = "n") -> float:
    """Free energy ``F = -s E_beta + D int rho log rho`` (decreases along USA and Kuramoto;
    ``s = e^{-beta}`` for USA with ``usa_scale="n_exp_beta"``, else 1)."""
    rho = np.asarray(rho, dtype=np.float64)
    m = multipliers(rho.shape[0], beta, model, coupling, usa_scale)
    e = _half_pairing(rho, m.flow_potential)
    return -e if D == 0.0 else -e + D * rho_log_rho(rho)


def dissipation(rho: np.ndarray, beta: float, model: str = "usa", D: float = 0.0,
                coupling: float = 1.0, usa_scale: str = "n") -> float:
    """Rate ``-dF/dt`` of the free energy along the flow (module docstring).

    Parameters
    ----------
    rho : ndarray, shape (M,)
    beta, model, D, coupling, usa_scale
        As in :class:`~particles.meanfield.solver.MeanFieldConfig`.

    Returns
    -------
    float
        ``int rho (d Phi - D d log rho)(v - D d log rho)``; ``dE/dt`` when ``D = 0``;
        NaN when ``D > 0`` and ``rho <= 0`` somewhere.
    """
    rho = np.asarray(rho, dtype=np.float64)
    M = rho.shape[0]
    m = multipliers(M, beta, model, coupling, usa_scale)
    rh = np.fft.rfft(rho)
    vg = np.fft.irfft(rh * m.gradient, M)  # d_theta (s Phi)
    if m.normaliser is None:
        vm = vg
    else:
        vm = np.fft.irfft(rh * m.velocity, M) / np.fft.irfft(rh * m.normaliser, M)
    h = 2.0 * np.pi / M
    if D == 0.0:
        return float(h * np.sum(rho * vg * vm))
    if rho.min() <= 0.0:
        return float("nan")
    drho = np.fft.irfft(rh * m.derivative, M)
    return float(h * np.sum((rho * vg - D * drho) * (rho * vm - D * drho) / rho))
