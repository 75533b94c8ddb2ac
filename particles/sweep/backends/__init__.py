"""Where the tasks of a sweep run: this process, or a Dask cluster.

A backend maps a function over picklable items and yields ``(item, result)``
pairs as tasks finish (:class:`Backend`).  :func:`make_backend` picks one:

* no scheduler, no client and no ``DASK_SCHEDULER_ADDRESS``: a
  :class:`LocalBackend`: the tasks one after the other in this process, each
  task's systems spread over every core by Numba's threads (no start-up at
  all), or one worker process per core, each running whole tasks on one
  Numba thread (``processes``; ``particles sweep`` picks them for a sweep of
  some size: about 1.5x sooner on these machines);
* otherwise :class:`particles.sweep.backends.dask.DaskBackend` on the scheduler at
  ``scheduler`` (``tcp://HOST:PORT``), in ``scheduler_file``, at
  ``DASK_SCHEDULER_ADDRESS``, or behind ``client`` (a ``distributed.Client``
  or a cluster object such as ``dask_jobqueue.SLURMCluster``); ``dask`` and
  ``distributed`` are imported only then.

One module each: :mod:`~particles.sweep.backends.base` (the protocol and
the timeout rule), :mod:`~particles.sweep.backends.local`,
:mod:`~particles.sweep.backends.dask`.
"""

from __future__ import annotations

import os
from typing import Any

from particles.sweep.backends.base import (
    DEFAULT_TIMEOUT,
    SCHEDULER_VARIABLE,
    Backend,
    check_timeout,
)
from particles.sweep.backends.local import PROCESS_MIN_SECONDS, LocalBackend, local_cores

__all__ = ["DEFAULT_TIMEOUT", "PROCESS_MIN_SECONDS", "SCHEDULER_VARIABLE", "Backend",
           "LocalBackend", "check_timeout", "local_cores", "make_backend"]


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
    from particles.errors import SweepError

    try:
        # the Dask backend imports dask and distributed: only loaded here
        from particles.sweep.backends.dask import DaskBackend
    except ModuleNotFoundError as exc:
        raise SweepError(f"a Dask scheduler was given but {exc.name} is not available "
                         "(pip install 'dask[distributed]')") from None
    wait = {} if timeout is None else {"timeout": timeout}
    return DaskBackend(address=address, scheduler_file=scheduler_file, client=client, **wait)
