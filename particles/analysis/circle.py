"""Analysis of oscillators on the circle: continuous phases, order parameter, locking
(``particles.analysis.circle``).

Works on embedded trajectories (positions of shape ``(frames, n, 2)``, from
``simulate(..., d=2)``) and on angle trajectories (``theta`` of shape
``(frames, n)``, from :func:`particles.circle.simulate_angles`).

* :func:`phases` / :func:`unwrap_phases`: the continuous lift ``theta_i(t)``
  (``numpy.unwrap`` along time; exact when every oscillator moves less than
  pi between consecutive frames).
* :func:`order_parameter`: ``r e^{i psi} = (1/N) sum_j m_j e^{i theta_j}``
  per frame (Kuramoto 1984; ``r`` is the ``order_parameter`` observable that
  ``simulate`` records, ``psi`` its phase).
* :class:`FrequencyLocking`: mean frequencies over a time window, the locked
  group (frequencies within a tolerance of the population's common
  frequency) and that common frequency (Strogatz, "From Kuramoto to
  Crawford", Physica D 143, 2000).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

# the order parameter is the observers' (one definition, with its compiled observer)
from particles.observables.order import (
    OrderParameter,
    check_finite,
    order_parameter,
    order_parameter_from_positions,
)

__all__ = [
    "FrequencyLocking",
    "OrderParameter",
    "order_parameter",
    "order_parameter_from_positions",
    "phases",
    "unwrap_phases",
]



def unwrap_phases(theta: ArrayLike, *, axis: int = 0) -> np.ndarray:
    """Continuous phases from angles known modulo 2 pi.

    Parameters
    ----------
    theta : array_like, shape (frames, ...)
        Angles (any branch) with time along ``axis``.
    axis : int
        The time axis.

    Returns
    -------
    ndarray, same shape
        ``theta`` plus multiples of 2 pi so that consecutive frames differ by
        at most pi; starts at the first frame's values.  Correct when each
        oscillator truly moves less than pi between frames (otherwise whole
        turns are lost: save more often).
    """
    th = check_finite("theta", np.asarray(theta, dtype=np.float64))
    return np.unwrap(th, axis=axis)


def phases(positions: ArrayLike) -> np.ndarray:
    """Continuous phases ``theta_i(t)`` of an embedded circle trajectory.

    Parameters
    ----------
    positions : array_like, shape (frames, ..., n, 2)
        Points on the circle over time (``Trajectory.positions`` of a d = 2
        run, with or without a batch axis).

    Returns
    -------
    theta : ndarray, shape (frames, ..., n)
        Unwrapped along the frame axis (see :func:`unwrap_phases`); the first
        frame is in ``(-pi, pi]``.
    """
    x = check_finite("positions", np.asarray(positions, dtype=np.float64))
    if x.ndim < 3 or x.shape[-1] != 2:
        raise ValueError(f"positions must have shape (frames, ..., n, 2), got shape {x.shape}")
    return np.unwrap(np.arctan2(x[..., 1], x[..., 0]), axis=0)


class FrequencyLocking:
    """Mean frequencies over a time window and the frequency-locked group.

    The mean frequency of oscillator i over ``[t0, t1]`` is the time average
    of ``dtheta_i/dt``, ``(theta_i(t1) - theta_i(t0)) / (t1 - t0)``, from
    continuous phases.  Locked oscillators share one frequency (in the long
    run exactly); drifting ones spread out.  The locked group is found as the
    largest set of mean frequencies inside an interval of width ``2 tol``
    (a sliding window over the sorted frequencies); its mean is the common
    frequency ``Omega``, and an oscillator is locked when
    ``|mean frequency - Omega| <= tol``.

    Choose ``tol`` above the residual spread of the locked group (which
    decays like 1 / window length) and well below the frequency spacing of
    drifting oscillators.  In an incoherent population the "group" is just
    the densest ``2 tol`` interval: about ``2 tol g(Omega) n`` oscillators by
    chance, so compare ``locked_fraction`` with that level.

    Parameters
    ----------
    tol : float
        Frequency tolerance, > 0.
    t_start, t_end : float, optional
        The averaging window (the first and last frame inside it are used);
        defaults to the second half of the run and its end.

    Examples
    --------
    >>> lock = FrequencyLocking(0.01).compute(traj.times, traj.theta)  # doctest: +SKIP
    >>> lock.locked_fraction, lock.common_frequency                    # doctest: +SKIP
    """

    def __init__(self, tol: float, *, t_start: float | None = None,
                 t_end: float | None = None) -> None:
        if not (isinstance(tol, int | float | np.floating) and math.isfinite(tol) and tol > 0):
            raise ValueError(f"tol must be a finite number > 0, got {tol!r}")
        for name, t in (("t_start", t_start), ("t_end", t_end)):
            if t is not None and not math.isfinite(t):
                raise ValueError(f"{name} must be a finite time or None, got {t!r}")
        self.tol = float(tol)
        self.t_start = t_start
        self.t_end = t_end
        self._results: dict[str, object] = {}

    def _get(self, name: str):
        try:
            return self._results[name]
        except KeyError:
            raise AttributeError(f"FrequencyLocking.{name} is not available: "
                                 "call compute(times, theta) first") from None

    def compute(self, times: ArrayLike, theta: ArrayLike) -> FrequencyLocking:
        """Analyse continuous phases over the window.

        Parameters
        ----------
        times : array_like, shape (frames,)
            Increasing frame times.
        theta : array_like, shape (frames, n)
            Continuous phases (``AngleTrajectory.theta``, or :func:`phases`
            of embedded positions).

        Returns
        -------
        self
        """
        t = check_finite("times", np.asarray(times, dtype=np.float64))
        th = check_finite("theta", np.asarray(theta, dtype=np.float64))
        if t.ndim != 1 or th.ndim != 2 or th.shape[0] != t.shape[0] or th.shape[1] < 1:
            raise ValueError(f"times (frames,) and theta (frames, n) must match, got shapes "
                             f"{t.shape} and {th.shape}")
        if np.any(np.diff(t) <= 0):
            raise ValueError("times must be strictly increasing")
        t0 = 0.5 * (t[0] + t[-1]) if self.t_start is None else self.t_start
        t1 = t[-1] if self.t_end is None else self.t_end
        inside = np.flatnonzero((t >= t0 - 1e-12 * abs(t0)) & (t <= t1 + 1e-12 * abs(t1)))
        if inside.size < 2 or t[inside[-1]] <= t[inside[0]]:
            raise ValueError(f"the window [{t0:g}, {t1:g}] must contain at least two frames "
                             f"(frames span [{t[0]:g}, {t[-1]:g}])")
        a, b = inside[0], inside[-1]
        freq = (th[b] - th[a]) / (t[b] - t[a])
        f = np.sort(freq)
        # largest group in a window [f_k, f_k + 2 tol]
        ends = np.searchsorted(f, f + 2.0 * self.tol, side="right")
        k = int(np.argmax(ends - np.arange(f.size)))
        omega = float(f[k:ends[k]].mean())
        locked = np.abs(freq - omega) <= self.tol
        self._results = dict(
            frequencies=freq,
            locked=locked,
            common_frequency=omega,
            window=(float(t[a]), float(t[b])),
        )
        return self

    @property
    def frequencies(self) -> np.ndarray:
        """Mean frequency of each oscillator over the window, shape (n,)."""
        return self._get("frequencies")

    @property
    def locked(self) -> np.ndarray:
        """Boolean mask of the locked oscillators, shape (n,)."""
        return self._get("locked")

    @property
    def common_frequency(self) -> float:
        """Mean frequency ``Omega`` of the locked group."""
        return self._get("common_frequency")

    @property
    def locked_fraction(self) -> float:
        """Fraction of oscillators that are locked."""
        return float(np.mean(self._get("locked")))

    @property
    def window(self) -> tuple[float, float]:
        """The times ``(t0, t1)`` of the first and last frame averaged over."""
        return self._get("window")
