"""Every exception and warning class of the package, in one place.

Errors that a user can cause carry a one-line message (the CLI prints it and
exits with status 2); the classes sit at the bottom of the import order, so
every layer can raise them and callers can catch them without loading any
compiled code.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from particles.io.h5md import RunSummary

__all__ = [
    "ComparisonFailed",
    "ComparisonInterrupted",
    "IntegrationError",
    "NotComputedError",
    "OutputExistsError",
    "OutputPathError",
    "ResumeMismatch",
    "RunFailed",
    "RunInterrupted",
    "StepSizeWarning",
    "TrajectoryFileError",
]


class StepSizeWarning(UserWarning):
    """A fixed step is too large for the speeds the model can reach."""


class IntegrationError(RuntimeError):
    """The integration failed (non-finite state, stalled adaptive step)."""


class TrajectoryFileError(ValueError):
    """A file is not a readable ``particles`` trajectory (the message is one line)."""


class OutputPathError(ValueError):
    """The output path cannot be used: it exists, or its directory is missing or read-only."""


class OutputExistsError(OutputPathError, FileExistsError):
    """The output file exists and replacing it was not asked for (``overwrite``).

    Both an :class:`OutputPathError` and a ``FileExistsError``, so callers of
    the figure writers and of the sessions catch it either way.
    """


class ResumeMismatch(ValueError):
    """The configuration given to resume a file differs from the one stored in it.

    Attributes
    ----------
    differences : dict of str to tuple
        ``field -> (given, stored)`` for each differing field, in field order.
    """

    def __init__(self, message: str, differences: dict[str, tuple]) -> None:
        super().__init__(message)
        self.differences = differences


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
    summary : RunSummary or None
        What ``kept`` holds, for a single run (None otherwise).
    """

    def __init__(
        self,
        path: Path | None,
        summary: RunSummary | None = None,
        *,
        kept: Path | None = None,
        message: str | None = None,
    ) -> None:
        if message is None:
            message = f"run interrupted; {path} " + (
                f"holds {summary.frames} of {summary.frames_expected} frames"
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
        summary: RunSummary | None = None,
        *,
        kept: Path | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.summary = summary
        self.kept = kept if kept is not None else (path if summary is not None else None)


class ComparisonInterrupted(RunInterrupted):
    """A :class:`RunInterrupted` of a model comparison (``kept`` as there)."""

    def __init__(self, message: str, kept: Path | None, path: Path | None = None) -> None:
        super().__init__(path if path is not None else kept, kept=kept, message=message)


class ComparisonFailed(RunFailed):
    """A :class:`RunFailed` of a model comparison (``kept`` as there)."""

    def __init__(self, message: str, kept: Path | None, path: Path | None = None) -> None:
        super().__init__(message, path if path is not None else kept, kept=kept)


class NotComputedError(AttributeError):
    """A result was read before ``compute`` filled it.

    Subclasses ``AttributeError`` so ``hasattr(obj, "labels")`` is False
    before the first ``compute``.
    """
