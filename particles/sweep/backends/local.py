"""The local backend: tasks in this process (Numba threads inside each task), or
in worker processes of one Numba thread each."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["PROCESS_MIN_SECONDS", "LocalBackend", "local_cores"]

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
        """``(item, fn(item))`` for every item, in the order tasks finish.

        Yields
        ------
        tuple
            ``(item, fn(item))``.
        """
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
