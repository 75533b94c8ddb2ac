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

Positions kept (``config.positions``, :data:`particles.config.POSITIONS`).
With ``"all"`` (the default) the layout is the one above.  With ``"final"``
or ``"none"`` (large ensembles that need the observables only)::

    /particles/tokens/position
        step, time  (1,)                              the latest flushed frame,
        value       (1, n, d) | (1, batch, n, d)      overwritten at each flush
    /observables/<name>
        step    int64   (frames,)                     the observables' own clock,
        time    float64 (frames,)                     hard links to one pair
        value   (frames,) | (frames, batch)

The one-frame position element is the run's resume point (and, once the run
is complete, its final positions): ``--resume`` and extending ``T`` continue
from it.  Readers of such a file see positions of shape (1, ...) for
``"final"`` and (0, ...) for ``"none"``.  Per batch the writer appends the
observables, then their time and step, then overwrites the resume point;
readers use the frames up to the resume point, so a kill between the two
writes loses the frames after it (a kill in the middle of overwriting the
one frame itself can leave it inconsistent: nothing is written twice).

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

Full disks.  HDF5 reports many write failures only when it frees its
objects, so a failed write can look like a success and leave a damaged
file.  The writer therefore reserves the disk space of each batch first
(``posix_fallocate`` past the end HDF5 knows of, :class:`_Reserve`): when the
file system (or the process's file size limit) cannot hold the batch, the
reservation fails before HDF5 writes a byte, the batch is dropped and
:class:`~particles.errors.OutputWriteError` is raised; the file keeps every
frame written before, marked incomplete, and can be resumed once there is
room.  A failure HDF5 does report is raised the same way.  The reserved
tail is cut off when the file is closed.

The schema is versioned by ``/parameters`` attribute ``particles_schema``;
files of a newer schema are refused rather than misread.
"""

from __future__ import annotations

import errno
import getpass
import importlib.metadata
import json
import math
import os
import platform
import re
import time
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from particles.config import SimulationConfig
from particles.errors import OutputWriteError, TrajectoryFileError
from particles.observables import energy_definition
from particles.trajectory import Frame, Trajectory
from particles.version import __version__

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

#: bytes reserved on top of each batch's estimated size (HDF5 metadata).
_RESERVE_MARGIN = 64 * 2**10

#: errors that mean "no reservation possible here", not "no space".
_NO_FALLOCATE = {errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS, errno.ENOTSUP}

#: value of the ``/parameters`` attribute ``kind`` of a mean-field density file
#: (:mod:`particles.io.density`), which trajectory readers refuse.
DENSITY_KIND = "density"

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


# ---------------------------------------------------------------- reading
@dataclass(frozen=True)
class _Header:
    """The validated structure of an open trajectory file."""

    config: SimulationConfig
    frames: int
    complete: bool
    observables: tuple[str, ...]


def expected_frames(config: SimulationConfig) -> int:
    """``len(config.output_times())`` without building the array of times.

    A file whose configuration claims 10^10 frames is described without
    allocating them.
    """
    if config.save_times is not None:
        return len(config.save_times) + (config.save_times[0] != 0.0)
    interval = config.save_every * config.dt
    k = math.floor(config.T / interval + 1e-9)
    last = interval * float(k)  # the last of interval * arange(k + 1)
    return k + 1 + (config.T - last > 1e-9 * max(1.0, config.T))


def file_error(path: Path, reason: str) -> TrajectoryFileError:
    """A :class:`TrajectoryFileError` of one line: ``PATH: reason``."""
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
        raise file_error(path, f"invalid particles_schema {schema!r}")
    if schema > SCHEMA_VERSION:
        raise file_error(
            path,
            f"written with a newer particles (file schema {int(schema)}, this "
            f"version reads schema {SCHEMA_VERSION}); upgrade particles to read it",
        )


def _frame_shape(config: SimulationConfig) -> tuple[int, ...]:
    """Shape of one stored frame of positions: (n, d) or (batch, n, d)."""
    n, d = config.n, config.d
    return (n, d) if config.batch is None else (config.batch, n, d)


def inspect_group(
    f: h5py.File,
    path: Path,
    config: SimulationConfig,
    group: str,
    observables: str,
    label: str = "",
) -> tuple[int, tuple[str, ...]]:
    """Check one particle group and its observables against ``config``.

    Parameters
    ----------
    f : h5py.File
    path : Path
        For the messages.
    config : SimulationConfig
        The configuration stored for the group.
    group : str
        Name under ``/particles``.
    observables : str
        Path of the group holding its observables (``observables`` or
        ``observables/<group>``).
    label : str
        How the messages name the group (empty for the only one).

    Returns
    -------
    frames : int
        Frames stored (the shortest of the frame datasets; may be 0).
    names : tuple of str
        Names of the stored observables.
    """
    where = f"particles/{group}/position"
    of = f"of {label!r} " if label else ""
    pos = f.get(where)
    if not isinstance(pos, h5py.Group) or any(
        not isinstance(pos.get(k), h5py.Dataset) for k in ("step", "time", "value")
    ):
        raise file_error(path, f"no /{where}/{{step,time,value}} datasets")
    shape = _frame_shape(config)
    value = pos["value"]
    if value.shape[1:] != shape or pos["step"].ndim != 1 or pos["time"].ndim != 1:
        raise file_error(
            path,
            f"positions {of}of shape {value.shape} do not match "
            f"{'its' if label else 'the'} configuration (frames, {', '.join(map(str, shape))})",
        )
    if value.dtype.kind != "f":
        raise file_error(path, f"positions {of}are {value.dtype}, not real floating-point numbers")
    keep_all = config.positions == "all"
    lengths = [value.shape[0], pos["step"].shape[0], pos["time"].shape[0]] if keep_all else []
    names = []
    obs_shape = () if config.batch is None else (config.batch,)
    elements = f.get(observables, {})
    if not isinstance(elements, h5py.Group | dict):
        raise file_error(path, f"/{observables} is not a group")
    for name, element in elements.items():
        data = element.get("value") if isinstance(element, h5py.Group) else None
        if not isinstance(data, h5py.Dataset) or data.shape[1:] != obs_shape:
            shown = f"{label}/{name}" if label else repr(name)
            raise file_error(
                path,
                f"observable {shown} is not a value dataset of shape "
                f"(frames{''.join(f', {s}' for s in obs_shape)})",
            )
        names.append(name)
        lengths.append(data.shape[0])
    if keep_all:
        return min(lengths), tuple(names)
    return _resume_frames(elements, names, lengths, pos), tuple(names)


def _clock(elements, names) -> h5py.Group:
    """The observable element holding the observables' step and time (hard links)."""
    return elements[names[0]]


def _resume_frames(elements, names, lengths, pos) -> int:
    """Frames of a file without every frame's positions: those up to the resume point."""
    if not names or pos["value"].shape[0] < 1 or pos["time"].shape[0] < 1:
        return 0
    clock = _clock(elements, names)
    k = min([*lengths, clock["step"].shape[0], clock["time"].shape[0]])
    hits = np.flatnonzero(np.asarray(clock["time"][:k]) == pos["time"][0])
    return int(hits[-1]) + 1 if hits.size else 0


def _inspect(f: h5py.File, path: Path) -> _Header:
    """Check that ``f`` is a trajectory this version can read; never reads frames."""
    params = f.get("parameters")
    if isinstance(params, h5py.Group) and params.attrs.get("kind") == "comparison":
        # several runs in one file (particles.io.compare): no single trajectory to read
        raise file_error(
            path,
            "is a model comparison file (particles compare), not one run; "
            "read it with particles.compare.load_comparison",
        )
    if isinstance(params, h5py.Group) and params.attrs.get("kind") == DENSITY_KIND:
        # a mean-field density (particles.io.density): no particles to read
        raise file_error(
            path,
            "is a mean-field density file (particles meanfield), not a particle "
            "trajectory; read it with particles.load_density",
        )
    if (
        "h5md" not in f
        or not isinstance(params, h5py.Group)
        or ("particles_schema" not in params.attrs)
    ):
        raise file_error(
            path, "not a particles trajectory (no /parameters attribute particles_schema)"
        )
    check_schema(params, path)
    try:
        config = SimulationConfig.from_json(params.attrs["config"])
    except KeyError:
        raise file_error(path, "no /parameters attribute config") from None
    except (ValueError, TypeError) as exc:
        raise file_error(path, f"stored configuration is not valid: {exc}") from None
    frames, names = inspect_group(f, path, config, GROUP, "observables")
    if frames == 0:
        raise file_error(path, "holds no frames")
    expected = expected_frames(config)
    complete = bool(params.attrs.get("complete", 0)) and frames == expected
    return _Header(config, frames, complete, names)


def open_read(path: Path) -> tuple[h5py.File, bool]:
    """Open a trajectory read-only, with one-line errors for every failure.

    Returns the file and whether it is being written by another process (it
    was opened without the HDF5 lock, so a read may meet a batch half written).
    """
    if not path.exists():
        raise file_error(path, "no such file")
    if path.is_dir():
        raise file_error(path, "is a directory, not a trajectory file")
    try:
        if not h5py.is_hdf5(path):
            raise file_error(path, "not an HDF5 file (so not a particles trajectory)")
        return h5py.File(path, "r"), False
    except BlockingIOError:
        pass  # another process holds the write lock: a run in progress
    except OSError as exc:
        raise file_error(
            path, f"cannot be opened, truncated or damaged HDF5 file ({exc})"
        ) from None
    for _ in range(_RETRIES):
        try:
            return h5py.File(path, "r", locking=False), True
        except OSError as exc:  # met the writer between two of its writes
            error = exc
            time.sleep(_RETRY_DELAY)
    raise file_error(path, f"is being written by another process and could not be read ({error})")


def _read(path: str | Path, reader):
    """Open ``path``, inspect it and return ``reader(file, header)``; always closes the file.

    A file being written by another process is read without its lock and the
    read is retried a few times if it meets a half-written batch.
    """
    path = Path(path)
    for attempt in range(_RETRIES):
        f, concurrent = open_read(path)
        try:
            with f:
                return reader(f, _inspect(f, path))
        except TrajectoryFileError:
            raise
        except (OSError, KeyError, ValueError, TypeError, AttributeError, RuntimeError) as exc:
            if not concurrent or attempt == _RETRIES - 1:
                raise file_error(
                    path, f"damaged trajectory file ({type(exc).__name__}: {exc})"
                ) from None
            time.sleep(_RETRY_DELAY)
    raise AssertionError("unreachable")  # pragma: no cover


def _read_observables(
    f: h5py.File, names, index, group: str = "observables"
) -> dict[str, np.ndarray]:
    return {name: np.asarray(f[group][name]["value"][index]) for name in names}


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
        is closed before this returns.  A run with ``positions="final"``
        holds its last frame only, shape (1, ...); ``"none"`` none, (0, ...).

    Raises
    ------
    TrajectoryFileError
        The file is missing, not HDF5, not a ``particles`` trajectory,
        truncated or damaged, or written with a newer schema.
    """
    def reader(f: h5py.File, h: _Header) -> Trajectory:
        pos = f[_POSITION]
        k = h.frames
        kept = {"all": slice(0, k), "final": slice(0, 1), "none": slice(0, 0)}
        clock = pos if h.config.positions == "all" else _clock(f["observables"], h.observables)
        return Trajectory(
            times=np.asarray(clock["time"][:k], dtype=np.float64),
            steps=np.asarray(clock["step"][:k], dtype=np.int64),
            positions=np.asarray(pos["value"][kept[h.config.positions]], dtype=np.float64),
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
        at = last if h.config.positions == "all" else 0  # else: the resume point
        return RunSummary(
            path=Path(path),
            config=h.config,
            frames=h.frames,
            frames_expected=expected_frames(h.config),
            time=float(pos["time"][at]),
            step=int(pos["step"][at]),
            complete=h.complete,
            observables=h.observables,
            final=np.asarray(pos["value"][at], dtype=np.float64),
            final_observables={k: (v if v.ndim else float(v)) for k, v in final_obs.items()},
        )

    return _read(path, reader)


def partial_owner(path: str | Path) -> bool:
    """Whether a live process holds the HDF5 write lock of ``path``.

    False too for a file that cannot be read as HDF5 at all (killed while it
    was created).
    """
    try:
        f = h5py.File(path, "r")
    except BlockingIOError:
        return True
    except OSError:
        return False
    f.close()
    return False


# ---------------------------------------------------------------- writing
def software_versions() -> dict[str, str]:
    """Versions of the package and of what computes and stores its numbers."""
    # numba's version from its metadata: writing a file never loads the compiler
    return {
        "particles": __version__,
        "numpy": np.__version__,
        "numba": importlib.metadata.version("numba"),
        "h5py": h5py.__version__,
        "hdf5": h5py.version.hdf5_version,
        "python": platform.python_version(),
    }


def author() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in some containers
        return "unknown"


def _chunk_frames(frame_bytes: int) -> int:
    return max(1, min(256, _CHUNK_BYTES // max(1, frame_bytes)))


def appendable(group: h5py.Group, name: str, shape: tuple[int, ...], dtype) -> h5py.Dataset:
    """An empty dataset of shape (0, *shape), growing along the frame axis."""
    itemsize = np.dtype(dtype).itemsize
    frames = _chunk_frames(itemsize * math.prod(shape))
    return group.create_dataset(
        name, shape=(0, *shape), maxshape=(None, *shape), chunks=(frames, *shape), dtype=dtype
    )


def write_header(f: h5py.File, **attrs) -> h5py.Group:
    """Write ``/h5md`` and ``/parameters`` (schema, software versions, ``attrs``).

    Shared by every file kind: a trajectory adds one particle group
    (``tokens``), a comparison one per model (:func:`add_particle_group`).

    Returns
    -------
    h5py.Group
        ``/parameters``.
    """
    h5md = f.create_group("h5md")
    h5md.attrs["version"] = np.array(H5MD_VERSION, dtype=np.int32)
    h5md.create_group("author").attrs["name"] = author()
    versions = software_versions()
    creator = h5md.create_group("creator")
    creator.attrs["name"] = "particles"
    creator.attrs["version"] = versions["particles"]
    params = f.create_group("parameters")
    params.attrs["particles_schema"] = np.int64(SCHEMA_VERSION)
    params.attrs.update(attrs)
    params.create_group("versions").attrs.update(versions)
    return params


def add_particle_group(
    f: h5py.File, name: str, config: SimulationConfig, observables: str
) -> None:
    """Create ``/particles/<name>`` (box, empty position datasets) and its observables group.

    Parameters
    ----------
    f : h5py.File
    name : str
        The particle group.
    config : SimulationConfig
        Its configuration: positions of shape (frames, n, d), or
        (frames, batch, n, d) for an ensemble.
    observables : str
        Path of the group that will hold its observables.
    """
    group = f.require_group("particles").create_group(name)
    box = group.create_group("box")
    box.attrs["dimension"] = np.int32(config.d)
    box.attrs["boundary"] = np.array(["none"] * config.d, dtype=h5py.string_dtype())
    pos = group.create_group("position")
    appendable(pos, "value", _frame_shape(config), np.float64)
    appendable(pos, "step", (), np.int64)
    appendable(pos, "time", (), np.float64)
    f.require_group(observables)


def write_config(params: h5py.Group, config: SimulationConfig) -> None:
    """Record a resolved configuration (JSON, seed as a decimal string), not complete yet."""
    params.attrs["complete"] = np.int8(0)
    params.attrs["config"] = config.to_json()
    params.attrs["seed"] = str(config.seed)


def _reason(exc: BaseException) -> tuple[str, int | None]:
    """What the system said about a failed write, and its errno, from an OSError
    or an h5py error message (``errno = 28, error message = '...'``)."""
    text = str(exc)
    code = getattr(exc, "errno", None)
    if code is None:
        m = re.search(r"errno = (\d+)", text)
        code = int(m.group(1)) if m else None
    m = re.search(r"error message = '([^']*)'", text)
    if m:
        return m.group(1), code
    if code:
        return os.strerror(code), code
    return " ".join(text.split()) or type(exc).__name__, code


class _Reserve:
    """Disk space reserved past the end of an open HDF5 file before each write.

    ``posix_fallocate`` on a second descriptor of the same file allocates
    the blocks HDF5 is about to write, so a full file system (or a file size
    limit) fails here, before HDF5 has changed anything.  Where the system
    has no ``posix_fallocate`` nothing is reserved.

    Parameters
    ----------
    f : h5py.File
        Open for writing, under its current name.
    """

    def __init__(self, f: h5py.File) -> None:
        self.fd: int | None = None
        if hasattr(os, "posix_fallocate"):
            try:
                self.fd = os.open(f.filename, os.O_RDWR)
            except OSError:
                self.fd = None

    def ensure(self, f: h5py.File, nbytes: int) -> None:
        """Make sure ``nbytes`` past the end HDF5 knows of are allocated.

        Raises
        ------
        OSError
            No space (ENOSPC, EDQUOT) or over the file size limit (EFBIG).
        """
        if self.fd is None:
            return
        try:
            os.posix_fallocate(self.fd, 0, f.id.get_filesize() + int(nbytes))
        except OSError as exc:
            if exc.errno in _NO_FALLOCATE:
                self.fd = None  # this file system cannot reserve: write without
                return
            raise

    def close(self, size: int | None) -> None:
        """Cut the file back to ``size`` bytes (the end HDF5 knows of) and release it."""
        if self.fd is None:
            return
        try:
            if size is not None and os.fstat(self.fd).st_size > size:
                os.ftruncate(self.fd, size)
        except OSError:
            pass  # a longer file is still a valid HDF5 file
        finally:
            os.close(self.fd)
            self.fd = None


def _close_file(f: h5py.File, reserve: _Reserve | None) -> None:
    """Close an HDF5 file, then cut off the unused reservation."""
    size = None
    try:
        size = f.id.get_filesize()
    except Exception:  # already broken: keep the whole file
        size = None
    try:
        f.close()
    finally:
        if reserve is not None:
            reserve.close(size)


class GroupWriter:
    """Appends the frames of one particle group and flushes them on a timer.

    The one frame writer of every file kind: a trajectory file has one group
    (:class:`TrajectoryWriter`), a comparison file one per model
    (:meth:`ComparisonWriter.add_model`).

    Parameters
    ----------
    file : h5py.File
        A writable file holding the group (:func:`add_particle_group`).
    config : SimulationConfig
        The group's configuration.
    group : str
        Name under ``/particles``.
    observables : str
        Path of the group's observables.
    parameters : str
        Path of the group whose ``complete`` attribute records the run's end.
    frames : int
        Frames already stored.
    flush_interval : float
        Seconds of wall time between writes to disk.
    frame_group : str, optional
        Path of the element holding the frames' ``step``, ``time`` and
        ``value`` (default ``particles/<group>/position``); one inside
        ``observables`` (a density file's ``observables/density``) is not
        counted among the observables.

    ``config`` needs ``batch``, ``positions`` and ``output_times()`` only (a
    :class:`~particles.config.SimulationConfig`, or the layout of another
    file kind).
    """

    def __init__(
        self,
        file: h5py.File,
        config: SimulationConfig,
        *,
        group: str = GROUP,
        observables: str = "observables",
        parameters: str = "parameters",
        frames: int = 0,
        flush_interval: float = FLUSH_INTERVAL,
        reserve: _Reserve | None = None,
        frame_group: str | None = None,
    ) -> None:
        self._file = file
        self._reserve = reserve if reserve is not None else _Reserve(file)
        self._failed: OutputWriteError | None = None
        self._frame_bytes = 0
        self.config = config
        self.frames = frames
        self.flush_interval = flush_interval
        self._position = frame_group or f"particles/{group}/position"
        self._observables = observables
        self._parameters = parameters
        self._buffer: list[Frame] = []
        self._buffer_bytes = 0
        self._last_flush = time.monotonic()
        self._single = config.batch is None

    def append(self, frame: Frame) -> bool:
        """Buffer one frame; write the buffer to disk when it is due.

        Returns
        -------
        bool
            True when this call wrote frames to disk.
        """
        if self.config.positions != "all" and self._buffer:
            # only the latest positions are written (the resume point)
            self._buffer_bytes -= self._buffer[-1].positions.nbytes
            self._buffer[-1] = _without_positions(self._buffer[-1])
        self._buffer.append(frame)
        self._buffer_bytes += frame.positions.nbytes
        if not self._frame_bytes:
            self._frame_bytes = frame.positions.nbytes + 16 + sum(
                np.asarray(v).nbytes for v in frame.observables.values()
            )
        if (
            time.monotonic() - self._last_flush >= self.flush_interval
            or self._buffer_bytes >= _MAX_BUFFER_BYTES
        ):
            self.flush()
            return True
        return False

    def needed(self) -> int:
        """Estimated bytes of disk space still needed to write the remaining frames."""
        remaining = max(0, len(self.config.output_times()) - self.frames)
        return remaining * max(self._frame_bytes, 1) + _RESERVE_MARGIN

    def _batch_bytes(self, k: int) -> int:
        """An upper bound of the bytes a batch of ``k`` frames adds to the file."""
        rows = [self._frame_bytes - 16, 8, 8] if self._frame_bytes else [0]
        if self._buffer:
            rows = [self._buffer[0].positions.nbytes, 8, 8] + [
                np.asarray(v).nbytes for v in self._buffer[0].observables.values()
            ]
        k0, k1 = self.frames, self.frames + k
        total = _RESERVE_MARGIN
        for row in rows:
            cf = _chunk_frames(row)
            chunks = -(-k1 // cf) - -(-k0 // cf)  # chunks first written by this batch
            total += chunks * (cf * row + 1024)  # whole chunks, index entries
        return total

    def _fail(self, exc: BaseException) -> OutputWriteError:
        """Drop the buffer, remember the failure: no later write is tried."""
        reason, code = _reason(exc)
        self._failed = OutputWriteError(
            Path(self._file.filename), reason, errno=code, needed=self.needed(),
            frames=self.frames,
        )
        self._buffer = []
        self._buffer_bytes = 0
        return self._failed

    @property
    def failed(self) -> OutputWriteError | None:
        """The write failure that stopped this writer, or None."""
        return self._failed

    def flush(self) -> None:
        """Write the buffered frames and flush the file.

        The batch's disk space is reserved first; a write failure raises
        :class:`~particles.errors.OutputWriteError` at once (the buffered
        frames are dropped, the frames written before stay on disk).
        Idempotent if interrupted: a repeated call rewrites the same rows.
        """
        if self._failed is not None:
            raise self._failed
        frames = self._buffer
        k = len(frames)
        while True:  # the longest prefix of the batch the disk can hold
            try:
                self._reserve.ensure(self._file, self._batch_bytes(k) if k else 4096)
                break
            except OSError as exc:
                # without every frame's positions only the whole batch carries the
                # resume point (its last frame), so it is written whole or not at all
                if k <= 1 or self.config.positions != "all":
                    raise self._fail(exc) from None
                k //= 2
        try:
            self._write(frames[:k])
        except (OSError, RuntimeError) as exc:
            raise self._fail(exc) from None
        self.frames += k
        self._buffer = frames[k:]
        self._buffer_bytes = sum(fr.positions.nbytes for fr in self._buffer)
        self._last_flush = time.monotonic()
        if self._buffer:  # the rest does not fit
            self.flush()

    def _write(self, frames: list[Frame]) -> None:
        if frames:
            k0, k1 = self.frames, self.frames + len(frames)
            f = self._file
            pos = f[self._position]
            obs = f[self._observables]
            names = list(frames[0].observables)
            keep_all = self.config.positions == "all"
            stored = [n for n in obs if f"{self._observables}/{n}" != self._position]
            if not stored:
                shape = () if self._single else (self.config.batch,)
                # what the energy measures, unless the default (edp, Q = K = I)
                energy = self._energy_definition()
                clock = pos
                for name in names:
                    g = obs.create_group(name)
                    appendable(g, "value", shape, np.float64)
                    if energy and name in ("energy", "energy_normalized"):
                        g.attrs["definition"] = energy
                    if not keep_all and clock is pos:  # the observables' own clock
                        appendable(g, "step", (), np.int64)
                        appendable(g, "time", (), np.float64)
                        clock = g
                        continue
                    g["step"] = clock["step"]  # hard links: sampled with the positions
                    g["time"] = clock["time"]
            elif set(stored) != set(names):
                raise ValueError(
                    f"observables {sorted(names)} differ from those stored in the "
                    f"file ({sorted(stored)})"
                )
            # value first, time and step last: readers use the shortest length
            if keep_all:
                x = np.stack([fr.positions for fr in frames])
                _put(pos["value"], k0, k1, x[:, 0] if self._single else x)
            for name in names:
                v = np.stack([fr.observables[name] for fr in frames])
                _put(obs[name]["value"], k0, k1, v[:, 0] if self._single else v)
            clock = pos if keep_all else _clock(obs, list(obs))
            _put(clock["time"], k0, k1, np.array([fr.time for fr in frames]))
            _put(clock["step"], k0, k1, np.array([fr.step for fr in frames], dtype=np.int64))
            if not keep_all:  # then the resume point: the latest frame, overwritten
                last = frames[-1]
                _put(pos["value"], 0, 1, last.positions[None, 0] if self._single
                     else last.positions[None])
                _put(pos["time"], 0, 1, np.array([last.time]))
                _put(pos["step"], 0, 1, np.array([last.step], dtype=np.int64))
        self._file.flush()

    def _energy_definition(self) -> str:
        """The ``definition`` attribute of the energy observables ("" for the default)."""
        return energy_definition(self.config).definition

    @property
    def pending(self) -> int:
        """Frames buffered but not yet on disk."""
        return len(self._buffer)

    def finish(self, *, complete: bool) -> None:
        """Write what is buffered and record whether the group's run completed.

        ``complete`` is written last, only once every frame is on disk; after
        a write failure nothing more is written (the flag stays 0).
        """
        if self._failed is not None:
            if complete:
                raise self._failed
            return
        self.flush()
        if complete and self.frames != len(self.config.output_times()):
            raise ValueError(
                f"{self.frames} of {len(self.config.output_times())} frames written; "
                "not marked complete"
            )
        try:
            self._file[self._parameters].attrs["complete"] = np.int8(bool(complete))
            self._file.flush()
        except (OSError, RuntimeError) as exc:
            raise self._fail(exc) from None


def _close_quietly(f: h5py.File, reserve: _Reserve | None) -> None:
    """Close after a failure; errors HDF5 reports while closing are dropped."""
    try:
        _close_file(f, reserve)
    except Exception:  # the failure that got us here is the one to report
        pass


def _create(path: str | Path, fill) -> tuple[h5py.File, _Reserve]:
    """Create a new HDF5 file, reserve room for its header and ``fill(f)`` it.

    A write failure removes the new file and raises
    :class:`~particles.errors.OutputWriteError`.
    """
    path = Path(path)
    try:
        f = h5py.File(path, "x")
    except FileExistsError:
        raise
    except OSError as exc:
        path.unlink(missing_ok=True)
        reason, code = _reason(exc)
        raise OutputWriteError(path, reason, errno=code) from None
    reserve = _Reserve(f)
    try:
        reserve.ensure(f, _RESERVE_MARGIN)
        fill(f)
        f.flush()
    except (OSError, RuntimeError) as exc:
        _close_quietly(f, reserve)
        path.unlink(missing_ok=True)
        reason, code = _reason(exc)
        raise OutputWriteError(path, reason, errno=code) from None
    except BaseException:
        _close_quietly(f, reserve)
        path.unlink(missing_ok=True)
        raise
    return f, reserve


def _without_positions(frame: Frame) -> Frame:
    """A buffered frame whose positions will not be written (kept: shape only)."""
    empty = np.empty((0, *frame.positions.shape[1:]), dtype=frame.positions.dtype)
    return Frame(frame.index, frame.step, frame.time, empty, frame.observables)


def _put(ds: h5py.Dataset, k0: int, k1: int, data: np.ndarray) -> None:
    if ds.shape[0] != k1:
        ds.resize(k1, axis=0)
    ds[k0:k1] = data


class TrajectoryWriter(GroupWriter):
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
        reserve: _Reserve | None = None,
    ) -> None:
        super().__init__(
            file, config, frames=frames, flush_interval=flush_interval, reserve=reserve
        )

    # ------------------------------------------------------------ opening
    @classmethod
    def create(
        cls,
        path: str | Path,
        config: SimulationConfig,
        *,
        flush_interval: float = FLUSH_INTERVAL,
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

        Raises
        ------
        OutputWriteError
            The file could not be written (disk full); it is removed again.
        """
        if config.seed is None:
            raise ValueError("config must be resolved (concrete seed) before it is written")
        f, reserve = _create(path, lambda f: (
            add_particle_group(f, GROUP, config, "observables"),
            write_config(write_header(f), config),
        ))
        return cls(f, config, flush_interval=flush_interval, reserve=reserve)

    @classmethod
    def reopen(
        cls,
        path: str | Path,
        *,
        flush_interval: float = FLUSH_INTERVAL,
        config: SimulationConfig | None = None,
    ) -> TrajectoryWriter:
        """Open an existing trajectory to append frames to it.

        Datasets longer than the shortest one (a kill in the middle of a
        write) are cut back first, and the file is marked incomplete.
        ``config``, when given, replaces the stored configuration (a run
        extended to a longer ``T``; the caller checks that its frames extend
        the stored ones).

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
            raise file_error(
                path, "is open for writing in another process (a run still going?)"
            ) from None
        except OSError as exc:
            raise file_error(path, f"cannot be opened for writing ({exc})") from None
        reserve = _Reserve(f)
        try:
            header = _inspect(f, path)
            reserve.ensure(f, _RESERVE_MARGIN)
            for ds in _frame_datasets(f, header.observables, header.config.positions):
                if ds.shape[0] != header.frames:
                    ds.resize(header.frames, axis=0)
            f["parameters"].attrs["complete"] = np.int8(0)
            if config is not None:
                f["parameters"].attrs["config"] = config.to_json()
            f.flush()
        except (OSError, RuntimeError) as exc:
            _close_quietly(f, reserve)
            reason, code = _reason(exc)
            raise OutputWriteError(path, reason, errno=code, kept=path) from None
        except BaseException:
            _close_quietly(f, reserve)
            raise
        return cls(f, config or header.config, frames=header.frames,
                   flush_interval=flush_interval, reserve=reserve)

    def close(self, *, complete: bool) -> None:
        """Write what is buffered, record whether the run completed, close the file.

        Raises
        ------
        OutputWriteError
            A write failed (now or before, when ``complete``): the file holds
            the frames written before the failure, marked incomplete.
        """
        if not self._file:
            return
        try:
            self.finish(complete=complete)
        except BaseException:
            _close_quietly(self._file, self._reserve)
            raise
        _close_file(self._file, self._reserve)


# ---------------------------------------------------------------- comparison files
#: value of the ``/parameters`` attribute ``kind`` of a comparison file.
KIND = "comparison"


def is_comparison(f: h5py.File) -> bool:
    """Whether an open HDF5 file is a model comparison (``/parameters`` ``kind``)."""
    params = f.get("parameters")
    return isinstance(params, h5py.Group) and params.attrs.get("kind") == KIND


class ModelWriter(GroupWriter):
    """Appends the frames of one model to its groups of a comparison file.

    Made by :meth:`ComparisonWriter.add_model`; :meth:`append` each frame,
    then :meth:`close` once (which leaves the file open).
    """

    def __init__(
        self,
        file: h5py.File,
        config: SimulationConfig,
        *,
        flush_interval: float = FLUSH_INTERVAL,
        reserve: _Reserve | None = None,
    ) -> None:
        m = config.model
        super().__init__(
            file,
            config,
            group=m,
            observables=f"observables/{m}",
            parameters=f"parameters/{m}",
            flush_interval=flush_interval,
            reserve=reserve,
        )
        self.model = m

    def close(self, *, complete: bool) -> None:
        """Write what is buffered and record whether the model's run completed."""
        self.finish(complete=complete)


class ComparisonWriter:
    """Writes a model comparison file: the trajectory header with one group per model.

    Use :meth:`create`, then :meth:`add_model` per model (in order; each
    model's writer is closed before the next starts), then :meth:`close`.

    Parameters
    ----------
    file : h5py.File
        A new file with the top-level groups written by :meth:`create`.
    flush_interval : float
        Seconds of wall time between writes to disk.
    """

    def __init__(
        self,
        file: h5py.File,
        *,
        flush_interval: float = FLUSH_INTERVAL,
        reserve: _Reserve | None = None,
    ) -> None:
        self._file = file
        self._reserve = reserve if reserve is not None else _Reserve(file)
        self.flush_interval = flush_interval
        self.models: list[str] = []
        self._writers: list[ModelWriter] = []

    @classmethod
    def create(
        cls,
        path: str | Path,
        *,
        models: tuple[str, ...],
        seed: int,
        flush_interval: float = FLUSH_INTERVAL,
    ) -> ComparisonWriter:
        """Create a new file (which must not exist) holding no model yet.

        Parameters
        ----------
        path : str or Path
            New file.
        models : tuple of str
            The models that will be run, in order (recorded in ``/parameters``).
        seed : int
            The root seed shared by every model.
        flush_interval : float
            Seconds between writes to disk.
        """
        f, reserve = _create(path, lambda f: (
            write_header(
                f,
                kind=KIND,
                models=json.dumps(list(models)),
                seed=str(seed),
                complete=np.int8(0),
            ),
            f.create_group("particles"),
            f.create_group("observables"),
        ))
        return cls(f, flush_interval=flush_interval, reserve=reserve)

    def add_model(self, config: SimulationConfig) -> ModelWriter:
        """Create the groups of one model and return the writer of its frames.

        Parameters
        ----------
        config : SimulationConfig
            Resolved configuration of one system (``batch=None``); its
            ``model`` names the groups.
        """
        if config.seed is None or config.batch is not None:
            raise ValueError("config must be resolved (concrete seed) and of one system")
        m, f = config.model, self._file
        if m in self.models:
            raise ValueError(f"model {m!r} is already in the file")
        try:
            self._reserve.ensure(f, _RESERVE_MARGIN)
            add_particle_group(f, m, config, f"observables/{m}")
            write_config(f["parameters"].create_group(m), config)
            f.flush()
        except (OSError, RuntimeError) as exc:
            reason, code = _reason(exc)
            raise OutputWriteError(Path(f.filename), reason, errno=code) from None
        self.models.append(m)
        self._writers.append(ModelWriter(f, config, flush_interval=self.flush_interval,
                                         reserve=self._reserve))
        return self._writers[-1]

    @property
    def frames(self) -> int:
        """Frames on disk, summed over the models."""
        return sum(w.frames for w in self._writers)

    def close(self, *, complete: bool) -> None:
        """Record whether every model ran to its end, and close the file."""
        if not self._file:
            return
        if any(w.failed for w in self._writers):
            complete = False
        try:
            if complete or not any(w.failed for w in self._writers):
                self._reserve.ensure(self._file, 4096)
                self._file["parameters"].attrs["complete"] = np.int8(bool(complete))
                self._file.flush()
        except (OSError, RuntimeError) as exc:
            _close_quietly(self._file, self._reserve)
            reason, code = _reason(exc)
            raise OutputWriteError(Path(self._file.filename), reason, errno=code) from None
        except BaseException:
            _close_quietly(self._file, self._reserve)
            raise
        _close_file(self._file, self._reserve)


def _read_model(f: h5py.File, model: str, path: Path) -> Trajectory | None:
    """One model's groups as a Trajectory (None if it holds no frame yet), with the
    checks of a single-run file."""
    params = f["parameters"].get(model)
    if not isinstance(params, h5py.Group) or "config" not in params.attrs:
        raise file_error(path, f"no /parameters/{model} attribute config")
    try:
        config = SimulationConfig.from_json(params.attrs["config"])
    except (ValueError, TypeError) as exc:
        raise file_error(
            path, f"stored configuration of {model!r} is not valid: {exc}"
        ) from None
    if config.batch is not None:
        raise file_error(path, f"model {model!r} is an ensemble; comparisons hold one system")
    k, names = inspect_group(f, path, config, model, f"observables/{model}", label=model)
    if k == 0:  # stopped before its first frame reached the disk
        return None
    pos = f[f"particles/{model}/position"]
    complete = bool(params.attrs.get("complete", 0)) and k == len(config.output_times())
    return Trajectory(
        times=np.asarray(pos["time"][:k], dtype=np.float64),
        steps=np.asarray(pos["step"][:k], dtype=np.int64),
        positions=np.asarray(pos["value"][:k], dtype=np.float64),
        observables=_read_observables(f, names, slice(0, k), f"observables/{model}"),
        config=config,
        complete=complete,
    )


def load_comparison(path: str | Path) -> dict[str, Trajectory]:
    """Read a model comparison file written by :func:`particles.compare.compare_models`.

    Parameters
    ----------
    path : str or Path
        A comparison file (layout in :mod:`particles.io.compare`).

    Returns
    -------
    dict of str to Trajectory
        One trajectory per model in run order, ``positions`` of shape
        (frames, n, d); a model whose run stopped early has ``complete``
        False, and models without a frame on disk are absent.

    Raises
    ------
    TrajectoryFileError
        Missing, not HDF5, damaged, a newer schema, or a single-run
        trajectory (read that with :func:`particles.load`).
    """
    path = Path(path)
    f, _ = open_read(path)
    with f:
        if not is_comparison(f):
            raise file_error(
                path,
                "is not a model comparison file (no /parameters kind = "
                "'comparison'); read single runs with particles.load",
            )
        params = f["parameters"]
        check_schema(params, path)
        try:
            models = json.loads(params.attrs["models"])
        except (KeyError, TypeError, ValueError):
            raise file_error(path, "no valid /parameters attribute models") from None
        try:
            read = {m: _read_model(f, m, path) for m in models if m in f["particles"]}
        except TrajectoryFileError:
            raise
        except (OSError, KeyError, ValueError, TypeError, AttributeError) as exc:
            raise file_error(
                path, f"damaged comparison file ({type(exc).__name__}: {exc})"
            ) from None
    trajectories = {m: t for m, t in read.items() if t is not None}
    if not trajectories:
        raise file_error(path, "holds no frames")
    return trajectories


def _frame_datasets(f: h5py.File, observables, positions: str = "all") -> list[h5py.Dataset]:
    pos = f[_POSITION]
    if positions != "all":  # the one-frame resume point is not a frame dataset
        clock = _clock(f["observables"], observables)
        return [*(f["observables"][n]["value"] for n in observables),
                clock["time"], clock["step"]]
    return [
        pos["value"],
        *(f["observables"][n]["value"] for n in observables),
        pos["time"],
        pos["step"],
    ]


__all__ = [
    "FLUSH_INTERVAL",
    "KIND",
    "SCHEMA_VERSION",
    "ComparisonWriter",
    "GroupWriter",
    "ModelWriter",
    "RunSummary",
    "TrajectoryFileError",
    "TrajectoryWriter",
    "is_comparison",
    "load",
    "load_comparison",
    "partial_owner",
    "read_summary",
]
