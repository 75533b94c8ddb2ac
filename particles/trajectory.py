"""The result objects of a run: :class:`Trajectory`, its :class:`Frame`, the
:class:`Merge` events located while it ran, the :class:`Passage` of each
system to ``until_clusters`` and the :class:`Switch` of ``integrator="auto"``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from particles.protocols import RunSpec

#: why a run ended before its last save time (``Trajectory.stop_reason``, the
#: ``/parameters`` attribute ``stop_reason`` of a file): "" when it reached T.
STOP_REASONS: dict[str, str] = {
    "until_clusters": "the cluster count reached until_clusters (complete there)",
    "max_wall": "paused after max_wall seconds of wall time (resume continues it)",
}


@dataclass(frozen=True)
class Merge:
    """A drop of a system's cluster count, located between two saved frames.

    Attributes
    ----------
    time : float
        The first time seen with fewer clusters, to the bisection's tolerance
        (:func:`particles.events.locate_merges`).
    before, after : int
        Cluster counts just before and at ``time`` (``after < before``; two
        merges closer than the tolerance are one event of two).
    system : int
        System index (0 for a single system).
    """

    time: float
    before: int
    after: int
    system: int = 0

    @staticmethod
    def columns(merges: tuple[Merge, ...] | list[Merge]) -> dict[str, np.ndarray]:
        """Merges as columns :data:`MERGE_COLUMNS` (a file's datasets, a table's)."""
        return {name: np.array([getattr(m, name) for m in merges], dtype=dtype)
                for name, dtype in MERGE_COLUMNS.items()}


#: the columns of a table of merges and their types.
MERGE_COLUMNS: dict[str, type] = {"time": np.float64, "before": np.int64, "after": np.int64,
                                  "system": np.int64}


@dataclass(frozen=True)
class Passage:
    """The first time a system was seen with between 1 and ``until`` clusters
    (a run with ``until_clusters=until``).

    Attributes
    ----------
    system : int
        System index (0 for a single system).
    until : int
        The ``until_clusters`` in force when it was recorded.
    frame : int
        The first saved frame at which the system had between 1 and ``until``
        clusters.
    time : float
        When it got there: the located merge that brought its count to
        ``until`` or fewer (``merge_events=True``), else the time of
        ``frame`` (it got there after the frame before).  The time of frame 0
        for a system there from the start; NaN when it was there at the frame a resumed
        run continued from, a resume that changed ``until_clusters``: it got
        there at or before that frame, when is not recorded.
    """

    system: int
    until: int
    frame: int
    time: float

    @staticmethod
    def columns(passages: tuple[Passage, ...] | list[Passage]) -> dict[str, np.ndarray]:
        """Passages as columns :data:`PASSAGE_COLUMNS` (a file's datasets, a table's)."""
        return {name: np.array([getattr(p, name) for p in passages], dtype=dtype)
                for name, dtype in PASSAGE_COLUMNS.items()}


#: the columns of a table of passages and their types.
PASSAGE_COLUMNS: dict[str, type] = {"system": np.int64, "until": np.int64, "frame": np.int64,
                                    "time": np.float64}


@dataclass(frozen=True)
class Switch:
    """The save point at which ``integrator="auto"`` went on with its stiff phase
    (:mod:`particles.integrators.auto`).

    Attributes
    ----------
    frame : int
        The frame it switched at: the frames after it are the new integrator's.
    time : float
        That frame's time.
    before, after : str
        The integrators (``"dopri5"``, ``"sdirk4"``).
    stiffness : float
        The evidence: the mean dopri5 step over the save interval ending at
        ``frame`` times the spectral radius estimate there, the smallest over
        the systems (at least :data:`particles.integrators.auto.STIFF`).
    """

    frame: int
    time: float
    before: str
    after: str
    stiffness: float

    @staticmethod
    def columns(switches: tuple[Switch, ...] | list[Switch]) -> dict[str, np.ndarray]:
        """Switches as columns :data:`SWITCH_COLUMNS` (a file's datasets)."""
        return {name: np.array([getattr(s, name) for s in switches],
                               dtype=object if dtype is str else dtype)
                for name, dtype in SWITCH_COLUMNS.items()}


#: the columns of a table of switches and their types (str: variable-length UTF-8).
SWITCH_COLUMNS: dict[str, type] = {"frame": np.int64, "time": np.float64, "before": str,
                                   "after": str, "stiffness": np.float64}


def first_passages(passages: Iterable[Passage],
                   seen: set[tuple[int, int]] | None = None) -> list[Passage]:
    """The passages not recorded before: the first of each ``(system, until)``.

    A run reports a system again where it cannot know that it was recorded
    (the frame a resumed run continues from); the first record stands.

    Parameters
    ----------
    passages : iterable of Passage
        In the order recorded.
    seen : set of (int, int), optional
        ``(system, until)`` pairs recorded before; updated with the new ones.
    """
    seen = set() if seen is None else seen
    out = []
    for p in passages:
        if (p.system, p.until) not in seen:
            seen.add((p.system, p.until))
            out.append(p)
    return out


@dataclass(frozen=True)
class Trajectory:
    """Saved frames of a run (returned by ``simulate`` and ``load``).

    Attributes
    ----------
    times : ndarray, shape (frames,)
        Times of the saved frames.
    steps : ndarray of int64, shape (frames,)
        Integration step of each frame (fixed-step integrators: steps taken
        since t = 0; adaptive ones: the frame index).
    positions : ndarray, shape (frames, n, d) or (frames, batch, n, d)
        Tokens at each frame; the batch axis is present iff ``config.batch``
        is not None.
    observables : dict of str to ndarray, shape (frames,) or (frames, batch)
        Scalars recorded at each frame (see :mod:`particles.observables`).
    config : SimulationConfig
        The full resolved configuration (concrete seed).
    complete : bool
        False for a run that stopped before its final time.
    stop_reason : str
        Why the run ended before its last save time (a key of
        :data:`STOP_REASONS`), or "".
    merge_events : tuple of Merge
        The merges located while it ran (``merge_events=True``), in time order
        (systems of an ensemble interleaved; each carries its system).
    passages : tuple of Passage
        Each system's first passage to ``until_clusters`` (a run with a stop at
        a cluster count), in the order of their frames.
    switches : tuple of Switch
        The save points at which ``integrator="auto"`` went on with its stiff
        phase (at most one per run, unless a resume chose ``auto`` again).
    """

    times: np.ndarray
    steps: np.ndarray
    positions: np.ndarray
    observables: dict[str, np.ndarray] = field(default_factory=dict)
    config: RunSpec | None = None
    complete: bool = True
    stop_reason: str = ""
    merge_events: tuple[Merge, ...] = ()
    passages: tuple[Passage, ...] = ()
    switches: tuple[Switch, ...] = ()

    @property
    def frames(self) -> int:
        """Number of saved frames."""
        return int(self.times.shape[0])

    @property
    def switch_time(self) -> float | None:
        """When ``integrator="auto"`` went on with its stiff phase (the last
        switch's time), or None: it did not (or another integrator ran)."""
        return self.switches[-1].time if self.switches else None

    @property
    def batch(self) -> int | None:
        """Ensemble size, or None for a single system."""
        return None if self.positions.ndim == 3 else int(self.positions.shape[1])

    @property
    def n(self) -> int:
        """Number of tokens."""
        return int(self.positions.shape[-2])

    @property
    def d(self) -> int:
        """Ambient dimension."""
        return int(self.positions.shape[-1])

    @property
    def final(self) -> np.ndarray:
        """Last saved positions, shape (n, d) or (batch, n, d).

        Raises
        ------
        ValueError
            No positions were kept (a run with ``positions="none"``).
        """
        if not len(self.positions):
            raise ValueError(
                "this trajectory kept no positions (positions='none'); run with "
                "positions='final' to keep the last frame's"
            )
        return self.positions[-1]

    def batched_positions(self) -> np.ndarray:
        """Positions with an explicit batch axis, shape (frames, batch, n, d)."""
        return self.positions if self.batch is not None else self.positions[:, None]

    def to_xarray(self) -> Any:
        """The run as an :class:`xarray.Dataset` (labelled axes, config in the attributes).

        Returns
        -------
        xarray.Dataset
            ``position`` with dims ``("time", "token", "coordinate")``, or
            ``("time", "system", "token", "coordinate")`` for an ensemble;
            every observable as a variable on ``("time"[, "system"])``;
            ``step`` as a coordinate on ``time``; ``mass`` on ``token`` for a
            weighted run.  ``attrs``: ``config`` (the JSON of the full
            configuration), each scalar configuration entry by name (the
            seed as a string: it does not fit a 64-bit integer), ``complete``
            (0 or 1).

        Raises
        ------
        ImportError
            xarray is not installed (``pip install 'attention-particles[tables]'``).
        """
        try:
            import xarray as xr
        except ImportError:  # pragma: no cover - the message is the point
            raise ImportError(
                "to_xarray needs xarray: pip install 'attention-particles[tables]'"
            ) from None
        lead = ("time",) if self.batch is None else ("time", "system")
        coords: dict[str, Any] = {
            "time": np.asarray(self.times),
            "step": ("time", np.asarray(self.steps)),
            "token": np.arange(self.n),
            "coordinate": np.arange(self.d),
        }
        if self.batch is not None:
            coords["system"] = np.arange(self.batch)
        data: dict[str, Any] = {
            "position": ((*lead, "token", "coordinate"), np.asarray(self.positions))
        }
        for name, value in self.observables.items():
            data[name] = (lead, np.asarray(value))
        attrs: dict[str, Any] = {"complete": int(bool(self.complete))}
        cfg = self.config
        if cfg is not None:
            if cfg.masses is not None:
                data["mass"] = ("token", np.asarray(cfg.masses, dtype=np.float64))
            attrs["config"] = cfg.to_json()
            for key, value in cfg.to_dict().items():
                if key == "seed" and value is not None:
                    attrs[key] = str(value)
                elif isinstance(value, bool):
                    attrs[key] = int(value)
                elif isinstance(value, str | float) or (
                    isinstance(value, int) and abs(value) < 2**63
                ):
                    attrs[key] = value
        return xr.Dataset(data, coords=coords, attrs=attrs)

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.positions.shape))
        end = f"{self.times[-1]:g}" if self.frames else "-"
        status = "complete" if self.complete else "incomplete"
        if self.stop_reason:
            status += f", stopped by {self.stop_reason}"
        return f"Trajectory(frames={self.frames}, positions={shape}, t_end={end}, {status})"


@dataclass(frozen=True)
class Frame:
    """One saved frame, as produced by :func:`particles.engine.iter_frames`.

    Attributes
    ----------
    index : int
        Frame number (0 is the initial condition).
    step : int
        Integration step (see :class:`~particles.trajectory.Trajectory`).
    time : float
        Time of the frame.
    positions : ndarray, shape (batch, n, d)
        Tokens (a copy; always with a batch axis).
    observables : dict of str to ndarray, shape (batch,)
        Scalars at this frame.
    clusters : ndarray of int64, shape (batch,), optional
        Cluster counts (eps 0.05), when a stop or the merge events asked for them.
    merges : tuple of Merge
        Merges located between the previous frame and this one, in time order.
    passages : tuple of Passage
        Systems that reached ``until_clusters`` at this frame (or at the frame
        a run starts from).
    switch : Switch, optional
        Set where ``integrator="auto"`` goes on with its stiff phase after this frame.
    stop : str
        Set on the last frame of a run that stops early (a key of
        :data:`STOP_REASONS`).
    """

    index: int
    step: int
    time: float
    positions: np.ndarray
    observables: dict[str, np.ndarray]
    clusters: np.ndarray | None = None
    merges: tuple[Merge, ...] = ()
    passages: tuple[Passage, ...] = ()
    switch: Switch | None = None
    stop: str = ""
