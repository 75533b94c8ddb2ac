"""The ``pairwise`` observer's fused pass over token pairs (:func:`compute_observables`).

For tokens ``x_i`` with masses ``m_i`` (``N = sum m_i``):

* ``energy``: ``E_beta = 1/(2 beta N^2) sum_ij m_i m_j exp(beta <x_i, x_j>)``
  (DESIGN.md section 2); at ``beta = 0`` its limit up to constants,
  ``E_0 = 1/(2 N^2) sum_ij m_i m_j <x_i, x_j>``.  Overflows to ``inf`` for
  beta above ~709; ``energy_normalized`` stays finite.
* ``energy_normalized``: ``2 beta e^{-beta} E_beta = (1/N^2) sum_ij m_i m_j
  exp(beta (<x_i, x_j> - 1))`` in ``(0, 1]``, 1 when all tokens coincide;
  at ``beta = 0`` the formula gives 1 for every state (its limit as beta
  decreases to 0, so (beta, t) diagrams stay continuous; ``order_parameter``
  carries the information there).
* ``order_parameter``: ``|| sum_i m_i x_i || / N`` (:mod:`particles.observables.order`).
* ``min_inner_product``, ``mean_inner_product``: over unordered token pairs
  ``i < j`` (unweighted; 1 for a single token).

Cost: O(n^2 d) per system, streamed over pairs, except at ``beta = 0`` on
the circle (``d = 2``, the Kuramoto default) with ``n >= CIRCLE_MIN_N``:
there every observable is a function of ``sum_i m_i x_i`` except the
minimum, the inner product of the most nearly antipodal pair, found by
sorting angles; O(n log n).
"""

from __future__ import annotations

import numpy as np

from particles._numba import cached, jit, prange, specialize
from particles.fastexp import exp_row
from particles.observables.base import Context
from particles.observables.energy import kernel_energy
from particles.observables.order import linear_sums

#: from this many tokens on, beta = 0 observables on the circle use sorted
#: angles (NumPy, O(n log n)) instead of the compiled pair loop (measured:
#: 4x slower at n = 32, 237x faster at n = 100000).
CIRCLE_MIN_N = 128

#: row chunks of the pair sums of one large system (n >= 512), summed in chunk
#: order: a fixed number, so the bits do not depend on the thread count.
PAIR_CHUNKS = 16

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
    XT = np.empty((d, n))
    for i in range(n):
        for a in range(d):
            XT[a, i] = X[i, a]
    partial = np.empty((nchunks, 3))
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
    # chunk partials combined in chunk order (loops: array reductions cost
    # seconds of compile time per process)
    out[0] = 0.0
    out[1] = 0.0
    out[2] = np.inf
    for c in range(nchunks):
        out[0] += partial[c, 0]
        out[1] += partial[c, 1]
        out[2] = min(out[2], partial[c, 2])


_pairs_serial = specialize(_pair_sums, "serial")
_pairs_parallel = specialize(_pair_sums, "parallel", parallel=True)


@jit
def _one_system(X, beta, m, out):
    """Observables of one system X (n, d) into out, serially."""
    sums = np.empty(3)
    _pairs_serial(X, beta, m, 1, sums)
    _finish(X, beta, m, sums, out)


@cached(parallel=True)
def _batch_observables(Xb, beta, m, out):
    for b in prange(Xb.shape[0]):
        _one_system(Xb[b], beta, m, out[b])


@cached()
def _small_observables(X, beta, m, out):
    # one small system: no parallel region (nor its compile time)
    _one_system(X, beta, m, out)


@jit
def _finish(X, beta, m, sums, out):
    """Turn the pair sums of X (n, d) into the observables, in NAMES order."""
    n = X.shape[0]
    N = 0.0
    for i in range(n):
        N += m[i]
    en = sums[0] / (N * N)
    if beta > 0.0:
        energy = np.exp(beta) * en / (2.0 * beta) if beta < 709.0 else np.inf
    else:
        energy = sums[1] / (2.0 * N * N)
    r2, sq, w2 = linear_sums(X, m)
    out[0] = energy
    out[1] = en
    out[2] = np.sqrt(w2) / N
    out[3] = sums[2] if n > 1 else 1.0
    out[4] = (r2 - sq) / (n * (n - 1.0)) if n > 1 else 1.0


@cached()
def _single_observables(X, beta, m, out, nchunks):
    sums = np.empty(3)
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
        Threads available (unused: single large systems split their rows
        into :data:`PAIR_CHUNKS` chunks whatever the thread count, so the
        sums, and their bits, do not depend on it).

    Returns
    -------
    dict of str to ndarray, shape (batch,)
        One entry per name in :data:`NAMES`.
    """
    B, n, d = Xb.shape
    m = np.ascontiguousarray(masses, dtype=np.float64)
    if beta == 0.0 and d == 2 and n >= CIRCLE_MIN_N:
        return _circle_beta0(np.asarray(Xb, dtype=np.float64), m)
    out = np.empty((B, len(NAMES)))
    if B == 1 and n >= 512:
        _single_observables(Xb[0], float(beta), m, out[0], PAIR_CHUNKS)
    elif B == 1:
        _small_observables(Xb[0], float(beta), m, out[0])
    else:
        _batch_observables(Xb, float(beta), m, out)
    return {name: out[:, k].copy() for k, name in enumerate(NAMES)}


def _circle_beta0(Xb: np.ndarray, m: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`compute_observables` at beta = 0 for Xb (batch, n, 2), O(n log n).

    ``sum_ij m_i m_j <x_i, x_j> = |sum_i m_i x_i|^2``, and the smallest inner
    product belongs to the pair farthest apart in angle: the partner farthest
    from token i is the one nearest in angle to the antipode of x_i, a
    neighbour of its insertion point in the sorted angles.  All systems go
    through the same vectorised sorts (NumPy: nothing to compile, no Python
    loop over systems).
    """
    B, n, _ = Xb.shape
    N = m.sum()
    w = np.einsum("i,bia->ba", m, Xb)
    energy = np.einsum("ba,ba->b", w, w) / (2.0 * N * N)
    s = Xb.sum(axis=1)
    pair_sum = np.einsum("ba,ba->b", s, s) - np.einsum("bia,bia->b", Xb, Xb)
    if n == 1:
        mn = np.ones(B)
        mean = np.ones(B)
    else:
        mean = pair_sum / (n * (n - 1.0))
        theta = np.arctan2(Xb[..., 1], Xb[..., 0])
        order = np.argsort(theta, axis=1, kind="stable")
        ts = np.take_along_axis(theta, order, axis=1)
        target = ts + np.pi
        target = np.where(target > np.pi, target - 2.0 * np.pi, target)
        k = _insertion_points(ts, target)
        i = order
        mn = np.full(B, np.inf)
        for c in range(-2, 2):
            j = np.take_along_axis(order, (k + c) % n, axis=1)
            ip = (np.take_along_axis(Xb[..., 0], i, 1) * np.take_along_axis(Xb[..., 0], j, 1)
                  + np.take_along_axis(Xb[..., 1], i, 1) * np.take_along_axis(Xb[..., 1], j, 1))
            mn = np.minimum(mn, np.where(i != j, ip, np.inf).min(axis=1))
    return {
        "energy": energy,
        "energy_normalized": np.ones(B),
        "order_parameter": np.sqrt(2.0 * energy),
        "min_inner_product": mn,
        "mean_inner_product": mean,
    }


def _insertion_points(ts: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Row-wise ``searchsorted(ts[b], target[b], side="right")`` for (B, n)
    arrays, exact and without a Python loop over rows: one stable sort of
    each row's sorted values followed by its targets, counting the sorted
    values placed before each target."""
    B, n = ts.shape
    both = np.concatenate([ts, target], axis=1)
    order = np.argsort(both, axis=1, kind="stable")
    before = np.cumsum(order < n, axis=1)
    k = np.empty((B, n), dtype=np.int64)
    rows, pos = np.nonzero(order >= n)
    k[rows, order[rows, pos] - n] = before[rows, pos]
    return k


def observables_reference(X: np.ndarray, beta: float,
                          masses: np.ndarray | None = None) -> dict[str, float]:
    """Plain NumPy twin of :func:`compute_observables` for one system X (n, d)."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    m = np.ones(n) if masses is None else np.asarray(masses, dtype=np.float64)
    N = m.sum()
    G = X @ X.T
    mm = np.outer(m, m)
    en = float((mm * np.exp(beta * (G - 1.0))).sum() / N**2)
    if beta > 0:
        energy = float(np.exp(beta) * en / (2 * beta)) if beta < 709 else np.inf
    else:
        energy = float((mm * G).sum() / (2 * N**2))
    iu = np.triu_indices(n, 1)
    return {
        "energy": energy,
        "energy_normalized": en,
        "order_parameter": float(np.linalg.norm(m @ X) / N),
        "min_inner_product": float(G[iu].min()) if n > 1 else 1.0,
        "mean_inner_product": float(G[iu].mean()) if n > 1 else 1.0,
    }


def pairwise_observer(Xb: np.ndarray, ctx: Context) -> dict[str, np.ndarray]:
    """The ``pairwise`` observer: :func:`compute_observables`, with the energy of the
    kernel that ran where the run defines one (``ctx.settings["energy"]``, see
    :func:`particles.observables.energy.energy_definition`)."""
    values = compute_observables(Xb, ctx.beta, ctx.masses, nthreads=ctx.nthreads)
    definition = ctx.settings.get("energy")
    if definition is not None and not definition.default:
        values.update(kernel_energy(Xb, ctx.masses, definition))
    return values
