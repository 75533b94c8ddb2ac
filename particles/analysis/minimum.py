"""The smallest pair inner product ``min_{i<j} <x_i, x_j>`` without every pair.

Tokens are binned in a grid of :data:`GRID` cells per axis over their
bounding box; each non-empty cell keeps the bounding box of its tokens
(centre ``c``, half-diagonal ``r``).  For two cells A and B and tokens
``x_i`` in A, ``x_j`` in B, with ``a_i = <x_i, c_B>`` and ``b_j = <c_A, x_j>``,

    <x_i, x_j> = a_i + b_j - <c_A, c_B> + <x_i - c_A, x_j - c_B>,

and the last term is at most ``e = r_A r_B`` in size.  So the pair that
minimises ``<x_i, x_j>`` over A x B has ``a_i <= min a + 2 e`` and ``b_j <=
min b + 2 e``: only those tokens are tried pair by pair, O(|A| + |B|) for a
tight pair of clusters however many tokens they hold.  Which cell pairs to
try: those whose box lower bound (interval arithmetic, coordinate by
coordinate) is below the smallest inner product of their first tokens,
the best known value by more than :data:`TOL` (the bound is the larger of
the interval bound and ``(|x|^2 + |y|^2 - |x - y|^2) / 2`` with the boxes'
largest distance, tight for nearby cells).  Pairs inside one cell are tried
(pair by pair) only when that cell's lower bound is below it too.

The result is the pair loop's value, or at most :data:`TOL` above it: every
inner product is summed in coordinate order, as
:func:`particles.observables.compute_observables` sums it, the windows carry
a margin (:data:`SLACK`) far above rounding, and only cell pairs that cannot
beat the best value by more than TOL are skipped.
Its NumPy twin is the Gram matrix's minimum
(:func:`particles.observables.observables_reference`).
"""

from __future__ import annotations

import numpy as np

from particles._numba import cached
from particles.analysis.cells import bin_cells, boxes

#: cells per axis of the grid over the tokens' bounding box.
GRID = 24

#: margin on every bound and window: the rounding of an inner product of
#: near-unit vectors is below 1e-15.
SLACK = 1e-12

#: cell pairs that cannot beat the best known value by more than this are
#: skipped: the result is at most TOL above the pair loop's minimum (in a
#: cluster of spread 1e-8 every inner product is 1 to rounding, and trying
#: them all would cost n^2).
TOL = 1e-10


@cached()
def _min_inner(X, order, start, lo, hi, sqmin, out):
    """out[0] = min_{i<j} <x_i, x_j> for X (n, d); cells as in the module docstring."""
    n, d = X.shape
    m = start.shape[0] - 1
    c = np.empty((m, d))
    r = np.empty(m)
    for A in range(m):
        q = 0.0
        for a in range(d):
            c[A, a] = 0.5 * (lo[A, a] + hi[A, a])
            q += (0.5 * (hi[A, a] - lo[A, a])) ** 2
        r[A] = np.sqrt(q)
    # the best known value: first tokens of every cell pair, pairs within cells
    best = np.inf
    for A in range(m):
        i = order[start[A]]
        for B in range(A + 1, m):
            j = order[start[B]]
            s = 0.0
            for a in range(d):
                s += X[i, a] * X[j, a]
            best = min(best, s)
        if start[A + 1] - start[A] > 1:
            j = order[start[A] + 1]
            s = 0.0
            for a in range(d):
                s += X[i, a] * X[j, a]
            best = min(best, s)
    ia = np.empty(n, dtype=np.int64)
    jb = np.empty(n, dtype=np.int64)
    for A in range(m):
        for B in range(A, m):
            lb = 0.0  # interval lower bound of <x, y> over the two boxes
            far = 0.0  # their largest squared distance
            for a in range(d):
                p1 = lo[A, a] * lo[B, a]
                p2 = lo[A, a] * hi[B, a]
                p3 = hi[A, a] * lo[B, a]
                p4 = hi[A, a] * hi[B, a]
                lb += min(min(p1, p2), min(p3, p4))
                far += max(hi[A, a] - lo[B, a], hi[B, a] - lo[A, a]) ** 2
            # <x, y> = (|x|^2 + |y|^2 - |x - y|^2) / 2: tight for close cells
            lb = max(lb, 0.5 * (sqmin[A] + sqmin[B] - far))
            if lb - SLACK >= best - TOL:
                continue
            if A == B:
                for u in range(start[A], start[A + 1]):
                    i = order[u]
                    for v in range(u + 1, start[A + 1]):
                        j = order[v]
                        s = 0.0
                        for a in range(d):
                            s += X[i, a] * X[j, a]
                        best = min(best, s)
                continue
            e = r[A] * r[B]
            amin = np.inf
            for u in range(start[A], start[A + 1]):
                s = 0.0
                for a in range(d):
                    s += X[order[u], a] * c[B, a]
                amin = min(amin, s)
            bmin = np.inf
            for v in range(start[B], start[B + 1]):
                s = 0.0
                for a in range(d):
                    s += c[A, a] * X[order[v], a]
                bmin = min(bmin, s)
            na = 0
            for u in range(start[A], start[A + 1]):
                s = 0.0
                for a in range(d):
                    s += X[order[u], a] * c[B, a]
                if s <= amin + 2.0 * e + SLACK:
                    ia[na] = order[u]
                    na += 1
            nb = 0
            for v in range(start[B], start[B + 1]):
                s = 0.0
                for a in range(d):
                    s += c[A, a] * X[order[v], a]
                if s <= bmin + 2.0 * e + SLACK:
                    jb[nb] = order[v]
                    nb += 1
            for u in range(na):
                i = ia[u]
                for v in range(nb):
                    j = jb[v]
                    s = 0.0
                    for a in range(d):
                        s += X[i, a] * X[j, a]
                    best = min(best, s)
    out[0] = best


def min_inner_product(x: np.ndarray) -> float:
    """``min_{i<j} <x_i, x_j>`` of one system x (n, d), n >= 2, by cells.

    Parameters
    ----------
    x : ndarray, shape (n, d)

    Returns
    -------
    float
        The pair loop's value, or at most :data:`TOL` above it.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"the smallest pair inner product needs 2 tokens or more, got {n}")
    low, high = x.min(axis=0), x.max(axis=0)
    h = np.maximum((high - low) / GRID, np.finfo(np.float64).tiny)
    _, order, start = bin_cells(np.minimum(np.floor((x - low) / h), GRID - 1).astype(np.int64))
    lo, hi = boxes(x, order, start)
    sqmin = np.minimum.reduceat(np.einsum("ia,ia->i", x, x)[order], start[:-1])
    out = np.empty(1)
    _min_inner(x, order, start, lo, hi, sqmin, out)
    return float(out[0])
