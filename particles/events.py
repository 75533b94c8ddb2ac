"""What a run watches while it integrates: cluster counts, merge events, stops.

Three things a long metastable run wants without dense output (DESIGN.md
section 2: clusters persist for times of order ``exp(c beta)``):

* **Merge events** (``merge_events=True``).  After every saved frame the
  cluster count of every system (:func:`cluster_counts`: the components at
  linking distance :data:`~particles.observables.pairs.DEFAULT_EPS`, the
  analysis' default detector, with its spread rule) is compared with the
  previous frame's.  Where it dropped, :func:`locate_merges` bisects the
  interval: it integrates a copy of the earlier state to the midpoint with
  the run's own integrator (:func:`particles.engine.integrate` hands it the
  stepper), counts again, and keeps the half in which the count drops, until
  the bracket is shorter than the tolerance (:func:`time_tolerance`: the
  adaptive integrator's ``rtol`` relative to the time, or one fixed step).
  Several merges in one interval are located one after the other.  In an
  ensemble only the systems whose count dropped are located, each alone (a
  copy of its own state, parameters and adaptive step: the times a run of
  that system alone locates), and each merge carries its system.  The run
  itself is not touched: its frames are the same bits with or without
  events.  A count that rises (a spread start forming clusters, count 0 ->
  k, or tokens drifting past eps) is no merge.  Noise is refused: locating
  integrates a stretch again in other steps, which would draw another path.
* **until_clusters K.**  The run ends at the first saved frame at which
  every system has between 1 and K clusters; it is complete there (its
  file's ``stop_reason`` says so, and holds fewer frames than ``T`` asks).
  The systems of an ensemble are not frozen when they get there (the frames
  are the bits of a run without the stop, and the observables go on
  meaning what they say): they run on until the last one does, and each
  one's first passage is recorded (:class:`~particles.trajectory.Passage`:
  the first frame with between 1 and K clusters, and the time, which with
  merge events is that of the merge that took it there, to the
  integrator's tolerance: first-passage times per system).
* **max_wall S.**  The run pauses at the first saved frame reached after S
  seconds of wall time (counted from the start of this session, not of the
  run: a resumed run gets a new budget).

:func:`stops` applies the last two to a stream of frames, marking the last
frame's :attr:`~particles.trajectory.Frame.stop`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from particles.models.collapse import distinct_rows
from particles.observables.pairs import DEFAULT_EPS, frame_statistics
from particles.plan import Watch
from particles.trajectory import Frame, Merge

__all__ = ["DEFAULT_EPS", "cluster_counts", "locate_merges", "stops", "time_tolerance",
           "until_holds"]

#: smallest relative bracket of a bisection (below it the times are round-off).
MIN_RELATIVE = 1e-12


def cluster_counts(X: np.ndarray) -> np.ndarray:
    """Cluster counts of every system (0: spread), as the analysis counts them.

    Counted over each system's distinct points: tokens of a collapsed cluster
    share their bits, and coincident tokens change neither the components nor
    the spread rule, so a run of n tokens in k groups pays O(k^2), not O(n^2).

    Parameters
    ----------
    X : ndarray, shape (batch, n, d)

    Returns
    -------
    ndarray of int64, shape (batch,)
        :func:`particles.analysis.count_clusters` at eps
        :data:`~particles.observables.pairs.DEFAULT_EPS`.
    """
    X = np.asarray(X, dtype=np.float64)
    B, n = X.shape[:2]
    distinct = [distinct_rows(X[b])[0] for b in range(B)]
    if all(rows.shape[0] == n for rows in distinct):  # nothing coincides: one pass
        return frame_statistics(X, np.empty(0), DEFAULT_EPS, 0.0, np.ones(n))[1]
    return np.array([frame_statistics(rows[None], np.empty(0), DEFAULT_EPS, 0.0,
                                      np.ones(rows.shape[0]))[1][0] for rows in distinct],
                    dtype=np.int64)


def until_holds(counts: np.ndarray, until: int | None) -> bool:
    """Whether cluster counts (batch,) end a run with ``until_clusters=until``:
    every system between 1 and ``until`` clusters (a spread system, 0, has not
    clustered yet)."""
    counts = np.asarray(counts)
    return until is not None and bool(np.all((counts >= 1) & (counts <= until)))


def time_tolerance(t: float, *, adaptive: bool, rtol: float, dt: float) -> float:
    """Length below which a merge's bracket ends: ``rtol * max(t, 1)`` for an
    adaptive integrator (its own accuracy), one step ``dt`` for a fixed one."""
    if adaptive:
        return max(rtol, MIN_RELATIVE) * max(abs(t), 1.0)
    return dt


def _merged(count: int, before: int) -> bool:
    """Whether a count seen after ``before`` clusters is a merge (not spread, fewer)."""
    return 1 <= count < before


def locate_merges(
    advance: Callable[[np.ndarray, float, float], None],
    count: Callable[[np.ndarray], int],
    X0: np.ndarray,
    t0: float,
    before: int,
    X1: np.ndarray,
    t1: float,
    after: int,
    tol: Callable[[float], float],
    system: int = 0,
) -> list[Merge]:
    """The merges between two saved frames of one system, by bisection.

    Parameters
    ----------
    advance : callable
        ``advance(state, a, b)``: integrate a state (a copy of the run's) from
        time ``a`` to ``b`` in place.
    count : callable
        ``count(state) -> int``: the cluster count of a state.
    X0 : ndarray
        State at ``t0`` (not modified).
    t0 : float
        The earlier frame's time.
    before : int
        The cluster count at ``t0``.
    X1 : ndarray
        State at ``t1`` (not modified).
    t1 : float
        The later frame's time, ``t0 < t1``.
    after : int
        The cluster count at ``t1``; merges are located only when
        ``1 <= after < before``.
    tol : callable
        ``tol(t)``: the bracket length at which a merge near ``t`` is located.
    system : int
        The system's index in its ensemble (recorded in each merge).

    Returns
    -------
    list of Merge
        In time order; each at the first time seen with fewer clusters.
    """
    found: list[Merge] = []
    while before >= 1 and _merged(after, before):
        lo, X_lo = t0, X0
        hi, X_hi, c_hi = t1, X1, after
        while hi - lo > tol(hi):
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:  # the bracket is round-off
                break
            Y = X_lo.copy()
            advance(Y, lo, mid)
            c = count(Y)
            if _merged(c, before):
                hi, X_hi, c_hi = mid, Y, c
            else:
                lo, X_lo = mid, Y
        found.append(Merge(float(hi), int(before), int(c_hi), int(system)))
        if c_hi <= after or hi >= t1:
            break
        t0, X0, before = hi, X_hi, c_hi  # more merges after this one
    return found


class Stop(Protocol):
    """A condition that ends a run at a saved frame (the frame is kept, ``stop`` set).

    Attributes
    ----------
    name : str
        The reason recorded (``stop_reason``, :data:`particles.trajectory.STOP_REASONS`).
    """

    name: str

    def holds(self, frame: Frame, elapsed: float) -> bool:
        """Whether the run stops at ``frame``, ``elapsed`` seconds after it began."""
        ...


@dataclass(frozen=True)
class UntilClusters:
    """Stop at the first frame at which every system has between 1 and ``clusters``
    clusters (:func:`until_holds`; the frames carry their counts)."""

    clusters: int
    name: ClassVar[str] = "until_clusters"

    def holds(self, frame: Frame, elapsed: float) -> bool:
        return frame.clusters is not None and until_holds(frame.clusters, self.clusters)


@dataclass(frozen=True)
class MaxWall:
    """Pause at the first frame after ``seconds`` of wall time."""

    seconds: float
    name: ClassVar[str] = "max_wall"

    def holds(self, frame: Frame, elapsed: float) -> bool:
        return elapsed >= self.seconds


def stops_of(watch: Watch) -> tuple[Stop, ...]:
    """The stops a run's :class:`~particles.plan.Watch` asks for, in the order they
    are tested at each frame."""
    out: list[Stop] = []
    if watch.until_clusters is not None:
        out.append(UntilClusters(watch.until_clusters))
    if watch.max_wall is not None:
        out.append(MaxWall(watch.max_wall))
    return tuple(out)


def stops(watch: Watch, frames: Iterable[Frame], *, start: int, last: int
          ) -> Iterator[Frame]:
    """The frames of a run up to its first stop (:func:`stops_of`: ``until_clusters``,
    ``max_wall``).

    The frame at which a stop holds is yielded last, with ``stop`` set.
    Frames up to ``start`` (frame 0, or the frame a resumed run continues
    from: already on disk) never stop it, nor does the run's last frame (the
    run ends there anyway).

    Parameters
    ----------
    watch : Watch
        The run's watch (:attr:`particles.plan.Plan.watch`).
    frames : iterable of Frame
        With ``clusters`` set when ``watch.until_clusters`` is.
    start : int
        Index of the frame the run starts (or resumes) from.
    last : int
        Index of the run's last frame.

    Yields
    ------
    Frame
        Each frame of ``frames`` in turn, up to and including the one at
        which a stop holds (its ``stop`` set to the stop's name).
    """
    conditions = stops_of(watch)
    began = time.monotonic()
    for fr in frames:
        if start < fr.index < last:
            elapsed = time.monotonic() - began
            stop = next((c.name for c in conditions if c.holds(fr, elapsed)), "")
            if stop:
                yield dataclasses.replace(fr, stop=stop)
                return
        yield fr
