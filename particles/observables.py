"""Observables recorded at every save point (compiled, streamed over pairs).

For tokens ``x_i`` with masses ``m_i`` (``N = sum m_i``):

* ``energy``: ``E_beta = 1/(2 beta N^2) sum_ij m_i m_j exp(beta <x_i, x_j>)``
  (DESIGN.md section 2); at ``beta = 0`` its limit up to constants,
  ``E_0 = 1/(2 N^2) sum_ij m_i m_j <x_i, x_j>``.  Overflows to ``inf`` for
  beta above ~709; ``energy_normalized`` stays finite.
* ``energy_normalized``: ``2 beta e^{-beta} E_beta = (1/N^2) sum_ij m_i m_j
  exp(beta (<x_i, x_j> - 1))`` in ``(0, 1]``, 1 when all tokens coincide
  (at ``beta = 0``: ``2 E_0``, the squared order parameter).
* ``order_parameter``: ``|| sum_i m_i x_i || / N``.
* ``min_inner_product``, ``mean_inner_product``: over unordered token pairs
  ``i < j`` (unweighted; 1 for a single token).

The energy uses the plain inner product ``<x_i, x_j>`` whatever ``Q, K``.

Cost: O(n^2 d) per system, streamed over pairs, except at ``beta = 0`` on
the circle (``d = 2``, the Kuramoto default): there every observable is a
function of ``sum_i m_i x_i`` except the minimum, which is the inner product
of the most nearly antipodal pair, found by sorting angles; O(n log n).
"""

from __future__ import annotations

import numpy as np

from particles._numba import cached, jit, prange, specialize
from particles.fastexp import exp_row

#: names, in storage order, of the observables computed here.
NAMES = (
    "energy",
    "energy_normalized",
    "order_parameter",
    "min_inner_product",
    "mean_inner_product",
)


def _pair_sums(X, beta, m, nchunks, out):
    """Fill out[0:3] = (sum_ij m_i m_j exp(beta(<x_i,x_j> - 1)),
    sum_ij m_i m_j <x_i, x_j>, min_{i<j} <x_i, x_j>) for X (n, d)."""
    n, d = X.shape
    XT = np.ascontiguousarray(X.T)
    partial = np.zeros((nchunks, 3))
    for c in prange(nchunks):
        buf = np.empty(n)
        e_acc = 0.0
        g_acc = 0.0
        mn = np.inf
        for i in range(c, n, nchunks):
            row = buf[i + 1:n]
            for j in range(row.shape[0]):
                row[j] = 0.0
            for a in range(d):
                xa = X[i, a]
                col = XT[a, i + 1:n]
                for j in range(row.shape[0]):
                    row[j] += xa * col[j]
            mrow = m[i + 1:n]
            g = 0.0
            for j in range(row.shape[0]):
                g += mrow[j] * row[j]
                mn = min(mn, row[j])
                row[j] = beta * (row[j] - 1.0)
            exp_row(row, row)
            e = 0.0
            for j in range(row.shape[0]):
                e += mrow[j] * row[j]
            sii = 0.0
            for a in range(d):
                sii += X[i, a] * X[i, a]
            # diagonal term once, off-diagonal pairs twice (symmetry)
            e_acc += m[i] * (m[i] * np.exp(beta * (sii - 1.0)) + 2.0 * e)
            g_acc += m[i] * (m[i] * sii + 2.0 * g)
        partial[c, 0] = e_acc
        partial[c, 1] = g_acc
        partial[c, 2] = mn
    out[0] = partial[:, 0].sum()
    out[1] = partial[:, 1].sum()
    out[2] = partial[:, 2].min()


_pairs_serial = specialize(_pair_sums, "serial")
_pairs_parallel = specialize(_pair_sums, "parallel", parallel=True)


@jit
def _circle_sums(X, m, out):
    """``out[1:3]`` of :func:`_pair_sums` at beta = 0 for X (n, 2) in O(n log n).

    ``sum_ij m_i m_j <x_i, x_j> = |sum_i m_i x_i|^2``; the smallest inner
    product belongs to the pair whose angular distance is largest, and the
    partner farthest from token i is the one nearest (in angle) to the
    antipode of x_i: a neighbour of its insertion point in the sorted angles.
    ``out[0]`` is unused at beta = 0 (set to NaN).
    """
    n = X.shape[0]
    w0 = 0.0
    w1 = 0.0
    for i in range(n):
        w0 += m[i] * X[i, 0]
        w1 += m[i] * X[i, 1]
    out[0] = np.nan
    out[1] = w0 * w0 + w1 * w1
    theta = np.empty(n)
    for i in range(n):
        theta[i] = np.arctan2(X[i, 1], X[i, 0])
    order = np.argsort(theta)
    ts = theta[order]
    mn = np.inf
    for a in range(n):
        i = order[a]
        target = ts[a] + np.pi
        if target > np.pi:
            target -= 2.0 * np.pi
        k = np.searchsorted(ts, target)
        # two neighbours on each side absorb rounding in the angles
        for c in range(k - 2, k + 2):
            j = order[c % n]
            if j != i:
                mn = min(mn, X[i, 0] * X[j, 0] + X[i, 1] * X[j, 1])
    out[2] = mn


@cached(parallel=True)
def _batch_observables(Xb, beta, m, out):
    B = Xb.shape[0]
    for b in prange(B):
        sums = np.empty(3)
        if beta == 0.0 and Xb.shape[2] == 2:
            _circle_sums(Xb[b], m, sums)
        else:
            _pairs_serial(Xb[b], beta, m, 1, sums)
        _finish(Xb[b], beta, m, sums, out[b])


@jit
def _finish(X, beta, m, sums, out):
    """Turn the pair sums of X (n, d) into the observables, in NAMES order."""
    n, d = X.shape
    N = m.sum()
    if beta > 0.0:
        en = sums[0] / (N * N)
        energy = np.exp(beta) * en / (2.0 * beta) if beta < 709.0 else np.inf
    else:
        energy = sums[1] / (2.0 * N * N)
        en = 2.0 * energy
    mean = np.zeros(d)
    sq = 0.0
    for i in range(n):
        for a in range(d):
            mean[a] += X[i, a]
            sq += X[i, a] * X[i, a]
    r2 = 0.0
    for a in range(d):
        r2 += mean[a] * mean[a]
    w = np.zeros(d)
    for i in range(n):
        for a in range(d):
            w[a] += m[i] * X[i, a]
    out[0] = energy
    out[1] = en
    out[2] = np.sqrt((w * w).sum()) / N
    out[3] = sums[2] if n > 1 else 1.0
    out[4] = (r2 - sq) / (n * (n - 1.0)) if n > 1 else 1.0


@cached()
def _single_observables(X, beta, m, out, nchunks):
    sums = np.empty(3)
    if beta == 0.0 and X.shape[1] == 2:
        _circle_sums(X, m, sums)
    else:
        _pairs_parallel(X, beta, m, nchunks, sums)
    _finish(X, beta, m, sums, out)


def compute_observables(Xb: np.ndarray, beta: float, masses: np.ndarray,
                        *, nthreads: int = 1) -> dict[str, np.ndarray]:
    """Observables of a stack of systems.

    Parameters
    ----------
    Xb : ndarray, shape (batch, n, d)
        Tokens of each system.
    beta : float
        Inverse temperature of the energy.
    masses : ndarray, shape (n,)
        Token masses.
    nthreads : int
        Row chunks for single large systems.

    Returns
    -------
    dict of str to ndarray, shape (batch,)
        One entry per name in :data:`NAMES`.
    """
    B, n, _ = Xb.shape
    out = np.empty((B, len(NAMES)))
    m = np.ascontiguousarray(masses, dtype=np.float64)
    if B == 1 and n >= 512:
        _single_observables(Xb[0], float(beta), m, out[0], max(1, nthreads))
    else:
        _batch_observables(Xb, float(beta), m, out)
    return {name: out[:, k].copy() for k, name in enumerate(NAMES)}


def observables_reference(X: np.ndarray, beta: float,
                          masses: np.ndarray | None = None) -> dict[str, float]:
    """Plain NumPy twin of :func:`compute_observables` for one system X (n, d)."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    m = np.ones(n) if masses is None else np.asarray(masses, dtype=np.float64)
    N = m.sum()
    G = X @ X.T
    mm = np.outer(m, m)
    if beta > 0:
        en = float((mm * np.exp(beta * (G - 1.0))).sum() / N**2)
        energy = float(np.exp(beta) * en / (2 * beta)) if beta < 709 else np.inf
    else:
        energy = float((mm * G).sum() / (2 * N**2))
        en = 2 * energy
    iu = np.triu_indices(n, 1)
    return {
        "energy": energy,
        "energy_normalized": en,
        "order_parameter": float(np.linalg.norm(m @ X) / N),
        "min_inner_product": float(G[iu].min()) if n > 1 else 1.0,
        "mean_inner_product": float(G[iu].mean()) if n > 1 else 1.0,
    }
