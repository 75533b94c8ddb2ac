"""The shared HDF5 layer of every file kind: header, opening, reserving, creating, closing.

Every file this package writes (trajectories :mod:`particles.io.h5md`,
comparisons :mod:`particles.io.compare`, mean-field densities
:mod:`particles.io.density`, sweeps :mod:`particles.io.sweep`) is an HDF5
file with the same header (:func:`write_header`: ``/h5md`` after H5MD 1.1,
``/parameters`` with the schema version, the software versions and the
kind), and is written with the same rules:

* a new file is created whole or not at all (:func:`create_file`: a write
  failure while the header is written removes it again);
* the disk space of every write is reserved before HDF5 writes a byte
  (:class:`Reserve`), so a full disk or a file size limit fails before the
  file changes, and the file keeps everything written before;
* the reserved tail is cut off when the file is closed (:func:`close_file`);
* a file being written by another process is read without its lock, and a
  read that meets a half-written batch is retried (:func:`open_read`,
  :func:`read_retrying`).

The kind-specific layouts and readers live in one module per kind;
:mod:`particles.io.kinds` lists them (``FILE_KINDS``).
"""

from __future__ import annotations

import errno
import getpass
import importlib.metadata
import math
import os
import platform
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import h5py
import numpy as np

from particles.errors import OutputWriteError, TrajectoryFileError
from particles.version import __version__

__all__ = [
    "CHUNK_BYTES",
    "FLUSH_INTERVAL",
    "H5MD_VERSION",
    "RESERVE_MARGIN",
    "RETRIES",
    "RETRY_DELAY",
    "SCHEMA_VERSION",
    "Reserve",
    "appendable",
    "author",
    "check_schema",
    "chunk_frames",
    "close_file",
    "close_quietly",
    "create_file",
    "file_error",
    "file_kind",
    "finite_frames",
    "open_read",
    "partial_owner",
    "read_retrying",
    "reopen_file",
    "software_versions",
    "write_failure",
    "write_header",
    "write_reason",
]

#: version of the ``/parameters`` schema; bumped on any incompatible change.
SCHEMA_VERSION = 1

#: the H5MD specification version written to /h5md.
H5MD_VERSION = (1, 1)

#: frames are written to disk at least this often (seconds of wall time).
FLUSH_INTERVAL = 1.0

#: target size of one HDF5 chunk of a frame dataset (bytes); chunks hold whole frames.
CHUNK_BYTES = 2**16

#: bytes reserved on top of each write's estimated size (HDF5 metadata).
RESERVE_MARGIN = 64 * 2**10

#: errors that mean "no reservation possible here", not "no space".
_NO_FALLOCATE = {errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS, errno.ENOTSUP}

#: reads of a file being written by another process are retried this often.
RETRIES, RETRY_DELAY = 10, 0.05

T = TypeVar("T")


# ---------------------------------------------------------------- header
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
    """The user name recorded in ``/h5md/author`` ("unknown" where there is none)."""
    try:
        return getpass.getuser()
    except Exception:  # no user name in some containers
        return "unknown"


def write_header(f: h5py.File, **attrs: Any) -> h5py.Group:
    """Write ``/h5md`` and ``/parameters`` (schema, software versions, ``attrs``).

    Shared by every file kind; a kind other than a trajectory names itself
    with the ``kind`` attribute.

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


def file_kind(f: h5py.File) -> str | None:
    """The ``/parameters`` attribute ``kind`` of an open file (None when absent, or
    when it is no text: a damaged file, which no kind opens)."""
    params = f.get("parameters")
    if not isinstance(params, h5py.Group):
        return None
    kind = params.attrs.get("kind")
    kind = kind.decode(errors="replace") if isinstance(kind, bytes) else kind
    return kind if isinstance(kind, str) else None


def file_error(path: Path, reason: str) -> TrajectoryFileError:
    """A :class:`~particles.errors.TrajectoryFileError` of one line: ``PATH: reason``."""
    return TrajectoryFileError(f"{path}: {' '.join(str(reason).split())}")


def check_schema(params: h5py.Group, path: Path,
                 error: Callable[[Path, str], Exception] = file_error) -> None:
    """Refuse a file whose ``/parameters`` schema this version cannot read.

    Raises
    ------
    TrajectoryFileError
        (or what ``error`` makes) Missing, invalid or newer ``particles_schema``.
    """
    schema = params.attrs.get("particles_schema")
    if not isinstance(schema, np.integer | int) or schema < 1:
        raise error(path, f"invalid particles_schema {schema!r}")
    if schema > SCHEMA_VERSION:
        raise error(
            path,
            f"written with a newer particles (file schema {int(schema)}, this "
            f"version reads schema {SCHEMA_VERSION}); upgrade particles to read it",
        )


# ---------------------------------------------------------------- reading
def open_read(path: Path, error: Callable[[Path, str], Exception] = file_error,
              what: str = "trajectory") -> tuple[h5py.File, bool]:
    """Open a file of this package read-only, with one-line errors for every failure.

    Parameters
    ----------
    path : Path
    error : callable
        ``error(path, reason)`` makes the exception raised (default: a
        :class:`~particles.errors.TrajectoryFileError`).
    what : str
        What the file should be, for the messages.

    Returns
    -------
    (h5py.File, bool)
        The file and whether it is being written by another process (it was
        opened without the HDF5 lock, so a read may meet a batch half written).
    """
    if not path.exists():
        raise error(path, "no such file")
    if path.is_dir():
        raise error(path, f"is a directory, not a {what} file")
    try:
        if not h5py.is_hdf5(path):
            raise error(path, f"not an HDF5 file (so not a particles {what})")
        return h5py.File(path, "r"), False
    except BlockingIOError:
        pass  # another process holds the write lock: a run in progress
    except OSError as exc:
        raise error(path, f"cannot be opened, truncated or damaged HDF5 file ({exc})") from None
    for _ in range(RETRIES):
        try:
            return h5py.File(path, "r", locking=False), True
        except OSError as exc:  # met the writer between two of its writes
            failure = exc
            time.sleep(RETRY_DELAY)
    raise error(path, f"is being written by another process and could not be read ({failure})")


def read_retrying(path: str | Path, inspect: Callable[[h5py.File, Path], Any],
                  reader: Callable[[h5py.File, Any], T], what: str) -> T:
    """Open ``path``, ``inspect`` it and return ``reader(file, header)``; always closes it.

    A file being written by another process is read without its lock and the
    read is retried a few times if it meets a half-written batch.

    Parameters
    ----------
    path : str or Path
    inspect : callable
        ``inspect(file, path) -> header``: checks the layout (raises
        :class:`~particles.errors.TrajectoryFileError` with one line).
    reader : callable
        ``reader(file, header) -> result``.
    what : str
        The kind, for the message about a damaged file (``"trajectory"``).
    """
    path = Path(path)
    for attempt in range(RETRIES):
        f, concurrent = open_read(path, what=what)
        try:
            with f:
                return reader(f, inspect(f, path))
        except TrajectoryFileError:
            raise
        except (OSError, KeyError, ValueError, TypeError, AttributeError, RuntimeError) as exc:
            if not concurrent or attempt == RETRIES - 1:
                raise file_error(
                    path, f"damaged {what} file ({type(exc).__name__}: {exc})"
                ) from None
            time.sleep(RETRY_DELAY)
    raise AssertionError("unreachable")  # pragma: no cover


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


def finite_frames(frames: np.ndarray, path: Path, what: str, first: int = 0) -> np.ndarray:
    """``frames`` (frame axis first), or a one-line error naming the first frame
    holding NaN or infinity: no writer stores one (a run stops before such a
    frame), so one on disk is damage."""
    if frames.size == 0:
        return frames
    bad = ~np.isfinite(frames.reshape(frames.shape[0], -1)).all(axis=1)
    if bad.any():
        raise file_error(path, f"{what} of frame {first + int(np.argmax(bad))} holds NaN or "
                         "infinity (a damaged file)")
    return frames


# ---------------------------------------------------------------- datasets
def chunk_frames(frame_bytes: int) -> int:
    """Frames per HDF5 chunk of a frame dataset whose frames take ``frame_bytes``."""
    return max(1, min(256, CHUNK_BYTES // max(1, frame_bytes)))


def appendable(group: h5py.Group, name: str, shape: tuple[int, ...], dtype) -> h5py.Dataset:
    """An empty dataset of shape (0, *shape), growing along the frame axis."""
    itemsize = np.dtype(dtype).itemsize
    frames = chunk_frames(itemsize * math.prod(shape))
    return group.create_dataset(
        name, shape=(0, *shape), maxshape=(None, *shape), chunks=(frames, *shape), dtype=dtype
    )


# ---------------------------------------------------------------- writing safely
def write_reason(exc: BaseException) -> tuple[str, int | None]:
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


def write_failure(path: str | Path, exc: BaseException, **kwargs: Any) -> OutputWriteError:
    """The :class:`~particles.errors.OutputWriteError` of a failed write to ``path``
    (reason and errno from :func:`write_reason`; ``kwargs``: its other fields)."""
    reason, code = write_reason(exc)
    return OutputWriteError(Path(path), reason, errno=code, **kwargs)


class Reserve:
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


def close_file(f: h5py.File, reserve: Reserve | None) -> None:
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


def close_quietly(f: h5py.File, reserve: Reserve | None) -> None:
    """Close after a failure; errors HDF5 reports while closing are dropped."""
    try:
        close_file(f, reserve)
    except Exception:  # the failure that got us here is the one to report
        pass


def create_file(path: str | Path, fill: Callable[[h5py.File], Any]) -> tuple[h5py.File, Reserve]:
    """Create a new HDF5 file, reserve room for its header and ``fill(f)`` it.

    Raises
    ------
    FileExistsError
        ``path`` exists.
    OutputWriteError
        A write failure; the new file is removed again.
    """
    path = Path(path)
    try:
        f = h5py.File(path, "x")
    except FileExistsError:
        raise
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise write_failure(path, exc) from None
    reserve = Reserve(f)
    try:
        reserve.ensure(f, RESERVE_MARGIN)
        fill(f)
        f.flush()
    except (OSError, RuntimeError) as exc:
        close_quietly(f, reserve)
        path.unlink(missing_ok=True)
        raise write_failure(path, exc) from None
    except BaseException:
        close_quietly(f, reserve)
        path.unlink(missing_ok=True)
        raise
    return f, reserve


def reopen_file(path: Path, prepare: Callable[[h5py.File], Any], *,
                error: Callable[[Path, str], Exception] = file_error,
                busy: str = "a run still going?") -> tuple[h5py.File, Reserve, Any]:
    """Open an existing file for appending: lock it, reserve room, ``prepare(f)`` it.

    ``prepare`` cuts datasets back to what readers use and marks the file
    incomplete (each kind knows its datasets); its return value is passed on.

    Returns
    -------
    (h5py.File, Reserve, object)
        The open file, its reservation and what ``prepare`` returned.

    Raises
    ------
    TrajectoryFileError
        (or what ``error`` makes) Another process has the file open for
        writing, or it cannot be opened for writing.
    OutputWriteError
        The preparation could not be written (disk full); ``kept`` is ``path``.
    """
    try:
        f = h5py.File(path, "r+")
    except BlockingIOError:
        raise error(path, f"is open for writing in another process ({busy})") from None
    except OSError as exc:
        raise error(path, f"cannot be opened for writing ({exc})") from None
    reserve = Reserve(f)
    try:
        reserve.ensure(f, RESERVE_MARGIN)
        prepared = prepare(f)
        f.flush()
    except (OSError, RuntimeError) as exc:
        close_quietly(f, reserve)
        raise write_failure(path, exc, kept=path) from None
    except BaseException:
        close_quietly(f, reserve)
        raise
    return f, reserve, prepared
