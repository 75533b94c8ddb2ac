"""The mean-field session: solve the PDE (on the circle, on S^2 or axisymmetric on S^{d-1})
and stream the density to a file.

:func:`run_meanfield_to_file` is its rules (:data:`RESUME`, :data:`STOPS`)
plus one call of the session driver :func:`particles.runs.session.stream`,
as :func:`particles.runs.run_to_file` is for particles:

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

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np

from particles.display import time_text
from particles.errors import ResumeMismatch, TrajectoryFileError
from particles.io.density import DENSITY, DensitySummary, save_times
from particles.io.hdf5 import FLUSH_INTERVAL
from particles.meanfield import MeanFieldConfig, solve_frames
from particles.meanfield.initial import parse_init
from particles.meanfield.sphere_config import SphereFieldConfig, parse_sphere_init
from particles.meanfield.sphere_solver import solve_sphere_frames
from particles.progress import Progress
from particles.runs.initial import particles_density, particles_spec, sphere_particles_density
from particles.runs.session import Resume, Stops, stream
from particles.runs.session import resume_path as resume_kind

__all__ = [
    "check_meanfield_resume",
    "meanfield_resume_path",
    "run_meanfield_to_file",
    "summary_line",
]


def meanfield_resume_path(path: str | Path) -> Path:
    """The file ``resume`` continues: ``path``, or the temporary file of a solve
    killed before its first promotion, adopted under ``path``.

    Raises
    ------
    OutputPathError
        Nothing to resume.
    """
    return resume_kind(DENSITY, path)


def check_meanfield_resume(given: MeanFieldConfig | SphereFieldConfig,
                           stored: MeanFieldConfig | SphereFieldConfig) -> None:
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


def run_meanfield_to_file(
    config: MeanFieldConfig | SphereFieldConfig | None,
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
    config : MeanFieldConfig, SphereFieldConfig or None
        The solve (on the circle, or on the sphere).  With
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
    if not resume and config is None:
        raise ValueError("config is required unless resume=True")
    rho0 = None
    sphere = isinstance(config, SphereFieldConfig)
    name, params = _init_of(config)
    if name == "particles":
        # the file records the bandwidth used (and the original command resumes);
        # a new solve reads the tokens before any work
        config = dataclasses.replace(config, init=particles_spec(
            config.init, config.lmax if sphere else config.modes, sphere=sphere))
        if not resume:
            rho0 = (sphere_particles_density(config) if sphere
                    else particles_density(config.init, int(config.modes)))[0]

    def frames(config: MeanFieldConfig | SphereFieldConfig, stored: DensitySummary | None):
        if isinstance(config, SphereFieldConfig):
            start = rho0
            if stored is None and start is None and _init_of(config)[0] == "particles":
                start = sphere_particles_density(config)[0]  # adopted: frame 0 lost
            with Progress(config.T, enabled=progress, label="solving") as bar:
                for frame in solve_sphere_frames(
                        config, state=None if stored is None else stored.state(), rho0=start):
                    bar.update(float(frame.time))
                    yield frame
            return
        start = rho0
        if stored is None and start is None and parse_init(config.init)[0] == "particles":
            start = particles_density(config.init, int(config.modes))[0]  # adopted: frame 0 lost
        with Progress(config.T, enabled=progress, label="solving") as bar:
            for frame in solve_frames(config, state=None if stored is None else stored.state(),
                                      rho0=start):
                bar.update(float(frame.time))
                yield frame

    return stream(DENSITY, path, config, frames, stops=STOPS,
                  resume=RESUME if resume else None, overwrite=overwrite,
                  flush_interval=flush_interval, should_stop=should_stop,
                  inputs=[params["file"]] if name == "particles" else [])


def _init_of(config: MeanFieldConfig | SphereFieldConfig | None) -> tuple[str | None, dict]:
    """The name and parameters of a solve's ``init`` (None for a resume without one)."""
    if config is None:
        return None, {}
    if isinstance(config, SphereFieldConfig):
        return parse_sphere_init(config.init, int(config.lmax), config.axisymmetric)
    return parse_init(config.init)


def _plan(stored: DensitySummary, given: MeanFieldConfig | SphereFieldConfig | None
          ) -> MeanFieldConfig | SphereFieldConfig | None:
    """The stored configuration, which continues the file (None: it is complete);
    a ``given`` one must equal it."""
    if given is not None:
        check_meanfield_resume(given, stored.config)
    if stored.complete:
        return None
    times = save_times(stored.config)
    if stored.frames > len(times) or stored.time != times[stored.frames - 1]:
        raise TrajectoryFileError(
            f"{stored.path}: stored frame times do not match the configuration; cannot resume"
        )
    return stored.config


#: a solve resumes its stored configuration, bit for bit.
RESUME = Resume(_plan)

#: promoted at the first solved frame (after t = 0).
STOPS = Stops("mean-field solve", promote_at=2)


def summary_line(s: DensitySummary) -> str:
    """One line: frames, final time, status, mass, energy, minimum density, solver steps."""
    status = "complete" if s.complete else f"incomplete, {s.frames_expected} expected"
    obs = s.final_observables
    parts = [f"mass {obs['mass']:.12g}", f"energy {obs['energy']:.6g}",
             f"min density {obs['min_density']:.3g}",
             f"max density {float(np.max(s.final)):.4g}",
             f"{s.step} steps ({int(obs['rejected_steps'])} rejected)"]
    return f"{s.frames} frames to t={time_text(s.time)} ({status}), " + ", ".join(parts)
