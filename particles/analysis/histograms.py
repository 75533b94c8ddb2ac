"""Histograms of pairwise inner products ``<x_i, x_j>``, ``i < j``.

Counting is compiled and streamed over pairs (no n-by-n matrix); the binning
rule and the treatment of rounding at the range edges are described in
:mod:`particles.analysis._pairs`.
"""

from __future__ import annotations

import numpy as np

from particles.analysis._base import Compute, as_tokens, result
from particles.analysis._pairs import pair_counts, pair_counts_reference

#: default number of bins on [-1, 1].
DEFAULT_BINS = 50


def pair_histogram(
    x: np.ndarray, bins: int = DEFAULT_BINS, range_: tuple[float, float] = (-1.0, 1.0)
) -> np.ndarray:
    """Per-system histogram counts of the pair inner products (compiled).

    Parameters
    ----------
    x : ndarray, shape (m, n, d)
        Systems of tokens.
    bins : int
        Number of equal bins.
    range_ : (float, float)
        Histogram range.

    Returns
    -------
    ndarray of int64, shape (m, bins)
        Counts; each row sums to n(n-1)/2 when the range is [-1, 1].
    """
    return pair_counts(x, bins, range_)[0]


def pair_histogram_reference(
    x: np.ndarray, bins: int = DEFAULT_BINS, range_: tuple[float, float] = (-1.0, 1.0)
) -> np.ndarray:
    """Plain NumPy twin of :func:`pair_histogram`."""
    return pair_counts_reference(x, bins, range_)[0]


class InnerProductHistogram(Compute):
    """Histogram of the pairwise inner products ``<x_i, x_j>``, ``i < j``.

    Counts accumulate over the systems of an ensemble and, with
    ``reset=False``, over calls (freud's convention).

    Parameters
    ----------
    bins : int
        Number of equal bins (default 50).
    range : (float, float)
        Histogram range (default ``(-1, 1)``; pairs outside it are not counted).

    Examples
    --------
    >>> h = InnerProductHistogram(40)
    >>> for x in frames:                       # doctest: +SKIP
    ...     h.compute(x, reset=False)
    >>> h.counts.sum(), h.density               # doctest: +SKIP
    """

    # ``range`` shadows the builtin on purpose: it is numpy.histogram's name
    def __init__(self, bins: int = DEFAULT_BINS, range: tuple[float, float] = (-1.0, 1.0)) -> None:
        super().__init__()
        if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or bins < 1:
            raise ValueError(f"bins must be a positive integer, got {bins!r}")
        lo, hi = (float(v) for v in range)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"range must be (lo, hi) with lo < hi, got {range!r}")
        self.bins = int(bins)
        self.range = (lo, hi)
        self._counts = np.zeros(self.bins, dtype=np.int64)
        self._systems = 0

    def __repr__(self) -> str:
        return f"InnerProductHistogram(bins={self.bins}, range={self.range})"

    @property
    def bin_edges(self) -> np.ndarray:
        """Bin edges, shape (bins + 1,) (available before compute)."""
        return np.linspace(self.range[0], self.range[1], self.bins + 1)

    @property
    def bin_centers(self) -> np.ndarray:
        """Bin centres, shape (bins,)."""
        e = self.bin_edges
        return 0.5 * (e[1:] + e[:-1])

    def reset(self) -> InnerProductHistogram:
        """Clear the accumulated counts."""
        self._counts[:] = 0
        self._systems = 0
        self._results.clear()
        return self

    def compute(self, x: np.ndarray, reset: bool = True) -> InnerProductHistogram:
        """Count the pair inner products of one system or an ensemble.

        Parameters
        ----------
        x : array_like, shape (n, d) or (..., n, d)
            Tokens; every leading axis indexes systems, all accumulated.
        reset : bool
            Clear previous counts first (default); False accumulates.

        Returns
        -------
        InnerProductHistogram
            ``self``.
        """
        x = as_tokens(x)
        n, d = x.shape[-2:]
        flat = x.reshape(-1, n, d)
        if reset:
            self.reset()
        per_system = pair_histogram(flat, self.bins, self.range)
        self._counts += per_system.sum(axis=0)
        self._systems += flat.shape[0]
        total = int(self._counts.sum())
        width = (self.range[1] - self.range[0]) / self.bins
        density = self._counts / (total * width) if total else np.zeros(self.bins)
        self._set(
            counts=self._counts.copy(), density=density, num_pairs=total, num_systems=self._systems
        )
        return self

    counts = result("counts", "Accumulated counts, int64 shape (bins,).")
    density = result("density", "Counts normalised to unit integral over the range, shape (bins,).")
    num_pairs = result("num_pairs", "Number of pairs counted (n(n-1)/2 per system on [-1, 1]).")
    num_systems = result("num_systems", "Number of systems accumulated.")
