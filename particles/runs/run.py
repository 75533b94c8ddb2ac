"""Run a configuration straight into a trajectory file, safely.

:func:`run_to_file` streams the frames of :func:`particles.engine.iter_frames`
into an H5MD file (:mod:`particles.io.h5md`) with these guarantees:

* An existing file is never overwritten without ``overwrite=True``, and the
  check happens before any work.
* A new run writes to a hidden temporary file next to the target
  (``.NAME.XXXXXXXX.partial``), which takes the target's name once its first
  integrated frame (frame 1) is on disk, or when the run ends.  So with
  ``overwrite=True`` the old file is replaced only once the new run has
  actually produced frames; a run that fails or is interrupted before that
  leaves the old file untouched.  (Without ``overwrite`` the rename refuses
  to replace a file that appeared meanwhile.)  A run killed before that
  point leaves the temporary file behind.
* Frames reach the disk at least every ``flush_interval`` seconds, so a
  killed run leaves a readable file of every frame written so far.
* Ctrl-C (``KeyboardInterrupt``) and :class:`~particles.errors.IntegrationError`
  close the file cleanly, marked incomplete, then propagate (Ctrl-C as
  :class:`RunInterrupted`, which carries the summary of what was kept).
* ``resume=True`` continues an incomplete file in place from its last frame;
  the result is bit-identical to an uninterrupted run.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np

from particles.config import SimulationConfig
from particles.engine import initial_positions, iter_frames
from particles.errors import IntegrationError, OutputPathError, RunFailed, RunInterrupted
from particles.io.h5md import (
    FLUSH_INTERVAL,
    RunSummary,
    TrajectoryFileError,
    TrajectoryWriter,
    read_summary,
)
from particles.progress import Progress


def check_output_path(path: str | Path, *, overwrite: bool = False, resume: bool = False) -> Path:
    """Check that a run may write ``path``, before any work starts.

    Parameters
    ----------
    path : str or Path
        Target trajectory file.
    overwrite : bool
        Allow replacing an existing file.
    resume : bool
        The file must exist (it is continued in place).

    Returns
    -------
    Path

    Raises
    ------
    OutputPathError
        With a one-line message saying what is wrong.
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
        raise OutputPathError(
            f"{path} exists; replace it with --overwrite (overwrite=True) "
            "or continue it with --resume (resume=True)"
        )
    return path


def _promote(temp: Path, target: Path, *, overwrite: bool) -> None:
    """Give the temporary file the target's name (never clobbering without overwrite)."""
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


def _same_config(given: SimulationConfig, stored: SimulationConfig) -> None:
    if given.seed is None:
        given = given.replace(seed=stored.seed)
    if given != stored:
        a, b = given.to_dict(), stored.to_dict()
        diff = ", ".join(f"{k}={a[k]!r} (file: {b[k]!r})" for k in a if a[k] != b[k])
        raise ValueError(f"resume continues the stored configuration; given {diff}")


def run_to_file(
    config: SimulationConfig | None,
    path: str | Path,
    *,
    x0: np.ndarray | None = None,
    overwrite: bool = False,
    resume: bool = False,
    progress: bool = False,
    flush_interval: float = FLUSH_INTERVAL,
    should_stop: Callable[[], bool] | None = None,
) -> RunSummary:
    """Run a configuration and stream its frames into an H5MD trajectory file.

    Parameters
    ----------
    config : SimulationConfig or None
        The run; an unset seed is resolved first.  With ``resume`` it may be
        None (the stored configuration is used) and otherwise must equal it.
    path : str or Path
        Output file (see the module docstring for the replacement rules).
    x0 : ndarray, shape (n, d) or (batch, n, d), optional
        Initial positions (recorded as ``init="array"``).
    overwrite : bool
        Replace an existing file, once the new run has produced frames.
    resume : bool
        Continue the incomplete file ``path`` from its last frame; a complete
        file is left as it is.
    progress : bool
        Progress bar on stderr for runs longer than a second.
    flush_interval : float
        Seconds of wall time between writes to disk.
    should_stop : callable, optional
        Polled after every frame; when it returns True the run stops as on
        Ctrl-C (:class:`RunInterrupted`).  A signal handler that records the
        request here still stops the run when its ``KeyboardInterrupt`` is
        lost: one raised while Numba compiles can be swallowed by a ctypes
        callback inside llvmlite.

    Returns
    -------
    RunSummary
        What the file holds once the run completed.

    Raises
    ------
    OutputPathError, ValueError
        Before any work: a bad target path, a bad ``x0``, a configuration
        that differs from the one stored for ``resume``.
    TrajectoryFileError
        ``resume`` of a file that is not a readable trajectory.
    RunInterrupted
        Ctrl-C; the file is closed and marked incomplete (if any frame was kept).
    RunFailed
        The integration failed (an :class:`~particles.errors.IntegrationError`);
        the file is kept the same way.
    """
    path = check_output_path(path, overwrite=overwrite, resume=resume)
    if resume:
        if x0 is not None:
            raise ValueError("x0 cannot be given with resume (the file holds the positions)")
        state = read_summary(path)
        if config is not None:
            _same_config(config, state.config)
        if state.complete:
            return state
        config = state.config
        times = config.output_times()
        if state.frames > len(times) or state.time != times[state.frames - 1]:
            raise TrajectoryFileError(
                f"{path}: stored frame times do not match the configuration; cannot resume"
            )
        writer = TrajectoryWriter.reopen(path, flush_interval=flush_interval)
        X = state.final.reshape(config.batch or 1, config.n, config.d)
        start, start_step, first = state.frames - 1, state.step, state.frames
        counts = None
        if "accepted_steps" in state.final_observables:
            # adaptive step statistics continue from the last frame
            counts = np.stack([np.atleast_1d(state.final_observables[k])
                               for k in ("accepted_steps", "rejected_steps")], axis=-1)
        temp = None
    else:
        if config is None:
            raise ValueError("config is required unless resume=True")
        if x0 is not None and config.init != "array":
            config = config.replace(init="array")
        config = config.resolved()
        X = initial_positions(config, x0)
        start, start_step, first, counts = 0, 0, 0, None
        temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.partial")
        writer = TrajectoryWriter.create(temp, config, flush_interval=flush_interval)
    promoted = temp is None

    def close_incomplete() -> Path | None:
        """Close after a failure; return the file holding the kept frames, if any."""
        try:
            writer.close(complete=False)
        except BaseException:
            if not promoted:
                temp.unlink(missing_ok=True)
            raise
        if promoted:
            return path
        if writer.frames and not path.exists():
            _promote(temp, path, overwrite=False)
            return path
        temp.unlink(missing_ok=True)  # an old file stays as it was
        return None

    try:
        with Progress(config.T, enabled=progress) as bar:
            for frame in iter_frames(
                config, X, start=start, start_step=start_step, step_counts=counts,
                progress=bar.update,
            ):
                if frame.index < first:  # resuming from frame 0 yields it again
                    continue
                if writer.append(frame) and not promoted and writer.frames > 1:
                    _promote(temp, path, overwrite=overwrite)
                    promoted = True
                if should_stop is not None and should_stop():
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        kept = close_incomplete()
        raise RunInterrupted(path, read_summary(kept) if kept else None) from None
    except IntegrationError as exc:
        kept = close_incomplete()
        raise RunFailed(str(exc), path, read_summary(kept) if kept else None) from exc
    except BaseException:
        close_incomplete()
        raise
    writer.close(complete=True)
    if not promoted:
        _promote(temp, path, overwrite=overwrite)
    return read_summary(path)
