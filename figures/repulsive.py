"""The repulsive flow V = -I against the optimal configurations (issue 27, figure 11).

Ensembles of ``n`` tokens drawn uniformly on S^{d-1} follow SA attention with
the value matrix ``V = -I`` (:func:`particles.simulate` with
``V="minus_identity"``, ``batch=``, dopri5, log-spaced save times), the
gradient descent of the energy ``E_beta = 1/(2 beta n^2) sum_ij exp(beta
<x_i, x_j>)`` (DESIGN.md sections 1 and 2).  Its minimisers are universally
optimal configurations (Cohn and Kumar 2007;
:func:`particles.analysis.repulsive_optimum`): for ``n = d + 1`` the regular
simplex, every pair at ``<x_i, x_j> = -1/d``, and for ``n = 2 d`` the
cross-polytope, pairs at ``-1`` (antipodes) and ``0``.  Left: the relative
energy gap ``E(t) / E* - 1`` against log time, every system; right: every
system's final pair inner products, sorted, against the optimum's (dashed
black).  The title prints the largest final deviation from the optimum.

Usage::

    python figures/repulsive.py [--quick] [--out figures/repulsive.png]
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from particles import simulate
from particles.analysis import repulsive_optimum
from particles.gallery import figure_command

RTOL = 1e-8
FLOOR = 1e-16  # relative energy gaps below this are rounding


def run(n: int, d: int, beta: float, T: float, batch: int, seed: int):
    """Times, energies (frames, batch) and final sorted pair inner products (batch, pairs)."""
    traj = simulate(n, d, beta, V="minus_identity", integrator="dopri5", rtol=RTOL, T=T,
                    save_times=f"log:0.01:{T:g}:50", batch=batch, seed=seed)
    x = traj.positions[-1]
    i, j = np.triu_indices(n, 1)
    inner = np.sort(np.einsum("bpk,bpk->bp", x[:, i], x[:, j]), axis=1)
    energy = np.asarray(traj.observables["energy"]).reshape(len(traj.times), batch)
    return traj.times, energy, inner


def make_figure(results, beta: float, T: float, batch: int, seed: int) -> tuple[Figure, float]:
    """Energy gap against log time (left), sorted final inner products (right)."""
    fig = Figure(figsize=(14.0, 6.0), layout="constrained")
    ax_e, ax_p = fig.subplots(1, 2)
    cmap = colormaps["viridis"]
    worst, ticks = 0.0, []
    rng = np.random.default_rng(0)  # jitter only
    for k, ((n, d), (times, energy, inner)) in enumerate(results.items()):
        color = cmap(0.85 * k / max(len(results) - 1, 1))
        opt = repulsive_optimum(n, d)
        gap = np.maximum(energy / opt.energy(beta) - 1.0, FLOOR)
        dev = float(np.abs(inner - opt.inner_products).max())
        worst = max(worst, dev)
        label = (f"n = {n}, d = {d}: {opt.name}, E* = {opt.energy(beta):.4g}, "
                 f"final gap {gap[-1].max():.0e}")
        for b in range(batch):
            ax_e.plot(times[1:], gap[1:, b], color=color, lw=1.2, alpha=0.8,
                      label=label if b == 0 else None)
        x = k + rng.uniform(-0.3, 0.3, inner.size)
        ax_p.plot(x, inner.ravel(), "o", color=color, ms=3, alpha=0.4)
        values, counts = np.unique(opt.inner_products, return_counts=True)
        for v, c in zip(values, counts, strict=True):
            ax_p.hlines(v, k - 0.42, k + 0.42, colors="k", linestyles="--", lw=1.4,
                        label="optimum (simplex -1/d; cross-polytope -1 and 0)"
                        if k == 0 else None)
            ax_p.annotate(f"{c} x {v:.3g}", (k, v), xytext=(0, 7 if v > -0.5 else -12),
                          textcoords="offset points", ha="center", fontsize=8)
        ticks.append(f"n={n}\nd={d}\n{opt.name.split()[-1]}")
    ax_e.set_xscale("log")
    ax_e.set_yscale("log")
    ax_e.set_ylim(FLOOR / 3, None)
    ax_e.set_xlabel("time t (log)")
    ax_e.set_ylabel("relative energy gap E(t) / E* - 1 (log)")
    ax_e.axhline(FLOOR, color="0.5", lw=0.8, ls=":")
    ax_e.legend(fontsize=8, loc="lower left")
    ax_p.set_xticks(range(len(ticks)), ticks, fontsize=8.5)
    ax_p.set_xlabel("every pair i < j of every system (jittered), per (n, d); labels: "
                    "count x value of the optimum")
    ax_p.set_ylabel("final inner product ⟨x_i, x_j⟩")
    ax_p.set_ylim(-1.08, 0.12)
    ax_p.legend(fontsize=8, loc="center left")
    for ax in (ax_e, ax_p):
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"Repulsive flow V = -I reaches the optimal configurations: SA, edp kernel, "
                 f"β = {beta:g}, {batch} uniform starts per (n, d), dopri5 rtol {RTOL:g} to "
                 f"T = {T:g}, seed {seed}\nlargest final |⟨x_i, x_j⟩ - optimum| over every "
                 f"pair and system: {worst:.1e}", fontsize=10.5)
    return fig, worst


def main(argv=None) -> int:
    """Command line: one ensemble per (n, d), save the PNG, print the gaps."""
    args = figure_command(__doc__, __file__, argv)
    beta = 4.0
    if args.quick:
        sizes, T, batch = [(4, 3), (6, 3), (9, 8), (16, 8)], 1000.0, 2
    else:
        sizes = [(4, 3), (6, 3), (9, 8), (16, 8), (33, 32), (64, 32), (65, 64), (128, 64)]
        T, batch = 1e4, 8
    results = {}
    for n, d in sizes:
        results[n, d] = run(n, d, beta, T, batch, args.seed)
        energy, inner = results[n, d][1:]
        opt = repulsive_optimum(n, d)
        print(f"n = {n}, d = {d} ({opt.name}): E* = {opt.energy(beta):.10g}, final E "
              f"{energy[-1].min():.10g}..{energy[-1].max():.10g}, max |inner - optimum| "
              f"{np.abs(inner - opt.inner_products).max():.2e}")
    fig, worst = make_figure(results, beta, T, batch, args.seed)
    print(f"largest deviation {worst:.2e}")
    args.save(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
