"""File kinds as objects: what a session needs of a kind of file, and the registry of kinds.

Every file a session writes (:func:`particles.runs.session.stream`) is of one
*kind*: a particle trajectory (:mod:`particles.io.h5md`), a model comparison
(:mod:`particles.io.compare`), a mean-field density
(:mod:`particles.io.density`) or a sweep (:mod:`particles.io.sweep`).  A kind
is an object with the :class:`FileKind` protocol: it creates and reopens its
files, summarises them, tells whether it can open one (by its header, as
xarray's backend entry points do with ``guess_can_open``), and says how many
items a complete file holds and how many bytes they take.  The session
driver knows nothing else of a file.

:data:`FILE_KINDS` maps a kind's name to it; each kind module adds its own
entry (one line) when it is imported, and :mod:`particles.io` imports every
kind module, so the registry is complete once ``particles.io`` is loaded.
:func:`kind_of` names the kind of a file on disk: ``info``, ``plot`` and the
readers' refusals ask it instead of sniffing attributes themselves.

Each kind also ships a small :class:`Example` (a spec and its items, made
without integrating anything), which the crash-safety contract suite
(``tests/contracts``) streams, kills, fills the disk under and resumes: a
kind registered here gets that suite by being registered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import h5py

from particles.errors import OutputWriteError, Summary, TrajectoryFileError
from particles.io.hdf5 import file_error, open_read

__all__ = ["FILE_KINDS", "Example", "FileKind", "Writer", "kind_of", "refusal", "register"]


@runtime_checkable
class Writer(Protocol):
    """What a session asks of an open writer of any kind.

    Attributes
    ----------
    frames : int
        Items on disk (frames; systems for a sweep).
    pending : int
        Items appended but not yet on disk.
    failed : OutputWriteError or None
        The write failure that stopped the writer.
    """

    frames: int

    @property
    def pending(self) -> int: ...

    @property
    def failed(self) -> OutputWriteError | None: ...

    def append(self, item: Any) -> bool:
        """Take one item; True when this call wrote items to disk."""
        ...

    def flush(self) -> None:
        """Write every pending item and flush the file."""
        ...

    def close(self, *, complete: bool) -> None:
        """Write what is pending, record whether the file is complete, close it."""
        ...


@dataclass(frozen=True)
class Example:
    """A small file of a kind, for the contract suite and the documentation.

    Attributes
    ----------
    spec : object
        What :meth:`FileKind.create` takes.
    items : callable
        ``items(summary)``: the items of the file from the point ``summary``
        (None: the start) describes, each a deterministic function of its
        index, so a resumed file equals an uninterrupted one.
    """

    spec: Any
    items: Callable[[Summary | None], Iterator[Any]]


@runtime_checkable
class FileKind(Protocol):
    """A kind of file: its layout's writer, reader and sizes (see the module docstring).

    Attributes
    ----------
    name : str
        Registry key (the ``/parameters`` attribute ``kind``, where the kind
        writes one).
    description : str
        What a file of the kind is, in words (``"mean-field density"``).
    command : str
        The command that writes it (``"particles meanfield"``).
    reader : str
        The function that reads it (``"particles.load_density"``).
    unit : str
        What its items are (``"frames"``, ``"systems"``).
    resumable : bool
        Whether :meth:`reopen` continues a file (False: a session is rerun).
    error : type
        The exception its readers raise for a file they cannot read.
    """

    name: str
    description: str
    command: str
    reader: str
    unit: str
    resumable: bool
    error: type[Exception]

    def can_open(self, f: h5py.File) -> bool:
        """Whether the open file is of this kind (by its header; never raises)."""
        ...

    def create(self, path: Path, spec: Any, *, flush_interval: float) -> Writer:
        """A writer of a new file (which must not exist) holding no item yet."""
        ...

    def reopen(self, path: Path, spec: Any, *, flush_interval: float) -> Writer:
        """A writer appending to an existing file; ``spec`` (when not None)
        replaces the stored one (an extended run)."""
        ...

    def summarize(self, path: Path) -> Summary:
        """What the file holds (raises :attr:`error` for a file it cannot read)."""
        ...

    def load(self, path: Path) -> Any:
        """Everything the file holds, read (raises :attr:`error` as :meth:`summarize`)."""
        ...

    def expected(self, spec: Any) -> int:
        """Items of the complete file."""
        ...

    def bytes_needed(self, spec: Any, items: int) -> int:
        """Free space needed to write ``items`` more items (an estimate)."""
        ...

    def example(self) -> Example:
        """A small spec and its items (:class:`Example`)."""
        ...


#: name -> file kind; each kind module adds its entry (:func:`register`).
FILE_KINDS: dict[str, FileKind] = {}


def register(kind: FileKind) -> FileKind:
    """Add a kind to :data:`FILE_KINDS` (its one registry line) and return it."""
    if not isinstance(kind, FileKind):
        raise TypeError(f"{kind!r} does not have the FileKind protocol")
    FILE_KINDS[kind.name] = kind
    return kind


def kind_of(path: str | Path) -> FileKind:
    """The kind of the file at ``path``, asked of every registered kind.

    Raises
    ------
    TrajectoryFileError
        Missing, not HDF5, damaged, or of no registered kind (one line).
    """
    path = Path(path)
    f, _ = open_read(path, what="particles")
    with f:
        for kind in FILE_KINDS.values():
            if kind.can_open(f):
                return kind
    names = ", ".join(k.description for k in FILE_KINDS.values())
    raise file_error(path, f"not a particles file (none of: {names})")


def refusal(path: Path, f: h5py.File, wanted: FileKind, wanted_words: str) -> None:
    """Raise the one-line error of ``wanted``'s readers for a file of another kind.

    Parameters
    ----------
    path : Path
    f : h5py.File
        The open file.
    wanted : FileKind
        The kind the reader reads.
    wanted_words : str
        What the reader reads, in words (``"a particle trajectory"``).

    Raises
    ------
    Exception
        ``wanted.error`` naming the file's kind, the command that wrote it
        and the function that reads it, when the file is of another
        registered kind.  Returns when it is of no registered kind (the
        reader's own checks say why it cannot read it).
    """
    for kind in FILE_KINDS.values():
        if kind is not wanted and kind.can_open(f):
            message = (f"is a {kind.description} file ({kind.command}), not {wanted_words}; "
                       f"read it with {kind.reader}")
            if wanted.error is TrajectoryFileError:
                raise file_error(path, message)
            raise wanted.error(f"{path}: {message}")
