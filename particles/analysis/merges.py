"""Cluster count over time, merge events and the two time scales.

Self-attention dynamics cluster on two time scales (DESIGN.md section 2):
tokens first gather into a few clusters quickly (times of order 1), and
these clusters then persist for times of order ``exp(c beta)`` before merging
pairwise (metastability).  On a logarithmic time axis the cluster count is a
staircase; :class:`MergeAnalysis` reads the two scales off it.

Definitions (all times are saved-frame times, so they are resolved to the
spacing of the saved frames; save logarithmically spaced times):

Plateau
    A maximal run of consecutive frames ``a .. b`` with the same cluster
    count.  It starts at ``t_a`` and ends at ``t_{b+1}``, the first frame
    showing another count (the merge time as seen); the last plateau ends at
    the last frame and is *censored* (the count did not change before the end).
Length on the log-time axis
    ``L = log10(t_b / max(t_a, time_unit))`` decades, from the plateau's
    first to its *last* frame: the count was seen constant over that span, so
    ``L`` is a lower bound that coarse save times cannot inflate (a plateau
    seen in one frame has ``L <= 0``).  ``time_unit`` (default 1, the time
    scale of SA with ``V = I``, whose token speeds are at most 1) stops the
    first instants after ``t = 0`` from counting as many decades: nothing
    moves much before ``t ~ time_unit``.
Long-lived
    A plateau with ``L >= min_decades`` (default 1: the count is seen
    unchanged over at least a factor 10 in time).  A censored plateau counts
    when its observed length already reaches ``min_decades``.
Formation time (fast scale)
    The start of the first long-lived plateau of clusters (NaN if there is
    none).  A plateau of count 0 is a spread state (no clusters, the rule of
    :mod:`particles.observables.spread`): however long, it is no formation.
First merge time (slow scale)
    The end of that plateau, if it is not censored (NaN otherwise: no merge
    was seen after the clusters formed).  A system whose clusters formed as
    one cluster has nothing left to merge: ensemble statistics leave it out
    of the first-merge risk set (:mod:`particles.analysis.ensemble`).
Metastable plateaus and slow merges
    The plateaus from the formation time on, and the merge events after it.

With merges located between the frames (``merge_events``,
:mod:`particles.events`: each drop of the count bisected to the integrator's
tolerance), :func:`located_timescales` refines two of these times:

First merge time, located
    The first located merge after the last frame of the formation plateau
    (NaN when none: no formation, or no merge after it).  Where the plateau
    ends in a drop of the count (the usual case) this is the merge bisected
    in the interval before the frame that ends it, so it lies in the save
    grid's bracket ``(t_{e-1}, t_e]`` of the frame-based time ``t_e``; where
    it ends otherwise (the count rose, or the system spread) the frame-based
    time was no merge, and the located one is the next merge, if any.
Single-cluster time, located
    The first frame with one cluster, refined to the located merge into one
    cluster in the interval before it (the time a run with
    ``until_clusters=1`` records as the passage); the frame's time where no
    merge led there (one cluster from the start, or out of a spread state).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from particles._numba import cached
from particles.analysis._base import Compute, as_tokens, result
from particles.analysis.clusters import DEFAULT_FLOOR, check_method, detect
from particles.analysis.components import DEFAULT_EPS
from particles.analysis.tracking import MergeEvent, MergeTree, SplitEvent, track_labels

#: default minimum plateau length, in decades of time, to call it long-lived.
DEFAULT_MIN_DECADES = 1.0


@dataclass(frozen=True)
class Plateau:
    """A run of frames with a constant cluster count.

    Attributes
    ----------
    system : int
        System index (0 for a single system).
    count : int
        Number of clusters.
    start_frame, end_frame : int
        First frame of the run and first frame after it (the last frame when
        censored).
    start, end : float
        Their times (``end``: the merge time as seen).
    log_length : float
        ``log10(t_last / max(start, time_unit))`` with ``t_last`` the time of
        the run's last frame (see the module docstring).
    long_lived : bool
        ``log_length >= min_decades``.
    censored : bool
        True for the last plateau: the count did not change before the end.
    """

    system: int
    count: int
    start_frame: int
    end_frame: int
    start: float
    end: float
    log_length: float
    long_lived: bool
    censored: bool


@dataclass(frozen=True)
class Timescales:
    """Fast and slow time scales of one system.

    Attributes
    ----------
    system : int
    formation_time : float
        Start of the first long-lived plateau of clusters, count >= 1 (NaN: none).
    first_merge_time : float
        End of that plateau (NaN: no merge after formation, or no formation).
    clusters_formed : int
        Cluster count on the first long-lived plateau (0: none).
    metastable_plateaus : tuple of Plateau
        Plateaus from the formation time on.
    slow_merge_times : tuple of float
        Times after the formation time at which the count dropped.
    """

    system: int
    formation_time: float
    first_merge_time: float
    clusters_formed: int
    metastable_plateaus: tuple[Plateau, ...]
    slow_merge_times: tuple[float, ...]

    @property
    def separation(self) -> float:
        """``log10(first_merge_time / formation_time)`` decades (NaN if undefined)."""
        if not (self.first_merge_time > 0 and self.formation_time > 0):
            return float("nan")
        return float(np.log10(self.first_merge_time / self.formation_time))


def find_plateaus(
    times: np.ndarray,
    counts: np.ndarray,
    *,
    system: int = 0,
    min_decades: float = DEFAULT_MIN_DECADES,
    time_unit: float = 1.0,
) -> list[Plateau]:
    """Plateaus of a cluster-count series.

    Parameters
    ----------
    times : ndarray, shape (frames,)
        Increasing frame times.
    counts : ndarray of int, shape (frames,)
        Cluster count per frame.
    system : int
        Recorded in the plateaus.
    min_decades, time_unit : float
        See the module docstring.

    Returns
    -------
    list of Plateau
        In time order; they tile the frames.
    """
    counts = np.asarray(counts)
    frames = counts.shape[0]
    if frames == 0:
        return []
    change = np.flatnonzero(np.diff(counts) != 0) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change, [frames - 1]])  # first frame after, or the last frame
    out = []
    for k, (a, e) in enumerate(zip(starts, ends, strict=True)):
        censored = k == starts.size - 1
        last = e if censored else e - 1  # last frame showing this count
        t_last = float(times[last])
        length = (
            float(np.log10(t_last / max(float(times[a]), time_unit)))
            if t_last > 0
            else float("-inf")
        )
        out.append(
            Plateau(
                system,
                int(counts[a]),
                int(a),
                int(e),
                float(times[a]),
                float(times[e]),
                length,
                bool(length >= min_decades),
                censored,
            )
        )
    return out


def find_timescales(plateaus: list[Plateau], system: int = 0) -> Timescales:
    """The fast and slow scales from the plateaus of one system.

    Parameters
    ----------
    plateaus : list of Plateau
        From :func:`find_plateaus`, in time order.
    system : int
        Recorded in the result.

    Returns
    -------
    Timescales
    """
    # a long-lived spread plateau (count 0) is no formation
    first = next((k for k, p in enumerate(plateaus) if p.long_lived and p.count > 0), None)
    if first is None:
        return Timescales(system, float("nan"), float("nan"), 0, (), ())
    p = plateaus[first]
    after = tuple(plateaus[first:])
    drops = tuple(float(q.end) for q, nxt in itertools.pairwise(after) if nxt.count < q.count)
    return Timescales(system, p.start, float("nan") if p.censored else p.end, p.count, after, drops)


@cached()
def _timescales(times, counts, min_decades, time_unit, formation, first_merge):
    """Formation and first-merge time of every series counts[b] (F,), as
    :func:`find_timescales` of its plateaus (the NumPy twin the tests compare)."""
    B, F = counts.shape
    for b in range(B):
        formation[b] = np.nan
        first_merge[b] = np.nan
        a = 0
        for k in range(1, F + 1):
            if k < F and counts[b, k] == counts[b, k - 1]:
                continue
            censored = k == F
            e = F - 1 if censored else k  # first frame after the plateau, or the last
            last = e if censored else e - 1
            t_last = times[last]
            if t_last > 0.0:
                length = np.log10(t_last / max(times[a], time_unit))
            else:
                length = -np.inf
            if length >= min_decades and counts[b, a] > 0:  # count 0: spread, no formation
                formation[b] = times[a]
                if not censored:
                    first_merge[b] = times[e]
                break
            a = k


def timescales(times: np.ndarray, counts: np.ndarray, *, min_decades: float = DEFAULT_MIN_DECADES,
               time_unit: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Formation and first-merge times of many cluster-count series (compiled):
    the :func:`find_timescales` of each series' :func:`find_plateaus`, in one call
    (a sweep's tasks read thousands of systems).

    Parameters
    ----------
    times : ndarray, shape (F,)
    counts : ndarray of int, shape (m, F)

    Returns
    -------
    formation_time, first_merge_time : ndarray, shape (m,)
        NaN where not seen (the definitions of this module).
    """
    c = np.ascontiguousarray(counts, dtype=np.int64)
    form = np.empty(c.shape[0])
    merge = np.empty(c.shape[0])
    if c.shape[1]:
        _timescales(np.ascontiguousarray(times, dtype=np.float64), c, float(min_decades),
                    float(time_unit), form, merge)
    else:
        form[:] = merge[:] = np.nan
    return form, merge


def located_timescales(times: np.ndarray, counts: np.ndarray, first_merge_time: np.ndarray,
                       system: np.ndarray, time: np.ndarray, after: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """First-merge and single-cluster times of many systems from their located
    merges (the module docstring's definitions).

    Parameters
    ----------
    times : ndarray, shape (F,)
        The frame times.
    counts : ndarray of int, shape (m, F)
        Cluster count of every system at every frame.
    first_merge_time : ndarray, shape (m,)
        The frame-based first-merge times (:func:`timescales`; NaN: none).
    system : ndarray of int, shape (merges,)
        The system (0 .. m - 1) of each located merge.
    time, after : ndarray, shape (merges,)
        Its time and the cluster count after it.

    Returns
    -------
    first_merge_time, single_cluster_time : ndarray, shape (m,)
        NaN, and inf, where not seen.
    """
    times = np.asarray(times, dtype=np.float64)
    counts = np.asarray(counts)
    m = counts.shape[0]
    system = np.asarray(system, dtype=np.int64)
    order = np.lexsort((np.asarray(time), system))
    system, time, after = system[order], np.asarray(time)[order], np.asarray(after)[order]
    bounds = np.searchsorted(system, np.arange(m + 1))
    first = np.full(m, np.nan)
    single = np.full(m, np.inf)
    one = counts == 1
    for b in range(m):
        t, a = time[bounds[b]:bounds[b + 1]], after[bounds[b]:bounds[b + 1]]
        grid = first_merge_time[b]
        if np.isfinite(grid):  # the formation plateau ends at frame e (time t_e)
            last = times[np.searchsorted(times, grid) - 1]  # its last frame
            later = t > last
            if later.any():
                first[b] = t[np.argmax(later)]
        if one[b].any():
            k = int(np.argmax(one[b]))
            lo = times[k - 1] if k else -np.inf
            into = (a == 1) & (t > lo) & (t <= times[k])
            single[b] = t[np.argmax(into)] if into.any() else times[k]
    return first, single


def two_cluster_merge_time(beta: float, phi: float, *, masses: tuple[float, float] = (1.0, 1.0),
                           eps: float = DEFAULT_EPS, asymptotic: bool = False) -> float:
    """Time for two point clusters of SA on the circle to merge (DESIGN.md section 2).

    Two tokens (or two collapsed clusters) of masses ``m1, m2`` at angle
    ``theta`` follow ``dtheta/dt = -sin(theta) (w1 + w2)`` with ``w1 = m2 /
    (m1 e^{beta (1 - cos theta)} + m2)`` and ``w2`` alike (each is pulled by
    the other's attention weight).  The merge time is the time ``theta`` takes
    from ``phi`` down to ``eps`` (where :func:`count_clusters` sees one cluster):

    ``T = int_eps^phi dtheta / (sin(theta) (w1 + w2))``  (quadrature), or, for
    ``asymptotic=True``, its Laplace asymptotics at large ``beta``,
    ``T ~ e^{beta (1 - cos phi)} / ((m1/m2 + m2/m1) beta sin(phi)^2)``: the law
    ``log T ~ beta (1 - cos phi)`` with its prefactor.

    Parameters
    ----------
    beta : float
        Inverse temperature, > 0.
    phi : float
        Initial angle between the clusters, in (eps, pi).
    masses : (float, float)
        Cluster masses (only their ratio matters).
    eps : float
        Angle at which the two count as one cluster.
    asymptotic : bool
        Return the large-beta form instead of the quadrature.

    Returns
    -------
    float
    """
    from scipy.integrate import quad

    m1, m2 = (float(m) for m in masses)
    if not (beta > 0 and m1 > 0 and m2 > 0 and 0 < eps < phi < np.pi):
        raise ValueError(f"need beta > 0, masses > 0 and 0 < eps < phi < pi; got beta={beta}, "
                         f"phi={phi}, masses={masses}, eps={eps}")
    if asymptotic:
        return float(np.exp(beta * (1 - np.cos(phi)))
                     / ((m1 / m2 + m2 / m1) * beta * np.sin(phi) ** 2))

    def slowness(theta: float) -> float:
        gap = np.exp(beta * (1 - np.cos(theta)))
        return 1.0 / (np.sin(theta) * (m2 / (m1 * gap + m2) + m1 / (m2 * gap + m1)))

    value, _ = quad(slowness, eps, phi, limit=200, epsrel=1e-10)
    return float(value)


class MergeAnalysis(Compute):
    """Cluster count, persistent labels, merges and time scales of a run.

    Parameters
    ----------
    eps : float
        Linking distance of the clusters (radians, default 0.05).
    method : {"components", "single_linkage", "gap"}
        Clustering method (see :class:`~particles.analysis.ClusterDetector`).
    min_decades : float
        A plateau of the cluster count is long-lived when it lasts at least
        this many decades of time (default 1).
    time_unit : float
        Plateaus starting before this time are measured from it (default 1).
    floor : float
        Distance resolution of ``method="gap"``.

    Notes
    -----
    The precise definitions of plateaus, long-lived, formation time and
    merge times are in :mod:`particles.analysis.merges`.
    """

    def __init__(
        self,
        eps: float | None = DEFAULT_EPS,
        method: str = "components",
        *,
        min_decades: float = DEFAULT_MIN_DECADES,
        time_unit: float = 1.0,
        floor: float = DEFAULT_FLOOR,
    ) -> None:
        super().__init__()
        self.eps = check_method(eps, method)
        self.method = method
        if not (np.isfinite(min_decades) and min_decades > 0):
            raise ValueError(f"min_decades must be a positive number, got {min_decades!r}")
        if not (np.isfinite(time_unit) and time_unit > 0):
            raise ValueError(f"time_unit must be a positive number, got {time_unit!r}")
        self.min_decades = float(min_decades)
        self.time_unit = float(time_unit)
        self.floor = float(floor)

    def __repr__(self) -> str:
        return (
            f"MergeAnalysis(eps={self.eps!r}, method={self.method!r}, "
            f"min_decades={self.min_decades!r}, time_unit={self.time_unit!r})"
        )

    def settings(self) -> dict[str, Any]:
        """The constructor arguments (stored with the results in files)."""
        return {
            "eps": self.eps,
            "method": self.method,
            "min_decades": self.min_decades,
            "time_unit": self.time_unit,
            "floor": self.floor,
        }

    def compute(
        self, trajectory: Any, times: np.ndarray | None = None, *, batched: bool | None = None
    ) -> MergeAnalysis:
        """Analyse the frames of a run.

        Parameters
        ----------
        trajectory : Trajectory or array_like
            A :class:`~particles.Trajectory`, or positions of shape
            (frames, n, d) or (frames, batch, n, d).
        times : ndarray, shape (frames,), optional
            Frame times (required with a positions array).
        batched : bool, optional
            Whether a 4-D positions array has a batch axis (inferred from the
            number of dimensions when None).

        Returns
        -------
        MergeAnalysis
            ``self``.
        """
        if hasattr(trajectory, "positions") and hasattr(trajectory, "times"):
            positions = trajectory.positions
            times = trajectory.times if times is None else times
        else:
            positions = trajectory
            if times is None:
                raise ValueError("times are required when positions are given as an array")
        x = as_tokens(positions, name="positions")
        if batched is None:
            batched = x.ndim == 4
        if x.ndim != (4 if batched else 3):
            raise ValueError(
                f"positions must have shape (frames, n, d) or (frames, batch, n, d), got {x.shape}"
            )
        xb = x if batched else x[:, None]
        frames, B, n, d = xb.shape
        times = np.asarray(times, dtype=np.float64)
        if times.shape != (frames,):
            raise ValueError(f"times must have shape ({frames},), got {times.shape}")
        if frames > 1 and np.any(np.diff(times) <= 0):
            raise ValueError("times must be strictly increasing")

        raw, counts = detect(xb.reshape(frames * B, n, d), self.eps, self.method, self.floor)
        raw = raw.reshape(frames, B, n)
        counts = counts.reshape(frames, B)
        labels = np.empty_like(raw)
        merges: list[MergeEvent] = []
        splits: list[SplitEvent] = []
        trees, plateaus, scales = [], [], []
        for b in range(B):
            tr = track_labels(raw[:, b], times, system=b)
            labels[:, b] = tr.ids
            merges.extend(tr.merges)
            splits.extend(tr.splits)
            trees.append(MergeTree.from_tracking(tr, times))
            pl = find_plateaus(
                times,
                counts[:, b],
                system=b,
                min_decades=self.min_decades,
                time_unit=self.time_unit,
            )
            plateaus.extend(pl)
            scales.append(find_timescales(pl, system=b))
        formation = np.array([s.formation_time for s in scales])
        first_merge = np.array([s.first_merge_time for s in scales])
        if batched:
            self._set(
                times=times,
                counts=counts,
                labels=labels,
                merges=merges,
                splits=splits,
                trees=trees,
                plateaus=plateaus,
                timescales=scales,
                formation_time=formation,
                first_merge_time=first_merge,
            )
        else:
            self._set(
                times=times,
                counts=counts[:, 0],
                labels=labels[:, 0],
                merges=merges,
                splits=splits,
                trees=trees[0],
                plateaus=plateaus,
                timescales=scales[0],
                formation_time=float(formation[0]),
                first_merge_time=float(first_merge[0]),
            )
        self._set(batched=bool(batched))
        return self

    times = result("times", "Frame times, shape (frames,).")
    counts = result("counts", "Cluster count per frame, int64 (frames,) or (frames, batch).")
    labels = result(
        "labels",
        "Persistent cluster id of each token, int64 (frames, n) or "
        "(frames, batch, n): a cluster keeps its id from frame to frame.",
    )
    merges = result(
        "merges", "All merge events (list of MergeEvent, all systems, time order within a system)."
    )
    splits = result(
        "splits",
        "Split events (list of SplitEvent): a cluster broke up because "
        "tokens drifted past eps; rare in clustering dynamics.",
    )
    trees = result("trees", "MergeTree of the system, or a list of them (one per system).")
    plateaus = result("plateaus", "All plateaus of the cluster count (list of Plateau).")
    timescales = result("timescales", "Timescales of the system, or a list (one per system).")
    formation_time = result(
        "formation_time",
        "Formation time: float, or array (batch,); NaN where no long-lived plateau exists.",
    )
    first_merge_time = result(
        "first_merge_time",
        "First merge after formation: float, or array (batch,); NaN where none was seen.",
    )
    batched = result("batched", "Whether the analysed run had a batch axis.")
