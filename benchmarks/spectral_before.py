"""The spectral sums as they were before issue 40, kept only as the "before"
contenders of ``benchmarks/bench_spectral.py`` (ratios measured in one run).

* the circle: each token's series a serial complex recurrence over ``k``;
* S^2: four adjoint transforms (the maps ``m`` and ``m x_j``) and four
  syntheses, one thread.

Not used by the package.
"""

from __future__ import annotations

import math

import numpy as np

from particles._numba import prange, specialize
from particles.fields.spectral import (
    BLOCK,
    DUCC_EPS_MIN,
    RHO,
    _alm_degrees,
    _direct_row,
    coefficients,
    direct_rows,
    truncation,
)


def _circle_spectral(X, p, out, ws):
    """Attention output ``out`` (n, 2) of tokens ``X`` (n, 2) by trigonometric moments.

    ``p = (V, m, a, b, normalized, factor, inv_mass, v_identity, tol)`` with
    ``a`` the weights ``a_0..a_K``; ``ws`` float64 scratch of
    :func:`circle_workspace` floats (independent of the threads).
    """
    V, m, a, b, normalized, factor, inv_mass, v_identity, tol = p
    n = X.shape[0]
    K = a.shape[0] - 1
    nm = K + 2  # moments S_0 .. S_{K+1}
    nb = (n + BLOCK - 1) // BLOCK
    width = 2 * nm
    for blk in prange(nb):
        off = width * blk
        for k in range(width):
            ws[off + k] = 0.0
        for j in range(blk * BLOCK, min(n, (blk + 1) * BLOCK)):
            zr = X[j, 0]
            zi = X[j, 1]
            pr = m[j]
            pi = 0.0
            for k in range(nm):
                ws[off + 2 * k] += pr
                ws[off + 2 * k + 1] += pi
                pr, pi = pr * zr - pi * zi, pr * zi + pi * zr
    tot = width * nb
    for k in range(width):
        s = 0.0
        for blk in range(nb):  # in block order: the same bits for any threads
            s += ws[width * blk + k]
        ws[tot + k] = s
    S = ws[tot:tot + width]
    M = S[0]
    C = a[0] * M  # the sum of the series' term sizes (rounding, module docstring)
    for k in range(1, K + 1):
        C += 2.0 * a[k] * math.sqrt(S[2 * k] ** 2 + S[2 * k + 1] ** 2)
    for i in prange(n):
        zr = X[i, 0]
        zi = X[i, 1]
        D = a[0] * M
        Nr = a[0] * S[2]
        Ni = a[0] * S[3]
        wr = 1.0
        wi = 0.0
        for k in range(1, K + 1):
            wr, wi = wr * zr - wi * zi, wr * zi + wi * zr  # z_i^k
            ak = a[k]
            # D += 2 a_k Re(w conj(S_k))
            D += 2.0 * ak * (wr * S[2 * k] + wi * S[2 * k + 1])
            # N += a_k (w conj(S_{k-1}) + conj(w) S_{k+1})
            sr = S[2 * k - 2]
            si = S[2 * k - 1]
            tr = S[2 * k + 2]
            ti = S[2 * k + 3]
            Nr += ak * ((wr * sr + wi * si) + (wr * tr + wi * ti))
            Ni += ak * ((wi * sr - wr * si) + (wr * ti - wi * tr))
        if not RHO * C <= tol * D:
            D, Nr, Ni = _direct_row(X, m, b, i)
        if normalized:
            y0 = Nr / D
            y1 = Ni / D
        else:
            y0 = Nr * factor * inv_mass
            y1 = Ni * factor * inv_mass
        if v_identity:
            out[i, 0] = y0
            out[i, 1] = y1
        else:
            out[i, 0] = V[0, 0] * y0 + V[0, 1] * y1
            out[i, 1] = V[1, 0] * y0 + V[1, 1] * y1


def locations(X: np.ndarray) -> np.ndarray:
    """The tokens' ``(colatitude, longitude)`` (n, 2) as before issue 40."""
    loc = np.empty((X.shape[0], 2))
    loc[:, 0] = np.arctan2(np.hypot(X[:, 0], X[:, 1]), X[:, 2])
    loc[:, 1] = np.arctan2(X[:, 1], X[:, 0]) % (2 * np.pi)
    return loc


circle_before = specialize(_circle_spectral, "bench_before", cache=True)


def sphere_sums(X: np.ndarray, m: np.ndarray, c: np.ndarray, eps: float,
                nthreads: int) -> np.ndarray:
    """``[D, N_x, N_y, N_z]`` (4, n) of tokens X (n, 3) with masses m (n,) by
    spherical-harmonic transforms at the tokens (ducc0); ``c`` (L + 1,) the
    per-degree factors ``4 pi i_l(b) e^{-b}``, ``eps`` the transforms' accuracy."""
    import ducc0

    sht = ducc0.sht.experimental
    L = c.shape[0] - 1
    loc = locations(X)
    scale = c[_alm_degrees(L)]
    out = np.empty((4, X.shape[0]))
    for r in range(4):
        f = m if r == 0 else m * X[:, r - 1]
        alm = sht.adjoint_synthesis_general(lmax=L, spin=0, map=f[None], loc=loc,
                                            epsilon=eps, nthreads=nthreads)
        alm *= scale
        sht.synthesis_general(alm=alm, spin=0, lmax=L, loc=loc, epsilon=eps,
                              nthreads=nthreads, map=out[r:r + 1])
    return out


def sphere_before(X: np.ndarray, p: tuple, out: np.ndarray) -> None:
    """The S^2 drift before issue 40 (``p`` the current drift's parameters:
    the old per-degree factors are made from its ``b`` at the old degree)."""
    V, m, _, b, normalized, factor, inv_mass, v_identity, tol = p
    L = truncation(b, 3, tol, float(m.sum() / m.min()))[0]
    c = 4 * np.pi * coefficients(b, 3, L + 1) / (2 * np.arange(L + 1) + 1)
    sums = sphere_sums(X, m, c, max(DUCC_EPS_MIN, tol / 10.0), 1)
    D, Nv = sums[0], sums[1:].T
    direct_rows(X, m, b, np.nonzero(~(RHO * float(m.sum()) <= tol * D))[0], D, Nv)
    y = Nv / D[:, None] if normalized else Nv * (factor * inv_mass)
    out[:] = y if v_identity else y @ V.T
