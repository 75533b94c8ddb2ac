"""The mean-field session: solve the PDE on the circle and stream the density to a file.

:func:`run_meanfield_to_file` follows the one session policy of
:mod:`particles.runs.session`, as :func:`particles.runs.run_to_file` does
for particles:

* the target is checked before any work (:func:`~particles.runs.session.check_output_path`):
  an existing file is never replaced without ``overwrite``;
* a new file is written under a hidden temporary name and takes the
  target's name once its first solved frame (after t = 0) is on disk;
* Ctrl-C (or ``should_stop``) and a failed solve close the file, marked
  incomplete, holding every frame written so far (it is readable as it is);
* ``resume`` continues an incomplete file from its last frame, bit for bit:
  each frame stores the solver's whole state
  (:class:`~particles.meanfield.SolverState`, see :mod:`particles.io.density`),
  so a solve interrupted and resumed any number of times writes the same
  numbers as one that ran through;
* a full disk stops the solve at once with one-line
  :class:`~particles.errors.OutputWriteError` (``kept``: the file with the
  frames so far), and a file is never marked complete unless it is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from particles.errors import (
    IntegrationError,
    OutputWriteError,
    ResumeMismatch,
    RunFailed,
    RunInterrupted,
    TrajectoryFileError,
)
from particles.io.density import (
    DensitySummary,
    DensityWriter,
    read_density_summary,
    save_times,
)
from particles.io.h5md import FLUSH_INTERVAL
from particles.meanfield import DensityFrame, MeanFieldConfig, solve
from particles.progress import Progress
from particles.runs.session import (
    OutputFile,
    attach_summary,
    check_output_path,
    finish,
    guard,
    read_back,
    remove_stale_partials,
    resume_target,
)

__all__ = [
    "check_meanfield_resume",
    "meanfield_resume_path",
    "run_meanfield_to_file",
    "summary_line",
]


def _has_frames(path: Path) -> bool:
    try:
        return read_density_summary(path).frames > 0
    except TrajectoryFileError:
        return False


def meanfield_resume_path(path: str | Path) -> Path:
    """The file ``resume`` continues: ``path``, or the temporary file of a solve
    killed before its first promotion, adopted under ``path``.

    Raises
    ------
    OutputPathError
        Nothing to resume.
    """
    return resume_target(path, _has_frames)


def check_meanfield_resume(given: MeanFieldConfig, stored: MeanFieldConfig) -> None:
    """Refuse to resume with a configuration other than the stored one.

    Raises
    ------
    ResumeMismatch
        Naming each differing field with the given and the stored value.
    """
    a, b = given.to_dict(), stored.to_dict()
    differences = {k: (a.get(k), b.get(k)) for k in dict.fromkeys([*a, *b])
                   if a.get(k) != b.get(k)}
    if differences:
        diff = ", ".join(f"{k}={g!r} (file: {s!r})" for k, (g, s) in differences.items())
        raise ResumeMismatch(
            f"resume continues the stored configuration; given {diff}", differences
        )


def _estimate(config: MeanFieldConfig, frames: int) -> int:
    """Rough bytes of ``frames`` frames on disk."""
    return frames * 8 * (config.modes + 8) + 2**16


def run_meanfield_to_file(
    config: MeanFieldConfig | None,
    path: str | Path,
    *,
    overwrite: bool = False,
    resume: bool = False,
    progress: bool = False,
    flush_interval: float = FLUSH_INTERVAL,
    should_stop: Callable[[], bool] | None = None,
) -> DensitySummary:
    """Solve the mean-field PDE and stream its frames into a density file.

    Parameters
    ----------
    config : MeanFieldConfig or None
        The solve.  With
        ``resume`` it may be None (the stored configuration is used) and
        otherwise must equal it.
    path : str or Path
        Output file (layout in :mod:`particles.io.density`).
    overwrite : bool
        Replace an existing file, once the new solve has produced frames.
    resume : bool
        Continue the incomplete file ``path`` from its last frame (bit for
        bit); a complete file is left as it is.
    progress : bool
        Progress bar on stderr for solves longer than a second.
    flush_interval : float
        Seconds of wall time between writes to disk.
    should_stop : callable, optional
        Polled after every frame; when it returns True the solve stops as on
        Ctrl-C (:class:`~particles.errors.RunInterrupted`).

    Returns
    -------
    DensitySummary
        What the file holds once the solve completed.

    Raises
    ------
    OutputPathError
        Before any work: a bad target path, nothing to resume.
    ResumeMismatch
        (a ValueError) Before any work: ``config`` differs from the stored one.
    TrajectoryFileError
        ``resume`` of a file that is not a readable density file.
    RunInterrupted
        Ctrl-C or ``should_stop``; the file is closed and marked incomplete
        (``summary``: what it holds; None when no frame was kept).
    RunFailed
        The solve failed (an :class:`~particles.errors.IntegrationError`); the
        file is kept the same way.
    OutputWriteError
        Writing failed (disk full, file size limit): raised at once; ``kept``
        holds every frame written before, marked incomplete.
    """
    if resume and not overwrite:
        path = meanfield_resume_path(path)
    path = check_output_path(path, overwrite=overwrite, resume=resume)
    if resume:
        stored = read_density_summary(path)
        if config is not None:
            check_meanfield_resume(config, stored.config)
        if stored.complete:
            return stored
        config = stored.config
        times = save_times(config)
        if stored.frames > len(times) or stored.time != times[stored.frames - 1]:
            raise TrajectoryFileError(
                f"{path}: stored frame times do not match the configuration; cannot resume"
            )
        state = stored.state()
        try:
            writer = DensityWriter.reopen(path, flush_interval=flush_interval)
        except OutputWriteError as exc:
            exc.needed = _estimate(config, len(times) - stored.frames)
            exc.summary, exc.path = stored, path
            raise
        output = OutputFile(path, overwrite=False, in_place=True)
    else:
        if config is None:
            raise ValueError("config is required unless resume=True")
        state = None
        remove_stale_partials(path)
        output = OutputFile(path, overwrite=overwrite)
        try:
            writer = DensityWriter.create(output.writing, config, flush_interval=flush_interval)
        except OutputWriteError as exc:  # the new file is removed again
            exc.path, exc.needed = path, _estimate(config, len(save_times(config)))
            raise
        except BaseException:
            output.discard()
            raise
        output.claim()
    expected = len(save_times(config))

    def close() -> int:
        # every frame computed (a signal after the last one): the file is complete
        done = writer.failed is None and writer.frames + writer.pending == expected
        writer.close(complete=done)
        return writer.frames

    def interrupted(kept: Path | None) -> RunInterrupted:
        summary = read_density_summary(kept) if kept else None
        return RunInterrupted(path, summary, message=_stopped("interrupted", path, summary))

    def failed(exc: IntegrationError, kept: Path | None) -> RunFailed:
        summary = read_density_summary(kept) if kept else None
        return RunFailed(f"{exc}; " + _stopped("stopped", path, summary), path, summary)

    with Progress(config.T, enabled=progress, label="solving") as bar:

        def on_frame(frame: DensityFrame) -> None:
            wrote = writer.append(frame)
            if writer.frames == 0 and not wrote:
                writer.flush()  # frame 0 on disk at once: resume can continue it
                wrote = True
            if wrote:
                if writer.frames > 1:
                    output.promote()  # the first solved frame is on disk
                output.check_owned()
            bar.update(float(frame.time))
            if (should_stop is not None and writer.frames + writer.pending < expected
                    and should_stop()):
                raise KeyboardInterrupt

        try:
            with guard(output, close, interrupted=interrupted, failed=failed):
                solve(config, state=state, on_frame=on_frame)
                held = finish(output, writer)  # never cut short
        except OutputWriteError as exc:
            attach_summary(exc, read_density_summary)
            raise
    result = read_back(output, read_density_summary,
                       lambda r: _estimate(config, r.frames_expected - r.frames))
    if held:
        raise RunInterrupted(path, result, signum=held[0])
    return result


def _stopped(how: str, path: Path, summary: DensitySummary | None) -> str:
    if summary is None:
        return f"mean-field solve {how}; {path} not written (an existing file is unchanged)"
    return (f"mean-field solve {how}; {path} holds {summary.frames} of "
            f"{summary.frames_expected} frames (t={summary.time:g}), marked incomplete")


def summary_line(s: DensitySummary) -> str:
    """One line: frames, final time, status, mass, energy, minimum density, solver steps."""
    status = "complete" if s.complete else f"incomplete, {s.frames_expected} expected"
    obs = s.final_observables
    parts = [f"mass {obs['mass']:.12g}", f"energy {obs['energy']:.6g}",
             f"min density {obs['min_density']:.3g}",
             f"max density {float(np.max(s.final)):.4g}",
             f"{s.step} steps ({int(obs['rejected_steps'])} rejected)"]
    return f"{s.frames} frames to t={s.time:g} ({status}), " + ", ".join(parts)
