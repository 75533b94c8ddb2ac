"""Sweep files: the layout, a per-task writer and the reader (pure file format).

One HDF5 file per sweep, with the header every ``particles`` file has
(:func:`particles.io.h5md.write_header`: ``/h5md``, ``/parameters`` with the
schema and software versions)::

    /parameters                particles_schema, kind = "sweep", complete = 0 | 1,
                               sweep (JSON: fixed fields, axes, runs, deltas, eps,
                               levels, root seed), seed (decimal string),
                               config (JSON of the fixed fields)
    /sweep                     attrs: format = 1, axes (JSON list of the swept
                               fields, grid order), runs, points, eps
        axes/<name>            values of each swept field (float64, int64 or str)
        time     (F,)          save times (shared by every grid point)
        delta    (K,)          close-pair thresholds
        quantile (Q,)          quantile levels
        clusters (C,)          1 .. largest n
        configs  (points,)     JSON of each grid point's resolved configuration
        done     (points, runs) uint8: 1 once the system's results are on disk
        systems/               per-system results, written as tasks finish:
            pair_counts        (points, runs, F, K) uint: pairs i<j, <x_i,x_j> > 1 - delta
            cluster_count      (points, runs, F)    uint
            energy             (points, runs, F)    float32
            order_parameter    (points, runs, F)    float32
            formation_time     (points, runs)       float64, NaN: not seen
            first_merge_time   (points, runs)       float64, NaN: not seen
            single_cluster_time (points, runs)      float64, inf: never
            positions          (points, runs, F, n, d) float64 (only when asked)
        stats/<name>           aggregated statistics, written once every system is
                               done; attribute dims = JSON list of dimension names
                               (grid axes, then time, delta, quantile, clusters,
                               system)

Crash safety: a task's results are written, then its systems' ``done``
flags, then the file is flushed (``H5Fflush``); a process killed at any
moment leaves a file whose ``done`` systems are all on disk.  Disk space
for each task is reserved before HDF5 writes a byte (as for trajectories,
:class:`particles.io.h5md._Reserve`), so a full disk stops the sweep with
:class:`~particles.errors.OutputWriteError` and leaves the file usable.
Per-system datasets are chunked by systems and allocated as they are
written: an unfinished sweep takes the room of its finished systems.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from particles.errors import OutputWriteError, SweepError
from particles.io.h5md import (
    _RESERVE_MARGIN,
    SCHEMA_VERSION,
    _close_file,
    _close_quietly,
    _create,
    _reason,
    _Reserve,
    write_header,
)

__all__ = ["FORMAT", "KIND", "SweepHeader", "SweepWriter", "is_sweep", "open_sweep",
           "read_header", "read_stats", "read_systems"]

#: ``/parameters`` attribute ``kind`` of a sweep file.
KIND = "sweep"

#: version of the ``/sweep`` layout above.
FORMAT = 1

#: per-system datasets with a frame axis (name -> extra axes after the frame axis).
FRAME_DATASETS = ("pair_counts", "cluster_count", "energy", "order_parameter")
#: per-system scalars.
SYSTEM_DATASETS = ("formation_time", "first_merge_time", "single_cluster_time")

#: target bytes of one HDF5 chunk of a per-system dataset.
_CHUNK_BYTES = 2**20


def sweep_error(path: Path, reason: str) -> SweepError:
    """A one-line :class:`SweepError`: ``PATH: reason``."""
    return SweepError(f"{path}: {' '.join(str(reason).split())}")


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
    """

    path: Path
    spec: str
    complete: bool
    done: np.ndarray
    times: np.ndarray
    positions: bool

    @property
    def systems_done(self) -> int:
        """Systems whose results are on disk."""
        return int(self.done.sum())


def is_sweep(f: h5py.File) -> bool:
    """Whether an open file is a sweep file."""
    return "parameters" in f and f["parameters"].attrs.get("kind") == KIND


def is_sweep_file(path: str | Path) -> bool:
    """Whether ``path`` is a readable sweep file (``particles sweep``), by its header."""
    try:
        with h5py.File(path, "r") as f:
            return is_sweep(f)
    except OSError:
        return False


def open_sweep(path: str | Path) -> h5py.File:
    """Open a sweep file read-only, with one-line errors (:class:`SweepError`)."""
    path = Path(path)
    if not path.exists():
        raise sweep_error(path, "no such file")
    if path.is_dir():
        raise sweep_error(path, "is a directory, not a sweep file")
    try:
        if not h5py.is_hdf5(path):
            raise sweep_error(path, "not an HDF5 file (so not a particles sweep)")
        try:
            f = h5py.File(path, "r")
        except BlockingIOError:  # a sweep in progress holds the lock
            f = h5py.File(path, "r", locking=False)
    except OSError as exc:
        raise sweep_error(path, f"cannot be opened, truncated or damaged ({exc})") from None
    try:
        if not is_sweep(f):
            raise sweep_error(path, "not a particles sweep file (no /parameters kind='sweep')")
        schema = int(f["parameters"].attrs.get("particles_schema", 0))
        if schema > SCHEMA_VERSION or int(f["sweep"].attrs.get("format", 0)) > FORMAT:
            raise sweep_error(path, "written by a newer version of particles; upgrade to read it")
    except BaseException:
        f.close()
        raise
    return f


def read_header(path: str | Path) -> SweepHeader:
    """The :class:`SweepHeader` of a sweep file."""
    path = Path(path)
    with open_sweep(path) as f:
        try:
            g = f["sweep"]
            return SweepHeader(
                path=path,
                spec=str(f["parameters"].attrs["sweep"]),
                complete=bool(f["parameters"].attrs.get("complete", 0)),
                done=np.asarray(g["done"][()], dtype=bool),
                times=np.asarray(g["time"][()]),
                positions="positions" in g["systems"],
            )
        except (KeyError, OSError, ValueError) as exc:
            raise sweep_error(path, f"damaged sweep file ({type(exc).__name__}: {exc})") from None


def read_systems(f: h5py.File, point: int, names: tuple[str, ...] | None = None
                 ) -> dict[str, np.ndarray]:
    """Per-system results of one grid point, ``name -> (runs, ...)`` arrays."""
    g = f["sweep/systems"]
    names = tuple(g) if names is None else names
    return {k: g[k][point] for k in names}


def read_stats(f: h5py.File) -> dict[str, tuple[np.ndarray, tuple[str, ...]]]:
    """Aggregated statistics: ``name -> (values, dimension names)``."""
    g = f["sweep/stats"]
    return {k: (g[k][()], tuple(json.loads(g[k].attrs["dims"]))) for k in g}


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


class SweepWriter:
    """Writes the results of a sweep's tasks as they finish, then its statistics.

    Use :meth:`create` for a new file or :meth:`reopen` to continue one;
    :meth:`write` each task's per-system results, :meth:`write_stats` once
    every system is done, :meth:`close` once.
    """

    def __init__(self, f: h5py.File, reserve: _Reserve | None, path: Path) -> None:
        self._file = f
        self._reserve = reserve
        self.path = path
        self.done = np.asarray(f["sweep/done"][()], dtype=bool)

    # ------------------------------------------------------------ opening
    @classmethod
    def create(
        cls,
        path: str | Path,
        *,
        spec_json: str,
        seed: int,
        base_json: str,
        axes: tuple[tuple[str, tuple[Any, ...]], ...],
        runs: int,
        times: np.ndarray,
        deltas: tuple[float, ...],
        levels: tuple[float, ...],
        eps: float,
        max_n: int,
        max_pairs: int,
        configs: list[str],
        positions: tuple[int, int] | None = None,
    ) -> SweepWriter:
        """Create a new sweep file (which must not exist) with no system done.

        Parameters
        ----------
        path : path
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
        configs : list of str
            Every grid point's configuration (JSON), in flat grid order.
        positions : (n, d), optional
            Store positions of that shape.

        Raises
        ------
        OutputWriteError
            The file could not be written (disk full); it is removed again.
        """
        points = len(configs)
        F, K = len(times), len(deltas)

        def uint(maximum: int) -> np.dtype:
            for dt in (np.uint8, np.uint16, np.uint32):
                if maximum <= np.iinfo(dt).max:
                    return np.dtype(dt)
            return np.dtype(np.uint64)

        def fill(f: h5py.File) -> None:
            params = write_header(f, kind=KIND)
            params.attrs["complete"] = np.int8(0)
            params.attrs["sweep"] = spec_json
            params.attrs["seed"] = str(seed)
            params.attrs["config"] = base_json
            g = f.create_group("sweep")
            g.attrs["format"] = np.int64(FORMAT)
            g.attrs["axes"] = json.dumps([k for k, _ in axes])
            g.attrs["runs"] = np.int64(runs)
            g.attrs["points"] = np.int64(points)
            g.attrs["eps"] = float(eps)
            ax = g.create_group("axes")
            for k, values in axes:
                ax.create_dataset(k, data=_axis_values(values))
            g.create_dataset("time", data=np.asarray(times, dtype=np.float64))
            g.create_dataset("delta", data=np.asarray(deltas, dtype=np.float64))
            g.create_dataset("quantile", data=np.asarray(levels, dtype=np.float64))
            g.create_dataset("clusters", data=np.arange(1, max_n + 1, dtype=np.int64))
            g.create_dataset("configs", data=np.array(configs, dtype=h5py.string_dtype()))
            g.create_dataset("done", shape=(points, runs), dtype=np.uint8,
                             chunks=_chunks((points, runs), 1), fillvalue=0)
            s = g.create_group("systems")
            specs = {
                "pair_counts": ((F, K), uint(max_pairs)),
                "cluster_count": ((F,), uint(max_n)),
                "energy": ((F,), np.dtype(np.float32)),
                "order_parameter": ((F,), np.dtype(np.float32)),
                "formation_time": ((), np.dtype(np.float64)),
                "first_merge_time": ((), np.dtype(np.float64)),
                "single_cluster_time": ((), np.dtype(np.float64)),
            }
            if positions is not None:
                specs["positions"] = ((F, *positions), np.dtype(np.float64))
            for name, (extra, dt) in specs.items():
                shape = (points, runs, *extra)
                s.create_dataset(name, shape=shape, dtype=dt, chunks=_chunks(shape, dt.itemsize))
            g.create_group("stats")

        f, reserve = _create(path, fill)
        return cls(f, reserve, Path(path))

    @classmethod
    def reopen(cls, path: str | Path) -> SweepWriter:
        """Open an existing sweep file to write the systems not done yet.

        Raises
        ------
        SweepError
            Not a sweep file, or another process has it open for writing.
        """
        path = Path(path)
        read_header(path)  # one-line errors for files that are no sweeps
        try:
            f = h5py.File(path, "r+")
        except BlockingIOError:
            raise sweep_error(path, "is open for writing in another process (a sweep still "
                              "going?)") from None
        except OSError as exc:
            raise sweep_error(path, f"cannot be opened for writing ({exc})") from None
        reserve = _Reserve(f)
        try:
            reserve.ensure(f, _RESERVE_MARGIN)
            f["parameters"].attrs["complete"] = np.int8(0)
            f.flush()
        except (OSError, RuntimeError) as exc:
            _close_quietly(f, reserve)
            reason, code = _reason(exc)
            raise OutputWriteError(path, reason, errno=code, kept=path) from None
        return cls(f, reserve, path)

    # ------------------------------------------------------------ writing
    @property
    def file(self) -> h5py.File:
        """The open file."""
        return self._file

    def _guarded(self, nbytes: int, write) -> None:
        try:
            if self._reserve is not None:
                self._reserve.ensure(self._file, nbytes + _RESERVE_MARGIN)
            write()
            self._file.flush()
        except (OSError, RuntimeError) as exc:
            reason, code = _reason(exc)
            raise OutputWriteError(self.path, reason, errno=code, needed=nbytes) from None

    def write(self, point: int, start: int, stop: int, arrays: dict[str, np.ndarray]) -> None:
        """Write the per-system results of systems ``[start, stop)`` of ``point``,
        then mark them done and flush.

        Parameters
        ----------
        arrays : dict of str to ndarray
            Dataset name -> values of shape (stop - start, ...), converted to
            the stored dtype.

        Raises
        ------
        OutputWriteError
            Disk full or another write failure; nothing of this task is marked done.
        """
        g = self._file["sweep/systems"]
        nbytes = sum(g[k].dtype.itemsize * np.asarray(v).size for k, v in arrays.items())

        def write() -> None:
            for k, v in arrays.items():
                g[k][point, start:stop] = np.asarray(v).astype(g[k].dtype, copy=False)
            self._file.flush()  # the data before the flags that say it is there
            self._file["sweep/done"][point, start:stop] = 1

        self._guarded(nbytes, write)
        self.done[point, start:stop] = True

    def write_stats(self, stats: dict[str, tuple[np.ndarray, tuple[str, ...]]]) -> None:
        """Write (or replace) the aggregated statistics: ``name -> (values, dims)``."""
        g = self._file["sweep/stats"]
        nbytes = sum(np.asarray(v).nbytes for v, _ in stats.values())

        def write() -> None:
            for k, (v, dims) in stats.items():
                if k in g:
                    del g[k]
                ds = g.create_dataset(k, data=np.asarray(v))
                ds.attrs["dims"] = json.dumps(list(dims))

        self._guarded(nbytes, write)

    def close(self, *, complete: bool) -> None:
        """Record whether the sweep completed and close the file (idempotent)."""
        if not self._file:
            return
        try:
            if complete:
                self._file["parameters"].attrs["complete"] = np.int8(1)
                self._file.flush()
        except BaseException:
            _close_quietly(self._file, self._reserve)
            raise
        _close_file(self._file, self._reserve)
