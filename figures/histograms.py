"""Pair inner products across layers: the mass moves to 1 (issue 27, figure 2).

``n`` tokens drawn uniformly on S^{d-1} (an ensemble of ``batch`` systems)
follow the SA Transformer layer (Euler, ``dt`` = 0.1); at every layer
:class:`particles.analysis.InnerProductHistogram` counts the pairs'
``<x_i, x_j>`` (systems pooled).  Top: the histograms at a few times; bottom:
all of them as an image (time against inner product, log density).  In
d = 3 the mass leaves the broad start for 1 through intermediate clusters; in
d = 128 all pairs move together, around the equiangular solution ``rho(t)``
of the d >> n limit (:func:`particles.plotting.sweep.equiangular_rho`,
Geshkovski et al., Thm 6.9), drawn dashed.

Usage::

    python figures/histograms.py [--quick] [--out figures/histograms.png]
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from particles import Trajectory, simulate
from particles.analysis import InnerProductHistogram
from particles.gallery import figure_command
from particles.plotting import plot_histogram
from particles.plotting.sweep import equiangular_rho

DT, BINS = 0.1, 80


def run(n: int, d: int, beta: float, T: float, batch: int, seed: int) -> Trajectory:
    """The Euler layer from uniform starts, every layer saved."""
    return simulate(n, d, beta, integrator="euler", dt=DT, T=T, save_every=1, batch=batch,
                    seed=seed)


def column(fig: Figure, axes, traj: Trajectory, shown: list[float]) -> None:
    """Histograms at ``shown`` times (top) and the image over every layer (bottom)."""
    ax_h, ax_img = axes
    hist = InnerProductHistogram(BINS).compute(traj)
    density = hist.density  # (frames, bins)
    t = traj.times
    cmap = colormaps["viridis"]
    for k, when in enumerate(shown):
        f = int(np.argmin(np.abs(t - when)))
        plot_histogram((hist.bin_edges, hist.counts[f]), ax_h, log=True, fill=False,
                       color=cmap(k / max(len(shown) - 1, 1)), linewidth=1.4,
                       label=f"t = {t[f]:g} (layer {f})")
    ax_h.set_ylabel("density of pairs (log)")
    ax_h.legend(fontsize=8, loc="upper left")
    floor = density[density > 0].min()
    image = ax_img.pcolormesh(t, hist.bin_edges, np.maximum(density, floor).T[:, :-1],
                              cmap="viridis", norm=LogNorm(vmin=floor, vmax=density.max()),
                              shading="flat")
    fig.colorbar(image, ax=ax_img, label="density of pairs (log)")
    mean = np.asarray(traj.observables["mean_inner_product"]).reshape(t.size, -1).mean(axis=1)
    ax_img.plot(t, mean, color="w", linewidth=1.2, label="mean over pairs")
    cfg = traj.config
    if cfg.d > 3:
        rho = equiangular_rho(t, cfg.beta, cfg.n, model=cfg.model)
        ax_img.plot(t, rho, "--", color="tab:orange", linewidth=1.6,
                    label="theory \u03c1(t), d ≫ n (equiangular ODE)")
    ax_img.set(xlabel="time t = layer \u00d7 dt", ylabel=r"$\langle x_i, x_j\rangle$",
               ylim=(-1, 1))
    ax_img.legend(fontsize=8, loc="lower right")
    ax_h.set_title(f"d = {cfg.d}: n = {cfg.n}, β = {cfg.beta:g}, {cfg.batch} systems, "
                   f"seed {cfg.seed}", fontsize=10)


def make_figure(runs: list[Trajectory], shown: list[float]) -> Figure:
    """One column per dimension."""
    fig = Figure(figsize=(6.0 * len(runs), 8.0), layout="constrained")
    axes = fig.subplots(2, len(runs), squeeze=False)
    for j, traj in enumerate(runs):
        column(fig, axes[:, j], traj, shown)
    fig.suptitle(f"Pair inner products across layers (SA Transformer layer, Euler, "
                 f"dt = {DT:g}): the mass moves to 1", fontsize=12)
    return fig


def main(argv=None) -> int:
    """Command line: run both dimensions, save the PNG, print its path."""
    args = figure_command(__doc__, __file__, argv)
    n, batch, T = (16, 2, 5.0) if args.quick else (32, 16, 15.0)
    runs = [run(n, d, 1.0, T, batch, args.seed) for d in (3, 128)]
    shown = [0.0, T / 15, T / 5, T / 2, T]
    args.save(make_figure(runs, shown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
