"""Where the tasks of a sweep run: this process, or a Dask cluster.

A backend maps a function over picklable items and yields ``(item, result)``
pairs as tasks finish (:class:`Backend`).  :func:`make_backend` picks one:

* no scheduler, no client and no ``DASK_SCHEDULER_ADDRESS``: a
  :class:`LocalBackend`: the tasks one after the other in this process, each
  task's systems spread over every core by Numba's threads (no start-up at
  all), or one worker process per core, each running whole tasks on one
  Numba thread (``processes``; ``particles sweep`` picks them for a sweep of
  some size: about 1.5x sooner on these machines);
* otherwise :class:`particles.sweep.dask.DaskBackend` on the scheduler at
  ``scheduler`` (``tcp://HOST:PORT``), in ``scheduler_file``, at
  ``DASK_SCHEDULER_ADDRESS``, or behind ``client`` (a ``distributed.Client``
  or a cluster object such as ``dask_jobqueue.SLURMCluster``); ``dask`` and
  ``distributed`` are imported only then.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

__all__ = ["DEFAULT_TIMEOUT", "PROCESS_MIN_SECONDS", "SCHEDULER_VARIABLE", "Backend",
           "LocalBackend", "check_timeout", "local_cores", "make_backend"]

#: environment variable naming a Dask scheduler (as Dask itself reads it).
SCHEDULER_VARIABLE = "DASK_SCHEDULER_ADDRESS"

#: seconds a Dask backend waits for its scheduler to answer, unless told.
DEFAULT_TIMEOUT = 5.0


def check_timeout(timeout: float) -> float:
    """``timeout`` in seconds as a float.

    Raises
    ------
    SweepError
        Not a finite number above 0 (one line).
    """
    from particles.errors import SweepError

    if not 0 < timeout < float("inf"):
        raise SweepError(f"timeout must be > 0 seconds and finite, got {timeout!r}")
    return float(timeout)


@runtime_checkable
class Backend(Protocol):
    """What a sweep needs from an executor.

    Attributes
    ----------
    workers : int
        Parallel task slots (for sizing the chunks of systems).
    """

    workers: int

    def map_unordered(self, fn: Callable[[Any], Any], items: Iterable[Any]
                      ) -> Iterator[tuple[Any, Any]]:
        """``(item, fn(item))`` for every item, in the order tasks finish.

        Items are picklable; a task whose worker died is run again; an
        exception raised by ``fn`` propagates (the remaining tasks are
        cancelled).
        """
        ...

    def close(self) -> None:
        """Release the executor (idempotent)."""
        ...


#: a sweep estimated to take at least this long (one core, seconds) runs in
#: worker processes by default (start-up: about a second each, plus loading
#: the compiled kernels).
PROCESS_MIN_SECONDS = 30.0


def local_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class LocalBackend:
    """Run tasks on this machine: in this process (Numba threads inside each
    task), or in worker processes of one Numba thread each
    (:func:`particles.sweep.processes.map_processes`).

    Parameters
    ----------
    threads : int, optional
        Numba threads when the tasks run in this process (default: all cores).
    processes : int or None
        Worker processes; 1 (the default) runs the tasks in this process.
        None decides per sweep (:meth:`fit`; what ``particles sweep`` does):
        one process per core for a sweep estimated at
        :data:`PROCESS_MIN_SECONDS` or more with at least two systems to run,
        else this process.

    Notes
    -----
    Workers are started with ``spawn``: each imports the main module again,
    so a script that runs a sweep with worker processes must do so under
    ``if __name__ == "__main__":`` (the usual multiprocessing rule).
    """

    def __init__(self, threads: int | None = None, processes: int | None = 1) -> None:
        if processes is not None and (isinstance(processes, bool) or int(processes) != processes
                                      or processes < 1):
            raise ValueError(f"processes must be a positive integer, got {processes!r}")
        self.threads = threads
        self.processes = None if processes is None else int(processes)
        self._fitted: int | None = None

    def __repr__(self) -> str:
        args = [f"{k}={v}" for k, v in (("threads", self.threads),
                                        ("processes", self.processes)) if v is not None]
        return f"LocalBackend({', '.join(args)})"

    @property
    def workers(self) -> int:
        """Parallel task slots: the worker processes, or 1 (this process)."""
        return self.processes or self._fitted or 1

    def fit(self, seconds: float, systems: int) -> None:
        """Choose the processes of a sweep (when not given): ``seconds`` is its
        estimated cost on one core, ``systems`` the systems left to run."""
        if self.processes is None:
            big = seconds >= PROCESS_MIN_SECONDS and systems >= 2
            self._fitted = local_cores() if big else 1

    def map_unordered(self, fn: Callable[[Any], Any], items: Iterable[Any]
                      ) -> Iterator[tuple[Any, Any]]:
        """``(item, fn(item))`` for every item, in the order tasks finish."""
        if self.workers > 1:
            from particles.sweep.processes import map_processes

            yield from map_processes(fn, items, processes=self.workers)
            return
        if self.threads is not None:
            import numba

            numba.set_num_threads(int(self.threads))
        for item in items:
            yield item, fn(item)

    def close(self) -> None:
        """Nothing to release (worker processes end with each map)."""

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_backend(*, scheduler: str | None = None, scheduler_file: str | os.PathLike | None = None,
                 client: Any = None, workers: int | None = None,
                 processes: int | None = 1, timeout: float | None = None) -> Backend:
    """The backend of a sweep (see the module docstring).

    Parameters
    ----------
    scheduler : str, optional
        Dask scheduler address, ``tcp://HOST:PORT``.
    scheduler_file : path, optional
        Dask scheduler file (``dask scheduler --scheduler-file``).
    client : distributed.Client or cluster object, optional
        An existing client or cluster (``LocalCluster``, ``SLURMCluster``, ...).
    workers : int, optional
        Threads of the local backend (default: all cores).
    processes : int or None
        Worker processes of the local backend: 1 (the default) runs the tasks
        in this process, None decides per sweep (:class:`LocalBackend`).
    timeout : float, optional
        Seconds the Dask backend waits for the scheduler to answer (default
        :data:`DEFAULT_TIMEOUT`; a scheduler still starting up is retried
        until then); refused when the tasks run locally.

    Returns
    -------
    Backend

    Raises
    ------
    SweepError
        (from the Dask backend) An unreachable scheduler, or Dask not installed.
    """
    given = [x for x in (scheduler, scheduler_file, client) if x is not None]
    if len(given) > 1:
        raise ValueError("give one of scheduler, scheduler_file and client")
    address = scheduler
    if not given:
        address = os.environ.get(SCHEDULER_VARIABLE) or None
        if address is None:
            if timeout is not None:
                raise ValueError("a scheduler timeout is for a Dask scheduler, not local worker "
                                 f"processes (give a scheduler, or set {SCHEDULER_VARIABLE})")
            return LocalBackend(workers, processes)
    if processes not in (None, 1):
        raise ValueError(f"processes={processes!r} is for the local backend, not a Dask "
                         f"scheduler (set {SCHEDULER_VARIABLE} or a scheduler: one or the other)")
    import importlib

    from particles.errors import SweepError

    try:
        # particles.sweep.dask imports dask and distributed: only loaded here
        dask_backend = importlib.import_module("particles.sweep.dask")
    except ModuleNotFoundError as exc:
        raise SweepError(f"a Dask scheduler was given but {exc.name} is not available "
                         "(pip install 'dask[distributed]')") from None
    wait = {} if timeout is None else {"timeout": timeout}
    return dask_backend.DaskBackend(address=address, scheduler_file=scheduler_file,
                                    client=client, **wait)
