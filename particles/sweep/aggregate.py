"""Ensemble statistics of a sweep, from the per-system results of every grid point.

Computed once every system is done, from the stored per-system arrays in
system order (so they do not depend on how the systems were split into
tasks), and written to ``/sweep/stats`` (:mod:`particles.io.sweep`):

=====================  =============================  ===============================
name                   dims                           value
=====================  =============================  ===============================
pair_fraction          (*grid, time, delta)           mean over systems of the fraction
                                                      of pairs i < j with
                                                      ``<x_i, x_j> > 1 - delta``
cluster_distribution   (*grid, time, clusters)        fraction of systems with k clusters
spread_fraction        (*grid, time)                  fraction of systems spread (no
                                                      clusters: count 0)
cluster_mean           (*grid, time)                  mean cluster count of the systems
                                                      not spread (NaN: all spread)
cluster_quantile       (*grid, time, quantile)        quantiles of the count of the systems
                                                      not spread (values the ensemble
                                                      takes, inverted CDF; NaN: all spread)
energy_mean            (*grid, time)                  mean energy (the ``energy`` observable)
order_parameter_mean   (*grid, time)                  mean ``r = |mean_i x_i|``
formation_time         (*grid, quantile)              Kaplan-Meier quantiles
first_merge_time       (*grid, quantile)              (inf: not reached by T; NaN: no
                                                      system at risk of a merge)
formation_censored     (*grid)                        systems not formed by T
first_merge_censored   (*grid)                        formed 2+ clusters, no merge by T
first_merge_one_cluster (*grid)                       formed one cluster: not at risk
single_cluster_time    (*grid, system)                first time with one cluster (inf)
=====================  =============================  ===============================

A count of 0 is a spread system (a linked group wider than 90 degrees, no
clusters: :mod:`particles.observables.spread`); the distribution's rows and
``spread_fraction`` sum to 1.  Formation and first merge follow
:mod:`particles.analysis.ensemble`
(:func:`~particles.analysis.ensemble.ensemble_stats`: formation over every
system, first merge over the systems that formed two or more clusters; those
that formed one cannot merge and are counted in ``first_merge_one_cluster``).

With located merges (``merge_events``: the file's table of merges), the
per-system first-merge and single-cluster times come from them
(:func:`particles.analysis.merges.located_timescales`: the merge bisected
between the frames instead of the frame after it) before the Kaplan-Meier
curves are made, censoring unchanged; the statistics ``first_merge_time``
and ``single_cluster_time`` then carry the attribute ``source = "located"``
(:data:`MERGE_SOURCES`; without it they come from the save grid, as in
files written before).

With ``until_clusters`` a grid point stops at the first save time at which
every one of its systems has between 1 and K clusters (its frames after
that were not computed): the per-frame statistics are NaN from there on,
the time scales are those of the frames computed (censored at the stop, not
at T; a merge before it is seen), ``single_cluster_time`` is inf for a
system not at one cluster by the stop, and the statistic ``passage_time``
(:data:`PASSAGE_STATS`, only then) holds each system's first passage to
at most K clusters.
"""

from __future__ import annotations

import numpy as np

from particles.analysis.ensemble import ensemble_stats
from particles.analysis.merges import located_timescales
from particles.io.sweep import (  # statistic -> dims after the grid axes
    MERGE_SOURCES,
    MERGE_STATS,
    PASSAGE_STATS,
    STATS,
)

__all__ = ["MERGE_SOURCES", "MERGE_STATS", "PASSAGE_STATS", "STATS", "aggregate_point"]


def aggregate_point(systems: dict[str, np.ndarray], *, n: int, times: np.ndarray,
                    levels: tuple[float, ...], max_n: int,
                    merges: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The statistics of one grid point from its per-system results.

    Parameters
    ----------
    systems : dict of str to ndarray
        ``pair_counts`` (runs, F, K), ``cluster_count`` (runs, F), ``energy``,
        ``order_parameter`` (runs, F), ``formation_time``, ``first_merge_time``,
        ``single_cluster_time`` (runs,); with ``until_clusters`` also
        ``frames`` and ``passage_time`` (runs,).
    n : int
        Tokens of the point (pairs: n (n - 1) / 2).
    times : ndarray, shape (F,)
    levels : tuple of float
    max_n : int
        Length of the clusters axis.
    merges : dict of str to ndarray, optional
        The point's located merges (columns ``system``, ``time``, ``after``):
        the first-merge and single-cluster times come from them.

    Returns
    -------
    dict of str to ndarray
        One entry per :data:`STATS` name (and :data:`PASSAGE_STATS` with
        ``frames``), shaped by its dims (without the grid).

    Raises
    ------
    ValueError
        ``frames`` that differ between the systems (a grid point stops as one).
    """
    if "frames" not in systems:
        return _aggregate(systems, n=n, times=times, levels=levels, max_n=max_n,
                          merges=merges)
    frames = np.asarray(systems["frames"], dtype=np.int64)
    if frames.size and np.any(frames != frames[0]):
        raise ValueError(f"the systems of a grid point stopped at {sorted(set(frames))} "
                         "frames; they stop together")
    F = len(times)
    S = int(frames[0]) if frames.size else F
    cut = {k: (np.asarray(v)[:, :S] if k in _FRAME_SYSTEMS else v) for k, v in systems.items()}
    out = _aggregate(cut, n=n, times=times[:S], levels=levels, max_n=max_n, merges=merges)
    for k, dims in STATS.items():  # the frames after the stop: not computed
        if dims and dims[0] == "time":
            full = np.full((F, *out[k].shape[1:]), np.nan)
            full[:S] = out[k]
            out[k] = full
    out["passage_time"] = np.asarray(systems["passage_time"], dtype=np.float64)
    return out


#: per-system results with a time axis.
_FRAME_SYSTEMS = ("pair_counts", "cluster_count", "energy", "order_parameter")


def _aggregate(systems: dict[str, np.ndarray], *, n: int, times: np.ndarray,
               levels: tuple[float, ...], max_n: int,
               merges: dict[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    """:func:`aggregate_point` of the frames computed."""
    counts = np.asarray(systems["cluster_count"], dtype=np.int64)
    runs = counts.shape[0]
    npairs = n * (n - 1) // 2
    pc = np.asarray(systems["pair_counts"], dtype=np.int64)
    if npairs:
        pair_fraction = pc.sum(axis=0) / (runs * npairs)
    else:
        pair_fraction = np.full(pc.shape[1:], np.nan)
    ks = np.arange(1, max_n + 1)
    distribution = (counts.T[:, :, None] == ks[None, None, :]).sum(axis=1) / runs
    first_merge = systems["first_merge_time"]
    single = systems["single_cluster_time"]
    if merges is not None:
        first_merge, single = located_timescales(times, counts, first_merge, merges["system"],
                                                 merges["time"], merges["after"])
    es = ensemble_stats(times, counts.T, systems["formation_time"], first_merge,
                        levels=levels)

    def finite(q: np.ndarray, systems: int) -> np.ndarray:
        # not reached by T: inf; nobody at risk: undefined (NaN)
        return np.where(np.isnan(q), np.inf, q) if systems else np.full(q.shape, np.nan)

    clustered = counts != 0  # spread systems (count 0) have no cluster count
    have = clustered.sum(axis=0)
    mean = np.full(counts.shape[1], np.nan)
    np.divide(np.where(clustered, counts, 0).sum(axis=0), have, out=mean, where=have > 0)
    quantiles = es.count_quantiles.astype(np.float64)
    quantiles[have == 0] = np.nan
    return {
        "pair_fraction": pair_fraction,
        "cluster_distribution": distribution,
        "spread_fraction": (runs - have) / runs,
        "cluster_mean": mean,
        "cluster_quantile": quantiles,
        "energy_mean": np.asarray(systems["energy"], dtype=np.float64).mean(axis=0),
        "order_parameter_mean": np.asarray(systems["order_parameter"],
                                           dtype=np.float64).mean(axis=0),
        "formation_time": finite(es.formation_quantiles, es.formation.systems),
        "first_merge_time": finite(es.first_merge_quantiles, es.first_merge.systems),
        "formation_censored": np.int64(es.formation.censored),
        "first_merge_censored": np.int64(es.first_merge.censored),
        "first_merge_one_cluster": np.int64(es.one_cluster),
        "single_cluster_time": np.asarray(single, dtype=np.float64),
    }
