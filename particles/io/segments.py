"""A trajectory's segments: the resumes that changed how its frames are computed.

A run resumed with other integration settings (``--resume --collapse-tol
1e-7``, another integrator, other tolerances: what
:func:`particles.runs.run.resumed_config` accepts) goes on from its last
frame with the new settings.  Each such resume starts a *segment*, one row
of ``/segments`` in the file::

    /segments                 only in a file resumed with changed settings
        frame    int64   (segments,)   the frame it continued from: the frames
                                       after it are its own
        time     float64 (segments,)   that frame's time
        changes  str     (segments,)   JSON {field: [before, after]} of the
                                       configuration fields it changed
        written  str     (segments,)   when the resume began (ISO 8601, UTC)

The frames up to the first segment's ``frame`` are the original settings',
those after segment ``i``'s ``frame`` (up to the next one's) segment ``i``'s;
``/parameters`` ``config`` holds the settings of the last segment, which a
next resume compares with (so the same changed settings again start no
segment, and the original ones start another).  A file never resumed with
changes has no ``/segments`` and stays byte-identical to before.

Changes of :data:`UNSEGMENTED` start none: a larger ``T`` (an extension
passes through every stored frame, bit for bit) and the stops.

Crash safety.  The row is written when the file is reopened, before the
configuration and before any frame of the segment.  A segment that has no
frame of its own yet (``frame`` is the last frame: killed, or paused, before
its first one) is folded into the next resume's: its changes and the new
ones become one row, dropped when they cancel.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from particles.config import SimulationConfig
from particles.io.hdf5 import appendable, file_error

__all__ = ["SEGMENTS", "SEGMENT_COLUMNS", "UNSEGMENTED", "Segment", "read_rows",
           "record_segment", "segment_changes"]

#: the group of a trajectory's segments.
SEGMENTS = "segments"

#: the columns of ``/segments`` and their types (strings: variable-length UTF-8).
SEGMENT_COLUMNS: dict[str, Any] = {"frame": np.int64, "time": np.float64,
                                   "changes": h5py.string_dtype(), "written": h5py.string_dtype()}

#: configuration fields whose change on a resume starts no segment: the run's
#: length and save times (an extension passes through the stored frames) and its stops.
UNSEGMENTED = ("T", "save_times", "until_clusters", "max_wall")


@dataclass(frozen=True)
class Segment:
    """One resume that changed how the frames after ``frame`` are computed.

    Attributes
    ----------
    frame : int
        Index of the frame it continued from; the frames after it are its own.
    time : float
        That frame's time.
    changes : dict of str to tuple
        ``field -> (before, after)`` of each configuration field it changed
        (JSON values, as :meth:`~particles.config.SimulationConfig.to_dict`
        writes them).
    written : str
        When the resume began (ISO 8601, UTC).
    """

    frame: int
    time: float
    changes: dict[str, tuple]
    written: str

    def describe(self) -> str:
        """``"from frame 12 (t=3.5): collapse_tol 8.88e-16 -> 1e-07"``."""
        changed = ", ".join(f"{k} {_text(a)} -> {_text(b)}" for k, (a, b) in self.changes.items())
        return f"from frame {self.frame} (t={self.time:g}): {changed}"


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def segment_changes(before: SimulationConfig | dict, after: SimulationConfig
                    ) -> dict[str, list]:
    """``field -> [before, after]`` (JSON values) of each field of :class:`SimulationConfig`
    that differs, but those of :data:`UNSEGMENTED`, in field order.

    ``before`` may be a configuration's :meth:`~SimulationConfig.to_dict` (a
    segment's settings rebuilt from the rows; fields not written read as None).
    """
    a = before if isinstance(before, dict) else before.to_dict()
    b = after.to_dict()
    names = [f.name for f in dataclasses.fields(SimulationConfig)]
    return {k: [a.get(k), b.get(k)] for k in names
            if k not in UNSEGMENTED and a.get(k) != b.get(k)}


def read_rows(f: h5py.File, frames: int | None = None) -> tuple[Segment, ...]:
    """The segments stored in an open trajectory (none without ``/segments``).

    Parameters
    ----------
    f : h5py.File
    frames : int, optional
        Frames the file holds: rows past its last frame (none, unless damaged)
        are left out.

    Raises
    ------
    TrajectoryFileError
        ``/segments`` is not the four columns of one axis, or a row is garbled.
    """
    group = f.get(SEGMENTS)
    if group is None:
        return ()
    path = Path(f.filename)
    if not isinstance(group, h5py.Group) or any(
            not isinstance(group.get(k), h5py.Dataset) or group[k].ndim != 1
            for k in SEGMENT_COLUMNS):
        raise file_error(path, f"/{SEGMENTS} is not four datasets "
                         f"{{{','.join(SEGMENT_COLUMNS)}}} of one axis")
    k = min(group[name].shape[0] for name in SEGMENT_COLUMNS)
    rows = []
    for i in range(k):
        frame = int(group["frame"][i])
        if frames is not None and frame >= frames:
            continue
        try:
            changes = json.loads(_string(group["changes"][i]))
            changes = {str(key): (a, b) for key, (a, b) in changes.items()}
        except (ValueError, TypeError, AttributeError):
            raise file_error(path, f"/{SEGMENTS} row {i} does not hold the changes as JSON "
                             "{field: [before, after]}") from None
        rows.append(Segment(frame, float(group["time"][i]), changes,
                            _string(group["written"][i])))
    return tuple(rows)


def _string(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def record_segment(f: h5py.File, stored: SimulationConfig, config: SimulationConfig,
                   frames: int, time: float) -> None:
    """Record that the file, holding ``frames`` frames of ``stored`` up to ``time``,
    goes on with ``config`` (called before ``config`` replaces ``stored``).

    A row is appended when the settings change (:func:`segment_changes`); a
    last row with no frame of its own is folded into it (dropped when the
    changes cancel).
    """
    rows = read_rows(f)
    before = stored.to_dict()
    pending = bool(rows) and rows[-1].frame >= frames - 1
    if pending:  # its changes undone: the settings of the frames before it
        before.update({k: a for k, (a, _) in rows[-1].changes.items()})
    changes = segment_changes(before, config)
    if not pending and not changes:
        return
    group = f.get(SEGMENTS)
    if group is None:
        group = f.require_group(SEGMENTS)
        for name, dtype in SEGMENT_COLUMNS.items():
            appendable(group, name, (), dtype)
    k = min(group[name].shape[0] for name in SEGMENT_COLUMNS) - pending
    row = {"frame": frames - 1, "time": time, "changes": json.dumps(changes),
           "written": datetime.now(UTC).isoformat(timespec="seconds")}
    if k + bool(changes) == 0:  # the only row, cancelled: the file as if never changed
        del f[SEGMENTS]
        return
    for name in SEGMENT_COLUMNS:
        group[name].resize(k + bool(changes), axis=0)
        if changes:
            group[name][k] = row[name]
