"""Close pairs and clusters: the sweep's observers, one fused compiled pass over pairs.

Per system of a frame:

* ``close_pairs`` (setting ``deltas``): ``pair_counts``, the pairs ``i < j``
  with ``<x_i, x_j> > 1 - delta``, one count per threshold;
* ``clusters`` (setting ``eps``): ``cluster_count``, the clusters of the
  components detector (:func:`particles.analysis.components.component_labels`:
  connected components of "geodesic distance < eps"), 0 for a spread system
  (a component wider than 90 degrees, the rule of
  :mod:`particles.observables.spread`);
* ``pair_energy``: ``energy``, the energy the same pass sums (the default
  ``1/(2 beta N^2) sum_ij m_i m_j exp(beta <x_i, x_j>)``, the ``pairwise``
  observer's to rounding: the pair terms are summed in an order of their
  own), or the energy of the kernel that ran where one is defined.

The three share one compiled pass (:func:`frame_statistics`: one inner
product per pair, vectorised over the pairs, the exponentials vectorised;
the clusters of n <= MASK_MAX_N tokens from bitmasks, of more by a
union-find), so chosen together they cost one pass.  The close pairs and the
cluster counts are exact (the detector's inner products); the NumPy twins
are :func:`close_pairs_reference`,
:func:`particles.analysis.components.component_labels_reference` and
:func:`particles.observables.spread.wide_systems_reference`.
"""

from __future__ import annotations

import numpy as np

from particles._numba import cached, jit, prange
from particles.fastexp import exp_row, lane_total
from particles.observables.base import Context
from particles.observables.energy import kernel_energy
from particles.observables.spread import wide_component

__all__ = ["DEFAULT_EPS", "MASK_MAX_N", "close_pairs_reference", "find_root", "frame_statistics",
           "pair_observer"]

#: default linking distance of clusters in radians: tokens closer than this
#: share a cluster (the analysis' default, and what a run's stops count with).
DEFAULT_EPS = 0.05


@jit
def find_root(parent, i):
    """Root of ``i`` in the union-find forest ``parent`` (n,), compressing the path."""
    root = i
    while parent[root] != root:
        root = parent[root]
    while parent[i] != root:  # path compression
        nxt = parent[i]
        parent[i] = root
        i = nxt
    return root


# The pairs i < j of a system are visited by diagonals of the circulant
# (i, i + k mod n), k = 1 .. n // 2, i < n: every pair once, except on the last
# diagonal of an even n (2k = n), where i and i + n/2 give the same pair twice
# (only i < n/2 counts there).  Every diagonal is one loop of length n over i
# that vectorises: the coordinates are transposed and doubled, XT2 (d, 2n), so
# the partner of i is XT2[:, i + k].  A pair's inner product is the
# detector's (one rounded product, one rounded add per coordinate, in order;
# products commute), so the close pairs and the clusters are exactly those of
# :func:`particles.analysis.components.component_labels`, on every input.

#: largest n whose clusters come from bitmasks (one uint64 per diagonal: bit i
#: of diagonal k set where i and i + k mod n are linked; a set-at-a-time
#: breadth-first search, :func:`_circulant_components`) and whose pair values
#: are kept in one buffer per thread (:func:`_stats_mask`); larger n take
#: :func:`_stats_union` (a union-find over the close pairs, O(n) scratch).
MASK_MAX_N = 64

#: most systems per block of the parallel loop (each block allocates its scratch once).
_BLOCK = 32

_U0 = np.uint64(0)
_U1 = np.uint64(1)


@jit
def _double_transpose(Xb, b, XT2):
    """XT2 (d, 2n): XT2[a, i] = XT2[a, i + n] = Xb[b, i, a] for Xb (B, n, d)."""
    n = XT2.shape[1] // 2
    d = XT2.shape[0]
    for i in range(n):
        for a in range(d):
            XT2[a, i] = Xb[b, i, a]
            XT2[a, i + n] = Xb[b, i, a]


@jit
def _diagonal_length(n, k):
    """Pairs on diagonal k (1 <= k <= n // 2): n, or n / 2 when 2k = n."""
    return n // 2 if 2 * k == n else n


# The helpers take whole contiguous arrays and an offset, never slices or
# views (a slice is a strided array to Numba, so LLVM does not vectorise its
# loops; a view costs two atomic reference-count updates), and index with
# uint64 (a signed index i + k gets Numba's negative-index wraparound select,
# which keeps the loop scalar).
@jit
def _diagonal_dots(XT2, k, v, off, n):
    """v[off + i] = <x_i, x_{i+k mod n}>, i < n, the detector's arithmetic."""
    d = XT2.shape[0]
    ku = np.uint64(k)
    ou = np.uint64(off)
    if d == 2:
        for i in range(n):
            u = np.uint64(i)
            v[ou + u] = XT2[0, u] * XT2[0, u + ku] + XT2[1, u] * XT2[1, u + ku]
    elif d == 3:
        for i in range(n):
            u = np.uint64(i)
            v[ou + u] = ((XT2[0, u] * XT2[0, u + ku] + XT2[1, u] * XT2[1, u + ku])
                         + XT2[2, u] * XT2[2, u + ku])
    else:
        for i in range(n):
            u = np.uint64(i)
            v[ou + u] = XT2[0, u] * XT2[0, u + ku]
        for a in range(1, d):
            for i in range(n):
                u = np.uint64(i)
                v[ou + u] = v[ou + u] + XT2[a, u] * XT2[a, u + ku]


@jit
def _diagonal_close(XT2, k, v, off, n, cos_eps):
    """:func:`_diagonal_dots` of diagonal k into v[off:off + n], and its close
    pairs as a bitmask: bit i set where <x_i, x_{i+k mod n}> > cos_eps (n <= 64)."""
    d = XT2.shape[0]
    ku = np.uint64(k)
    ou = np.uint64(off)
    acc = _U0
    if d == 2:
        for i in range(n):
            u = np.uint64(i)
            s = XT2[0, u] * XT2[0, u + ku] + XT2[1, u] * XT2[1, u + ku]
            v[ou + u] = s
            acc |= np.uint64(s > cos_eps) << u
        return acc
    if d == 3:
        for i in range(n):
            u = np.uint64(i)
            s = ((XT2[0, u] * XT2[0, u + ku] + XT2[1, u] * XT2[1, u + ku])
                 + XT2[2, u] * XT2[2, u + ku])
            v[ou + u] = s
            acc |= np.uint64(s > cos_eps) << u
        return acc
    _diagonal_dots(XT2, k, v, off, n)
    for i in range(n):
        u = np.uint64(i)
        acc |= np.uint64(v[ou + u] > cos_eps) << u
    return acc


@jit
def _circulant_components(C, n, labels):
    """Connected components of the graph on n <= 64 tokens whose edges are the
    set bits of the diagonal masks C (n // 2 + 1,): bit i of C[k] links i and
    i + k mod n.  The isolated tokens at once, then a breadth-first search
    over token sets (one uint64 each): the neighbours of a set F through
    diagonal k are rot(F & C[k], k) | (C[k] & rot(F, -k)).  Returns the
    count; labels (n,) gets the component of each token (ids 0 .. count - 1,
    in no particular order)."""
    nu = np.uint64(n)
    full = ~_U0 if n == 64 else (_U1 << nu) - _U1
    touched = _U0
    for k in range(1, n // 2 + 1):
        ku = np.uint64(k)
        c = C[k]
        touched |= c | (((c << ku) | (c >> (nu - ku))) & full)
    unseen = touched & full
    count = np.int64(0)
    for i in range(n):
        if ((touched >> np.uint64(i)) & _U1) == _U0:  # an isolated token
            labels[i] = count
            count += 1
    while unseen != _U0:
        front = unseen & (~unseen + _U1)  # the lowest token left
        unseen ^= front
        comp = front
        while front != _U0:
            new = _U0
            for k in range(1, n // 2 + 1):
                ku = np.uint64(k)
                c = C[k]
                f = front & c
                new |= ((f << ku) | (f >> (nu - ku))) | (c & ((front >> ku) | (front << (nu - ku))))
            front = new & unseen
            unseen ^= front
            comp |= front
        for i in range(n):
            if ((comp >> np.uint64(i)) & _U1) != _U0:
                labels[i] = count
        count += 1
    return count


@jit
def _count_above(v, L, t):
    """#{i < L : v[i] > t}."""
    c = 0
    for i in range(L):
        c += v[i] > t
    return c


@jit
def _energy_sum(v, wts, msq, L):
    """sum_{i < L} wts[i] v[i] (v overwritten), or msq sum v[i] where wts is empty
    (equal masses), in the lane order of :func:`lane_total`."""
    if wts.shape[0] == 0:
        return msq * lane_total(v, L)
    for i in range(L):
        v[i] = wts[i] * v[i]
    return lane_total(v, L)


@cached(parallel=True)
def _stats_mask(Xb, thresholds, cos_eps, beta, wts, msq, pairs, counts, esum):
    """:func:`frame_statistics` for n <= MASK_MAX_N.  Per system the pair values
    of every diagonal go into one buffer (diagonal k at ``(k - 1) n``: the
    n (n - 1) / 2 pairs are its first entries, the repeated half of the last
    diagonal of an even n comes after them), the close pairs into one bitmask
    per diagonal; then one pass per threshold, one exponential pass and one
    weighted sum over the pairs (wts: :func:`_pair_weights`, or empty for equal
    masses, each ``sqrt(msq)``)."""
    B, n, d = Xb.shape
    K = thresholds.shape[0]
    P = n * (n - 1) // 2
    bs = max(1, min(_BLOCK, B // 16))  # at least 16 blocks where B allows
    nblocks = (B + bs - 1) // bs
    for blk in prange(nblocks):
        XT2 = np.empty((d, 2 * n))
        v = np.empty(max(n * (n // 2), 1))
        C = np.empty(n // 2 + 1, dtype=np.uint64)
        labels = np.empty(n, dtype=np.int64)
        S = np.empty((n, d))
        snorm = np.empty(n)
        unsure = np.empty(n, dtype=np.uint8)
        for b in range(blk * bs, min(B, (blk + 1) * bs)):
            _double_transpose(Xb, b, XT2)
            for k in range(1, n // 2 + 1):
                C[k] = _diagonal_close(XT2, k, v, (k - 1) * n, n, cos_eps)
            for t in range(K):
                pairs[b, t] = _count_above(v, P, thresholds[t])
            counts[b] = _circulant_components(C, n, labels)
            # the spread rule (n singletons have no wide component)
            if counts[b] < n and wide_component(Xb[b], labels, S, snorm, unsure):
                counts[b] = 0
            if beta > 0.0:
                for p in range(P):
                    v[p] = beta * (v[p] - 1.0)
                exp_row(v, v)
            esum[b] = _energy_sum(v, wts, msq, P)


# C901: a compiled kernel, one loop nest kept whole so that its bits and speed stay as measured
@cached(parallel=True)
def _stats_union(Xb, thresholds, cos_eps, beta, m, pairs, counts, esum):  # noqa: C901
    """:func:`frame_statistics` for any n, one diagonal at a time (O(n) scratch);
    the components by a union-find over the close pairs (m (n,): the masses).

    Every token keeps a label, a token of its tree (lab2 (2n,), doubled like
    XT2: its root when last relabelled, or the root a pair of it joined): a
    close pair of equal labels is one tree already, so a diagonal is first
    screened in one vectorised pass and only its close pairs of different
    labels go through the union-find (in a clustered frame, after the first
    diagonals, none).  A diagonal of more than n / 16 such pairs relabels
    every token by its root."""
    B, n, d = Xb.shape
    K = thresholds.shape[0]
    bs = max(1, min(_BLOCK, B // 16))  # at least 16 blocks where B allows
    nblocks = (B + bs - 1) // bs
    for blk in prange(nblocks):
        XT2 = np.empty((d, 2 * n))
        m2 = np.empty(2 * n)
        w = np.empty(n)
        v = np.empty(n)
        parent = np.empty(n, dtype=np.int64)
        lab2 = np.empty(2 * n, dtype=np.int64)
        S = np.empty((n, d))
        snorm = np.empty(n)
        unsure = np.empty(n, dtype=np.uint8)
        for i in range(n):
            m2[i] = m2[i + n] = m[i]
        for b in range(blk * bs, min(B, (blk + 1) * bs)):
            _double_transpose(Xb, b, XT2)
            for i in range(n):
                parent[i] = i
                lab2[i] = lab2[i + n] = i
            for t in range(K):
                pairs[b, t] = 0
            e_acc = 0.0
            for k in range(1, n // 2 + 1):
                L = _diagonal_length(n, k)
                ku = np.uint64(k)
                _diagonal_dots(XT2, k, v, 0, n)
                for t in range(K):
                    pairs[b, t] += _count_above(v, L, thresholds[t])
                new = 0
                for i in range(L):
                    u = np.uint64(i)
                    new += (v[u] > cos_eps) & (lab2[u] != lab2[u + ku])
                if new:
                    for i in range(L):
                        q = i + k if i + k < n else i + k - n
                        if v[i] > cos_eps and lab2[i] != lab2[q]:
                            ri = find_root(parent, i)
                            rq = find_root(parent, q)
                            r = min(ri, rq)
                            parent[max(ri, rq)] = r
                            lab2[i] = lab2[i + n] = lab2[q] = lab2[q + n] = r
                    if 16 * new > n:  # many joins: relabel every token
                        for i in range(n):
                            lab2[i] = lab2[i + n] = find_root(parent, i)
                if beta > 0.0:
                    for i in range(n):
                        v[i] = beta * (v[i] - 1.0)
                    exp_row(v, v)
                for i in range(L):
                    u = np.uint64(i)
                    w[u] = m2[u] * m2[u + ku]
                e_acc += _energy_sum(v, w, 0.0, L)
            esum[b] = e_acc
            c = 0
            for i in range(n):
                r = find_root(parent, i)
                lab2[i] = r  # the component of each token, for the spread rule
                if r == i:
                    c += 1
            if c < n and wide_component(Xb[b], lab2, S, snorm, unsure):
                c = 0
            counts[b] = c


def _pair_weights(masses: np.ndarray) -> np.ndarray:
    """``m_i m_j`` of the pairs in the order of :func:`_stats_mask`'s buffer
    (diagonal k = 1 .. n // 2, i < n; i < n / 2 where 2k = n): shape (n (n - 1) / 2,)."""
    m = np.asarray(masses, dtype=np.float64)
    n = m.shape[0]
    parts = []
    for k in range(1, n // 2 + 1):
        i = np.arange(n // 2 if 2 * k == n else n)
        parts.append(m[i] * m[(i + k) % n])
    return np.ascontiguousarray(np.concatenate(parts) if parts else np.empty(0))


def frame_statistics(x: np.ndarray, deltas: np.ndarray, eps: float | None, beta: float,
                     masses: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Close pairs, cluster counts and the default energy of every system, in one
    compiled pass over the pairs.

    Parameters
    ----------
    x : ndarray, shape (m, n, d)
    deltas : ndarray, shape (k,)
    eps : float or None
        Linking distance of the clusters (the components detector); None: no
        links (every token its own cluster).
    beta : float
    masses : ndarray, shape (n,)

    Returns
    -------
    pairs : ndarray of int64, shape (m, k)
        As :func:`close_pairs_reference`.
    counts : ndarray of int64, shape (m,)
        As :func:`particles.analysis.components.count_clusters`: the
        components, or 0 where one is wider than 90 degrees (spread,
        :mod:`particles.observables.spread`).
    energy : ndarray, shape (m,)
        ``1/(2 beta N^2) sum_ij m_i m_j exp(beta <x_i, x_j>)`` (its beta = 0
        limit ``1/(2 N^2) sum_ij m_i m_j <x_i, x_j>``), the default ``energy``
        observable (:mod:`particles.observables`) to rounding (the pair terms
        are summed in a fixed order of their own, with lanes).

    Notes
    -----
    n <= :data:`MASK_MAX_N` tokens: clusters from bitmasks, the pair values
    of a system in one buffer (:func:`_stats_mask`); more: one diagonal of
    pairs at a time and a union-find (:func:`_stats_union`).  The close pairs
    and the cluster counts are exact (the detector's inner products) either way.
    """
    xb = np.ascontiguousarray(x, dtype=np.float64)
    B = xb.shape[0]
    m = np.ascontiguousarray(masses, dtype=np.float64)
    pairs = np.empty((B, len(deltas)), dtype=np.int64)
    counts = np.empty(B, dtype=np.int64)
    esum = np.empty(B)
    n = xb.shape[1]
    thresholds = 1.0 - np.asarray(deltas, dtype=np.float64)
    # no eps: no links (cos eps above every inner product); every token its own cluster
    cos_eps = np.inf if eps is None else float(np.cos(eps))
    if n <= MASK_MAX_N:
        equal = n == 0 or bool(np.all(m == m[0]))
        wts = np.empty(0) if equal else _pair_weights(m)
        msq = float(m[0] * m[0]) if n and equal else 0.0
        _stats_mask(xb, thresholds, cos_eps, float(beta), wts, msq, pairs, counts, esum)
    else:
        _stats_union(xb, thresholds, cos_eps, float(beta), m, pairs, counts, esum)
    N = m.sum()
    diag = float(np.sum(m * m))
    if beta > 0.0:
        # off-diagonal pairs twice, the diagonal (exp(0) = 1) once
        scale = np.exp(beta) / (2.0 * beta) if beta < 709.0 else np.inf
        energy = scale * (diag + 2.0 * esum) / (N * N)
    else:
        energy = (diag + 2.0 * esum) / (2.0 * N * N)
    return pairs, counts, energy


def close_pairs_reference(x: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """Plain NumPy twin of the close-pair counts of :func:`frame_statistics`
    (Gram matrices): shape (m, k) int64."""
    x = np.asarray(x, dtype=np.float64)
    iu = np.triu_indices(x.shape[1], 1)
    g = np.einsum("bia,bja->bij", x, x)[:, iu[0], iu[1]]
    thr = 1.0 - np.asarray(deltas, dtype=np.float64)
    return (g[:, :, None] > thr[None, None, :]).sum(axis=1).astype(np.int64)


def pair_observer(Xb: np.ndarray, ctx: Context) -> dict[str, np.ndarray]:
    """The ``close_pairs``, ``clusters`` and ``pair_energy`` observers, one pass.

    Returns ``pair_counts`` (batch, deltas) int64 when ``ctx.settings`` holds
    ``deltas``, ``cluster_count`` (batch,) int64 when it holds ``eps``, and
    ``energy`` (batch,): the pass's default energy, or the energy of the
    kernel that ran (``ctx.settings["energy"]`` not the default).
    """
    settings = ctx.settings
    deltas = np.asarray(settings.get("deltas", ()), dtype=np.float64)
    eps = settings.get("eps")
    pairs, counts, energy = frame_statistics(Xb, deltas, eps, ctx.beta, ctx.masses)
    definition = settings.get("energy")
    if definition is not None and not definition.default:
        energy = kernel_energy(Xb, ctx.masses, definition)["energy"]
    out = {"energy": energy}
    if "deltas" in settings:
        out["pair_counts"] = pairs
    if eps is not None:
        out["cluster_count"] = counts
    return out
