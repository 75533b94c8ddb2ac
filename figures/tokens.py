"""Tokens on the sphere and on the circle: the Transformer layer clusters them (issue 27, fig. 1).

``n`` tokens drawn uniformly on S^2 (and on S^1) follow the discrete
Transformer layer ``x_i <- normalize(x_i + dt sum_j A_ij x_j)`` (SA, Q = K = V
= I, :func:`particles.simulate` with ``integrator="euler"``).  The snapshots
show each token with the tail of its last few layers, coloured by the sector
its initial azimuth falls in: they gather into a few clusters, which then merge
(d >= 3: almost every start ends in one point).  A GIF of the sphere is
written beside the PNG.

Usage::

    python figures/tokens.py [--quick] [--out figures/tokens.png]

Writes ``PATH`` and ``PATH`` with suffix ``.gif`` (never opens a window).
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib.figure import Figure

from particles import Trajectory, simulate
from particles.analysis import ClusterDetector, analyze
from particles.gallery import figure_command
from particles.plotting import plot_angles, plot_tokens, save_movie

#: the layers' step and the cluster linking distance (radians).
DT, EPS = 0.1, 0.05


def run(n: int, d: int, beta: float, T: float, seed: int) -> Trajectory:
    """The Euler layer from a uniform start, every layer saved (frames = T / dt + 1)."""
    return simulate(n, d, beta, integrator="euler", dt=DT, T=T, save_every=1, seed=seed)


def sectors(x0: np.ndarray, k: int = 8) -> np.ndarray:
    """Colour group of each token: the sector of its initial azimuth, shape (n,)."""
    phi = np.mod(np.arctan2(x0[:, 1], x0[:, 0]), 2 * np.pi)
    return (phi * k / (2 * np.pi)).astype(np.int64)


def count_curve(traj: Trajectory) -> np.ndarray:
    """Cluster count at every layer, shape (frames,)."""
    return np.array([ClusterDetector(EPS).compute(x).num_clusters for x in traj.positions])


def snapshots(fig: Figure, row: int, cols: int, traj: Trajectory, times: list[float],
              tail: int) -> None:
    """One row: the tokens at each of ``times`` with their last ``tail`` layers."""
    x = traj.positions
    d = x.shape[-1]
    labels = sectors(x[0])
    for k, t in enumerate(times):
        f = int(np.argmin(np.abs(traj.times - t)))
        ax = fig.add_subplot(2, cols, row * cols + k + 1,
                             projection="3d" if d == 3 else None)
        plot_tokens(x[max(0, f - tail):f + 1], ax, labels=labels, radial_time=False, size=14)
        count = ClusterDetector(EPS).compute(x[f]).num_clusters
        ax.set_title(f"{'S²' if d == 3 else 'circle'}, t = {traj.times[f]:g} (layer {f}): "
                     f"{count} cluster{'s' if count != 1 else ''}", fontsize=10)
        if d == 3:
            ax.set_axis_off()
            ax.set_box_aspect((1, 1, 1))
        else:
            ax.set(aspect="equal", xlabel="x₁", ylabel="x₂")


def make_figure(sphere: Trajectory, circle: Trajectory, times: list[float], tail: int,
                seed: int) -> Figure:
    """Snapshots of S^2 (top) and the circle (bottom); right: cluster counts and angles."""
    cols = len(times) + 1
    fig = Figure(figsize=(3.4 * cols, 7.0), layout="constrained")
    snapshots(fig, 0, cols, sphere, times, tail)
    snapshots(fig, 1, cols, circle, times, tail)
    ax = fig.add_subplot(2, cols, cols)
    for traj, style, name in ((sphere, "-", "d = 3"), (circle, "--", "d = 2")):
        ax.step(traj.times[1:], count_curve(traj)[1:], style, where="post", label=name)
    ax.set(xscale="log", yscale="log", xlabel="time t = layer \u00d7 dt (log)",
           ylabel="clusters (log)", title="cluster count")
    ax.legend(fontsize=9)
    ax = fig.add_subplot(2, cols, 2 * cols)
    plot_angles(circle.times, circle.positions, ax, labels=sectors(circle.positions[0]))
    ax.set(xlabel="time t = layer \u00d7 dt (log)", ylabel="angle θᵢ (rad)")
    ax.set_title("circle: every token's angle", fontsize=10)
    n, beta = sphere.positions.shape[1], sphere.config.beta
    fig.suptitle(f"SA Transformer layer (Euler, dt = {DT:g}): n = {n}, β = {beta:g}, "
                 f"seed {seed}\ntop: d = 3 (S²), bottom: d = 2 (circle); tails: last {tail} "
                 f"layers; colour: sector of the initial azimuth; clusters: eps = {EPS} rad",
                 fontsize=11)
    return fig


def main(argv=None) -> int:
    """Command line: run both, save the PNG and the GIF, print the paths."""
    args = figure_command(__doc__, __file__, argv)
    n, T, frames = (16, 3.0, 12) if args.quick else (64, 15.0, 51)
    times = [0.0, T / 5, T / 2.5, T]
    sphere = run(n, 3, 1.0, T, args.seed)
    circle = run(n, 2, 1.0, T, args.seed)
    gif = args.out.with_suffix(".gif")
    save_movie(sphere, gif, analysis=analyze(sphere), max_frames=frames, fps=10, dpi=60)
    args.save(make_figure(sphere, circle, times, tail=5, seed=args.seed), gif)
    return 0


if __name__ == "__main__":
    sys.exit(main())
