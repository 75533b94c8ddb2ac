"""The components of "<x_i, x_j> > cos(eps)" in O(n log n): cells and a KD-tree.

The same partition as the streamed pair loop of
:mod:`particles.analysis.components` (decided pair by pair with the same
floating-point inner product), without visiting every pair:

1. **Cells.**  Tokens are binned into cubes of side ``h`` small enough that
   any two tokens of one cube are certainly linked: for tokens of squared
   norms in ``[lo, hi]``, ``<x_i, x_j> = (|x_i|^2 + |x_j|^2 - |x_i - x_j|^2) / 2
   >= lo - d h^2 / 2``, and the computed inner product is within ``TOL_ULPS
   d u hi`` of it (``u`` the unit roundoff), so ``h`` is chosen with
   ``lo - d h^2 / 2 > cos(eps) + TOL_ULPS d u hi``.  A tight cluster is
   then one or a few cells whatever its number of tokens.
2. **Candidate cell pairs.**  Tokens of two cells can be linked only if
   their distance is below ``r``, ``r^2 = 2 (hi - cos(eps) + TOL_ULPS d u hi)``;
   the cell pairs whose centres are within ``r + h sqrt(d)`` (a superset) come
   from :meth:`scipy.spatial.cKDTree.query_pairs` on the cell centres.
3. **Links.**  A compiled union-find over the cells takes the candidate
   pairs in turn; a pair of cells already joined is skipped, otherwise
   their tokens are tested with the pair loop's own arithmetic (products
   summed in coordinate order, ``> cos(eps)``) until one pair links,
   tokens outside ``r`` of the other cell's bounding box skipped.  A pair
   exactly at eps is decided as the pair loop decides it.

Cost: O(n log n) to bin and sort, plus the candidate pairs and the token
tests of the cell pairs that are not linked (neighbouring cells across a gap
narrower than eps).  :func:`use_cells` chooses between this and the pair
loop (measured, ``benchmarks/bench_analysis.py``).  The pair loop's NumPy
twin :func:`~particles.analysis.components.component_labels_reference` is
the twin of this kernel too (the tests compare them).
"""

from __future__ import annotations

import numpy as np

from particles._numba import cached
from particles.observables.pairs import find_root

#: the computed inner product of two vectors of squared norm at most ``hi`` is
#: within ``d u hi`` of the exact one (``u`` the unit roundoff, d products
#: summed); the margins use four times that.
TOL_ULPS = 4.0

#: the cells pay from this many tokens on (the pair loop below: the
#: KD-tree's and Python's fixed costs).  Measured on one thread
#: (``benchmarks/bench_analysis.py --crossover``): even at n = 500-1000 in
#: d <= 4, 7x faster at n = 2000 and 8-60x at 4000.
CELLS_MIN_N = 1000

#: and up to this dimension: a cube's diagonal grows as sqrt(d), so the
#: cells shrink and stop grouping tokens.  d = 8: 6-30x faster on clustered
#: frames, up to 1.2x slower on uniform ones; d = 16: no gain.
CELLS_MAX_D = 8


def use_cells(n: int, d: int) -> bool:
    """Whether :func:`cell_labels` is the cheaper way for ``n`` tokens in R^d."""
    return n >= CELLS_MIN_N and d <= CELLS_MAX_D


# C901: a compiled kernel, one loop nest kept whole so that its bits and speed stay as measured
@cached()
def _link_cells(X, order, start, pairs, lo_box, hi_box, cos_eps, r2, labels):  # noqa: C901
    """Union the cells of each candidate pair that has a linked token pair;
    write the canonical labels (clusters numbered by their first token).

    X (n, d) tokens; order (n,) tokens sorted by cell, start (cells + 1,)
    each cell's slice of order; pairs (p, 2) candidate cell pairs;
    lo_box, hi_box (cells, d) bounding boxes of the cells' tokens."""
    n, d = X.shape
    cells = start.shape[0] - 1
    parent = np.arange(cells)
    for p in range(pairs.shape[0]):
        A = pairs[p, 0]
        B = pairs[p, 1]
        ra = find_root(parent, A)
        rb = find_root(parent, B)
        if ra == rb:
            continue
        linked = False
        for u in range(start[A], start[A + 1]):
            i = order[u]
            # squared distance from x_i to the box of B: no link beyond r
            q = 0.0
            for a in range(d):
                if X[i, a] < lo_box[B, a]:
                    q += (lo_box[B, a] - X[i, a]) ** 2
                elif X[i, a] > hi_box[B, a]:
                    q += (X[i, a] - hi_box[B, a]) ** 2
            if q > r2:
                continue
            for v in range(start[B], start[B + 1]):
                j = order[v]
                s = 0.0
                for a in range(d):
                    s += X[i, a] * X[j, a]
                if s > cos_eps:
                    linked = True
                    break
            if linked:
                break
        if linked:
            parent[max(ra, rb)] = min(ra, rb)
    cell_of = np.empty(n, dtype=np.int64)
    for c in range(cells):
        for u in range(start[c], start[c + 1]):
            cell_of[order[u]] = c
    nxt = 0
    remap = np.full(cells, -1)
    for i in range(n):
        r = find_root(parent, cell_of[i])
        if remap[r] < 0:
            remap[r] = nxt
            nxt += 1
        labels[i] = remap[r]
    return nxt


def bin_cells(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group tokens by integer cell coordinates ``key`` (n, d).

    Returns
    -------
    inv : ndarray of int64, shape (n,)
        Cell of each token, cells numbered ``0 .. m-1``.
    order : ndarray of int64, shape (n,)
        Tokens sorted by cell (stable).
    start : ndarray of int64, shape (m + 1,)
        Cell c holds ``order[start[c]:start[c + 1]]``.
    """
    low = key.min(axis=0)
    span = key.max(axis=0) - low + 1
    if float(np.prod(span.astype(np.float64))) < 2.0**62:
        # one integer per cell, sorted once: ten times faster than rows' unique
        stride = np.concatenate([[1], np.cumprod(span[:-1])]).astype(np.int64)
        flat = (key - low) @ stride
        order = np.argsort(flat, kind="stable").astype(np.int64)
        ids = np.concatenate([[0], np.cumsum(np.diff(flat[order]) != 0)])
        inv = np.empty(flat.size, dtype=np.int64)
        inv[order] = ids
    else:
        inv = np.unique(key, axis=0, return_inverse=True)[1].ravel().astype(np.int64)
        order = np.argsort(inv, kind="stable").astype(np.int64)
    start = np.concatenate([[0], np.cumsum(np.bincount(inv))]).astype(np.int64)
    return inv, order, start


def boxes(x: np.ndarray, order: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounding boxes ``(lo, hi)`` (m, d) of the tokens x (n, d) of each cell."""
    xs = x[order]
    return np.minimum.reduceat(xs, start[:-1]), np.maximum.reduceat(xs, start[:-1])


def cell_side(x: np.ndarray, cos_eps: float) -> tuple[float, float]:
    """The cell side ``h`` and the squared linking radius ``r^2`` of tokens x (n, d).

    ``h = 0`` when no cube is small enough (tokens far from unit norm, or
    ``cos(eps)`` near their squared norms): then use the pair loop.
    """
    d = x.shape[1]
    sq = np.einsum("ia,ia->i", x, x)
    lo, hi = float(sq.min()), float(sq.max())
    tol = TOL_ULPS * d * np.finfo(np.float64).eps * hi
    room = lo - cos_eps - tol
    r2 = 2.0 * (hi - cos_eps + tol)
    if not room > 0:
        return 0.0, r2
    # 1e-9: the binning's own rounding (x / h) may place a token a few ulps
    # outside its cube
    return float(np.sqrt(2.0 * room / d)) * (1.0 - 1e-9), r2


def cell_labels(x: np.ndarray, cos_eps: float) -> tuple[np.ndarray, int]:
    """Components of "<x_i, x_j> > cos_eps" of one system x (n, d), by cells.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Tokens (near unit norm; see :func:`cell_side`).
    cos_eps : float
        The linking threshold on the inner product.

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Clusters numbered in order of their first token.
    k : int
        Their number.

    Raises
    ------
    ValueError
        No cell size is safe for these tokens (``cell_side`` gives 0).
    """
    from scipy.spatial import cKDTree

    x = np.ascontiguousarray(x, dtype=np.float64)
    n, d = x.shape
    h, r2 = cell_side(x, cos_eps)
    if h == 0.0:
        raise ValueError("no cell size links every token of a cell at this eps")
    _, order, start = bin_cells(np.floor(x / h).astype(np.int64))
    lo_box, hi_box = boxes(x, order, start)
    centres = 0.5 * (lo_box + hi_box)
    # boxes of tokens within r of each other: their centres are within r plus
    # half of each box's diagonal (at most h sqrt(d) each half), with a slack
    reach = float(np.sqrt(r2)) + h * np.sqrt(d) * (1.0 + 1e-9) + 1e-12
    pairs = cKDTree(centres).query_pairs(reach, output_type="ndarray").astype(np.int64)
    labels = np.empty(n, dtype=np.int64)
    k = _link_cells(x, order, start, np.ascontiguousarray(pairs),
                    lo_box, hi_box, float(cos_eps), float(r2), labels)
    return labels, int(k)
