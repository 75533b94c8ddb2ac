"""Attention kernels other than ``edp``: rbf (on the edp kernels) and pair kernels.

With ``q_i = Q x_i``, ``k_j = K x_j``, ``v_j = V x_j`` and masses ``m_j``, a
kernel ``kappa(q, k) >= 0`` replaces ``exp(beta <q, k>)`` (DESIGN.md section
1, after Wright and Gonzalez, "Transformers are deep infinite-dimensional
non-Mercer binary kernel machines", 2021):

    y_i = sum_j m_j kappa(q_i, k_j) v_j / Z_i,
    SA:  Z_i = sum_j m_j kappa(q_i, k_j),     USA:  Z_i = sum_j m_j.

* ``rbf``, ``kappa = exp(-tau ||q - k||^2)``.  Since
  ``-tau ||q - k||^2 = 2 tau <q, k> - tau |k|^2 - tau |q|^2``, it is the edp
  kernel with ``beta = 2 tau``, a per-key offset ``-tau |k_j|^2`` added to
  ``log m_j`` and, for USA only, a per-query factor ``exp(-tau |q_i|^2)``
  (it cancels in SA).  The fast edp kernels run unchanged on these
  transformed parameters.
* ``l2`` (``tau ||q - k||``), ``quadratic`` (``(<q, k> + gamma)^2``) and
  ``intersection`` (``exp(sum_l min(beta q_l, beta k_l))``) go through one
  generic streamed pair loop written against ``logkappa(q, k, param)``
  (``log kappa``; ``-inf`` for a zero weight), bound per kernel by
  :func:`particles._numba.specialize`.  Each row is shifted by its exact
  maximum before the exponential, so no weight overflows.

**Rows of zero weight.**  ``l2`` and ``quadratic`` can give a query zero
weight on every key (``l2``: all keys equal to the query, e.g. all tokens
coincide; ``quadratic``: ``<q_i, k_j> = -gamma`` for all j).  Softmax is then
undefined; we set ``y_i = 0``: the token does not move (for SA and USA
alike; for USA it is the limit anyway).
"""

from __future__ import annotations

import numpy as np

from particles._numba import jit, prange, specialize
from particles.config import KERNEL_PARAMETERS
from particles.fastexp import exp_scalar
from particles.fields import attention


# ------------------------------------------------------------ references
def log_kernel_reference(kernel: str, q: np.ndarray, k: np.ndarray, param: float) -> np.ndarray:
    """``log kappa(q_i, k_j)`` for all pairs, plain NumPy.

    Parameters
    ----------
    kernel : str
        A key of :data:`KERNEL_PARAMETERS`.
    q, k : ndarray, shape (n, d)
        Queries and keys.
    param : float
        beta (edp, intersection), tau (rbf, l2) or gamma (quadratic).

    Returns
    -------
    ndarray, shape (n, n)
        ``-inf`` where the weight is zero.
    """
    with np.errstate(divide="ignore"):
        if kernel == "edp":
            return param * (q @ k.T)
        if kernel == "rbf":
            return -param * ((q[:, None, :] - k[None, :, :]) ** 2).sum(-1)
        if kernel == "l2":
            return np.log(param * np.sqrt(((q[:, None, :] - k[None, :, :]) ** 2).sum(-1)))
        if kernel == "intersection":
            return np.minimum(param * q[:, None, :], param * k[None, :, :]).sum(-1)
        if kernel == "quadratic":
            return 2.0 * np.log(np.abs(q @ k.T + param))
    raise ValueError(f"kernel must be one of {', '.join(KERNEL_PARAMETERS)}, got {kernel!r}")


def kernel_attention_reference(
    X: np.ndarray,
    kernel: str,
    param: float,
    *,
    normalized: bool = True,
    Q: np.ndarray | None = None,
    K: np.ndarray | None = None,
    V: np.ndarray | None = None,
    masses: np.ndarray | None = None,
) -> np.ndarray:
    """Attention output with any kernel, plain NumPy (n x n matrices).

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Tokens.
    kernel : str
        A key of :data:`KERNEL_PARAMETERS`.
    param : float
        The kernel's parameter (see :data:`KERNEL_PARAMETERS`).
    normalized : bool
        SA (divide by the row sum) or USA (divide by the total mass).
    Q, K, V : ndarray, shape (d, d), optional
        Identity when None.
    masses : ndarray, shape (n,), optional
        Ones when None.

    Returns
    -------
    Y : ndarray, shape (n, d)
        Rows of zero total weight give ``y_i = 0``.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    q, k, v = attention.project_qkv(X, Q, K, V)
    m = np.ones(n) if masses is None else np.asarray(masses, dtype=np.float64)
    S = log_kernel_reference(kernel, q, k, param) + np.log(m)[None, :]
    M = S.max(axis=1, keepdims=True)
    dead = ~np.isfinite(M[:, 0])
    M[dead] = 0.0
    W = np.exp(S - M)
    if normalized:
        Z = W.sum(axis=1, keepdims=True)
        Z[dead] = 1.0
        return (W @ v) / Z
    return (W @ v) * (np.exp(M) / m.sum())


# ------------------------------------------------------------------- rbf
core = None  # bound by _rbf_drift: the edp drift
def _rbf(X, p, out, ws):
    """rbf attention by the bound edp ``core``: see the module docstring.

    ``p = (Q, K, V, logm, tau, normalized, qk_identity, v_identity, inv_mass)``;
    ``ws`` holds ``2 n`` floats, then the core's scratch.
    """
    Q, K, V, logm, tau, normalized, qk_identity, v_identity, inv_mass = p
    n, d = X.shape
    offset = ws[0:n]
    qfactor = ws[n:2 * n]
    for i in range(n):
        kk = 0.0
        qq = 0.0
        for a in range(d):
            if qk_identity:
                ka = X[i, a]
                qa = X[i, a]
            else:
                ka = 0.0
                qa = 0.0
                for b in range(d):
                    ka += K[a, b] * X[i, b]
                    qa += Q[a, b] * X[i, b]
            kk += ka * ka
            qq += qa * qa
        offset[i] = logm[i] - tau * kk
        qfactor[i] = np.exp(-tau * qq)
    core(X, (Q, K, V, offset, 2.0 * tau, normalized, 0.0, qk_identity, v_identity, inv_mass),
         out, ws[2 * n:])
    if not normalized:
        for i in range(n):
            f = qfactor[i]
            for a in range(d):
                out[i, a] *= f


def _rbf_drift(edp_drift, key: str):
    return specialize(_rbf, key, core=edp_drift)


rbf_direct_serial = _rbf_drift(attention.attention_direct_serial, "direct_serial")
rbf_direct_parallel = _rbf_drift(attention.attention_direct_parallel, "direct_parallel")
rbf_blas_serial = _rbf_drift(attention.attention_blas_serial, "blas_serial")
rbf_blas_parallel = _rbf_drift(attention.attention_blas_parallel, "blas_parallel")


# ------------------------------------------------------------ pair kernels
logkappa = None  # bound per kernel in PAIR_DRIFTS
@jit
def _log_l2(q, k, tau):
    s = 0.0
    for a in range(q.shape[0]):
        t = q[a] - k[a]
        s += t * t
    # log(tau |q - k|) = log tau + log(s) / 2; -inf at q = k (zero weight)
    return np.log(tau) + 0.5 * np.log(s)


@jit
def _log_quadratic(q, k, gamma):
    s = gamma
    for a in range(q.shape[0]):
        s += q[a] * k[a]
    return 2.0 * np.log(np.abs(s))


@jit
def _log_intersection(q, k, beta):
    s = 0.0
    for a in range(q.shape[0]):
        s += min(beta * q[a], beta * k[a])
    return s


@jit
def _rows_times(X, M, identity, out):
    """``out[i] = M x_i`` (rows), or a copy of X when ``identity``."""
    n, d = X.shape
    for i in range(n):
        for a in range(d):
            if identity:
                out[i, a] = X[i, a]
            else:
                s = 0.0
                for b in range(d):
                    s += M[a, b] * X[i, b]
                out[i, a] = s


def _pair_attention(X, p, out, ws):
    """Generic streamed pair loop over ``logkappa`` (bound per kernel).

    ``p = (Q, K, V, logm, param, normalized, qk_identity, v_identity, inv_mass)``;
    ``ws`` holds ``3 n d + nchunks * n`` floats.  Rows of zero weight give 0.
    """
    Q, K, V, logm, param, normalized, qk_identity, v_identity, inv_mass = p
    n, d = X.shape
    nd = n * d
    qs = ws[0:nd].reshape((n, d))
    ks = ws[nd:2 * nd].reshape((n, d))
    vs = ws[2 * nd:3 * nd].reshape((n, d))
    _rows_times(X, Q, qk_identity, qs)
    _rows_times(X, K, qk_identity, ks)
    _rows_times(X, V, v_identity, vs)
    nchunks = (ws.shape[0] - 3 * nd) // n
    for c in prange(nchunks):
        buf = ws[3 * nd + c * n:3 * nd + (c + 1) * n]
        for i in range(c, n, nchunks):
            qi = qs[i]
            m = -np.inf
            for j in range(n):
                s = logkappa(qi, ks[j], param) + logm[j]
                buf[j] = s
                m = max(m, s)
            if m == -np.inf:
                # every weight is zero: no defined softmax, the token stays put
                for a in range(d):
                    out[i, a] = 0.0
                continue
            Z = 0.0
            for a in range(d):
                out[i, a] = 0.0
            for j in range(n):
                w = exp_scalar(buf[j] - m)
                Z += w
                for a in range(d):
                    out[i, a] += w * vs[j, a]
            f = 1.0 / Z if normalized else np.exp(m) * inv_mass
            for a in range(d):
                out[i, a] *= f


#: kernels computed by the generic pair loop.
PAIR_DRIFTS_KERNELS = ("l2", "quadratic", "intersection")

_LOG_KAPPAS = {"l2": _log_l2, "quadratic": _log_quadratic, "intersection": _log_intersection}

#: (kernel, parallel) -> compiled generic pair drift.
PAIR_DRIFTS = {
    (name, parallel): specialize(_pair_attention, f"{name}_{'parallel' if parallel else 'serial'}",
                                 parallel=parallel, logkappa=fn)
    for name, fn in _LOG_KAPPAS.items()
    for parallel in (False, True)
}


def pair_workspace_size(n: int, d: int, nchunks: int) -> int:
    """Scratch length of the generic pair drift."""
    return 3 * n * d + nchunks * n
