"""The one session policy: output-path check, temporary file, promotion, stops.

Every session that writes a file (:func:`particles.runs.run_to_file`,
:func:`particles.runs.compare_models`, the PNG of
:func:`particles.runs.compare_kernels`) follows these rules:

* :func:`check_output_path` runs before any work: an existing file is never
  replaced without ``overwrite``, its directory must exist and be writable;
  ``resume`` needs the file.
* A new file is written under a hidden temporary name next to the target
  (``.NAME.XXXXXXXX.partial``, :class:`OutputFile`) and takes the target's
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
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from particles.errors import IntegrationError, OutputPathError, RunFailed, RunInterrupted
from particles.paths import check_output_path

__all__ = ["OutputFile", "check_output_path", "guard", "promote", "stopped"]



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
            f".{self.path.name}.{uuid.uuid4().hex[:8]}{suffix}"
        )
        self.promoted = in_place

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
            return self.path
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
    try:
        frames = close()
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
    except BaseException:
        _close(output, close, keep=keep_on_error)
        raise


def stopped(what: str, how: str, path: Path, kept: Path | None, detail: Any = None) -> str:
    """One line saying what a stopped session left behind."""
    if kept is None:
        return f"{what} {how}; {path} not written (an existing file is unchanged)"
    return f"{what} {how}; {path} " + (detail or "holds the frames so far, marked incomplete")
