"""When a sampled curve first reaches a level: :func:`first_crossing`.

Sweeps and scans give curves sampled on a grid (a statistic against the save
times, an order parameter against the noise); the figures read off where one
first reaches a level, e.g. the time at which half of the pairs are
clustered.  The crossing is interpolated linearly between the last sample
short of the level and the first that reaches it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["first_crossing", "first_crossing_reference"]


def first_crossing(x: ArrayLike, y: ArrayLike, level: float, *,
                   rising: bool = True) -> np.ndarray:
    """The first ``x`` at which ``y`` reaches ``level``, interpolated linearly.

    Parameters
    ----------
    x : array_like, shape (T,)
        Increasing sample points (times, a parameter).
    y : array_like, shape (..., T)
        Curves sampled at ``x`` (any leading axes: one curve per row).
    level : float
    rising : bool
        Reaching means ``y >= level`` (True) or ``y <= level`` (False).

    Returns
    -------
    ndarray of float, shape (...)
        The crossing of each curve; nan where it never reaches the level, or
        where it already has at ``x[0]`` (the crossing is then not sampled).

    Raises
    ------
    ValueError
        ``x`` not one increasing axis of the length of ``y``'s last one.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or y.ndim < 1 or y.shape[-1] != x.size or x.size < 1:
        raise ValueError(f"x must have shape (T,) and y (..., T), got {x.shape} and {y.shape}")
    if np.any(np.diff(x) <= 0):
        raise ValueError("x must be increasing")
    if x.size < 2:
        return np.full(y.shape[:-1], np.nan)
    reached = y >= level if rising else y <= level
    k = np.argmax(reached, axis=-1)
    ok = reached.any(axis=-1) & (k > 0)
    j = np.where(ok, k, 1)  # a placeholder pair where there is no crossing
    y0, y1 = (np.take_along_axis(y, i[..., None], axis=-1)[..., 0] for i in (j - 1, j))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = x[j - 1] + (level - y0) / (y1 - y0) * (x[j] - x[j - 1])
    return np.where(ok, out, np.nan)


def first_crossing_reference(x: ArrayLike, y: ArrayLike, level: float, *,
                             rising: bool = True) -> np.ndarray:
    """Plain-loop twin of :func:`first_crossing` (one curve at a time)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    rows = y.reshape(-1, y.shape[-1])
    out = np.full(rows.shape[0], np.nan)
    for r, row in enumerate(rows):
        for k in range(1, row.size):
            if (row[0] >= level) if rising else (row[0] <= level):
                break
            if (row[k] >= level) if rising else (row[k] <= level):
                t = (level - row[k - 1]) / (row[k] - row[k - 1])
                out[r] = x[k - 1] + t * (x[k] - x[k - 1])
                break
    return out.reshape(y.shape[:-1])
