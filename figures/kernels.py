"""Clustering under each attention kernel from the same start (issue 27, figure 7).

:func:`particles.runs.compare_kernels` draws one set of ``n``
uniform tokens on S^{d-1} from the seed and runs SA with every kernel of
:data:`particles.fields.KERNELS` (edp, rbf, l2, intersection, quadratic) from
exactly those tokens (dopri5, log-spaced save times); the same tokens also
run with the doubly stochastic Sinkhorn normalisation of edp
(``normalization="sinkhorn"`` in :func:`particles.simulate`).  Top: the
cluster count of each run against log time; bottom: the histograms of the
pair inner products ``<x_i, x_j>`` at three times.  Theory (dashed): on the
sphere ``exp(beta <x, y>) = e^beta exp(-(beta/2) |x - y|^2)``, so rbf at
``tau = beta/2`` runs edp's dynamics exactly; its line lies on edp's.  Two or
more clusters left at T are metastable where the theory says so (SA on the
sphere, d >= 3: almost every start ends in one cluster): the edp and
Sinkhorn runs that end with several are continued from their last positions
(``until_clusters=1``, ``merge_events=True``) to the located time of their
last merge, printed and written in the top panel.

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
from particles.runs import compare_kernels

BINS = 40


#: how far the runs left with several clusters are continued (their last merge comes first).
LATER = 1e5


def single_cluster_time(x: np.ndarray, beta: float, T: float, normalization: str) -> float:
    """Continue SA from positions ``x`` (n, d) at time ``T`` until one cluster: the located
    time of the last merge (inf: none by ``T + LATER``)."""
    n, d = x.shape
    later = simulate(n, d, beta, normalization=normalization, x0=x, integrator="dopri5",
                     T=LATER, save_times=f"log:1:{LATER:g}:6", until_clusters=1,
                     merge_events=True)
    merges = later.merge_events
    return T + merges[-1].time if merges and merges[-1].after == 1 else np.inf


def run_all(n: int, d: int, beta: float, T: float, frames: int, seed: int):
    """Every kernel and Sinkhorn from one start: {label: (times, counts, hist counts)}, and
    {label: time of one cluster} for edp and Sinkhorn when they end T with several."""
    common = dict(integrator="dopri5", T=T, save_times=f"log:0.01:{T:g}:{frames}", seed=seed)
    result = compare_kernels(n=n, d=d, beta=beta, tau=beta / 2, **common)
    out = {name: (r.trajectory.times, r.clusters, r.histograms)
           for name, r in result.runs.items()}
    traj = simulate(n, d, beta, normalization="sinkhorn", x0=result.x0, **common)
    hist = InnerProductHistogram(BINS).compute(traj)
    out["edp + Sinkhorn"] = (traj.times, np.atleast_1d(count_clusters(traj.positions,
                                                                      result.eps)), hist.counts)
    last = {"edp": (result.runs["edp"].trajectory.positions[-1], "softmax"),
            "edp + Sinkhorn": (traj.positions[-1], "sinkhorn")}
    one = {name: single_cluster_time(np.asarray(x), beta, T, norm)
           for name, (x, norm) in last.items() if out[name][1][-1] > 1}
    return out, result.bin_edges, result.eps, one


def make_figure(runs, edges, eps, n, d, beta, seed, one=None) -> Figure:
    """Cluster counts (top) and pair histograms at three times per run (bottom); ``one``:
    {label: time of one cluster} of the runs continued after T."""
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
    if one:
        T = runs[names[0]][0][-1]
        said = "\n".join(f"{name}: one cluster at t = {t:.4g}" for name, t in one.items())
        ax.text(0.99, 0.97, f"several clusters at T = {T:g} are metastable\n(SA on the sphere, "
                f"d \u2265 3, ends in one cluster);\ncontinued from T:\n{said}",
                transform=ax.transAxes, ha="right", va="top", fontsize=9,
                bbox=dict(facecolor="white", edgecolor="0.7", alpha=0.9))
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
    runs, edges, eps, one = run_all(n, d, beta, T, frames, args.seed)
    centres = 0.5 * (edges[1:] + edges[:-1])
    for name, (_, c, h) in runs.items():
        later = f"; one cluster at t = {one[name]:.4g} (continued)" if name in one else ""
        apart = centres[centres < 0][np.argmax(h[-1][centres < 0])] if c[-1] > 1 else None
        across = f", pairs across clusters at <x_i, x_j> ~ {apart:.2f}" if apart else ""
        print(f"{name}: clusters {c[1]} -> {c[-1]}{across}{later}")
    args.save(make_figure(runs, edges, eps, n, d, beta, args.seed, one))
    return 0


if __name__ == "__main__":
    sys.exit(main())
