"""Fourier modes of the empirical measure on the circle: which mode dominates.

At large n on the circle the clusters that form first are those of the
fastest-growing Fourier mode of the uniform state (DESIGN.md section 2: about
``argmax_k k^2 I_k(beta)``), and a cluster count does not see a mode while
its density bumps are still chained together.  The diagnostic measured
instead is the empirical measure's Fourier coefficient

    c_k = (1/N) sum_j m_j e^{i k theta_j},   N = sum_j m_j,   k = 1 .. K,

and its *dominant mode* ``k* = argmax_k |c_k|`` with modulus ``|c_k*|``
(0 for a uniform state up to ``1/sqrt(n)`` noise; 1 for ``k*`` equal
point clusters equally spaced).  Ties, to a relative 1e-9, go to the
smallest k: one point has ``|c_k| = 1`` for every k, and k clusters equally
spaced have it for every multiple of k.  ``K`` is at most n (n tokens show
at most n clusters).
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_MAX_MODE", "fourier_coefficients", "fourier_modes"]

#: largest mode searched by default (the fastest mode of SA / USA is about
#: sqrt(2 beta): 32 covers beta up to about 500).
DEFAULT_MAX_MODE = 32


def fourier_coefficients(x: np.ndarray, max_mode: int = DEFAULT_MAX_MODE,
                         masses: np.ndarray | None = None) -> np.ndarray:
    """``c_k = (1/N) sum_j m_j e^{i k theta_j}`` for ``k = 1, ..., min(max_mode, n)``.

    Parameters
    ----------
    x : ndarray, shape (..., n, 2)
        Points on the circle (``x_j = (cos theta_j, sin theta_j)``).
    max_mode : int
        Largest k (>= 1).
    masses : ndarray, shape (n,), optional
        Token masses (default 1 each).

    Returns
    -------
    ndarray of complex128, shape (..., K)
        ``[..., k - 1]`` holds ``c_k``.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim < 2 or x.shape[-1] != 2:
        raise ValueError(f"x must have shape (..., n, 2) (the circle), got {x.shape}")
    if int(max_mode) < 1:
        raise ValueError(f"max_mode must be a positive integer, got {max_mode!r}")
    n = x.shape[-2]
    m = np.ones(n) if masses is None else np.asarray(masses, dtype=np.float64)
    if m.shape != (n,):
        raise ValueError(f"masses must have shape ({n},), got {m.shape}")
    w = m / m.sum()
    # the point itself: e^{i theta_j} without an arctan (|z_j| = 1 on the circle)
    z = x[..., 0] + 1j * x[..., 1]
    K = min(int(max_mode), n)
    out = np.empty((*x.shape[:-2], K), dtype=np.complex128)
    zk = np.ones_like(z)
    for k in range(K):
        zk = zk * z
        out[..., k] = zk @ w
    return out


def fourier_modes(x: np.ndarray, max_mode: int = DEFAULT_MAX_MODE,
                  masses: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The dominant mode of each system's empirical measure and its modulus.

    Parameters
    ----------
    x : ndarray, shape (..., n, 2)
    max_mode : int
        Largest k searched.
    masses : ndarray, shape (n,), optional

    Returns
    -------
    mode : ndarray of int64, shape (...)
        ``k*``: the smallest k whose ``|c_k|`` is within a relative 1e-9 of
        the largest.
    modulus : ndarray, shape (...)
        ``|c_k*|`` in [0, 1].
    """
    a = np.abs(fourier_coefficients(x, max_mode, masses))
    top = a.max(axis=-1, keepdims=True)
    mode = np.argmax(a >= top * (1.0 - 1e-9), axis=-1)
    return (mode + 1).astype(np.int64), np.take_along_axis(a, mode[..., None], -1)[..., 0]
