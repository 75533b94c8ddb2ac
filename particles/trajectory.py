"""The result objects of a run: :class:`Trajectory` and its :class:`Frame`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from particles.config import SimulationConfig


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
    """

    times: np.ndarray
    steps: np.ndarray
    positions: np.ndarray
    observables: dict[str, np.ndarray] = field(default_factory=dict)
    config: SimulationConfig | None = None
    complete: bool = True

    @property
    def frames(self) -> int:
        """Number of saved frames."""
        return int(self.times.shape[0])

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
        """Last saved positions, shape (n, d) or (batch, n, d)."""
        return self.positions[-1]

    def batched_positions(self) -> np.ndarray:
        """Positions with an explicit batch axis, shape (frames, batch, n, d)."""
        return self.positions if self.batch is not None else self.positions[:, None]

    def __repr__(self) -> str:
        shape = "x".join(map(str, self.positions.shape))
        end = f"{self.times[-1]:g}" if self.frames else "-"
        status = "complete" if self.complete else "incomplete"
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
    """

    index: int
    step: int
    time: float
    positions: np.ndarray
    observables: dict[str, np.ndarray]
