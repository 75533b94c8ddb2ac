"""Metastability on the circle: fast formation, exponentially slow merges (issue 27, fig. 4).

``n`` tokens drawn i.i.d. uniformly on the circle (a near-uniform start)
follow SA attention (:func:`particles.simulate`, dopri5 with log-spaced save
times, the spectral sums ``summation="auto"`` and collapsed clusters, the
long-run fast paths).  Top: the cluster count (eps = 0.05 rad) against log
time.  Middle: the Fourier moduli ``|c_k|`` of the tokens' empirical measure
(:func:`particles.analysis.fourier_coefficients`); the mode that grows
fastest from the uniform density is ``argmax_k k^2 I_k(beta)``
(:func:`particles.meanfield.fastest_mode`, dotted in the top panel, bold in
the middle one), and the *dominant linear mode* measured is the analysis'
mode column (``fourier_mode``, ``argmax_k |c_k|``) at the first frame where
its ``|c_k|`` reaches :data:`MODE_LEVEL` (diamond, both panels).  Its clusters
form at t ~ 5-10; some merge within the first decade (fast, nonlinear), so
the first long plateau holds that mode minus those merges; then pairs merge
one at a time after plateaus that lengthen like ``exp(c beta)``.  Bottom: the
normalised energy ``2 beta e^{-beta} E_beta``.  ``merge_events=True``
locates each drop of the count by bisection
(:attr:`particles.Trajectory.merge_events`), drawn as the red staircase and
ticks.

Usage::

    python figures/metastability.py [--quick] [--out figures/metastability.png]
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib.figure import Figure

from particles import Trajectory, simulate
from particles.analysis import AnalysisResult, analyze, fourier_coefficients
from particles.gallery import figure_command
from particles.meanfield import fastest_mode
from particles.plotting import plot_cluster_count, plot_energy

RTOL = 1e-8
#: |c_k| at which the dominant linear mode is read (far above the 1/sqrt(n) noise).
MODE_LEVEL = 0.4
#: Fourier modes drawn in the middle panel.
MODES = 6


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


def linear_mode(a: AnalysisResult) -> tuple[int, int]:
    """The mode column at the first frame with ``|c_k| >= MODE_LEVEL``, and that frame
    ((0, -1): never reached)."""
    f = np.flatnonzero(a.fourier_modulus >= MODE_LEVEL)
    return (int(a.fourier_mode[f[0]]), int(f[0])) if f.size else (0, -1)


def fourier_panel(ax, traj: Trajectory, a: AnalysisResult, k_theory: int) -> None:
    """``|c_k|(t)`` for k = 1 .. MODES, the fastest mode bold, the linear mode marked."""
    c = np.abs(fourier_coefficients(np.asarray(traj.positions), MODES))
    t = a.times
    ok = t > 0
    for k in range(1, c.shape[1] + 1):
        bold = k == k_theory
        ax.plot(t[ok], c[ok, k - 1], color="k" if bold else f"C{k % 10}",
                linewidth=2.2 if bold else 1.0, label=f"k = {k}" + (" (theory)" * bold))
    k, f = linear_mode(a)
    if k:
        ax.plot([t[f]], [a.fourier_modulus[f]], "D", color="tab:green", markersize=8, zorder=5,
                label=f"dominant: k = {k}")
    ax.axhline(MODE_LEVEL, color="0.5", linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(r"Fourier modulus $|c_k|$")
    ax.legend(loc="upper left", fontsize=8, ncol=2)


def column(axes, traj: Trajectory, a: AnalysisResult) -> None:
    """Cluster count (top), Fourier moduli (middle), normalised energy (bottom) of one run."""
    ax_c, ax_f, ax_e = axes
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
    k_lin, f = linear_mode(a)
    if k_lin:
        ax_c.plot([a.times[f]], [k_lin], "D", color="tab:green", markersize=8, zorder=5,
                  label=rf"dominant linear mode {k_lin} (argmax$_k |c_k|$ at "
                  f"{MODE_LEVEL:g}, t = {a.times[f]:.3g})")
    fourier_panel(ax_f, traj, a, k)
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
    fig = Figure(figsize=(6.0 * len(runs), 10.0), layout="constrained")
    axes = fig.subplots(3, len(runs), squeeze=False, sharex="col",
                        height_ratios=[1.2, 0.9, 0.9])
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
        a = runs[-1][1]
        late = [f"{m.time:.4g} ({m.before} -> {m.after})" for m in traj.merge_events
                if m.after < 6]
        k_lin, f = linear_mode(a)
        ts = a.timescales[0]
        print(f"beta = {beta:g}: fastest mode {fastest_mode(beta, 'sa')}, dominant linear mode "
              f"{k_lin} at t = {a.times[f]:.3g}; first long plateau {ts.clusters_formed} clusters "
              f"from t = {ts.formation_time:.4g}; {len(traj.merge_events)} merges located, "
              "the last ones at t = " + ", ".join(late))
    args.save(make_figure(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
