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
    "OutputPathError",
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


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C after closing its file cleanly.

    Attributes
    ----------
    path : Path
        The target file.
    summary : RunSummary or None
        What the file holds (incomplete), or None when nothing was kept
        (interrupted before a frame was written, or before a replacement
        started producing frames, in which case an old file is unchanged).
    """

    def __init__(self, path: Path, summary: RunSummary | None) -> None:
        super().__init__(
            f"run interrupted; {path} "
            + (
                f"holds {summary.frames} of {summary.frames_expected} frames"
                if summary
                else "was not written"
            )
        )
        self.path = path
        self.summary = summary


class RunFailed(IntegrationError):
    """The integration failed; the file was closed cleanly and marked incomplete.

    Attributes
    ----------
    path : Path
        The target file.
    summary : RunSummary or None
        What the file holds, or None when nothing was kept (as for
        :class:`RunInterrupted`).
    """

    def __init__(self, message: str, path: Path, summary: RunSummary | None) -> None:
        super().__init__(message)
        self.path = path
        self.summary = summary


class ComparisonInterrupted(KeyboardInterrupt):
    """Ctrl-C (or ``should_stop``) stopped a comparison after closing its file.

    Attributes
    ----------
    kept : Path or None
        The file holding the frames computed so far (marked incomplete), or
        None when nothing was kept (an existing file is never replaced by an
        incomplete comparison).
    """

    def __init__(self, message: str, kept: Path | None) -> None:
        super().__init__(message)
        self.kept = kept


class ComparisonFailed(IntegrationError):
    """A model's integration failed; ``kept`` as for :class:`ComparisonInterrupted`."""

    def __init__(self, message: str, kept: Path | None) -> None:
        super().__init__(message)
        self.kept = kept


class NotComputedError(AttributeError):
    """A result was read before ``compute`` filled it.

    Subclasses ``AttributeError`` so ``hasattr(obj, "labels")`` is False
    before the first ``compute``.
    """
