"""The sweep session: plan the tasks, run them on a backend, write them as they finish.

:func:`run_sweep` follows the session policy of :mod:`particles.runs.session`:

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
  :class:`~particles.errors.OutputWriteError`.

The statistics (:mod:`particles.sweep.aggregate`) are computed from the
stored per-system results once every system is done.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from particles.errors import (
    IntegrationError,
    OutputWriteError,
    RunFailed,
    RunInterrupted,
    SweepError,
)
from particles.io.sweep import SweepWriter, open_sweep, read_header, read_systems
from particles.progress import Progress
from particles.runs.estimate import SECONDS_PER_PAIR_OP, Estimate, estimate
from particles.runs.session import (
    OutputFile,
    check_output_path,
    deferred_interrupts,
    guard,
    remove_stale_partials,
    resume_target,
)
from particles.sweep.aggregate import STATS, aggregate_point
from particles.sweep.backends import Backend, make_backend
from particles.sweep.grid import SweepSpec
from particles.sweep.tasks import Task, TaskResult, run_task

__all__ = ["SweepResult", "default_chunk", "plan_tasks", "run_sweep", "sweep_estimate"]

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
    seconds : float
        Wall time of the session.
    """

    path: Path
    spec: SweepSpec
    tasks_run: int
    systems_run: int
    complete: bool
    seconds: float


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
    return max(1, min(chunk, TASK_MEMORY // per_system))


def plan_tasks(spec: SweepSpec, done: np.ndarray, chunk: int) -> list[Task]:
    """The tasks of the systems not done: runs of consecutive undone systems of
    each grid point, cut into chunks of at most ``chunk`` systems.

    Parameters
    ----------
    spec : SweepSpec
        Resolved.
    done : ndarray of bool, shape (points, runs)
    chunk : int
    """
    tasks = []
    for point in range(spec.points):
        config = spec.config(point).to_dict()
        todo = np.flatnonzero(~done[point])
        if not todo.size:
            continue
        breaks = np.flatnonzero(np.diff(todo) != 1) + 1
        for run in np.split(todo, breaks):
            for a in range(int(run[0]), int(run[-1]) + 1, chunk):
                b = min(a + chunk, int(run[-1]) + 1)
                tasks.append(Task(point=point, config=config, start=a, stop=b,
                                  seed=int(spec.seed), deltas=spec.deltas, eps=spec.eps,
                                  positions=spec.positions))
    return tasks


def sweep_estimate(spec: SweepSpec) -> Estimate:
    """Rough cost of a whole sweep (an :class:`~particles.runs.estimate.Estimate`):
    the integration of every grid point's ensemble as
    :func:`particles.runs.estimate.estimate` counts it, the statistics (about
    two passes over the pairs per save time), the memory of one task of
    :func:`default_chunk` systems and the size of the sweep file."""
    F = len(spec.times)
    chunk = default_chunk(spec, 1)
    seconds = steps = 0.0
    out, memory = 64 * 1024, 0
    for p in range(spec.points):
        c = spec.config(p)
        est = estimate(c.replace(batch=spec.runs))
        seconds += est.seconds + 2 * F * spec.runs * c.n * c.n * c.d * SECONDS_PER_PAIR_OP / 2
        steps += est.steps
        memory = max(memory, estimate(c.replace(batch=chunk)).memory_bytes)
        per = F * (10 + 2 * len(spec.deltas)) + 24
        if spec.positions:
            per += 8 * F * c.n * c.d
        out += per * spec.runs
    return Estimate(frames=F, steps=steps, memory_bytes=memory, output_bytes=out,
                    seconds=seconds)


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
    return out


def _configs(spec: SweepSpec) -> list[str]:
    return [spec.config(p).to_json() for p in range(spec.points)]


def _check_same(given: SweepSpec, stored: SweepSpec, path: Path) -> None:
    a, b = given.to_dict(), stored.to_dict()
    diff = [k for k in a if a[k] != b.get(k)]
    if diff:
        parts = ", ".join(f"{k} {a[k]!r} (stored {b.get(k)!r})" for k in diff)
        raise SweepError(f"--resume continues the sweep stored in {path}; these differ "
                         f"from it: {parts}")


def _readable(path: Path) -> bool:
    try:
        read_header(path)
        return True
    except (SweepError, OSError):
        return False


def write_statistics(writer: SweepWriter, spec: SweepSpec) -> None:
    """Aggregate every grid point's stored results and write the statistics."""
    f = writer.file
    times = spec.times
    stats: dict[str, list[np.ndarray]] = {k: [] for k in STATS}
    for p in range(spec.points):
        systems = read_systems(f, p, names=(
            "pair_counts", "cluster_count", "energy", "order_parameter", "formation_time",
            "first_merge_time", "single_cluster_time"))
        values = aggregate_point(systems, n=spec.config(p).n, times=times, levels=spec.levels,
                                 max_n=spec.max_n)
        for k in STATS:
            stats[k].append(values[k])
    grid = spec.names
    out = {}
    for k, dims in STATS.items():
        arr = np.stack(stats[k])
        out[k] = (arr.reshape((*spec.shape, *arr.shape[1:])), (*grid, *dims))
    writer.write_stats(out)


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
    path = Path(path)
    if chunk is not None and (isinstance(chunk, bool) or int(chunk) != chunk or chunk < 1):
        raise SweepError(f"--chunk must be a positive integer, got {chunk!r}")
    if resume:
        if overwrite:
            raise SweepError("--resume continues a sweep in place; it excludes --overwrite")
        path = resume_target(path, _readable)
        header = read_header(path)
        stored = SweepSpec.from_json(header.spec)
        if spec is not None:
            given = spec if spec.seed is not None else spec.replace(seed=stored.seed)
            _check_same(given, stored, path)
        spec = stored
        if header.complete:
            return SweepResult(path, spec, 0, 0, True, time.perf_counter() - t0)
        writer = SweepWriter.reopen(path)
        output = OutputFile(path, overwrite=False, in_place=True)
    else:
        if spec is None:
            raise ValueError("spec is required unless resume=True")
        path = check_output_path(path, overwrite=overwrite)
        spec = spec.resolved()
        remove_stale_partials(path)
        output = OutputFile(path, overwrite=overwrite)
        first = spec.config(0)
        try:
            writer = SweepWriter.create(
                output.writing, spec_json=spec.to_json(), seed=int(spec.seed),
                base_json=_base_json(spec), axes=spec.axes, runs=spec.runs, times=spec.times,
                deltas=spec.deltas, levels=spec.levels, eps=spec.eps, max_n=spec.max_n,
                max_pairs=spec.max_n * (spec.max_n - 1) // 2, configs=_configs(spec),
                positions=(first.n, first.d) if spec.positions else None)
        except OutputWriteError as exc:
            exc.path = path
            raise
        except BaseException:
            output.discard()
            raise
        output.claim()

    own_backend = backend is None
    done_before = int(writer.done.sum())
    tasks_run = systems_run = 0

    def close() -> int:
        writer.close(complete=False)
        return int(writer.done.sum())

    def interrupted(kept: Path | None) -> RunInterrupted:
        return RunInterrupted(path, kept=kept,
                              message=f"sweep interrupted; {_held(kept, spec, writer)}")

    def failed(exc: IntegrationError, kept: Path | None) -> RunFailed:
        return RunFailed(f"{exc}; {_held(kept, spec, writer)}", path, kept=kept)

    try:
        with guard(output, close, interrupted=interrupted, failed=failed):
            if backend is None:
                backend = make_backend()
            fit = getattr(backend, "fit", None)
            if fit is not None:  # a local backend picks its processes for this sweep
                left = spec.points * spec.runs - done_before
                fit(sweep_estimate(spec).seconds * left / (spec.points * spec.runs), left)
            size = chunk or default_chunk(spec, backend.workers)
            tasks = plan_tasks(spec, writer.done, int(size))
            total = spec.points * spec.runs
            with Progress(total, enabled=progress, label="sweep (systems)") as bar:
                bar.update(done_before)
                for task, result in backend.map_unordered(run_task, tasks):
                    writer.write(task.point, task.start, task.stop, _arrays(result))
                    tasks_run += 1
                    systems_run += task.systems
                    output.promote()  # the first task is on disk
                    output.check_owned()
                    bar.update(done_before + systems_run)
                    if (should_stop is not None and tasks_run < len(tasks) and should_stop()):
                        raise KeyboardInterrupt
            with deferred_interrupts():  # finishing is never cut short
                write_statistics(writer, spec)
                output.check_owned()
                writer.close(complete=True)
                output.finish()
    finally:
        if own_backend and backend is not None:
            backend.close()
    return SweepResult(path, spec, tasks_run, systems_run, True, time.perf_counter() - t0)


def _held(kept: Path | None, spec: SweepSpec, writer: SweepWriter) -> str:
    if kept is None:
        return "no task finished; nothing kept (an existing file is unchanged)"
    done = int(writer.done.sum())
    return (f"{kept} holds {done} of {spec.points * spec.runs} systems, marked incomplete; "
            "rerun the command with --resume to finish it")


def _base_json(spec: SweepSpec) -> str:
    import json

    return json.dumps(spec.to_dict()["base"], sort_keys=True)


def read_spec(path: str | Path) -> SweepSpec:
    """The sweep stored in a sweep file."""
    return SweepSpec.from_json(read_header(path).spec)


def check_readable(path: str | Path) -> None:
    """Raise a one-line :class:`SweepError` unless ``path`` is a sweep file."""
    open_sweep(path).close()
