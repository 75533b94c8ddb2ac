"""Connected components of the "geodesic distance below eps" graph, streamed.

Two tokens are linked when ``dist(x_i, x_j) < eps``, i.e. ``<x_i, x_j> >
cos(eps)``; clusters are the connected components (single linkage at
threshold eps).  The compiled kernel streams over pairs with a union-find
forest, so nothing of size ``n x n`` is stored.  From
:data:`~particles.analysis.cells.CELLS_MIN_N` tokens on (in low dimension)
the same components come from :mod:`particles.analysis.cells` in O(n log n)
(cells and a KD-tree, every pair decided with the same arithmetic).
:func:`component_labels` gives the components as they are; :func:`count_clusters` applies the spread
rule (:mod:`particles.observables.spread`: a component wider than 90 degrees
is no cluster, and the system counts 0).
"""

from __future__ import annotations

import numpy as np

from particles._numba import cached, jit, prange
from particles.analysis.cells import cell_labels, cell_side, use_cells

# the union-find of the sweep's pass; the default linking distance in radians
# (tokens closer than this share a cluster), which runs' stops use too
from particles.observables.pairs import DEFAULT_EPS, find_root
from particles.observables.spread import wide_systems


# the batch entry point is cached: the CLI analyses each file in a fresh process
@jit
def _components_one(X, cos_eps, labels):
    n, d = X.shape
    parent = np.arange(n)
    for i in range(n):
        for j in range(i + 1, n):
            s = 0.0
            for a in range(d):
                s += X[i, a] * X[j, a]
            if s > cos_eps:
                ri = find_root(parent, i)
                rj = find_root(parent, j)
                if ri != rj:
                    parent[max(ri, rj)] = min(ri, rj)
    # canonical labels: clusters numbered by their first token
    nxt = 0
    remap = np.full(n, -1)
    for i in range(n):
        r = find_root(parent, i)
        if remap[r] < 0:
            remap[r] = nxt
            nxt += 1
        labels[i] = remap[r]
    return nxt


@cached(parallel=True)
def _components_batch(Xb, cos_eps, labels, counts):
    for b in prange(Xb.shape[0]):
        counts[b] = _components_one(Xb[b], cos_eps, labels[b])


def component_labels(x: np.ndarray, eps: float = DEFAULT_EPS) -> tuple[np.ndarray, np.ndarray]:
    """Cluster labels of tokens by connected components.

    Parameters
    ----------
    x : ndarray, shape (n, d) or (batch, n, d)
        Tokens on the sphere.
    eps : float
        Linking geodesic distance (radians), ``0 < eps < pi``.

    Returns
    -------
    labels : ndarray of int64, shape (n,) or (batch, n)
        Cluster index per token, numbered in order of first appearance.
    counts : ndarray of int64, shape () or (batch,)
        Number of clusters.
    """
    if not 0 < eps < np.pi:
        raise ValueError(f"eps must be in (0, pi) radians, got {eps!r}")
    x = np.asarray(x, dtype=np.float64)
    single = x.ndim == 2
    xb = np.ascontiguousarray(x[None] if single else x)
    if xb.ndim != 3:
        raise ValueError(f"x must have shape (n, d) or (batch, n, d), got {x.shape}")
    labels = np.empty(xb.shape[:2], dtype=np.int64)
    counts = np.empty(xb.shape[0], dtype=np.int64)
    cos_eps = float(np.cos(eps))
    B, n, d = xb.shape
    if use_cells(n, d) and all(cell_side(s, cos_eps)[0] > 0 for s in xb):
        for b in range(B):
            labels[b], counts[b] = cell_labels(xb[b], cos_eps)
    else:
        _components_batch(xb, cos_eps, labels, counts)
    return (labels[0], counts[0]) if single else (labels, counts)


def count_clusters(x: np.ndarray, eps: float = DEFAULT_EPS) -> int | np.ndarray:
    """Number of clusters: an int for x (n, d), int64 array (batch,) for (batch, n, d).

    0 for a spread system: one of its components spans more than 90 degrees
    (:mod:`particles.observables.spread`).
    """
    labels, counts = component_labels(x, eps)
    if np.ndim(counts) == 0:
        return 0 if wide_systems(np.asarray(x)[None], labels[None])[0] else int(counts)
    return np.where(wide_systems(x, labels), 0, counts)


def component_labels_reference(x: np.ndarray, eps: float = DEFAULT_EPS) -> np.ndarray:
    """Plain NumPy/SciPy twin of :func:`component_labels` for x (n, d)."""
    from scipy.sparse.csgraph import connected_components

    G = x @ x.T
    _, lab = connected_components(G > np.cos(eps), directed=False)
    # renumber in order of first appearance, as the compiled kernel does
    _, first = np.unique(lab, return_index=True)
    order = np.argsort(first)
    remap = np.empty_like(order)
    remap[order] = np.arange(order.size)
    return remap[lab]
