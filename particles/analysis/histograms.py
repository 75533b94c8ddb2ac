"""Histograms of pairwise inner products ``<x_i, x_j>``, ``i < j``.

Counting is compiled and streamed over pairs (no n-by-n matrix); the binning
rule and the treatment of rounding at the range edges are described in
:mod:`particles.analysis._pairs`.  Systems of more than
:data:`~particles.analysis._pairs.PAIR_SAMPLE` (4096) tokens are counted on
the pairs of a fixed subsample and scaled: an estimate, with the standard
error stated there (at most 0.016 of the pairs per bin).
"""

from __future__ import annotations

from typing import Any

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
    ``reset=False``, over calls (freud's convention).  A
    :class:`~particles.Trajectory` (or an array with ``frames=True``) gives
    one histogram per frame instead: ``counts`` of shape (frames, bins).

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
    >>> InnerProductHistogram(40).compute(traj).counts.shape   # doctest: +SKIP
    (frames, 40)
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
        self._counts = np.zeros(self.bins, dtype=np.int64)
        self._systems = 0
        self._results.clear()
        return self

    def compute(
        self, x: Any, reset: bool = True, *, frames: bool | None = None
    ) -> InnerProductHistogram:
        """Count the pair inner products of one system, an ensemble or every frame.

        Parameters
        ----------
        x : Trajectory or array_like
            A :class:`~particles.Trajectory` gives one histogram per saved
            frame (the systems of an ensemble pooled within each frame).
            Arrays: shape (n, d) is one system; (systems, n, d) is an
            ensemble, all systems pooled into one histogram; with
            ``frames=True`` the leading axis indexes frames instead, shape
            (frames, n, d) or (frames, batch, n, d), one histogram per frame.
            Arrays with more than three axes are refused without
            ``frames=True`` (a frame axis is never pooled silently).
        reset : bool
            Clear previous counts first (default); False accumulates (per
            frame, the number of frames must then be the same).
        frames : bool, optional
            Whether the leading axis of an array indexes frames (default:
            True for a Trajectory, False for arrays).

        Returns
        -------
        InnerProductHistogram
            ``self``; ``counts`` has shape (bins,), or (frames, bins) per frame.

        Raises
        ------
        ValueError
            An array of more than three axes without ``frames=True``, or
            accumulating per-frame counts over different numbers of frames.
        """
        is_traj = hasattr(x, "positions") and hasattr(x, "times")
        if frames is None:
            frames = bool(is_traj)
        data = as_tokens(x.positions if is_traj else x, name="positions" if is_traj else "x")
        n, d = data.shape[-2:]
        if frames:
            if data.ndim not in (3, 4):
                raise ValueError(
                    "per-frame histograms need positions of shape (frames, n, d) or "
                    f"(frames, batch, n, d), got {data.shape}"
                )
            nf = data.shape[0]
            per = pair_histogram(data.reshape(-1, n, d), self.bins, self.range)
            add = per.reshape(nf, -1, self.bins).sum(axis=1)
            systems = per.shape[0] // nf
        else:
            if data.ndim > 3:
                raise ValueError(
                    f"x has shape {data.shape}: (n, d) is one system and (systems, n, d) "
                    "an ensemble; for a frame axis pass a Trajectory or frames=True "
                    "(one histogram per frame)"
                )
            flat = data.reshape(-1, n, d)
            add = pair_histogram(flat, self.bins, self.range).sum(axis=0)
            systems = flat.shape[0]
        if reset or self._systems == 0:
            self._counts = np.zeros_like(add)
            self._systems = 0
            self._results.clear()
        elif self._counts.shape != add.shape:
            raise ValueError(
                f"cannot accumulate counts of shape {add.shape} onto {self._counts.shape}: "
                "per-frame histograms accumulate over the same number of frames"
            )
        self._counts += add
        self._systems += systems
        per_row = self._counts.sum(axis=-1, keepdims=True)
        width = (self.range[1] - self.range[0]) / self.bins
        with np.errstate(invalid="ignore", divide="ignore"):
            density = np.where(per_row > 0, self._counts / (per_row * width), 0.0)
        total = self._counts.sum(axis=-1)
        self._set(
            counts=self._counts.copy(),
            density=density,
            num_pairs=int(total) if total.ndim == 0 else total,
            num_systems=self._systems,
            per_frame=bool(frames),
            times=np.asarray(x.times, dtype=np.float64) if is_traj else None,
        )
        return self

    counts = result(
        "counts", "Accumulated counts, int64 shape (bins,), or (frames, bins) per frame."
    )
    density = result(
        "density",
        "Counts normalised to unit integral over the range, shape (bins,) or (frames, bins).",
    )
    num_pairs = result(
        "num_pairs",
        "Number of pairs counted (n(n-1)/2 per system on [-1, 1]): int, or (frames,) per frame.",
    )
    num_systems = result("num_systems", "Number of systems accumulated (per frame when per frame).")
    per_frame = result("per_frame", "Whether the counts are one histogram per frame.")
    times = result("times", "Frame times of a Trajectory's histograms, shape (frames,), or None.")
