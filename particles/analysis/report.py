"""Whole-run analysis, its storage in trajectory files and its summary table.

:func:`analyze` runs the analysis objects over every saved frame of a
:class:`~particles.Trajectory`; :func:`analyze_file` does it for a trajectory
file and stores the results in the ``/analysis`` group of its sidecar file
(``run.h5`` -> ``run.analysis.h5``; the trajectory is only read).

File layout (``frames`` saved frames, ``n`` tokens, ``batch`` systems; the
``batch`` axes are absent for a single system)::

    /analysis                      attrs: format_version, created_by, eps (NaN for
                                   method "gap"), method, min_decades, time_unit,
                                   floor, bins, delta, span_tol, beta, batch (0: one
                                   system), n, d
      time                         (frames,)            float64
      cluster_count                (frames[, batch])    int64
      labels                       (frames[, batch], n) int32, persistent cluster ids
      scalars/<name>               (frames[, batch])    energy, energy_normalized,
                                   order_parameter, min_inner_product,
                                   mean_inner_product, span_dimension,
                                   close_pair_fraction
      histogram/bin_edges          (bins + 1,)          float64
      histogram/counts             (frames, bins)       int64, pair inner products
                                                        summed over the ensemble
      merges/<column>              (rows,)  one row per absorbed cluster: system,
                                   frame, time, into, absorbed, size_into,
                                   size_absorbed (sizes at the frame before)
      splits/<column>              (rows,)  system, frame, time, parent, child, size
      plateaus/<column>            (rows,)  system, count, start_frame, end_frame,
                                   start, end, log_length, long_lived, censored
      timescales/<column>          (max(batch, 1),)  formation_time,
                                   first_merge_time, clusters_formed (NaN / 0: none)

The file I/O is :mod:`particles.io.analysis`.  The sidecar is replaced
atomically: it is written under a temporary name, read back and only then
renamed over the previous one, so a failure while computing or writing
leaves the previous results (and always the trajectory) intact, and a rerun
replaces them.  ``particles plot`` ignores a stored analysis whose frame times
no longer match the trajectory (a run resumed after ``analyze``).
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from particles.analysis.components import DEFAULT_EPS
from particles.analysis.histograms import DEFAULT_BINS, pair_histogram
from particles.analysis.merges import (
    DEFAULT_MIN_DECADES,
    MergeAnalysis,
    Plateau,
    Timescales,
    find_timescales,
)
from particles.analysis.scalars import DEFAULT_DELTA, DEFAULT_SPAN_TOL, Scalars
from particles.analysis.tracking import MergeEvent, SplitEvent
from particles.io.analysis import ANALYSIS_GROUP, read_analysis_group, write_analysis_group
from particles.version import __version__

#: version of the /analysis layout above.
FORMAT_VERSION = 1

_MERGE_COLUMNS = ("system", "frame", "time", "into", "absorbed", "size_into", "size_absorbed")
_SPLIT_COLUMNS = ("system", "frame", "time", "parent", "child", "size")
_PLATEAU_COLUMNS = (
    "system",
    "count",
    "start_frame",
    "end_frame",
    "start",
    "end",
    "log_length",
    "long_lived",
    "censored",
)


@dataclass
class AnalysisResult:
    """Everything :func:`analyze` computes for one run.

    Attributes
    ----------
    times : ndarray, shape (frames,)
    counts : ndarray of int64, shape (frames,) or (frames, batch)
        Cluster count per frame.
    labels : ndarray of int, shape (frames, n) or (frames, batch, n)
        Persistent cluster ids.
    scalars : dict of str to ndarray, shape (frames,) or (frames, batch)
        See :class:`~particles.analysis.Scalars`.
    bin_edges : ndarray, shape (bins + 1,)
    histograms : ndarray of int64, shape (frames, bins)
        Pair inner-product counts per frame, summed over the ensemble.
    merges : list of MergeEvent
    splits : list of SplitEvent
    plateaus : list of Plateau
    timescales : list of Timescales
        One per system.
    settings : dict
        The analysis parameters.
    info : dict
        Run facts: n, d, beta, batch (None for one system), source path.
    """

    times: np.ndarray
    counts: np.ndarray
    labels: np.ndarray
    scalars: dict[str, np.ndarray]
    bin_edges: np.ndarray
    histograms: np.ndarray
    merges: list[MergeEvent]
    splits: list[SplitEvent]
    plateaus: list[Plateau]
    timescales: list[Timescales]
    settings: dict[str, Any]
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def batch(self) -> int | None:
        """Ensemble size, or None for a single system."""
        return self.info.get("batch")

    def counts_at(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cluster counts at the last saved frame at or before each time.

        Returns
        -------
        frame_times : ndarray, shape (k,)
        counts : ndarray, shape (k,) or (k, batch)
        """
        idx = np.clip(
            np.searchsorted(self.times, np.asarray(times, float) * (1 + 1e-12), side="right") - 1,
            0,
            self.times.size - 1,
        )
        idx = np.unique(idx)
        return self.times[idx], self.counts[idx]

    def default_table_times(self) -> np.ndarray:
        """0, each power of ten inside the run, and the final time."""
        t = self.times
        pos = t[t > 0]
        out = [float(t[0])]
        if pos.size:
            lo, hi = int(np.ceil(np.log10(pos[0]) - 1e-9)), int(np.floor(np.log10(t[-1]) + 1e-9))
            out += [10.0**k for k in range(lo, hi + 1)]
        out.append(float(t[-1]))
        return np.unique(out)

    def summary(self, times: np.ndarray | None = None, max_merges: int = 40) -> str:
        """A plain-text table: counts at chosen times, time scales, merges.

        Parameters
        ----------
        times : array_like, optional
            Times for the count table (default :meth:`default_table_times`).
        max_merges : int
            Merge lines shown before "... more".
        """
        info, s = self.info, self.settings
        lines = []
        src = f"{info['source']}: " if info.get("source") else ""
        batch = self.batch
        ens = f"  batch={batch}" if batch is not None else ""
        eps = "largest gap" if s["method"] == "gap" else f"eps={s['eps']:g} rad"
        lines.append(
            f"{src}n={info.get('n')}  d={info.get('d')}  beta={info.get('beta'):g}"
            f"{ens}  frames={self.times.size}  t=[{self.times[0]:g}, "
            f"{self.times[-1]:g}]  clusters: {eps} ({s['method']})"
        )
        lines.append("")
        ft, fc = self.counts_at(self.default_table_times() if times is None else times)
        if batch is None:
            lines.append(f"{'time':>12}  {'clusters':>8}")
            lines += [f"{t:>12.4g}  {int(c):>8d}" for t, c in zip(ft, fc, strict=True)]
        else:
            lines.append(f"{'time':>12}  {'mean':>8}  {'min':>5}  {'max':>5}   clusters")
            lines += [
                f"{t:>12.4g}  {c.mean():>8.3g}  {c.min():>5d}  {c.max():>5d}"
                for t, c in zip(ft, fc, strict=True)
            ]
        lines.append("")
        lines.append(
            f"time scales (long-lived plateau: >= {s['min_decades']:g} decade(s) of "
            f"time, measured from max(start, {s['time_unit']:g}))"
        )
        shown = self.timescales if batch is None else self.timescales[:20]
        for ts in shown:
            who = "" if batch is None else f"system {ts.system}: "
            if np.isnan(ts.formation_time):
                lines.append(f"  {who}no long-lived plateau (clusters not formed)")
                continue
            if np.isnan(ts.first_merge_time):
                merge = "no merge after formation"
            else:
                merge = f"first merge {ts.first_merge_time:.4g}"
                if np.isfinite(ts.separation):
                    merge += f" ({ts.separation:.2f} decades later)"
            k = ts.clusters_formed
            lines.append(
                f"  {who}formation time {ts.formation_time:.4g} "
                f"({k} cluster{'s' if k != 1 else ''}); {merge}"
            )
        if batch is not None and len(self.timescales) > len(shown):
            lines.append(f"  ... {len(self.timescales) - len(shown)} more systems")
        lines.append("")
        form = {ts.system: ts.formation_time for ts in self.timescales}

        def slow(ev: MergeEvent) -> bool:
            return bool(ev.time > form[ev.system])

        shown_merges = self.merges
        if len(self.merges) > max_merges:
            # too many to list: the slow (metastable) merges are the news
            shown_merges = [ev for ev in self.merges if slow(ev)]
        lines.append(
            f"merges ({len(self.merges)}): time, "
            + ("system, " if batch is not None else "")
            + "surviving id <- absorbed ids, sizes, phase"
        )
        if len(shown_merges) < len(self.merges):
            lines.append(
                f"  ({len(self.merges) - len(shown_merges)} fast merges before the "
                f"formation time not listed; all are in /{ANALYSIS_GROUP}/merges)"
            )
        for ev in shown_merges[:max_merges]:
            phase = "slow" if slow(ev) else "fast"
            who = f"  system {ev.system:<3d}" if batch is not None else ""
            gone = ",".join(map(str, ev.absorbed))
            sizes = " + ".join(map(str, ev.sizes))
            lines.append(
                f"  t={ev.time:<10.4g}{who}  {ev.into} <- {gone:<8}  "
                f"sizes {sizes} = {ev.size_after}  {phase}"
            )
        if len(shown_merges) > max_merges:
            lines.append(f"  ... {len(shown_merges) - max_merges} more")
        if self.splits:
            lines.append(f"splits: {len(self.splits)} (tokens drifted past eps)")
        return "\n".join(lines)


def analyze(
    trajectory: Any,
    *,
    eps: float | None = DEFAULT_EPS,
    method: str = "components",
    min_decades: float = DEFAULT_MIN_DECADES,
    time_unit: float = 1.0,
    bins: int = DEFAULT_BINS,
    delta: float = DEFAULT_DELTA,
    span_tol: float = DEFAULT_SPAN_TOL,
    beta: float | None = None,
) -> AnalysisResult:
    """Clusters, merges, time scales, scalars and histograms of every frame.

    Parameters
    ----------
    trajectory : Trajectory
        A run (``positions`` (frames, n, d) or (frames, batch, n, d)).
    eps, method, min_decades, time_unit
        See :class:`~particles.analysis.MergeAnalysis`.
    bins : int
        Inner-product histogram bins on [-1, 1].
    delta, span_tol
        See :class:`~particles.analysis.Scalars`.
    beta : float, optional
        Inverse temperature of the energy (default: the run's).

    Returns
    -------
    AnalysisResult
    """
    config = getattr(trajectory, "config", None)
    if beta is None:
        if config is None:
            raise ValueError("beta is required for a trajectory without a config")
        beta = config.beta
    masses = config.mass_array() if config is not None else None
    merge = MergeAnalysis(eps, method, min_decades=min_decades, time_unit=time_unit)
    merge.compute(trajectory)
    x = np.asarray(trajectory.positions, dtype=np.float64)
    batched = merge.batched
    frames, n, d = x.shape[0], x.shape[-2], x.shape[-1]
    sc = Scalars(beta, masses=masses, delta=delta, span_tol=span_tol).compute(x)
    scalars = {k: np.asarray(v) for k, v in sc.as_dict().items()}
    hist = pair_histogram(x.reshape(-1, n, d), bins).reshape(frames, -1, bins).sum(axis=1)
    ts = merge.timescales if batched else [merge.timescales]
    settings = {
        **merge.settings(),
        "bins": int(bins),
        "delta": float(delta),
        "span_tol": float(span_tol),
    }
    info = {
        "n": n,
        "d": d,
        "beta": float(beta),
        "batch": int(x.shape[1]) if batched else None,
        "source": None,
    }
    return AnalysisResult(
        times=merge.times,
        counts=merge.counts,
        labels=merge.labels,
        scalars=scalars,
        bin_edges=np.linspace(-1.0, 1.0, bins + 1),
        histograms=hist,
        merges=merge.merges,
        splits=merge.splits,
        plateaus=merge.plateaus,
        timescales=ts,
        settings=settings,
        info=info,
    )


def _table(
    out: dict[str, np.ndarray], name: str, columns: tuple[str, ...], rows: list[tuple]
) -> None:
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(columns)
    for col, values in zip(columns, cols, strict=True):
        kind = (
            np.float64
            if col in ("time", "start", "end", "log_length")
            else (bool if col in ("long_lived", "censored") else np.int64)
        )
        out[f"{name}/{col}"] = np.asarray(values, dtype=kind)


def write_analysis(path: str | os.PathLike, result: AnalysisResult) -> None:
    """Store an :class:`AnalysisResult` in the ``/analysis`` group of an HDF5 file.

    The group is built under a temporary name and then moved over
    ``/analysis``, replacing earlier results
    (:func:`particles.io.analysis.write_analysis_group`).

    Parameters
    ----------
    path : str or path-like
        An existing HDF5 file, opened for appending.
    result : AnalysisResult
    """

    s, info = result.settings, result.info
    attrs: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "created_by": f"particles {__version__}",
        "eps": np.nan if s["eps"] is None else s["eps"],
    }
    for key in ("method", "min_decades", "time_unit", "floor", "bins", "delta", "span_tol"):
        attrs[key] = s[key]
    attrs["beta"] = info["beta"]
    attrs["batch"] = 0 if info.get("batch") is None else info["batch"]
    attrs["n"], attrs["d"] = info["n"], info["d"]
    data: dict[str, np.ndarray] = {
        "time": result.times,
        "cluster_count": result.counts.astype(np.int64),
        "labels": result.labels.astype(np.int32),
    }
    for name, v in result.scalars.items():
        data[f"scalars/{name}"] = v
    data["histogram/bin_edges"] = result.bin_edges
    data["histogram/counts"] = result.histograms.astype(np.int64)
    _table(
        data,
        "merges",
        _MERGE_COLUMNS,
        [
            (ev.system, ev.frame, ev.time, ev.into, gone, ev.sizes[0], size)
            for ev in result.merges
            for gone, size in zip(ev.absorbed, ev.sizes[1:], strict=True)
        ],
    )
    _table(
        data,
        "splits",
        _SPLIT_COLUMNS,
        [(ev.system, ev.frame, ev.time, ev.parent, ev.child, ev.size) for ev in result.splits],
    )
    _table(
        data,
        "plateaus",
        _PLATEAU_COLUMNS,
        [tuple(getattr(p, c) for c in _PLATEAU_COLUMNS) for p in result.plateaus],
    )
    data["timescales/formation_time"] = np.asarray(
        [t.formation_time for t in result.timescales]
    )
    data["timescales/first_merge_time"] = np.asarray(
        [t.first_merge_time for t in result.timescales]
    )
    data["timescales/clusters_formed"] = np.array(
        [t.clusters_formed for t in result.timescales], np.int64
    )
    write_analysis_group(
        path, attrs, data, groups=("scalars", "histogram", "timescales"), compressed=("labels",)
    )


def read_analysis(path: str | os.PathLike) -> AnalysisResult:
    """Read the ``/analysis`` group written by :func:`write_analysis`.

    Raises
    ------
    KeyError
        If the file has no ``/analysis`` group.
    """
    stored = read_analysis_group(path)
    a = stored.attrs
    cols = {name: stored.group(name) for name in ("merges", "splits", "plateaus")}
    times = stored.datasets["time"]
    counts = stored.datasets["cluster_count"]
    labels = stored.datasets["labels"]
    scalars = stored.group("scalars")
    edges = stored.datasets["histogram/bin_edges"]
    hist = stored.datasets["histogram/counts"]
    eps = float(a["eps"])
    settings = {
        "eps": None if np.isnan(eps) else eps,
        "method": str(a["method"]),
        "min_decades": float(a["min_decades"]),
        "time_unit": float(a["time_unit"]),
        "floor": float(a["floor"]),
        "bins": int(a["bins"]),
        "delta": float(a["delta"]),
        "span_tol": float(a["span_tol"]),
    }
    batch = int(a["batch"]) or None
    m = cols["merges"]
    grouped: dict[tuple, list[int]] = defaultdict(list)
    for r in range(m["system"].size):
        grouped[(int(m["system"][r]), int(m["frame"][r]), int(m["into"][r]))].append(r)
    merges = [
        MergeEvent(
            frame,
            float(m["time"][rows[0]]),
            system,
            into,
            tuple(int(m["absorbed"][r]) for r in rows),
            (int(m["size_into"][rows[0]]), *(int(m["size_absorbed"][r]) for r in rows)),
        )
        for (system, frame, into), rows in grouped.items()
    ]
    sp = cols["splits"]
    splits = [
        SplitEvent(
            int(sp["frame"][r]),
            float(sp["time"][r]),
            int(sp["system"][r]),
            int(sp["parent"][r]),
            int(sp["child"][r]),
            int(sp["size"][r]),
        )
        for r in range(sp["system"].size)
    ]
    pc = cols["plateaus"]
    casts = {
        "start": float,
        "end": float,
        "log_length": float,
        "long_lived": bool,
        "censored": bool,
    }
    plateaus = [
        Plateau(**{c: casts.get(c, int)(pc[c][r]) for c in _PLATEAU_COLUMNS})
        for r in range(pc["system"].size)
    ]
    systems = batch or 1
    ts = [find_timescales([p for p in plateaus if p.system == b], system=b) for b in range(systems)]
    info = {
        "n": int(a["n"]),
        "d": int(a["d"]),
        "beta": float(a["beta"]),
        "batch": batch,
        "source": os.fspath(path),
    }
    return AnalysisResult(
        times, counts, labels, scalars, edges, hist, merges, splits, plateaus, ts, settings, info
    )


def analyze_file(path: str | os.PathLike, *, write: bool = True, **options: Any) -> AnalysisResult:
    """Analyse a trajectory file and store the results in its ``/analysis`` group.

    Parameters
    ----------
    path : str or path-like
        An H5MD trajectory written by :mod:`particles.io`.
    write : bool
        Store the results (default); False only returns them.
    **options
        Passed to :func:`analyze` (eps, method, min_decades, time_unit, bins,
        delta, span_tol, beta).

    Returns
    -------
    AnalysisResult

    Raises
    ------
    particles.io.TrajectoryFileError
        (a ValueError) If the file is missing or not a readable trajectory.
    ValueError
        If an option is invalid.
    OSError
        If the results cannot be written (e.g. a run is still writing the file).
    """
    from particles.io import load

    traj = load(path)
    res = analyze(traj, **options)
    res.info["source"] = os.fspath(path)
    if write:
        write_analysis(path, res)
    return res
