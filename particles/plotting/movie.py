"""A run as a movie: the tokens moving, coloured by the cluster they end in (a GIF).

The movie is written whole under a temporary name and then takes its name
(:func:`particles.paths.replacing`), as every figure does
(:func:`particles.plotting.save.save_figure`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from particles.analysis import AnalysisResult, analyze
from particles.display import time_text
from particles.paths import replacing
from particles.plotting.axes import (
    arc_points,
    cluster_colors,
    clusters_text,
    principal_directions,
    sphere_wireframe,
    unit_circle,
)
from particles.plotting.frames import check_member, system_of
from particles.plotting.titles import trajectory_title

__all__ = ["save_movie"]


def save_movie(
    traj: Any,
    out: str | os.PathLike,
    *,
    analysis: AnalysisResult | None = None,
    system: int = 0,
    fps: int = 8,
    max_frames: int = 100,
    trail: int = 5,
    dpi: int = 80,
    overwrite: bool = True,
) -> Path:
    """Write a GIF of the tokens moving (matplotlib's PillowWriter).

    Tokens keep the colour of the cluster they belong to at the end, so the
    movie shows which tokens end up together; each drags a short trail.

    Parameters
    ----------
    traj : Trajectory
    out : str or path-like
        Output GIF path (written whole under a temporary name, then moved
        into place; :func:`save_plot` checks it first).
    analysis : AnalysisResult, optional
        For the cluster colours and counts (computed when None).
    system : int
        Ensemble member to draw.
    fps : int
        Frames per second.
    max_frames : int
        Saved frames are subsampled evenly down to this many.
    trail : int
        Each token drags its positions at the last ``trail`` movie frames.
    dpi : int
        Resolution.
    overwrite : bool
        Replace an existing ``out`` (only once the new movie is complete).

    Returns
    -------
    Path
    """
    from matplotlib.animation import PillowWriter

    analysis = analyze(traj) if analysis is None else analysis
    batch = analysis.batch
    check_member(batch, system)
    path = system_of(np.asarray(traj.positions, dtype=np.float64), batch, system)
    labels = system_of(analysis.labels, batch, system)
    counts = system_of(analysis.counts, batch, system)
    T = analysis.times
    frames, n, d = path.shape
    idx = np.unique(np.linspace(0, frames - 1, min(frames, max_frames)).round().astype(int))
    directions = principal_directions(path) if d > 3 else np.eye(d)
    shown = path @ directions  # (frames, n, 2 or 3)
    colors = cluster_colors(labels[-1], n)
    title = trajectory_title(traj, analysis, system if batch is not None else None)
    if d > 3:
        title += "\n(top 3 principal directions)"

    # build the scene once and move its artists: rebuilding 3-D axes for every
    # frame costs ~10x more
    fig = Figure(figsize=(5.0, 5.0), layout="constrained")
    if d == 2:
        ax = fig.add_subplot()
        unit_circle(ax)
    else:
        ax = fig.add_subplot(projection="3d")
        sphere_wireframe(ax)
    lines = [
        ax.plot(*shown[:1, i].T, color=colors[i], linewidth=0.8, alpha=0.6)[0] for i in range(n)
    ]
    extra = {"depthshade": False} if d >= 3 else {}
    dots = ax.scatter(
        *shown[0].T, s=20, c=colors, edgecolors="k", linewidths=0.3, zorder=3, **extra
    )
    heading = ax.set_title("", fontsize=9)
    writer = PillowWriter(fps=fps)
    with replacing(out, overwrite=overwrite) as temp, writer.saving(fig, os.fspath(temp), dpi):
        for k, f in enumerate(idx):
            start = idx[max(0, k - trail)]
            for i, line in enumerate(lines):
                arc = arc_points(path[start : f + 1, i]) @ directions
                if d == 2:
                    line.set_data(arc[:, 0], arc[:, 1])
                else:
                    line.set_data_3d(arc[:, 0], arc[:, 1], arc[:, 2])
            if d == 2:
                dots.set_offsets(shown[f])
            else:
                dots._offsets3d = tuple(shown[f].T)  # the documented way to move 3-D points
            heading.set_text(f"{title}\nt = {time_text(T[f])}, {clusters_text(int(counts[f]))}")
            writer.grab_frame()
    return Path(out)
