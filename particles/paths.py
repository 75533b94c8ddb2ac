"""The one output-path check: may a file be written here, before any work starts.

Used by every session (:mod:`particles.runs.session`) and every figure writer
(:mod:`particles.plotting`), so a refusal reads and behaves the same everywhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from particles.errors import OutputExistsError, OutputPathError

__all__ = ["check_output_path"]


def check_output_path(
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    resume: bool = False,
    resumable: bool = True,
) -> Path:
    """Check that a session or a figure writer may write ``path``, before any work starts.

    Parameters
    ----------
    path : str or path-like
        Target file.
    overwrite : bool
        Allow replacing an existing file.
    resume : bool
        The file must exist (it is continued in place).
    resumable : bool
        Whether the session can continue an existing file (named in the
        message refusing an existing file).

    Returns
    -------
    Path

    Raises
    ------
    OutputPathError
        With a one-line message saying what is wrong
        (:class:`~particles.errors.OutputExistsError` for an existing file).
    """
    path = Path(path)
    if overwrite and resume:
        raise OutputPathError("overwrite and resume exclude each other")
    if path.is_dir():
        raise OutputPathError(f"{path} is a directory; give a file name")
    if resume:
        if not path.exists():
            raise OutputPathError(f"{path} does not exist; nothing to resume")
        return path
    parent = path.parent
    if not parent.is_dir():
        raise OutputPathError(f"directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"directory {parent} is not writable")
    if path.exists() and not overwrite:
        raise OutputExistsError(
            f"{path} exists; replace it with --overwrite (overwrite=True)"
            + (" or continue it with --resume (resume=True)" if resumable else "")
        )
    return path
