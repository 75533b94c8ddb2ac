"""Run a configuration straight into a trajectory file, safely.

:func:`run_to_file` streams the frames of :func:`particles.engine.iter_frames`
into an H5MD file (:mod:`particles.io.h5md`) through the one session driver
(:func:`particles.runs.session.stream`); its own rules are how a run resumes
(:data:`RESUME`: the stored configuration, extended to a larger ``T``, or
with other integration settings) and how it names its stops (:data:`STOPS`).
The guarantees:

* An existing file is never overwritten without ``overwrite=True``, and the
  check happens before any work.
* A new run writes to a hidden temporary file next to the target
  (``.NAME.PID@HOST.XXXXXXXX.partial``), which takes the target's name once its first
  integrated frame (frame 1) is on disk, or when the run ends.  So with
  ``overwrite=True`` the old file is replaced only once the new run has
  actually produced frames; a run that fails or is interrupted before that
  leaves the old file untouched.  (Without ``overwrite`` the rename refuses
  to replace a file that appeared meanwhile.)  A run killed before that
  point leaves the temporary file behind, holding frame 0 (written at
  once): ``resume=True`` adopts it (:func:`particles.runs.session.resume_target`),
  and a new run of the same target removes it with a warning.
* Frames reach the disk at least every ``flush_interval`` seconds, so a
  killed run leaves a readable file of every frame written so far.
* Ctrl-C (``KeyboardInterrupt``) and :class:`~particles.errors.IntegrationError`
  close the file cleanly, marked incomplete, then propagate (Ctrl-C as
  :class:`RunInterrupted`, which carries the summary of what was kept).
* ``resume=True`` continues an incomplete file in place from its last frame;
  the result is bit-identical to an uninterrupted run.
* Stops (:mod:`particles.events`): a run with ``until_clusters`` ends at
  the first frame with at most that many clusters, complete there (the
  file's ``stop_reason`` says so); ``resume`` with a smaller value (or none)
  continues it, as long as the stop no longer holds at its last frame.  A run
  with ``max_wall`` pauses at the first frame after that many seconds: the
  file is kept incomplete (``stop_reason`` ``"max_wall"``), the returned
  summary says so, and ``resume`` continues it with a new budget,
  bit-identical to a run that never paused.  Resuming may change either stop
  (alone, or with ``T``).
* ``resume=True`` with a configuration that differs from the stored one in
  ``T`` (and ``save_times``) only extends the run (complete or not) to the
  new ``T``: the stored configuration is updated, the file is marked
  incomplete while the run goes on and complete at its end, and the result
  is bit-identical to a run asked for the longer configuration from the
  start.  The stored save times must be the first save times of the longer
  run (:func:`particles.runs.extend.check_extension`: a ``save_every`` grid
  on which the old ``T`` lies; explicit ``save_times`` given anew that start
  with the stored ones; or, not given, a log- or lin-spaced grid continued
  with its own spacing to the new ``T``).
* ``resume=True`` with other integration settings (:data:`SEGMENT_FIELDS`:
  ``collapse_tol``, ``rtol``, ``atol``, another deterministic integrator,
  with ``dt``, ``save_every`` and ``max_steps`` when it switches between
  fixed and adaptive steps and the save times stay;
  :func:`resumed_config`) goes on from the last frame with them: the
  stored frames are left as they are, the frames after are those of the
  engine started afresh at the last frame with the new settings (dopri5
  restarts its step proposal at ``min(dt, interval)`` at every save time,
  resumed or not, so nothing of the old settings is carried over), the
  stored configuration becomes the new one (what the next resume compares
  with) and the file records the change as a segment
  (:mod:`particles.io.segments`).  A fixed-step segment after an adaptive
  one records the adaptive step counts it took as they were; one switching
  to adaptive steps starts them at zero.  Everything else is refused,
  naming every differing field; so is a stochastic integrator replacing a
  deterministic one or the reverse (the noise path is drawn per step, and
  a run with noise keeps its integrator), and a ``collapse_tol`` its
  configuration's own rules refuse.  A complete file is left as it is.
* A write failure (disk full, file size limit) stops the run at once with
  :class:`~particles.errors.OutputWriteError` (the free space needed, the
  file kept with every frame written before, marked incomplete); ``resume``
  continues it once there is room.  ``complete`` is set only after every
  frame is on disk, and the file is read back to check it.
* A signal that arrives while the finished file is closed is held until it
  is complete, then raised as :class:`RunInterrupted` whose summary says
  so; one during the last frames closes the file complete if every frame
  was computed.
"""

from __future__ import annotations

import os  # noqa: F401  (tests patch run.os.access, which check_output_path asks)
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from particles import events
from particles.analysis import DEFAULT_EPS, count_clusters
from particles.config import STOP_DEFAULTS, SimulationConfig, parse_init
from particles.engine import iter_frames
from particles.errors import ResumeMismatch, RunFailed, RunInterrupted
from particles.integrators import INTEGRATORS
from particles.io.h5md import (
    FLUSH_INTERVAL,
    STEP_COUNTS,
    TRAJECTORY,
    RunSummary,
    TrajectoryFileError,
    read_summary,
)
from particles.progress import Progress
from particles.runs.extend import check_extension
from particles.runs.initial import initial_tokens
from particles.runs.session import Resume, Stops, check_output_path, stream
from particles.runs.session import resume_path as resume_kind

__all__ = [
    "SUMMARY_MAX_PAIRS",
    "RunResult",
    "check_extension",
    "check_output_path",
    "check_resume_config",
    "resume_path",
    "resumed_config",
    "run_to_file",
    "summarize",
]


#: pairs of tokens up to which a summary counts the clusters of the last frame
#: (about 0.5 s on one core; :meth:`RunResult.summary_clusters`).
SUMMARY_MAX_PAIRS = 5e7


@dataclass(frozen=True)
class RunResult(RunSummary):
    """A :class:`~particles.io.RunSummary` of a session's file, with cluster counts."""

    def cluster_count(self, eps: float | None = None) -> int | np.ndarray:
        """Clusters of the last frame (:func:`particles.analysis.count_clusters`; 0: spread).

        Returns
        -------
        int, or ndarray of int64 with shape (batch,) for an ensemble
        """
        return count_clusters(self.final, DEFAULT_EPS if eps is None else eps)

    def summary_clusters(self, max_pairs: float | None = None) -> int | np.ndarray | None:
        """:meth:`cluster_count` where it is cheap, else None.

        The count costs one pass over every pair of tokens (O(n^2): 29 s at
        n = 1e5 on one core, an hour at 1e6), too much for the line a command
        prints after the last frame; above ``max_pairs`` pairs (all systems
        together; default :data:`SUMMARY_MAX_PAIRS`) it is left to
        ``particles analyze``.
        """
        pairs = self.final.size // self.final.shape[-1] * self.final.shape[-2] / 2
        limit = SUMMARY_MAX_PAIRS if max_pairs is None else max_pairs
        return self.cluster_count() if pairs <= limit else None

    def spread(self, eps: float | None = None) -> bool | np.ndarray:
        """Whether the last frame is a spread population, not clusters.

        True where :meth:`cluster_count` is 0: an eps-linked group of tokens
        spans more than 90 degrees (an incoherent Kuramoto population; the
        rule of :mod:`particles.observables.spread`), as
        :class:`~particles.analysis.comparison.ModelSummary` says in
        ``compare``'s table.

        Returns
        -------
        bool, or ndarray of bool with shape (batch,) for an ensemble
        """
        counts = self.cluster_count(eps)
        return bool(counts == 0) if np.ndim(counts) == 0 else np.asarray(counts) == 0


def summarize(path: Path) -> RunResult:
    """:func:`~particles.io.read_summary` of ``path`` as a :class:`RunResult`."""
    s = read_summary(path)
    return RunResult(**{f.name: getattr(s, f.name) for f in fields(RunSummary)})


def resume_path(path: str | Path) -> Path:
    """The file ``resume`` continues: ``path``, or the temporary file of a run
    killed before its first promotion, adopted under ``path``.

    Raises
    ------
    OutputPathError
        Nothing to resume.
    """
    return resume_kind(TRAJECTORY, path)


#: the fields a resume may change without extending the run: its stops.
RESUMABLE_STOPS = ("until_clusters", "max_wall")

#: the integration settings a resume may change: the frames it adds are
#: computed with the new ones, a new segment of the file (:mod:`particles.io.segments`).
SEGMENT_FIELDS = ("integrator", "rtol", "atol", "collapse_tol")

#: what may change besides when the integrator switches between fixed steps and
#: adaptive ones (``dt`` is then another thing: the step, or the first step
#: of each save interval), as long as the save times stay the same.
SWITCH_FIELDS = ("dt", "save_every", "max_steps")

#: the fields a resume extends a run by (:func:`particles.runs.extend.check_extension`).
EXTENSION_FIELDS = ("T", "save_times")


def check_resume_config(given: SimulationConfig, stored: SimulationConfig) -> None:
    """Refuse to resume with a configuration that changes what a resume cannot.

    A resume may change the stops (:data:`RESUMABLE_STOPS`), extend the run
    (:data:`EXTENSION_FIELDS`, checked by :func:`resumed_config`) and change the
    integration settings (:data:`SEGMENT_FIELDS`): another deterministic
    integrator (with :data:`SWITCH_FIELDS` too when it switches between fixed
    steps and adaptive ones), its tolerances, ``collapse_tol`` (validated by
    the configuration's own rules when ``given`` was built).  An unset seed in
    ``given`` stands for the stored seed.

    Raises
    ------
    ResumeMismatch
        Naming each differing field with the given and the stored value, when
        one of them cannot change; for a step changed without a switch of
        integrator, or an integrator that is, or replaces, a stochastic one, why.
    """
    given = as_stored(given, stored)
    differences = config_differences(given, stored)
    allowed = {*RESUMABLE_STOPS, *EXTENSION_FIELDS, *SEGMENT_FIELDS}
    switch = INTEGRATORS[given.integrator].adaptive != INTEGRATORS[stored.integrator].adaptive
    refused = [k for k in differences if k not in allowed and not (switch and k in SWITCH_FIELDS)]
    why = ""
    if refused and set(refused) <= set(SWITCH_FIELDS):
        why = ("the step and the step bound change only with a switch between a fixed-step "
               "and an adaptive integrator")
    if not refused and "integrator" in differences and (
            INTEGRATORS[given.integrator].stochastic or INTEGRATORS[stored.integrator].stochastic):
        refused = ["integrator"]
        why = ("a stochastic integrator draws its noise path per step: it is neither replaced "
               "nor replaces a deterministic one, and a run with noise keeps its integrator")
    if refused:
        diff = ", ".join(f"{k}={g!r} (file: {s!r})" for k, (g, s) in differences.items())
        raise ResumeMismatch(
            f"resume continues the stored configuration; given {diff}"
            + (f" ({why})" if why else ""), differences, why)


def resumed_config(given: SimulationConfig, stored: SimulationConfig) -> SimulationConfig:
    """The configuration that continues a file storing ``stored``, resumed with ``given``.

    The stored configuration with the changes a resume may make
    (:func:`check_resume_config`): the given stops and integration settings,
    extended to the given ``T`` and save times
    (:func:`~particles.runs.extend.check_extension`).  The save times of the
    stored frames stay: a changed ``dt`` or ``save_every`` must give the same
    grid.

    Raises
    ------
    ResumeMismatch
        A change a resume cannot make, or a step that moves the save times.
    ValueError
        A ``T`` the run cannot be extended to.
    """
    check_resume_config(given, stored)
    given = as_stored(given, stored)
    differences = config_differences(given, stored)
    # (differences reads JSON values: a field's own value is the given one's)
    changes = {k: getattr(given, k) for k in differences if k not in EXTENSION_FIELDS}
    config = stored.replace(**changes) if changes else stored
    if set(differences) & set(EXTENSION_FIELDS):
        config = check_extension(given, config)
    moved = {k: differences[k] for k in ("dt", "save_every") if k in differences}
    if moved:
        old, new = stored.output_times(), config.output_times()
        if len(new) < len(old) or not np.array_equal(new[: len(old)], old):
            diff = ", ".join(f"{k}={g!r} (file: {s!r})" for k, (g, s) in moved.items())
            why = (f"the save times would move (every {stored.save_every * stored.dt:g} "
                   f"in the file, {config.save_every * config.dt:g} given): keep save_every "
                   "times dt, or give the file's save times")
            raise ResumeMismatch(f"resume keeps the stored save times; given {diff} ({why})",
                                 moved, why)
    return config


def as_stored(given: SimulationConfig, stored: SimulationConfig) -> SimulationConfig:
    """``given`` with what it leaves open taken from ``stored``: an unset seed,
    and the summation where ``given`` left it to ``auto`` (a file keeps the
    choice recorded when it was made: the cost model, or the host, may have
    changed since, and a resume continues the same sums)."""
    if given.seed is None:
        given = given.replace(seed=stored.seed)
    if given.summation_auto and given.summation != stored.summation:
        try:
            given = given.summed_by(stored.summation)
        except ValueError:
            pass  # the stored summation cannot serve it: reported as a difference
    return given


def config_differences(given: SimulationConfig, stored: SimulationConfig
                       ) -> dict[str, tuple]:
    """Field name -> (given, stored) JSON values, for each field that differs."""
    a, b = given.to_dict(), stored.to_dict()
    for key, default in {"positions": "all", **STOP_DEFAULTS}.items():
        a.setdefault(key, default)  # not written when they are the defaults
        b.setdefault(key, default)
    return {k: (a[k], b[k]) for k in a if a[k] != b[k]}


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
) -> RunResult:
    """Run a configuration and stream its frames into an H5MD trajectory file.

    Parameters
    ----------
    config : SimulationConfig or None
        The run; an unset seed is resolved first.  With ``resume`` it may be
        None (the stored configuration is used), and otherwise equals it but
        for what a resume may change (:func:`resumed_config`).
    path : str or Path
        Output file (see the module docstring for the replacement rules).
    x0 : ndarray, shape (n, d) or (batch, n, d), optional
        Initial positions (recorded as ``init="array"``).
    overwrite : bool
        Replace an existing file, once the new run has produced frames.
    resume : bool
        Continue the incomplete file ``path`` from its last frame, with the
        stops and integration settings ``config`` changes (a segment of the
        file); a complete file is left as it is, unless ``config`` has a
        larger ``T``: then the run is extended to it (see the module docstring).
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
    RunResult
        What the file holds once the run completed (a
        :class:`~particles.io.RunSummary` with ``cluster_count``), or
        paused (``max_wall``: ``complete`` False, ``stop_reason`` "max_wall").

    Raises
    ------
    OutputPathError, ValueError
        Before any work: a bad target path, a bad ``x0``.
    ResumeMismatch
        (a ValueError) Before any work: a configuration that differs from
        the one stored for ``resume`` in what a resume cannot change
        (:func:`check_resume_config`), naming each differing field; a
        ValueError when the run cannot be extended to the given ``T``
        (:func:`~particles.runs.extend.check_extension`).
    TrajectoryFileError
        ``resume`` of a file that is not a readable trajectory.
    RunInterrupted
        Ctrl-C; the file is closed and marked incomplete (if any frame was kept).
    RunFailed
        The integration failed (an :class:`~particles.errors.IntegrationError`);
        the file is kept the same way.
    OutputWriteError
        Writing failed (disk full, file size limit): raised at once; ``kept``
        holds every frame written before (marked incomplete; None when no
        frame was kept), ``needed`` the free space needed to finish.
    OutputReplacedError
        (an OutputPathError) Another run replaced the target while this one
        was writing it: this run lost.
    """
    if resume:
        if x0 is not None:
            raise ValueError("x0 cannot be given with resume (the file holds the positions)")
        spec = config
    else:
        if config is None:
            raise ValueError("config is required unless resume=True")
        check_output_path(path, overwrite=overwrite, inputs=_inputs(config))  # before any work
        if x0 is not None and config.init != "array":
            config = config.replace(init="array")
        spec = config.resolved()
        x0 = initial_tokens(spec, x0)  # density:FILE drawn here, before any file is made

    def frames(config: SimulationConfig, state: RunSummary | None):
        if state is None:
            X, start, start_step, counts = x0, 0, 0, None
        else:
            X = state.final.reshape(config.batch or 1, config.n, config.d)
            start, start_step, counts = state.frames - 1, state.step, _step_counts(state)
        held = _held_counts(config, state)
        with Progress(config.T, enabled=progress) as bar:
            for frame in iter_frames(config, X, start=start, start_step=start_step,
                                     step_counts=counts, progress=bar.update,
                                     integrator=continued_phase(config, state)):
                if state is None or frame.index >= state.frames:  # resuming yields it again
                    yield frame if held is None else replace(
                        frame, observables={**frame.observables, **held})

    return stream(TRAJECTORY, path, spec, frames, stops=STOPS,
                  resume=RESUME if resume else None, overwrite=overwrite,
                  summarize=summarize, flush_interval=flush_interval,
                  should_stop=should_stop, inputs=_inputs(spec) if spec is not None else ())


def _inputs(config: SimulationConfig) -> list[str]:
    """The files a run reads: the density file of ``init="density:FILE"``."""
    name, arg = parse_init(config.init)
    return [arg] if name == "density" else []


def _held_counts(config: SimulationConfig, state: RunSummary | None
                 ) -> dict[str, np.ndarray] | None:
    """The adaptive step counts a fixed-step segment records at each frame (those
    of the adaptive segment before it, (batch,) each: it takes no adaptive
    step), or None."""
    if state is None or INTEGRATORS[config.integrator].adaptive:
        return None
    if STEP_COUNTS[0] not in state.final_observables:
        return None
    return {k: np.atleast_1d(np.asarray(state.final_observables[k], dtype=np.float64))
            for k in STEP_COUNTS}


def continued_phase(config: SimulationConfig, state: RunSummary | None) -> str | None:
    """The phase a run of ``config`` resumed from the file ``state`` describes goes on
    with: for ``integrator="auto"``, the integrator it switched to
    (``/events/switches``) since the last segment that changed the integrator
    (a resume that chose ``auto`` anew starts it afresh), else None (its start)."""
    if state is None or not INTEGRATORS[config.integrator].phases:
        return None
    rows = [s for s in state.segments if "integrator" in s.changes]
    if (rows and rows[-1].frame >= state.frames - 1
            and rows[-1].changes["integrator"][0] == config.integrator):
        rows.pop()  # no frame of its own, and undone now: folded away (segments.record_segment)
    since = rows[-1].frame if rows else -1
    chosen = [s for s in state.switches if s.frame > since]
    return chosen[-1].after if chosen else None


def _step_counts(state: RunSummary) -> np.ndarray | None:
    """Accepted and rejected steps of an adaptive run up to its last frame, (batch, 2)."""
    if "accepted_steps" not in state.final_observables:
        return None
    return np.stack([np.atleast_1d(state.final_observables[k])
                     for k in ("accepted_steps", "rejected_steps")], axis=-1)


def _plan(state: RunSummary, given: SimulationConfig | None) -> SimulationConfig | None:
    """The configuration that continues the file ``state`` describes (None: it is
    complete as it is): the stored one, with the given stops and integration
    settings, extended to the given ``T`` and save times (:func:`resumed_config`)."""
    config, extends = state.config, False
    if given is not None:
        config = resumed_config(given, state.config)
        extends = config.T != state.config.T or config.save_times != state.config.save_times
    if state.complete:
        if state.stop_reason != "until_clusters" and not extends:
            return None  # it reached its T
        final = state.final.reshape(config.batch or 1, config.n, config.d)
        if state.stop_reason == "until_clusters" and events.until_holds(
                events.cluster_counts(final), config.until_clusters):
            return None  # it stopped where its stop still holds
    times = config.output_times()
    if state.frames > len(times) or state.time != times[state.frames - 1]:
        raise TrajectoryFileError(
            f"{state.path}: stored frame times do not match the configuration; cannot resume"
        )
    return config


#: a run resumes the stored configuration, or extends it to a larger T (and save times).
RESUME = Resume(_plan, replace=lambda state, config: config != state.config)

#: a run's stops: promoted at its first integrated frame; the exceptions carry
#: a RunResult of what was kept.
STOPS = Stops(
    "run",
    promote_at=2,
    interrupted=lambda path, kept, summary: RunInterrupted(path, summary),
    failed=lambda exc, path, kept, summary: RunFailed(str(exc), path, summary),
    pauses=lambda frame: frame.stop == "max_wall",
)
