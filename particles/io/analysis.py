"""The ``/analysis`` results of a trajectory: a file kind of its own, the sidecar.

Where.  The results of ``run.h5`` live in a sidecar file next to it,
``run.analysis.h5`` (:func:`analysis_path`), holding the shared header
(:func:`particles.io.hdf5.write_header`, kind ``"analysis"``) and one
``/analysis`` group: the trajectory itself is only ever opened read-only, so
analysing it can never damage its frames (a full disk while writing results
into the trajectory used to make it unreadable).  The sidecar is registered in
:data:`particles.io.FILE_KINDS` (:data:`ANALYSIS`, items: its datasets), so
``particles info`` and :func:`particles.io.kind_of` name it, and the readers of
the other kinds refuse it in one line.  It is written under a hidden temporary
name (:func:`particles.paths.temporary_path`:
``.run.analysis.h5.PID@HOST.XXXXXXXX.partial``), the disk space of each dataset
reserved first, read back, and only then renamed over the previous one, so a
failure or Ctrl-C while writing leaves the previous results intact and no
temporary file.  Files written before the sidecar existed keep ``/analysis``
inside the trajectory, and sidecars written before it was a kind have no
header; :func:`read_analysis_group` reads both.

File layout (``frames`` saved frames, ``n`` tokens, ``batch`` systems; the
``batch`` axes are absent for a single system)::

    /analysis                      attrs: format_version (2), created_by, eps (NaN
                                   for method "gap"), method, min_decades, time_unit,
                                   floor, bins, delta, span_tol, mass_fraction,
                                   max_mode, beta, batch (0: one system), n, d,
                                   pair_sample (0: every pair counted; s: histogram
                                   and close_pair_fraction estimated from the pairs
                                   of s tokens, particles.analysis._pairs)
      time                         (frames,)            float64
      cluster_count                (frames[, batch])    int64, 0: spread (no clusters)
      mass_count                   (frames[, batch])    int64, clusters holding at least
                                                        mass_fraction of the mass
      fourier/mode                 (frames[, batch])    int64, d = 2 only: dominant mode
                                                        k of the empirical measure
      fourier/modulus              (frames[, batch])    float64, its |c_k|
      harmonics/power              (frames[, batch], max_degree + 1) float64, d = 3
                                                        only: degree-l power P_l of the
                                                        empirical measure (attr max_degree)
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
      ensemble/                    ensembles only (:mod:`particles.analysis.ensemble`):
        count_values               (k,)                 cluster counts seen
        count_systems              (frames, k)          systems with each count
        levels                     (q,)                 quantile levels
        count_quantiles            (frames, q)          cluster-count quantiles
        formation_quantiles        (q,)  Kaplan-Meier, NaN: beyond the run
        first_merge_quantiles      (q,)  over the systems that formed 2+ clusters
        <curve>/{time,survival,at_risk,events}  curve = formation, first_merge:
                                   P(T > t) just after each event time
        <curve>/{systems,censored} ()  systems in the curve, censored at the end
        first_merge/one_cluster    ()  systems that formed one cluster (not at risk)
        not_formed                 ()  systems without a formation time

The attribute ``model`` names the run's model ("" when unknown).  A frame with
a linked group spanning more than 90 degrees is a *spread* population, not a
cluster (a uniform state, an incoherent Kuramoto population; the rule of
:mod:`particles.observables.spread`): its ``cluster_count`` is 0, and the
summary prints ``spread`` with ``r``.  Files of format_version 1 stored such a
frame as 1 cluster when it was one group; :func:`read_analysis` reads them with
the rule of the time (``cluster_count == 1`` and ``min_inner_product < 0``).
The mass-weighted count and the Fourier mode are described in
:func:`particles.analysis.clusters.mass_counts` and
:mod:`particles.analysis.modes`.

This module only knows HDF5 and the layout above as plain arrays and
attributes; :mod:`particles.analysis.report` turns an analysis result into them
and back (:func:`particles.analysis.write_analysis`,
:func:`particles.analysis.read_analysis`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from particles.errors import OutputWriteError, Summary, TrajectoryFileError
from particles.io.hdf5 import (
    RESERVE_MARGIN,
    close_file,
    close_quietly,
    create_file,
    file_error,
    file_kind,
    read_retrying,
    write_failure,
    write_header,
)
from particles.io.kinds import FILE_KINDS, Example, refusal, register
from particles.paths import put_in_place, temporary_path
from particles.version import __version__

#: name of the group holding the results (in the sidecar; inside old trajectories).
ANALYSIS_GROUP = "analysis"

#: the name the group was built under inside trajectories (old files).
TMP_GROUP = "_analysis_tmp"

#: ending of the sidecar file holding a trajectory's results.
SIDECAR_SUFFIX = ".analysis.h5"

#: the ``/parameters`` attribute ``kind`` of a sidecar.
KIND = "analysis"

#: version of the /analysis layout above (2: spread frames count 0; mass_count, fourier).
FORMAT_VERSION = 2

#: columns of the event tables, in their order.
MERGE_COLUMNS = ("system", "frame", "time", "into", "absorbed", "size_into", "size_absorbed")
SPLIT_COLUMNS = ("system", "frame", "time", "parent", "child", "size")
PLATEAU_COLUMNS = ("system", "count", "start_frame", "end_frame", "start", "end",
                   "log_length", "long_lived", "censored")

#: the event tables by name (``/analysis/<name>/<column>``).
TABLE_COLUMNS = {"merges": MERGE_COLUMNS, "splits": SPLIT_COLUMNS, "plateaus": PLATEAU_COLUMNS}

#: the analysis settings stored as attributes as they are (``eps`` is stored NaN for None).
SETTING_ATTRS = ("method", "min_decades", "time_unit", "floor", "bins", "delta", "span_tol",
                 "mass_fraction", "max_mode")

__all__ = [
    "ANALYSIS",
    "ANALYSIS_GROUP",
    "FORMAT_VERSION",
    "KIND",
    "MERGE_COLUMNS",
    "PLATEAU_COLUMNS",
    "SETTING_ATTRS",
    "SIDECAR_SUFFIX",
    "SPLIT_COLUMNS",
    "TABLE_COLUMNS",
    "AnalysisData",
    "AnalysisKind",
    "AnalysisSpec",
    "AnalysisSummary",
    "analysis_attrs",
    "analysis_path",
    "analysis_source",
    "column_dtype",
    "ensemble_datasets",
    "read_analysis_group",
    "read_analysis_summary",
    "stored_counts",
    "stored_info",
    "stored_settings",
    "table_datasets",
    "write_analysis_group",
]


# ---------------------------------------------------------------- the layout as arrays
def column_dtype(column: str) -> type:
    """The dtype of an event table's column: float64 times, bool flags, int64 the rest."""
    if column in ("time", "start", "end", "log_length"):
        return np.float64
    return bool if column in ("long_lived", "censored") else np.int64


def table_datasets(name: str, rows: list[tuple]) -> dict[str, np.ndarray]:
    """The datasets ``<name>/<column>`` of an event table from its rows (column order
    of :data:`TABLE_COLUMNS`)."""
    columns = TABLE_COLUMNS[name]
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(columns)
    return {f"{name}/{col}": np.asarray(values, dtype=column_dtype(col))
            for col, values in zip(columns, cols, strict=True)}


def analysis_attrs(settings: Mapping[str, Any], info: Mapping[str, Any]) -> dict[str, Any]:
    """The ``/analysis`` attributes of the layout from an analysis's settings and run facts."""
    attrs: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "created_by": f"particles {__version__}",
        "eps": np.nan if settings["eps"] is None else settings["eps"],
    }
    for key in SETTING_ATTRS:
        attrs[key] = settings[key]
    attrs["beta"] = info["beta"]
    attrs["batch"] = 0 if info.get("batch") is None else info["batch"]
    attrs["n"], attrs["d"] = info["n"], info["d"]
    attrs["model"] = info.get("model") or ""
    return attrs


def stored_settings(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The analysis settings from the ``/analysis`` attributes (those a file has)."""
    eps = float(attrs["eps"])
    settings = {
        "eps": None if np.isnan(eps) else eps,
        "method": str(attrs["method"]),
        "min_decades": float(attrs["min_decades"]),
        "time_unit": float(attrs["time_unit"]),
        "floor": float(attrs["floor"]),
        "bins": int(attrs["bins"]),
        "delta": float(attrs["delta"]),
        "span_tol": float(attrs["span_tol"]),
    }
    if "mass_fraction" in attrs:
        settings["mass_fraction"] = float(attrs["mass_fraction"])
        settings["max_mode"] = int(attrs["max_mode"])
    return settings


def stored_info(attrs: Mapping[str, Any], source: str) -> dict[str, Any]:
    """The run facts (n, d, beta, batch, source, model) from the ``/analysis`` attributes."""
    return {
        "n": int(attrs["n"]),
        "d": int(attrs["d"]),
        "beta": float(attrs["beta"]),
        "batch": int(attrs["batch"]) or None,
        "source": source,
        "model": str(attrs.get("model", "")) or None,
    }


def stored_counts(attrs: Mapping[str, Any], counts: np.ndarray,
                  scalars: Mapping[str, np.ndarray]) -> np.ndarray:
    """The cluster counts by today's rule: format 1 counted one linked group spanning
    more than 90 degrees as one cluster, read as spread (count 0)."""
    if int(attrs.get("format_version", 1)) < 2 and "min_inner_product" in scalars:
        return np.where((counts == 1) & (scalars["min_inner_product"] < 0), 0, counts)
    return counts


def ensemble_datasets(st: Any) -> dict[str, np.ndarray]:
    """The ``/analysis/ensemble`` datasets of the layout from an
    :class:`~particles.analysis.ensemble.EnsembleStats`."""
    out = {
        "ensemble/count_values": st.count_values,
        "ensemble/count_systems": st.count_systems,
        "ensemble/levels": st.levels,
        "ensemble/count_quantiles": st.count_quantiles,
        "ensemble/formation_quantiles": st.formation_quantiles,
        "ensemble/first_merge_quantiles": st.first_merge_quantiles,
    }
    for name, curve in (("formation", st.formation), ("first_merge", st.first_merge)):
        out[f"ensemble/{name}/time"] = curve.times
        out[f"ensemble/{name}/survival"] = curve.survival
        out[f"ensemble/{name}/at_risk"] = curve.at_risk
        out[f"ensemble/{name}/events"] = curve.events
        out[f"ensemble/{name}/systems"] = np.int64(curve.systems)
        out[f"ensemble/{name}/censored"] = np.int64(curve.censored)
    out["ensemble/first_merge/one_cluster"] = np.int64(st.one_cluster)
    out["ensemble/not_formed"] = np.int64(st.not_formed)
    return out


# ---------------------------------------------------------------- the sidecar
def analysis_path(path: str | os.PathLike) -> Path:
    """The sidecar file of a trajectory's results: ``run.h5`` -> ``run.analysis.h5``.

    Parameters
    ----------
    path : str or path-like
        The trajectory (``.h5``/``.hdf5``/``.hdf`` lose their extension first).
    """
    path = Path(path)
    stem = path.stem if path.suffix.lower() in (".h5", ".hdf5", ".hdf") else path.name
    return path.with_name(stem + SIDECAR_SUFFIX)


@dataclass(frozen=True)
class AnalysisData:
    """The content of an ``/analysis`` group.

    Attributes
    ----------
    attrs : dict of str to Any
        The group's attributes.
    datasets : dict of str to ndarray
        Every dataset, by its path inside the group (``"time"``,
        ``"scalars/energy"``, ``"merges/frame"``, ...).
    """

    attrs: dict[str, Any]
    datasets: dict[str, np.ndarray]

    def group(self, name: str) -> dict[str, np.ndarray]:
        """The datasets of one subgroup, by their names in it."""
        prefix = f"{name}/"
        return {k[len(prefix):]: v for k, v in self.datasets.items() if k.startswith(prefix)}


@dataclass(frozen=True)
class AnalysisSpec:
    """What a new sidecar is made of (what :meth:`AnalysisKind.create` takes).

    Attributes
    ----------
    trajectory : str
        The name of the trajectory file the results belong to.
    attrs : dict of str to Any
        Attributes of the ``/analysis`` group.
    names : tuple of str
        The datasets, in the order they are written (the items of the file).
    nbytes : int
        Their bytes, all together (for the free space a write needs).
    groups : tuple of str
        Subgroups that must exist even when they hold no dataset.
    compressed : tuple of str
        Datasets stored with gzip and shuffle.
    """

    trajectory: str
    attrs: dict[str, Any]
    names: tuple[str, ...]
    nbytes: int
    groups: tuple[str, ...] = ()
    compressed: tuple[str, ...] = ()


@dataclass(frozen=True)
class AnalysisSummary:
    """What a sidecar holds, read from its header.

    Attributes
    ----------
    path : Path
    trajectory : str
        The trajectory the results belong to ("" when the file does not say).
    datasets, expected : int
        Datasets written, and those of the complete file.
    complete : bool
    attrs : dict of str to Any
        The ``/analysis`` attributes (the settings and run facts).
    frames : int
        Saved frames analysed.
    """

    path: Path
    trajectory: str
    datasets: int
    expected: int
    complete: bool
    attrs: dict[str, Any]
    frames: int

    @property
    def items(self) -> int:
        return self.datasets

    @property
    def items_expected(self) -> int:
        return self.expected

    def describe(self) -> str:
        return f"holds {self.datasets} of {self.expected} datasets"


class AnalysisWriter:
    """Writes the datasets of a sidecar (:class:`~particles.io.kinds.Writer`), each
    as it comes, its disk space reserved first; the count readers trust last."""

    def __init__(self, f: h5py.File, reserve: Any, spec: AnalysisSpec, written: int) -> None:
        self._file, self._reserve, self._spec = f, reserve, spec
        self.frames = written
        self._buffer: list[tuple[str, np.ndarray]] = []
        self._failed: OutputWriteError | None = None

    @property
    def pending(self) -> int:
        return len(self._buffer)

    @property
    def failed(self) -> OutputWriteError | None:
        return self._failed

    def append(self, item: tuple[str, np.ndarray]) -> bool:
        """Take one dataset ``(name, array)`` and write it."""
        self._buffer.append(item)
        self.flush()
        return True

    def flush(self) -> None:
        if self._failed is not None:
            raise self._failed
        if not self._buffer:
            return
        group = self._file[ANALYSIS_GROUP]
        try:
            for name, data in self._buffer:
                data = np.asarray(data)
                self._reserve.ensure(self._file, 2 * data.nbytes + 4096 + RESERVE_MARGIN)
                extra = ({"compression": "gzip", "shuffle": True}
                         if name in self._spec.compressed else {})
                group.create_dataset(name, data=data, **extra)
                self.frames += 1
            self._file["parameters"].attrs["written"] = np.int64(self.frames)
            self._file.flush()
        except (OSError, RuntimeError, ValueError) as exc:
            self._buffer = []
            self._failed = write_failure(self._file.filename, exc, frames=None)
            raise self._failed from None
        self._buffer = []

    def close(self, *, complete: bool) -> None:
        if not self._file:
            return
        try:
            if self._failed is None:
                self.flush()
                if complete:
                    self._file["parameters"].attrs["complete"] = np.int8(1)
                    self._file.flush()
        except BaseException:
            close_quietly(self._file, self._reserve)
            raise
        close_file(self._file, self._reserve)


def _legacy(f: h5py.File) -> bool:
    """A sidecar written before it was a kind: only an ``/analysis`` group, no header."""
    return ANALYSIS_GROUP in f and "parameters" not in f and "h5md" not in f


def _inspect(f: h5py.File, path: Path) -> AnalysisSummary:
    if _legacy(f):
        g = f[ANALYSIS_GROUP]
        count = [0]
        g.visititems(lambda _, obj: count.__setitem__(0, count[0] + 1)
                     if isinstance(obj, h5py.Dataset) else None)
        return AnalysisSummary(path, str(g.attrs.get("trajectory", "")), count[0], count[0],
                               True, dict(g.attrs), _frames(g))
    if file_kind(f) != KIND:
        refusal(path, f, ANALYSIS, "analysis results")
        raise file_error(path, "not a particles analysis file (no /parameters kind 'analysis')")
    params, g = f["parameters"], f[ANALYSIS_GROUP]
    written, expected = int(params.attrs["written"]), int(params.attrs["expected"])
    complete = bool(params.attrs["complete"]) and written == expected
    return AnalysisSummary(path, str(g.attrs["trajectory"]), written, expected, complete,
                           dict(g.attrs), _frames(g))


def _frames(g: h5py.Group) -> int:
    time = g.get("time")
    return int(time.shape[0]) if isinstance(time, h5py.Dataset) and time.ndim == 1 else 0


class AnalysisKind:
    """The sidecar of a trajectory's analysis (:class:`~particles.io.kinds.FileKind`):
    the layout of this module; items are datasets.  Never resumed: it is
    written whole under a temporary name and renamed (a rerun replaces it)."""

    name = KIND
    description = "trajectory analysis"
    command = "particles analyze"
    reader = "particles.analysis.read_analysis"
    unit = "datasets"
    resumable = False
    error = TrajectoryFileError

    def can_open(self, f: h5py.File) -> bool:
        return file_kind(f) == KIND or _legacy(f)

    def create(self, path: Path, spec: AnalysisSpec, *,
               flush_interval: float = 0.0) -> AnalysisWriter:
        def fill(f: h5py.File) -> None:
            write_header(f, kind=KIND, complete=np.int8(0), written=np.int64(0),
                         expected=np.int64(len(spec.names)))
            g = f.create_group(ANALYSIS_GROUP)
            g.attrs["trajectory"] = spec.trajectory
            for key, value in spec.attrs.items():
                g.attrs[key] = value
            for name in spec.groups:
                g.require_group(name)

        f, reserve = create_file(path, fill)
        return AnalysisWriter(f, reserve, spec, 0)

    def reopen(self, path: Path, spec: AnalysisSpec | None, *,
               flush_interval: float = 0.0) -> AnalysisWriter:
        raise file_error(path, "analysis results are not resumed; run `particles analyze` "
                               "again to replace them")

    def summarize(self, path: Path) -> AnalysisSummary:
        return read_retrying(path, _inspect, lambda f, header: header, "analysis")

    def load(self, path: Path) -> AnalysisData:
        return read_retrying(path, _inspect, lambda f, header: _group_data(f[ANALYSIS_GROUP]),
                             "analysis")

    def expected(self, spec: AnalysisSpec) -> int:
        return len(spec.names)

    def bytes_needed(self, spec: AnalysisSpec, items: int) -> int:
        share = spec.nbytes * items // max(1, len(spec.names))
        return 2 * share + (4096 + RESERVE_MARGIN) * items + 2**16

    def example(self) -> Example:
        """Twelve scalar series of 4096 frames (series k drawn from seed k), one compressed."""
        names = tuple(f"scalars/s{k:02d}" for k in range(12))
        attrs = {"format_version": FORMAT_VERSION, "method": "components", "n": 8, "d": 3}
        spec = AnalysisSpec("run.h5", attrs, names, 8 * 4096 * len(names),
                            groups=("scalars", "histogram"), compressed=(names[0],))

        def items(summary: Summary | None) -> Iterator[tuple[str, np.ndarray]]:
            for k in range(0 if summary is None else summary.items, len(names)):
                yield names[k], np.random.default_rng(k).normal(size=4096)

        return Example(spec, items)


#: the analysis sidecar kind, registered.
ANALYSIS = register(AnalysisKind())


def read_analysis_summary(path: str | os.PathLike) -> AnalysisSummary:
    """What the analysis sidecar ``path`` holds, from its header (``particles info``).

    Raises
    ------
    TrajectoryFileError
        Missing, not HDF5, damaged, or a file of another kind (one line).
    """
    return ANALYSIS.summarize(Path(path))


def write_analysis_group(
    path: str | os.PathLike,
    attrs: Mapping[str, Any],
    datasets: Mapping[str, np.ndarray],
    *,
    groups: Iterable[str] = (),
    compressed: Iterable[str] = (),
) -> None:
    """Replace the results of the trajectory ``path`` (its sidecar file's ``/analysis``).

    The trajectory is not opened at all; the sidecar (:func:`analysis_path`)
    is written under a temporary name (:data:`ANALYSIS`'s writer), read back
    and renamed over the previous one.

    Parameters
    ----------
    path : str or path-like
        The trajectory file the results belong to.
    attrs : mapping
        Attributes of the group.
    datasets : mapping of str to ndarray
        Datasets by their path inside the group (subgroups made as needed).
    groups : iterable of str
        Subgroups that must exist even when they hold no dataset.
    compressed : iterable of str
        Datasets stored with gzip and shuffle.

    Raises
    ------
    OutputWriteError
        The sidecar could not be written (disk full, read-only directory);
        the previous results and the trajectory are unchanged, nothing is left.
    """
    target = analysis_path(path)
    temp = temporary_path(target)
    nbytes = sum(np.asarray(v).nbytes for v in datasets.values())
    spec = AnalysisSpec(Path(path).name, dict(attrs), tuple(datasets), nbytes,
                        tuple(groups), tuple(compressed))
    need = ANALYSIS.bytes_needed(spec, len(spec.names))
    try:
        writer = ANALYSIS.create(temp, spec)
        try:
            for item in datasets.items():
                writer.append(item)
        finally:
            writer.close(complete=writer.failed is None)
        _read_group(temp)  # read back: never rename a damaged file over good results
        put_in_place(temp, target, overwrite=True)
    except OutputWriteError as exc:
        temp.unlink(missing_ok=True)
        raise OutputWriteError(target, exc.reason, errno=exc.errno, needed=need,
                               frames=None) from None
    except (OSError, RuntimeError, KeyError, ValueError) as exc:
        temp.unlink(missing_ok=True)
        raise write_failure(target, exc, needed=need, frames=None) from None
    except BaseException:  # Ctrl-C: no temporary file left, old results kept
        temp.unlink(missing_ok=True)
        raise


def analysis_source(path: str | os.PathLike) -> Path | None:
    """The file holding a trajectory's stored results, or None.

    The sidecar :func:`analysis_path` when it exists, otherwise the
    trajectory itself when it holds an ``/analysis`` group (files analysed
    before sidecars), otherwise None.
    """
    sidecar = analysis_path(path)
    if sidecar.is_file() and sidecar != Path(path):
        return sidecar
    try:
        with h5py.File(path, "r") as f:
            return Path(path) if ANALYSIS_GROUP in f else None
    except OSError:
        return None


def read_analysis_group(path: str | os.PathLike) -> AnalysisData:
    """Read every attribute and dataset of a trajectory's stored results.

    From the sidecar :func:`analysis_path` when it exists, otherwise from
    ``path`` itself: a sidecar, or a trajectory holding an ``/analysis``
    group (files analysed before sidecars).

    Raises
    ------
    KeyError
        If neither holds an ``/analysis`` group.
    TrajectoryFileError
        ``path`` is a file of another kind than a trajectory (a sweep, a
        density, ...): one line naming it and its reader.
    """
    sidecar = analysis_path(path)
    if sidecar.is_file() and sidecar != Path(path):
        return _read_group(sidecar)
    return _read_group(path, f"{os.fspath(path)} has no /{ANALYSIS_GROUP} group and no "
                             f"{sidecar.name} (run `particles analyze` first)")


def _read_group(path: str | os.PathLike, missing: str | None = None) -> AnalysisData:
    with h5py.File(path, "r") as f:
        if ANALYSIS_GROUP not in f:
            if not FILE_KINDS["trajectory"].can_open(f):
                refusal(Path(path), f, ANALYSIS, "analysis results")
            raise KeyError(missing or f"{os.fspath(path)} has no /{ANALYSIS_GROUP} group")
        return _group_data(f[ANALYSIS_GROUP])


def _group_data(g: h5py.Group) -> AnalysisData:
    """Every attribute and dataset of an ``/analysis`` group."""
    datasets: dict[str, np.ndarray] = {}

    def visit(name: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset):
            datasets[name] = obj[()]

    g.visititems(visit)
    return AnalysisData(dict(g.attrs), datasets)
