"""Whole-run analysis, its storage in trajectory files and its summary table.

:func:`analyze` runs the analysis objects over every saved frame of a
:class:`~particles.Trajectory`; :func:`analyze_file` does it for a trajectory
file and stores the results in the ``/analysis`` group of its sidecar file
(``run.h5`` -> ``run.analysis.h5``; the trajectory is only read).

The file layout (its datasets and attributes, the format versions) is
documented in :mod:`particles.io.analysis`, which owns it; this module turns
an :class:`AnalysisResult` into its arrays and attributes and back.  A frame
with a linked group spanning more than 90 degrees is a *spread* population,
not a cluster (the rule of :mod:`particles.observables.spread`): its count is
0, and the summary prints ``spread`` with ``r``.

The sidecar is replaced atomically: it is written under a temporary name,
read back and only then renamed over the previous one, so a failure while computing or writing
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

from particles.analysis import _pairs
from particles.analysis.clusters import DEFAULT_MASS_FRACTION, mass_counts
from particles.analysis.components import DEFAULT_EPS
from particles.analysis.ensemble import EnsembleStats, ensemble_stats
from particles.analysis.harmonics import DEFAULT_MAX_DEGREE, harmonic_power
from particles.analysis.histograms import DEFAULT_BINS, pair_histogram
from particles.analysis.merges import (
    DEFAULT_MIN_DECADES,
    MergeAnalysis,
    Plateau,
    Timescales,
    find_timescales,
)
from particles.analysis.modes import DEFAULT_MAX_MODE, fourier_modes
from particles.analysis.scalars import DEFAULT_DELTA, DEFAULT_SPAN_TOL, Scalars
from particles.analysis.summary import merge_phase, summary_text
from particles.analysis.tracking import MergeEvent, SplitEvent
from particles.io.analysis import (  # noqa: F401 (ANALYSIS_GROUP: particles.analysis names it)
    ANALYSIS_GROUP,
    PLATEAU_COLUMNS,
    TABLE_COLUMNS,
    analysis_attrs,
    ensemble_datasets,
    read_analysis_group,
    stored_counts,
    stored_info,
    stored_settings,
    table_datasets,
    write_analysis_group,
)
from particles.io.h5md import read_merge_events, read_passages
from particles.trajectory import Merge, Passage


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
    mass_counts : ndarray of int64, shape of ``counts``, optional
        Clusters holding at least ``settings["mass_fraction"]`` of the mass
        (:func:`~particles.analysis.clusters.mass_counts`; 0: spread).
    fourier_mode, fourier_modulus : ndarray, shape of ``counts``, optional
        d = 2: the dominant Fourier mode k of each frame's empirical measure
        and its ``|c_k|`` (:mod:`particles.analysis.modes`); None otherwise.
    harmonic_power : ndarray, shape ``counts.shape + (max_degree + 1,)``, optional
        d = 3: the degree-l power ``P_l`` of each frame's empirical measure
        (:mod:`particles.analysis.harmonics`); None otherwise.
    located : tuple of Merge
        The merges the run located while it ran (``merge_events=True``:
        cluster counts at eps 0.05, times to the integrator's tolerance,
        :mod:`particles.events`), read from the trajectory; empty otherwise.
    passages : tuple of Passage
        Each system's first passage to ``until_clusters`` (a run with that
        stop, :class:`~particles.trajectory.Passage`); empty otherwise.
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
    mass_counts: np.ndarray | None = None
    fourier_mode: np.ndarray | None = None
    fourier_modulus: np.ndarray | None = None
    harmonic_power: np.ndarray | None = None
    located: tuple[Merge, ...] = ()
    passages: tuple[Passage, ...] = ()

    @property
    def batch(self) -> int | None:
        """Ensemble size, or None for a single system."""
        return self.info.get("batch")

    @property
    def spread(self) -> np.ndarray:
        """Frames (and systems) that are spread, not clustered: count 0.

        A linked group of tokens spans more than 90 degrees (e.g. a uniform
        state at large n, an incoherent Kuramoto population chained round
        the circle; :mod:`particles.observables.spread`).  Shape of
        :attr:`counts`.
        """
        return np.asarray(self.counts) == 0

    def ensemble(self, levels: Any = None) -> EnsembleStats | None:
        """Cluster-count distribution, time-scale quantiles and survival curves.

        Parameters
        ----------
        levels : sequence of float, optional
            Quantile levels (default 5, 25, 50, 75, 95 %).

        Returns
        -------
        EnsembleStats or None
            None for a single system (see :mod:`particles.analysis.ensemble`).
        """
        if self.batch is None:
            return None
        extra = {} if levels is None else {"levels": levels}
        return ensemble_stats(
            self.times,
            self.counts,
            np.array([t.formation_time for t in self.timescales]),
            np.array([t.first_merge_time for t in self.timescales]),
            clusters_formed=np.array([t.clusters_formed for t in self.timescales]),
            **extra,
        )

    def to_dataframe(self, table: str = "merges") -> Any:
        """One of the results as a tidy :class:`pandas.DataFrame` (one row per record).

        Parameters
        ----------
        table : {"merges", "splits", "plateaus", "timescales", "frames", "located", \
                 "passages"}
            ``merges``: one row per absorbed cluster (system, frame, time,
            into, absorbed, size_into, size_absorbed, phase: "fast" before the
            system's formation time, "slow" after, "unformed" when its
            clusters never formed); ``splits``, ``plateaus``: the columns of
            the file layout; ``timescales``: one row per system
            (formation_time, first_merge_time, clusters_formed, separation);
            ``frames``: one row per frame and system (frame, time, system,
            cluster_count, spread, mass_count, fourier_mode and
            fourier_modulus where computed, and every scalar); ``located``:
            the merges the run located (system, time, before, after);
            ``passages``: the systems' first passages to ``until_clusters``
            (system, until, frame, time).

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        ImportError
            pandas is not installed (``pip install 'attention-particles[tables]'``).
        """
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - the message is the point
            raise ImportError(
                "to_dataframe needs pandas: pip install 'attention-particles[tables]'"
            ) from None
        tables = ("merges", "splits", "plateaus", "timescales", "frames", "located",
                  "passages")
        if table not in tables:
            raise ValueError(f"table must be one of {', '.join(tables)}, got {table!r}")
        if table == "located":
            return pd.DataFrame(Merge.columns(self.located))
        if table == "passages":
            return pd.DataFrame(Passage.columns(self.passages))
        if table == "frames":
            counts = np.asarray(self.counts)
            B = 1 if counts.ndim == 1 else counts.shape[1]
            cols: dict[str, Any] = {
                "frame": np.repeat(np.arange(self.times.size), B),
                "time": np.repeat(self.times, B),
                "system": np.tile(np.arange(B), self.times.size),
                "cluster_count": counts.reshape(-1),
                "spread": self.spread.reshape(-1),
            }
            for name in ("mass_counts", "fourier_mode", "fourier_modulus"):
                v = getattr(self, name)
                if v is not None:
                    cols["mass_count" if name == "mass_counts" else name] = v.reshape(-1)
            for name, v in self.scalars.items():
                cols[name] = np.asarray(v).reshape(-1)
            return pd.DataFrame(cols)
        if table == "timescales":
            return pd.DataFrame(
                {
                    "system": [t.system for t in self.timescales],
                    "formation_time": [t.formation_time for t in self.timescales],
                    "first_merge_time": [t.first_merge_time for t in self.timescales],
                    "clusters_formed": [t.clusters_formed for t in self.timescales],
                    "separation": [t.separation for t in self.timescales],
                }
            )
        data = table_datasets(table, _rows(self, table))
        frame = pd.DataFrame({k.split("/", 1)[1]: v for k, v in data.items()})
        if table == "merges":
            form = {t.system: t.formation_time for t in self.timescales}
            frame["phase"] = [
                merge_phase(t, form.get(int(b), np.nan))
                for t, b in zip(frame["time"], frame["system"], strict=True)
            ]
        return frame

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

        Ensembles add the distribution of the counts at each table time, the
        quantiles of the formation and first-merge times (censored systems
        counted) and the survival curve ``P(T_merge > t)``
        (:meth:`ensemble`).  Next to the counts: the mass-weighted count
        (clusters holding at least ``mass_fraction`` of the tokens), on the
        circle the dominant Fourier mode k and its ``|c_k|`` (an ensemble:
        the mode most systems show), and the order parameter ``r``.  A spread
        frame (count 0, :attr:`spread`) is printed as ``spread``, not as a
        count, and is left out of an ensemble's count statistics.

        Parameters
        ----------
        times : array_like, optional
            Times for the count table (default :meth:`default_table_times`).
        max_merges : int
            Merge lines shown before "... more".
        """
        return summary_text(self, times, max_merges)


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
    mass_fraction: float = DEFAULT_MASS_FRACTION,
    max_mode: int = DEFAULT_MAX_MODE,
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
    mass_fraction : float in (0, 1]
        The mass-weighted count counts clusters holding at least this
        fraction of the mass (:func:`~particles.analysis.clusters.mass_counts`).
    max_mode : int
        On the circle (d = 2): the largest Fourier mode searched for the dominant one
        (:func:`~particles.analysis.modes.fourier_modes`).

    Returns
    -------
    AnalysisResult
    """
    config = getattr(trajectory, "config", None)
    kept = getattr(config, "positions", "all")
    if kept != "all":
        raise ValueError(
            f"the analysis finds clusters in every frame's positions, and this run kept "
            f"positions={kept!r} (its observables are in the file); rerun with "
            f"positions='all' to analyse it")
    if beta is None:
        if config is None:
            raise ValueError("beta is required for a trajectory without a config")
        beta = config.beta
    masses = config.mass_array() if config is not None else None
    if not (isinstance(max_mode, int | np.integer) and max_mode >= 1):
        raise ValueError(f"max_mode must be a positive integer, got {max_mode!r}")
    if not 0 < mass_fraction <= 1:
        raise ValueError(f"mass_fraction must be in (0, 1], got {mass_fraction!r}")
    merge = MergeAnalysis(eps, method, min_decades=min_decades, time_unit=time_unit)
    merge.compute(trajectory)
    x = np.asarray(trajectory.positions, dtype=np.float64)
    batched = merge.batched
    frames, n, d = x.shape[0], x.shape[-2], x.shape[-1]
    sc = Scalars(beta, masses=masses, delta=delta, span_tol=span_tol).compute(x)
    scalars = {k: np.asarray(v) for k, v in sc.as_dict().items()}
    hist = pair_histogram(x.reshape(-1, n, d), bins).reshape(frames, -1, bins).sum(axis=1)
    ts = merge.timescales if batched else [merge.timescales]
    heavy = mass_counts(merge.labels, merge.counts, masses, mass_fraction)
    mode = modulus = None
    if d == 2:
        mode, modulus = fourier_modes(x, max_mode, masses)
    power = harmonic_power(x, DEFAULT_MAX_DEGREE, masses) if d == 3 else None
    settings = {
        **merge.settings(),
        "bins": int(bins),
        "delta": float(delta),
        "span_tol": float(span_tol),
        "mass_fraction": float(mass_fraction),
        "max_mode": int(max_mode),
    }
    info = {
        "n": n,
        "d": d,
        "beta": float(beta),
        "batch": int(x.shape[1]) if batched else None,
        "source": None,
        "model": getattr(config, "model", None),
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
        mass_counts=heavy,
        fourier_mode=mode,
        fourier_modulus=modulus,
        harmonic_power=power,
        located=tuple(getattr(trajectory, "merge_events", ())),
        passages=tuple(getattr(trajectory, "passages", ())),
    )


def _rows(result: AnalysisResult, name: str) -> list[tuple]:
    """The rows of one event table, in the column order of ``TABLE_COLUMNS[name]``."""
    if name == "merges":
        return [
            (ev.system, ev.frame, ev.time, ev.into, gone, ev.sizes[0], size)
            for ev in result.merges
            for gone, size in zip(ev.absorbed, ev.sizes[1:], strict=True)
        ]
    if name == "splits":
        return [
            (ev.system, ev.frame, ev.time, ev.parent, ev.child, ev.size) for ev in result.splits
        ]
    return [tuple(getattr(p, c) for c in PLATEAU_COLUMNS) for p in result.plateaus]


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

    attrs = analysis_attrs(result.settings, result.info)
    attrs["pair_sample"] = _pairs.PAIR_SAMPLE if result.info["n"] > _pairs.PAIR_SAMPLE else 0
    data: dict[str, np.ndarray] = {
        "time": result.times,
        "cluster_count": result.counts.astype(np.int64),
        "labels": result.labels.astype(np.int32),
    }
    if result.mass_counts is not None:
        data["mass_count"] = result.mass_counts.astype(np.int64)
    if result.fourier_mode is not None:
        data["fourier/mode"] = result.fourier_mode.astype(np.int64)
        data["fourier/modulus"] = result.fourier_modulus.astype(np.float64)
    if result.harmonic_power is not None:
        data["harmonics/power"] = result.harmonic_power.astype(np.float64)
        attrs["max_degree"] = result.harmonic_power.shape[-1] - 1
    for name, v in result.scalars.items():
        data[f"scalars/{name}"] = v
    data["histogram/bin_edges"] = result.bin_edges
    data["histogram/counts"] = result.histograms.astype(np.int64)
    for name in TABLE_COLUMNS:
        data.update(table_datasets(name, _rows(result, name)))
    data["timescales/formation_time"] = np.asarray(
        [t.formation_time for t in result.timescales]
    )
    data["timescales/first_merge_time"] = np.asarray(
        [t.first_merge_time for t in result.timescales]
    )
    data["timescales/clusters_formed"] = np.array(
        [t.clusters_formed for t in result.timescales], np.int64
    )
    st = result.ensemble()
    if st is not None:
        data.update(ensemble_datasets(st))
    groups = ("scalars", "histogram", "timescales") + (
        ("fourier",) if result.fourier_mode is not None else ()) + (
        ("harmonics",) if result.harmonic_power is not None else ())
    write_analysis_group(path, attrs, data, groups=groups, compressed=("labels",))


def read_analysis(path: str | os.PathLike) -> AnalysisResult:
    """Read the ``/analysis`` group written by :func:`write_analysis`.

    Parameters
    ----------
    path : str or path-like
        The trajectory (its sidecar is read when there is one), or the sidecar.

    Raises
    ------
    KeyError
        If the file has no ``/analysis`` group.
    particles.io.TrajectoryFileError
        ``path`` is a file of another kind (a sweep, a density, ...), in one line.
    """
    stored = read_analysis_group(path)
    a = stored.attrs
    cols = {name: stored.group(name) for name in TABLE_COLUMNS}
    times = stored.datasets["time"]
    scalars = stored.group("scalars")
    counts = stored_counts(a, stored.datasets["cluster_count"], scalars)
    labels = stored.datasets["labels"]
    edges = stored.datasets["histogram/bin_edges"]
    hist = stored.datasets["histogram/counts"]
    settings = stored_settings(a)
    info = stored_info(a, os.fspath(path))
    batch = info["batch"]
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
        Plateau(**{c: casts.get(c, int)(pc[c][r]) for c in PLATEAU_COLUMNS})
        for r in range(pc["system"].size)
    ]
    systems = batch or 1
    ts = [find_timescales([p for p in plateaus if p.system == b], system=b) for b in range(systems)]
    fourier = stored.group("fourier") if "fourier/mode" in stored.datasets else {}
    try:  # the run's own located merges and passages, when the file is its trajectory
        located, passages = read_merge_events(path), read_passages(path)
    except ValueError:
        located, passages = (), ()
    return AnalysisResult(
        times, counts, labels, scalars, edges, hist, merges, splits, plateaus, ts, settings, info,
        mass_counts=stored.datasets.get("mass_count"), fourier_mode=fourier.get("mode"),
        fourier_modulus=fourier.get("modulus"),
        harmonic_power=stored.datasets.get("harmonics/power"), located=located,
        passages=passages,
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
