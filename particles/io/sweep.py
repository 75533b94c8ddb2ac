"""Sweep files: the layout, a per-task writer and the reader (pure file format).

One HDF5 file per sweep, with the header every ``particles`` file has
(:func:`particles.io.hdf5.write_header`: ``/h5md``, ``/parameters`` with the
schema and software versions)::

    /parameters                particles_schema, kind = "sweep", complete = 0 | 1,
                               sweep (JSON: fixed fields, axes, runs, deltas, eps,
                               levels, root seed), seed (decimal string),
                               config (JSON of the fixed fields)
    /sweep                     attrs: format = 2 (3: with merges or passages, below),
                               axes (JSON list of the swept fields, grid order),
                               runs, points, eps
        axes/<name>            values of each swept field (float64, int64 or str)
        time     (F,)          save times (shared by every grid point)
        delta    (K,)          close-pair thresholds
        quantile (Q,)          quantile levels
        clusters (C,)          1 .. largest n
        configs  (points,)     JSON of each grid point's resolved configuration
        done     (points, runs) uint8: 1 once the system's results are on disk
        systems/               per-system results, written as tasks finish:
            pair_counts        (points, runs, F, K) uint: pairs i<j, <x_i,x_j> > 1 - delta
            cluster_count      (points, runs, F)    uint, 0: spread (no clusters)
            energy             (points, runs, F)    float32
            order_parameter    (points, runs, F)    float32
            formation_time     (points, runs)       float64, NaN: not seen
            first_merge_time   (points, runs)       float64, NaN: not seen
            single_cluster_time (points, runs)      float64, inf: never
            positions          (points, runs, F, n, d) float64 (only when asked)
            frames             (points, runs)       uint: save times computed, F unless
                                                    the point stopped (--until-clusters)
            passage_time       (points, runs)       float64: first passage to at most
                                                    until_clusters clusters (located with
                                                    --merge-events, else the frame's
                                                    time), inf: not by the end (both
                                                    only with --until-clusters)
        merges/                the located merges (only with --merge-events), one row
                               per merge, in the order tasks finished until the sweep
                               completes, then sorted by (point, system, time):
            point, system      int64 (merges,)
            time               float64 (merges,)  first time seen with fewer clusters
            before, after      int64 (merges,)    cluster counts either side
        stats/<name>           aggregated statistics, written once every system is
                               done; attribute dims = JSON list of dimension names
                               (grid axes, then time, delta, quantile, clusters,
                               system)

Crash safety: a task's results are written, then its systems' ``done``
flags, then the file is flushed (``H5Fflush``); a process killed at any
moment leaves a file whose ``done`` systems are all on disk.  Disk space
for each task is reserved before HDF5 writes a byte (as for trajectories,
:class:`particles.io.hdf5.Reserve`): every chunk the task is the first to
touch, whole, since HDF5 allocates a chunk at its first write however few
rows go into it, plus a margin for metadata.  So a full disk stops the
sweep with :class:`~particles.errors.OutputWriteError` before the file
changes, and leaves it readable and resumable.
Per-system datasets are chunked by systems and allocated as they are
written: an unfinished sweep takes the room of its finished systems.
A task's merges are appended with its results, before its ``done`` flags:
reopening drops the rows of systems not done (a task killed between the
two), so a resumed sweep holds each system's merges once.  The rows are
sorted once every system is done (a sorted copy written whole, then put in
the table's place; reopening finishes or drops a copy a kill left), so the
finished file does not depend on the order in which tasks finished.
Frames after a grid point's stop (``--until-clusters``) are not computed:
their per-frame values are 0 (NaN for floats) and ``frames`` says where
they end.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from particles.errors import OutputWriteError, SweepError
from particles.io.hdf5 import (
    FLUSH_INTERVAL,
    RESERVE_MARGIN,
    Reserve,
    check_schema,
    close_file,
    close_quietly,
    create_file,
    file_kind,
    open_read,
    reopen_file,
    write_failure,
    write_header,
)
from particles.io.kinds import Example, register

__all__ = ["DAMAGE", "FORMAT", "KIND", "MERGE_COLUMNS", "MERGE_SOURCES", "MERGE_STATS",
           "PASSAGE_STATS", "STATS", "SWEEP",
           "SweepHeader", "SweepLayout", "SweepWriter", "TaskRows", "check_layout", "damaged",
           "is_sweep", "is_sweep_file", "open_sweep", "read_contents", "read_header",
           "read_merges", "read_stats", "read_systems", "reading"]

#: ``/parameters`` attribute ``kind`` of a sweep file.
KIND = "sweep"

#: version of the ``/sweep`` layout above (2: a spread system counts 0
#: clusters, where format 1 counted its one linked group as 1; the statistics
#: spread_fraction and first_merge_one_cluster; 3: located merges and stops at
#: a cluster count, which an older reader would resume without).  Files
#: without either are written as format 2, as before.
FORMAT = 3

#: the format of a file without located merges or stops.
PLAIN_FORMAT = 2

#: the group of located merges and its columns (name -> dtype), in sort order.
MERGES = "merges"
MERGE_COLUMNS: dict[str, type] = {"point": np.int64, "system": np.int64,
                                  "time": np.float64, "before": np.int64, "after": np.int64}

#: rows per HDF5 chunk of a merge column.
_MERGE_CHUNK = 4096

#: per-system datasets with a frame axis (name -> extra axes after the frame axis).
FRAME_DATASETS = ("pair_counts", "cluster_count", "energy", "order_parameter")
#: per-system scalars.
SYSTEM_DATASETS = ("formation_time", "first_merge_time", "single_cluster_time")

#: the statistics a complete file of this format holds: name -> dimensions after
#: the grid axes (computed by :mod:`particles.sweep.aggregate`, which says what each is).
STATS: dict[str, tuple[str, ...]] = {
    "pair_fraction": ("time", "delta"),
    "cluster_distribution": ("time", "clusters"),
    "spread_fraction": ("time",),
    "cluster_mean": ("time",),
    "cluster_quantile": ("time", "quantile"),
    "energy_mean": ("time",),
    "order_parameter_mean": ("time",),
    "formation_time": ("quantile",),
    "first_merge_time": ("quantile",),
    "formation_censored": (),
    "first_merge_censored": (),
    "first_merge_one_cluster": (),
    "single_cluster_time": ("system",),
}

#: statistics of a sweep that stops at a cluster count (``until_clusters``), only then.
PASSAGE_STATS: dict[str, tuple[str, ...]] = {"passage_time": ("system",)}

#: the statistics that come from located merges where a file has them
#: (:mod:`particles.sweep.aggregate`).
MERGE_STATS = ("first_merge_time", "single_cluster_time")

#: their ``source`` attribute: from the save grid (False: also where it is
#: absent, as in files written before), or located (True).
MERGE_SOURCES = {False: "save_grid", True: "located"}

#: what reading a damaged file raises, from h5py, NumPy and json: each becomes one
#: line naming the file (:func:`damaged`).
DAMAGE = (KeyError, ValueError, TypeError, AttributeError, IndexError, OSError, RuntimeError)

#: target bytes of one HDF5 chunk of a per-system dataset.
_CHUNK_BYTES = 2**20


def sweep_error(path: Path, reason: str) -> SweepError:
    """A one-line :class:`SweepError`: ``PATH: reason``."""
    return SweepError(f"{path}: {' '.join(str(reason).split())}")


def damaged(path: Path, exc: BaseException | str) -> SweepError:
    """``PATH: damaged sweep file (...)``: what a reader met, in one line."""
    why = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    return sweep_error(path, f"damaged sweep file ({why})")


@contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """Read a sweep file: what reading a damaged one raises (:data:`DAMAGE`) becomes
    one line naming it (:func:`damaged`); a :class:`SweepError` passes as it is."""
    try:
        yield
    except SweepError:
        raise
    except DAMAGE as exc:
        raise damaged(Path(path), exc) from None


def _number(value: Any, kind: type = int) -> int | float:
    """A scalar attribute as ``kind`` (int: integers and booleans only)."""
    a = np.asarray(value)
    if a.ndim or a.dtype.kind not in ("iub" if kind is int else "iubf"):
        raise TypeError(f"{value!r} is not a{'n integer' if kind is int else ' number'}")
    return kind(a)


@dataclass(frozen=True)
class SweepHeader:
    """What a sweep file holds, read without its per-system data.

    Attributes
    ----------
    path : Path
    spec : str
        The sweep's JSON description (``SweepSpec.to_json()``).
    complete : bool
        Every system done and the statistics written.
    done : ndarray of bool, shape (points, runs)
    times : ndarray, shape (F,)
    positions : bool
        Whether positions are stored.
    summations : tuple of str
        The summation each grid point's recorded configuration uses (a resume
        keeps it, whatever ``auto`` would choose now).
    merges : bool
        Whether the file holds located merges (``--merge-events``).
    """

    path: Path
    spec: str
    complete: bool
    done: np.ndarray
    times: np.ndarray
    positions: bool
    summations: tuple[str, ...] = ()
    merges: bool = False

    @property
    def systems_done(self) -> int:
        """Systems whose results are on disk."""
        return int(self.done.sum())

    @property
    def items(self) -> int:
        """Systems done (the :class:`~particles.errors.Summary` protocol)."""
        return self.systems_done

    @property
    def items_expected(self) -> int:
        """Systems of the whole sweep."""
        return int(self.done.size)

    def describe(self) -> str:
        """``"holds 12 of 64 systems"``."""
        return f"holds {self.systems_done} of {self.done.size} systems"


def is_sweep(f: h5py.File) -> bool:
    """Whether an open file is a sweep file (never raises)."""
    try:
        kind = file_kind(f)
    except DAMAGE:
        return False
    return kind == KIND


def is_sweep_file(path: str | Path) -> bool:
    """Whether ``path`` is a readable sweep file (``particles sweep``), by its header."""
    try:
        with h5py.File(path, "r", locking=False) as f:
            return is_sweep(f)
    except OSError:
        return False


def open_sweep(path: str | Path) -> h5py.File:
    """Open a sweep file read-only, with one-line errors (:class:`SweepError`): the
    file is checked first (:func:`check_layout`)."""
    path = Path(path)
    f, _ = open_read(path, sweep_error, "sweep")
    try:
        if not is_sweep(f):
            raise sweep_error(path, "not a particles sweep file (no /parameters kind='sweep')")
        check_layout(f, path)
    except BaseException:
        f.close()
        raise
    return f


def check_layout(f: h5py.File, path: Path) -> None:
    """Check an open sweep file, so that every reader meets a whole file or one line
    naming what is wrong: the versions, every attribute and dataset the readers use
    (types and shapes), and that a file marked complete has every system done and
    every statistic.

    Raises
    ------
    SweepError
        ``PATH: damaged sweep file (...)``, or a file of a newer version.
    """
    with reading(path):  # a missing group or attribute, JSON that does not parse
        problems = _problems(f, path)
    if problems:
        raise damaged(path, problems[0])


#: dtype kinds of a dataset, in words.
_KIND_WORDS = {"f": "floats", "iu": "integers", "OS": "text", "iub": "flags",
               "OSiuf": "numbers or text", "iubf": "numbers"}


def _problems(f: h5py.File, path: Path) -> list[str]:
    """What is wrong with an open sweep file (raises what reading a damaged one raises)."""
    problems = _parameter_problems(f, path)
    if problems:
        return problems
    g = f["sweep"]
    complete = _number(f["parameters"].attrs.get("complete", 0))
    axes = json.loads(g.attrs["axes"])
    if not isinstance(axes, list) or not all(isinstance(k, str) for k in axes):
        return [f"axes {axes!r} are not a list of names"]
    points, runs = _number(g.attrs["points"]), _number(g.attrs["runs"])
    _number(g.attrs["eps"], float)
    problems = _dtype_problems(g, axes)
    if problems:
        return problems
    sizes = {k: g["axes"][k].shape[0] for k in axes}
    sizes.update(time=g["time"].shape[0], delta=g["delta"].shape[0],
                 quantile=g["quantile"].shape[0], clusters=g["clusters"].shape[0],
                 system=runs)
    problems = [*_grid_problems(g, axes, sizes, points, runs),
                *_system_problems(g, sizes, points, runs),
                *_stats_problems(g, axes, sizes), *_merge_problems(g)]
    return problems + _completion_problems(g, complete, problems)


def _parameter_problems(f: h5py.File, path: Path) -> list[str]:
    """What is wrong with the versions and the text attributes of ``/parameters``."""
    params = f["parameters"]
    check_schema(params, path, sweep_error)
    g = f["sweep"]
    if _number(g.attrs.get("format", 0)) > FORMAT:
        raise sweep_error(path, "written by a newer version of particles; upgrade to read it")
    for key in ("sweep", "seed", "config"):
        if not isinstance(params.attrs[key], str):
            return [f"/parameters {key} is not text"]
    if not isinstance(json.loads(params.attrs["sweep"]), dict):
        return ["/parameters sweep is not a JSON object"]
    return []


def _dtype_problems(g: h5py.Group, axes: list[str]) -> list[str]:
    """Members of ``/sweep`` that are no dataset, or hold the wrong kind of values."""
    kinds = {"time": "f", "delta": "f", "quantile": "f", "clusters": "iu", "configs": "OS",
             "done": "iub"}
    datasets = {k: g[k] for k in kinds}
    datasets.update({f"axes/{k}": g["axes"][k] for k in axes})
    datasets.update({f"systems/{k}": ds for k, ds in g["systems"].items()})
    datasets.update({f"stats/{k}": ds for k, ds in g["stats"].items()})
    problems = []
    for name, ds in datasets.items():
        want = kinds.get(name, "OSiuf" if name.startswith("axes/") else "iubf")
        if not isinstance(ds, h5py.Dataset):
            problems.append(f"{name} is not a dataset")
        elif ds.dtype.kind not in want:
            problems.append(f"{name} holds {ds.dtype}, not {_KIND_WORDS[want]}")
    return problems


def _grid_problems(g: h5py.Group, axes: list[str], sizes: dict, points: int,
                   runs: int) -> list[str]:
    """Axes, configurations and done flags that disagree with the grid's size."""
    problems = []
    if math.prod(sizes[k] for k in axes) != points or g["configs"].shape != (points,):
        problems.append(f"{points} grid points, but axes of {[sizes[k] for k in axes]} "
                        f"values and {g['configs'].shape[0]} configurations")
    if g["done"].shape != (points, runs):
        problems.append(f"done flags of shape {g['done'].shape}, not {(points, runs)}")
    return problems


def _system_problems(g: h5py.Group, sizes: dict, points: int, runs: int) -> list[str]:
    """Per-system datasets whose shape is not (points, systems[, save times], ...)."""
    problems = []
    systems = g["systems"]
    for name in (*FRAME_DATASETS, *SYSTEM_DATASETS):
        ds = systems[name]
        frames = (sizes["time"],) if name in FRAME_DATASETS else ()
        if ds.shape[:2 + len(frames)] != (points, runs, *frames):
            problems.append(f"systems/{name} of shape {ds.shape} for {points} points, "
                            f"{runs} systems" + (f", {sizes['time']} save times"
                                                 if frames else ""))
    return problems


def _merge_problems(g: h5py.Group) -> list[str]:
    """A table of merges that lacks a column, holds the wrong kind of values, or
    whose columns differ in length."""
    if MERGES not in g:
        return []
    table = g[MERGES]
    if not isinstance(table, h5py.Group):
        return [f"{MERGES} is not a group"]
    problems, lengths = [], set()
    for name, dtype in MERGE_COLUMNS.items():
        ds = table.get(name)
        want = "f" if np.dtype(dtype).kind == "f" else "iu"
        if not isinstance(ds, h5py.Dataset) or ds.ndim != 1:
            problems.append(f"{MERGES}/{name} is not a column")
        elif ds.dtype.kind not in want:
            problems.append(f"{MERGES}/{name} holds {ds.dtype}, not {_KIND_WORDS[want]}")
        else:
            lengths.add(ds.shape[0])
    if len(lengths) > 1:
        problems.append(f"the columns of {MERGES} differ in length ({sorted(lengths)})")
    return problems


def _stats_problems(g: h5py.Group, axes: list[str], sizes: dict) -> list[str]:
    """Statistics over the wrong dimensions, or of a shape that disagrees with them."""
    problems = []
    for name, ds in g["stats"].items():
        dims = json.loads(ds.attrs["dims"])
        want = tuple(sizes.get(d, -1) for d in dims)
        known = {**STATS, **PASSAGE_STATS}
        if name in known and dims != [*axes, *known[name]]:
            problems.append(f"statistic {name} over {dims}, not {[*axes, *known[name]]}")
        if ds.shape != want:
            problems.append(f"statistic {name} of shape {ds.shape}, its dimensions "
                            f"{dims} being {want}")
    return problems


def _completion_problems(g: h5py.Group, complete: int, problems: list[str]) -> list[str]:
    """A bad completion flag, or a file marked complete (and otherwise whole, as
    ``problems`` say) with systems not done or some statistics missing."""
    if complete not in (0, 1):
        return [f"completion flag {complete}"]
    if not complete or problems:
        return []
    found = []
    undone = int(g["done"].size - np.count_nonzero(g["done"][()]))
    if undone:
        found.append(f"marked complete, but {undone} of {g['done'].size} systems "
                     "are not done")
    # the statistics are written all at once: a complete file has all or none
    missing = [k for k in STATS if k not in g["stats"]]
    if 0 < len(missing) < len(STATS) and _number(g.attrs.get("format", 0)) >= PLAIN_FORMAT:
        found.append(f"marked complete, but without the statistics "
                     f"{', '.join(missing)}")
    return found


def read_header(path: str | Path) -> SweepHeader:
    """The :class:`SweepHeader` of a sweep file.

    Raises
    ------
    SweepError
        Not a sweep file, or a damaged one (one line).
    """
    path = Path(path)
    with open_sweep(path) as f, reading(path):
        g = f["sweep"]
        return SweepHeader(
            path=path,
            spec=str(f["parameters"].attrs["sweep"]),
            complete=bool(_number(f["parameters"].attrs.get("complete", 0))),
            done=np.asarray(g["done"][()], dtype=bool),
            times=np.asarray(g["time"][()]),
            positions="positions" in g["systems"],
            summations=tuple(json.loads(c).get("summation", "direct")
                             for c in g["configs"].asstr()[()]),
            merges=MERGES in g,
        )


def read_systems(f: h5py.File, point: int, names: tuple[str, ...] | None = None
                 ) -> dict[str, np.ndarray]:
    """Per-system results of one grid point, ``name -> (runs, ...)`` arrays.

    Raises
    ------
    SweepError
        A dataset that cannot be read (one line naming the file).
    """
    with reading(f.filename):
        g = f["sweep/systems"]
        names = tuple(g) if names is None else names
        return {k: g[k][point] for k in names}


def read_stats(f: h5py.File) -> dict[str, tuple[np.ndarray, tuple[str, ...]]]:
    """Aggregated statistics: ``name -> (values, dimension names)``.

    Raises
    ------
    SweepError
        A statistic that cannot be read (one line naming the file).
    """
    with reading(f.filename):
        g = f["sweep/stats"]
        return {k: (g[k][()], tuple(json.loads(g[k].attrs["dims"]))) for k in g}


def read_merges(f: h5py.File) -> dict[str, np.ndarray] | None:
    """The located merges of the systems done, sorted by (point, system, time):
    column name (:data:`MERGE_COLUMNS`) -> (merges,) array; None for a file
    without them (a sweep run without ``--merge-events``).

    Raises
    ------
    SweepError
        A column that cannot be read (one line naming the file).
    """
    with reading(f.filename):
        g = f["sweep"]
        if MERGES not in g:
            return None
        columns = {k: np.asarray(g[MERGES][k][()], dtype=dt)
                   for k, dt in MERGE_COLUMNS.items()}
        done = np.asarray(g["done"][()], dtype=bool)
        return _done_rows(columns, done)


def _done_mask(columns: dict[str, np.ndarray], done: np.ndarray) -> np.ndarray:
    """Which rows of a table of merges belong to systems done, (rows,) bool."""
    point, system = columns["point"], columns["system"]
    inside = ((point >= 0) & (point < done.shape[0]) & (system >= 0)
              & (system < done.shape[1]))
    keep = np.zeros(point.shape, dtype=bool)
    keep[inside] = done[point[inside], system[inside]]
    return keep


def _done_rows(columns: dict[str, np.ndarray], done: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of systems done, sorted by (point, system, time)."""
    keep = _done_mask(columns, done)
    rows = {k: v[keep] for k, v in columns.items()}
    order = np.lexsort((rows["time"], rows["system"], rows["point"]))
    return {k: v[order] for k, v in rows.items()}


def read_contents(path: str | Path) -> dict[str, Any]:
    """Everything a sweep file holds: ``header`` (:class:`SweepHeader`), ``systems``
    (dataset name -> (points, runs, ...) array), ``stats`` (as
    :func:`read_stats`) and ``merges`` (as :func:`read_merges`).

    Raises
    ------
    SweepError
        Not a sweep file, or a damaged one (one line).
    """
    path = Path(path)
    header = read_header(path)
    with open_sweep(path) as f:
        with reading(path):
            systems = {k: ds[()] for k, ds in f["sweep/systems"].items()}
        return {"header": header, "systems": systems, "stats": read_stats(f),
                "merges": read_merges(f)}


def _chunks(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    per_system = itemsize * math.prod(shape[2:])
    systems = max(1, min(shape[1], _CHUNK_BYTES // max(1, per_system)))
    return (1, systems, *shape[2:])


def _axis_values(values: tuple[Any, ...]) -> np.ndarray:
    if all(isinstance(v, str) for v in values):
        return np.array(values, dtype=h5py.string_dtype())
    if all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.int64)
    return np.array(values, dtype=np.float64)


@dataclass(frozen=True)
class SweepLayout:
    """What a sweep file holds, as the file format needs it (made by
    :meth:`particles.sweep.grid.SweepSpec.layout`).

    Attributes
    ----------
    spec_json, base_json : str
        The sweep's description and its fixed fields (JSON).
    seed : int
        Root seed.
    axes : tuple of (name, values)
    runs : int
    times : ndarray, shape (F,)
    deltas, levels : tuple of float
    eps : float
    max_n, max_pairs : int
        Largest number of tokens and of token pairs on the grid (dtypes).
    configs : tuple of str
        Every grid point's configuration (JSON), in flat grid order.
    positions : (n, d), optional
        Store positions of that shape.
    merges : bool
        Hold a table of located merges (``--merge-events``).
    until : bool
        Hold each system's frames and first passage (``--until-clusters``).
    """

    spec_json: str
    seed: int
    base_json: str
    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    runs: int
    times: np.ndarray
    deltas: tuple[float, ...]
    levels: tuple[float, ...]
    eps: float
    max_n: int
    max_pairs: int
    configs: tuple[str, ...]
    positions: tuple[int, int] | None = None
    merges: bool = False
    until: bool = False

    @property
    def points(self) -> int:
        """Grid points."""
        return len(self.configs)

    @property
    def format(self) -> int:
        """The ``/sweep`` format the file is written in (:data:`FORMAT`)."""
        return FORMAT if self.merges or self.until else PLAIN_FORMAT

    def datasets(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Per-system dataset name -> (shape after the (points, runs) axes, dtype)."""
        F, K = len(self.times), len(self.deltas)

        def uint(maximum: int) -> np.dtype:
            for dt in (np.uint8, np.uint16, np.uint32):
                if maximum <= np.iinfo(dt).max:
                    return np.dtype(dt)
            return np.dtype(np.uint64)

        specs = {
            "pair_counts": ((F, K), uint(self.max_pairs)),
            "cluster_count": ((F,), uint(self.max_n)),
            "energy": ((F,), np.dtype(np.float32)),
            "order_parameter": ((F,), np.dtype(np.float32)),
            "formation_time": ((), np.dtype(np.float64)),
            "first_merge_time": ((), np.dtype(np.float64)),
            "single_cluster_time": ((), np.dtype(np.float64)),
        }
        if self.positions is not None:
            specs["positions"] = ((F, *self.positions), np.dtype(np.float64))
        if self.until:
            specs["frames"] = ((), uint(F))
            specs["passage_time"] = ((), np.dtype(np.float64))
        return specs


@dataclass(frozen=True)
class TaskRows:
    """The per-system results of systems ``[start, stop)`` of grid point ``point``:
    the item a sweep session streams (``arrays``: dataset name -> values of
    shape (stop - start, ...); ``merges``: their located merges, columns
    ``system`` (in the grid point), ``time``, ``before``, ``after``, or None)."""

    point: int
    start: int
    stop: int
    arrays: dict[str, np.ndarray]
    merges: dict[str, np.ndarray] | None = None


class SweepWriter:
    """Writes the results of a sweep's tasks as they finish, then its statistics.

    Use :meth:`create` for a new file or :meth:`reopen` to continue one;
    :meth:`append` (or :meth:`write`) each task's per-system results,
    :meth:`write_stats` once every system is done, :meth:`close` once.
    Every task is on disk when :meth:`append` returns (nothing is pending).
    """

    def __init__(self, f: h5py.File, reserve: Reserve | None, path: Path) -> None:
        self._file = f
        self._reserve = reserve
        self.path = path
        self.done = np.asarray(f["sweep/done"][()], dtype=bool)
        self._failed: OutputWriteError | None = None

    # ------------------------------------------------------------ opening
    @classmethod
    def create(cls, path: str | Path, layout: SweepLayout) -> SweepWriter:
        """Create a new sweep file (which must not exist) with no system done.

        Raises
        ------
        OutputWriteError
            The file could not be written (disk full); it is removed again.
        """
        points, runs = layout.points, layout.runs

        def fill(f: h5py.File) -> None:
            params = write_header(f, kind=KIND)
            params.attrs["complete"] = np.int8(0)
            params.attrs["sweep"] = layout.spec_json
            params.attrs["seed"] = str(layout.seed)
            params.attrs["config"] = layout.base_json
            g = f.create_group("sweep")
            g.attrs["format"] = np.int64(layout.format)
            g.attrs["axes"] = json.dumps([k for k, _ in layout.axes])
            g.attrs["runs"] = np.int64(runs)
            g.attrs["points"] = np.int64(points)
            g.attrs["eps"] = float(layout.eps)
            ax = g.create_group("axes")
            for k, values in layout.axes:
                ax.create_dataset(k, data=_axis_values(values))
            g.create_dataset("time", data=np.asarray(layout.times, dtype=np.float64))
            g.create_dataset("delta", data=np.asarray(layout.deltas, dtype=np.float64))
            g.create_dataset("quantile", data=np.asarray(layout.levels, dtype=np.float64))
            g.create_dataset("clusters", data=np.arange(1, layout.max_n + 1, dtype=np.int64))
            g.create_dataset("configs", data=np.array(layout.configs,
                                                      dtype=h5py.string_dtype()))
            g.create_dataset("done", shape=(points, runs), dtype=np.uint8,
                             chunks=_chunks((points, runs), 1), fillvalue=0)
            s = g.create_group("systems")
            for name, (extra, dt) in layout.datasets().items():
                shape = (points, runs, *extra)
                s.create_dataset(name, shape=shape, dtype=dt, chunks=_chunks(shape, dt.itemsize))
            if layout.merges:
                _merge_table(g, MERGES)
            g.create_group("stats")

        f, reserve = create_file(path, fill)
        return cls(f, reserve, Path(path))

    @classmethod
    def reopen(cls, path: str | Path) -> SweepWriter:
        """Open an existing sweep file to write the systems not done yet.

        Raises
        ------
        SweepError
            Not a sweep file, or another process has it open for writing.
        OutputWriteError
            The file cannot be written (disk full); ``kept`` is the file.
        """
        path = Path(path)
        read_header(path)  # one-line errors for files that are no sweeps
        with open_sweep(path) as f:
            stored = int(f["sweep"].attrs.get("format", 0))
        if stored < PLAIN_FORMAT:  # its counts follow other rules: no mixing of the two
            raise sweep_error(path, f"written by an older particles (sweep format {stored}, "
                              "which counts a spread system as one cluster); run the sweep "
                              "again without --resume")

        def prepare(f: h5py.File) -> None:
            f["parameters"].attrs["complete"] = np.int8(0)
            _mend_merges(f["sweep"])

        f, reserve, _ = reopen_file(path, prepare, error=sweep_error,
                                    busy="a sweep still going?")
        return cls(f, reserve, path)

    # ------------------------------------------------------------ writing
    @property
    def file(self) -> h5py.File:
        """The open file."""
        return self._file

    @property
    def frames(self) -> int:
        """Systems done (the session's count of items on disk)."""
        return int(self.done.sum())

    @property
    def pending(self) -> int:
        """Always 0: every task is written when it is appended."""
        return 0

    @property
    def failed(self) -> OutputWriteError | None:
        """The write failure that stopped this writer, or None."""
        return self._failed

    def _guarded(self, nbytes: int, write) -> None:
        if self._failed is not None:
            raise self._failed
        try:
            if self._reserve is not None:
                self._reserve.ensure(self._file, nbytes + RESERVE_MARGIN)
            write()
            self._file.flush()
        except (OSError, RuntimeError) as exc:
            self._failed = write_failure(self.path, exc, needed=nbytes, frames=None)
            raise self._failed from None

    def write(self, point: int, start: int, stop: int, arrays: dict[str, np.ndarray],
              merges: dict[str, np.ndarray] | None = None) -> None:
        """Write the per-system results of systems ``[start, stop)`` of ``point``
        and their merges, then mark them done and flush.

        Parameters
        ----------
        arrays : dict of str to ndarray
            Dataset name -> values of shape (stop - start, ...), converted to
            the stored dtype.
        merges : dict of str to ndarray, optional
            The systems' located merges: columns ``system`` (in the grid
            point), ``time``, ``before``, ``after`` (a file with a table of
            merges needs them, empty where none was located).

        Raises
        ------
        OutputWriteError
            Disk full or another write failure; nothing of this task is marked done.
        SweepError
            Merges for a file without their table, or none for one with it.
        """
        g = self._file["sweep/systems"]
        table = self._file["sweep"].get(MERGES)
        if (merges is None) != (table is None):
            raise SweepError(f"{self.path}: " + ("the sweep locates merges; a task came "
                                                 "without them" if merges is None else
                                                 "merges for a sweep that locates none"))
        rows = 0 if merges is None else len(merges["time"])
        nbytes = self._allocation(point, start, stop, [g[k] for k in arrays])
        nbytes += rows * _ROW_BYTES + (_MERGE_CHUNK * _ROW_BYTES if rows else 0)

        def write() -> None:
            for k, v in arrays.items():
                g[k][point, start:stop] = np.asarray(v).astype(g[k].dtype, copy=False)
            if rows:
                _append_rows(table, {**merges, "point": np.full(rows, point)})
            self._file.flush()  # the data before the flags that say it is there
            self._file["sweep/done"][point, start:stop] = 1

        self._guarded(nbytes, write)
        self.done[point, start:stop] = True

    def _allocation(self, point: int, start: int, stop: int, datasets: list[h5py.Dataset]
                    ) -> int:
        """Bytes HDF5 allocates to write systems ``[start, stop)`` of ``point``: every
        chunk of the datasets (and of the done flags) that no system written before
        touches is allocated whole at its first write (a 1 MiB chunk for a task of
        a few systems), the others are written in place."""
        total = 0
        for ds in [*datasets, self._file["sweep/done"]]:
            per = ds.chunks[1]  # systems per chunk
            whole = ds.dtype.itemsize * math.prod(ds.chunks)
            for c in range(start // per, (stop - 1) // per + 1):
                if not self.done[point, c * per:(c + 1) * per].any():
                    total += whole
        return total

    def append(self, item: TaskRows) -> bool:
        """:meth:`write` one task's results; always True (written at once)."""
        self.write(item.point, item.start, item.stop, item.arrays, item.merges)
        return True

    def sort_merges(self) -> None:
        """Sort the table of merges by (point, system, time), once every system is
        done: a sorted copy is written whole and flushed, then takes the table's
        place (a kill in between leaves a copy that reopening finishes or drops).
        Nothing to do in a file without merges."""
        g = self._file["sweep"]
        if MERGES not in g:
            return
        columns = {k: g[MERGES][k][()] for k in MERGE_COLUMNS}
        rows = _done_rows(columns, self.done)
        if all(np.array_equal(rows[k], columns[k]) for k in MERGE_COLUMNS):
            return  # sorted already (a resumed finish, or one task)
        count = len(rows["time"])

        def write() -> None:
            if _SORTED in g:
                del g[_SORTED]
            _append_rows(_merge_table(g, _SORTED), rows)
            self._file.flush()  # the copy is whole before it replaces the table
            del g[MERGES]
            g.move(_SORTED, MERGES)

        self._guarded(count * _ROW_BYTES + _MERGE_CHUNK * _ROW_BYTES, write)

    def flush(self) -> None:
        """Nothing to do: every task is flushed when written."""

    def write_stats(self, stats: dict[str, tuple[np.ndarray, tuple[str, ...]]],
                    attrs: dict[str, dict[str, str]] | None = None) -> None:
        """Write (or replace) the aggregated statistics: ``name -> (values, dims)``,
        and text attributes of some of them (``name -> {key: value}``)."""
        g = self._file["sweep/stats"]
        nbytes = sum(np.asarray(v).nbytes for v, _ in stats.values())
        attrs = attrs or {}

        def write() -> None:
            for k, (v, dims) in stats.items():
                if k in g:
                    del g[k]
                ds = g.create_dataset(k, data=np.asarray(v))
                ds.attrs["dims"] = json.dumps(list(dims))
                for key, value in attrs.get(k, {}).items():
                    ds.attrs[key] = value

        self._guarded(nbytes, write)

    def close(self, *, complete: bool) -> None:
        """Record whether the sweep completed and close the file (idempotent)."""
        if not self._file:
            return
        try:
            if complete:
                if self._failed is not None:
                    raise self._failed
                self._file["parameters"].attrs["complete"] = np.int8(1)
                self._file.flush()
        except (OSError, RuntimeError) as exc:
            close_quietly(self._file, self._reserve)
            if isinstance(exc, OutputWriteError):
                raise
            raise write_failure(self.path, exc, frames=None) from None
        except BaseException:
            close_quietly(self._file, self._reserve)
            raise
        close_file(self._file, self._reserve)


#: bytes of one row of the table of merges.
_ROW_BYTES = sum(np.dtype(dt).itemsize for dt in MERGE_COLUMNS.values())

#: the sorted copy of the table of merges, while it is written.
_SORTED = MERGES + ".sorted"


def _merge_table(g: h5py.Group, name: str) -> h5py.Group:
    """An empty table of merges ``g/name``: one growing column per :data:`MERGE_COLUMNS`."""
    table = g.create_group(name)
    for column, dtype in MERGE_COLUMNS.items():
        table.create_dataset(column, shape=(0,), maxshape=(None,), chunks=(_MERGE_CHUNK,),
                             dtype=dtype)
    return table


def _append_rows(table: h5py.Group, columns: dict[str, np.ndarray]) -> None:
    """Append rows (column name -> (rows,) values) to a table of merges."""
    rows = len(columns["time"])
    for column, dtype in MERGE_COLUMNS.items():
        ds = table[column]
        old = ds.shape[0]
        ds.resize((old + rows,))
        ds[old:] = np.asarray(columns[column], dtype=dtype)


def _mend_merges(g: h5py.Group) -> None:
    """Before a sweep continues: finish or drop the sorted copy a kill left
    (:meth:`SweepWriter.sort_merges`), and drop the rows of systems not done
    (a task killed between its merges and its ``done`` flags), so that the
    rerun systems' merges are not held twice."""
    if _SORTED in g:
        if MERGES in g:
            del g[_SORTED]  # killed before the copy took the table's place: unsorted
        else:
            g.move(_SORTED, MERGES)  # killed in between: the copy is whole
    if MERGES not in g:
        return
    table = g[MERGES]
    columns = {k: table[k][()] for k in MERGE_COLUMNS}
    keep = _done_mask(columns, np.asarray(g["done"][()], dtype=bool))
    count = int(keep.sum())
    if count == keep.size:
        return
    # tasks are written one after the other, so the rows not done are the last
    # ones (cut off, the others untouched); any others are gathered first
    gather = not keep[:count].all()
    for column in MERGE_COLUMNS:
        if gather:
            table[column][:count] = columns[column][keep]
        table[column].resize((count,))


def sweep_bytes(layout: SweepLayout, systems: int) -> int:
    """Rough bytes of ``systems`` more systems' results on disk, and the statistics.

    Per-system datasets are allocated in whole chunks (of up to 1 MiB, over
    several systems), so a system costs its rows scaled by the chunking of
    the whole file; the statistics (written at the end) are counted in full.
    """
    points, runs, F = layout.points, layout.runs, len(layout.times)
    per = 0.0
    for extra, dt in layout.datasets().values():
        shape = (points, runs, *extra)
        chunk = _chunks(shape, dt.itemsize)[1]
        allocated = math.ceil(runs / chunk) * chunk
        per += dt.itemsize * math.prod(extra) * allocated / runs
    stats = 16 * points * runs + 8 * points * F * (
        len(layout.deltas) + len(layout.levels) + layout.max_n + 8)
    return int(systems * per) + stats + 2**16


class SweepKind:
    """The sweep file kind (:class:`~particles.io.kinds.FileKind`): the layout of
    this module; items are :class:`TaskRows`, counted in systems."""

    name = KIND
    description = "sweep"
    command = "particles sweep"
    reader = "particles.sweep.load"
    unit = "systems"
    resumable = True
    error = SweepError

    def can_open(self, f: h5py.File) -> bool:
        return is_sweep(f)

    def create(self, path: Path, spec: SweepLayout, *,
               flush_interval: float = FLUSH_INTERVAL) -> SweepWriter:
        return SweepWriter.create(path, spec)

    def reopen(self, path: Path, spec: SweepLayout | None, *,
               flush_interval: float = FLUSH_INTERVAL) -> SweepWriter:
        return SweepWriter.reopen(path)

    def summarize(self, path: Path) -> SweepHeader:
        return read_header(path)

    def load(self, path: Path) -> dict[str, Any]:
        return read_contents(path)

    def expected(self, spec: SweepLayout) -> int:
        return spec.points * spec.runs

    def bytes_needed(self, spec: SweepLayout, items: int) -> int:
        return sweep_bytes(spec, items)

    def example(self) -> Example:
        """Two grid points of 256 systems, 80 save times, tasks of 16 systems with
        results drawn from the seed (point, start); its chunks are larger than
        one task's rows (as a real sweep's are)."""
        times = np.linspace(0.0, 8.0, 80)
        layout = SweepLayout(
            spec_json=json.dumps({"example": True}), seed=11, base_json="{}",
            axes=(("beta", (1.0, 2.0)),), runs=256, times=times, deltas=(0.1, 0.01, 0.001),
            levels=(0.5,), eps=0.05, max_n=8, max_pairs=28,
            configs=(json.dumps({"beta": 1.0}), json.dumps({"beta": 2.0})))
        shapes, size = layout.datasets(), 16

        def items(summary: SweepHeader | None):
            done = (np.zeros((layout.points, layout.runs), dtype=bool)
                    if summary is None else summary.done)
            for point in range(layout.points):
                for start in range(0, layout.runs, size):
                    if done[point, start:start + size].all():
                        continue
                    rng = np.random.default_rng((point, start))
                    arrays = {k: rng.integers(0, 8, (size, *extra)).astype(dt)
                              for k, (extra, dt) in shapes.items()}
                    yield TaskRows(point, start, start + size, arrays)

        return Example(layout, items)


#: the sweep kind, registered.
SWEEP = register(SweepKind())
