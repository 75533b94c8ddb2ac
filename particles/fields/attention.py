"""Self-attention fields SA and USA with the exponential (``edp``) kernel.

For tokens ``x_i`` (rows of ``X``, shape ``(n, d)``), queries ``q_i = Q x_i``,
keys ``k_j = K x_j``, values ``v_j = V x_j`` and token masses ``m_j > 0``, the
kernels here compute the *attention output*

    y_i = sum_j A_ij v_j,
    SA:  A_ij = m_j exp(beta <q_i, k_j>) / sum_k m_k exp(beta <q_i, k_k>),
    USA: A_ij = m_j exp(beta <q_i, k_j> - c) / N,   N = sum_j m_j,

with ``c = 0`` (``usa_scale="n"``) or ``c = beta`` (``usa_scale="n_exp_beta"``).
The dynamics is ``dx_i/dt = P_{x_i}(y_i)``; the Euler layer uses ``y`` itself
(``x_i <- normalize(x_i + h y_i)``), which is why fields return ``y`` and the
integrators project.  Reference: Geshkovski, Letrouit, Polyanskiy, Rigollet,
"A mathematical perspective on Transformers" (2023), eqs. (SA) and (USA).

Numerics.  Scores ``s_ij = beta <q_i, k_j> + log m_j`` are shifted by their row
maximum ``M_i`` before the exponential, so every weight lies in ``(0, 1]`` and
results are finite and exact for beta up to 1e4.  USA multiplies the shifted
sum back by ``exp(M_i - c) / N``; with ``usa_scale="n"`` that factor is
``~e^beta`` and overflows above beta ~ 709, which configuration validation
rejects (use ``usa_scale="n_exp_beta"``).

Two compiled paths compute the same thing and are both checked against
:func:`attention_reference`:

* *direct* (small ``d``): a streamed row of ``n`` scores per query, with the
  vectorised polynomial exp; nothing of size ``n x n`` is held.
* *blas* (large ``d``): blocks of ``B`` query rows, scores ``B x n`` by a BLAS
  product, exp fused in cache, then a second BLAS product with the values.

Both split rows over ``nchunks`` static chunks (threads), each with its own
scratch, so results do not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np

from particles._numba import jit, prange
from particles.fastexp import exp_row

#: rows per BLAS block: ``BLOCK * n`` scores stay in cache.
BLOCK = 64


def attention_reference(
    X: np.ndarray,
    *,
    beta: float,
    normalized: bool = True,
    usa_shift: float = 0.0,
    Q: np.ndarray | None = None,
    K: np.ndarray | None = None,
    V: np.ndarray | None = None,
    masses: np.ndarray | None = None,
) -> np.ndarray:
    """Plain NumPy attention output, the oracle for the compiled kernels.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Tokens (need not be exactly unit norm).
    beta : float
        Inverse temperature.
    normalized : bool
        True for SA (row-stochastic A), False for USA (divide by total mass).
    usa_shift : float
        The constant ``c`` subtracted in the USA exponent (0 or beta).
    Q, K, V : ndarray, shape (d, d), optional
        Query, key and value matrices (identity when None).
    masses : ndarray, shape (n,), optional
        Token masses (ones when None).

    Returns
    -------
    Y : ndarray, shape (n, d)
        ``y_i = sum_j A_ij V x_j``.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    eye = np.eye(d)
    q = X @ (eye if Q is None else Q).T
    k = X @ (eye if K is None else K).T
    v = X @ (eye if V is None else V).T
    m = np.ones(n) if masses is None else np.asarray(masses, dtype=np.float64)
    S = beta * (q @ k.T) + np.log(m)[None, :]
    M = S.max(axis=1, keepdims=True)
    W = np.exp(S - M)
    if normalized:
        return (W @ v) / W.sum(axis=1, keepdims=True)
    return (W @ v) * (np.exp(M - usa_shift) / m.sum())


@jit
def _prepare(X, Q, K, V, beta, qk_identity, v_identity, qs, kT, vx):
    """Scaled queries ``beta Q x_i`` into qs (n, d), keys transposed into kT (d, n),
    values into vx (n, d)."""
    n, d = X.shape
    for i in range(n):
        for a in range(d):
            if qk_identity:
                qa = X[i, a]
                ka = X[i, a]
            else:
                qa = 0.0
                ka = 0.0
                for b in range(d):
                    qa += Q[a, b] * X[i, b]
                    ka += K[a, b] * X[i, b]
            qs[i, a] = beta * qa
            kT[a, i] = ka
            if v_identity:
                vx[i, a] = X[i, a]
            else:
                va = 0.0
                for b in range(d):
                    va += V[a, b] * X[i, b]
                vx[i, a] = va


@jit
def _finish_row(buf, logm, scale_sa, usa_shift, inv_mass, normalized):
    """Shift a row of raw scores by its max, exponentiate in place, return the
    factor that turns ``sum_j w_j v_j`` into ``y_i``."""
    n = buf.shape[0]
    M = -np.inf
    for j in range(n):
        s = buf[j] + logm[j]
        buf[j] = s
        M = max(M, s)
    for j in range(n):
        buf[j] -= M
    exp_row(buf, buf)
    if normalized:
        Z = 0.0
        for j in range(n):
            Z += buf[j]
        return scale_sa / Z
    return np.exp(M - usa_shift) * inv_mass


def _make_direct(parallel: bool):
    @jit(parallel=parallel)
    def attention_direct(X, p, out, ws):
        """Attention output of one system, streamed rows (small d).

        ``ws`` is float64 scratch of length ``3 n d + nchunks * n``; ``out``
        (n, d) receives ``y``.
        """
        Q, K, V, logm, beta, normalized, usa_shift, qk_identity, v_identity = p
        n, d = X.shape
        nd = n * d
        qs = ws[0:nd].reshape((n, d))
        kT = ws[nd:2 * nd].reshape((d, n))
        vx = ws[2 * nd:3 * nd].reshape((n, d))
        nchunks = (ws.shape[0] - 3 * nd) // n
        _prepare(X, Q, K, V, beta, qk_identity, v_identity, qs, kT, vx)
        mtot = 0.0
        for j in range(n):
            mtot += np.exp(logm[j])
        inv_mass = 1.0 / mtot
        for c in prange(nchunks):
            buf = ws[3 * nd + c * n:3 * nd + (c + 1) * n]
            for i in range(c, n, nchunks):
                for j in range(n):
                    buf[j] = 0.0
                for a in range(d):
                    qa = qs[i, a]
                    krow = kT[a]
                    for j in range(n):
                        buf[j] += qa * krow[j]
                f = _finish_row(buf, logm, 1.0, usa_shift, inv_mass, normalized)
                for a in range(d):
                    acc = 0.0
                    for j in range(n):
                        acc += buf[j] * vx[j, a]
                    out[i, a] = acc * f

    return attention_direct


def _make_blas(parallel: bool):
    @jit(parallel=parallel)
    def attention_blas(X, p, out, ws):
        """Attention output of one system in row blocks with BLAS products (large d).

        ``ws`` is float64 scratch of length ``3 n d + nchunks * BLOCK * (n + d)``.
        BLAS must be single-threaded when ``parallel`` (see simulate).
        """
        Q, K, V, logm, beta, normalized, usa_shift, qk_identity, v_identity = p
        n, d = X.shape
        nd = n * d
        qs = ws[0:nd].reshape((n, d))
        kT = ws[nd:2 * nd].reshape((d, n))
        vx = ws[2 * nd:3 * nd].reshape((n, d))
        per = BLOCK * (n + d)
        nchunks = (ws.shape[0] - 3 * nd) // per
        _prepare(X, Q, K, V, beta, qk_identity, v_identity, qs, kT, vx)
        mtot = 0.0
        for j in range(n):
            mtot += np.exp(logm[j])
        inv_mass = 1.0 / mtot
        nblocks = (n + BLOCK - 1) // BLOCK
        for c in prange(nchunks):
            base = 3 * nd + c * per
            for blk in range(c, nblocks, nchunks):
                i0 = blk * BLOCK
                i1 = min(n, i0 + BLOCK)
                rows = i1 - i0
                S = ws[base:base + rows * n].reshape((rows, n))
                Yb = ws[base + BLOCK * n:base + BLOCK * n + rows * d].reshape((rows, d))
                np.dot(qs[i0:i1], kT, S)
                for r in range(rows):
                    f = _finish_row(S[r], logm, 1.0, usa_shift, inv_mass, normalized)
                    # fold the row factor into the weights so one GEMM gives y
                    for j in range(n):
                        S[r, j] *= f
                np.dot(S, vx, Yb)
                for r in range(rows):
                    for a in range(d):
                        out[i0 + r, a] = Yb[r, a]

    return attention_blas


attention_direct_serial = _make_direct(False)
attention_direct_parallel = _make_direct(True)
attention_blas_serial = _make_blas(False)
attention_blas_parallel = _make_blas(True)


def workspace_size(n: int, d: int, nchunks: int, blas: bool) -> int:
    """Length of the float64 scratch array the kernels need.

    Parameters
    ----------
    n, d : int
        System size.
    nchunks : int
        Number of static row chunks (1 for serial, threads for parallel).
    blas : bool
        Whether the BLAS (blocked) path is used.
    """
    per = BLOCK * (n + d) if blas else n
    return 3 * n * d + nchunks * per
