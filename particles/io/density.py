"""Mean-field density files: the H5MD layout of a PDE run, writer and reader.

A density file holds the solution ``rho(t, theta)`` of
:func:`particles.meanfield.solve` on the grid ``theta_j = 2 pi j / M``
(``j = 0 .. M-1``), one frame per save time, with the same conventions
(and the same frame writer, :class:`particles.io.frames.GroupWriter`) as
trajectory files.  Layout (https://www.nongnu.org/h5md/, version 1.1)::

    /h5md                          version = [1, 1], author, creator
    /observables/density           an H5MD time-dependent element (a field, no particles)
        step    int64   (frames,)  accepted solver steps up to the frame
        time    float64 (frames,)  save times
        value   float64 (frames, M)  rho(t, theta_j): sum(value[f]) * 2 pi / M == mass
        theta   float64 (M,)       the grid, theta_j = 2 pi j / M (attribute ``cells``)
    /observables/<name>            one scalar per frame, sampled with the density:
                                   mass, energy, dissipation, min_density, and the
                                   solver's state: step_size (its next step),
                                   rejected_steps (rejected so far)
        step, time                 hard links to /observables/density/{step,time}
        value   float64 (frames,)
    /parameters                    particles_schema = 1 (int), kind = "density",
                                   complete = 0 or 1 (int), config (JSON of
                                   MeanFieldConfig.to_dict()), seed (decimal string)
        versions                   particles, numpy, numba, h5py, hdf5, python

Solves on the sphere (:class:`~particles.meanfield.sphere_config.SphereFieldConfig`,
told apart by the ``lmax`` key of the stored configuration) keep the layout with
their own grid; ``value`` holds the density relative to the uniform measure
(1 = uniform, ``sum(value[f] * weights) == mass``) and ``/observables/density``
carries the attributes ``geometry`` ("sphere" or "axisymmetric"), ``lmax`` and
``d``::

    sphere        value (frames, ntheta, nphi); theta (ntheta,) Gauss-Legendre
                  colatitudes, phi (nphi,) longitudes 2 pi k / nphi, weights
                  (ntheta,) the weight of each point of a ring (sum over the grid: 1)
    axisymmetric  value (frames, N); theta (N,) polar angles of the Gauss nodes of
                  sin^{d-2}, weights (N,) (sum 1)

There is no ``/particles`` group: a density is not a set of particles, and
H5MD allows observables on their own.  ``kind = "density"`` tells the file
from a trajectory (whose readers, :func:`particles.load` and
:func:`particles.read_summary`, refuse it with a message naming
:func:`load_density`) and from a comparison file.

Crash safety and full disks are those of :mod:`particles.io.h5md` (the
same :class:`~particles.io.frames.GroupWriter`): frames are buffered and
written at least every ``flush_interval`` seconds, ``value`` first, then the
observables, ``time`` and ``step`` last; readers use the shortest length, so
a killed run leaves a readable file of whole frames; each batch's disk space
is reserved first; ``complete`` is set to 1 only once the last frame is on
disk.

Resuming.  Each frame carries the whole :class:`~particles.meanfield.SolverState`
of the solver at that save time (``time``, ``value``, ``step``,
``step_size``, ``rejected_steps``), so :meth:`DensitySummary.state` of the
last frame continues the solve bit for bit (:func:`particles.runs.meanfield.run_meanfield_to_file`
with ``resume=True``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from particles.errors import TrajectoryFileError
from particles.io.frames import FrameCounts, GroupWriter
from particles.io.hdf5 import (
    FLUSH_INTERVAL,
    Reserve,
    appendable,
    check_schema,
    create_file,
    file_error,
    file_kind,
    finite_frames,
    open_read,
    read_retrying,
    reopen_file,
    write_header,
)
from particles.io.kinds import Example, refusal, register
from particles.meanfield import DensityFrame, DensityResult, MeanFieldConfig, SolverState
from particles.meanfield.sphere_config import SphereFieldConfig
from particles.trajectory import Frame

__all__ = [
    "DENSITY",
    "ELEMENT",
    "KIND",
    "OBSERVABLES",
    "DensitySummary",
    "DensityWriter",
    "StoredDensity",
    "is_density_file",
    "load_density",
    "read_density_summary",
    "save_times",
]

#: value of the ``/parameters`` attribute ``kind`` of a density file.
KIND = "density"

#: the element holding the density frames.
ELEMENT = "observables/density"

#: the scalar observables of every frame, in the order written.
OBSERVABLES = ("mass", "energy", "dissipation", "min_density", "step_size", "rejected_steps")


def config_from_dict(d: dict) -> MeanFieldConfig | SphereFieldConfig:
    """The stored configuration: on the sphere when it names ``lmax``, else the circle's."""
    if "lmax" in d:
        return SphereFieldConfig.from_dict(d)
    return MeanFieldConfig.from_dict(d)


def grid_shape(config: MeanFieldConfig | SphereFieldConfig) -> tuple[int, ...]:
    """Shape of one frame's density: ``(M,)``, ``(ntheta, nphi)`` or ``(N,)``."""
    if not isinstance(config, SphereFieldConfig):
        return (int(config.modes),)
    from particles.meanfield.axisymmetric import polar_nodes
    from particles.meanfield.sphere import grid_size

    return (polar_nodes(config.lmax),) if config.axisymmetric else grid_size(config.lmax)


def grid_datasets(config: MeanFieldConfig | SphereFieldConfig) -> dict[str, np.ndarray]:
    """The grid of a configuration as the datasets stored beside ``value``."""
    if not isinstance(config, SphereFieldConfig):
        return {"theta": grid(config.modes)}
    from particles.meanfield.sphere_solver import make_space

    space = make_space(config)
    if config.axisymmetric:
        return {"theta": space.theta, "weights": space.weights}
    return {"theta": space.theta, "phi": space.phi, "weights": space.cell[:, 0]}


def grid_description(config: MeanFieldConfig | SphereFieldConfig) -> tuple[str, str]:
    """Where a density lives and its grid, in words (``particles info``)."""
    if not isinstance(config, SphereFieldConfig):
        return "the circle", f"{config.modes} points theta_j = 2 pi j / {config.modes}"
    shape = grid_shape(config)
    if config.axisymmetric:
        return (f"S^{config.d - 1}, axisymmetric",
                f"lmax {config.lmax}: {shape[0]} Gauss nodes in theta (weight sin^{config.d - 2})")
    return ("S^2", f"lmax {config.lmax}: Gauss-Legendre {shape[0]} x {shape[1]} "
            "(theta x phi), dealiased")


def save_times(config: MeanFieldConfig) -> np.ndarray:
    """The save times of a configuration, shape (F,): frame 0 at t = 0 first
    (:meth:`~particles.meanfield.MeanFieldConfig.frame_times`)."""
    return np.asarray(config.frame_times(), dtype=np.float64)


def grid(modes: int) -> np.ndarray:
    """The grid ``theta_j = 2 pi j / M``, shape (M,)."""
    return 2.0 * np.pi * np.arange(modes, dtype=np.float64) / modes


@dataclass(frozen=True)
class _Layout:
    """What :class:`~particles.io.frames.GroupWriter` asks of a configuration:
    one system (no batch axis), every frame kept, the output times."""

    times: np.ndarray
    batch: None = None
    positions: str = "all"

    def output_times(self) -> np.ndarray:
        return self.times


def _frame(frame: DensityFrame, index: int) -> Frame:
    """A solver frame as the writer's :class:`~particles.trajectory.Frame`:
    the density as "positions" of shape (1, M), each scalar of shape (1,)."""
    state = frame.state
    values = {
        "mass": frame.mass,
        "energy": frame.energy,
        "dissipation": frame.dissipation,
        "min_density": frame.min_density,
        "step_size": state.dt,
        "rejected_steps": state.rejected,
    }
    return Frame(
        index=index,
        step=int(state.steps),
        time=float(frame.time),
        positions=np.array(frame.rho, dtype=np.float64)[None],
        observables={k: np.array([v], dtype=np.float64) for k, v in values.items()},
    )


def _check_state(frame: DensityFrame) -> None:
    """A frame must be the solver's state at its time, or resuming from it would
    not continue the same solve."""
    s = frame.state
    if s.t != frame.time or not np.array_equal(s.rho, frame.rho):
        raise ValueError(
            f"frame at t={frame.time!r} is not the solver's state (t={s.t!r}); a density "
            "file stores frames that are states, so that resuming continues bit for bit"
        )


class DensityWriter(GroupWriter):
    """Appends :class:`~particles.meanfield.DensityFrame` objects to a density file.

    Use :meth:`create` for a new file or :meth:`reopen` to continue one;
    then :meth:`append` each frame and :meth:`close` once.  Buffering,
    flushing, disk-space reservation and the ``complete`` flag are those of
    :class:`~particles.io.frames.GroupWriter`.

    Parameters
    ----------
    file : h5py.File
        A writable file with the layout of this module.
    config : MeanFieldConfig
        The configuration stored in it.
    frames : int
        Frames already stored.
    flush_interval : float
        Seconds of wall time between writes to disk.
    """

    def __init__(
        self,
        file: h5py.File,
        config: MeanFieldConfig,
        *,
        frames: int = 0,
        flush_interval: float = FLUSH_INTERVAL,
        reserve: Reserve | None = None,
    ) -> None:
        super().__init__(
            file, _Layout(save_times(config)), frames=frames, flush_interval=flush_interval,
            reserve=reserve, frame_group=ELEMENT,
        )
        self.meanfield = config
        self._next = frames

    @classmethod
    def create(
        cls, path: str | Path, config: MeanFieldConfig, *, flush_interval: float = FLUSH_INTERVAL
    ) -> DensityWriter:
        """Create a new file (which must not exist) holding no frames yet.

        Raises
        ------
        OutputWriteError
            The file could not be written (disk full); it is removed again.
        """
        def fill(f: h5py.File) -> None:
            write_header(f, kind=KIND, complete=np.int8(0),
                         config=json.dumps(config.to_dict()), seed=str(config.seed))
            element = f.create_group("observables").create_group("density")
            appendable(element, "value", grid_shape(config), np.float64)
            appendable(element, "step", (), np.int64)
            appendable(element, "time", (), np.float64)
            for name, data in grid_datasets(config).items():
                element.create_dataset(name, data=data)
            if isinstance(config, SphereFieldConfig):
                element.attrs["geometry"] = config.kind
                element.attrs["lmax"] = int(config.lmax)
                element.attrs["d"] = int(config.d)
            else:
                element["theta"].attrs["cells"] = \
                    "theta_j = 2 pi j / M; rho is the value at theta_j"

        f, reserve = create_file(path, fill)
        return cls(f, config, flush_interval=flush_interval, reserve=reserve)

    @classmethod
    def reopen(cls, path: str | Path, *, flush_interval: float = FLUSH_INTERVAL
               ) -> DensityWriter:
        """Open an existing density file to append frames to it.

        Datasets longer than the shortest one (a kill in the middle of a
        write) are cut back first, and the file is marked incomplete.

        Raises
        ------
        TrajectoryFileError
            As :func:`load_density`, or when another process has the file open.
        OutputWriteError
            The file cannot be written (disk full).
        """
        path = Path(path)
        summary = read_density_summary(path)

        def prepare(f: h5py.File) -> None:
            for ds in _frame_datasets(f, summary.observables):
                if ds.shape[0] != summary.frames:
                    ds.resize(summary.frames, axis=0)
            f["parameters"].attrs["complete"] = np.int8(0)

        f, reserve, _ = reopen_file(path, prepare, busy="a solve still going?")
        return cls(f, summary.config, frames=summary.frames, flush_interval=flush_interval,
                   reserve=reserve)

    def append(self, frame: DensityFrame) -> bool:  # type: ignore[override]
        """Buffer one frame; write the buffer to disk when it is due.

        Returns
        -------
        bool
            True when this call wrote frames to disk.
        """
        shape = grid_shape(self.meanfield)
        if np.shape(frame.rho) != shape:
            grid_name = (f"the grid {shape}" if isinstance(self.meanfield, SphereFieldConfig)
                         else f"modes={shape[0]}")
            raise ValueError(f"density of shape {np.shape(frame.rho)} does not match {grid_name}")
        _check_state(frame)
        wrote = super().append(_frame(frame, self._next))
        self._next += 1
        return wrote


def _frame_datasets(f: h5py.File, observables) -> list[h5py.Dataset]:
    element = f[ELEMENT]
    return [element["value"], *(f["observables"][n]["value"] for n in observables),
            element["time"], element["step"]]


# ---------------------------------------------------------------- reading
@dataclass(frozen=True)
class DensitySummary(FrameCounts):
    """What a density file holds, read without loading every frame.

    Attributes
    ----------
    path : Path
    config : MeanFieldConfig
        The configuration stored in the file.
    frames : int
        Frames stored.
    frames_expected : int
        Frames of the complete solve (``len(save_times(config))``).
    time : float
        Time of the last stored frame.
    step : int
        Accepted solver steps up to the last stored frame.
    complete : bool
        Whether the solve reached its final time.
    observables : tuple of str
        Names of the stored scalar observables.
    final : ndarray, shape (M,)
        The density of the last stored frame.
    final_observables : dict of str to float
        The scalar observables of the last stored frame.
    """

    path: Path
    config: MeanFieldConfig
    frames: int
    frames_expected: int
    time: float
    step: int
    complete: bool
    observables: tuple[str, ...]
    final: np.ndarray = field(repr=False)
    final_observables: dict[str, float]

    def state(self) -> SolverState:
        """The solver's state at the last stored frame (resuming continues from it)."""
        obs = self.final_observables
        return SolverState(t=self.time, rho=self.final.copy(), dt=obs["step_size"],
                           steps=self.step, rejected=int(obs["rejected_steps"]))


@dataclass(frozen=True)
class _Header:
    config: MeanFieldConfig
    frames: int
    complete: bool
    observables: tuple[str, ...]


def is_density_file(path: str | Path) -> bool:
    """Whether ``path`` is an HDF5 file marked as a density file (never raises)."""
    try:
        f, _ = open_read(Path(path))
    except (TrajectoryFileError, OSError):
        return False
    with f:
        return file_kind(f) == KIND


def _inspect(f: h5py.File, path: Path) -> _Header:
    """Check that ``f`` is a density file this version can read; never reads frames."""
    params = f.get("parameters")
    refusal(path, f, DENSITY, "a mean-field density file")
    if not isinstance(params, h5py.Group) or file_kind(f) != KIND:
        raise file_error(
            path, "not a mean-field density file (no /parameters attribute kind = 'density'); "
            "particle runs are read with particles.load"
        )
    check_schema(params, path)
    try:
        config = config_from_dict(json.loads(params.attrs["config"]))
    except KeyError:
        raise file_error(path, "no /parameters attribute config") from None
    except (ValueError, TypeError) as exc:
        raise file_error(path, f"stored configuration is not valid: {exc}") from None
    element = f.get(ELEMENT)
    if not isinstance(element, h5py.Group) or any(
        not isinstance(element.get(k), h5py.Dataset) for k in ("step", "time", "value", "theta")
    ):
        raise file_error(path, f"no /{ELEMENT}/{{step,time,value,theta}} datasets")
    value, shape = element["value"], grid_shape(config)
    if value.shape[1:] != shape or element["theta"].shape != shape[:1]:
        raise file_error(path, f"density of shape {value.shape} does not match the "
                         f"configuration (frames, {', '.join(map(str, shape))})")
    lengths = [value.shape[0], element["step"].shape[0], element["time"].shape[0]]
    names = []
    for name, obs in f["observables"].items():
        if name == "density":
            continue
        data = obs.get("value") if isinstance(obs, h5py.Group) else None
        if not isinstance(data, h5py.Dataset) or data.ndim != 1:
            raise file_error(path, f"observable {name!r} is not a value dataset of shape "
                             "(frames,)")
        names.append(name)
        lengths.append(data.shape[0])
    frames = min(lengths)
    if frames == 0:
        raise file_error(path, "holds no frames")
    missing = [n for n in OBSERVABLES if n not in names]
    if missing:
        raise file_error(path, f"no observable {', '.join(missing)} (the solver's state)")
    flag = bool(params.attrs.get("complete", 0))
    if flag and max(lengths) != frames:
        raise file_error(path, f"it is marked complete but its datasets hold {frames} to "
                         f"{max(lengths)} frames (a damaged file)")
    complete = flag and frames == len(save_times(config))
    return _Header(config, frames, complete, tuple(names))


def read_density_summary(path: str | Path) -> DensitySummary:
    """Describe a density file from its header and last frame.

    Raises
    ------
    TrajectoryFileError
        As :func:`load_density`.
    """

    def reader(f: h5py.File, h: _Header) -> DensitySummary:
        element, last = f[ELEMENT], h.frames - 1
        return DensitySummary(
            path=Path(path),
            config=h.config,
            frames=h.frames,
            frames_expected=len(save_times(h.config)),
            time=float(element["time"][last]),
            step=int(element["step"][last]),
            complete=h.complete,
            observables=h.observables,
            # every frame checked (a density file is small): resume and info must
            # not take a damaged one for a finished solve
            final=finite_frames(np.asarray(element["value"][:h.frames], dtype=np.float64),
                                Path(path), "the density")[-1],
            final_observables={n: float(f["observables"][n]["value"][last])
                               for n in h.observables},
        )

    return read_retrying(path, _inspect, reader, "density")


@dataclass
class StoredDensity(DensityResult):
    """A :class:`~particles.meanfield.DensityResult` read from a file.

    Attributes
    ----------
    path : Path or None
        The file.
    complete : bool
        Whether the solve reached its final time (False: the frames of an
        interrupted solve, which ``--resume`` continues).
    step_size : ndarray, shape (F,)
        The solver's next step at each frame.
    phi, weights : ndarray or None
        Solves on the sphere: the longitudes (S^2) and the quadrature weights
        (module docstring); ``theta`` then holds the polar angles.
    """

    path: Path | None = None
    complete: bool = True
    step_size: np.ndarray | None = field(default=None, repr=False)
    phi: np.ndarray | None = field(default=None, repr=False)
    weights: np.ndarray | None = field(default=None, repr=False)


def load_density(path: str | Path) -> StoredDensity:
    """Read a density file written by :func:`particles.runs.meanfield.run_meanfield_to_file`.

    Parameters
    ----------
    path : str or Path
        A density file (complete, or left by an interrupted solve).

    Returns
    -------
    StoredDensity
        A :class:`~particles.meanfield.DensityResult` (``rho`` of shape
        (frames, M); ``steps``, ``rejected`` and ``final``, the
        :class:`~particles.meanfield.SolverState`, of the last frame) with
        ``path``, ``complete`` and ``step_size``.

    Raises
    ------
    TrajectoryFileError
        Missing, not HDF5, not a density file (a particle run: read it with
        :func:`particles.load`), damaged, or of a newer schema.
    """

    def reader(f: h5py.File, h: _Header) -> StoredDensity:
        element, k = f[ELEMENT], h.frames
        obs = {n: np.asarray(f["observables"][n]["value"][:k], dtype=np.float64)
               for n in h.observables}
        steps = np.asarray(element["step"][:k], dtype=np.int64)
        times = np.asarray(element["time"][:k], dtype=np.float64)
        rho = finite_frames(np.asarray(element["value"][:k], dtype=np.float64), Path(path),
                            "the density")
        final = SolverState(t=float(times[-1]), rho=rho[-1].copy(),
                            dt=float(obs["step_size"][-1]), steps=int(steps[-1]),
                            rejected=int(obs["rejected_steps"][-1]))
        return StoredDensity(
            config=h.config,
            theta=np.asarray(element["theta"][:], dtype=np.float64),
            times=times,
            rho=rho,
            mass=obs["mass"],
            energy=obs["energy"],
            dissipation=obs["dissipation"],
            min_density=obs["min_density"],
            steps=int(steps[-1]),
            rejected=int(obs["rejected_steps"][-1]),
            final=final,
            path=Path(path),
            complete=h.complete,
            step_size=obs["step_size"],
            phi=np.asarray(element["phi"][:]) if "phi" in element else None,
            weights=np.asarray(element["weights"][:]) if "weights" in element else None,
        )

    return read_retrying(path, _inspect, reader, "density")


def density_bytes(config: MeanFieldConfig, frames: int) -> int:
    """Rough bytes of ``frames`` frames of ``config`` on disk."""
    return frames * 8 * (int(np.prod(grid_shape(config))) + 8) + 2**16


class DensityKind:
    """The mean-field density file kind (:class:`~particles.io.kinds.FileKind`):
    the layout of this module; items are :class:`~particles.meanfield.DensityFrame`."""

    name = KIND
    description = "mean-field density"
    command = "particles meanfield"
    reader = "particles.load_density"
    unit = "frames"
    resumable = True
    error = TrajectoryFileError

    def can_open(self, f: h5py.File) -> bool:
        return file_kind(f) == KIND

    def create(self, path: Path, spec: MeanFieldConfig, *,
               flush_interval: float = FLUSH_INTERVAL) -> DensityWriter:
        return DensityWriter.create(path, spec, flush_interval=flush_interval)

    def reopen(self, path: Path, spec: MeanFieldConfig | None, *,
               flush_interval: float = FLUSH_INTERVAL) -> DensityWriter:
        return DensityWriter.reopen(path, flush_interval=flush_interval)

    def summarize(self, path: Path) -> DensitySummary:
        return read_density_summary(path)

    def load(self, path: Path):
        return load_density(path)

    def expected(self, spec: MeanFieldConfig) -> int:
        return len(save_times(spec))

    def bytes_needed(self, spec: MeanFieldConfig, items: int) -> int:
        return density_bytes(spec, items)

    def example(self) -> Example:
        """A density on 512 cells, 121 frames of a relaxing cosine (frame k's
        amplitude exp(-t_k)), each frame the state it claims."""
        spec = MeanFieldConfig(beta=1.0, modes=512, T=1.2, save_every=0.01)
        theta, times = grid(spec.modes), save_times(spec)

        def items(summary: DensitySummary | None):
            for k in range(0 if summary is None else summary.frames, len(times)):
                t = float(times[k])
                rho = (1.0 + 0.5 * np.exp(-t) * np.cos(theta)) / (2 * np.pi)
                state = SolverState(t=t, rho=rho, dt=0.01, steps=k, rejected=0)
                yield DensityFrame(time=t, rho=rho, mass=1.0, energy=float(rho @ rho),
                                   dissipation=0.0, min_density=float(rho.min()), state=state)

        return Example(spec, items)


#: the density kind, registered.
DENSITY = register(DensityKind())
