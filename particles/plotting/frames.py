"""What of a run a figure draws: the saved frames nearest to requested times
(``particles plot --times``), and one system of an ensemble (:func:`system_of`).

Every figure that draws chosen times (trajectory histograms and spheres,
sweep cluster counts and curves, density profiles, kernel histograms) picks
the nearest saved frames here, and refuses a time outside the saved range
instead of silently drawing the nearest end: ``--times 1e9`` on a run that
stops at t = 2000 is an error, not a picture of t = 2000.  A time typed as
it is printed (``time_text``, :data:`~particles.display.TIME_DIGITS`
significant digits) counts as inside.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from particles.display import TIME_DIGITS, time_text

__all__ = ["check_member", "nearest_frames", "system_of"]


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
