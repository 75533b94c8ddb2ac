"""Clusters first formed against beta from near-uniform starts (issue 27, figure 6).

For each beta an ensemble of ``batch`` systems of ``n`` tokens drawn i.i.d.
uniformly on the circle (a near-uniform start) follows SA attention
(:func:`particles.simulate` with ``batch=``, dopri5, log-spaced save times);
:func:`particles.analysis.analyze` reads each system's staircase and its
``timescales[s].clusters_formed``, the count on the first long-lived plateau
(seen unchanged over a decade of time).  Dots: the systems; bars: the
ensemble median and quartiles.  Theory (dashed step): the linear stability
of the uniform density, whose fastest-growing Fourier mode
``argmax_k k^2 I_k(beta)`` (:func:`particles.meanfield.fastest_mode`, SA)
sets about how many clusters form first.  Systems with no long-lived plateau
within the run (``clusters_formed == 0``) are left out and counted in the
legend.

Usage::

    python figures/formation.py [--quick] [--out figures/formation.png]
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib.figure import Figure

from particles import simulate
from particles.analysis import analyze
from particles.gallery import figure_command
from particles.meanfield import fastest_mode

RTOL = 1e-6


def formed(n: int, beta: float, T: float, batch: int, seed: int) -> np.ndarray:
    """``clusters_formed`` of each system of one ensemble (0: none formed)."""
    traj = simulate(n, 2, beta, integrator="dopri5", rtol=RTOL, T=T, summation="auto",
                    save_times=f"log:0.01:{T:g}:40", batch=batch, seed=seed)
    return np.array([t.clusters_formed for t in analyze(traj).timescales])


def make_figure(betas, counts, n: int, T: float, seed: int) -> Figure:
    """Systems, median and quartiles against beta, and the fastest mode."""
    fig = Figure(figsize=(8.0, 5.4), layout="constrained")
    ax = fig.subplots()
    rng = np.random.default_rng(0)  # jitter only
    med, lo, hi, missing = [], [], [], 0
    for beta, c in zip(betas, counts, strict=True):
        ok = c[c > 0]
        missing += int(c.size - ok.size)
        ax.plot(beta * np.exp(rng.uniform(-0.04, 0.04, ok.size)),
                ok + rng.uniform(-0.12, 0.12, ok.size), ".", color="tab:blue", alpha=0.3,
                markersize=5, label="one system (jittered)" if beta == betas[0] else None)
        q = np.quantile(ok, [0.25, 0.5, 0.75], method="inverted_cdf") if ok.size else [np.nan] * 3
        lo.append(q[0])
        med.append(q[1])
        hi.append(q[2])
    med, lo, hi = map(np.array, (med, lo, hi))
    ax.errorbar(betas, med, yerr=[med - lo, hi - med], fmt="o", color="tab:red",
                markersize=7, capsize=4, linewidth=1.6,
                label=f"ensemble median and quartiles ({counts[0].size} systems per β)")
    fine = np.geomspace(min(betas) * 0.9, max(betas) * 1.1, 400)
    ax.plot(fine, [fastest_mode(b, "sa") for b in fine], "--", color="k", linewidth=1.4,
            drawstyle="steps-post", label=r"theory: fastest mode argmax$_k\, k^2 I_k(\beta)$")
    if missing:
        ax.plot([], [], " ", label=f"{missing} system{'s' * (missing > 1)} with no long-lived "
                "plateau by T (left out)")
    ax.set_xscale("log")
    ax.set_xticks(betas, [f"{b:g}" for b in betas])
    ax.minorticks_off()
    ax.set_xlabel("inverse temperature β (log)")
    ax.set_ylabel("clusters first formed (first plateau of a decade)")
    ax.set_ylim(0, max(np.max(hi[np.isfinite(hi)]), fastest_mode(max(betas), "sa")) + 1.5)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8.5, loc="upper left")
    ax.set_title(f"Clusters formed from a uniform start on the circle: n = {n}, d = 2, SA,\n"
                 f"dopri5 rtol {RTOL:g} to T = {T:g}, seed {seed} (ensemble seeds from it)",
                 fontsize=10.5)
    return fig


def main(argv=None) -> int:
    """Command line: one ensemble per beta, save the PNG, print the medians."""
    args = figure_command(__doc__, __file__, argv)
    if args.quick:
        n, batch, T, betas = 64, 4, 300.0, [1.0, 4.0, 9.0]
    else:
        n, batch, T, betas = 256, 12, 2000.0, [1.0, 2.0, 4.0, 6.0, 9.0, 12.0, 16.0, 25.0]
    counts = []
    for beta in betas:
        c = formed(n, beta, T, batch, args.seed)
        counts.append(c)
        print(f"beta = {beta:g}: clusters formed {sorted(c.tolist())}, fastest mode "
              f"{fastest_mode(beta, 'sa')}")
    args.save(make_figure(betas, counts, n, T, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
