"""Extending a stored run to a later ``T``: the save times of the longer run.

A run extends (``resume=True`` with a larger ``T``, or with save times that
go on) when the stored save times are the first save times of the longer
run, bit for bit: the longer run then passes through every stored frame, so
continuing from the last one gives what an uninterrupted run of the longer
configuration gives.  :func:`check_extension` builds the longer
configuration or says why there is none:

* a ``save_every`` grid goes on by itself when the stored ``T`` lies on it;
* explicit save times (``save_times``) given anew must start with the stored
  ones, bit for bit;
* explicit save times that are not given anew go on with their own spacing
  (:func:`continue_save_times`): a log-spaced grid (``log:START:STOP:NUM``)
  with the same ratio, so the same points per decade, a lin-spaced one with
  the same step, and the new ``T`` as the last save time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from particles.config import SimulationConfig

__all__ = ["GRID_RTOL", "check_extension", "continue_save_times"]

#: relative spread of the stored ratios (log) or steps (lin) accepted as one
#: grid: ``np.geomspace`` and ``np.linspace`` round each point on its own.
GRID_RTOL = 1e-9

#: the fewest stored save times whose spacing is read as a grid.
GRID_MIN_TIMES = 3


def _spacing(values: np.ndarray) -> float | None:
    """The common value of ``values`` (ratios or steps), agreeing to :data:`GRID_RTOL`
    (at least two of them; a last one may be smaller: an earlier extension ended
    the grid at its ``T``), or None."""
    if not np.all(values > 0):
        return None
    first = float(values[0])
    same = np.abs(values - first) <= GRID_RTOL * first
    if same.all() and values.size >= GRID_MIN_TIMES - 1:
        return first
    if same[:-1].all() and values.size >= GRID_MIN_TIMES and values[-1] < first:
        return first
    return None


def continue_save_times(times: Sequence[float], T: float) -> tuple[float, ...] | None:
    """Stored save times continued to ``T`` with their own spacing.

    The stored times are kept as they are (bit for bit) and followed by
    ``t_last * r**k`` (a log-spaced grid, ratio ``r``) or ``t_last + k h``
    (a lin-spaced grid, step ``h``) up to ``T``, then ``T`` itself unless the
    grid lands on it.  The last stored step may be shorter than the others
    (a grid an earlier extension ended at its ``T``).

    Parameters
    ----------
    times : sequence of float, shape (k,)
        The stored save times (a configuration's ``save_times``), increasing.
    T : float
        The new final time, at least the last stored time.

    Returns
    -------
    tuple of float or None
        The continued save times; None when the stored times do not form a
        log- or lin-spaced grid of at least three times.
    """
    t = np.asarray(times, dtype=np.float64)
    if t.size < GRID_MIN_TIMES or not T >= t[-1]:
        return None
    last = float(t[-1])
    r = _spacing(t[1:] / t[:-1]) if t[0] > 0 else None
    h = None if r is not None else _spacing(np.diff(t))
    if r is not None:
        count = math.floor(math.log(T / last) / math.log(r) + 1e-9)
        new = [last * r**k for k in range(1, count + 1)]
    elif h is not None:
        count = math.floor((T - last) / h + 1e-9)
        new = [last + k * h for k in range(1, count + 1)]
    else:
        return None
    new = [x for x in new if x <= T]
    if T - (new[-1] if new else last) > 1e-9 * max(1.0, T):
        new.append(float(T))
    return (*(float(x) for x in t), *new)


def check_extension(given: SimulationConfig, stored: SimulationConfig) -> SimulationConfig:
    """The stored configuration extended as ``given`` asks, or ValueError saying why not.

    Parameters
    ----------
    given : SimulationConfig
        Equal to ``stored`` except for a larger ``T`` and, optionally, save
        times that start with the stored ones.
    stored : SimulationConfig
        The configuration in the file.

    Returns
    -------
    SimulationConfig
        ``stored`` with ``T = given.T`` and the save times of the longer run.

    Raises
    ------
    ValueError
        A shorter ``T``; given save times that do not start with the stored
        ones; stored save times that the longer run cannot continue (a
        ``save_every`` grid the old ``T`` is off, explicit times with no
        regular spacing and no new ones given); nothing to add.
    """
    if given.T < stored.T:
        raise ValueError(f"resume can extend a run, not shorten it: T={given.T:g} is below "
                         f"the stored T={stored.T:g}")
    old = stored.output_times()
    if given.save_times != stored.save_times and given.save_times is not None:
        extended = stored.replace(T=given.T, save_times=given.save_times)
        why = (f"save_times is not a continuation of the stored save times ({len(old)} "
               f"frames to t={old[-1]:g}): it must start with them, bit for bit")
    elif stored.save_times is not None:
        times = continue_save_times(stored.save_times, given.T)
        if times is None:
            raise ValueError(
                f"cannot extend to T={given.T:g}: the stored save_times ({len(stored.save_times)} "
                f"to t={old[-1]:g}) are not a log- or lin-spaced grid of at least "
                f"{GRID_MIN_TIMES} times; give save_times that start with them and go on to "
                "the new T")
        extended = stored.replace(T=given.T, save_times=times)
        why = "the continued grid does not start with the stored save times"
    else:
        extended = stored.replace(T=given.T)
        why = (f"the stored save times (to t={old[-1]:g}) are not the first save times of the "
               f"longer run (the stored T={stored.T:g} is not a multiple of save_every * dt = "
               f"{stored.save_every * stored.dt:g})")
    new = extended.output_times()
    if len(new) < len(old) or not np.array_equal(new[: len(old)], old):
        raise ValueError(f"cannot extend to T={given.T:g}: {why}")
    if len(new) == len(old):
        raise ValueError(f"cannot extend to T={given.T:g}: the longer run has no save time "
                         f"after the stored last one (t={old[-1]:g})")
    return extended
