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

Each ``/particles/<model>`` group with its ``/observables/<model>`` and
``/parameters/<model>`` holds exactly what a single-run file holds under
``/particles/tokens``, ``/observables`` and ``/parameters``
(:mod:`particles.io.h5md`), so each model reads back as a
:class:`~particles.trajectory.Trajectory` (:func:`load_comparison`).  The
``kind`` attribute tells the two file types apart; :func:`particles.io.load`
refuses a comparison file with a message pointing here.

Frames are buffered and written at least every ``flush_interval`` seconds
(value first, then observables, then time and step, as in
:mod:`particles.io.h5md`), and readers use the shortest of those lengths.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import h5py
import numpy as np

from particles.config import SimulationConfig
from particles.io.h5md import (
    FLUSH_INTERVAL,
    H5MD_VERSION,
    SCHEMA_VERSION,
    TrajectoryFileError,
    _appendable,
    _author,
    _fail,
    _open_read,
    _versions,
    check_schema,
)
from particles.trajectory import Frame, Trajectory

#: value of the ``/parameters`` attribute ``kind`` of a comparison file.
KIND = "comparison"

__all__ = ["KIND", "ComparisonWriter", "ModelWriter", "is_comparison", "load_comparison"]


def is_comparison(f: h5py.File) -> bool:
    """Whether an open HDF5 file is a model comparison (``/parameters`` ``kind``)."""
    params = f.get("parameters")
    return isinstance(params, h5py.Group) and params.attrs.get("kind") == KIND


# ---------------------------------------------------------------- writing
class ModelWriter:
    """Appends the frames of one model to its groups of a comparison file.

    Made by :meth:`ComparisonWriter.add_model`; :meth:`append` each frame,
    then :meth:`close` once.

    Parameters
    ----------
    file : h5py.File
        The open comparison file.
    config : SimulationConfig
        The model's resolved configuration (one system, ``batch=None``).
    flush_interval : float
        Seconds of wall time between writes to disk.
    """

    def __init__(
        self, file: h5py.File, config: SimulationConfig, *, flush_interval: float = FLUSH_INTERVAL
    ) -> None:
        self._file = file
        self.config = config
        self.model = config.model
        self.flush_interval = flush_interval
        self.frames = 0
        self._buffer: list[Frame] = []
        self._last_flush = time.monotonic()

    def append(self, frame: Frame) -> None:
        """Buffer one frame (positions of shape (1, n, d)); write when due."""
        self._buffer.append(frame)
        if time.monotonic() - self._last_flush >= self.flush_interval:
            self.flush()

    def flush(self) -> None:
        """Write the buffered frames and flush the file."""
        frames, f = self._buffer, self._file
        if frames:
            k0, k1 = self.frames, self.frames + len(frames)
            pos = f[f"particles/{self.model}/position"]
            obs = f[f"observables/{self.model}"]
            names = list(frames[0].observables)
            for name in names:
                if name not in obs:
                    g = obs.create_group(name)
                    _appendable(g, "value", (), np.float64)
                    g["step"] = pos["step"]  # hard links: sampled with the positions
                    g["time"] = pos["time"]
            # value first, time and step last: readers use the shortest length
            _put(pos["value"], k0, k1, np.stack([fr.positions[0] for fr in frames]))
            for name in names:
                v = np.array([fr.observables[name][0] for fr in frames], dtype=np.float64)
                _put(obs[name]["value"], k0, k1, v)
            _put(pos["time"], k0, k1, np.array([fr.time for fr in frames]))
            _put(pos["step"], k0, k1, np.array([fr.step for fr in frames], dtype=np.int64))
            self.frames = k1
            self._buffer = []
        f.flush()
        self._last_flush = time.monotonic()

    def close(self, *, complete: bool) -> None:
        """Write what is buffered and record whether the model's run completed."""
        self.flush()
        self._file[f"parameters/{self.model}"].attrs["complete"] = np.int8(bool(complete))
        self._file.flush()


def _put(ds: h5py.Dataset, k0: int, k1: int, data: np.ndarray) -> None:
    if ds.shape[0] != k1:
        ds.resize(k1, axis=0)
    ds[k0:k1] = data


class ComparisonWriter:
    """Writes a model comparison file (layout in the module docstring).

    Use :meth:`create`, then :meth:`add_model` per model (in order; each
    model's writer is closed before the next starts), then :meth:`close`.

    Parameters
    ----------
    file : h5py.File
        A new file with the top-level groups written by :meth:`create`.
    flush_interval : float
        Seconds of wall time between writes to disk.
    """

    def __init__(self, file: h5py.File, *, flush_interval: float = FLUSH_INTERVAL) -> None:
        self._file = file
        self.flush_interval = flush_interval
        self.models: list[str] = []
        self._writers: list[ModelWriter] = []

    @classmethod
    def create(
        cls,
        path: str | Path,
        *,
        models: tuple[str, ...],
        seed: int,
        flush_interval: float = FLUSH_INTERVAL,
    ) -> ComparisonWriter:
        """Create a new file (which must not exist) holding no model yet.

        Parameters
        ----------
        path : str or Path
            New file.
        models : tuple of str
            The models that will be run, in order (recorded in ``/parameters``).
        seed : int
            The root seed shared by every model.
        flush_interval : float
            Seconds between writes to disk.
        """
        f = h5py.File(path, "x")
        try:
            h5md = f.create_group("h5md")
            h5md.attrs["version"] = np.array(H5MD_VERSION, dtype=np.int32)
            h5md.create_group("author").attrs["name"] = _author()
            versions = _versions()
            creator = h5md.create_group("creator")
            creator.attrs["name"] = "particles"
            creator.attrs["version"] = versions["particles"]
            f.create_group("particles")
            f.create_group("observables")
            params = f.create_group("parameters")
            params.attrs["particles_schema"] = np.int64(SCHEMA_VERSION)
            params.attrs["kind"] = KIND
            params.attrs["models"] = json.dumps(list(models))
            params.attrs["seed"] = str(seed)
            params.attrs["complete"] = np.int8(0)
            params.create_group("versions").attrs.update(versions)
            f.flush()
        except BaseException:
            f.close()
            raise
        return cls(f, flush_interval=flush_interval)

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
        group = f["particles"].create_group(m)
        box = group.create_group("box")
        box.attrs["dimension"] = np.int32(config.d)
        box.attrs["boundary"] = np.array(["none"] * config.d, dtype=h5py.string_dtype())
        pos = group.create_group("position")
        _appendable(pos, "value", (config.n, config.d), np.float64)
        _appendable(pos, "step", (), np.int64)
        _appendable(pos, "time", (), np.float64)
        f["observables"].create_group(m)
        params = f["parameters"].create_group(m)
        params.attrs["config"] = config.to_json()
        params.attrs["seed"] = str(config.seed)
        params.attrs["complete"] = np.int8(0)
        f.flush()
        self.models.append(m)
        self._writers.append(ModelWriter(f, config, flush_interval=self.flush_interval))
        return self._writers[-1]

    @property
    def frames(self) -> int:
        """Frames on disk, summed over the models."""
        return sum(w.frames for w in self._writers)

    def close(self, *, complete: bool) -> None:
        """Record whether every model ran to its end, and close the file."""
        if not self._file:
            return
        try:
            self._file["parameters"].attrs["complete"] = np.int8(bool(complete))
            self._file.flush()
        finally:
            self._file.close()


# ---------------------------------------------------------------- reading
def _read_model(f: h5py.File, model: str, path: Path) -> Trajectory | None:
    """One model's groups as a Trajectory (None if it holds no frame yet), with the
    checks of a single-run file."""
    params = f["parameters"].get(model)
    if not isinstance(params, h5py.Group) or "config" not in params.attrs:
        raise _fail(path, f"no /parameters/{model} attribute config")
    try:
        config = SimulationConfig.from_json(params.attrs["config"])
    except (ValueError, TypeError) as exc:
        raise _fail(path, f"stored configuration of {model!r} is not valid: {exc}") from None
    pos = f.get(f"particles/{model}/position")
    if not isinstance(pos, h5py.Group) or any(
        not isinstance(pos.get(k), h5py.Dataset) for k in ("step", "time", "value")
    ):
        raise _fail(path, f"no /particles/{model}/position/{{step,time,value}} datasets")
    value = pos["value"]
    if value.shape[1:] != (config.n, config.d):
        raise _fail(
            path,
            f"positions of {model!r} of shape {value.shape} do not match its "
            f"configuration (frames, {config.n}, {config.d})",
        )
    lengths = [value.shape[0], pos["step"].shape[0], pos["time"].shape[0]]
    elements = f.get(f"observables/{model}", {})
    for name, element in elements.items():
        data = element.get("value") if isinstance(element, h5py.Group) else None
        if not isinstance(data, h5py.Dataset) or data.ndim != 1:
            raise _fail(
                path, f"observable {model}/{name} is not a value dataset of shape (frames,)"
            )
        lengths.append(data.shape[0])
    k = min(lengths)
    if k == 0:  # stopped before its first frame reached the disk
        return None
    complete = bool(params.attrs.get("complete", 0)) and k == len(config.output_times())
    return Trajectory(
        times=np.asarray(pos["time"][:k], dtype=np.float64),
        steps=np.asarray(pos["step"][:k], dtype=np.int64),
        positions=np.asarray(value[:k], dtype=np.float64),
        observables={name: np.asarray(el["value"][:k]) for name, el in elements.items()},
        config=config,
        complete=complete,
    )


def load_comparison(path: str | Path) -> dict[str, Trajectory]:
    """Read a model comparison file written by :func:`particles.compare.compare_models`.

    Parameters
    ----------
    path : str or Path
        A comparison file (layout in the module docstring).

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
    path = Path(path)
    f, _ = _open_read(path)
    with f:
        if not is_comparison(f):
            raise _fail(
                path,
                "is not a model comparison file (no /parameters kind = "
                "'comparison'); read single runs with particles.load",
            )
        params = f["parameters"]
        check_schema(params, path)
        try:
            models = json.loads(params.attrs["models"])
        except (KeyError, TypeError, ValueError):
            raise _fail(path, "no valid /parameters attribute models") from None
        try:
            read = {m: _read_model(f, m, path) for m in models if m in f["particles"]}
        except TrajectoryFileError:
            raise
        except (OSError, KeyError, ValueError, TypeError, AttributeError) as exc:
            raise _fail(path, f"damaged comparison file ({type(exc).__name__}: {exc})") from None
    trajectories = {m: t for m, t in read.items() if t is not None}
    if not trajectories:
        raise _fail(path, "holds no frames")
    return trajectories
