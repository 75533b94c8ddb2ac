"""Sweeps on a Dask distributed cluster: :class:`DaskBackend`.

A :class:`DaskBackend` implements the sweep's ``Backend`` protocol
(:mod:`particles.sweep.backends`) on an existing Dask cluster: tasks go out
with ``Client.submit(..., pure=False, retries=...)`` and come back through
``distributed.as_completed`` in the order they finish.  ``dask`` and
``distributed`` are needed only here (the ``dask`` extra); the module is
imported lazily by ``make_backend``.

Connecting
    A scheduler address (``tcp://HOST:PORT``), a scheduler file (what
    ``dask scheduler --scheduler-file F`` writes), a ``distributed.Client``,
    or any cluster object with a ``scheduler_address`` (``LocalCluster``,
    ``dask_jobqueue.SLURMCluster``, ...).  The scheduler is probed with a
    short timeout first, so an unreachable one is a one-line
    :class:`~particles.errors.SweepError` after ``timeout`` seconds, not a
    hang (a missing scheduler file is refused at once: the Dask client
    would wait for it to appear forever).

Workers
    A task runs with ``threads_per_task`` Numba threads (default 1): every
    Dask thread slot is one core, so ``dask worker --nthreads 1 --nworkers K``
    on a K-core node (or ``SLURMCluster(cores=K, processes=K)``) keeps every
    core busy without oversubscribing it (two Numba pools spinning on one
    core make a step many times slower).  Results do not depend on the
    thread count.  Numba compiles once per worker *process*: its compiled
    kernels live for the life of the process, so the first task of a
    configuration on a worker pays the compile and the later ones do not
    (:attr:`DaskBackend.stats` records the compile seconds of each task).

Failures
    A task whose worker dies (killed, out of memory, node lost) is
    resubmitted by the scheduler to another worker (or to the worker the
    nanny restarts); one that kills ``distributed.scheduler.allowed-failures``
    workers in a row, and a lost scheduler, are a
    :class:`~particles.errors.WorkersLost` (the sweep stops as a failed
    integration does: one line, its file kept for ``--resume``).
    ``distributed``'s own loggers are silent while a backend is open, so the
    loss is reported once.  An
    exception raised by a task is re-raised unchanged by
    :meth:`DaskBackend.map_unordered` (after ``retries`` further tries on
    another worker), and the tasks still pending are cancelled.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import distributed  # noqa: F401 - missing: make_backend says "pip install 'dask[distributed]'"

from particles.errors import SweepError, WorkersLost
from particles.sweep.backends.base import DEFAULT_TIMEOUT, check_timeout

__all__ = ["DEFAULT_TIMEOUT", "DaskBackend", "TaskStat", "scheduler_address"]

#: environment variable naming the scheduler when no address is given (Dask's own).
ADDRESS_VARIABLE = "DASK_SCHEDULER_ADDRESS"


@dataclass(frozen=True)
class TaskStat:
    """Where and how long one task ran (one entry of :attr:`DaskBackend.stats`).

    Attributes
    ----------
    worker : str
        ``host:pid`` of the worker process that returned the result.
    seconds : float
        Wall time of the task function on the worker.
    compile_seconds : float
        Part of ``seconds`` Numba spent compiling (0 once the worker is warm).
    roundtrip : float
        Wall time from submission to the result being back in this process
        (queueing behind other tasks included).
    """

    worker: str
    seconds: float
    compile_seconds: float
    roundtrip: float


@dataclass(frozen=True)
class _Envelope:
    """A task's result with the worker-side measurements of :class:`TaskStat`."""

    result: Any
    worker: str
    seconds: float
    compile_seconds: float


class _OnWorker:
    """``fn`` wrapped for a worker: fixes the Numba thread count and measures the call.

    A plain picklable object (not a closure), so the same callable is sent for
    every task of a map.
    """

    def __init__(self, fn: Callable[[Any], Any], threads: int) -> None:
        self.fn = fn
        self.threads = threads

    def __call__(self, item: Any) -> _Envelope:
        import numba
        from numba.core import config as numba_config
        from numba.core import event

        # set_num_threads is per calling thread: set it in the task's own thread
        numba.set_num_threads(max(1, min(self.threads, numba_config.NUMBA_NUM_THREADS)))
        compiled: list[float] = []
        start = time.perf_counter()
        with event.install_timer("numba:compile", compiled.append):
            result = self.fn(item)
        seconds = time.perf_counter() - start
        return _Envelope(result, f"{socket.gethostname()}:{os.getpid()}", seconds,
                         sum(compiled))


def scheduler_address(scheduler_file: str | os.PathLike) -> str:
    """The address a ``dask scheduler --scheduler-file`` file names.

    Raises
    ------
    SweepError
        The file is missing or is not a scheduler file (one line).
    """
    path = Path(scheduler_file)
    try:
        address = json.loads(path.read_text())["address"]
    except FileNotFoundError:
        raise SweepError(f"scheduler file {path} does not exist (is the scheduler "
                         "running, and is the path on a shared file system?)") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "no 'address'"
        raise SweepError(f"{path} is not a Dask scheduler file ({why})") from None
    if not isinstance(address, str):
        raise SweepError(f"{path} is not a Dask scheduler file (no 'address')")
    return address


def _probe(address: str, timeout: float) -> None:
    """Open and close one connection to ``address`` (the scheduler's handshake included).

    Raises
    ------
    SweepError
        Invalid address, or no scheduler answered within ``timeout`` seconds.
    """
    from distributed.comm import connect

    async def knock() -> None:
        comm = await connect(address, timeout=timeout)
        await comm.close()

    try:
        asyncio.run(knock())
    except ValueError as exc:  # distributed's parser: "invalid address ..."
        raise SweepError(f"bad Dask scheduler address {address!r}: "
                         + " ".join(str(exc).split())) from None
    except (TimeoutError, OSError):
        raise SweepError(f"cannot reach the Dask scheduler at {address} within "
                         f"{timeout:g} s (is it running and reachable from here?)") from None
    except Exception as exc:  # something else answered: not a scheduler
        raise SweepError(f"no Dask scheduler at {address} (the handshake failed: "
                         f"{type(exc).__name__})") from None


class DaskBackend:
    """Run sweep tasks on a Dask distributed cluster.

    Give one of ``address``, ``scheduler_file`` or ``client``; with none,
    the ``DASK_SCHEDULER_ADDRESS`` environment variable names the scheduler.

    Parameters
    ----------
    address : str, optional
        Scheduler address, ``tcp://HOST:PORT``.
    scheduler_file : path, optional
        The JSON file ``dask scheduler --scheduler-file`` writes.
    client : distributed.Client or cluster object, optional
        An existing client (left open by :meth:`close`), or a cluster
        object (``LocalCluster``, ``SLURMCluster``, anything with a
        ``scheduler_address``) that a new client of this backend connects to
        (the cluster itself is left running).
    timeout : float
        Seconds to wait for the scheduler to answer.
    threads_per_task : int
        Numba threads of one task (see the module docstring).
    retries : int
        Further tries of a task that raised an exception, on any worker
        (a task whose worker *died* is resubmitted regardless).

    Raises
    ------
    SweepError
        Unreachable scheduler, missing scheduler file, bad address, or
        ambiguous arguments (one line).

    Attributes
    ----------
    client : distributed.Client
    stats : list of TaskStat
        One entry per finished task of every :meth:`map_unordered`, in the
        order they finished.
    """

    def __init__(
        self,
        address: str | None = None,
        scheduler_file: str | os.PathLike | None = None,
        client: Any = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        threads_per_task: int = 1,
        retries: int = 1,
    ) -> None:
        given = [name for name, v in (("address", address), ("scheduler_file", scheduler_file),
                                      ("client", client)) if v is not None]
        if len(given) > 1:
            raise SweepError(f"give one of address, scheduler_file and client, not "
                             f"{' and '.join(given)}")
        timeout = check_timeout(timeout)
        if int(threads_per_task) != threads_per_task or threads_per_task < 1:
            raise SweepError(f"threads_per_task must be an integer >= 1, got {threads_per_task!r}")
        if int(retries) != retries or retries < 0:
            raise SweepError(f"retries must be an integer >= 0, got {retries!r}")
        self.timeout = float(timeout)
        self.threads_per_task = int(threads_per_task)
        self.retries = int(retries)
        self.stats: list[TaskStat] = []
        self._owns_client = True
        self._token = uuid.uuid4().hex[:8]
        self._maps = itertools.count()
        self._pending: dict[str, Any] = {}  # key -> future of the maps in progress
        self._quiet = _QuietLogs()

        from distributed import Client

        self.client = None
        if client is not None:
            if isinstance(client, Client):
                self.client, self._owns_client = client, False
                self.address = getattr(client.scheduler, "address", None)
                self._quiet.start()
                return
            address = getattr(client, "scheduler_address", None)
            if not isinstance(address, str):
                raise SweepError(f"client must be a distributed.Client or a Dask cluster object "
                                 f"(with a scheduler_address), got {type(client).__name__}")
        elif scheduler_file is not None:
            address = scheduler_address(scheduler_file)
        elif address is None:
            address = os.environ.get(ADDRESS_VARIABLE) or None
            if address is None:
                raise SweepError(f"no Dask scheduler given (address, scheduler_file, client "
                                 f"or {ADDRESS_VARIABLE})")
        _probe(address, self.timeout)
        try:
            self.client = Client(address, timeout=self.timeout, set_as_default=False)
        except Exception:  # lost between the probe and now
            raise SweepError(f"cannot connect a Dask client to {address} within "
                             f"{self.timeout:g} s") from None
        self.address = address
        self._quiet.start()

    # ------------------------------------------------------------ protocol

    @property
    def workers(self) -> int:
        """Parallel task slots now: threads of all workers over ``threads_per_task``
        (at least 1, also while an adaptive cluster has no worker yet)."""
        try:
            threads = sum(self.client.nthreads().values())
        except Exception:
            threads = 0
        return max(1, threads // self.threads_per_task)

    def map_unordered(
        self, fn: Callable[[Any], Any], items: Iterable[Any]
    ) -> Iterator[tuple[Any, Any]]:
        """Run ``fn(item)`` for every item on the cluster; yield ``(item, result)``
        as tasks finish.

        Parameters
        ----------
        fn : callable
            Picklable (a module-level function of an installed module: the
            workers import it).
        items : iterable
            Picklable task descriptions.

        Yields
        ------
        (item, result)
            In the order the tasks finish.

        Raises
        ------
        Exception
            The first exception a task raised (its own type), after its retries;
            the pending tasks are cancelled.
        WorkersLost
            A task killed too many workers, or the scheduler was lost (also while
            a finished task's result was being fetched from it).
        """
        from distributed import as_completed
        from distributed.client import FutureCancelledError

        try:
            from distributed import KilledWorker
        except ImportError:  # pragma: no cover - older distributed
            from distributed.scheduler import KilledWorker

        items = list(items)
        if not items:
            return
        call = _OnWorker(fn, self.threads_per_task)
        name = getattr(fn, "__name__", "task")
        prefix = f"particles-{name}-{self._token}-{next(self._maps)}"
        pending = {}
        submitted = {}
        self._pending = mine = {}
        for i, item in enumerate(items):
            future = self.client.submit(call, item, key=f"{prefix}-{i}", pure=False,
                                        retries=self.retries)
            pending[future.key] = (future, i)
            mine[future.key] = future
            submitted[future.key] = time.perf_counter()
        try:
            for future in as_completed([f for f, _ in pending.values()], loop=self.client.loop):
                _, i = pending.pop(future.key)
                mine.pop(future.key, None)
                try:
                    envelope = future.result()
                except KilledWorker as exc:
                    raise WorkersLost(f"a sweep task killed {_allowed_failures()} Dask workers "
                                      f"in a row (out of memory?): {' '.join(str(exc).split())}"
                                      ) from None
                except FutureCancelledError:
                    raise self._lost("its tasks were cancelled") from None
                except OSError:
                    if future.status == "error":
                        raise  # the task's own error
                    # CommClosedError: the scheduler went away while the result was fetched
                    raise self._lost("the connection closed while a result was fetched"
                                     ) from None
                roundtrip = time.perf_counter() - submitted.pop(future.key)
                future.release()
                self.stats.append(TaskStat(envelope.worker, envelope.seconds,
                                           envelope.compile_seconds, roundtrip))
                yield items[i], envelope.result
        finally:
            self._cancel(mine)

    def _lost(self, what: str) -> WorkersLost:
        return WorkersLost(f"lost the Dask scheduler at {self.address} (stopped or "
                           f"restarted?): {what}")

    def _cancel(self, futures: dict[str, Any]) -> None:
        if futures and self.client is not None:
            try:
                self.client.cancel(list(futures.values()), force=True)
            except Exception:  # the scheduler is gone: nothing left to cancel
                pass
            futures.clear()

    def close(self) -> None:
        """Cancel the tasks of a map stopped early (Ctrl-C, a failed write) and close
        the client this backend made (a given client, and clusters, stay open).
        Idempotent."""
        if self.client is None:
            return
        try:
            self._cancel(self._pending)
            if self._owns_client:
                self.client.close(timeout=self.timeout)
        finally:
            self.client = None
            self._quiet.stop()

    def __enter__(self) -> DaskBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DaskBackend({self.address!r}, threads_per_task={self.threads_per_task})"


class _QuietLogs:
    """While a backend is open, ``distributed``'s own loggers are silent: a lost
    scheduler or worker is reported once, by the backend's exception (the
    client logs tens of lines of reconnection tracebacks first)."""

    def __init__(self) -> None:
        self._saved: dict[str, bool] = {}

    def start(self) -> None:
        import logging

        names = ["distributed", *(n for n in logging.root.manager.loggerDict
                                  if n.startswith("distributed."))]
        for name in names:
            logger = logging.getLogger(name)
            self._saved.setdefault(name, logger.disabled)
            logger.disabled = True

    def stop(self) -> None:
        import logging

        for name, disabled in self._saved.items():
            logging.getLogger(name).disabled = disabled
        self._saved.clear()


def _allowed_failures() -> int:
    import dask

    return int(dask.config.get("distributed.scheduler.allowed-failures", 3))
