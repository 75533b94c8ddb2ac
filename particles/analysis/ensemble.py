"""Statistics of an ensemble: cluster-count distributions, time-scale quantiles, survival.

An ensemble (``batch`` independent systems) is summarised per saved frame by
the distribution of its cluster counts, and per system by its two time
scales (:class:`~particles.analysis.Timescales`).  Time scales are
*censored*: a system whose clusters had not formed, or had not merged, by the
last saved time ``T`` only tells that its time is larger than ``T``.
Quantiles and survival curves therefore come from the Kaplan-Meier estimator
(Kaplan and Meier, JASA 53, 1958), with censoring at the final time:

    S(t) = prod_{event times t_k <= t} (1 - e_k / r_k),

``e_k`` systems with their event at ``t_k`` among the ``r_k`` still at risk
(event time ``>= t_k``, censored ones included).  With censoring only at the
final time this is the empirical fraction of systems still waiting, but the
estimator stays right if systems are censored earlier.  The ``q`` quantile is
the first time at which ``1 - S`` reaches ``q``; NaN when it does not before
the censoring time (printed as ``> T``: the run was too short to see it).

Two curves:

formation
    Time to the first long-lived plateau, over every system; a system
    without one is censored at the final time.
first merge
    Time of the first merge after formation (``T_merge``), over the systems
    at risk of one: those whose clusters formed as two or more.  Those
    without a merge are censored at the final time.  Left out, and counted
    on their own: systems that never formed (:attr:`EnsembleStats.not_formed`)
    and systems that formed *one* cluster (:attr:`EnsembleStats.one_cluster`:
    all their tokens had gathered into one cluster by the formation time, so
    no merge can follow; counting them as censored at ``T`` would make every
    quantile look beyond the run).  The curve is therefore ``P(T_merge > t)``
    given that two or more clusters formed; with no system at risk its
    quantiles are NaN (undefined), not "beyond the run".

Cluster counts of 0 are spread systems (no clusters,
:mod:`particles.observables.spread`): they are a column of the count
distribution (printed ``spread``) and are left out of the count quantiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from particles.display import time_text

#: default quantile levels of the ensemble tables.
DEFAULT_LEVELS = (0.05, 0.25, 0.5, 0.75, 0.95)

__all__ = ["DEFAULT_LEVELS", "EnsembleStats", "SurvivalCurve", "ensemble_stats", "kaplan_meier"]


@dataclass(frozen=True)
class SurvivalCurve:
    """A Kaplan-Meier survival curve ``S(t) = P(T > t)``.

    Attributes
    ----------
    times : ndarray, shape (k,)
        Distinct event times, increasing.
    survival : ndarray, shape (k,)
        ``S`` just after each event time (right-continuous steps; 1 before
        the first).
    at_risk : ndarray of int64, shape (k,)
        Systems whose time is ``>= times[j]``.
    events : ndarray of int64, shape (k,)
        Systems whose event is at ``times[j]``.
    systems : int
        Systems in the curve.
    censored : int
        Systems whose event was not seen.
    censor_time : float
        Largest censoring time (the final saved time; NaN without censoring).
    """

    times: np.ndarray
    survival: np.ndarray
    at_risk: np.ndarray
    events: np.ndarray
    systems: int
    censored: int
    censor_time: float

    def at(self, t: np.ndarray | float) -> np.ndarray:
        """``S(t) = P(T > t)`` at given times, shape of ``t``.

        Beyond the censoring time the value is undefined and NaN.
        """
        t = np.asarray(t, dtype=np.float64)
        k = np.searchsorted(self.times, t, side="right")
        s = np.concatenate([[1.0], self.survival])[k] if self.systems else np.full(t.shape, np.nan)
        if self.censored and np.isfinite(self.censor_time):
            s = np.where(t > self.censor_time, np.nan, s)
        return s

    def quantile(self, q: Sequence[float] | float) -> np.ndarray:
        """First time at which ``1 - S`` reaches ``q`` (NaN: not reached in the run).

        Parameters
        ----------
        q : float or sequence of float in (0, 1]

        Returns
        -------
        ndarray, shape of ``q``
        """
        q = np.asarray(q, dtype=np.float64)
        out = np.full(q.shape, np.nan)
        if self.times.size:
            failed = 1.0 - self.survival
            # a tiny tolerance so that 1 - S = 0.25 computed as 0.2499... counts
            k = np.searchsorted(failed, q - 1e-12, side="left")
            ok = k < self.times.size
            out[ok] = self.times[np.minimum(k, self.times.size - 1)][ok]
        return out


def kaplan_meier(durations: np.ndarray, observed: np.ndarray) -> SurvivalCurve:
    """Kaplan-Meier estimate of ``P(T > t)`` from possibly censored durations.

    Parameters
    ----------
    durations : ndarray, shape (m,)
        Event time of each system, or its censoring time.
    observed : ndarray of bool, shape (m,)
        True where the event was seen, False where censored.

    Returns
    -------
    SurvivalCurve
        Ties follow the usual convention: events at a time come before
        censoring at the same time.
    """
    t = np.asarray(durations, dtype=np.float64).ravel()
    e = np.asarray(observed, dtype=bool).ravel()
    if t.shape != e.shape:
        raise ValueError(f"durations and observed differ in shape: {t.shape} vs {e.shape}")
    if np.any(np.isnan(t)):
        raise ValueError("durations must not be NaN (give censored systems their censoring time)")
    ev_times = np.unique(t[e])
    at_risk = np.array([int(np.sum(t >= s)) for s in ev_times], dtype=np.int64)
    events = np.array([int(np.sum(e & (t == s))) for s in ev_times], dtype=np.int64)
    survival = np.cumprod(1.0 - events / np.maximum(at_risk, 1)) if ev_times.size else np.zeros(0)
    censored = int(np.sum(~e))
    return SurvivalCurve(
        times=ev_times,
        survival=survival,
        at_risk=at_risk,
        events=events,
        systems=int(t.size),
        censored=censored,
        censor_time=float(t[~e].max()) if censored else float("nan"),
    )


@dataclass(frozen=True)
class EnsembleStats:
    """Distribution of the cluster count per frame and of the two time scales.

    Attributes
    ----------
    times : ndarray, shape (frames,)
    count_values : ndarray of int64, shape (k,)
        The cluster counts seen anywhere in the run, increasing.
    count_systems : ndarray of int64, shape (frames, k)
        Number of systems with ``count_values[j]`` clusters at each frame
        (rows sum to ``batch``).
    levels : ndarray, shape (q,)
        Quantile levels.
    count_quantiles : ndarray of int64, shape (frames, q)
        Quantiles of the cluster count per frame over the systems that are
        not spread (values the ensemble takes: the inverted empirical CDF, so
        medians stay integers); 0 where every system is spread.
    formation : SurvivalCurve
        Time to formation, every system (not formed: censored at the end).
    first_merge : SurvivalCurve
        ``P(T_merge > t)`` over the systems that formed two or more clusters
        (no merge: censored).
    not_formed : int
        Systems without a formation time (left out of ``first_merge``).
    one_cluster : int
        Systems that formed one cluster (left out of ``first_merge``: nothing
        to merge).
    """

    times: np.ndarray
    count_values: np.ndarray
    count_systems: np.ndarray
    levels: np.ndarray
    count_quantiles: np.ndarray
    formation: SurvivalCurve
    first_merge: SurvivalCurve
    not_formed: int
    one_cluster: int = 0

    @property
    def spread_systems(self) -> np.ndarray:
        """Spread systems (count 0) at each frame, int64 shape (frames,)."""
        hit = self.count_values == 0
        return self.count_systems[:, hit].sum(axis=1).astype(np.int64)

    @property
    def batch(self) -> int:
        """Number of systems."""
        return int(self.count_systems[0].sum()) if self.count_systems.size else 0

    @property
    def formation_quantiles(self) -> np.ndarray:
        """Formation-time quantiles at :attr:`levels`, shape (q,) (NaN: beyond the run)."""
        return self.formation.quantile(self.levels)

    @property
    def first_merge_quantiles(self) -> np.ndarray:
        """First-merge-time quantiles at :attr:`levels`, shape (q,) (NaN: beyond the run)."""
        return self.first_merge.quantile(self.levels)

    def distribution_line(self, frame: int) -> str:
        """``"2:5 3:1"``: systems (after the colon) with each count at one frame
        (``spread:4`` for the spread ones)."""
        row = self.count_systems[frame]
        return " ".join(f"{'spread' if k == 0 else k}:{m}"
                        for k, m in zip(self.count_values, row, strict=True) if m)

    def table(self, times: np.ndarray | None = None) -> str:
        """Plain-text quantile and survival tables.

        Parameters
        ----------
        times : ndarray, optional
            Times at which ``P(T_merge > t)`` is printed (default: the
            distinct first-merge times, at most 12 of them, and the end).
        """
        T = float(self.times[-1])
        head = "".join(f"{100 * q:>10g}%" for q in self.levels)

        def row(values: np.ndarray, systems: int) -> str:
            if not systems:  # nobody at risk: undefined, not beyond the run
                return "".join(f"{'-':>11}" for _ in values)
            return "".join(f"{time_text(v):>11}" if np.isfinite(v)
                           else f"{'> ' + time_text(T):>11}" for v in values)

        f, m = self.formation, self.first_merge
        left = [f"{self.one_cluster} formed one cluster"] if self.one_cluster else []
        left += [f"{self.not_formed} not formed"] if self.not_formed else []
        lines = [
            f"time-scale quantiles over {self.batch} systems (Kaplan-Meier; not seen by "
            f"t={time_text(T)}: censored there)",
            f"{'':<13}{head}",
            f"{'formation':<13}{row(self.formation_quantiles, f.systems)}"
            f"   censored {f.censored} of {f.systems} (not formed)",
            f"{'first merge':<13}{row(self.first_merge_quantiles, m.systems)}"
            f"   censored {m.censored} of {m.systems} (formed 2+ clusters, no merge)"
            + (f"; {' and '.join(left)}: left out" if left else ""),
        ]
        if times is None:
            pts = m.times if m.times.size <= 12 else m.times[np.linspace(
                0, m.times.size - 1, 12).round().astype(int)]
            times = np.unique(np.concatenate([pts, [T]]))
        times = np.asarray(times, dtype=np.float64)
        if m.systems:
            lines.append("")
            lines.append(f"survival of the clusters formed: P(T_merge > t), {m.systems} systems")
            lines.append(f"{'t':>12}  {'P(T_merge > t)':>14}  {'no merge yet':>12}")
            s = m.at(times)
            for t, v in zip(times, s, strict=True):
                waiting = m.systems - int(m.events[m.times <= t].sum())
                val = f"{v:>14.4f}" if np.isfinite(v) else f"{'-':>14}"
                lines.append(f"{time_text(t):>12}  {val}  {waiting:>12d}")
        return "\n".join(lines)


def ensemble_stats(
    times: np.ndarray,
    counts: np.ndarray,
    formation_time: np.ndarray,
    first_merge_time: np.ndarray,
    *,
    clusters_formed: np.ndarray | None = None,
    levels: Sequence[float] = DEFAULT_LEVELS,
) -> EnsembleStats:
    """Ensemble statistics from per-frame counts and per-system time scales.

    Parameters
    ----------
    times : ndarray, shape (frames,)
    counts : ndarray of int, shape (frames, batch)
        Cluster count of every system at every frame.
    formation_time, first_merge_time : ndarray, shape (batch,)
        Per-system time scales (NaN: not seen), as in
        :class:`~particles.analysis.Timescales`.
    clusters_formed : ndarray of int, shape (batch,), optional
        Cluster count on each system's formation plateau (default: read from
        ``counts`` at the formation time).  Systems that formed one cluster
        leave the first-merge risk set.
    levels : sequence of float in (0, 1)
        Quantile levels (default 5, 25, 50, 75, 95 %).

    Returns
    -------
    EnsembleStats
    """
    times = np.asarray(times, dtype=np.float64)
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[0] != times.size:
        raise ValueError(f"counts must have shape ({times.size}, batch), got {counts.shape}")
    lv = np.asarray(levels, dtype=np.float64)
    if lv.ndim != 1 or np.any((lv <= 0) | (lv >= 1)):
        raise ValueError(f"levels must be numbers in (0, 1), got {levels!r}")
    values = np.unique(counts).astype(np.int64)
    per = (counts[:, :, None] == values[None, None, :]).sum(axis=1).astype(np.int64)
    cq = np.quantile(counts, lv, axis=1, method="inverted_cdf").T.astype(np.int64)
    for fr in np.flatnonzero(np.any(counts == 0, axis=1)):
        # spread systems have no count: quantiles over the others (0: all spread)
        have = counts[fr][counts[fr] != 0]
        cq[fr] = np.quantile(have, lv, method="inverted_cdf") if have.size else 0
    form = np.asarray(formation_time, dtype=np.float64)
    merge = np.asarray(first_merge_time, dtype=np.float64)
    end = float(times[-1]) if times.size else 0.0
    formed = np.isfinite(form)
    if clusters_formed is None:
        frame = np.searchsorted(times, np.where(formed, form, times[0] if times.size else 0.0))
        frame = np.minimum(frame, max(times.size - 1, 0))
        k = counts[frame, np.arange(counts.shape[1])] if counts.size else np.zeros(0, int)
        clusters_formed = np.where(formed, k, 0)
    one = formed & (np.asarray(clusters_formed) == 1)
    risk = formed & ~one  # two or more clusters formed: a merge can follow
    formation = kaplan_meier(np.where(formed, form, end), formed)
    seen = np.isfinite(merge[risk])
    first_merge = kaplan_meier(np.where(seen, merge[risk], end), seen)
    return EnsembleStats(
        times=times,
        count_values=values,
        count_systems=per,
        levels=lv,
        count_quantiles=cq,
        formation=formation,
        first_merge=first_merge,
        not_formed=int(np.sum(~formed)),
        one_cluster=int(np.sum(one)),
    )
