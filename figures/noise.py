"""Noise: the diffusion threshold of the uniform state on the circle (figure 10).

Noisy USA tokens on the circle, ``d theta_i = f_i dt + sigma dW_i``, have the mean
field ``d_t rho + d_theta(rho v) = D d_theta^2 rho``, ``D = sigma^2 / 2``, whose
uniform state is linearly stable above ``D_c = I_1(beta) / beta``: ``sigma >
sigma_c = sqrt(2 D_c)`` (:func:`particles.meanfield.linear.critical_noise`).  Left:
the steady order parameter ``r = |mean x_i|`` against ``sigma / sigma_c``: particles
(:func:`particles.simulate`, uniform starts, Heun, spectral sums; median and
quartiles over systems and late frames) for two n, and the PDE
(:func:`particles.meanfield.solve` from one cluster until relaxed,
``DensityResult.order_parameter``), against the threshold and the finite-n
incoherent level (:func:`particles.meanfield.linear.incoherent_order`).  Right: the
linear growth rate of mode 1 against the PDE's early ``log |z_1|(t)`` slope.

Usage::

    python figures/noise.py [--quick] [--out figures/noise.png] [--seed N]
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from particles import simulate
from particles.analysis import first_crossing
from particles.gallery import figure_command
from particles.meanfield import MeanFieldConfig, solve
from particles.meanfield.linear import critical_noise, growth_rate, incoherent_order

BETA, MODEL = 2.0, "usa"
SIGMA_C = critical_noise(BETA, MODEL)


def rate(q, k: int = 1) -> np.ndarray:
    """lambda_k at sigma = q sigma_c (linear theory), the shape of q."""
    return growth_rate(k, BETA, MODEL, D=(np.asarray(q) * SIGMA_C) ** 2 / 2)


def particle_levels(qs, n, systems, Ts, dt, window, seed) -> list:
    """r of ``systems`` uniform starts of n tokens per q (run to ``Ts[i]``) over the
    frames of the last ``window`` time units: one array (frames * systems,) per q."""
    runs = (simulate(n, 2, BETA, model=MODEL, noise=q * SIGMA_C, dt=dt, T=T,
                     save_times=np.arange(1.0, T + 0.5), batch=systems, seed=seed + i,
                     summation="auto", observables=("order",), positions="none")
            for i, (q, T) in enumerate(zip(qs, Ts, strict=True)))
    return [tr.observables["order_parameter"][tr.times >= tr.times[-1] - window].ravel()
            for tr in runs]


def pde_levels(qs, modes: int):
    """The PDE's steady r (from one cluster, run to T = 20 + 4 / lambda_1 below the
    threshold, 20 + 12 / |lambda_1| above) and its mode-1 rate (log-slope of |z_1|
    over t <= 10 from eps = 1e-3), shape (Q,) each."""
    steady, slopes = [], []
    for q in qs:
        common = dict(model=MODEL, beta=BETA, D=(q * SIGMA_C) ** 2 / 2, modes=modes, rtol=1e-6)
        lam = float(rate(q))
        T = float(min(400.0, 20.0 + (4.0 if lam > 0 else 12.0) / max(abs(lam), 1e-2)))
        res = solve(MeanFieldConfig(T=T, init="vonmises:kappa=10", **common))
        steady.append(res.order_parameter.r[-1])
        res = solve(MeanFieldConfig(T=10.0, save_every=0.25, init="modes:k=1,eps=1e-3", **common))
        keep = res.order_parameter.r < 10 * res.order_parameter.r[0]  # the linear regime
        slopes.append(np.polyfit(res.times[keep], np.log(res.order_parameter.r[keep]), 1)[0])
    return np.array(steady), np.array(slopes)


def make_figure(qs, ns, levels, pq, pde_r, pde_rate, title) -> Figure:
    """Left: r against sigma / sigma_c; right: lambda_1 against sigma / sigma_c."""
    fig = Figure(figsize=(13, 5), layout="constrained")
    ax, ax_l = fig.subplots(1, 2, width_ratios=(1.6, 1.0))
    colours = colormaps["viridis"]([0.15, 0.6])
    fine = np.linspace(min(qs[0], pq[0]), max(qs[-1], pq[-1]), 400)
    for n, lev, c in zip(ns, levels, colours, strict=True):
        lo, med, hi = np.array([np.quantile(x, [0.25, 0.5, 0.75]) for x in lev]).T
        ax.fill_between(qs, lo, hi, color=c, alpha=0.25, lw=0)
        ax.plot(qs, med, "o-", color=c, ms=4, label=f"particles, n = {n:,}: median, quartiles")
        ax.axhline(np.sqrt(np.pi / (4 * n)), color=c, ls=":", lw=1.2,
                   label=rf"independent angles: $\sqrt{{\pi / 4n}}$ = "
                         f"{np.sqrt(np.pi / (4 * n)):.3f}")
        above = fine[fine > 1.02]
        ax.plot(above, incoherent_order(n, BETA, MODEL, D=(above * SIGMA_C) ** 2 / 2), "-.",
                color="k", lw=1.0, label=r"linear theory: $E\,r$ of the incoherent state"
                if n == ns[0] else None)
    ax.plot(pq, np.maximum(pde_r, 1e-3), "s-", color="C3", ms=4, mfc="none",
            label=r"mean-field PDE, $D = \sigma^2/2$ (steady; floor 1e-3)")
    ax.axvline(1.0, color="k", ls="--", lw=1.4, label=r"linear threshold $\sigma = \sigma_c$")
    ax.set_yscale("log")
    ax.set(xlabel=r"noise $\sigma / \sigma_c$", ylim=(8e-4, 1.5),
           ylabel=r"steady order parameter $r = |\langle x_i \rangle|$ (log)",
           title="order parameter against noise")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    ax_l.axhline(0.0, color="0.5", lw=0.8)
    ax_l.plot(fine, rate(fine), "--", color="k", lw=1.6,
              label=r"linear theory $\lambda_1 = D_c - \sigma^2/2$")
    ax_l.plot(fine, rate(fine, 2), ":", color="0.4", label=r"linear theory $\lambda_2$ (mode 2)")
    ax_l.plot(pq, pde_rate, "s", color="C3", ms=5, mfc="none",
              label=r"PDE: log-slope of $|z_1|(t)$ from $\epsilon = 10^{-3}$")
    ax_l.axvline(1.0, color="k", ls="--", lw=0.8)
    ax_l.set(xlabel=r"noise $\sigma / \sigma_c$", ylabel="growth rate (1 / time)",
             title="growth rates of the uniform state")
    ax_l.set_ylim(bottom=max(ax_l.get_ylim()[0], -1.5))
    ax_l.grid(True, alpha=0.3)
    ax_l.legend(fontsize=8, loc="lower left")
    fig.suptitle(title, fontsize=11)
    return fig


def main(argv=None) -> int:
    """Command line: run the particles and the PDE, save the PNG, print the thresholds."""
    args = figure_command(__doc__, __file__, argv)
    if args.quick:
        qs = pq = np.array([0.4, 0.8, 1.2, 1.6])
        ns, systems, T, dt, window, modes = (64, 256), (4, 1), 12.0, 0.02, 6.0, 128
    else:
        qs = np.array([0.2, 0.4, 0.6, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.3, 1.6])
        pq = np.round(np.r_[np.arange(0.3, 0.85, 0.1), np.arange(0.85, 1.11, 0.025),
                            np.arange(1.2, 1.65, 0.2)], 4)
        ns, systems, T, dt, window, modes = (256, 2048), (8, 2), 40.0, 0.01, 15.0, 128
    Ts = np.where(qs > 1.06, 0.75 * T, T)  # the incoherent state relaxes at 2 |lambda_1|
    levels = [particle_levels(qs, n, s, Ts, dt, window, args.seed) for n, s in
              zip(ns, systems, strict=True)]
    pde_r, pde_rate = pde_levels(pq, modes)
    for n, lev in zip(ns, levels, strict=True):
        med = np.array([np.median(x) for x in lev])
        near = (qs > 1) & (med < 1.5 * incoherent_order(n, BETA, MODEL, D=(qs * SIGMA_C) ** 2 / 2))
        below = first_crossing(qs, med, 0.25, rising=False)
        print(f"n = {n}: median r at sigma/sigma_c = " + ", ".join(
            f"{q:g}: {m:.3g}" for q, m in zip(qs, med, strict=True) if q in qs[[0, -1]]
            or 0.9 <= q <= 1.1) + f"; r < 0.25 from {below:.3f}; "
            f"at most 1.5x the incoherent theory from {qs[near][0] if near.any() else np.nan:g}")
    below = [first_crossing(pq, pde_r, level, rising=False) for level in (0.25, 1e-3)]
    print("PDE: r at sigma/sigma_c = " + ", ".join(
        f"{q:g}: {r:.3g}" for q, r in zip(pq, pde_r, strict=True) if q in pq[[0, -1]]
        or 0.95 <= q <= 1.05) + f"; r < 0.25 from {below[0]:.3f}, r < 1e-3 from "
        f"{below[1]:.3f}; mode-1 rate error {np.max(np.abs(pde_rate - rate(pq))):.1e}")
    title = (f"Noise: the diffusion threshold on the circle, {MODEL.upper()}, d = 2, β = {BETA:g}, "
             rf"$\sigma_c = \sqrt{{2 I_1(\beta)/\beta}}$ = {SIGMA_C:.3f}, seed {args.seed}" "\n"
             f"particles: n = {', '.join(map(str, ns))} ({', '.join(map(str, systems))} uniform "
             f"starts per \u03c3), Heun dt = {dt:g}, r over t in [T - {window:g}, T], T = {T:g} "
             f"({0.75 * T:g} above 1.06 \u03c3_c); PDE: M = {modes}")
    args.save(make_figure(qs, ns, levels, pq, pde_r, pde_rate, title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
