"""Streamed counting over token pairs ``i < j`` (one compiled kernel).

A single kernel serves both the inner-product histogram and the close-pair
count: they share the pair loop, and one kernel compiles once (Numba
compiles cost seconds).  Nothing of size n-by-n is stored: each task takes
every ``nchunks``-th row ``i`` of one system (rows get shorter as i grows,
so striding balances the work), computes ``<x_i, x_j>`` for ``j > i`` and
counts into private accumulators that are summed per system at the end.

Binning: ``nbins`` equal bins on ``[lo, hi]``; a value ``s`` falls in bin
``floor((s - lo) * nbins / (hi - lo))``, the last bin is closed.  Inner
products of unit vectors can leave ``[-1, 1]`` by rounding, so values within
:data:`EDGE_TOL` outside the range count in the edge bins; values further
outside are not counted.

**Large systems.**  Above :data:`PAIR_SAMPLE` tokens every pair is too many
(5e9 at n = 1e5), and the counts are estimated: the same pass runs over the
pairs of a fixed random subsample of PAIR_SAMPLE tokens (the same tokens in
every frame and system: seed 0), and its counts are scaled by
``n (n - 1) / (s (s - 1))`` and rounded to integers whose sum is the scaled
total (largest remainders).  The fraction ``p`` of pairs in a bin (or above
the threshold) is then a U-statistic of the subsample: unbiased, with
standard error at most ``2 sqrt(p (1 - p) / s)`` (Hoeffding's variance
bound, ``s`` = PAIR_SAMPLE), at most 0.016 absolute; about ``sqrt(2 p / s^2)``
for a uniform state.
"""

from __future__ import annotations

import numba
import numpy as np

from particles._numba import cached, prange

#: values this far outside the histogram range still count in the edge bins.
EDGE_TOL = 1e-9

#: systems of more tokens count the pairs of a random subsample of this many.
PAIR_SAMPLE = 4096


def subsample(n: int) -> np.ndarray:
    """The tokens whose pairs stand for all pairs of a system of ``n`` tokens
    (sorted indices, shape (min(n, PAIR_SAMPLE),)): fixed by n alone."""
    if n <= PAIR_SAMPLE:
        return np.arange(n)
    return np.sort(np.random.default_rng(0).choice(n, PAIR_SAMPLE, replace=False))


def scale_counts(counts: np.ndarray, factor: float) -> np.ndarray:
    """``counts`` (..., k) times ``factor``, rounded to integers whose sum over
    the last axis is the scaled sum rounded (largest remainders)."""
    scaled = np.asarray(counts, dtype=np.float64) * factor
    out = np.floor(scaled).astype(np.int64)
    short = np.rint(scaled.sum(axis=-1)).astype(np.int64) - out.sum(axis=-1)
    rank = np.argsort(-(scaled - out), axis=-1, kind="stable")
    bump = np.arange(counts.shape[-1]) < short[..., None]
    np.put_along_axis(out, rank, np.take_along_axis(out, rank, -1) + bump, -1)
    return out


# cached: the CLI runs each analysis in a fresh process, and this kernel
# takes seconds to compile
@cached(parallel=True)
def _pair_counts(Xb, lo, hi, nbins, thr, nchunks, hist, close):
    """hist[b] += histogram of <x_i, x_j> (i < j) of system b; close[b] += #{> thr}.

    Xb (B, n, d) float64; hist (B, nbins) int64; close (B,) int64.
    """
    B, n, d = Xb.shape
    ntasks = B * nchunks
    partial = np.zeros((ntasks, nbins + 1), dtype=np.int64)
    scale = nbins / (hi - lo)
    for t in prange(ntasks):
        X = Xb[t // nchunks]
        buf = np.empty(n)
        for i in range(t % nchunks, n - 1, nchunks):
            # scalar dot products: d is small here and this keeps the
            # kernel quick to compile
            for j in range(i + 1, n):
                s = 0.0
                for a in range(d):
                    s += X[i, a] * X[j, a]
                buf[j] = s
            for j in range(i + 1, n):
                s = buf[j]
                if s > thr:
                    partial[t, nbins] += 1
                u = (s - lo) * scale
                if u < 0.0:
                    if s < lo - EDGE_TOL:
                        continue
                    k = 0
                elif u >= nbins:
                    if s > hi + EDGE_TOL:
                        continue
                    k = nbins - 1
                else:
                    k = int(u)
                partial[t, k] += 1
    for t in range(ntasks):
        b = t // nchunks
        for k in range(nbins):
            hist[b, k] += partial[t, k]
        close[b] += partial[t, nbins]


def pair_counts(
    x: np.ndarray, bins: int, range_: tuple[float, float] = (-1.0, 1.0), threshold: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Histogram of pair inner products and pairs above a threshold (compiled).

    Parameters
    ----------
    x : ndarray, shape (m, n, d)
        Systems of tokens.
    bins : int
        Number of equal bins on ``range_``.
    range_ : (float, float)
        Histogram range.
    threshold : float
        Pairs with ``<x_i, x_j> > threshold`` are counted in ``close``.

    Returns
    -------
    hist : ndarray of int64, shape (m, bins)
    close : ndarray of int64, shape (m,)
        Exact up to :data:`PAIR_SAMPLE` tokens, estimated above (module
        docstring).
    """
    xb = np.ascontiguousarray(x, dtype=np.float64)
    n = xb.shape[1]
    if n > PAIR_SAMPLE:
        hist, close = pair_counts(xb[:, subsample(n)], bins, range_, threshold)
        factor = n * (n - 1.0) / (PAIR_SAMPLE * (PAIR_SAMPLE - 1.0))
        return scale_counts(hist, factor), np.rint(close * factor).astype(np.int64)
    m, n, _ = xb.shape
    hist = np.zeros((m, bins), dtype=np.int64)
    close = np.zeros(m, dtype=np.int64)
    # enough tasks for every thread even with a single system
    nchunks = max(1, min(n, 4 * numba.get_num_threads()))
    _pair_counts(
        xb, float(range_[0]), float(range_[1]), int(bins), float(threshold), nchunks, hist, close
    )
    return hist, close


def pair_counts_reference(
    x: np.ndarray, bins: int, range_: tuple[float, float] = (-1.0, 1.0), threshold: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Plain NumPy twin of :func:`pair_counts` (materialises each Gram matrix)."""
    x = np.asarray(x, dtype=np.float64)
    lo, hi = range_
    hist = np.zeros((x.shape[0], bins), dtype=np.int64)
    close = np.zeros(x.shape[0], dtype=np.int64)
    iu = np.triu_indices(x.shape[1], 1)
    for b in range(x.shape[0]):
        s = (x[b] @ x[b].T)[iu]
        close[b] = np.count_nonzero(s > threshold)
        keep = (s >= lo - EDGE_TOL) & (s <= hi + EDGE_TOL)
        k = np.clip(np.floor((s[keep] - lo) * bins / (hi - lo)), 0, bins - 1).astype(np.int64)
        hist[b] = np.bincount(k, minlength=bins)
    return hist, close
