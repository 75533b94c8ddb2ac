"""Sinkhorn (doubly stochastic) attention and multi-head attention drifts.

**Sinkhorn** (``normalization="sinkhorn"``, SA with the edp kernel): with
scores ``s_ij = beta <q_i, k_j>``, the attention matrix is
``A_ij = exp(s_ij + f_i + g_j)`` with potentials found by log-domain
Sinkhorn iterations (Sander, Ablin, Blondel, Peyre, "Sinkformers", 2022),
starting from ``g = 0``; one iteration is

    f_i = -log sum_j exp(s_ij + g_j)             (rows sum to 1)
    then, unless it was the last iteration:
    c_j = exp(g_j) sum_i exp(s_ij + f_i)         (column sums)
    stop if max_j |c_j - 1| <= tol, else g_j <- g_j - log c_j.

Every iteration ends with the row normalisation, so rows sum to 1 to
round-off and columns to within ``tol`` (or ``sinkhorn_iters`` is reached);
with one iteration ``g = 0`` and ``A`` is exactly the softmax of SA.  Each
pass streams the pairs (two-pass log-sum-exp per row with an exact max),
O(iters n^2 d) time and O(n d) memory: no n x n matrix.

**Multi-head**: ``H`` heads with their own ``(Q, K, V)`` run the single-head
drift in turn into a scratch ``(n, d)`` and their outputs are summed
(before the integrator's projection).
"""

from __future__ import annotations

import numpy as np

from particles._numba import jit, prange, specialize, view2d
from particles.fastexp import exp_scalar
from particles.fields.attention import prepare_scores, project_qkv


def sinkhorn_reference(
    X: np.ndarray,
    *,
    beta: float,
    iters: int,
    tol: float,
    Q: np.ndarray | None = None,
    K: np.ndarray | None = None,
    V: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Sinkhorn attention in plain NumPy (n x n matrices), the kernels' oracle.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Tokens.
    beta : float
        Inverse temperature.
    iters : int
        Maximum number of iterations (1 is SA).
    tol : float
        Stop when every column sums to 1 within ``tol``.
    Q, K, V : ndarray, shape (d, d), optional
        Identity when None.

    Returns
    -------
    Y : ndarray, shape (n, d)
        ``y_i = sum_j A_ij V x_j``.
    A : ndarray, shape (n, n)
        The attention matrix (rows sum to 1, columns within ``tol``).
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    q, k, v = project_qkv(X, Q, K, V)
    S = beta * (q @ k.T)

    def lse(a: np.ndarray, axis: int) -> np.ndarray:
        m = a.max(axis=axis, keepdims=True)
        return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)

    g = np.zeros(n)
    for it in range(iters):
        f = -lse(S + g[None, :], 1)
        if it == iters - 1:
            break
        h = lse(S + f[:, None], 0)
        if np.abs(np.exp(h + g) - 1.0).max() <= tol:
            break
        g = -h
    A = np.exp(S + f[:, None] + g[None, :])
    return A @ v, A


@jit
def _lse_row(i, A, BT, off, buf):
    """``log sum_j exp(<A[i], BT[:, j]> + off[j])`` with an exact max shift."""
    d, n = BT.shape
    for j in range(n):
        buf[j] = off[j]
    for a in range(d):
        ai = A[i, a]
        br = BT[a]
        for j in range(n):
            buf[j] += ai * br[j]
    m = -np.inf
    for j in range(n):
        m = max(m, buf[j])
    Z = 0.0
    for j in range(n):
        Z += exp_scalar(buf[j] - m)
    return m + np.log(Z)


@jit
def _out_row(i, qs, kT, vT, g, fi, buf, out):
    """``out[i] = sum_j exp(s_ij + f_i + g_j) v_j``."""
    d, n = kT.shape
    for j in range(n):
        buf[j] = g[j] + fi
    for a in range(d):
        qa = qs[i, a]
        kr = kT[a]
        for j in range(n):
            buf[j] += qa * kr[j]
    for j in range(n):
        buf[j] = exp_scalar(buf[j])
    for a in range(d):
        vr = vT[a]
        t = 0.0
        for j in range(n):
            t += buf[j] * vr[j]
        out[i, a] = t


def _sinkhorn(X, p, out, ws):
    """Sinkhorn attention output of one system (see the module docstring).

    ``p = (Q, K, V, beta, qk_identity, v_identity, iters, tol)``; ``ws`` holds
    ``5 n d + 3 n + nchunks * n`` floats.
    """
    Q, K, V, beta, qk_identity, v_identity, iters, tol = p
    n, d = X.shape
    nd = n * d
    qs = view2d(ws[0:nd], n, d)
    kT = view2d(ws[nd:2 * nd], d, n)
    vT = view2d(ws[2 * nd:3 * nd], d, n)
    ks = view2d(ws[3 * nd:4 * nd], n, d)
    qsT = view2d(ws[4 * nd:5 * nd], d, n)
    f = ws[5 * nd:5 * nd + n]
    g = ws[5 * nd + n:5 * nd + 2 * n]
    h = ws[5 * nd + 2 * n:5 * nd + 3 * n]
    base = 5 * nd + 3 * n
    nchunks = (ws.shape[0] - base) // n
    prepare_scores(X, Q, K, V, beta, qk_identity, v_identity, qs, kT, vT)
    for i in range(n):
        g[i] = 0.0
        for a in range(d):
            ks[i, a] = kT[a, i]
            qsT[a, i] = qs[i, a]
    for it in range(iters):
        for c in prange(nchunks):
            buf = ws[base + c * n:base + (c + 1) * n]
            for i in range(c, n, nchunks):
                f[i] = -_lse_row(i, qs, kT, g, buf)
        if it == iters - 1:
            break
        for c in prange(nchunks):
            buf = ws[base + c * n:base + (c + 1) * n]
            for j in range(c, n, nchunks):
                h[j] = _lse_row(j, ks, qsT, f, buf)
        err = 0.0
        for j in range(n):
            err = max(err, abs(np.exp(h[j] + g[j]) - 1.0))
        if err <= tol:
            break
        for j in range(n):
            g[j] = -h[j]
    for c in prange(nchunks):
        buf = ws[base + c * n:base + (c + 1) * n]
        for i in range(c, n, nchunks):
            _out_row(i, qs, kT, vT, g, f[i], buf, out)


sinkhorn_serial = specialize(_sinkhorn, "serial", cache=True)
sinkhorn_parallel = specialize(_sinkhorn, "parallel", parallel=True, cache=True)


def sinkhorn_workspace_size(n: int, d: int, nchunks: int) -> int:
    """Scratch length of the Sinkhorn drift."""
    return 5 * n * d + 3 * n + nchunks * n


# -------------------------------------------------------------- multi-head
core = None  # bound by multihead_drift: the single-head drift
def _multihead(X, p, out, ws):
    """Sum over heads of the bound single-head drift ``core``.

    ``p`` is the single-head tuple with ``Q, K, V`` (its first three entries)
    stacked to shape (heads, d, d); ``ws`` holds ``n d`` floats of scratch,
    then the core's scratch.
    """
    n, d = X.shape
    nd = n * d
    tmp = view2d(ws[0:nd], n, d)
    rest = ws[nd:]
    Qs, Ks, Vs = p[0], p[1], p[2]
    tail = p[3:]
    # tuple concatenation, not star-unpacking, which Numba cannot compile
    core(X, (Qs[0], Ks[0], Vs[0]) + tail, out, rest)  # noqa: RUF005
    for hd in range(1, Qs.shape[0]):
        core(X, (Qs[hd], Ks[hd], Vs[hd]) + tail, tmp, rest)  # noqa: RUF005
        for i in range(n):
            for a in range(d):
                out[i, a] += tmp[i, a]


def multihead_drift(core, key: str):
    """The compiled multi-head drift around a single-head drift."""
    return specialize(_multihead, key, cache=True, core=core)
