"""The generic session the file-kind contract suite streams every kind's example with.

A kind's own sessions (``run_to_file``, ``run_sweep``, ...) add their rules to
the one driver, :func:`particles.runs.session.stream`; the contract suite
needs none of them: it streams :meth:`FileKind.example` through the driver
with the plainest rules (resume continues the stored spec; a resumable
kind's file takes the target's name at its second item, another's once
complete), so a kind is held to the same crash safety whatever session
writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from particles.errors import Summary
from particles.io.kinds import FileKind
from particles.runs.session import Resume, Stops, stream

#: seconds between writes to disk in the contract's sessions (frequent: the
#: tests kill the writer a fraction of a second after it starts)
FLUSH_INTERVAL = 0.05


def session_of(kind: FileKind, *, resume: bool = False,
               pace: Callable[[Iterable], Iterable] = lambda items: items,
               overwrite: bool = False) -> Callable[[Path], Summary]:
    """``session(path) -> Summary``: stream the example of ``kind`` into ``path``
    (``resume``: continue it; ``pace`` wraps the items, to slow them down)."""
    example = kind.example()
    stops = Stops(kind.description, promote_at=2 if kind.resumable else None)
    rule = Resume(lambda summary, spec: None if summary.complete else example.spec)

    def session(path: Path) -> Summary:
        return stream(kind, path, None if resume else example.spec,
                      lambda spec, summary: pace(example.items(summary)), stops=stops,
                      resume=rule if resume else None, overwrite=overwrite,
                      flush_interval=FLUSH_INTERVAL)

    return session
