"""What of a run a figure draws: the saved frames nearest to requested times
(``particles plot --times``), and one system of an ensemble (:func:`system_of`);
for a run drawn against a density, the frames both saved (:func:`shared_frames`)
and every token pooled (:func:`token_positions`).

Every figure that draws chosen times (trajectory histograms and spheres,
sweep cluster counts and curves, density profiles, kernel histograms) picks
the nearest saved frames here, and refuses a time outside the saved range
instead of silently drawing the nearest end: ``--times 1e9`` on a run that
stops at t = 2000 is an error, not a picture of t = 2000.  A time typed as
it is printed (``time_text``, :data:`~particles.display.TIME_DIGITS`
significant digits) counts as inside.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from particles.display import TIME_DIGITS, time_text

__all__ = ["check_member", "common_frames", "nearest_frames", "shared_frames", "system_of",
           "token_positions"]


def nearest_frames(times: ArrayLike, when: ArrayLike) -> np.ndarray:
    """Indices of the saved frames nearest to each requested time.

    Parameters
    ----------
    times : array_like, shape (F,)
        Saved times, increasing.
    when : float or array_like, shape (k,)
        Requested times.

    Returns
    -------
    ndarray of int, shape (<= k,)
        Unique frame indices, increasing.

    Raises
    ------
    ValueError
        ``when`` is empty or not finite, or a time lies outside
        ``[times[0], times[-1]]`` (beyond the rounding of a printed time): the
        message gives the range and names ``--times``.
    """
    times = np.asarray(times, dtype=np.float64)
    when = np.atleast_1d(np.asarray(when, dtype=np.float64))
    if when.ndim != 1 or not when.size or not np.all(np.isfinite(when)):
        raise ValueError(f"times must be one or more finite numbers, got {when.tolist()!r}")
    if not times.size:
        raise ValueError("no saved frames to draw at the requested times")
    lo, hi = float(times[0]), float(times[-1])
    slack = 10.0 ** -TIME_DIGITS * max(abs(lo), abs(hi))
    outside = when[(when < lo - slack) | (when > hi + slack)]
    if outside.size:
        raise ValueError(
            f"times must lie in [{time_text(lo)}, {time_text(hi)}], the time range of the "
            f"saved frames (--times); got {', '.join(time_text(w) for w in outside)}")
    return np.unique([int(np.argmin(np.abs(times - w))) for w in when])


def system_of(a: np.ndarray, batch: int | None, system: int) -> np.ndarray:
    """One system's slice of a (frames, batch, ...) array (the array itself for one system)."""
    return a if batch is None else a[:, system]


def check_member(batch: int | None, system: int) -> None:
    """Refuse a system index outside the run (one line).

    Raises
    ------
    ValueError
    """
    count = 1 if batch is None else batch
    if not 0 <= system < count:
        what = "a single system" if batch is None else f"an ensemble of {batch}"
        raise ValueError(f"system must be in [0, {count}) for {what}, got {system}")


def common_frames(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(i, j)`` with ``a[i] == b[j]`` up to round-off (1e-9 of the larger time).

    ``b`` is increasing (save times); each ``a[i]`` is matched to its nearest ``b[j]``.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if not a.size or not b.size:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    j = np.searchsorted(b, a).clip(0, b.size - 1)
    below = (j - 1).clip(0, b.size - 1)
    j = np.where(np.abs(b[below] - a) < np.abs(b[j] - a), below, j)
    scale = max(1.0, float(np.max(np.abs(a))), float(np.max(np.abs(b))))
    ok = np.abs(b[j] - a) <= 1e-9 * scale
    return np.flatnonzero(ok), j[ok]


def shared_frames(run_times: ArrayLike, density_times: ArrayLike) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """:func:`common_frames` of a particle run and a density, refusing none in one line.

    Raises
    ------
    ValueError
        No common save time (the message gives both ranges).
    """
    rt, dt = np.asarray(run_times, dtype=float), np.asarray(density_times, dtype=float)
    i, j = common_frames(rt, dt)
    if i.size == 0:
        raise ValueError(
            f"the run (t = {time_text(rt[0])} .. {time_text(rt[-1])}, {rt.size} frames) "
            f"and the density (t = {time_text(dt[0])} .. {time_text(dt[-1])}, "
            f"{dt.size} frames) share no save time; save both at the same times")
    return i, j


def token_positions(traj: Any, d: int, where: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Every token's position per frame (an ensemble pooled), and the tokens' masses.

    Parameters
    ----------
    traj : Trajectory
    d : int
        The dimension the figure needs.
    where : str
        Its name in the message (``"the circle (d = 2)"``).

    Returns
    -------
    x : ndarray, shape (frames, N, d)
        N = batch * n.
    weights : ndarray, shape (N,) or None
        Token masses (None: equal).

    Raises
    ------
    ValueError
        Another dimension, or no positions per frame.
    """
    x = np.asarray(traj.positions)
    if x.shape[-1] != d:
        raise ValueError(f"compare needs a particle run on {where}, got d = {x.shape[-1]}")
    frames = x.shape[0]
    if frames == 0 or x.ndim not in (3, 4):
        raise ValueError("the particle run keeps no positions per frame (--positions all "
                         "is needed to compare)")
    x = x.reshape(frames, -1, d)
    masses = getattr(traj.config, "masses", None) if traj.config is not None else None
    weights = None
    if masses is not None:
        weights = np.tile(np.asarray(masses, dtype=float), x.shape[1] // len(masses))
    return x, weights
