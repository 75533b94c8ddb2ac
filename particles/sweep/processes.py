"""Tasks in local worker processes, one Numba thread each.

On these machines two one-thread processes finish a sweep's tasks about 1.5x
sooner than one process with two Numba threads: each task's Python parts
(drawing the systems, the frame loop) and its many short parallel regions
(one per save point) no longer wait for each other (benchmarks/bench_sweep.py).

:func:`map_processes` keeps at most ``2 * processes`` tasks in flight and
yields results as they finish.  A worker that dies (killed, out of memory)
breaks the pool, wherever that is seen (a result, or a task submitted to
the broken pool): a fresh pool runs the unfinished tasks again, at most
:data:`MAX_RESTARTS` times, then :class:`~particles.errors.WorkersLost`.
Workers ignore SIGINT (Ctrl-C is the driver's, which stops them); when the
consumer stops (an interrupt, an error, a closed generator) the workers are
terminated at once, their unfinished tasks lost, never half-written (the
driver writes every result).  Workers end with the driver: a driver killed
with SIGKILL cannot stop them, so each asks the kernel for SIGKILL when its
parent dies (``prctl(PR_SET_PDEATHSIG)`` on Linux) and, where that does not
exist, polls its parent; multiprocessing's resource tracker then removes the
pool's semaphores without a word (:func:`_start_tracker`).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from particles.errors import WorkersLost

__all__ = ["MAX_RESTARTS", "map_processes"]

#: fresh pools after workers died, before the sweep gives up.
MAX_RESTARTS = 3


#: ``prctl`` option: the signal a process gets when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """End this worker when the driver ``parent`` dies, however it dies."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # died before the request took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass

    def watch() -> None:  # elsewhere: poll (the parent's pid changes to a reaper's)
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def _init_worker(threads: int, parent: int) -> None:
    """Worker start-up: ends with the driver; Ctrl-C is left to the driver;
    ``threads`` Numba threads."""
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import numba

    numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))


#: the warning filter multiprocessing's resource tracker starts with (:func:`_pool`).
_QUIET_TRACKER = "ignore::UserWarning:multiprocessing.resource_tracker"


def _start_tracker() -> None:
    """Start multiprocessing's resource tracker (once per process) without its
    leak warning.  A driver killed with SIGKILL cannot release its pool's
    semaphores; the tracker, which outlives it, removes them and would say
    "There appear to be 5 leaked semaphore objects" on the driver's stderr
    after the driver is gone.  It takes the interpreter's ``-W`` options."""
    from multiprocessing import resource_tracker

    sys.warnoptions.append(_QUIET_TRACKER)
    try:
        resource_tracker.ensure_running()
    finally:
        sys.warnoptions.remove(_QUIET_TRACKER)


def _pool(processes: int, threads: int) -> ProcessPoolExecutor:
    _start_tracker()  # before the pool makes its semaphores, which start it
    # spawn: a clean interpreter (no forked Numba thread pool, no copied locks)
    return ProcessPoolExecutor(max_workers=processes,
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(threads, os.getpid()))


def _stop(pool: ProcessPoolExecutor) -> None:
    """Terminate the workers now (their tasks are abandoned) and release the pool."""
    # ProcessPoolExecutor has no public terminate before Python 3.14
    procs = list(getattr(pool, "_processes", {}).values())
    for p in procs:
        if p.is_alive():
            p.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(timeout=5)


def map_processes(fn: Callable[[Any], Any], items: Iterable[Any], *, processes: int,
                  threads: int = 1) -> Iterator[tuple[Any, Any]]:
    """``(item, fn(item))`` for every item, in the order the tasks finish.

    Parameters
    ----------
    fn : callable
        A module-level function (pickled by reference).
    items : iterable
        Picklable task descriptions.
    processes : int
        Worker processes.
    threads : int
        Numba threads per worker.

    Raises
    ------
    Exception
        Whatever ``fn`` raised (the other tasks are abandoned).
    WorkersLost
        Workers died more than :data:`MAX_RESTARTS` times.
    """
    pending = deque(items)
    running: dict[Any, Any] = {}
    restarts = 0
    pool = _pool(processes, threads)
    try:
        while pending or running:
            broken = _refill(pool, fn, pending, running, 2 * processes)
            if not broken:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    item = running.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        pending.appendleft(item)
                        broken = True
                        continue
                    yield item, result
            if broken:
                restarts += 1
                if restarts > MAX_RESTARTS:
                    raise WorkersLost(f"local worker processes died {restarts} times (out of "
                                      "memory? a script without a __main__ guard?)")
                # every task still in flight ran on the broken pool: run them again
                pending.extendleft(running.values())
                running.clear()
                _stop(pool)
                pool = _pool(processes, threads)
    finally:
        _stop(pool)


def _refill(pool: ProcessPoolExecutor, fn: Callable[[Any], Any], pending: deque,
            running: dict[Any, Any], limit: int) -> bool:
    """Submit pending tasks until ``limit`` run; True when the pool turned out broken
    (a worker died since the last results: the task stays pending)."""
    while pending and len(running) < limit:
        item = pending.popleft()
        try:
            running[pool.submit(fn, item)] = item
        except BrokenProcessPool:
            pending.appendleft(item)
            return True
    return False
