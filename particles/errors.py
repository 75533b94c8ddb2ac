"""Every exception and warning class of the package, in one place.

Errors that a user can cause carry a one-line message (the CLI prints it and
exits with status 2); the classes sit at the bottom of the import order, so
every layer can raise them and callers can catch them without loading any
compiled code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

__all__ = [
    "CacheWarning",
    "ComparisonFailed",
    "ComparisonInterrupted",
    "ConfigError",
    "FiguresNotFoundError",
    "IntegrationError",
    "NotComputedError",
    "OutputExistsError",
    "OutputPathError",
    "OutputReplacedError",
    "OutputWriteError",
    "ResumeMismatch",
    "RunFailed",
    "RunInterrupted",
    "StalePartialWarning",
    "StepSizeWarning",
    "Summary",
    "SweepError",
    "TrajectoryFileError",
    "UnknownFigureError",
    "WorkersLost",
    "invalid",
]


@runtime_checkable
class Summary(Protocol):
    """What a file of any kind holds, as the sessions and their errors report it.

    Every file kind's summary (:class:`particles.io.RunSummary` of a
    trajectory, a density's, a comparison's, a sweep's header) has these;
    the exceptions below carry one of what a stopped session kept.

    Attributes
    ----------
    path : Path
        The file.
    complete : bool
        Whether the file holds everything its session set out to write.
    items, items_expected : int
        What it holds and what the complete file holds, in the kind's unit
        (frames; systems for a sweep).
    """

    path: Path
    complete: bool

    @property
    def items(self) -> int: ...

    @property
    def items_expected(self) -> int: ...

    def describe(self) -> str:
        """What the file holds, for one line: ``"holds 5 of 11 frames (t=0.5)"``."""
        ...


class CacheWarning(UserWarning):
    """A compiled-kernel cache entry could not be used (corrupted or
    unwritable); the kernel is compiled again, with the same results."""


class StepSizeWarning(UserWarning):
    """A fixed step is too large for the speeds the model can reach."""


class IntegrationError(RuntimeError):
    """The integration failed (non-finite state, stalled adaptive step)."""


class ConfigError(ValueError):
    """A configuration value that cannot be used (one-line message).

    Attributes
    ----------
    field : str or None
        The argument it is about (``"usa_scale"``), so a command line can name
        the option that gave it (``--usa-scale``) without reading the message.
    """

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def invalid(field: str, allowed: str, got: object) -> ConfigError:
    """The one form of a refused value: ``"FIELD must be ALLOWED, got GOT"``."""
    return ConfigError(f"{field} must be {allowed}, got {got!r}", field)


class WorkersLost(IntegrationError):
    """Worker processes of a sweep died too often (out of memory, killed): the
    session stops as a failed integration does, its file keeping every finished
    task (``--resume`` continues it once the cause is gone)."""


class TrajectoryFileError(ValueError):
    """A file is not a readable ``particles`` trajectory (the message is one line)."""


class SweepError(ValueError):
    """A sweep that cannot run or be read: a bad grid, an unknown parameter, an
    unreachable scheduler, a sweep file of another sweep (one-line message)."""


class UnknownFigureError(ValueError):
    """A figure name that :data:`particles.gallery.FIGURES` lacks (the message lists
    the known names)."""


class FiguresNotFoundError(FileNotFoundError):
    """The ``figures/`` scripts are not beside the package (an installed wheel) or a
    figure's script is missing (one-line message)."""


class OutputPathError(ValueError):
    """The output path cannot be used: it exists, or its directory is missing or read-only.

    Attributes
    ----------
    path : Path or None
        The output path refused (so a command can name the option that gave it).
    """

    def __init__(self, message: str, path: Path | str | None = None) -> None:
        super().__init__(message)
        self.path = None if path is None else Path(path)


class OutputExistsError(OutputPathError, FileExistsError):
    """The output file exists and replacing it was not asked for (``overwrite``).

    Both an :class:`OutputPathError` and a ``FileExistsError``, so callers of
    the figure writers and of the sessions catch it either way.
    """


class OutputReplacedError(OutputPathError):
    """Another session replaced the target (``overwrite``) while this one was writing it.

    This session lost the race: its frames went with the replaced file.
    """


class StalePartialWarning(UserWarning):
    """A hidden temporary file of a dead run of the same target was found (and removed)."""


def _size(nbytes: float) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes:.0f} {unit}" if unit == "bytes" else f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


class OutputWriteError(OSError):
    """Writing an output file failed (disk full, file size limit, I/O error).

    Detected before the failing write reaches the file where possible (the
    writer reserves the space of each batch first), so the file keeps every
    frame written before and is never marked complete.

    Attributes
    ----------
    path : Path
        The file that could not be written (the target, also while it was
        written under a temporary name).
    reason : str
        What the system said (``"No space left on device"``).
    needed : int or None
        Estimated bytes of free space needed to finish, when known.
    frames : int or None
        Frames on disk when the write failed (None: not a file of frames).
    kept : Path or None
        The file holding the frames written so far (marked incomplete), or None.
    summary : Summary or None
        What ``kept`` holds, when it could be read.
    """

    def __init__(
        self,
        path: Path,
        reason: str,
        *,
        errno: int | None = None,
        needed: int | None = None,
        frames: int | None = 0,
        kept: Path | None = None,
        summary: Summary | None = None,
    ) -> None:
        super().__init__(errno, reason)
        self.frames = frames
        self.path = Path(path)
        self.reason = reason
        self.needed = needed
        self.kept = kept
        self.summary = summary

    def __str__(self) -> str:
        line = f"cannot write {self.path} ({self.reason})"
        s = self.summary
        if s is not None:
            line += f"; it {s.describe()}, marked incomplete"
        elif self.kept is not None:
            line += "; it holds the frames written so far, marked incomplete"
        elif self.frames is not None:
            line += "; nothing was kept (an existing file is unchanged)"
        if self.needed is not None:
            line += f"; about {_size(self.needed)} more free space is needed to finish"
        if self.kept is not None:
            line += ", then continue with --resume"
        return line


class ResumeMismatch(ValueError):
    """The configuration given to resume a file differs from the one stored in it.

    Attributes
    ----------
    differences : dict of str to tuple
        ``field -> (given, stored)`` for each differing field, in field order.
    why : str
        Why these fields cannot change, when more than "a resume continues the
        stored configuration" (a stochastic integrator, save times that move).
    """

    def __init__(self, message: str, differences: dict[str, tuple], why: str = "") -> None:
        super().__init__(message)
        self.differences = differences
        self.why = why


class RunInterrupted(KeyboardInterrupt):
    """A session (run, comparison) stopped by Ctrl-C after closing its file cleanly.

    Attributes
    ----------
    path : Path or None
        The target file.
    kept : Path or None
        The file holding the frames computed so far (marked incomplete), or
        None when nothing was kept (stopped before a frame was written, or
        before a replacement was promoted, in which case an old file is
        unchanged).
    summary : Summary or None
        What ``kept`` holds (None when nothing was kept); its
        ``complete`` is True when the signal came after the last frame.
    signum : int or None
        The signal, when it was held while the file was finished.
    """

    def __init__(
        self,
        path: Path | None,
        summary: Summary | None = None,
        *,
        kept: Path | None = None,
        message: str | None = None,
        signum: int | None = None,
    ) -> None:
        self.signum = signum
        if message is None:
            message = f"run interrupted; {path} " + (
                f"holds {summary.items} of {summary.items_expected} frames"
                if summary
                else "was not written"
            )
        super().__init__(message)
        self.path = path
        self.summary = summary
        self.kept = kept if kept is not None else (path if summary is not None else None)


class RunFailed(IntegrationError):
    """The integration of a session failed; its file was closed cleanly, marked incomplete.

    Attributes
    ----------
    path, kept, summary
        As for :class:`RunInterrupted`.
    """

    def __init__(
        self,
        message: str,
        path: Path | None,
        summary: Summary | None = None,
        *,
        kept: Path | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.summary = summary
        self.kept = kept if kept is not None else (path if summary is not None else None)


class ComparisonInterrupted(RunInterrupted):
    """A :class:`RunInterrupted` of a model comparison (``kept``, ``summary`` as there)."""

    def __init__(self, message: str, kept: Path | None, path: Path | None = None,
                 summary: Summary | None = None) -> None:
        super().__init__(path if path is not None else kept, summary, kept=kept,
                         message=message)


class ComparisonFailed(RunFailed):
    """A :class:`RunFailed` of a model comparison (``kept``, ``summary`` as there)."""

    def __init__(self, message: str, kept: Path | None, path: Path | None = None,
                 summary: Summary | None = None) -> None:
        super().__init__(message, path if path is not None else kept, summary, kept=kept)


class NotComputedError(AttributeError):
    """A result was read before ``compute`` filled it.

    Subclasses ``AttributeError`` so ``hasattr(obj, "labels")`` is False
    before the first ``compute``.
    """
