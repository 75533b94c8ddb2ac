"""Clustering under each attention kernel from the same start (issue 27, figure 7).

:func:`particles.kernel_comparison.compare_kernels` draws one set of ``n``
uniform tokens on S^{d-1} from the seed and runs SA with every kernel of
:data:`particles.fields.KERNELS` (edp, rbf, l2, intersection, quadratic) from
exactly those tokens (dopri5, log-spaced save times); the same tokens also
run with the doubly stochastic Sinkhorn normalisation of edp
(``normalization="sinkhorn"`` in :func:`particles.simulate`).  Top: the
cluster count of each run against log time; bottom: the histograms of the
pair inner products ``<x_i, x_j>`` at three times.  Theory (dashed): on the
sphere ``exp(beta <x, y>) = e^beta exp(-(beta/2) |x - y|^2)``, so rbf at
``tau = beta/2`` runs edp's dynamics exactly; its line lies on edp's.

Usage::

    python figures/kernels.py [--quick] [--out figures/kernels.png]
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from particles import simulate
from particles.analysis import InnerProductHistogram, count_clusters
from particles.gallery import figure_command
from particles.kernel_comparison import compare_kernels

BINS = 40


def run_all(n: int, d: int, beta: float, T: float, frames: int, seed: int):
    """Every kernel and Sinkhorn from one start: {label: (times, counts, hist counts)}."""
    common = dict(integrator="dopri5", T=T, save_times=f"log:0.01:{T:g}:{frames}", seed=seed)
    result = compare_kernels(n=n, d=d, beta=beta, tau=beta / 2, **common)
    out = {name: (r.trajectory.times, r.clusters, r.histograms)
           for name, r in result.runs.items()}
    traj = simulate(n, d, beta, normalization="sinkhorn", x0=result.x0, **common)
    hist = InnerProductHistogram(BINS).compute(traj)
    out["edp + Sinkhorn"] = (traj.times, np.atleast_1d(count_clusters(traj.positions,
                                                                      result.eps)), hist.counts)
    return out, result.bin_edges, result.eps


def make_figure(runs, edges, eps, n, d, beta, seed) -> Figure:
    """Cluster counts (top) and pair histograms at three times per run (bottom)."""
    fig = Figure(figsize=(15.0, 7.6), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.15, 1.0])
    ax = top.subplots()
    cmap = colormaps["viridis"]
    names = list(runs)
    for k, name in enumerate(names):
        t, c, _ = runs[name]
        keep = t > 0
        style = dict(linestyle="--", color="k", linewidth=1.4, dashes=(4, 3),
                     label=f"{name}, τ = β/2 (theory: the same dynamics as edp)") \
            if name == "rbf" else dict(color=cmap(0.1 + 0.8 * k / (len(names) - 1)),
                                       linewidth=4.0 if name == "edp" else 2.2,
                                       alpha=0.6 if name == "edp" else 0.85, label=name)
        ax.step(t[keep], c[keep], where="post", **style)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time t (log)")
    ax.set_ylabel(f"clusters (eps = {eps:g} rad, log)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=9, loc="lower left", ncol=2)
    times = runs[names[0]][0]
    shown = [int(np.argmin(np.abs(np.log(np.maximum(times, 1e-9) / w))))
             for w in (1.0, 8.0, times[-1])]
    axes = bottom.subplots(1, len(names), sharey=True)
    centres = 0.5 * (edges[1:] + edges[:-1])
    for a, name in zip(axes, names, strict=True):
        h = runs[name][2]
        for j, f in enumerate(shown):
            density = h[f] / max(h[f].sum(), 1) / np.diff(edges)
            a.step(centres, np.maximum(density, 1e-3), where="mid",
                   color=cmap(0.85 * j / (len(shown) - 1)), label=f"t = {times[f]:.3g}")
        a.set_yscale("log")
        a.set_title(name, fontsize=10)
        a.set_xlabel(r"$\langle x_i, x_j\rangle$")
    axes[0].set_ylabel("density of pairs (log, floor 1e-3)")
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"Clustering under each attention kernel from one start: n = {n}, d = {d}, "
                 f"β = {beta:g} (rbf, l2: τ = β/2; quadratic: \u03b3 = 1), SA, dopri5, seed {seed}",
                 fontsize=11)
    return fig


def main(argv=None) -> int:
    """Command line: run every kernel, save the PNG, print the final counts."""
    args = figure_command(__doc__, __file__, argv)
    n, d, beta, T, frames = (24, 3, 4.0, 30.0, 20) if args.quick else (64, 3, 4.0, 300.0, 50)
    runs, edges, eps = run_all(n, d, beta, T, frames, args.seed)
    for name, (_, c, _) in runs.items():
        print(f"{name}: clusters {c[1]} -> {c[-1]}")
    args.save(make_figure(runs, edges, eps, n, d, beta, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
