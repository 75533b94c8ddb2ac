"""The one session policy: output-path check, temporary file, promotion, stops.

Every session that writes a file (:func:`particles.runs.run_to_file`,
:func:`particles.runs.compare_models`, the PNG of
:func:`particles.runs.compare_kernels`) follows these rules:

* :func:`check_output_path` runs before any work: an existing file is never
  replaced without ``overwrite``, its directory must exist and be writable;
  ``resume`` needs the file.
* A new file is written under a hidden temporary name next to the target
  (``.NAME.PID@HOST.XXXXXXXX.partial``, :class:`OutputFile`) and takes the target's
  name when :meth:`OutputFile.promote` is called (a run: once its first
  integrated frame is on disk; a comparison: once every model ran).  Without
  ``overwrite`` the rename refuses to replace a file that appeared meanwhile.
  A resumed file is written in place.
* Ctrl-C (``KeyboardInterrupt``) and :class:`~particles.errors.IntegrationError`
  close the file (marked incomplete) inside :func:`guard`, keep the frames
  written so far when the target does not exist (or the file was already
  promoted), and propagate as :class:`~particles.errors.RunInterrupted` /
  :class:`~particles.errors.RunFailed` (or the subclasses a session names),
  whose ``kept`` is the file holding the frames, or None.
* A write failure (disk full, file size limit) is detected before the
  batch reaches the file (:mod:`particles.io.h5md` reserves its space), the
  file is closed with the frames written so far (never marked complete) and
  kept as on Ctrl-C; :class:`~particles.errors.OutputWriteError` propagates
  with ``kept`` set and ``path`` naming the target.
* Closing after a stop and finishing a complete file run with SIGINT and
  SIGTERM deferred (:func:`deferred_interrupts`), so a second Ctrl-C cannot
  cut a close short or remove the frames.
* A promoted file is checked to still be this session's file
  (:meth:`OutputFile.check_owned`): a session whose file another one
  replaced (both with ``overwrite``) stops with
  :class:`~particles.errors.OutputReplacedError`.
* Temporary files carry the writer's process id and host in their name
  (``.NAME.PID@HOST.XXXXXXXX.partial``).  A temporary file that no live
  process writes is stale (:func:`stale_partials`): ``resume`` of a
  target that does not exist adopts the newest stale one holding frames
  (:func:`resume_target`), and a new run of the same target removes them,
  each with a :class:`~particles.errors.StalePartialWarning`.  Only files
  written on this host can be known to be stale (a process id means
  nothing on another node of a cluster sharing the file system); those of
  other hosts are never removed, and ``resume`` names them.
"""

from __future__ import annotations

import glob
import os
import re
import signal
import socket
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from particles.errors import (
    IntegrationError,
    OutputPathError,
    OutputReplacedError,
    OutputWriteError,
    RunFailed,
    RunInterrupted,
    StalePartialWarning,
    TrajectoryFileError,
)
from particles.io.h5md import partial_owner
from particles.paths import check_output_path

__all__ = [
    "OutputFile",
    "check_output_path",
    "deferred_interrupts",
    "foreign_partials",
    "guard",
    "promote",
    "remove_stale_partials",
    "resume_target",
    "stale_partials",
    "stopped",
]


@contextmanager
def deferred_interrupts() -> Iterator[list[int]]:
    """Hold SIGINT and SIGTERM until the block ends; yields the signals received.

    For the short steps that must not be cut short (closing a file,
    finishing a complete one).  The caller decides what a received signal
    means afterwards.  Outside the main thread nothing is changed.
    """
    got: list[int] = []

    def record(signum, frame) -> None:
        got.append(signum)

    previous = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, record)
    except ValueError:  # not the main thread
        pass
    try:
        yield got
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True
    return True


#: the writer's process id and host in a temporary file's name.
_WRITER = re.compile(r"\.(\d+)@([A-Za-z0-9-]+)\.[0-9a-f]{8}\.[^.]+$")


def host_name() -> str:
    """This machine's short host name, as temporary file names carry it."""
    name = socket.gethostname().split(".")[0]
    return re.sub(r"[^A-Za-z0-9-]", "-", name) or "localhost"


def writer_tag() -> str:
    """``PID@HOST`` of this process, for temporary file names."""
    return f"{os.getpid()}@{host_name()}"


def _writer(p: Path) -> tuple[int, str] | None:
    m = _WRITER.search(p.name)
    return None if m is None else (int(m.group(1)), m.group(2))


def _partials(path: Path) -> list[Path]:
    """The temporary files of sessions writing ``path`` (newest first)."""
    pattern = f".{glob.escape(path.name)}.*.partial"
    found = [p for p in path.parent.glob(pattern) if p.is_file()]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def stale_partials(path: str | os.PathLike) -> list[tuple[Path, str]]:
    """Temporary files of ``path`` left by sessions that no longer run.

    A temporary file is stale when no process holds its HDF5 write lock and
    the process named in it (``.NAME.PID@HOST.XXXXXXXX.partial``) ran on this
    host and is gone; one that names no process (written by an older
    version) counts as stale once unlocked.  A file written on another host
    is never stale here (see :func:`foreign_partials`).

    Returns
    -------
    list of (Path, str)
        The stale files, newest first, each with a description of its writer.
    """
    path = Path(path)
    stale = []
    for p in _partials(path):
        if partial_owner(p):
            continue
        writer = _writer(p)
        if writer is None:
            stale.append((p, "written by an unknown process"))
        elif writer[1] == host_name() and not _alive(writer[0]):
            stale.append((p, f"written by process {writer[0]}, which has ended"))
    return stale


def foreign_partials(path: str | os.PathLike) -> list[tuple[Path, str]]:
    """Temporary files of ``path`` written on other hosts (newest first), each
    with its writer (``process PID on HOST``): whether they still run cannot
    be known from here."""
    here = host_name()
    out = []
    for p in _partials(Path(path)):
        writer = _writer(p)
        if writer is not None and writer[1] != here:
            out.append((p, f"process {writer[0]} on {writer[1]}"))
    return out


def remove_stale_partials(path: str | os.PathLike, keep: Path | None = None) -> list[Path]:
    """Remove the stale temporary files of ``path`` (but ``keep``), warning for each.

    Returns
    -------
    list of Path
        The removed files.
    """
    removed = []
    for p, who in stale_partials(path):
        if keep is not None and p == keep:
            continue
        try:
            p.unlink()
        except OSError:
            continue
        removed.append(p)
        warnings.warn(
            StalePartialWarning(f"removed {p}, a temporary file of {path} left by a run "
                                f"that did not finish ({who})"),
            stacklevel=2,
        )
    return removed


def resume_target(path: str | os.PathLike, readable: Callable[[Path], bool]) -> Path:
    """The file ``resume`` continues: ``path``, or a stale temporary file of it adopted.

    When ``path`` does not exist (a run killed before its first frame
    was promoted), the newest stale temporary file for which
    ``readable(file)`` is True takes the target's name; the other stale
    ones are removed (:func:`remove_stale_partials`).

    Raises
    ------
    OutputPathError
        Nothing to resume: no file, no usable temporary file, or one still
        being written by a live process.
    """
    path = Path(path)
    if path.exists() or path.is_symlink():
        return check_output_path(path, resume=True)
    stale = [p for p, _ in stale_partials(path)]
    for candidate in stale:
        if readable(candidate):
            promote(candidate, path, overwrite=False)
            remove_stale_partials(path)
            return path
    foreign = foreign_partials(path)
    if foreign:
        p, who = foreign[0]
        raise OutputPathError(
            f"{path} does not exist yet; {p} was written by {who}: if that run has "
            f"ended, rename the file to {path.name} and resume it"
        )
    live = [p for p in _partials(path) if p not in stale]
    if live:
        raise OutputPathError(
            f"{path} does not exist yet; {live[0]} is still being written by a running "
            "process (nothing to resume until it stops)"
        )
    return check_output_path(path, resume=True)  # raises: does not exist



def promote(temp: Path, target: Path, *, overwrite: bool) -> None:
    """Give the temporary file the target's name (never clobbering without overwrite).

    Raises
    ------
    OutputPathError
        ``target`` appeared meanwhile and ``overwrite`` is False.
    """
    if overwrite:
        os.replace(temp, target)
        return
    try:
        os.link(temp, target)  # atomic: fails if the target exists
    except FileExistsError:
        raise OutputPathError(
            f"{target} was created by someone else while this run started; not overwritten"
        ) from None
    except OSError:  # no hard links on this file system
        if target.exists():
            raise OutputPathError(
                f"{target} was created by someone else while this run started; not overwritten"
            ) from None
        os.replace(temp, target)
        return
    os.unlink(temp)


class OutputFile:
    """Where a session writes one output file, and when it takes the target's name.

    Parameters
    ----------
    path : Path
        The target (already checked with :func:`check_output_path`).
    overwrite : bool
        Whether :meth:`promote` may replace an existing target.
    in_place : bool
        Write the target itself (a resumed file): nothing to promote.
    suffix : str
        Ending of the temporary name (``.partial``; keep the extension for
        writers that infer the format from it).
    """

    def __init__(
        self, path: Path, *, overwrite: bool, in_place: bool = False, suffix: str = ".partial"
    ) -> None:
        self.path = Path(path)
        self.overwrite = overwrite
        self.temp = None if in_place else self.path.with_name(
            f".{self.path.name}.{writer_tag()}.{uuid.uuid4().hex[:8]}{suffix}"
        )
        self.promoted = in_place
        self._identity: tuple[int, int] | None = None
        if in_place:
            self.claim()

    def claim(self) -> None:
        """Record which file this session writes (call once it exists)."""
        st = os.stat(self.writing)
        self._identity = (st.st_dev, st.st_ino)

    def owned(self) -> bool:
        """Whether the target is still the file this session promoted (or wrote in place)."""
        if not self.promoted or self._identity is None:
            return True
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._identity

    def check_owned(self) -> None:
        """Raise if another session replaced the promoted target.

        Raises
        ------
        OutputReplacedError
        """
        if not self.owned():
            raise OutputReplacedError(
                f"{self.path} was replaced by another run while this run was writing it; "
                "this run lost the race and its frames went with the replaced file"
            )

    @property
    def writing(self) -> Path:
        """The file the writer writes: the temporary file until promoted."""
        return self.path if self.temp is None or self.promoted else self.temp

    def promote(self) -> None:
        """Give the temporary file the target's name (no-op once promoted)."""
        if not self.promoted:
            promote(self.temp, self.path, overwrite=self.overwrite)
            self.promoted = True

    def finish(self) -> Path:
        """Promote a finished file; the temporary file is removed if that fails."""
        try:
            self.promote()
        except BaseException:
            self.discard()
            raise
        return self.path

    def keep(self, frames: int) -> Path | None:
        """After a stop (writer closed): the file holding the kept frames, or None.

        A promoted file is kept as it is; a temporary one holding frames takes
        the target's name only if no target exists (an existing file is never
        replaced by an incomplete one); otherwise it is removed.
        """
        if self.promoted:
            return self.path if self.owned() else None
        if frames and not self.path.exists():
            try:
                promote(self.temp, self.path, overwrite=False)
                self.promoted = True
                return self.path
            except OutputPathError:  # someone else created it meanwhile
                pass
        self.discard()
        return None

    def discard(self) -> None:
        """Remove the temporary file (never the target)."""
        if self.temp is not None and not self.promoted:
            self.temp.unlink(missing_ok=True)


def _close(output: OutputFile, close: Callable[[], int], *, keep: bool) -> Path | None:
    with deferred_interrupts():  # a second Ctrl-C must not cut the close short
        try:
            frames = close()
        except OutputWriteError as exc:
            if exc.kept is None:  # closing could not write: keep what is on disk
                exc.kept = output.keep(exc.frames)
            raise
        except BaseException:
            output.discard()
            raise
    if not keep:
        if not output.promoted:
            output.discard()
            return None
        return output.path
    return output.keep(frames)


@contextmanager
def guard(
    output: OutputFile,
    close: Callable[[], int],
    *,
    interrupted: Callable[[Path | None], RunInterrupted],
    failed: Callable[[IntegrationError, Path | None], RunFailed],
    keep_on_error: bool = True,
) -> Iterator[None]:
    """Close the file cleanly when the body stops, and raise one exception per situation.

    Parameters
    ----------
    output : OutputFile
    close : callable
        Closes the writer (marking the file incomplete); returns the frames on disk.
    interrupted : callable
        ``interrupted(kept)``: the :class:`~particles.errors.RunInterrupted`
        to raise on Ctrl-C (``kept``: the file holding the frames, or None).
    failed : callable
        ``failed(error, kept)``: the :class:`~particles.errors.RunFailed` to
        raise when the integration failed.
    keep_on_error : bool
        Whether any other exception keeps the frames as Ctrl-C does (it
        propagates unchanged either way).
    """
    try:
        yield
    except KeyboardInterrupt:
        raise interrupted(_close(output, close, keep=True)) from None
    except IntegrationError as exc:
        raise failed(exc, _close(output, close, keep=True)) from exc
    except OutputWriteError as exc:
        exc.kept = _close(output, close, keep=True)
        exc.path = output.path
        raise
    except BaseException:
        _close(output, close, keep=keep_on_error)
        raise


def stopped(what: str, how: str, path: Path, kept: Path | None, detail: Any = None) -> str:
    """One line saying what a stopped session left behind."""
    if kept is None:
        return f"{what} {how}; {path} not written (an existing file is unchanged)"
    return f"{what} {how}; {path} " + (detail or "holds the frames so far, marked incomplete")


def finish(output: OutputFile, writer: Any) -> list[int]:
    """Close ``writer`` complete and promote ``output``, never cut short by a signal.

    Returns the signals that arrived meanwhile (the caller raises
    :class:`RunInterrupted` for them once the file is read back).
    """
    with deferred_interrupts() as held:
        output.check_owned()
        writer.close(complete=True)
        output.finish()
    return held


def read_back(output: OutputFile, summarize: Callable[[Path], Any],
              needed: Callable[[Any], int]) -> Any:
    """The summary of the finished file, read back: never report complete what is not.

    ``summarize`` is the file kind's reader (``path -> summary`` with ``complete``);
    ``needed(summary)`` the bytes still to write, for the error.

    Raises
    ------
    OutputWriteError
        The file read back is not complete.
    """
    output.check_owned()
    result = summarize(output.path)
    if not result.complete:
        raise OutputWriteError(output.path, "the file read back is not complete",
                               kept=output.path, summary=result, needed=needed(result))
    return result

def attach_summary(exc: OutputWriteError, summarize: Callable[[Path], Any]) -> None:
    """Give a write error the summary of the file it kept, when that file is readable."""
    if exc.kept is not None and exc.summary is None:
        try:
            exc.summary = summarize(exc.kept)
        except TrajectoryFileError:
            pass
