"""The one session: output-path check, temporary file, promotion, stops, read-back.

:func:`stream` is the only place that knows the loop, the file and the stops
together.  Every session that writes a file of a kind
(:class:`~particles.io.kinds.FileKind`) is its own rules plus one call of it:
:func:`particles.runs.run_to_file` (trajectories),
:func:`particles.runs.meanfield.run_meanfield_to_file` (densities),
:func:`particles.runs.compare_models` (comparisons) and
:func:`particles.sweep.run.run_sweep` (sweeps).  The rules it applies:

* :func:`check_output_path` runs before any work: an existing file is never
  replaced without ``overwrite``, its directory must exist and be writable;
  ``resume`` needs the file (or the temporary file of a session killed
  before its first promotion, adopted under the target's name:
  :func:`resume_target`).
* ``resume`` of a file asks the session's :class:`Resume` rule which spec
  continues it (or that it is complete as it is), then reopens it in place.
* A new file is written under a hidden temporary name next to the target
  (``.NAME.PID@HOST.XXXXXXXX.partial``, :class:`OutputFile`), after the
  stale temporary files of the same target are removed; it takes the
  target's name once :attr:`Stops.promote_at` items are on disk (a run: its
  first integrated frame; a sweep: its first task; a comparison: only when
  complete).  Without ``overwrite`` the rename refuses to replace a file
  that appeared meanwhile.  The first item is flushed at once, so a session
  killed while it compiles leaves a file ``resume`` can continue.
* Ctrl-C (``KeyboardInterrupt``, or ``should_stop`` returning True) and
  :class:`~particles.errors.IntegrationError` close the file (marked
  incomplete) inside :func:`guard`, keep the items written so far when the
  target does not exist (or the file was already promoted), and propagate
  as :class:`~particles.errors.RunInterrupted` /
  :class:`~particles.errors.RunFailed` (or the subclasses a session names,
  :class:`Stops`), whose ``kept`` is the file holding the items, or None.
* A write failure (disk full, file size limit) is detected before the
  batch reaches the file (:mod:`particles.io.hdf5` reserves its space), the
  file is closed with the items written so far (never marked complete) and
  kept as on Ctrl-C; :class:`~particles.errors.OutputWriteError` propagates
  with ``kept`` set, ``path`` naming the target, ``needed`` the free space
  the whole file still needs and ``summary`` what the kept file holds.
* Closing after a stop and finishing a complete file run with SIGINT and
  SIGTERM deferred (:func:`deferred_interrupts`), so a second Ctrl-C cannot
  cut a close short or remove the items; a signal held while the file was
  finished is raised once the finished file is read back.
* An item after which the session pauses (:attr:`Stops.pauses`: a run's
  ``max_wall``) ends it as planned, not as a stop: the file is written,
  takes the target's name (the session produced its items), is closed
  incomplete and :func:`stream` returns its summary (``complete`` False);
  ``resume`` continues it.
* A finished file is read back and never reported complete unless it is.
* A promoted file is checked to still be this session's file
  (:meth:`OutputFile.check_owned`): a session whose file another one
  replaced (both with ``overwrite``) stops with
  :class:`~particles.errors.OutputReplacedError`.
* Temporary files carry the writer's process id and host in their name.  A
  temporary file that no live process writes is stale
  (:func:`stale_partials`): ``resume`` of a target that does not exist
  adopts the newest stale one holding items (:func:`resume_target`), and a
  new session of the same target removes them, each with a
  :class:`~particles.errors.StalePartialWarning`.  Only files written on
  this host can be known to be stale (a process id means nothing on another
  node of a cluster sharing the file system); those of other hosts are
  never removed, and ``resume`` names them.
"""

from __future__ import annotations

import glob
import os
import signal
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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
    Summary,
)
from particles.io.hdf5 import FLUSH_INTERVAL, partial_owner
from particles.io.kinds import FileKind, Writer
from particles.paths import (
    check_output_path,
    host_name,
    put_in_place,
    temporary_path,
    writer_of,
)

__all__ = [
    "OutputFile",
    "Resume",
    "Stops",
    "check_output_path",
    "deferred_interrupts",
    "foreign_partials",
    "guard",
    "host_name",
    "remove_stale_partials",
    "resume_path",
    "resume_target",
    "stale_partials",
    "stopped",
    "stream",
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
        writer = writer_of(p)
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
        writer = writer_of(p)
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
            put_in_place(candidate, path, overwrite=False)
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
        self.temp = None if in_place else temporary_path(self.path, suffix)
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
            put_in_place(self.temp, self.path, overwrite=self.overwrite)
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
                put_in_place(self.temp, self.path, overwrite=False)
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
        if exc.kept is None:  # whatever the kind, the line says nothing was kept
            exc.frames = 0
        raise
    except BaseException:
        _close(output, close, keep=keep_on_error)
        raise


def stopped(what: str, how: str, path: Path, kept: Path | None,
            summary: Summary | None = None, detail: str | None = None) -> str:
    """One line saying what a stopped session left behind.

    ``"sweep interrupted; out.h5 holds 12 of 64 systems, marked incomplete"``,
    or ``"... out.h5 not written (an existing file is unchanged)"`` when
    nothing was kept; ``detail`` replaces what the kept file holds.
    """
    if kept is None:
        return f"{what} {how}; {path} not written (an existing file is unchanged)"
    held = detail or (f"{summary.describe()}, marked incomplete" if summary is not None
                      else "holds the frames so far, marked incomplete")
    return f"{what} {how}; {path} {held}"


# ---------------------------------------------------------------- the session
@dataclass(frozen=True)
class Stops:
    """How one session names its stops and when its file takes the target's name.

    Attributes
    ----------
    what : str
        The session in words, for messages (``"run"``, ``"sweep"``).
    promote_at : int or None
        Items of this session on disk before a new file takes the target's
        name (None: only once complete).
    interrupted : callable
        ``interrupted(path, kept, summary) -> RunInterrupted`` (``kept``: the
        file holding the items, or None; ``summary``: what it holds).
    failed : callable
        ``failed(error, path, kept, summary) -> RunFailed``.
    keep_on_error : bool
        Whether any other exception keeps the items as Ctrl-C does (it
        propagates unchanged either way).
    pauses : callable, optional
        ``pauses(item) -> bool``: whether the session pauses after this item
        (the file kept incomplete, its summary returned).
    """

    what: str
    promote_at: int | None = 2
    interrupted: Callable[[Path, Path | None, Summary | None], RunInterrupted] | None = None
    failed: Callable[[IntegrationError, Path, Path | None, Summary | None], RunFailed] | None = None
    keep_on_error: bool = True
    pauses: Callable[[Any], bool] | None = None

    def interruption(self, path: Path, kept: Path | None, summary: Summary | None,
                     signum: int | None = None) -> RunInterrupted:
        """The exception of a stop by Ctrl-C (``signum``: a signal held while
        the file was finished)."""
        if self.interrupted is not None:
            exc = self.interrupted(path, kept, summary)
        else:
            exc = RunInterrupted(path, summary, kept=kept,
                                 message=stopped(self.what, "interrupted", path, kept, summary))
        exc.signum = signum
        return exc

    def failure(self, exc: IntegrationError, path: Path, kept: Path | None,
                summary: Summary | None) -> RunFailed:
        """The exception of a failed integration."""
        if self.failed is not None:
            return self.failed(exc, path, kept, summary)
        return RunFailed(f"{exc}; " + stopped(self.what, "stopped", path, kept, summary),
                         path, summary, kept=kept)


@dataclass(frozen=True)
class Resume:
    """How one session continues a file.

    Attributes
    ----------
    plan : callable
        ``plan(summary, spec) -> spec or None``: the spec that continues the
        file ``summary`` describes, given the caller's ``spec`` (None: the
        stored one); None when the file is complete as it is.  Raises (a
        :class:`~particles.errors.ResumeMismatch`, say) on a spec that cannot
        continue it.
    replace : callable, optional
        ``replace(summary, spec) -> bool``: whether ``spec`` replaces the
        stored one when the file is reopened (an extended run).
    """

    plan: Callable[[Summary, Any], Any]
    replace: Callable[[Summary, Any], bool] | None = None


def resume_path(kind: FileKind, path: str | os.PathLike) -> Path:
    """The file ``resume`` of a ``kind`` file continues: ``path``, or the newest
    stale temporary file of a session killed before its first promotion that
    holds items, adopted under ``path`` (:func:`resume_target`).

    Raises
    ------
    OutputPathError
        Nothing to resume.
    """

    def readable(candidate: Path) -> bool:
        try:
            return kind.summarize(candidate).items > 0
        except kind.error:
            return False

    return resume_target(path, readable)


@dataclass
class _Opened:
    output: OutputFile
    writer: Writer
    spec: Any
    summary: Summary | None  # what a resumed file held


def _reopen(kind: FileKind, path: Path, spec: Any, resume: Resume,
            summarize: Callable[[Path], Summary], flush_interval: float) -> _Opened | Summary:
    """Reopen ``path`` to continue it, or its summary when it is complete as it is."""
    summary = summarize(path)
    plan = resume.plan(summary, spec)
    if plan is None:
        return summary
    replace = resume.replace is not None and resume.replace(summary, plan)
    try:
        writer = kind.reopen(path, plan if replace else None, flush_interval=flush_interval)
    except OutputWriteError as exc:
        exc.needed = kind.bytes_needed(plan, kind.expected(plan) - summary.items)
        exc.summary, exc.path = summary, path
        raise
    return _Opened(OutputFile(path, overwrite=False, in_place=True), writer, plan, summary)


def _create(kind: FileKind, path: Path, spec: Any, overwrite: bool,
            flush_interval: float) -> _Opened:
    """A new file under a temporary name next to ``path`` (stale ones removed first)."""
    remove_stale_partials(path)
    output = OutputFile(path, overwrite=overwrite)
    try:
        writer = kind.create(output.writing, spec, flush_interval=flush_interval)
    except OutputWriteError as exc:  # the new file is removed again; name the target
        exc.path, exc.needed = path, kind.bytes_needed(spec, kind.expected(spec))
        exc.frames = 0  # nothing was kept, whatever the kind
        raise
    except BaseException:
        output.discard()
        raise
    output.claim()
    return _Opened(output, writer, spec, None)


def _write_all(opened: _Opened, items: Iterable[Any], expected: int, stops: Stops,
               should_stop: Callable[[], bool] | None) -> bool:
    """Append every item; the first flushed at once, the target promoted when due.

    Returns whether the session paused (:attr:`Stops.pauses`).
    """
    writer, output, promote_at = opened.writer, opened.output, stops.promote_at
    for appended, item in enumerate(items, start=1):
        wrote = writer.append(item)
        if writer.frames == 0 and not wrote:
            # the first item on disk at once: a session killed while it compiles
            # leaves a file that resume can continue
            writer.flush()
            wrote = True
        if wrote:
            if promote_at is not None and appended - writer.pending >= promote_at:
                output.promote()
            output.check_owned()
        if stops.pauses is not None and stops.pauses(item):
            writer.flush()
            output.promote()
            return True
        if (should_stop is not None and writer.frames + writer.pending < expected
                and should_stop()):
            raise KeyboardInterrupt
    return False


def stream(
    kind: FileKind,
    path: str | os.PathLike,
    spec: Any,
    items: Callable[[Any, Summary | None], Iterable[Any]],
    *,
    stops: Stops,
    resume: Resume | None = None,
    overwrite: bool = False,
    summarize: Callable[[Path], Summary] | None = None,
    finishing: Callable[[Writer, Any], None] | None = None,
    flush_interval: float = FLUSH_INTERVAL,
    should_stop: Callable[[], bool] | None = None,
    inputs: Iterable[str | os.PathLike] = (),
) -> Summary:
    """Write the items of one session into a file of ``kind``, by the rules above.

    Parameters
    ----------
    kind : FileKind
    path : str or path-like
        The target.
    spec : object
        What the file holds (:meth:`FileKind.create`); with ``resume`` the
        caller's spec to check against the stored one, or None.
    items : callable
        ``items(spec, summary)``: the items to write, from the start
        (``summary`` None) or from the point a resumed file's ``summary``
        describes.  An iterator it returns is closed when the session stops.
    stops : Stops
        The session's messages and promotion point.
    resume : Resume, optional
        Continue the file ``path`` (in place) by this rule.
    overwrite : bool
        Replace an existing target once :attr:`Stops.promote_at` items are on disk.
    summarize : callable, optional
        ``summarize(path) -> Summary`` of what a session reports (default
        ``kind.summarize``).
    finishing : callable, optional
        ``finishing(writer, spec)``, run (signals held) after the last item and
        before the file is marked complete (a sweep's statistics).
    flush_interval : float
        Seconds of wall time between writes to disk.
    should_stop : callable, optional
        Polled after every item; True stops the session as Ctrl-C does.
    inputs : iterable of path-like
        Files the session reads: the target may not be one of them
        (:func:`~particles.paths.check_not_input`).

    Returns
    -------
    Summary
        What the finished file holds, read back (``complete`` True; False
        for a session that paused, :attr:`Stops.pauses`).

    Raises
    ------
    OutputPathError, ValueError
        Before any work: a bad target, nothing to resume, a spec that cannot
        continue the file.
    RunInterrupted, RunFailed, OutputWriteError, OutputReplacedError
        As the module docstring says.
    """
    summarize = summarize or kind.summarize
    path = Path(path)
    if resume is not None and not overwrite:
        path = resume_path(kind, path)
    path = check_output_path(path, overwrite=overwrite, resume=resume is not None,
                             resumable=kind.resumable, inputs=inputs)
    if resume is not None:
        opened = _reopen(kind, path, spec, resume, summarize, flush_interval)
        if not isinstance(opened, _Opened):
            return opened
    else:
        opened = _create(kind, path, spec, overwrite, flush_interval)
    expected = kind.expected(opened.spec)
    needed = lambda done: kind.bytes_needed(opened.spec, expected - done)  # noqa: E731
    held, paused = _run(opened, items, expected, stops, summarize, finishing, should_stop,
                        needed)
    if paused:
        opened.output.check_owned()
        result = summarize(opened.output.path)
    else:
        result = read_back(opened.output, summarize, lambda r: needed(r.items))
    if held:
        raise stops.interruption(path, path, result, signum=held[0])
    return result


def _run(opened: _Opened, items, expected: int, stops: Stops, summarize, finishing,
         should_stop, needed) -> tuple[list[int], bool]:
    """Write every item and finish the file; the signals held while finishing, and
    whether the session paused."""
    output, writer = opened.output, opened.writer

    def close() -> int:
        # every item written (a signal after the last one): the file is complete
        # (not when a finishing step is still to run)
        done = (finishing is None and writer.failed is None
                and writer.frames + writer.pending == expected)
        writer.close(complete=done)
        return writer.frames

    def summary_of(kept: Path | None) -> Summary | None:
        return summarize(kept) if kept is not None else None

    source = None
    try:
        with guard(output, close,
                   interrupted=lambda kept: stops.interruption(output.path, kept,
                                                               summary_of(kept)),
                   failed=lambda exc, kept: stops.failure(exc, output.path, kept,
                                                          summary_of(kept)),
                   keep_on_error=stops.keep_on_error):
            source = items(opened.spec, opened.summary)
            paused = _write_all(opened, source, expected, stops, should_stop)
            with deferred_interrupts() as held:  # finishing is never cut short
                output.check_owned()
                if paused:
                    writer.close(complete=False)
                else:
                    if finishing is not None:
                        finishing(writer, opened.spec)
                    writer.close(complete=True)
                    output.finish()
    except OutputWriteError as exc:
        attach_summary(exc, summarize)
        # what the whole file still needs, not only the write that failed
        exc.needed = needed(exc.summary.items if exc.summary is not None else 0)
        raise
    finally:
        close_items = getattr(source, "close", None)
        if close_items is not None:
            close_items()
    return held, paused


def read_back(output: OutputFile, summarize: Callable[[Path], Summary],
              needed: Callable[[Summary], int]) -> Summary:
    """The summary of the finished file, read back: never report complete what is not.

    ``needed(summary)`` is the bytes still to write, for the error.

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


def attach_summary(exc: OutputWriteError, summarize: Callable[[Path], Summary]) -> None:
    """Give a write error the summary of the file it kept, when that file is readable."""
    if exc.kept is not None and exc.summary is None:
        try:
            exc.summary = summarize(exc.kept)
        except (ValueError, OSError):  # the kind's reader refuses it
            pass
