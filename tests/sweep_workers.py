"""Task functions for the worker-process tests (importable by spawned workers)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def square(item: int) -> int:
    """A short task (0.2 s, so that every worker gets some): ``item ** 2`` and
    the worker's pid."""
    time.sleep(0.2)
    return item * item, os.getpid()


def die_once(item: tuple[str, int]) -> int:
    """``x ** 2`` for ``item = (marker, x)``; the first worker to see no marker
    file creates it and kills itself (SIGKILL: a worker lost mid-task)."""
    marker, x = item
    if x == 3 and not Path(marker).exists():
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x


def fail_on_five(item: int) -> int:
    """``item ** 2``, except that 5 raises."""
    if item == 5:
        raise ValueError("task 5 failed")
    return item * item


def always_die(item: int) -> int:
    """Kill the worker (SIGKILL), whatever the item: a pool that keeps breaking."""
    os.kill(os.getpid(), signal.SIGKILL)
    return item


def die_often(item: tuple[str, int]) -> int:
    """``x ** 2`` for ``item = (directory, x)``; each of the first three tasks to
    run kills its worker once (a marker file per death), so the pool breaks
    repeatedly, also while tasks are being submitted."""
    directory, x = item
    deaths = sorted(Path(directory).glob("died-*"))
    if len(deaths) < 3 and not (Path(directory) / f"died-{x}").exists():
        (Path(directory) / f"died-{x}").touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x
