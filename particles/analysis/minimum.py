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

When some pair is more than 90 degrees apart (the first best value, from
:data:`PROBES` tokens against all, is negative), only nearly antipodal cells
can hold the minimum: ``<x, y> = (|x + y|^2 - |x|^2 - |y|^2) / 2``, so a pair
below the best value ``b`` has ``|x + y|^2 <= 2 b + 2 max |x|^2``, and the
cell pairs with ``|c_A + c_B|`` within that plus ``r_A + r_B`` come from a
KD-tree on the cells' centres (a finer grid, :data:`ANTIPODAL_GRID`);
otherwise every cell pair of a :data:`GRID` grid is bounded.

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

#: cells per axis of the grid over the tokens' bounding box: every cell pair
#: is bounded (GRID), or only those near antipodal (ANTIPODAL_GRID).
GRID = 24
ANTIPODAL_GRID = 32

#: tokens whose inner products with every token give the first best value.
PROBES = 32

#: margin on every bound and window: the rounding of an inner product of
#: near-unit vectors is below 1e-15.
SLACK = 1e-12

#: cell pairs that cannot beat the best known value by more than this are
#: skipped: the result is at most TOL above the pair loop's minimum (in a
#: cluster of spread 1e-8 every inner product is 1 to rounding, and trying
#: them all would cost n^2).
TOL = 1e-10


# C901: a compiled kernel, one loop nest kept whole so that its bits and speed stay as measured
@cached()
def _min_inner(X, order, start, lo, hi, sqmin, pairs, every, i0, j0, out):  # noqa: C901
    """out[0] = min_{i<j} <x_i, x_j> for X (n, d), cells as in the module docstring:
    every cell pair A <= B (``every``) or those of ``pairs`` (p, 2); the pair
    (i0, j0) gives the first best value."""
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
    best = 0.0
    for a in range(d):
        best += X[i0, a] * X[j0, a]
    ia = np.empty(n, dtype=np.int64)
    jb = np.empty(n, dtype=np.int64)
    total = m * (m + 1) // 2 if every else pairs.shape[0]
    A = 0
    B = -1
    for p in range(total):
        if every:  # the next pair A <= B
            B += 1
            if B == m:
                A += 1
                B = A
        else:
            A = pairs[p, 0]
            B = pairs[p, 1]
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


def _cells(x: np.ndarray, grid: int) -> tuple[np.ndarray, ...]:
    """``order, start, lo, hi, sqmin`` of a grid of ``grid`` cells per axis."""
    low, high = x.min(axis=0), x.max(axis=0)
    h = np.maximum((high - low) / grid, np.finfo(np.float64).tiny)
    _, order, start = bin_cells(np.minimum(np.floor((x - low) / h), grid - 1).astype(np.int64))
    lo, hi = boxes(x, order, start)
    sqmin = np.minimum.reduceat(np.einsum("ia,ia->i", x, x)[order], start[:-1])
    return order, start, lo, hi, sqmin


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
    from scipy.spatial import cKDTree

    x = np.ascontiguousarray(x, dtype=np.float64)
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"the smallest pair inner product needs 2 tokens or more, got {n}")
    probes = np.unique(np.linspace(0, n - 1, min(n, PROBES)).astype(np.int64))
    g = x[probes] @ x.T
    g[np.arange(probes.size), probes] = np.inf
    k = int(np.argmin(g))
    i0, j0 = int(probes[k // n]), k % n
    first = float(g.flat[k])
    out = np.empty(1)
    if first < 0:  # only nearly antipodal cells
        order, start, lo, hi, sqmin = _cells(x, ANTIPODAL_GRID)
        centres = 0.5 * (lo + hi)
        r = 0.5 * np.sqrt(np.einsum("ca,ca->c", hi - lo, hi - lo))
        sq = float(np.einsum("ia,ia->i", x, x).max())
        reach = np.sqrt(max(0.0, 2.0 * first + 2.0 * sq) + 1e-9) + 2.0 * float(r.max()) + 1e-9
        near = cKDTree(centres).sparse_distance_matrix(cKDTree(-centres), reach,
                                                       output_type="ndarray")
        keep = near["i"] <= near["j"]
        pairs = np.ascontiguousarray(np.stack([near["i"][keep], near["j"][keep]], axis=1),
                                     dtype=np.int64)
        _min_inner(x, order, start, lo, hi, sqmin, pairs, False, i0, j0, out)
    else:
        order, start, lo, hi, sqmin = _cells(x, GRID)
        _min_inner(x, order, start, lo, hi, sqmin, np.zeros((0, 2), dtype=np.int64), True, i0,
                   j0, out)
    return float(out[0])


def wide_by_cells(x: np.ndarray, labels: np.ndarray) -> bool:
    """The spread rule (:mod:`particles.observables.spread`) for one large system:
    whether a component of ``labels`` has two tokens with ``<x_i, x_j> < 0``.

    The components within :data:`~particles.observables.spread.SCREEN_COS` of
    their mean direction are screened out as there (with a margin); each other
    one is decided by its :func:`min_inner_product` (negative: wide; at least
    :data:`TOL`: not), and one within TOL of 0 by the pair loop.  The same
    answer as :func:`~particles.observables.spread.wide_systems` without its
    O(n_c^2) pass over a component that spans 45 to 90 degrees.

    Parameters
    ----------
    x : ndarray, shape (n, d)
    labels : ndarray of int, shape (n,)
        Components numbered ``0 .. k-1``.
    """
    from particles.observables.spread import SCREEN_COS, wide_systems

    x = np.ascontiguousarray(x, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    k = int(labels.max()) + 1
    sums = np.zeros((k, x.shape[1]))
    np.add.at(sums, labels, x)
    proj = np.einsum("ia,ia->i", x, sums[labels])
    need = SCREEN_COS**2 * np.einsum("ca,ca->c", sums, sums)[labels]
    # the screen's own test, with a margin far above rounding: a token that
    # passes it is well inside the cap
    outside = ~((proj > 0) & (proj * proj > need * (1.0 + 1e-9)))
    for c in np.unique(labels[outside]):
        members = np.flatnonzero(labels == c)
        if members.size < 2:
            continue
        v = min_inner_product(x[members])
        if v < 0:
            return True
        if v < TOL and wide_systems(x[members][None], np.zeros((1, members.size), np.int64))[0]:
            return True
    return False
