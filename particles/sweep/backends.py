"""Where the tasks of a sweep run: this process, or a Dask cluster.

A backend maps a function over picklable items and yields ``(item, result)``
pairs as tasks finish (:class:`Backend`).  :func:`make_backend` picks one:

* no scheduler, no client and no ``DASK_SCHEDULER_ADDRESS``: a
  :class:`LocalBackend`, running the tasks one after the other in this
  process, each task's systems spread over every core by Numba's threads
  (one compile for the whole sweep, no set-up);
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

__all__ = ["SCHEDULER_VARIABLE", "Backend", "LocalBackend", "make_backend"]

#: environment variable naming a Dask scheduler (as Dask itself reads it).
SCHEDULER_VARIABLE = "DASK_SCHEDULER_ADDRESS"


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


class LocalBackend:
    """Run tasks in this process, one after the other (Numba threads inside each).

    Parameters
    ----------
    threads : int, optional
        Numba threads (default: all cores).
    """

    workers = 1

    def __init__(self, threads: int | None = None) -> None:
        self.threads = threads

    def __repr__(self) -> str:
        return "LocalBackend()" if self.threads is None else f"LocalBackend(threads={self.threads})"

    def map_unordered(self, fn: Callable[[Any], Any], items: Iterable[Any]
                      ) -> Iterator[tuple[Any, Any]]:
        """Run ``fn`` on each item in turn, yielding ``(item, result)``."""
        if self.threads is not None:
            import numba

            numba.set_num_threads(int(self.threads))
        for item in items:
            yield item, fn(item)

    def close(self) -> None:
        """Nothing to release."""

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_backend(*, scheduler: str | None = None, scheduler_file: str | os.PathLike | None = None,
                 client: Any = None, workers: int | None = None) -> Backend:
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
            return LocalBackend(workers)
    import importlib

    from particles.errors import SweepError

    try:
        # particles.sweep.dask imports dask and distributed: only loaded here
        dask_backend = importlib.import_module("particles.sweep.dask")
    except ModuleNotFoundError as exc:
        raise SweepError(f"a Dask scheduler was given but {exc.name} is not available "
                         "(pip install 'dask[distributed]')") from None
    return dask_backend.DaskBackend(address=address, scheduler_file=scheduler_file,
                                    client=client)
