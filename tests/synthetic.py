"""Constructed trajectories with known answers, written without an integrator
(shared by the plotting, analysis and table tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from particles.config import SimulationConfig
from particles.engine import Frame
from particles.io import TrajectoryWriter
from particles.sphere import normalize
from particles.trajectory import Trajectory

#: the save times of :func:`collapsing` (frames)
TIMES = np.array([0.0, 0.3, 1.0, 3.0, 10.0, 100.0, 1000.0])


def collapsing(d: int, n: int = 12, batch: int | None = None, seed: int = 0) -> Trajectory:
    """Tokens contracting onto three cluster centres; two of them meet at the end."""
    rng = np.random.default_rng(seed)
    B = batch or 1
    centers = normalize(rng.normal(size=(B, 3, d)))
    which = np.arange(n) % 3
    u = rng.normal(size=(B, n, d))
    frames = []
    for f, t in enumerate(TIMES):
        c = centers.copy()
        if f == len(TIMES) - 1:
            c[:, 1] = c[:, 0]  # a late merge
        frames.append(normalize(c[:, which] + np.exp(-t) * u))
    x = np.stack(frames)  # (frames, B, n, d)
    config = SimulationConfig(
        n=n, d=d, beta=10.0, T=float(TIMES[-1]), save_times=tuple(TIMES), batch=batch, seed=seed
    )
    return Trajectory(
        times=TIMES.copy(),
        steps=np.arange(TIMES.size),
        positions=x if batch else x[:, 0],
        observables={},
        config=config,
    )


def write_file(path: Path, traj: Trajectory) -> Path:
    """Store a trajectory with the io writer (no integrator needed)."""
    w = TrajectoryWriter.create(path, traj.config)
    xb = traj.batched_positions()
    for f, t in enumerate(traj.times):
        w.append(Frame(f, f, float(t), xb[f], {"energy": np.zeros(xb.shape[1])}))
    w.close(complete=True)
    return path
