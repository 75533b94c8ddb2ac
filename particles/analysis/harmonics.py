"""Spherical-harmonic power of the tokens' empirical measure on S^2, and the
degree that linear theory says grows fastest.

**Power.**  For tokens ``x_i`` on S^2 with masses ``m_i`` (``N = sum m_i``)
the empirical measure ``mu = (1/N) sum_i m_i delta_{x_i}`` has the degree-l
power

    P_l = sum_{m=-l}^{l} |(1/N) sum_i m_i Y_lm(x_i)|^2,

with the orthonormal harmonics (``int_{S^2} |Y_lm|^2 dS = 1``, ducc0's and
scipy's normalisation).  By the addition theorem ``sum_m Y_lm(x) Y_lm(y)^*
= (2l + 1) / (4 pi) P_l(<x, y>)`` (Legendre ``P_l``),

    P_l = (2l + 1) / (4 pi N^2) sum_ij m_i m_j P_l(<x_i, x_j>),

so ``P_0 = 1 / (4 pi)``; one point (or one tight cluster) has ``P_l = (2l +
1) / (4 pi)``; the uniform measure has ``P_l = 0`` for l >= 1, and n
independent uniform tokens about ``(2l + 1) / (4 pi n)``.
:func:`harmonic_power` computes it with one adjoint transform at the tokens
(``ducc0.sht.experimental.adjoint_synthesis_general``, as the spectral
summation does, O(n + L^2 log L)); :func:`harmonic_power_reference` is its
NumPy twin (the double sum above, O(n^2 L)).

**Linear theory** (DESIGN.md section 2, "Sphere, mean field").  Funk-Hecke:
the kernel ``exp(beta <x, y>)`` acts on degree-l harmonics as the number
``lambda_l = 2 pi int_{-1}^{1} e^{beta t} P_l(t) dt = 4 pi i_l(beta)`` (``i_l``
the modified spherical Bessel function).  Near the uniform density ``1 / (4
pi)``, SA's velocity ``grad (K * rho) / (beta K * rho)`` and ``Laplace Y_lm =
-l (l + 1) Y_lm`` give a perturbation ``eps Y_lm`` the growth rate

    sigma_l = l (l + 1) i_l(beta) / (beta i_0(beta))

(USA: the same times the constant ``i_0(beta) e^{...}`` of its normaliser, so
the same order).  :func:`fastest_degree` is ``l* = argmax_l sigma_l``: 4 at
beta = 9, the degree particles select at n = 1e5.  On S^{d-1} (``nu = (d -
2) / 2``) the same argument gives ``l (l + d - 2) I_{l+nu}(beta) / (beta
I_nu(beta))`` (DESIGN.md), the circle's ``k^2 I_k(beta) / (beta I_0(beta))``
at d = 2; :func:`growth_rates` takes d.

**Any dimension.**  :func:`normalized_power` is ``Q_l = sum_ij w_i w_j
G_l(<x_i, x_j>)`` with ``w = m / N`` and ``G_l = C_l^nu / C_l^nu(1)`` the
Gegenbauer polynomial normalised to ``G_l(1) = 1``: 1 for one point, about
``sum w_i^2 = 1/n`` for n independent uniform tokens, in every d.  On S^2
``Q_l = 4 pi P_l / (2l + 1)``; on the circle ``Q_k = |c_k|^2``, the Fourier
coefficient of :mod:`particles.analysis.modes`.
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["DEFAULT_MAX_DEGREE", "fastest_degree", "growth_rates", "harmonic_power",
           "harmonic_power_reference", "normalized_power"]

#: the double sum of :func:`normalized_power` (d >= 4) is refused above this n.
DOUBLE_SUM_MAX_N = 4096

#: largest degree stored by ``analyze`` for S^2 runs (l* = 16 needs beta
#: about 130).
DEFAULT_MAX_DEGREE = 24

#: accuracy asked of the adjoint transform (ducc0 refuses less than 2e-13).
TRANSFORM_EPS = 1e-12


def _check(x: np.ndarray, lmax: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 2 or x.shape[-1] != 3:
        raise ValueError(f"harmonic power needs tokens on S^2, shape (..., n, 3), got {x.shape}")
    if isinstance(lmax, bool) or not isinstance(lmax, int | np.integer) or lmax < 0:
        raise ValueError(f"lmax must be an integer >= 0, got {lmax!r}")
    return x


def _weights(masses: np.ndarray | None, n: int) -> np.ndarray:
    m = np.ones(n) if masses is None else np.asarray(masses, dtype=np.float64)
    if m.shape != (n,):
        raise ValueError(f"masses must have shape ({n},), got {m.shape}")
    return m / m.sum()


def harmonic_power(x: np.ndarray, lmax: int = DEFAULT_MAX_DEGREE,
                   masses: np.ndarray | None = None) -> np.ndarray:
    """Degree-l power ``P_l``, l = 0 .. lmax, of the tokens' empirical measure.

    Parameters
    ----------
    x : ndarray, shape (..., n, 3)
        Unit tokens on S^2 (every leading axis a separate system).
    lmax : int
        Largest degree.
    masses : ndarray, shape (n,), optional
        Token masses (default 1 each).

    Returns
    -------
    ndarray, shape (..., lmax + 1)
        ``P_l`` as in the module docstring (orthonormal harmonics, the measure
        of mass 1), to about 1e-12 relative.
    """
    import ducc0

    from particles.fields.spectral import locations

    x = _check(x, lmax)
    n = x.shape[-2]
    w = _weights(masses, n)
    flat = x.reshape(-1, n, 3)
    # ducc0 stores m >= 0 only, m-major: degree l of entry k, and m = 0 or not
    ls = np.concatenate([np.arange(mm, lmax + 1) for mm in range(lmax + 1)])
    twice = np.where(np.arange(ls.size) > lmax, 2.0, 1.0)  # a real map: a_{l,-m} = +-a_lm^*
    out = np.empty((flat.shape[0], lmax + 1))
    for s, xs in enumerate(flat):
        alm = ducc0.sht.experimental.adjoint_synthesis_general(
            lmax=lmax, spin=0, map=w[None], loc=locations(xs), epsilon=TRANSFORM_EPS,
            nthreads=1)[0]
        out[s] = np.bincount(ls, weights=twice * np.abs(alm) ** 2, minlength=lmax + 1)
    return out.reshape(*x.shape[:-2], lmax + 1)


def harmonic_power_reference(x: np.ndarray, lmax: int = DEFAULT_MAX_DEGREE,
                             masses: np.ndarray | None = None) -> np.ndarray:
    """NumPy twin of :func:`harmonic_power` for x (n, 3): the addition theorem's
    double sum ``(2l + 1) / (4 pi) sum_ij w_i w_j P_l(<x_i, x_j>)``."""
    x = _check(x, lmax)
    w = _weights(masses, x.shape[0])
    g = np.clip(x @ x.T, -1.0, 1.0)
    ww = np.outer(w, w)
    return np.array([(2 * l + 1) / (4 * np.pi) * float((ww * special.eval_legendre(l, g)).sum())
                     for l in range(lmax + 1)])


def normalized_power(x: np.ndarray, lmax: int, masses: np.ndarray | None = None) -> np.ndarray:
    """``Q_l`` (l = 0 .. lmax) of one system x (n, d) on S^{d-1} (module docstring).

    d = 2 and 3 in O(n L) and O(n + L^2 log L); d >= 4 by the double sum,
    O(n^2 L), refused above :data:`DOUBLE_SUM_MAX_N` tokens.
    """
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    w = _weights(masses, n)
    if d == 3:
        return 4 * np.pi * harmonic_power(x, lmax, masses) / (2 * np.arange(lmax + 1) + 1)
    if d == 2:
        z = np.exp(1j * np.outer(np.arange(lmax + 1), np.arctan2(x[:, 1], x[:, 0])))
        return np.abs(z @ w) ** 2
    if n > DOUBLE_SUM_MAX_N:
        raise ValueError(f"the degree power in d = {d} sums over pairs: at most "
                         f"{DOUBLE_SUM_MAX_N} tokens, got {n}")
    nu = (d - 2) / 2
    g = np.clip(x @ x.T, -1.0, 1.0)
    ww = np.outer(w, w)
    return np.array([float((ww * special.eval_gegenbauer(l, nu, g)).sum())
                     / special.eval_gegenbauer(l, nu, 1.0) for l in range(lmax + 1)])


def growth_rates(beta: float, lmax: int, d: int = 3) -> np.ndarray:
    """SA's linear growth rates ``sigma_l`` (l = 0 .. lmax) about the uniform
    state on S^{d-1} (module docstring): ``l (l + d - 2) I_{l+nu}(beta) /
    (beta I_nu(beta))``, ``nu = (d - 2) / 2``; on S^2 ``l (l + 1) i_l(beta) /
    (beta i_0(beta))``.

    Computed with scaled Bessel functions (their ratio), finite at any beta > 0.
    """
    if not (np.isfinite(beta) and beta > 0):
        raise ValueError(f"beta must be a finite number > 0, got {beta!r}")
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d!r}")
    nu = (d - 2) / 2
    l = np.arange(lmax + 1, dtype=np.float64)
    return l * (l + d - 2) * special.ive(l + nu, beta) / special.ive(nu, beta) / beta


def fastest_degree(beta: float, d: int = 3) -> int:
    """``l* = argmax_l sigma_l``: the degree linear theory says grows first.

    The rates rise then fall with l (``I_{l+nu}(beta)`` decays like ``(beta /
    2)^l / Gamma(l + nu + 1)`` past ``l ~ beta``): every degree up to ``2 beta
    + d + 8`` is compared.
    """
    rates = growth_rates(beta, int(2 * beta) + int(d) + 8, d)
    return int(np.argmax(rates))
