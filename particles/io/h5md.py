"""H5MD 1.1 trajectory files: the layout, a streaming writer and the reader.

Layout (https://www.nongnu.org/h5md/, version 1.1)::

    /h5md                          version = [1, 1]
        author                     name
        creator                    name = "particles", version
    /particles/tokens
        box                        dimension = d, boundary = ["none"] * d
        position
            step    int64   (frames,)
            time    float64 (frames,)
            value   float64 (frames, n, d)            one system
                            (frames, batch, n, d)     ensemble
    /observables/<name>            one element per observable, sampled with the positions
        step, time                 hard links to /particles/tokens/position/{step,time}
        value   float64 (frames,)                     one system
                        (frames, batch)               ensemble
    /parameters                    particles_schema = 1 (int), complete = 0 or 1 (int),
                                   config (JSON of SimulationConfig.to_dict()),
                                   seed (decimal string: resolved seeds are up to 128 bits),
                                   summation_degree (int: K or L of the spectral
                                   summation's series, only when it ran),
                                   summation_auto (1: summation "auto" chose the
                                   series; absent otherwise, so the files of
                                   direct runs stay as they were),
                                   stop_reason ("until_clusters" or "max_wall": a run
                                   that ended or paused at a stop, only then)
        versions                   particles, numpy, numba, h5py, hdf5, python
    /events/merges                 only with merge_events: the located merges
        time    float64 (merges,)             first time seen with fewer clusters
        before, after  int64 (merges,)        cluster counts either side
        system  int64   (merges,)             the system (0: one system); rows in
                                              time order, systems interleaved
                                   eps (linking distance of the counts, radians)
    /events/passages               only with until_clusters: each system's first
                                   passage to at most until_clusters clusters
        system  int64   (passages,)
        until   int64   (passages,)           the until_clusters it answers
        frame   int64   (passages,)           first frame seen there
        time    float64 (passages,)           the located merge (merge_events), else
                                              the frame's time; NaN: there at a resume
                                              point, since a time not recorded
                                   eps (as above)
    /events/switches               only where integrator "auto" switched: the save
                                   point it went on with its stiff phase at
        frame   int64   (switches,)           the frame: the frames after it are
                                              the new integrator's
        time    float64 (switches,)           its time
        before, after  str (switches,)        the integrators ("dopri5", "sdirk4")
        stiffness  float64 (switches,)        the evidence: mean dopri5 step times
                                              the spectral radius, least over systems
    /segments                      only in a file resumed with changed settings
        frame   int64   (segments,)           the frame each continued from
        time    float64 (segments,)           its time
        changes str     (segments,)           JSON {field: [before, after]}
        written str     (segments,)           when (ISO 8601, UTC)

A run stopped by ``until_clusters`` is complete with fewer frames than its
``T`` asks (``stop_reason`` says why); one paused by ``max_wall`` is
incomplete, and ``--resume`` continues it.  Events are written before the
frames they precede; readers keep the merges up to the last frame's time and
the passages up to the last frame, and reopening cuts the others (a kill
between the two writes).  A passage is written once per system and
``until_clusters`` (a resume does not repeat those on disk; one that changes
``until_clusters`` adds the new value's).

``integrator="auto"`` (:mod:`particles.integrators.auto`) records the frame
at which it went on with sdirk4 in ``/events/switches``, written with that
frame as the merges are (before it; readers keep the rows up to the last
frame, reopening cuts the others), so a resume after it goes on with sdirk4
and one from before it switches at the same frame again.  The switch is no
segment: the configuration (``auto``) is the same on both sides.

A resume that changes the integration settings (the integrator, its
tolerances, ``collapse_tol``: :func:`particles.runs.run.resumed_config`)
starts a segment (:mod:`particles.io.segments`): ``/segments`` says from which
frame each set of settings computed the frames, and ``config`` is the
last one's.  The adaptive step counts (observables ``accepted_steps``,
``rejected_steps``) count the adaptive steps up to each frame: they stay as
they are over a fixed-step segment, and a file that switches to an adaptive
integrator gains them, zero before its first adaptive step.

Positions kept (``config.positions``, :data:`particles.config.POSITIONS`).
With ``"all"`` (the default) the layout is the one above.  With ``"final"``
or ``"none"`` (large ensembles that need the observables only)::

    /particles/tokens/position
        step, time  (1,)                              the latest flushed frame,
        value       (1, n, d) | (1, batch, n, d)      overwritten at each flush
    /observables/<name>
        step    int64   (frames,)                     the observables' own clock,
        time    float64 (frames,)                     hard links to one pair
        value   (frames,) | (frames, batch)

The one-frame position element is the run's resume point (and, once the run
is complete, its final positions): ``--resume`` and extending ``T`` continue
from it.  Readers of such a file see positions of shape (1, ...) for
``"final"`` and (0, ...) for ``"none"``.  Per batch the writer appends the
observables, then their time and step, then overwrites the resume point;
readers use the frames up to the resume point, so a kill between the two
writes loses the frames after it (a kill in the middle of overwriting the
one frame itself can leave it inconsistent: nothing is written twice).

A single system (``config.batch`` is None) is plain H5MD: ``value`` has shape
(frames, n, d).  An ensemble of ``batch`` independent systems adds one axis
after the frame axis: ``value[f, b]`` is system ``b`` at frame ``f``, and each
observable is stored as ``(frames, batch)``.  A reader can tell the two apart
by ``value.ndim`` (3 or 4) without parsing the configuration.

Crash safety.  Frames are buffered in memory and written in batches: per
batch the writer extends and fills ``value``, then every observable, then
``time`` and ``step`` last, and calls ``H5Fflush``.  Batches are written at
least every ``flush_interval`` seconds (1 s by default) and when the writer
closes, so a process killed with SIGKILL loses at most the last interval, and
what it leaves opens with any HDF5 reader.  The reader uses the shortest of
the step, time, value and observable lengths, so a kill in the middle of a
batch never yields a partial frame.  (This protects against the process
dying, not against power loss: nothing is fsync'ed.)  ``/parameters``
attribute ``complete`` is set to 1 only once the last frame is written.

Full disks.  HDF5 reports many write failures only when it frees its
objects, so a failed write can look like a success and leave a damaged
file.  The writer therefore reserves the disk space of each batch first
(``posix_fallocate`` past the end HDF5 knows of, :class:`_Reserve`): when the
file system (or the process's file size limit) cannot hold the batch, the
reservation fails before HDF5 writes a byte, the batch is dropped and
:class:`~particles.errors.OutputWriteError` is raised; the file keeps every
frame written before, marked incomplete, and can be resumed once there is
room.  A failure HDF5 does report is raised the same way.  The reserved
tail is cut off when the file is closed.

The schema is versioned by ``/parameters`` attribute ``particles_schema``;
files of a newer schema are refused rather than misread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from particles.config import SimulationConfig
from particles.errors import TrajectoryFileError
from particles.io.frames import FrameCounts, GroupWriter, clock_element
from particles.io.hdf5 import (
    FLUSH_INTERVAL,
    Reserve,
    appendable,
    check_schema,
    create_file,
    file_error,
    file_kind,
    finite_frames,
    read_retrying,
    reopen_file,
    write_header,
)
from particles.io.kinds import Example, refusal, register
from particles.io.segments import Segment, read_rows, record_segment
from particles.observables.pairs import DEFAULT_EPS
from particles.plan import facts
from particles.trajectory import (
    MERGE_COLUMNS,
    PASSAGE_COLUMNS,
    STOP_REASONS,
    SWITCH_COLUMNS,
    Frame,
    Merge,
    Passage,
    Switch,
    Trajectory,
    first_passages,
)

__all__ = [
    "FLUSH_INTERVAL",
    "GROUP",
    "MERGES",
    "PASSAGES",
    "SWITCHES",
    "TRAJECTORY",
    "RunSummary",
    "TrajectoryFileError",
    "TrajectoryKind",
    "TrajectoryWriter",
    "add_particle_group",
    "energy_attrs",
    "expected_frames",
    "inspect_group",
    "load",
    "read_first_frame",
    "read_merge_events",
    "read_observables",
    "read_passages",
    "read_segments",
    "read_summary",
    "read_switches",
    "run_bytes",
    "write_config",
]

#: name of the particle group under /particles.
GROUP = "tokens"

_POSITION = f"particles/{GROUP}/position"

#: the group of located merges (``merge_events=True``) and its datasets.
MERGES = "events/merges"

#: the group of the systems' first passages to ``until_clusters`` and its datasets.
PASSAGES = "events/passages"
#: the group of the save points at which ``integrator="auto"`` switched.
SWITCHES = "events/switches"

#: the observables of an adaptive integrator: its accepted and rejected steps
#: up to each frame.
STEP_COUNTS = ("accepted_steps", "rejected_steps")


@dataclass(frozen=True)
class RunSummary(FrameCounts):
    """What a trajectory file holds, read without loading every frame.

    Attributes
    ----------
    path : Path
        The file.
    config : SimulationConfig
        The full resolved configuration stored in the file.
    frames : int
        Number of frames stored.
    frames_expected : int
        Number of frames of the complete run, ``len(config.output_times())``.
    time : float
        Time of the last stored frame.
    step : int
        Step counter of the last stored frame.
    complete : bool
        Whether the run reached its final time.
    observables : tuple of str
        Names of the stored observables.
    final : ndarray, shape (n, d) or (batch, n, d)
        Positions of the last stored frame.
    final_observables : dict of str to float or ndarray of shape (batch,)
        Observables of the last stored frame.
    stop_reason : str
        Why the run ended or paused before its last save time (a key of
        :data:`~particles.trajectory.STOP_REASONS`), or "".
    merges : int
        Merge events stored (``merge_events=True``), up to the last frame.
    passages : int
        Systems' passages to ``until_clusters`` stored, up to the last frame
        (for every value it had).
    summation_auto : bool
        Whether ``summation="auto"`` chose the spectral sums the file records
        (``config.summation`` is the choice; a resume keeps it).
    segments : tuple of Segment
        The resumes that changed the integration settings
        (:mod:`particles.io.segments`); ``config`` is the last one's.
    switches : tuple of Switch
        The save points at which ``integrator="auto"`` went on with its stiff
        phase (``/events/switches``), up to the last frame.
    """

    path: Path
    config: SimulationConfig
    frames: int
    frames_expected: int
    time: float
    step: int
    complete: bool
    observables: tuple[str, ...]
    final: np.ndarray
    final_observables: dict[str, float | np.ndarray]
    stop_reason: str = ""
    merges: int = 0
    passages: int = 0
    summation_auto: bool = False
    segments: tuple[Segment, ...] = ()
    switches: tuple[Switch, ...] = ()

    def describe(self) -> str:
        """``"holds 5 of 11 frames (t=0.5)"``, and why it stopped early."""
        why = {"until_clusters": ", stopped by until_clusters",
               "max_wall": ", paused by max_wall"}
        return super().describe() + why.get(self.stop_reason, "")


# ---------------------------------------------------------------- reading
@dataclass(frozen=True)
class _Header:
    """The validated structure of an open trajectory file."""

    config: SimulationConfig
    frames: int
    complete: bool
    observables: tuple[str, ...]
    stop_reason: str = ""


def expected_frames(config: SimulationConfig) -> int:
    """``len(config.output_times())`` without building the array of times
    (:meth:`~particles.config.SimulationConfig.frame_count`): a file whose
    configuration claims 10^10 frames is described without allocating them."""
    return facts(config).frames


def _frame_shape(config: SimulationConfig) -> tuple[int, ...]:
    """Shape of one stored frame of positions: (n, d) or (batch, n, d)."""
    n, d = config.n, config.d
    return (n, d) if config.batch is None else (config.batch, n, d)


def inspect_group(
    f: h5py.File,
    path: Path,
    config: SimulationConfig,
    group: str,
    observables: str,
    label: str = "",
    *,
    complete: bool = False,
) -> tuple[int, tuple[str, ...]]:
    """Check one particle group and its observables against ``config``.

    Parameters
    ----------
    f : h5py.File
    path : Path
        For the messages.
    config : SimulationConfig
        The configuration stored for the group.
    group : str
        Name under ``/particles``.
    observables : str
        Path of the group holding its observables (``observables`` or
        ``observables/<group>``).
    label : str
        How the messages name the group (empty for the only one).
    complete : bool
        Whether the group is marked complete: then its frame datasets must all
        be of one length (a writer marks a group complete only after its last
        frame is on disk; datasets of different lengths are damage, not a
        killed run).

    Returns
    -------
    frames : int
        Frames stored (the shortest of the frame datasets; may be 0).
    names : tuple of str
        Names of the stored observables.
    """
    where = f"particles/{group}/position"
    of = f"of {label!r} " if label else ""
    pos = f.get(where)
    if not isinstance(pos, h5py.Group) or any(
        not isinstance(pos.get(k), h5py.Dataset) for k in ("step", "time", "value")
    ):
        raise file_error(path, f"no /{where}/{{step,time,value}} datasets")
    shape = _frame_shape(config)
    value = pos["value"]
    if value.shape[1:] != shape or pos["step"].ndim != 1 or pos["time"].ndim != 1:
        raise file_error(
            path,
            f"positions {of}of shape {value.shape} do not match "
            f"{'its' if label else 'the'} configuration (frames, {', '.join(map(str, shape))})",
        )
    if value.dtype.kind != "f":
        raise file_error(path, f"positions {of}are {value.dtype}, not real floating-point numbers")
    keep_all = config.positions == "all"
    lengths = [value.shape[0], pos["step"].shape[0], pos["time"].shape[0]] if keep_all else []
    names = []
    obs_shape = () if config.batch is None else (config.batch,)
    elements = f.get(observables, {})
    if not isinstance(elements, h5py.Group | dict):
        raise file_error(path, f"/{observables} is not a group")
    for name, element in elements.items():
        data = element.get("value") if isinstance(element, h5py.Group) else None
        if not isinstance(data, h5py.Dataset) or data.shape[1:] != obs_shape:
            shown = f"{label}/{name}" if label else repr(name)
            raise file_error(
                path,
                f"observable {shown} is not a value dataset of shape "
                f"(frames{''.join(f', {s}' for s in obs_shape)})",
            )
        names.append(name)
        lengths.append(data.shape[0])
    frames = min(lengths) if keep_all else _resume_frames(elements, names, lengths, pos)
    if complete and frames and max(lengths, default=frames) != frames:
        # (a complete file whose configuration claims more frames reads as incomplete)
        who = f"model {label!r}" if label else "it"
        raise file_error(path, f"{who} is marked complete but its datasets hold {frames} to "
                         f"{max(lengths)} frames (a damaged file)")
    return frames, tuple(names)


def _resume_frames(elements, names, lengths, pos) -> int:
    """Frames of a file without every frame's positions: those up to the resume point."""
    if not names or pos["value"].shape[0] < 1 or pos["time"].shape[0] < 1:
        return 0
    clock = clock_element(elements, names)
    k = min([*lengths, clock["step"].shape[0], clock["time"].shape[0]])
    hits = np.flatnonzero(np.asarray(clock["time"][:k]) == pos["time"][0])
    return int(hits[-1]) + 1 if hits.size else 0


def _inspect(f: h5py.File, path: Path) -> _Header:
    """Check that ``f`` is a trajectory this version can read; never reads frames."""
    params = f.get("parameters")
    refusal(path, f, TRAJECTORY, "a particle trajectory")
    if (
        "h5md" not in f
        or not isinstance(params, h5py.Group)
        or ("particles_schema" not in params.attrs)
    ):
        raise file_error(
            path, "not a particles trajectory (no /parameters attribute particles_schema)"
        )
    check_schema(params, path)
    try:
        config = SimulationConfig.from_json(params.attrs["config"])
    except KeyError:
        raise file_error(path, "no /parameters attribute config") from None
    except (ValueError, TypeError) as exc:
        raise file_error(path, f"stored configuration is not valid: {exc}") from None
    flag = bool(params.attrs.get("complete", 0))
    stop = params.attrs.get("stop_reason", "")
    stop = stop.decode() if isinstance(stop, bytes) else str(stop)
    if stop and stop not in STOP_REASONS:
        raise file_error(path, f"unknown /parameters attribute stop_reason {stop!r}")
    frames, names = inspect_group(f, path, config, GROUP, "observables", complete=flag)
    if frames == 0:
        raise file_error(path, "holds no frames")
    expected = expected_frames(config)
    # a run stopped by until_clusters is complete with fewer frames
    complete = flag and (frames == expected or (stop == "until_clusters" and frames < expected))
    return _Header(config, frames, complete, names, stop)


def _clock(f: h5py.File, h: _Header) -> h5py.Group:
    """The element holding every frame's ``step`` and ``time``: the positions', or
    the observables' own clock when positions are not kept for every frame."""
    if h.config.positions == "all":
        return f[_POSITION]
    return clock_element(f["observables"], h.observables)


def _frame_time(f: h5py.File, h: _Header) -> float:
    """Time of the last stored frame."""
    return float(_clock(f, h)["time"][h.frames - 1])


def _table(f: h5py.File, name: str, columns: dict[str, type]) -> h5py.Group | None:
    """The event group ``name`` (None when absent), checked: one axis per column."""
    group = f.get(name)
    if not isinstance(group, h5py.Group):
        return None
    if any(not isinstance(group.get(k), h5py.Dataset) or group[k].ndim != 1
           for k in columns):
        raise file_error(Path(f.filename), f"/{name} is not {len(columns)} datasets "
                         f"{{{','.join(columns)}}} of one axis")
    return group


def _merge_rows(f: h5py.File, h: _Header) -> int:
    """Merge events stored up to the last frame (written before their frames)."""
    group = _table(f, MERGES, MERGE_COLUMNS)
    if group is None:
        return 0
    k = min(group[name].shape[0] for name in MERGE_COLUMNS)
    times = np.asarray(group["time"][:k])
    return int(np.searchsorted(times, _frame_time(f, h), side="right"))


def _passage_rows(f: h5py.File, h: _Header) -> int:
    """Passages stored up to the last frame (written before their frames)."""
    group = _table(f, PASSAGES, PASSAGE_COLUMNS)
    if group is None:
        return 0
    k = min(group[name].shape[0] for name in PASSAGE_COLUMNS)
    return int(np.searchsorted(np.asarray(group["frame"][:k]), h.frames - 1, side="right"))


def _switch_rows(f: h5py.File, h: _Header) -> int:
    """Switches stored up to the last frame (written before the frames after them)."""
    group = _table(f, SWITCHES, SWITCH_COLUMNS)
    if group is None:
        return 0
    k = min(group[name].shape[0] for name in SWITCH_COLUMNS)
    return int(np.searchsorted(np.asarray(group["frame"][:k]), h.frames - 1, side="right"))


def _column(dataset: h5py.Dataset, k: int) -> list:
    """The first ``k`` values of a column as Python values (strings decoded)."""
    if h5py.check_string_dtype(dataset.dtype) is not None:
        return [v.decode() if isinstance(v, bytes) else str(v) for v in dataset[:k]]
    return np.asarray(dataset[:k]).tolist()


def _rows(f: h5py.File, name: str, columns: dict[str, type], k: int, kind: type) -> tuple:
    """The first ``k`` rows of an event table as ``kind`` objects."""
    if not k:
        return ()
    cols = [_column(f[name][c], k) for c in columns]
    return tuple(kind(**dict(zip(columns, row, strict=True))) for row in zip(*cols, strict=True))


def _read_merges(f: h5py.File, h: _Header) -> tuple[Merge, ...]:
    """The merge events of an open trajectory, up to its last frame."""
    return _rows(f, MERGES, MERGE_COLUMNS, _merge_rows(f, h), Merge)


def _read_passages(f: h5py.File, h: _Header) -> tuple[Passage, ...]:
    """The passages of an open trajectory, up to its last frame."""
    return _rows(f, PASSAGES, PASSAGE_COLUMNS, _passage_rows(f, h), Passage)


def _read_switches(f: h5py.File, h: _Header) -> tuple[Switch, ...]:
    """The switches of ``integrator="auto"`` in an open trajectory, up to its last frame."""
    return _rows(f, SWITCHES, SWITCH_COLUMNS, _switch_rows(f, h), Switch)


def read_observables(
    f: h5py.File, names, index, group: str = "observables"
) -> dict[str, np.ndarray]:
    return {name: np.asarray(f[group][name]["value"][index]) for name in names}


def load(path: str | Path):
    """Read a trajectory file written by :func:`particles.io.run_to_file`.

    Parameters
    ----------
    path : str or Path
        An H5MD file of this package (complete, or left by an interrupted run).

    Returns
    -------
    Trajectory
        ``positions`` of shape (frames, n, d), or (frames, batch, n, d) for an
        ensemble; ``complete`` is False for a run that stopped early.  The file
        is closed before this returns.  A run with ``positions="final"``
        holds its last frame only, shape (1, ...); ``"none"`` none, (0, ...).

    Raises
    ------
    TrajectoryFileError
        The file is missing, not HDF5, not a ``particles`` trajectory,
        truncated or damaged, or written with a newer schema.
    """
    def reader(f: h5py.File, h: _Header) -> Trajectory:
        pos = f[_POSITION]
        k = h.frames
        kept = {"all": slice(0, k), "final": slice(0, 1), "none": slice(0, 0)}
        clock = _clock(f, h)
        positions = finite_frames(np.asarray(pos["value"][kept[h.config.positions]],
                                             dtype=np.float64), Path(path), "positions")
        return Trajectory(
            times=np.asarray(clock["time"][:k], dtype=np.float64),
            steps=np.asarray(clock["step"][:k], dtype=np.int64),
            positions=positions,
            observables=read_observables(f, h.observables, slice(0, k)),
            config=h.config,
            complete=h.complete,
            stop_reason=h.stop_reason,
            merge_events=_read_merges(f, h),
            passages=_read_passages(f, h),
            switches=_read_switches(f, h),
        )

    return read_retrying(path, _inspect, reader, "trajectory")


def read_first_frame(path: str | Path) -> tuple[SimulationConfig, np.ndarray]:
    """The configuration and the positions of frame 0 of a trajectory file (the
    initial condition), reading no other frame.

    Returns
    -------
    (SimulationConfig, ndarray)
        Positions of shape (n, d), or (batch, n, d) for an ensemble.

    Raises
    ------
    TrajectoryFileError
        As :func:`load`, or a run that kept no frame 0 (``positions="final"``
        or ``"none"``).
    """

    def reader(f: h5py.File, h: _Header) -> tuple[SimulationConfig, np.ndarray]:
        if h.config.positions != "all":
            raise file_error(Path(path), f"keeps positions={h.config.positions!r}: no first "
                             "frame (rerun it with positions 'all')")
        first = np.asarray(f[_POSITION]["value"][0], dtype=np.float64)
        return h.config, finite_frames(first[None], Path(path), "positions")[0]

    return read_retrying(path, _inspect, reader, "trajectory")


def read_summary(path: str | Path) -> RunSummary:
    """Describe a trajectory file from its header and last frame.

    Parameters
    ----------
    path : str or Path
        A trajectory file.

    Returns
    -------
    RunSummary

    Raises
    ------
    TrajectoryFileError
        As :func:`load`.
    """

    def reader(f: h5py.File, h: _Header) -> RunSummary:
        pos = f[_POSITION]
        last = h.frames - 1
        final_obs = read_observables(f, h.observables, last)
        at = last if h.config.positions == "all" else 0  # else: the resume point
        return RunSummary(
            path=Path(path),
            config=h.config,
            frames=h.frames,
            frames_expected=expected_frames(h.config),
            time=float(pos["time"][at]),
            step=int(pos["step"][at]),
            complete=h.complete,
            observables=h.observables,
            final=finite_frames(np.asarray(pos["value"][at], dtype=np.float64)[None],
                                Path(path), "positions", first=at)[0],
            final_observables={k: (v if v.ndim else float(v)) for k, v in final_obs.items()},
            stop_reason=h.stop_reason,
            merges=_merge_rows(f, h),
            passages=_passage_rows(f, h),
            summation_auto=bool(f["parameters"].attrs.get("summation_auto", 0)),
            segments=read_rows(f, h.frames),
            switches=_read_switches(f, h),
        )

    return read_retrying(path, _inspect, reader, "trajectory")


def read_segments(path: str | Path) -> tuple[Segment, ...]:
    """The segments of a trajectory (:mod:`particles.io.segments`), reading no frame.

    Returns
    -------
    tuple of Segment
        In the order of their frames; empty for a file never resumed with
        changed settings.

    Raises
    ------
    TrajectoryFileError
        As :func:`load`.
    """
    return read_retrying(path, _inspect, lambda f, h: read_rows(f, h.frames), "trajectory")


def read_switches(path: str | Path) -> tuple[Switch, ...]:
    """The save points at which ``integrator="auto"`` went on with its stiff phase
    (``/events/switches``), up to the last frame, reading no frame.

    Returns
    -------
    tuple of Switch
        Empty for a run that did not switch.

    Raises
    ------
    TrajectoryFileError
        As :func:`load`.
    """
    return read_retrying(path, _inspect, _read_switches, "trajectory")


def read_merge_events(path: str | Path) -> tuple[Merge, ...]:
    """The merge events a run located (``merge_events=True``; ``/events/merges``),
    up to its last frame, reading no frame.

    Returns
    -------
    tuple of Merge
        Empty for a run that did not record them.

    Raises
    ------
    TrajectoryFileError
        As :func:`load`.
    """
    return read_retrying(path, _inspect, _read_merges, "trajectory")


def read_passages(path: str | Path) -> tuple[Passage, ...]:
    """Each system's first passage to ``until_clusters`` (``/events/passages``),
    up to the last frame, reading no frame.

    Returns
    -------
    tuple of Passage
        Empty for a run that had no such stop.

    Raises
    ------
    TrajectoryFileError
        As :func:`load`.
    """
    return read_retrying(path, _inspect, _read_passages, "trajectory")


def add_particle_group(
    f: h5py.File, name: str, config: SimulationConfig, observables: str
) -> None:
    """Create ``/particles/<name>`` (box, empty position datasets) and its observables group.

    Parameters
    ----------
    f : h5py.File
    name : str
        The particle group.
    config : SimulationConfig
        Its configuration: positions of shape (frames, n, d), or
        (frames, batch, n, d) for an ensemble.
    observables : str
        Path of the group that will hold its observables.
    """
    group = f.require_group("particles").create_group(name)
    box = group.create_group("box")
    box.attrs["dimension"] = np.int32(config.d)
    box.attrs["boundary"] = np.array(["none"] * config.d, dtype=h5py.string_dtype())
    pos = group.create_group("position")
    appendable(pos, "value", _frame_shape(config), np.float64)
    appendable(pos, "step", (), np.int64)
    appendable(pos, "time", (), np.float64)
    f.require_group(observables)


def write_config(params: h5py.Group, config: SimulationConfig) -> None:
    """Record a resolved configuration (JSON, seed as a decimal string), not complete yet."""
    params.attrs["complete"] = np.int8(0)
    params.attrs["config"] = config.to_json()
    params.attrs["seed"] = str(config.seed)
    degree = facts(config).degree
    if degree is not None:
        params.attrs["summation_degree"] = np.int32(degree)
    if config.summation_auto and degree is not None:
        params.attrs["summation_auto"] = np.int8(1)


def _add_events(f: h5py.File, name: str, columns: dict[str, type], *,
                eps: bool = True) -> h5py.Group:
    """Create the event table ``name`` (empty, appendable) unless it exists; with
    ``eps`` its cluster counts' linking distance as an attribute."""
    group = f.get(name)
    if group is None:
        group = f.require_group(name)
        for column, dtype in columns.items():
            appendable(group, column, (), h5py.string_dtype() if dtype is str else dtype)
        if eps:
            group.attrs["eps"] = DEFAULT_EPS
    return group


def _add_merge_events(f: h5py.File) -> h5py.Group:
    """Create ``/events/merges`` (empty, appendable) unless it exists."""
    return _add_events(f, MERGES, MERGE_COLUMNS)


def _add_passages(f: h5py.File) -> h5py.Group:
    """Create ``/events/passages`` (empty, appendable) unless it exists."""
    return _add_events(f, PASSAGES, PASSAGE_COLUMNS)


def _append_rows(group: h5py.Group, k0: int, columns: dict[str, np.ndarray]) -> int:
    """Write rows from row ``k0`` on (a repeated write rewrites the same rows);
    the rows then stored."""
    k1 = k0
    for name, values in columns.items():
        k1 = k0 + len(values)
        group[name].resize(k1, axis=0)
        group[name][k0:k1] = values
    return k1


class TrajectoryWriter(GroupWriter):
    """Appends frames to an open trajectory file and flushes them on a timer.

    Use :meth:`create` for a new file or :meth:`reopen` to continue one;
    then :meth:`append` each frame and :meth:`close` once.

    Parameters
    ----------
    file : h5py.File
        A writable file with the layout of this module (observables may be
        missing until the first frame is written).
    config : SimulationConfig
        The configuration stored in it.
    frames : int
        Frames already stored.
    flush_interval : float
        Seconds of wall time between writes to disk.
    merges : int
        Merge events already stored.
    passages : tuple of Passage
        Passages already stored (each system and ``until_clusters`` is written once).
    switches : int
        Switches of ``integrator="auto"`` already stored.
    """

    def __init__(
        self,
        file: h5py.File,
        config: SimulationConfig,
        *,
        frames: int = 0,
        flush_interval: float = FLUSH_INTERVAL,
        reserve: Reserve | None = None,
        merges: int = 0,
        passages: tuple[Passage, ...] = (),
        switches: int = 0,
    ) -> None:
        super().__init__(
            file, config, frames=frames, flush_interval=flush_interval, reserve=reserve,
            observable_attrs=energy_attrs(config),
        )
        self.stop_reason = ""
        self._merges = merges  # merge events on disk
        self._switches = switches  # switches on disk
        self._passages = len(passages)  # passages on disk, and of which systems
        self._passed = {(p.system, p.until) for p in passages}

    def append(self, frame: Frame) -> bool:
        """Buffer one frame (the last of a stopped run says why it stopped)."""
        if frame.stop:
            self.stop_reason = frame.stop
            self.ends_early = frame.stop == "until_clusters"
        return super().append(frame)

    def _write(self, frames: list[Frame]) -> None:
        # the merges before the frames they precede: a kill between the two
        # leaves events past the last frame, which readers skip and reopen cuts
        # (rows counted, not appended: a write repeated after an interrupt
        # rewrites the same rows)
        merges = [m for fr in frames for m in fr.merges]
        if merges:
            _append_rows(_add_merge_events(self._file), self._merges, Merge.columns(merges))
        passed = set(self._passed)
        passages = first_passages((p for fr in frames for p in fr.passages), passed)
        if passages:
            _append_rows(_add_passages(self._file), self._passages,
                         Passage.columns(passages))
        switches = [fr.switch for fr in frames if fr.switch is not None]
        if switches:
            _append_rows(_add_events(self._file, SWITCHES, SWITCH_COLUMNS, eps=False),
                         self._switches, Switch.columns(switches))
        super()._write(frames)
        self._merges += len(merges)
        self._passages += len(passages)
        self._switches += len(switches)
        self._passed = passed

    def closing_attrs(self) -> dict[str, object]:
        """``stop_reason`` of a run that ended or paused at a stop."""
        return {"stop_reason": self.stop_reason} if self.stop_reason else {}

    # ------------------------------------------------------------ opening
    @classmethod
    def create(
        cls,
        path: str | Path,
        config: SimulationConfig,
        *,
        flush_interval: float = FLUSH_INTERVAL,
    ) -> TrajectoryWriter:
        """Create a new file (which must not exist) holding no frames yet.

        Parameters
        ----------
        path : str or Path
            New file.
        config : SimulationConfig
            Resolved configuration (concrete seed).
        flush_interval : float
            Seconds between writes to disk.

        Raises
        ------
        OutputWriteError
            The file could not be written (disk full); it is removed again.
        """
        if config.seed is None:
            raise ValueError("config must be resolved (concrete seed) before it is written")
        f, reserve = create_file(path, lambda f: (
            add_particle_group(f, GROUP, config, "observables"),
            write_config(write_header(f), config),
            _add_merge_events(f) if config.merge_events else None,
            _add_passages(f) if config.until_clusters is not None else None,
        ))
        return cls(f, config, flush_interval=flush_interval, reserve=reserve)

    @classmethod
    def reopen(
        cls,
        path: str | Path,
        *,
        flush_interval: float = FLUSH_INTERVAL,
        config: SimulationConfig | None = None,
    ) -> TrajectoryWriter:
        """Open an existing trajectory to append frames to it.

        Datasets longer than the shortest one (a kill in the middle of a
        write) are cut back first, so are events past the last frame,
        and the file is marked incomplete (its ``stop_reason`` removed: the
        run goes on).
        ``config``, when given, replaces the stored configuration (a run
        extended to a longer ``T``, or resumed with other integration
        settings; the caller checks that its frames continue the stored
        ones): changed settings start a segment
        (:func:`~particles.io.segments.record_segment`), and a switch to an
        adaptive integrator adds its step counts, zero up to the last frame.

        Raises
        ------
        TrajectoryFileError
            As :func:`load`, or when another process has the file open.
        """
        path = Path(path)
        read_summary(path)  # one-line errors for files that are no trajectories

        def prepare(f: h5py.File) -> tuple[_Header, int, tuple[Passage, ...], int]:
            header = _inspect(f, path)
            for ds in _frame_datasets(f, header.observables, header.config.positions):
                if ds.shape[0] != header.frames:
                    ds.resize(header.frames, axis=0)
            merges, passages = _merge_rows(f, header), _read_passages(f, header)
            switches = _switch_rows(f, header)
            for name, columns, rows in ((MERGES, MERGE_COLUMNS, merges),
                                        (PASSAGES, PASSAGE_COLUMNS, len(passages)),
                                        (SWITCHES, SWITCH_COLUMNS, switches)):
                for column in columns if name in f else ():
                    if f[name][column].shape[0] != rows:
                        f[name][column].resize(rows, axis=0)
            if (config or header.config).merge_events:
                _add_merge_events(f)
            if (config or header.config).until_clusters is not None:
                _add_passages(f)
            f["parameters"].attrs["complete"] = np.int8(0)
            if "stop_reason" in f["parameters"].attrs:
                del f["parameters"].attrs["stop_reason"]
            if config is not None:
                # the row first: a kill before the configuration leaves a row the
                # next resume folds into its own (segments.record_segment)
                record_segment(f, header.config, config, header.frames, _frame_time(f, header))
                if facts(config).adaptive and STEP_COUNTS[0] not in header.observables:
                    _add_step_counts(f, header)
                f["parameters"].attrs["config"] = config.to_json()
            return header, merges, passages, switches

        f, reserve, (header, merges, passages, switches) = reopen_file(path, prepare)
        return cls(f, config or header.config, frames=header.frames,
                   flush_interval=flush_interval, reserve=reserve, merges=merges,
                   passages=passages, switches=switches)


def _add_step_counts(f: h5py.File, header: _Header) -> None:
    """The observables :data:`STEP_COUNTS` of a file going on with an adaptive
    integrator, zero at each stored frame (no adaptive step was taken before)."""
    obs = f["observables"]
    clock = _clock(f, header)
    shape = () if header.config.batch is None else (header.config.batch,)
    for name in STEP_COUNTS:
        g = obs.create_group(name)
        value = appendable(g, "value", shape, np.float64)
        value.resize(header.frames, axis=0)
        value[...] = 0.0
        g["step"] = clock["step"]  # hard links, as every observable's
        g["time"] = clock["time"]


def _frame_datasets(f: h5py.File, observables, positions: str = "all") -> list[h5py.Dataset]:
    pos = f[_POSITION]
    if positions != "all":  # the one-frame resume point is not a frame dataset
        clock = clock_element(f["observables"], observables)
        return [*(f["observables"][n]["value"] for n in observables),
                clock["time"], clock["step"]]
    return [
        pos["value"],
        *(f["observables"][n]["value"] for n in observables),
        pos["time"],
        pos["step"],
    ]


def energy_attrs(config: SimulationConfig) -> dict[str, dict[str, str]]:
    """The ``definition`` attribute of the energy observables of a run, unless the
    default (edp, Q = K = I) energy is recorded
    (:func:`particles.observables.energy_definition`)."""
    definition = facts(config).energy.definition
    if not definition:
        return {}
    return {name: {"definition": definition} for name in ("energy", "energy_normalized")}


def run_bytes(config: SimulationConfig, frames: int) -> int:
    """Rough bytes of ``frames`` frames of ``config`` on disk (positions, observables)."""
    systems = config.batch or 1
    return frames * (8 * systems * (config.n * config.d + 8) + 16) + 2**16


class TrajectoryKind:
    """The trajectory file kind (:class:`~particles.io.kinds.FileKind`): one run,
    one system or an ensemble, the layout of this module; items are frames."""

    name = "trajectory"
    description = "particle trajectory"
    command = "particles simulate"
    reader = "particles.load"
    unit = "frames"
    resumable = True
    error = TrajectoryFileError

    def can_open(self, f: h5py.File) -> bool:
        params = f.get("parameters")
        return ("h5md" in f and isinstance(params, h5py.Group)
                and "particles_schema" in params.attrs and file_kind(f) is None)

    def create(self, path: Path, spec: SimulationConfig, *,
               flush_interval: float = FLUSH_INTERVAL) -> TrajectoryWriter:
        return TrajectoryWriter.create(path, spec, flush_interval=flush_interval)

    def reopen(self, path: Path, spec: SimulationConfig | None, *,
               flush_interval: float = FLUSH_INTERVAL) -> TrajectoryWriter:
        return TrajectoryWriter.reopen(path, flush_interval=flush_interval, config=spec)

    def summarize(self, path: Path) -> RunSummary:
        return read_summary(path)

    def load(self, path: Path):
        return load(path)

    def expected(self, spec: SimulationConfig) -> int:
        return expected_frames(spec)

    def bytes_needed(self, spec: SimulationConfig, items: int) -> int:
        return run_bytes(spec, items)

    def example(self) -> Example:
        """An ensemble of 2 systems of 24 tokens on S^2, 201 frames of random
        unit vectors (frame k drawn from seed k) with two observables."""
        spec = SimulationConfig(n=24, d=3, beta=1.0, integrator="euler", dt=0.01, T=2.0,
                                save_every=1, batch=2, seed=7)
        times = spec.output_times()

        def items(summary: RunSummary | None):
            for k in range(0 if summary is None else summary.frames, len(times)):
                x = np.random.default_rng(k).normal(size=(2, spec.n, spec.d))
                x /= np.linalg.norm(x, axis=-1, keepdims=True)
                r = np.linalg.norm(x.mean(axis=1), axis=-1)
                yield Frame(k, k, float(times[k]), x,
                            {"order_parameter": r, "energy": r * r / 2})

        return Example(spec, items)


#: the trajectory kind, registered.
TRAJECTORY = register(TrajectoryKind())
