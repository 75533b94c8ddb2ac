"""Tasks in local worker processes, one Numba thread each.

On these machines two one-thread processes finish a sweep's tasks about 1.5x
sooner than one process with two Numba threads: each task's Python parts
(drawing the systems, the frame loop) and its many short parallel regions
(one per save point) no longer wait for each other (benchmarks/bench_sweep.py).

:func:`map_processes` keeps at most ``2 * processes`` tasks in flight and
yields results as they finish.  A worker that dies (killed, out of memory)
breaks the pool: a fresh pool runs the unfinished tasks again, at most
:data:`MAX_RESTARTS` times.  Workers ignore SIGINT (Ctrl-C is the driver's,
which stops them); when the consumer stops (an interrupt, an error, a closed
generator) the workers are terminated at once, their unfinished tasks lost,
never half-written (the driver writes every result).
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

__all__ = ["MAX_RESTARTS", "map_processes"]

#: fresh pools after workers died, before the sweep gives up.
MAX_RESTARTS = 3


def _init_worker(threads: int) -> None:
    """Worker start-up: Ctrl-C is left to the driver; ``threads`` Numba threads."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import numba

    numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))


def _pool(processes: int, threads: int) -> ProcessPoolExecutor:
    # spawn: a clean interpreter (no forked Numba thread pool, no copied locks)
    return ProcessPoolExecutor(max_workers=processes,
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(threads,))


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
    RuntimeError
        Workers died more than :data:`MAX_RESTARTS` times.
    """
    pending = deque(items)
    running: dict[Any, Any] = {}
    restarts = 0
    pool = _pool(processes, threads)
    try:
        while pending or running:
            while pending and len(running) < 2 * processes:
                item = pending.popleft()
                running[pool.submit(fn, item)] = item
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            broken = False
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
                    raise RuntimeError(f"local worker processes died {restarts} times (out of "
                                       "memory? a script without a __main__ guard?)")
                # every task still in flight ran on the broken pool: run them again
                pending.extendleft(running.values())
                running.clear()
                _stop(pool)
                pool = _pool(processes, threads)
    finally:
        _stop(pool)
