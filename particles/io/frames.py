"""The frame writer every file kind of frames shares: buffered, flushed on a timer, crash safe.

:class:`GroupWriter` appends frames (:class:`~particles.trajectory.Frame`)
to one H5MD element (a particle group's ``position`` and its observables, or
a field's element) and writes them in batches: per batch ``value`` first,
then every observable, then ``time`` and ``step`` last, then ``H5Fflush``.
Readers use the shortest of those lengths, so a process killed at any moment
leaves whole frames.  Each batch's disk space is reserved first
(:class:`~particles.io.hdf5.Reserve`): a full disk drops the batch before
HDF5 writes a byte and raises :class:`~particles.errors.OutputWriteError`;
the file keeps every frame written before and is never marked complete.
Trajectories (:mod:`particles.io.h5md`), comparisons
(:mod:`particles.io.compare`) and densities (:mod:`particles.io.density`)
write through it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Protocol

import h5py
import numpy as np

from particles.errors import OutputWriteError
from particles.io.hdf5 import (
    FLUSH_INTERVAL,
    RESERVE_MARGIN,
    Reserve,
    appendable,
    chunk_frames,
    close_file,
    close_quietly,
    write_failure,
)
from particles.trajectory import Frame

__all__ = ["MAX_BUFFER_BYTES", "FrameCounts", "FrameLayout", "GroupWriter", "clock_element"]

#: buffered frames are written early once they hold this many bytes.
MAX_BUFFER_BYTES = 256 * 2**20


class FrameLayout(Protocol):
    """What :class:`GroupWriter` asks of a configuration (a
    :class:`~particles.config.SimulationConfig`, or another kind's layout)."""

    batch: int | None
    positions: str

    def output_times(self) -> np.ndarray: ...


class FrameCounts:
    """The :class:`~particles.errors.Summary` protocol of a summary of frames
    (a dataclass with ``frames``, ``frames_expected`` and ``time``)."""

    frames: int
    frames_expected: int
    time: float

    @property
    def items(self) -> int:
        """Frames stored."""
        return self.frames

    @property
    def items_expected(self) -> int:
        """Frames of the complete file."""
        return self.frames_expected

    def describe(self) -> str:
        """``"holds 5 of 11 frames (t=0.5)"``."""
        return f"holds {self.frames} of {self.frames_expected} frames (t={self.time:g})"


def clock_element(elements, names) -> h5py.Group:
    """The observable element holding the observables' ``step`` and ``time`` when
    positions are not kept for every frame (the others hold hard links to them)."""
    return elements[names[0]]


class GroupWriter:
    """Appends the frames of one particle group and flushes them on a timer.

    The one frame writer of every file kind: a trajectory file has one group
    (:class:`TrajectoryWriter`), a comparison file one per model
    (:meth:`ComparisonWriter.add_model`).

    Parameters
    ----------
    file : h5py.File
        A writable file holding the group (:func:`add_particle_group`).
    config : SimulationConfig
        The group's configuration.
    group : str
        Name under ``/particles``.
    observables : str
        Path of the group's observables.
    parameters : str
        Path of the group whose ``complete`` attribute records the run's end.
    frames : int
        Frames already stored.
    flush_interval : float
        Seconds of wall time between writes to disk.
    frame_group : str, optional
        Path of the element holding the frames' ``step``, ``time`` and
        ``value`` (default ``particles/<group>/position``); one inside
        ``observables`` (a density file's ``observables/density``) is not
        counted among the observables.
    observable_attrs : mapping of str to mapping, optional
        Attributes of an observable's element, written when it is created
        (a trajectory's ``definition`` of its energy).

    ``config`` needs ``batch``, ``positions`` and ``output_times()`` only (a
    :class:`~particles.config.SimulationConfig`, or the layout of another
    file kind).
    """

    def __init__(
        self,
        file: h5py.File,
        config: FrameLayout,
        *,
        group: str = "tokens",
        observables: str = "observables",
        parameters: str = "parameters",
        frames: int = 0,
        flush_interval: float = FLUSH_INTERVAL,
        reserve: Reserve | None = None,
        frame_group: str | None = None,
        observable_attrs: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self._file = file
        self._reserve = reserve if reserve is not None else Reserve(file)
        self._failed: OutputWriteError | None = None
        self._frame_bytes = 0
        self.config = config
        self.frames = frames
        self.flush_interval = flush_interval
        self._position = frame_group or f"particles/{group}/position"
        self._observables = observables
        self._parameters = parameters
        self._buffer: list[Frame] = []
        self._buffer_bytes = 0
        self._last_flush = time.monotonic()
        self._single = config.batch is None
        self._observable_attrs = dict(observable_attrs or {})
        #: True once the run ended at a stop before its last save time (a
        #: trajectory's until_clusters): complete with fewer frames than expected
        self.ends_early = False

    def append(self, frame: Frame) -> bool:
        """Buffer one frame; write the buffer to disk when it is due.

        Returns
        -------
        bool
            True when this call wrote frames to disk.
        """
        if self.config.positions != "all" and self._buffer:
            # only the latest positions are written (the resume point)
            self._buffer_bytes -= self._buffer[-1].positions.nbytes
            self._buffer[-1] = _without_positions(self._buffer[-1])
        self._buffer.append(frame)
        self._buffer_bytes += frame.positions.nbytes
        if not self._frame_bytes:
            self._frame_bytes = frame.positions.nbytes + 16 + sum(
                np.asarray(v).nbytes for v in frame.observables.values()
            )
        if (
            time.monotonic() - self._last_flush >= self.flush_interval
            or self._buffer_bytes >= MAX_BUFFER_BYTES
        ):
            self.flush()
            return True
        return False

    def needed(self) -> int:
        """Estimated bytes of disk space still needed to write the remaining frames."""
        remaining = max(0, len(self.config.output_times()) - self.frames)
        return remaining * max(self._frame_bytes, 1) + RESERVE_MARGIN

    def _batch_bytes(self, k: int) -> int:
        """An upper bound of the bytes a batch of ``k`` frames adds to the file."""
        rows = [self._frame_bytes - 16, 8, 8] if self._frame_bytes else [0]
        if self._buffer:
            rows = [self._buffer[0].positions.nbytes, 8, 8] + [
                np.asarray(v).nbytes for v in self._buffer[0].observables.values()
            ]
        k0, k1 = self.frames, self.frames + k
        total = RESERVE_MARGIN
        for row in rows:
            cf = chunk_frames(row)
            chunks = -(-k1 // cf) - -(-k0 // cf)  # chunks first written by this batch
            total += chunks * (cf * row + 1024)  # whole chunks, index entries
        return total

    def _fail(self, exc: BaseException) -> OutputWriteError:
        """Drop the buffer, remember the failure: no later write is tried."""
        self._failed = write_failure(self._file.filename, exc, needed=self.needed(),
                                     frames=self.frames)
        self._buffer = []
        self._buffer_bytes = 0
        return self._failed

    @property
    def failed(self) -> OutputWriteError | None:
        """The write failure that stopped this writer, or None."""
        return self._failed

    def flush(self) -> None:
        """Write the buffered frames and flush the file.

        The batch's disk space is reserved first; a write failure raises
        :class:`~particles.errors.OutputWriteError` at once (the buffered
        frames are dropped, the frames written before stay on disk).
        Idempotent if interrupted: a repeated call rewrites the same rows.
        """
        if self._failed is not None:
            raise self._failed
        frames = self._buffer
        k = len(frames)
        while True:  # the longest prefix of the batch the disk can hold
            try:
                self._reserve.ensure(self._file, self._batch_bytes(k) if k else 4096)
                break
            except OSError as exc:
                # without every frame's positions only the whole batch carries the
                # resume point (its last frame), so it is written whole or not at all
                if k <= 1 or self.config.positions != "all":
                    raise self._fail(exc) from None
                k //= 2
        try:
            self._write(frames[:k])
        except (OSError, RuntimeError) as exc:
            raise self._fail(exc) from None
        self.frames += k
        self._buffer = frames[k:]
        self._buffer_bytes = sum(fr.positions.nbytes for fr in self._buffer)
        self._last_flush = time.monotonic()
        if self._buffer:  # the rest does not fit
            self.flush()

    def _write(self, frames: list[Frame]) -> None:
        if frames:
            k0, k1 = self.frames, self.frames + len(frames)
            f = self._file
            pos = f[self._position]
            obs = f[self._observables]
            names = list(frames[0].observables)
            keep_all = self.config.positions == "all"
            stored = [n for n in obs if f"{self._observables}/{n}" != self._position]
            if not stored:
                shape = () if self._single else (self.config.batch,)
                clock = pos
                for name in names:
                    g = obs.create_group(name)
                    appendable(g, "value", shape, np.float64)
                    g.attrs.update(self._observable_attrs.get(name, {}))
                    if not keep_all and clock is pos:  # the observables' own clock
                        appendable(g, "step", (), np.int64)
                        appendable(g, "time", (), np.float64)
                        clock = g
                        continue
                    g["step"] = clock["step"]  # hard links: sampled with the positions
                    g["time"] = clock["time"]
            elif set(stored) != set(names):
                raise ValueError(
                    f"observables {sorted(names)} differ from those stored in the "
                    f"file ({sorted(stored)})"
                )
            # value first, time and step last: readers use the shortest length
            if keep_all:
                x = np.stack([fr.positions for fr in frames])
                _put(pos["value"], k0, k1, x[:, 0] if self._single else x)
            for name in names:
                v = np.stack([fr.observables[name] for fr in frames])
                _put(obs[name]["value"], k0, k1, v[:, 0] if self._single else v)
            clock = pos if keep_all else clock_element(obs, list(obs))
            _put(clock["time"], k0, k1, np.array([fr.time for fr in frames]))
            _put(clock["step"], k0, k1, np.array([fr.step for fr in frames], dtype=np.int64))
            if not keep_all:  # then the resume point: the latest frame, overwritten
                last = frames[-1]
                _put(pos["value"], 0, 1, last.positions[None, 0] if self._single
                     else last.positions[None])
                _put(pos["time"], 0, 1, np.array([last.time]))
                _put(pos["step"], 0, 1, np.array([last.step], dtype=np.int64))
        self._file.flush()

    @property
    def pending(self) -> int:
        """Frames buffered but not yet on disk."""
        return len(self._buffer)

    def finish(self, *, complete: bool) -> None:
        """Write what is buffered and record whether the group's run completed.

        ``complete`` is written last, only once every frame is on disk; after
        a write failure nothing more is written (the flag stays 0).
        """
        if self._failed is not None:
            if complete:
                raise self._failed
            return
        self.flush()
        if complete and not self.ends_early and self.frames != len(self.config.output_times()):
            raise ValueError(
                f"{self.frames} of {len(self.config.output_times())} frames written; "
                "not marked complete"
            )
        try:
            params = self._file[self._parameters]
            params.attrs.update(self.closing_attrs())
            params.attrs["complete"] = np.int8(bool(complete))  # last
            self._file.flush()
        except (OSError, RuntimeError) as exc:
            raise self._fail(exc) from None

    def closing_attrs(self) -> dict[str, object]:
        """Attributes of the parameters group written when the group is closed,
        before ``complete`` (a trajectory's ``stop_reason``); none here."""
        return {}
    def close(self, *, complete: bool) -> None:
        """Write what is buffered, record whether the run completed, close the file.

        Raises
        ------
        OutputWriteError
            A write failed (now or before, when ``complete``): the file holds
            the frames written before the failure, marked incomplete.
        """
        if not self._file:
            return
        try:
            self.finish(complete=complete)
        except BaseException:
            close_quietly(self._file, self._reserve)
            raise
        close_file(self._file, self._reserve)


def _without_positions(frame: Frame) -> Frame:
    """A buffered frame whose positions will not be written (kept: shape only)."""
    empty = np.empty((0, *frame.positions.shape[1:]), dtype=frame.positions.dtype)
    return dataclasses.replace(frame, positions=empty)


def _put(ds: h5py.Dataset, k0: int, k1: int, data: np.ndarray) -> None:
    if ds.shape[0] != k1:
        ds.resize(k1, axis=0)
    ds[k0:k1] = data


