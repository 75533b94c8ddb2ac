"""Output paths: the one check before any work, temporary names, and putting a file in place.

Used by every session (:mod:`particles.runs.session`), the analysis sidecar
(:mod:`particles.io.analysis`), the exports and every figure writer
(:mod:`particles.plotting`), so a refusal, a temporary file and a
replacement read and behave the same everywhere:

* :func:`check_output_path` runs before any work;
* a new file is written under a hidden temporary name next to the target
  (:func:`temporary_path`: ``.NAME.PID@HOST.XXXXXXXX.partial``, naming the
  writer so that a later session can tell a stale one, :func:`writer_of`);
* :func:`put_in_place` gives it the target's name atomically, never
  clobbering a file that appeared meanwhile unless asked to;
* :func:`replacing` does both around one whole write (figures, movies).
"""

from __future__ import annotations

import os
import re
import socket
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from particles.errors import OutputExistsError, OutputPathError

__all__ = [
    "check_not_input",
    "check_output_path",
    "host_name",
    "put_in_place",
    "replacing",
    "same_file",
    "temporary_path",
    "writer_of",
    "writer_tag",
]

#: the writer's process id and host in a temporary file's name.
_WRITER = re.compile(r"\.(\d+)@([A-Za-z0-9-]+)\.[0-9a-f]{8}\.[^.]+$")


def host_name() -> str:
    """This machine's short host name, as temporary file names carry it."""
    name = socket.gethostname().split(".")[0]
    return re.sub(r"[^A-Za-z0-9-]", "-", name) or "localhost"


def writer_tag() -> str:
    """``PID@HOST`` of this process, for temporary file names."""
    return f"{os.getpid()}@{host_name()}"


def temporary_path(target: str | os.PathLike, suffix: str = ".partial") -> Path:
    """A fresh hidden name next to ``target`` for the file that will replace it:
    ``.NAME.PID@HOST.XXXXXXXX{suffix}`` (keep the extension in ``suffix`` for
    writers that infer the format from it)."""
    target = Path(target)
    return target.with_name(f".{target.name}.{writer_tag()}.{uuid.uuid4().hex[:8]}{suffix}")


def writer_of(path: str | os.PathLike) -> tuple[int, str] | None:
    """``(pid, host)`` of the process named in a temporary file's name, or None."""
    m = _WRITER.search(Path(path).name)
    return None if m is None else (int(m.group(1)), m.group(2))


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file (the same inode: links and hard links
    included); False when either does not exist."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_not_input(path: str | os.PathLike, inputs: Iterable[str | os.PathLike]) -> None:
    """Refuse an output that is one of the files a session reads.

    The same file under another name counts (a symbolic or hard link, a
    relative path: the inodes are compared), so that ``--overwrite`` never
    replaces the input a run was started from.

    Raises
    ------
    OutputPathError
        ``path`` names the same file as one of ``inputs`` (one line).
    """
    for source in inputs:
        if same_file(path, source):
            raise OutputPathError(f"{path} is an input of this run ({source}); write the "
                                  "output to another file", Path(path))


def put_in_place(temp: str | os.PathLike, target: str | os.PathLike, *,
                 overwrite: bool) -> None:
    """Give the finished temporary file the target's name, atomically.

    With ``overwrite`` an existing target is replaced (``os.replace``);
    without, the rename refuses to replace a file that appeared meanwhile
    (a hard link, which fails if the target exists, then the temporary name
    removed; where the file system has no hard links, a check and a rename).

    Raises
    ------
    OutputPathError
        ``target`` appeared meanwhile and ``overwrite`` is False.
    """
    temp, target = Path(temp), Path(target)
    if overwrite:
        os.replace(temp, target)
        return
    try:
        os.link(temp, target)  # atomic: fails if the target exists
    except FileExistsError:
        raise OutputPathError(
            f"{target} was created by someone else while this run started; not overwritten",
            target) from None
    except OSError:  # no hard links on this file system
        if target.exists():
            raise OutputPathError(
                f"{target} was created by someone else while this run started; not "
                "overwritten", target) from None
        os.replace(temp, target)
        return
    os.unlink(temp)


@contextmanager
def replacing(target: str | os.PathLike, *, overwrite: bool) -> Iterator[Path]:
    """A hidden temporary path (with ``target``'s extension) to write whole, which
    then takes ``target``'s name atomically (:func:`put_in_place`).

    An interrupted or failed write leaves ``target`` as it was (an existing file
    is replaced only by a complete one) and removes the temporary file.

    Yields
    ------
    Path
        The temporary path to write.
    """
    target = Path(target)
    temp = temporary_path(target, "".join(target.suffixes[-1:]))
    try:
        yield temp
        put_in_place(temp, target, overwrite=overwrite)
    finally:
        temp.unlink(missing_ok=True)


def check_output_path(
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    resume: bool = False,
    resumable: bool = True,
    inputs: Iterable[str | os.PathLike] = (),
) -> Path:
    """Check that a session or a figure writer may write ``path``, before any work starts.

    Parameters
    ----------
    path : str or path-like
        Target file.
    overwrite : bool
        Allow replacing an existing file.
    resume : bool
        The file must exist (it is continued in place).
    resumable : bool
        Whether the session can continue an existing file (named in the
        message refusing an existing file).
    inputs : iterable of path-like
        Files the session reads (:func:`check_not_input`).

    Returns
    -------
    Path

    Raises
    ------
    OutputPathError
        With a one-line message saying what is wrong
        (:class:`~particles.errors.OutputExistsError` for an existing file).
    """
    path = Path(path)
    if overwrite and resume:
        raise OutputPathError("overwrite and resume exclude each other", path)
    if path.is_dir():
        raise OutputPathError(f"{path} is a directory; give a file name", path)
    if path.is_symlink() and not path.exists():
        raise OutputPathError(f"{path} is a symbolic link to {os.readlink(path)}, which does "
                              "not exist; give a file name", path)
    if path.exists() and not path.is_file():
        # replacing it would put a regular file in place of a device node or a FIFO
        # (as root, --out /dev/null --overwrite replaced /dev/null)
        raise OutputPathError(f"{path} is not a regular file (a device, FIFO or socket); "
                              "give a file name", path)
    check_not_input(path, inputs)
    if resume:
        if not path.exists():
            raise OutputPathError(f"{path} does not exist; nothing to resume", path)
        return path
    parent = path.parent
    if not parent.is_dir():
        raise OutputPathError(f"directory {parent} does not exist", path)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"directory {parent} is not writable", path)
    if path.exists() and not overwrite:
        raise OutputExistsError(
            f"{path} exists; replace it with --overwrite (overwrite=True)"
            + (" or continue it with --resume (resume=True)" if resumable else ""), path
        )
    return path
