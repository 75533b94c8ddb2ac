"""Clusters first formed against beta from near-uniform starts (issue 27, figure 6).

For each beta an ensemble of ``batch`` systems of ``n`` tokens drawn i.i.d.
uniformly on the circle (a near-uniform start) follows SA attention
(:func:`particles.simulate` with ``batch=``, dopri5, log-spaced save times);
:func:`particles.analysis.analyze` reads two numbers per system:

* the *dominant linear mode*: the analysis' mode column
  (``fourier_mode``, ``k* = argmax_k |c_k|`` of the empirical measure) at the
  first frame where its ``|c_k*|`` reaches :data:`MODE_LEVEL` (0.4: about
  three times the largest ``|c_k|`` of a uniform start of 256 tokens, and
  well below the 1 of formed clusters), the mode that grew out of the
  uniform state;
* ``timescales[s].clusters_formed``, the count on the first long-lived
  plateau (seen unchanged over a decade of time).

Theory (dashed step): the linear stability of the uniform density, whose
fastest-growing Fourier mode ``argmax_k k^2 I_k(beta)``
(:func:`particles.meanfield.fastest_mode`, SA) is the mode that should grow
first.  The mode's clusters then merge, some within the first decade (fast
nonlinear merges), so the first long plateau holds the mode minus those
merges; the figure gives the mean of ``mode - clusters_formed`` per beta (the
fast merges per system).  Systems with no long-lived plateau within the run
(``clusters_formed == 0``) are left out and counted in the legend.

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
from particles.meanfield import fastest_mode, growth_rate

RTOL = 1e-6
#: |c_k*| at which a system's dominant Fourier mode is read (see the docstring).
MODE_LEVEL = 0.4


def measure(n: int, beta: float, T: float, batch: int, seed: int) -> tuple[np.ndarray, ...]:
    """Per system: the dominant linear mode (0: |c_k| never reached MODE_LEVEL) and
    ``clusters_formed`` (0: none formed), int arrays of shape (batch,)."""
    traj = simulate(n, 2, beta, integrator="dopri5", rtol=RTOL, T=T, summation="auto",
                    save_times=f"log:0.01:{T:g}:60", batch=batch, seed=seed)
    a = analyze(traj)
    reached = a.fourier_modulus >= MODE_LEVEL  # (frames, batch)
    first = reached.argmax(axis=0)
    mode = np.where(reached.any(axis=0), a.fourier_mode[first, np.arange(batch)], 0)
    return mode.astype(int), np.array([t.clusters_formed for t in a.timescales])


def quartiles(values: np.ndarray) -> np.ndarray:
    """25, 50 and 75 % of the positive values (values the ensemble takes; NaN: none)."""
    ok = values[values > 0]
    return (np.quantile(ok, [0.25, 0.5, 0.75], method="inverted_cdf") if ok.size
            else np.full(3, np.nan))


def fast_merges(mode: np.ndarray, formed: np.ndarray) -> np.ndarray:
    """``mode - clusters_formed`` of the systems that have both (int, shape (m,))."""
    both = (mode > 0) & (formed > 0)
    return mode[both] - formed[both]


def series(ax, betas, values, shift: float, color: str, marker: str, label: str) -> np.ndarray:
    """Jittered systems and the median with quartile bars, shifted by ``shift`` in log beta."""
    rng = np.random.default_rng(0)  # jitter only
    q = np.array([quartiles(v) for v in values])  # (betas, 3)
    for beta, v in zip(betas, values, strict=True):
        ok = v[v > 0]
        ax.plot(beta * np.exp(shift + rng.uniform(-0.025, 0.025, ok.size)),
                ok + rng.uniform(-0.12, 0.12, ok.size), marker, color=color, alpha=0.3,
                markersize=4)
    x = np.asarray(betas) * np.exp(shift)
    ax.errorbar(x, q[:, 1], yerr=[q[:, 1] - q[:, 0], q[:, 2] - q[:, 1]], fmt=marker,
                color=color, markersize=7, capsize=4, linewidth=1.6, label=label)
    return q


def make_figure(betas, modes, counts, n: int, T: float, seed: int) -> Figure:
    """The dominant linear mode and the clusters first formed against beta."""
    fig = Figure(figsize=(8.4, 5.6), layout="constrained")
    ax = fig.subplots()
    per = counts[0].size
    qm = series(ax, betas, modes, -0.05, "tab:green", "D",
                rf"dominant linear mode argmax$_k |c_k|$ at $|c_k| \geq$ {MODE_LEVEL:g} "
                f"(median, quartiles; {per} systems per β)")
    qc = series(ax, betas, counts, 0.05, "tab:red", "o",
                "clusters first formed: first plateau lasting a decade")
    fine = np.geomspace(min(betas) * 0.9, max(betas) * 1.1, 400)
    ax.plot(fine, [fastest_mode(b, "sa") for b in fine], "--", color="k", linewidth=1.4,
            drawstyle="steps-post", label=r"theory: fastest mode argmax$_k\, k^2 I_k(\beta)$")
    for beta, m, c in zip(betas, modes, counts, strict=True):
        fast = fast_merges(m, c)
        if fast.size:
            ax.annotate(f"{fast.mean():.2f}", (beta, 0.35), ha="center", fontsize=9,
                        color="0.3")
    ax.plot([], [], " ", label="grey numbers: fast merges per system, mean of mode \u2212 "
            "first plateau")
    missing = sum(int(np.sum(c == 0)) for c in counts)
    if missing:
        ax.plot([], [], " ", label=f"{missing} system{'s' * (missing > 1)} with no long-lived "
                "plateau by T (left out)")
    ax.set_xscale("log")
    ax.set_xticks(betas, [f"{b:g}" for b in betas])
    ax.minorticks_off()
    ax.set_xlabel("inverse temperature β (log)")
    ax.set_ylabel("mode k, or clusters")
    top = np.nanmax(np.concatenate([qm[:, 2], qc[:, 2]]))
    ax.set_ylim(0, max(top, fastest_mode(max(betas), "sa")) + 2.5)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8.5, loc="upper left")
    ax.set_title(f"Linear mode and clusters formed from a uniform start on the circle: n = {n}, "
                 f"d = 2, SA,\ndopri5 rtol {RTOL:g} to T = {T:g}, seed {seed} (ensemble seeds "
                 "from it)", fontsize=10.5)
    return fig


def main(argv=None) -> int:
    """Command line: one ensemble per beta, save the PNG, print the medians."""
    args = figure_command(__doc__, __file__, argv)
    if args.quick:
        n, batch, T, betas = 64, 4, 300.0, [1.0, 4.0, 9.0]
    else:
        n, batch, T, betas = 256, 12, 2000.0, [1.0, 2.0, 4.0, 6.0, 9.0, 12.0, 16.0, 25.0]
    modes, counts = [], []
    for beta in betas:
        m, c = measure(n, beta, T, batch, args.seed)
        modes.append(m)
        counts.append(c)
        fast = fast_merges(m, c)
        k, k_med = fastest_mode(beta, "sa"), int(quartiles(m)[1])
        rate = growth_rate(k_med, beta, "sa") / growth_rate(k, beta, "sa")
        print(f"beta = {beta:g}: fastest mode {k}; linear mode "
              f"{sorted(m.tolist())} (median {k_med}, its growth rate {rate:.3f} of the "
              f"fastest); clusters formed "
              f"{sorted(c.tolist())} (median {quartiles(c)[1]:g}); mode - formed "
              f"{sorted(fast.tolist())} (mean {fast.mean():.2f})")
    args.save(make_figure(betas, modes, counts, n, T, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
