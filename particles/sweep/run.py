"""The sweep session: plan the tasks, run them on a backend, write them as they finish.

:func:`run_sweep` is its rules (how a sweep resumes, :data:`STOPS`, the
statistics written before the file is marked complete) plus one call of the
session driver :func:`particles.runs.session.stream`:

* the output path is checked before any work; an existing file is never
  replaced without ``overwrite``;
* a new sweep writes a hidden temporary file next to the target, which takes
  the target's name once the first task's results are on disk (a sweep
  killed before that leaves the temporary file, which ``resume`` adopts);
* every finished task is written (then flagged done, then flushed) at once,
  so a sweep stopped at any moment (Ctrl-C, SIGKILL, a lost worker) keeps
  every finished system; ``resume=True`` with the same sweep recomputes only
  the systems not done, and the finished file equals an uninterrupted one;
* Ctrl-C closes the file (incomplete) and raises
  :class:`~particles.errors.RunInterrupted`; a failed integration
  :class:`~particles.errors.RunFailed`; a full disk
  :class:`~particles.errors.OutputWriteError`;
* ``max_wall`` seconds (a budget of the whole session, counted from its
  start) pause it at the first task that finishes after them: the file is
  kept incomplete as on Ctrl-C, the tasks still running are stopped, and
  :func:`run_sweep` returns (``complete`` False); ``resume`` continues it.

The statistics (:mod:`particles.sweep.aggregate`) are computed from the
stored per-system results once every system is done.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from particles.config import SimulationConfig
from particles.errors import IntegrationError, RunFailed, RunInterrupted, SweepError
from particles.io.sweep import (
    SWEEP,
    SweepHeader,
    SweepLayout,
    SweepWriter,
    TaskRows,
    damaged,
    open_sweep,
    read_header,
    read_merges,
    read_systems,
    sweep_bytes,
    sweep_error,
)
from particles.plan import facts
from particles.progress import Progress
from particles.runs.estimate import Estimate, estimate
from particles.runs.probe import PROBE_SECONDS, machine_speed, probe_steps
from particles.runs.session import Resume, Stops, stream
from particles.sweep.aggregate import (
    MERGE_SOURCES,
    MERGE_STATS,
    PASSAGE_STATS,
    STATS,
    aggregate_point,
)
from particles.sweep.backends import PROCESS_MIN_SECONDS, Backend, make_backend
from particles.sweep.grid import SweepSpec, check_max_wall
from particles.sweep.tasks import Task, TaskResult, run_task

__all__ = ["PROBE_POINTS", "SweepResult", "default_chunk", "fit_backend", "plan_tasks",
           "read_spec", "run_sweep", "stored_spec", "sweep_estimate"]

#: grid points whose adaptive steps a sweep's estimate probes at most (evenly
#: spread over the grid; the others take the nearest probed point's ratio of
#: probed steps to the bound).
PROBE_POINTS = 32

#: memory a task may take for its state and per-frame results (bytes).
TASK_MEMORY = 512 * 2**20


@dataclass(frozen=True)
class SweepResult:
    """What a sweep session did.

    Attributes
    ----------
    path : Path
    spec : SweepSpec
        The resolved sweep (root seed recorded).
    tasks_run : int
        Tasks computed by this session (a resumed sweep: only the unfinished ones).
    systems_run : int
    complete : bool
        False for a sweep paused by ``max_wall`` (``--resume`` finishes it).
    seconds : float
        Wall time of the session.
    systems_done : int
        Systems on disk at the end (all of them once complete).
    """

    path: Path
    spec: SweepSpec
    tasks_run: int
    systems_run: int
    complete: bool
    seconds: float
    systems_done: int

    @property
    def items(self) -> int:
        """Systems done (the :class:`~particles.errors.Summary` protocol)."""
        return self.systems_done

    @property
    def items_expected(self) -> int:
        """Systems of the sweep."""
        return self.spec.points * self.spec.runs

    def describe(self) -> str:
        """``"holds 64 of 64 systems"``."""
        return f"holds {self.items} of {self.items_expected} systems"


def default_chunk(spec: SweepSpec, workers: int) -> int:
    """Systems per task: enough tasks for every worker slot (about four each,
    so uneven grid points still balance), at most one grid point, and small
    enough for the state of a task to fit in :data:`TASK_MEMORY`."""
    total = spec.points * spec.runs
    chunk = min(spec.runs, max(1, math.ceil(total / (4 * max(1, workers)))))
    F = len(spec.times)
    per_system = max(
        8 * 16 * c.n * c.d + 8 * F * (3 + len(spec.deltas))
        + (8 * F * c.n * c.d if spec.positions else 0)
        for c in (spec.config(p) for p in range(spec.points))
    )
    if spec.until_clusters is not None:
        return spec.runs  # a grid point's systems stop together: one task
    return max(1, min(chunk, TASK_MEMORY // per_system))


def check_chunk(spec: SweepSpec, chunk: int | None) -> None:
    """Refuse a ``chunk`` that would split a grid point of a sweep that stops at a
    cluster count (its systems stop together, as an ensemble's do)."""
    if chunk is not None and spec.until_clusters is not None and chunk < spec.runs:
        raise SweepError(f"--chunk {chunk}: with --until-clusters each grid point's "
                         f"{spec.runs} systems run as one task (they stop together, as an "
                         "ensemble does, and the point's statistics end there)")


def plan_tasks(spec: SweepSpec, done: np.ndarray, chunk: int,
               summations: tuple[str, ...] = ()) -> list[Task]:
    """The tasks of the systems not done: runs of consecutive undone systems of
    each grid point, cut into chunks of at most ``chunk`` systems.

    Parameters
    ----------
    spec : SweepSpec
        Resolved.
    done : ndarray of bool, shape (points, runs)
    chunk : int
    summations : tuple of str, optional
        The summation recorded for each grid point (a resumed file): where the
        sweep leaves it to ``auto``, the recorded one is kept.

    Raises
    ------
    SweepError
        With ``until_clusters``, a ``chunk`` that splits a grid point, or a
        grid point only partly done (its systems stop together).
    """
    check_chunk(spec, chunk)
    tasks = []
    for point in range(spec.points):
        config = spec.config(point)
        if summations and config.summation_auto and config.summation != summations[point]:
            config = config.summed_by(summations[point])
        config = config.to_dict()
        todo = np.flatnonzero(~done[point])
        if not todo.size:
            continue
        if spec.until_clusters is not None and todo.size < spec.runs:
            raise SweepError(f"grid point {point} is partly done ({spec.runs - todo.size} of "
                             f"{spec.runs} systems), but with --until-clusters its systems "
                             "run as one task")
        breaks = np.flatnonzero(np.diff(todo) != 1) + 1
        for run in np.split(todo, breaks):
            for a in range(int(run[0]), int(run[-1]) + 1, chunk):
                b = min(a + chunk, int(run[-1]) + 1)
                tasks.append(Task(point=point, config=config, start=a, stop=b,
                                  seed=int(spec.seed), deltas=spec.deltas, eps=spec.eps,
                                  positions=spec.positions))
    return tasks


def _probed_ratios(configs: list[SimulationConfig], bounds: list[float], probe: float
                   ) -> list[float] | None:
    """Per grid point, probed adaptive steps over the bound's steps (see
    :data:`PROBE_POINTS`), or None where the probe failed or nothing is
    adaptive (``bounds``: a fixed step's points have 0)."""
    points = [p for p, bound in enumerate(bounds) if bound > 0]
    if not points:
        return None
    chosen = sorted({points[round(i)] for i in
                     np.linspace(0, len(points) - 1, min(len(points), PROBE_POINTS))})
    ratios = {}
    try:
        for p in chosen:
            # a sweep's systems run as ensembles, whose tokens never collapse; the
            # probe counts steps, neither stopping nor locating
            config = configs[p].replace(collapse_tol=0.0, until_clusters=None,
                                        merge_events=False)
            steps = probe_steps(config, seconds=probe / len(chosen)).steps
            ratios[p] = steps / bounds[p]
    except IntegrationError:
        return None
    keys = np.array(chosen)
    return [ratios[int(keys[np.argmin(np.abs(keys - p))])] for p in range(len(configs))]


def sweep_estimate(spec: SweepSpec, *, probe: float = 0.0, timed: bool = False) -> Estimate:
    """Rough cost of a whole sweep (an :class:`~particles.runs.estimate.Estimate`):
    the integration of every grid point's ensemble as
    :func:`particles.runs.estimate.estimate` counts it, the statistics (about
    one pass over the pairs per save time, :attr:`particles.plan.Facts.pass_cost`),
    the memory of one task of :func:`default_chunk` systems and the size of
    the sweep file (as its writer reserves it,
    :func:`particles.io.sweep.sweep_bytes`: chunks and statistics included).
    Every grid point's facts (adaptive, steps, costs) are those of its plan
    (:func:`particles.plan.facts`).

    Parameters
    ----------
    spec : SweepSpec
        Resolved.
    probe : float
        Seconds to spend counting the steps of adaptive integrators with
        :func:`particles.runs.probe.probe_steps` (at most :data:`PROBE_POINTS`
        grid points); 0: counted at the initial ``dt``, a bound.
    timed : bool
        Time the first grid point's drift on this machine
        (:func:`particles.runs.probe.machine_speed`) instead of counting the
        reference costs (a fraction of a second, after compiling its kernels).
    """
    F = len(spec.times)
    chunk = default_chunk(spec, 1)
    configs = [spec.config(p) for p in range(spec.points)]
    points = [facts(c) for c in configs]
    bounds = [float(f.steps) if f.adaptive else 0.0 for f in points]
    ratios = _probed_ratios(configs, bounds, probe) if probe > 0 else None
    speed = None
    if timed:
        try:
            speed = machine_speed(configs[0])
        except IntegrationError:
            pass  # the reference costs, as without timing
    seconds = steps = 0.0
    memory, bound, bases = 0, False, []
    for p, c in enumerate(configs):
        counted = None if ratios is None or not bounds[p] else math.ceil(bounds[p] * ratios[p])
        est = estimate(c.replace(batch=spec.runs), steps=counted, speed=speed,
                       basis=None if counted is None else
                       "adaptive steps from probes of one system at each of "
                       f"{min(spec.points, PROBE_POINTS)} grid points at most")
        bound |= est.bound
        if est.basis not in bases:
            bases.append(est.basis)
        seconds += est.seconds + F * spec.runs * points[p].pass_cost * (speed or 1)
        steps += est.steps
        memory = max(memory, estimate(c.replace(batch=chunk)).memory_bytes)
    out = sweep_bytes(spec.layout(), spec.points * spec.runs)
    return Estimate(frames=F, steps=steps, memory_bytes=memory, output_bytes=out,
                    seconds=seconds, bound=bound, basis="; ".join(b for b in bases if b),
                    speed=speed)


def fit_backend(backend: Backend, spec: SweepSpec, done: np.ndarray) -> None:
    """Let a backend that picks its processes per sweep (a
    :class:`~particles.sweep.backends.LocalBackend` with ``processes=None``)
    choose for the systems not ``done``, from :func:`sweep_estimate`; a bound
    that would pick processes is probed first (adaptive steps)."""
    fit = getattr(backend, "fit", None)
    if fit is None:
        return
    before, total = int(done.sum()), spec.points * spec.runs
    est = sweep_estimate(spec)
    share = (total - before) / total
    if (est.bound and est.seconds * share >= PROCESS_MIN_SECONDS
            and getattr(backend, "processes", 1) is None):
        est = sweep_estimate(spec, probe=PROBE_SECONDS)
    fit(est.seconds * share, total - before)


def _arrays(result: TaskResult) -> dict[str, np.ndarray]:
    out = {
        "pair_counts": result.pair_counts,
        "cluster_count": result.cluster_count,
        "energy": result.energy,
        "order_parameter": result.order_parameter,
        "formation_time": result.formation_time,
        "first_merge_time": result.first_merge_time,
        "single_cluster_time": result.single_cluster_time,
    }
    if result.positions is not None:
        out["positions"] = result.positions
    if result.frames is not None:
        out["frames"] = result.frames
        out["passage_time"] = result.passage_time
    return out


def _check_same(given: SweepSpec, stored: SweepSpec, path: Path) -> None:
    a, b = given.to_dict(), stored.to_dict()
    diff = [k for k in {**a, **b} if a.get(k) != b.get(k)]
    if diff:
        parts = ", ".join(f"{k} {a.get(k)!r} (stored {b.get(k)!r})" for k in diff)
        raise SweepError(f"--resume continues the sweep stored in {path}; these differ "
                         f"from it: {parts}")


def write_statistics(writer: SweepWriter, spec: SweepSpec | SweepLayout) -> None:
    """Aggregate every grid point's stored results and write the statistics
    (the located merges sorted first, :meth:`SweepWriter.sort_merges`)."""
    if isinstance(spec, SweepLayout):
        spec = SweepSpec.from_json(spec.spec_json)
    writer.sort_merges()
    f = writer.file
    times = spec.times
    names = (*STATS, *(PASSAGE_STATS if spec.until_clusters is not None else ()))
    stats: dict[str, list[np.ndarray]] = {k: [] for k in names}
    merges = read_merges(f)
    bounds = (None if merges is None else
              np.searchsorted(merges["point"], np.arange(spec.points + 1)))
    extra = ("frames", "passage_time") if spec.until_clusters is not None else ()
    for p in range(spec.points):
        systems = read_systems(f, p, names=(
            "pair_counts", "cluster_count", "energy", "order_parameter", "formation_time",
            "first_merge_time", "single_cluster_time", *extra))
        located = (None if bounds is None else
                   {k: v[bounds[p]:bounds[p + 1]] for k, v in merges.items()})
        values = aggregate_point(systems, n=spec.config(p).n, times=times, levels=spec.levels,
                                 max_n=spec.max_n, merges=located)
        for k in names:
            stats[k].append(values[k])
    grid = spec.names
    out = {}
    for k in names:
        arr = np.stack(stats[k])
        out[k] = (arr.reshape((*spec.shape, *arr.shape[1:])),
                  (*grid, *{**STATS, **PASSAGE_STATS}[k]))
    source = {"source": MERGE_SOURCES[merges is not None]}
    writer.write_stats(out, {k: source for k in MERGE_STATS} if merges is not None else None)


def run_sweep(
    spec: SweepSpec | None,
    path: str | Path,
    *,
    overwrite: bool = False,
    resume: bool = False,
    backend: Backend | None = None,
    chunk: int | None = None,
    progress: bool = False,
    should_stop: Callable[[], bool] | None = None,
    max_wall: float | None = None,
) -> SweepResult:
    """Run a sweep into a sweep file (see the module docstring).

    Parameters
    ----------
    spec : SweepSpec or None
        The sweep; an unset seed is resolved first.  With ``resume`` it may be
        None (the stored sweep) and otherwise must equal the stored one (its
        seed may be left unset).
    path : str or Path
        Output file.
    overwrite : bool
        Replace an existing file once the first task is written.
    resume : bool
        Continue the sweep in ``path``: only the systems not done are run.
    backend : Backend, optional
        Where the tasks run (default :func:`~particles.sweep.backends.make_backend`
        with no arguments: this process, or ``DASK_SCHEDULER_ADDRESS``).  A
        backend made here is closed at the end; a given one is left open.
    chunk : int, optional
        Systems per task (default :func:`default_chunk`); the results do not
        depend on it.
    progress : bool
        Progress bar (systems done, ETA) on stderr.
    should_stop : callable, optional
        Polled after every task; True stops the sweep as Ctrl-C does.
    max_wall : float, optional
        Seconds of wall time (counted from this call) after which the sweep
        pauses: at the first task that finishes after them, with systems
        still to run, the file is closed incomplete (every finished task
        kept; the tasks still running are stopped and their systems left
        for ``resume``) and the result returned with ``complete`` False.

    Returns
    -------
    SweepResult

    Raises
    ------
    SweepError, OutputPathError
        Before any work: a bad sweep, path, or a ``resume`` that does not match.
    RunInterrupted
        Ctrl-C (or ``should_stop``): the file keeps every finished task.
    RunFailed
        An integration failed; the file keeps the finished tasks.
    OutputWriteError
        Disk full; the file keeps the finished tasks.
    """
    t0 = time.perf_counter()
    if chunk is not None and (isinstance(chunk, bool) or int(chunk) != chunk or chunk < 1):
        raise SweepError(f"--chunk must be a positive integer, got {chunk!r}")
    if max_wall is not None:
        max_wall = check_max_wall(max_wall)
    if resume and overwrite:
        raise SweepError("--resume continues a sweep in place; it excludes --overwrite")
    if not resume and spec is None:
        raise ValueError("spec is required unless resume=True")
    given = None if spec is None else (spec if resume else spec.resolved())
    if given is not None:
        check_chunk(given, chunk)
    counts = {"tasks": 0, "systems": 0, "left": 0}

    def results(layout: SweepLayout, header: SweepHeader | None):
        sweep = SweepSpec.from_json(layout.spec_json)
        done = (np.zeros((sweep.points, sweep.runs), dtype=bool) if header is None
                else header.done)
        counts["left"] = int(done.size - done.sum())
        kept = () if header is None else header.summations
        yield from _run_tasks(sweep, done, backend, chunk, progress, counts, kept)

    def over_budget(item: TaskRows) -> bool:
        # polled once the task is written: pause only with systems still to run
        return counts["left"] > 0 and time.perf_counter() - t0 >= max_wall

    stops = STOPS if max_wall is None else dataclasses.replace(STOPS, pauses=over_budget)
    header = stream(SWEEP, path, None if given is None else given.layout(), results,
                    stops=stops, resume=_resume(given) if resume else None,
                    overwrite=overwrite, finishing=write_statistics,
                    should_stop=should_stop)
    return SweepResult(Path(header.path), stored_spec(header), counts["tasks"],
                       counts["systems"], header.complete, time.perf_counter() - t0,
                       header.systems_done)


def _run_tasks(spec: SweepSpec, done: np.ndarray, backend: Backend | None, chunk: int | None,
               progress: bool, counts: dict[str, int], summations: tuple[str, ...] = ()):
    """The results of the systems not done, as they finish (:class:`TaskRows`), on
    ``backend`` (one made here is closed at the end; a given one is left open)."""
    own = backend is None
    try:
        if own:
            backend = make_backend()
        before, total = int(done.sum()), spec.points * spec.runs
        fit_backend(backend, spec, done)  # a local backend picks its processes for this sweep
        tasks = plan_tasks(spec, done, int(chunk or default_chunk(spec, backend.workers)),
                           summations)
        with Progress(total, enabled=progress, label="sweep (systems)") as bar:
            bar.update(before)
            for task, result in backend.map_unordered(run_task, tasks):
                counts["tasks"] += 1
                counts["systems"] += task.systems
                counts["left"] -= task.systems
                bar.update(before + counts["systems"])
                yield TaskRows(task.point, task.start, task.stop, _arrays(result),
                               result.merges)
    finally:
        if own and backend is not None:
            backend.close()


def _resume(given: SweepSpec | None) -> Resume:
    """A sweep resumes the stored sweep (a given one must equal it, seed aside)."""

    def plan(header: SweepHeader, _layout) -> SweepLayout | None:
        stored = stored_spec(header)
        if given is not None:
            same = given if given.seed is not None else given.replace(seed=stored.seed)
            _check_same(same, stored, header.path)
        return None if header.complete else stored.layout()

    return Resume(plan)


def _held_line(path: Path, kept: Path | None, header: SweepHeader | None) -> str:
    if kept is None or header is None:
        return "no task finished; nothing kept (an existing file is unchanged)"
    return (f"{kept} {header.describe()}, marked incomplete; "
            "rerun the command with --resume to finish it")


#: a sweep takes the target's name once its first task is on disk.
STOPS = Stops(
    "sweep",
    promote_at=1,
    interrupted=lambda path, kept, header: RunInterrupted(
        path, header, kept=kept, message=f"sweep interrupted; {_held_line(path, kept, header)}"),
    failed=lambda exc, path, kept, header: RunFailed(
        f"{exc}; {_held_line(path, kept, header)}", path, header, kept=kept),
)


def read_spec(path: str | Path) -> SweepSpec:
    """The sweep stored in a sweep file (:func:`stored_spec`)."""
    return stored_spec(read_header(path))


def stored_spec(header: SweepHeader) -> SweepSpec:
    """The sweep of a sweep file's header, checked against the results it holds.

    Raises
    ------
    SweepError
        ``PATH: ...``: the stored description does not parse, or describes
        another grid, ensemble or save times than the file's (one line).
    """
    try:
        spec = SweepSpec.from_json(header.spec)
    except SweepError as exc:
        raise sweep_error(header.path, str(exc)) from None
    if header.done.shape != (spec.points, spec.runs) or not np.array_equal(header.times,
                                                                          spec.times):
        raise damaged(header.path, f"its sweep of {spec.points} points x {spec.runs} systems "
                      f"and {len(spec.times)} save times does not match its results "
                      f"({header.done.shape[0]} x {header.done.shape[1]}, "
                      f"{len(header.times)} save times)")
    return spec


def check_readable(path: str | Path) -> None:
    """Raise a one-line :class:`SweepError` unless ``path`` is a sweep file."""
    open_sweep(path).close()
