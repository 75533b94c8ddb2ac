"""A file kind written for a test: rows of numbers, registered when imported.

Importing this module (``-p toy_kind`` on the pytest command line, or
``--module toy_kind`` for the contract's driver process) adds ``"toy"`` to
:data:`particles.io.FILE_KINDS`; the crash-safety contract suite then runs
over it like over every kind of the package, which is what
``test_a_kind_registered_in_a_test_gets_the_contract`` checks.  It is written
on the shared HDF5 layer the way a kind of the package would be (reserve
before every write, value before the length readers trust, ``complete``
last).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from particles.errors import OutputWriteError, TrajectoryFileError
from particles.io.hdf5 import (
    RESERVE_MARGIN,
    appendable,
    close_file,
    close_quietly,
    create_file,
    file_error,
    file_kind,
    read_retrying,
    reopen_file,
    write_failure,
    write_header,
)
from particles.io.kinds import Example, register

WIDTH = 512  # numbers per row: 4 KiB rows


@dataclass(frozen=True)
class ToySummary:
    path: Path
    rows: int
    expected: int
    complete: bool

    @property
    def items(self) -> int:
        return self.rows

    @property
    def items_expected(self) -> int:
        return self.expected

    def describe(self) -> str:
        return f"holds {self.rows} of {self.expected} rows"


class ToyWriter:
    def __init__(self, f: h5py.File, reserve, rows: int) -> None:
        self._file, self._reserve = f, reserve
        self.frames = rows
        self._buffer: list[np.ndarray] = []
        self._failed: OutputWriteError | None = None

    @property
    def pending(self) -> int:
        return len(self._buffer)

    @property
    def failed(self) -> OutputWriteError | None:
        return self._failed

    def append(self, row: np.ndarray) -> bool:
        self._buffer.append(row)
        if len(self._buffer) >= 4:
            self.flush()
            return True
        return False

    def flush(self) -> None:
        if self._failed is not None:
            raise self._failed
        if not self._buffer:
            return
        k0, k1 = self.frames, self.frames + len(self._buffer)
        try:
            self._reserve.ensure(self._file, 8 * WIDTH * (k1 - k0 + 64) + RESERVE_MARGIN)
            ds = self._file["rows/value"]
            ds.resize(k1, axis=0)
            ds[k0:k1] = np.stack(self._buffer)
            self._file["rows"].attrs["length"] = np.int64(k1)  # what readers trust
            self._file.flush()
        except (OSError, RuntimeError) as exc:
            self._buffer = []
            self._failed = write_failure(self._file.filename, exc)
            raise self._failed from None
        self.frames, self._buffer = k1, []

    def close(self, *, complete: bool) -> None:
        if not self._file:
            return
        try:
            if self._failed is None:
                self.flush()
                if complete:
                    self._file["parameters"].attrs["complete"] = np.int8(1)
                    self._file.flush()
        except BaseException:
            close_quietly(self._file, self._reserve)
            raise
        close_file(self._file, self._reserve)


def _inspect(f: h5py.File, path: Path) -> tuple[int, int, bool]:
    if file_kind(f) != "toy":
        raise file_error(path, "not a toy file")
    rows = int(f["rows"].attrs["length"])
    expected = int(f["parameters"].attrs["expected"])
    return rows, expected, bool(f["parameters"].attrs["complete"]) and rows == expected


def row(k: int) -> np.ndarray:
    """Row ``k`` of the example, drawn from seed ``k``."""
    return np.random.default_rng(k).normal(size=WIDTH)


class ToyKind:
    name = "toy"
    description = "toy rows"
    command = "a test"
    reader = "toy_kind"
    unit = "rows"
    resumable = True
    error = TrajectoryFileError

    def can_open(self, f: h5py.File) -> bool:
        return file_kind(f) == "toy"

    def create(self, path: Path, spec: int, *, flush_interval: float) -> ToyWriter:
        def fill(f: h5py.File) -> None:
            write_header(f, kind="toy", complete=np.int8(0), expected=np.int64(spec))
            appendable(f.create_group("rows"), "value", (WIDTH,), np.float64)
            f["rows"].attrs["length"] = np.int64(0)

        f, reserve = create_file(path, fill)
        return ToyWriter(f, reserve, 0)

    def reopen(self, path: Path, spec: int | None, *, flush_interval: float) -> ToyWriter:
        rows = self.summarize(path).rows

        def prepare(f: h5py.File) -> None:
            f["rows/value"].resize(rows, axis=0)
            f["parameters"].attrs["complete"] = np.int8(0)

        f, reserve, _ = reopen_file(path, prepare)
        return ToyWriter(f, reserve, rows)

    def summarize(self, path: Path) -> ToySummary:
        rows, expected, complete = read_retrying(path, _inspect, lambda f, h: h, "toy")
        return ToySummary(Path(path), rows, expected, complete)

    def load(self, path: Path) -> np.ndarray:
        rows = self.summarize(path).rows
        return read_retrying(path, _inspect, lambda f, h: f["rows/value"][:rows], "toy")

    def expected(self, spec: int) -> int:
        return spec

    def bytes_needed(self, spec: int, items: int) -> int:
        return 8 * WIDTH * items + 2**16

    def example(self) -> Example:
        def items(summary: ToySummary | None):
            for k in range(0 if summary is None else summary.rows, 160):
                yield row(k)

        return Example(160, items)


TOY = register(ToyKind())
