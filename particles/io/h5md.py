"""H5MD 1.1 trajectory files: the layout, a streaming writer and the reader.

Layout (https://www.nongnu.org/h5md/, version 1.1)::

    /h5md                          version = [1, 1]
        author                     name
        creator                    name = "particles", version
    /particles/tokens
        box                        dimension = d, boundary = ["none"] * d
        position
            step    int64   (frames,)
            time    float64 (frames,)
            value   float64 (frames, n, d)            one system
                            (frames, batch, n, d)     ensemble
    /observables/<name>            one element per observable, sampled with the positions
        step, time                 hard links to /particles/tokens/position/{step,time}
        value   float64 (frames,)                     one system
                        (frames, batch)               ensemble
    /parameters                    particles_schema = 1 (int), complete = 0 or 1 (int),
                                   config (JSON of SimulationConfig.to_dict()),
                                   seed (decimal string: resolved seeds are up to 128 bits)
        versions                   particles, numpy, numba, h5py, hdf5, python

A single system (``config.batch`` is None) is plain H5MD: ``value`` has shape
(frames, n, d).  An ensemble of ``batch`` independent systems adds one axis
after the frame axis: ``value[f, b]`` is system ``b`` at frame ``f``, and each
observable is stored as ``(frames, batch)``.  A reader can tell the two apart
by ``value.ndim`` (3 or 4) without parsing the configuration.

Crash safety.  Frames are buffered in memory and written in batches: per
batch the writer extends and fills ``value``, then every observable, then
``time`` and ``step`` last, and calls ``H5Fflush``.  Batches are written at
least every ``flush_interval`` seconds (1 s by default) and when the writer
closes, so a process killed with SIGKILL loses at most the last interval, and
what it leaves opens with any HDF5 reader.  The reader uses the shortest of
the step, time, value and observable lengths, so a kill in the middle of a
batch never yields a partial frame.  (This protects against the process
dying, not against power loss: nothing is fsync'ed.)  ``/parameters``
attribute ``complete`` is set to 1 only once the last frame is written.

The schema is versioned by ``/parameters`` attribute ``particles_schema``;
files of a newer schema are refused rather than misread.
"""

from __future__ import annotations

import getpass
import math
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from particles.config import SimulationConfig
from particles.errors import TrajectoryFileError
from particles.trajectory import Frame

#: version of the layout above; bumped on any incompatible change.
SCHEMA_VERSION = 1

#: the H5MD specification version written to /h5md.
H5MD_VERSION = (1, 1)

#: name of the particle group under /particles.
GROUP = "tokens"

#: frames are written to disk at least this often (seconds of wall time).
FLUSH_INTERVAL = 1.0

#: buffered frames are written early once they hold this many bytes.
_MAX_BUFFER_BYTES = 256 * 2**20

#: target size of one HDF5 chunk (bytes); chunks hold whole frames.
_CHUNK_BYTES = 2**16

_POSITION = f"particles/{GROUP}/position"

#: reads of a file being written by another process are retried this often.
_RETRIES, _RETRY_DELAY = 10, 0.05




@dataclass(frozen=True)
class RunSummary:
    """What a trajectory file holds, read without loading every frame.

    Attributes
    ----------
    path : Path
        The file.
    config : SimulationConfig
        The full resolved configuration stored in the file.
    frames : int
        Number of frames stored.
    frames_expected : int
        Number of frames of the complete run, ``len(config.output_times())``.
    time : float
        Time of the last stored frame.
    step : int
        Step counter of the last stored frame.
    complete : bool
        Whether the run reached its final time.
    observables : tuple of str
        Names of the stored observables.
    final : ndarray, shape (n, d) or (batch, n, d)
        Positions of the last stored frame.
    final_observables : dict of str to float or ndarray of shape (batch,)
        Observables of the last stored frame.
    """

    path: Path
    config: SimulationConfig
    frames: int
    frames_expected: int
    time: float
    step: int
    complete: bool
    observables: tuple[str, ...]
    final: np.ndarray
    final_observables: dict[str, float | np.ndarray]

    def cluster_count(self, eps: float | None = None) -> int | np.ndarray:
        """Clusters of the last frame (:func:`particles.analysis.count_clusters`).

        Returns
        -------
        int, or ndarray of int64 with shape (batch,) for an ensemble
        """
        from particles.analysis import DEFAULT_EPS, count_clusters

        return count_clusters(self.final, DEFAULT_EPS if eps is None else eps)


# ---------------------------------------------------------------- reading
@dataclass(frozen=True)
class _Header:
    """The validated structure of an open trajectory file."""

    config: SimulationConfig
    frames: int
    complete: bool
    observables: tuple[str, ...]


def _fail(path: Path, reason: str) -> TrajectoryFileError:
    return TrajectoryFileError(f"{path}: {' '.join(str(reason).split())}")


def check_schema(params: h5py.Group, path: Path) -> None:
    """Refuse a file whose ``/parameters`` schema this version cannot read.

    Raises
    ------
    TrajectoryFileError
        Missing, invalid or newer ``particles_schema``.
    """
    schema = params.attrs.get("particles_schema")
    if not isinstance(schema, np.integer | int) or schema < 1:
        raise _fail(path, f"invalid particles_schema {schema!r}")
    if schema > SCHEMA_VERSION:
        raise _fail(
            path,
            f"written with a newer particles (file schema {int(schema)}, this "
            f"version reads schema {SCHEMA_VERSION}); upgrade particles to read it",
        )


def _frame_shape(config: SimulationConfig) -> tuple[int, ...]:
    """Shape of one stored frame of positions: (n, d) or (batch, n, d)."""
    n, d = config.n, config.d
    return (n, d) if config.batch is None else (config.batch, n, d)


def _inspect(f: h5py.File, path: Path) -> _Header:
    """Check that ``f`` is a trajectory this version can read; never reads frames."""
    params = f.get("parameters")
    if isinstance(params, h5py.Group) and params.attrs.get("kind") == "comparison":
        # several runs in one file (particles.io.compare): no single trajectory to read
        raise _fail(
            path,
            "is a model comparison file (particles compare), not one run; "
            "read it with particles.compare.load_comparison",
        )
    if (
        "h5md" not in f
        or not isinstance(params, h5py.Group)
        or ("particles_schema" not in params.attrs)
    ):
        raise _fail(path, "not a particles trajectory (no /parameters attribute particles_schema)")
    check_schema(params, path)
    try:
        config = SimulationConfig.from_json(params.attrs["config"])
    except KeyError:
        raise _fail(path, "no /parameters attribute config") from None
    except (ValueError, TypeError) as exc:
        raise _fail(path, f"stored configuration is not valid: {exc}") from None
    pos = f.get(_POSITION)
    if not isinstance(pos, h5py.Group) or any(
        not isinstance(pos.get(k), h5py.Dataset) for k in ("step", "time", "value")
    ):
        raise _fail(path, f"no /{_POSITION}/{{step,time,value}} datasets")
    shape = _frame_shape(config)
    value = pos["value"]
    if value.shape[1:] != shape or pos["step"].ndim != 1 or pos["time"].ndim != 1:
        raise _fail(
            path,
            f"positions of shape {value.shape} do not match the configuration "
            f"(frames, {', '.join(map(str, shape))})",
        )
    lengths = [value.shape[0], pos["step"].shape[0], pos["time"].shape[0]]
    names = []
    obs_shape = () if config.batch is None else (config.batch,)
    observables = f.get("observables", {})
    if not isinstance(observables, h5py.Group | dict):
        raise _fail(path, "/observables is not a group")
    for name, element in observables.items():
        data = element.get("value") if isinstance(element, h5py.Group) else None
        if not isinstance(data, h5py.Dataset) or data.shape[1:] != obs_shape:
            raise _fail(
                path,
                f"observable {name!r} is not a value dataset of shape "
                f"(frames{''.join(f', {s}' for s in obs_shape)})",
            )
        names.append(name)
        lengths.append(data.shape[0])
    frames = min(lengths)
    if frames == 0:
        raise _fail(path, "holds no frames")
    expected = len(config.output_times())
    complete = bool(params.attrs.get("complete", 0)) and frames == expected
    return _Header(config, frames, complete, tuple(names))


def _open_read(path: Path) -> tuple[h5py.File, bool]:
    """Open a trajectory read-only, with one-line errors for every failure.

    Returns the file and whether it is being written by another process (it
    was opened without the HDF5 lock, so a read may meet a batch half written).
    """
    if not path.exists():
        raise _fail(path, "no such file")
    if path.is_dir():
        raise _fail(path, "is a directory, not a trajectory file")
    try:
        if not h5py.is_hdf5(path):
            raise _fail(path, "not an HDF5 file (so not a particles trajectory)")
        return h5py.File(path, "r"), False
    except BlockingIOError:
        pass  # another process holds the write lock: a run in progress
    except OSError as exc:
        raise _fail(path, f"cannot be opened, truncated or damaged HDF5 file ({exc})") from None
    for _ in range(_RETRIES):
        try:
            return h5py.File(path, "r", locking=False), True
        except OSError as exc:  # met the writer between two of its writes
            error = exc
            time.sleep(_RETRY_DELAY)
    raise _fail(path, f"is being written by another process and could not be read ({error})")


def _read(path: str | Path, reader):
    """Open ``path``, inspect it and return ``reader(file, header)``; always closes the file.

    A file being written by another process is read without its lock and the
    read is retried a few times if it meets a half-written batch.
    """
    path = Path(path)
    for attempt in range(_RETRIES):
        f, concurrent = _open_read(path)
        try:
            with f:
                return reader(f, _inspect(f, path))
        except TrajectoryFileError:
            raise
        except (OSError, KeyError, ValueError, TypeError, AttributeError, RuntimeError) as exc:
            if not concurrent or attempt == _RETRIES - 1:
                raise _fail(
                    path, f"damaged trajectory file ({type(exc).__name__}: {exc})"
                ) from None
            time.sleep(_RETRY_DELAY)
    raise AssertionError("unreachable")  # pragma: no cover


def _read_observables(f: h5py.File, names, index) -> dict[str, np.ndarray]:
    return {name: np.asarray(f["observables"][name]["value"][index]) for name in names}


def load(path: str | Path):
    """Read a trajectory file written by :func:`particles.io.run_to_file`.

    Parameters
    ----------
    path : str or Path
        An H5MD file of this package (complete, or left by an interrupted run).

    Returns
    -------
    Trajectory
        ``positions`` of shape (frames, n, d), or (frames, batch, n, d) for an
        ensemble; ``complete`` is False for a run that stopped early.  The file
        is closed before this returns.

    Raises
    ------
    TrajectoryFileError
        The file is missing, not HDF5, not a ``particles`` trajectory,
        truncated or damaged, or written with a newer schema.
    """
    from particles.trajectory import Trajectory

    def reader(f: h5py.File, h: _Header) -> Trajectory:
        pos = f[_POSITION]
        k = h.frames
        return Trajectory(
            times=np.asarray(pos["time"][:k], dtype=np.float64),
            steps=np.asarray(pos["step"][:k], dtype=np.int64),
            positions=np.asarray(pos["value"][:k], dtype=np.float64),
            observables=_read_observables(f, h.observables, slice(0, k)),
            config=h.config,
            complete=h.complete,
        )

    return _read(path, reader)


def read_summary(path: str | Path) -> RunSummary:
    """Describe a trajectory file from its header and last frame.

    Parameters
    ----------
    path : str or Path
        A trajectory file.

    Returns
    -------
    RunSummary

    Raises
    ------
    TrajectoryFileError
        As :func:`load`.
    """

    def reader(f: h5py.File, h: _Header) -> RunSummary:
        pos = f[_POSITION]
        last = h.frames - 1
        final_obs = _read_observables(f, h.observables, last)
        return RunSummary(
            path=Path(path),
            config=h.config,
            frames=h.frames,
            frames_expected=len(h.config.output_times()),
            time=float(pos["time"][last]),
            step=int(pos["step"][last]),
            complete=h.complete,
            observables=h.observables,
            final=np.asarray(pos["value"][last], dtype=np.float64),
            final_observables={k: (v if v.ndim else float(v)) for k, v in final_obs.items()},
        )

    return _read(path, reader)


# ---------------------------------------------------------------- writing
def _versions() -> dict[str, str]:
    import numba

    import particles

    return {
        "particles": particles.__version__,
        "numpy": np.__version__,
        "numba": numba.__version__,
        "h5py": h5py.__version__,
        "hdf5": h5py.version.hdf5_version,
        "python": platform.python_version(),
    }


def _author() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in some containers
        return "unknown"


def _chunk_frames(frame_bytes: int) -> int:
    return max(1, min(256, _CHUNK_BYTES // max(1, frame_bytes)))


def _appendable(group: h5py.Group, name: str, shape: tuple[int, ...], dtype) -> h5py.Dataset:
    """An empty dataset of shape (0, *shape), growing along the frame axis."""
    itemsize = np.dtype(dtype).itemsize
    frames = _chunk_frames(itemsize * math.prod(shape))
    return group.create_dataset(
        name, shape=(0, *shape), maxshape=(None, *shape), chunks=(frames, *shape), dtype=dtype
    )


class TrajectoryWriter:
    """Appends frames to an open trajectory file and flushes them on a timer.

    Use :meth:`create` for a new file or :meth:`reopen` to continue one;
    then :meth:`append` each frame and :meth:`close` once.

    Parameters
    ----------
    file : h5py.File
        A writable file with the layout of this module (observables may be
        missing until the first frame is written).
    config : SimulationConfig
        The configuration stored in it.
    frames : int
        Frames already stored.
    flush_interval : float
        Seconds of wall time between writes to disk.
    """

    def __init__(
        self,
        file: h5py.File,
        config: SimulationConfig,
        *,
        frames: int = 0,
        flush_interval: float = FLUSH_INTERVAL,
    ) -> None:
        self._file = file
        self.config = config
        self.frames = frames
        self.flush_interval = flush_interval
        self._buffer: list[Frame] = []
        self._buffer_bytes = 0
        self._last_flush = time.monotonic()
        self._single = config.batch is None

    # ------------------------------------------------------------ opening
    @classmethod
    def create(
        cls, path: str | Path, config: SimulationConfig, *, flush_interval: float = FLUSH_INTERVAL
    ) -> TrajectoryWriter:
        """Create a new file (which must not exist) holding no frames yet.

        Parameters
        ----------
        path : str or Path
            New file.
        config : SimulationConfig
            Resolved configuration (concrete seed).
        flush_interval : float
            Seconds between writes to disk.
        """
        if config.seed is None:
            raise ValueError("config must be resolved (concrete seed) before it is written")
        f = h5py.File(path, "x")
        try:
            h5md = f.create_group("h5md")
            h5md.attrs["version"] = np.array(H5MD_VERSION, dtype=np.int32)
            h5md.create_group("author").attrs["name"] = _author()
            creator = h5md.create_group("creator")
            versions = _versions()
            creator.attrs["name"] = "particles"
            creator.attrs["version"] = versions["particles"]
            tokens = f.create_group(f"particles/{GROUP}")
            box = tokens.create_group("box")
            box.attrs["dimension"] = np.int32(config.d)
            box.attrs["boundary"] = np.array(["none"] * config.d, dtype=h5py.string_dtype())
            pos = tokens.create_group("position")
            _appendable(pos, "value", _frame_shape(config), np.float64)
            _appendable(pos, "step", (), np.int64)
            _appendable(pos, "time", (), np.float64)
            f.create_group("observables")
            params = f.create_group("parameters")
            params.attrs["particles_schema"] = np.int64(SCHEMA_VERSION)
            params.attrs["complete"] = np.int8(0)
            params.attrs["config"] = config.to_json()
            params.attrs["seed"] = str(config.seed)
            params.create_group("versions").attrs.update(versions)
            f.flush()
        except BaseException:
            f.close()
            raise
        return cls(f, config, flush_interval=flush_interval)

    @classmethod
    def reopen(
        cls, path: str | Path, *, flush_interval: float = FLUSH_INTERVAL
    ) -> TrajectoryWriter:
        """Open an existing trajectory to append frames to it.

        Datasets longer than the shortest one (a kill in the middle of a
        write) are cut back first, and the file is marked incomplete.

        Raises
        ------
        TrajectoryFileError
            As :func:`load`, or when another process has the file open.
        """
        path = Path(path)
        read_summary(path)  # one-line errors for files that are no trajectories
        try:
            f = h5py.File(path, "r+")
        except BlockingIOError:
            raise _fail(
                path, "is open for writing in another process (a run still going?)"
            ) from None
        except OSError as exc:
            raise _fail(path, f"cannot be opened for writing ({exc})") from None
        try:
            header = _inspect(f, path)
            for ds in _frame_datasets(f, header.observables):
                if ds.shape[0] != header.frames:
                    ds.resize(header.frames, axis=0)
            f["parameters"].attrs["complete"] = np.int8(0)
            f.flush()
        except BaseException:
            f.close()
            raise
        return cls(f, header.config, frames=header.frames, flush_interval=flush_interval)

    # ------------------------------------------------------------ writing
    def append(self, frame: Frame) -> bool:
        """Buffer one frame; write the buffer to disk when it is due.

        Returns
        -------
        bool
            True when this call wrote frames to disk.
        """
        self._buffer.append(frame)
        self._buffer_bytes += frame.positions.nbytes
        if (
            time.monotonic() - self._last_flush >= self.flush_interval
            or self._buffer_bytes >= _MAX_BUFFER_BYTES
        ):
            self.flush()
            return True
        return False

    def flush(self) -> None:
        """Write the buffered frames and flush the file.

        Idempotent if interrupted: a repeated call rewrites the same rows.
        """
        frames = self._buffer
        if frames:
            k0, k1 = self.frames, self.frames + len(frames)
            f = self._file
            pos = f[_POSITION]
            obs = f["observables"]
            names = list(frames[0].observables)
            if not len(obs):
                shape = () if self._single else (self.config.batch,)
                for name in names:
                    g = obs.create_group(name)
                    _appendable(g, "value", shape, np.float64)
                    g["step"] = pos["step"]  # hard links: sampled with the positions
                    g["time"] = pos["time"]
            elif set(obs) != set(names):
                raise ValueError(
                    f"observables {sorted(names)} differ from those stored in the "
                    f"file ({sorted(obs)})"
                )
            # value first, time and step last: readers use the shortest length
            x = np.stack([fr.positions for fr in frames])
            self._put(pos["value"], k0, k1, x[:, 0] if self._single else x)
            for name in names:
                v = np.stack([fr.observables[name] for fr in frames])
                self._put(obs[name]["value"], k0, k1, v[:, 0] if self._single else v)
            self._put(pos["time"], k0, k1, np.array([fr.time for fr in frames]))
            self._put(pos["step"], k0, k1, np.array([fr.step for fr in frames], dtype=np.int64))
        self._file.flush()
        self.frames += len(frames)
        self._buffer = []
        self._buffer_bytes = 0
        self._last_flush = time.monotonic()

    @staticmethod
    def _put(ds: h5py.Dataset, k0: int, k1: int, data: np.ndarray) -> None:
        if ds.shape[0] != k1:
            ds.resize(k1, axis=0)
        ds[k0:k1] = data

    @property
    def pending(self) -> int:
        """Frames buffered but not yet on disk."""
        return len(self._buffer)

    def close(self, *, complete: bool) -> None:
        """Write what is buffered, record whether the run completed, close the file."""
        if not self._file:
            return
        try:
            self.flush()
            self._file["parameters"].attrs["complete"] = np.int8(bool(complete))
            self._file.flush()
        finally:
            self._file.close()


def _frame_datasets(f: h5py.File, observables) -> list[h5py.Dataset]:
    pos = f[_POSITION]
    return [
        pos["value"],
        *(f["observables"][n]["value"] for n in observables),
        pos["time"],
        pos["step"],
    ]


__all__ = [
    "FLUSH_INTERVAL",
    "SCHEMA_VERSION",
    "RunSummary",
    "TrajectoryFileError",
    "TrajectoryWriter",
    "load",
    "read_summary",
]
