"""Metastability on the circle: fast formation, exponentially slow merges (issue 27, fig. 4).

``n`` tokens drawn i.i.d. uniformly on the circle (a near-uniform start)
follow SA attention (:func:`particles.simulate`, dopri5 with log-spaced save
times, the spectral sums ``summation="auto"`` and collapsed clusters, the
long-run fast paths).  The cluster count (eps = 0.05 rad) and the normalised
energy ``2 beta e^{-beta} E_beta`` form a staircase against log time: clusters
form at t ~ 1-10, about ``argmax_k k^2 I_k(beta)`` of them
(:func:`particles.meanfield.fastest_mode`, the mode that grows fastest from the
uniform density), then merge one pair at a time after plateaus that lengthen
like ``exp(c beta)``.  ``merge_events=True`` locates each drop of the count by
bisection (:attr:`particles.Trajectory.merge_events`), drawn as the red
staircase and ticks.

Usage::

    python figures/metastability.py [--quick] [--out figures/metastability.png]
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib.figure import Figure

from particles import Trajectory, simulate
from particles.analysis import AnalysisResult, analyze
from particles.gallery import figure_command
from particles.meanfield import fastest_mode
from particles.plotting import plot_cluster_count, plot_energy

RTOL = 1e-8


def run(n: int, beta: float, T: float, frames: int, seed: int) -> Trajectory:
    """SA on the circle from a uniform start, ``frames`` save times log-spaced in [0.01, T]."""
    return simulate(n, 2, beta, integrator="dopri5", rtol=RTOL, T=T, summation="auto",
                    save_times=f"log:0.01:{T:g}:{frames}", merge_events=True, seed=seed)


def located_staircase(traj: Trajectory) -> tuple[np.ndarray, np.ndarray]:
    """The count from the located merges: times (m + 2,) and counts (m + 2,)."""
    merges = traj.merge_events
    if not merges:
        return np.array([]), np.array([])
    t = [merges[0].time / 1.01, *(m.time for m in merges), traj.times[-1]]
    c = [merges[0].before, *(m.after for m in merges), merges[-1].after]
    return np.array(t), np.array(c)


def column(axes, traj: Trajectory, a: AnalysisResult) -> None:
    """Cluster count (top) and normalised energy (bottom) of one run."""
    ax_c, ax_e = axes
    cfg = traj.config
    form = a.timescales[0].formation_time if a.timescales else None
    plot_cluster_count(a.times, a.counts, ax_c, formation_time=form)
    t, c = located_staircase(traj)
    if t.size:
        ax_c.step(t, c, where="post", color="tab:red", linewidth=0.9, alpha=0.8,
                  label=f"located merges ({len(traj.merge_events)}, bisection)")
    k = fastest_mode(cfg.beta, cfg.model)
    ax_c.axhline(k, color="k", linestyle=":", linewidth=1.2,
                 label=rf"theory: argmax$_k\, k^2 I_k(\beta)$ = {k}")
    if ax_c.get_yscale() == "linear":
        ax_c.set_ylim(0, max(int(np.max(a.counts)), k) + 1)
    ax_c.set_xlabel("")
    ax_c.legend(loc="upper right", fontsize=8)
    ax_c.set_title(f"β = {cfg.beta:g}: n = {cfg.n}, d = 2, SA, seed {cfg.seed}", fontsize=10)
    plot_energy(a.times, traj.observables["energy_normalized"], ax_e, formation_time=form)
    for m in traj.merge_events:
        ax_e.axvline(m.time, ymax=0.04, color="tab:red", linewidth=0.8)
    ax_e.set_xlabel("time t (log); red ticks: located merges")
    ax_e.set_ylabel(r"normalised energy $2\beta e^{-\beta} E_\beta$")


def make_figure(runs: list[tuple[Trajectory, AnalysisResult]]) -> Figure:
    """One column per beta."""
    fig = Figure(figsize=(6.0 * len(runs), 7.5), layout="constrained")
    axes = fig.subplots(2, len(runs), squeeze=False, sharex="col")
    for j, (traj, a) in enumerate(runs):
        column(axes[:, j], traj, a)
    fig.suptitle(f"Metastability on the circle: clusters form fast, then merge after plateaus "
                 f"~ exp(c β)\n(uniform start, dopri5 rtol {RTOL:g}, {runs[0][0].times.size} "
                 "log-spaced frames, spectral sums and collapsed clusters)", fontsize=11)
    return fig


def main(argv=None) -> int:
    """Command line: run both betas, save the PNG, print the located merges."""
    args = figure_command(__doc__, __file__, argv)
    n, T, frames = (200, 1e3, 40) if args.quick else (1000, 1e4, 100)
    runs = []
    for beta in (4.0, 9.0):
        traj = run(n, beta, T, frames, args.seed)
        runs.append((traj, analyze(traj)))
        late = [f"{m.time:.4g}" for m in traj.merge_events if m.after < 6]
        print(f"beta = {beta:g}: {len(traj.merge_events)} merges located; last ones at t = "
              + ", ".join(late))
    args.save(make_figure(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
