"""What every backend of a sweep is: the :class:`Backend` protocol, and the
rules the Dask backend and the command line share (the scheduler variable, the
timeout's default and check)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

__all__ = ["DEFAULT_TIMEOUT", "SCHEDULER_VARIABLE", "Backend", "check_timeout"]

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
