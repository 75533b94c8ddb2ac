"""Model comparison files: several runs from one initial condition in one H5MD file.

Layout (H5MD 1.1 allows several particle groups, and observables grouped by
particle group; https://www.nongnu.org/h5md/)::

    /h5md                              version = [1, 1], author, creator
    /particles/<model>                 one particle group per model ("sa", "usa", "kuramoto")
        box                            dimension = d, boundary = ["none"] * d
        position
            step    int64   (frames,)
            time    float64 (frames,)  the same output times for every model
            value   float64 (frames, n, d)
    /observables/<model>/<name>        sampled with that model's positions
        step, time                     hard links to /particles/<model>/position/{step,time}
        value   float64 (frames,)
    /parameters                        particles_schema = 1 (int), kind = "comparison",
                                       models (JSON list, in run order), seed (decimal
                                       string, shared by every model), complete = 0 or 1
        versions                       particles, numpy, numba, h5py, hdf5, python
        <model>                        config (JSON of that model's SimulationConfig),
                                       seed (decimal string), complete = 0 or 1

The frame writer and the group reader are those of single-run files
(:class:`~particles.io.frames.GroupWriter`, :func:`particles.io.h5md.inspect_group`:
the same header, one particle group per model).  Each ``/particles/<model>``
group with its ``/observables/<model>`` and ``/parameters/<model>`` holds
exactly what a single-run file holds under ``/particles/tokens``,
``/observables`` and ``/parameters`` (:mod:`particles.io.h5md`), so each
model reads back as a
:class:`~particles.trajectory.Trajectory` (:func:`load_comparison`).  The
``kind`` attribute tells the two file types apart; :func:`particles.io.load`
refuses a comparison file with a message pointing here.

Frames are buffered and written at least every ``flush_interval`` seconds
(value first, then observables, then time and step, as in
:mod:`particles.io.h5md`), and readers use the shortest of those lengths.
The models are written one after the other, each closed complete before the
next starts; ``/parameters`` ``complete`` is set once every model is.
A session streams :class:`ModelFrame` items (:class:`ComparisonWriter.append`
opens each model's groups when its first frame comes).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from particles.config import SimulationConfig
from particles.errors import OutputWriteError, TrajectoryFileError
from particles.io.frames import GroupWriter
from particles.io.h5md import (
    add_particle_group,
    energy_attrs,
    inspect_group,
    read_observables,
    run_bytes,
    write_config,
)
from particles.io.hdf5 import (
    FLUSH_INTERVAL,
    RESERVE_MARGIN,
    Reserve,
    check_schema,
    close_file,
    close_quietly,
    create_file,
    file_error,
    file_kind,
    read_retrying,
    write_failure,
    write_header,
)
from particles.io.kinds import Example, register
from particles.trajectory import Frame, Trajectory

__all__ = [
    "COMPARISON",
    "KIND",
    "ComparisonSpec",
    "ComparisonSummary",
    "ComparisonWriter",
    "ModelFrame",
    "ModelWriter",
    "is_comparison",
    "load_comparison",
    "read_comparison_summary",
]

#: value of the ``/parameters`` attribute ``kind`` of a comparison file.
KIND = "comparison"


def is_comparison(f: h5py.File) -> bool:
    """Whether an open HDF5 file is a model comparison (``/parameters`` ``kind``)."""
    return file_kind(f) == KIND


@dataclass(frozen=True)
class ComparisonSpec:
    """What a comparison file holds: the models' configurations, in run order.

    Attributes
    ----------
    configs : mapping of str to SimulationConfig
        Model name -> resolved configuration of one system (``batch=None``).
    seed : int
        The root seed shared by every model.
    """

    configs: Mapping[str, SimulationConfig]
    seed: int

    @property
    def models(self) -> tuple[str, ...]:
        """The models, in run order."""
        return tuple(self.configs)


@dataclass(frozen=True)
class ModelFrame:
    """One frame of one model: the item a comparison session streams."""

    model: str
    frame: Frame


class ModelWriter(GroupWriter):
    """Appends the frames of one model to its groups of a comparison file.

    Made by :meth:`ComparisonWriter.add_model`; :meth:`append` each frame,
    then :meth:`close` once (which leaves the file open).
    """

    def __init__(
        self,
        file: h5py.File,
        config: SimulationConfig,
        *,
        flush_interval: float = FLUSH_INTERVAL,
        reserve: Reserve | None = None,
    ) -> None:
        m = config.model
        super().__init__(
            file,
            config,
            group=m,
            observables=f"observables/{m}",
            parameters=f"parameters/{m}",
            flush_interval=flush_interval,
            reserve=reserve,
            observable_attrs=energy_attrs(config),
        )
        self.model = m

    def close(self, *, complete: bool) -> None:
        """Write what is buffered and record whether the model's run completed."""
        self.finish(complete=complete)


class ComparisonWriter:
    """Writes a model comparison file: the trajectory header with one group per model.

    Use :meth:`create`, then :meth:`append` each :class:`ModelFrame` (models
    in the order of the spec; a model's groups are made when its first frame
    comes, and it is closed complete with its last frame), then :meth:`close`.

    Parameters
    ----------
    file : h5py.File
        A new file with the top-level groups written by :meth:`create`.
    spec : ComparisonSpec
    flush_interval : float
        Seconds of wall time between writes to disk.
    """

    def __init__(
        self,
        file: h5py.File,
        spec: ComparisonSpec,
        *,
        flush_interval: float = FLUSH_INTERVAL,
        reserve: Reserve | None = None,
    ) -> None:
        self._file = file
        self._reserve = reserve if reserve is not None else Reserve(file)
        self.spec = spec
        self.flush_interval = flush_interval
        self.models: list[str] = []
        self._writers: list[ModelWriter] = []

    @classmethod
    def create(cls, path: str | Path, spec: ComparisonSpec, *,
               flush_interval: float = FLUSH_INTERVAL) -> ComparisonWriter:
        """Create a new file (which must not exist) holding no model yet.

        Raises
        ------
        OutputWriteError
            The file could not be written (disk full); it is removed again.
        """
        f, reserve = create_file(path, lambda f: (
            write_header(
                f,
                kind=KIND,
                models=json.dumps(list(spec.models)),
                seed=str(spec.seed),
                complete=np.int8(0),
            ),
            f.create_group("particles"),
            f.create_group("observables"),
        ))
        return cls(f, spec, flush_interval=flush_interval, reserve=reserve)

    def add_model(self, config: SimulationConfig) -> ModelWriter:
        """Create the groups of one model and return the writer of its frames.

        Parameters
        ----------
        config : SimulationConfig
            Resolved configuration of one system (``batch=None``); its
            ``model`` names the groups.
        """
        if config.seed is None or config.batch is not None:
            raise ValueError("config must be resolved (concrete seed) and of one system")
        m, f = config.model, self._file
        if m in self.models:
            raise ValueError(f"model {m!r} is already in the file")
        try:
            self._reserve.ensure(f, RESERVE_MARGIN)
            add_particle_group(f, m, config, f"observables/{m}")
            write_config(f["parameters"].create_group(m), config)
            f.flush()
        except (OSError, RuntimeError) as exc:
            raise write_failure(f.filename, exc) from None
        self.models.append(m)
        self._writers.append(ModelWriter(f, config, flush_interval=self.flush_interval,
                                         reserve=self._reserve))
        return self._writers[-1]

    def append(self, item: ModelFrame) -> bool:
        """Buffer one model's frame (opening the model's groups at its first frame).

        Returns
        -------
        bool
            True when this call wrote frames to disk.
        """
        if not self.models or self.models[-1] != item.model:
            self.add_model(self.spec.configs[item.model])
        writer = self._writers[-1]
        wrote = writer.append(item.frame)
        if writer.frames + writer.pending == len(writer.config.output_times()):
            writer.close(complete=True)  # the model ran to its end
            wrote = True
        return wrote

    def flush(self) -> None:
        """Write the current model's buffered frames."""
        if self._writers:
            self._writers[-1].flush()

    @property
    def frames(self) -> int:
        """Frames on disk, summed over the models."""
        return sum(w.frames for w in self._writers)

    @property
    def pending(self) -> int:
        """Frames buffered but not yet on disk."""
        return sum(w.pending for w in self._writers)

    @property
    def failed(self) -> OutputWriteError | None:
        """The write failure that stopped a model's writer, or None."""
        return next((w.failed for w in self._writers if w.failed is not None), None)

    def close(self, *, complete: bool) -> None:
        """Close the current model (complete or not) and record whether every model
        ran to its end; close the file.

        Raises
        ------
        OutputWriteError
            A write failed (now or before, when ``complete``).
        """
        if not self._file:
            return
        try:
            last = self._writers[-1] if self._writers else None
            if last is not None and last.pending:
                last.close(complete=False)  # stopped before its last frame
            complete = (complete and self.failed is None
                        and self.models == list(self.spec.models))
            if complete or self.failed is None:
                self._reserve.ensure(self._file, 4096)
                self._file["parameters"].attrs["complete"] = np.int8(bool(complete))
                self._file.flush()
        except (OSError, RuntimeError) as exc:
            close_quietly(self._file, self._reserve)
            raise write_failure(self._file.filename, exc) from None
        except BaseException:
            close_quietly(self._file, self._reserve)
            raise
        close_file(self._file, self._reserve)


# ---------------------------------------------------------------- reading
def _model_config(f: h5py.File, model: str, path: Path) -> tuple[h5py.Group, SimulationConfig]:
    params = f["parameters"].get(model)
    if not isinstance(params, h5py.Group) or "config" not in params.attrs:
        raise file_error(path, f"no /parameters/{model} attribute config")
    try:
        config = SimulationConfig.from_json(params.attrs["config"])
    except (ValueError, TypeError) as exc:
        raise file_error(
            path, f"stored configuration of {model!r} is not valid: {exc}"
        ) from None
    if config.batch is not None:
        raise file_error(path, f"model {model!r} is an ensemble; comparisons hold one system")
    return params, config


def _read_model(f: h5py.File, model: str, path: Path) -> Trajectory | None:
    """One model's groups as a Trajectory (None if it holds no frame yet), with the
    checks of a single-run file."""
    params, config = _model_config(f, model, path)
    complete = bool(params.attrs.get("complete", 0))
    k, names = inspect_group(f, path, config, model, f"observables/{model}", label=model,
                             complete=complete)
    if k == 0:  # stopped before its first frame reached the disk
        return None
    complete = complete and k == len(config.output_times())
    pos = f[f"particles/{model}/position"]
    return Trajectory(
        times=np.asarray(pos["time"][:k], dtype=np.float64),
        steps=np.asarray(pos["step"][:k], dtype=np.int64),
        positions=np.asarray(pos["value"][:k], dtype=np.float64),
        observables=read_observables(f, names, slice(0, k), f"observables/{model}"),
        config=config,
        complete=complete,
    )


def _models(f: h5py.File, path: Path) -> list[str]:
    """The header of a comparison file: its models, in run order."""
    if not is_comparison(f):
        raise file_error(
            path,
            "is not a model comparison file (no /parameters kind = "
            "'comparison'); read single runs with particles.load",
        )
    params = f["parameters"]
    check_schema(params, path)
    try:
        return json.loads(params.attrs["models"])
    except (KeyError, TypeError, ValueError):
        raise file_error(path, "no valid /parameters attribute models") from None


def _read(path: str | Path, reader):
    """Open a comparison file, check its header, ``reader(f, models, path)`` (a file
    being written is read without its lock, retried if a read meets a half-written
    batch)."""
    path = Path(path)
    return read_retrying(path, _models, lambda f, models: reader(f, models, path),
                         "comparison")


def load_comparison(path: str | Path) -> dict[str, Trajectory]:
    """Read a model comparison file written by :func:`particles.runs.compare.compare_models`.

    Parameters
    ----------
    path : str or Path
        A comparison file (layout in :mod:`particles.io.compare`).

    Returns
    -------
    dict of str to Trajectory
        One trajectory per model in run order, ``positions`` of shape
        (frames, n, d); a model whose run stopped early has ``complete``
        False, and models without a frame on disk are absent.

    Raises
    ------
    TrajectoryFileError
        Missing, not HDF5, damaged, a newer schema, or a single-run
        trajectory (read that with :func:`particles.load`).
    """
    read = _read(path, lambda f, models, p: {
        m: _read_model(f, m, p) for m in models if m in f["particles"]})
    trajectories = {m: t for m, t in read.items() if t is not None}
    if not trajectories:
        raise file_error(Path(path), "holds no frames")
    return trajectories


@dataclass(frozen=True)
class ComparisonSummary:
    """What a comparison file holds, read without its frames.

    Attributes
    ----------
    path : Path
    models : tuple of str
        Every model of the comparison, in run order.
    frames : dict of str to int
        Frames on disk per model (0 for a model not started).
    frames_expected : dict of str to int
        Frames of each model's complete run (0 where its configuration is
        not written yet).
    complete : bool
        Every model ran to its end.
    """

    path: Path
    models: tuple[str, ...]
    frames: dict[str, int]
    frames_expected: dict[str, int]
    complete: bool

    @property
    def items(self) -> int:
        """Frames on disk, over every model."""
        return sum(self.frames.values())

    @property
    def items_expected(self) -> int:
        """Frames of the models started so far, complete."""
        return sum(self.frames_expected.values())

    def describe(self) -> str:
        """``"holds the frames so far (sa 21 of 21, usa 9 of 21, kuramoto none)"``."""
        per = ", ".join(f"{m} {self.frames[m]} of {self.frames_expected[m]}"
                        if self.frames_expected[m] else f"{m} none" for m in self.models)
        return f"holds the frames so far ({per})"


def read_comparison_summary(path: str | Path) -> ComparisonSummary:
    """Describe a comparison file from its header and each model's frame count.

    Raises
    ------
    TrajectoryFileError
        As :func:`load_comparison`.
    """

    def reader(f: h5py.File, models: list[str], p: Path) -> ComparisonSummary:
        frames, expected, done = {}, {}, []
        for m in models:
            frames[m] = expected[m] = 0
            if m in f["particles"]:
                params, config = _model_config(f, m, p)
                flag = bool(params.attrs.get("complete", 0))
                k, _ = inspect_group(f, p, config, m, f"observables/{m}", label=m,
                                     complete=flag)
                frames[m], expected[m] = k, len(config.output_times())
                done.append(flag and k == expected[m])
        complete = (bool(f["parameters"].attrs.get("complete", 0))
                    and len(done) == len(models) and all(done))
        return ComparisonSummary(p, tuple(models), frames, expected, complete)

    return _read(path, reader)


class ComparisonKind:
    """The comparison file kind (:class:`~particles.io.kinds.FileKind`): several
    models from one start, one particle group each; items are
    :class:`ModelFrame`.  Not resumable (a comparison is rerun)."""

    name = KIND
    description = "model comparison"
    command = "particles compare"
    reader = "particles.runs.compare.load_comparison"
    unit = "frames"
    resumable = False
    error = TrajectoryFileError

    def can_open(self, f: h5py.File) -> bool:
        return is_comparison(f)

    def create(self, path: Path, spec: ComparisonSpec, *,
               flush_interval: float = FLUSH_INTERVAL) -> ComparisonWriter:
        return ComparisonWriter.create(path, spec, flush_interval=flush_interval)

    def reopen(self, path: Path, spec: ComparisonSpec | None, *,
               flush_interval: float = FLUSH_INTERVAL) -> ComparisonWriter:
        raise file_error(path, "a model comparison cannot be continued; run it again")

    def summarize(self, path: Path) -> ComparisonSummary:
        return read_comparison_summary(path)

    def load(self, path: Path):
        return load_comparison(path)

    def expected(self, spec: ComparisonSpec) -> int:
        return sum(len(c.output_times()) for c in spec.configs.values())

    def bytes_needed(self, spec: ComparisonSpec, items: int) -> int:
        first = next(iter(spec.configs.values()))
        return run_bytes(first, items) + 2**16 * len(spec.configs)

    def example(self) -> Example:
        """Two models of 16 tokens on the circle, 101 frames each of random
        angles (frame k of model j drawn from seed (j, k))."""
        configs = {m: SimulationConfig(n=16, d=2, beta=1.0, model=m, dt=0.01, T=1.0,
                                       save_every=1, seed=5) for m in ("sa", "usa")}
        spec = ComparisonSpec(configs, 5)

        def items(summary: ComparisonSummary | None) -> Iterator[ModelFrame]:
            if summary is not None:
                raise ValueError("a comparison is not resumed")
            for j, (m, config) in enumerate(configs.items()):
                for k, t in enumerate(config.output_times()):
                    theta = np.random.default_rng((j, k)).uniform(0, 2 * np.pi, (1, 16))
                    x = np.stack([np.cos(theta), np.sin(theta)], axis=-1)
                    r = np.linalg.norm(x.mean(axis=1), axis=-1)
                    yield ModelFrame(m, Frame(k, k, float(t), x, {"order_parameter": r}))

        return Example(spec, items)


#: the comparison kind, registered.
COMPARISON = register(ComparisonKind())
