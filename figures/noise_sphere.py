"""Noise on S^2: the diffusion threshold of the uniform state against noisy particles.

The circle's is figure 10 (``figures/noise.py``), drawn the same way here.
Noisy USA tokens on S^2, ``dx_i = f_i dt + sigma P_{x_i} dW_i``, have the mean field
``d_t f + div(f v) = D Laplace f``, ``D = sigma^2 / 2``, whose uniform state is
linearly stable above ``D_c = mu_1 / beta`` (the ``l = 1`` Funk-Hecke drift,
:func:`particles.meanfield.critical_diffusion_sphere`): ``sigma > sigma_c =
sqrt(2 D_c)``.  Left: the steady order parameter ``r = |mean x_i|`` against
``sigma / sigma_c``: particles (:func:`particles.simulate`, uniform starts, Heun,
spectral sums; median and quartiles over systems and late frames) for two n, and the
PDE from one cap until relaxed (a cap at the pole stays zonal: the axisymmetric
solver in d = 3, :func:`particles.meanfield.solve_sphere_frames`), against the
threshold and the incoherent level of linear theory (``r`` of a 3-D Gaussian of
variance ``D / (3 n (D - D_c))`` per axis: ``E r = sqrt(8 D / (3 pi n (D - D_c)))``).
Right: the growth rates ``2 (D_c - D)`` of ``l = 1`` and ``6 (mu_2 / beta - D)`` of
``l = 2`` against the PDE's early ``log r(t)`` slope.

Usage::

    python figures/noise_sphere.py [--quick] [--out figures/noise_sphere.png] [--seed N]
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from particles import simulate
from particles.analysis import first_crossing
from particles.gallery import figure_command
from particles.meanfield import (
    SphereFieldConfig,
    critical_diffusion_sphere,
    growth_rate_sphere,
    solve_sphere_frames,
)
from particles.meanfield.sphere_solver import make_space

BETA, MODEL = 2.0, "usa"
D_C = critical_diffusion_sphere(3, BETA, MODEL)
SIGMA_C = float(np.sqrt(2 * D_C))


def rate(q, ell: int = 1) -> np.ndarray:
    """The growth rate of degree ``ell`` at sigma = q sigma_c (linear theory), shape of q."""
    D = (np.asarray(q, dtype=float) * SIGMA_C) ** 2 / 2
    return np.vectorize(lambda x: float(growth_rate_sphere(ell, 3, BETA, MODEL, D=x)))(D)


def incoherent(n: int, q: np.ndarray) -> np.ndarray:
    """``E r`` of n tokens in the incoherent state above the threshold (linear theory)."""
    D = (q * SIGMA_C) ** 2 / 2
    return np.sqrt(8 * D / (3 * np.pi * n * (D - D_C)))


def particle_levels(qs, n, systems, Ts, dt, window, seed) -> list:
    """r of ``systems`` uniform starts of n tokens per q (run to ``Ts[i]``) over the
    frames of the last ``window`` time units: one array (frames * systems,) per q."""
    out = []
    for i, (q, T) in enumerate(zip(qs, Ts, strict=True)):
        tr = simulate(n, 3, BETA, model=MODEL, noise=q * SIGMA_C, dt=dt, T=T,
                      save_times=np.arange(1.0, T + 0.5), batch=systems, seed=seed + i,
                      summation="auto", observables=("order",), positions="none")
        out.append(tr.observables["order_parameter"][tr.times >= tr.times[-1] - window].ravel())
        print(f"n = {n}, sigma/sigma_c = {q:g}: done", file=sys.stderr)
    return out


def pde_order(config: SphereFieldConfig) -> tuple[np.ndarray, np.ndarray]:
    """Times and ``r(t) = |int x f dsigma|`` of a zonal solve: ``E_sigma[t f] = a_1 /
    sqrt(3)`` for the orthonormal ``q_1 = sqrt(3) t``."""
    space = make_space(config)
    frames = list(solve_sphere_frames(config, space=space))
    r = np.array([abs(space.analyse(f.rho)[1]) / np.sqrt(3.0) for f in frames])
    return np.array([f.time for f in frames]), r


def pde_levels(qs, lmax: int) -> tuple[np.ndarray, np.ndarray]:
    """The PDE's steady r (from a cap, run to T = 20 + 4 / lambda_1 below the
    threshold, 20 + 12 / |lambda_1| above, at most 400) and its l = 1 rate
    (log-slope of r over t <= 10 from eps = 1e-3), shape (Q,) each."""
    steady, slopes = [], []
    for q in qs:
        common = dict(d=3, axisymmetric=True, model=MODEL, beta=BETA, D=(q * SIGMA_C) ** 2 / 2,
                      lmax=lmax, rtol=1e-6)
        lam = float(rate(q))
        T = float(min(400.0, 20.0 + (4.0 if lam > 0 else 12.0) / max(abs(lam), 1e-2)))
        steady.append(pde_order(SphereFieldConfig(T=T, init="vonmises:kappa=10", **common))[1][-1])
        t, r = pde_order(SphereFieldConfig(T=10.0, save_every=0.25, init="modes:l=1,eps=1e-3",
                                           **common))
        keep = r < 10 * r[0]  # the linear regime
        slopes.append(np.polyfit(t[keep], np.log(r[keep]), 1)[0])
    return np.array(steady), np.array(slopes)


def make_figure(qs, ns, levels, pq, pde_r, pde_rate, title) -> Figure:
    """Left: r against sigma / sigma_c; right: the rates against sigma / sigma_c."""
    fig = Figure(figsize=(13, 5), layout="constrained")
    ax, ax_l = fig.subplots(1, 2, width_ratios=(1.6, 1.0))
    colours = colormaps["viridis"]([0.15, 0.6])
    fine = np.linspace(min(qs[0], pq[0]), max(qs[-1], pq[-1]), 400)
    above = fine[fine > 1.02]
    for n, lev, c in zip(ns, levels, colours, strict=True):
        lo, med, hi = np.array([np.quantile(x, [0.25, 0.5, 0.75]) for x in lev]).T
        ax.fill_between(qs, lo, hi, color=c, alpha=0.25, lw=0)
        ax.plot(qs, med, "o-", color=c, ms=4, label=f"particles, n = {n:,}: median, quartiles")
        level = np.sqrt(8 / (3 * np.pi * n))
        ax.axhline(level, color=c, ls=":", lw=1.2,
                   label=rf"independent tokens: $\sqrt{{8 / 3\pi n}}$ = {level:.3f}")
        ax.plot(above, incoherent(n, above), "-.", color="k", lw=1.0,
                label=r"linear theory: $E\,r$ of the incoherent state" if n == ns[0] else None)
    ax.plot(pq, np.maximum(pde_r, 1e-3), "s-", color="C3", ms=4, mfc="none",
            label=r"mean-field PDE, $D = \sigma^2/2$ (steady; floor 1e-3)")
    ax.axvline(1.0, color="k", ls="--", lw=1.4,
               label=rf"$D_c = \mu_1/\beta$ = {D_C:.4f}: $\sigma_c$ = {SIGMA_C:.3f}")
    ax.set_yscale("log")
    ax.set(xlabel=r"noise $\sigma / \sigma_c$", ylim=(8e-4, 1.5),
           ylabel=r"steady order parameter $r = |\langle x_i \rangle|$ (log)",
           title="order parameter against noise on S^2")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    ax_l.axhline(0.0, color="0.5", lw=0.8)
    ax_l.plot(fine, rate(fine), "--", color="k", lw=1.6,
              label=r"linear theory $\lambda_1 = 2 (D_c - \sigma^2/2)$")
    ax_l.plot(fine, rate(fine, 2), ":", color="0.4", label=r"linear theory $\lambda_2$ (l = 2)")
    ax_l.plot(pq, pde_rate, "s", color="C3", ms=5, mfc="none",
              label=r"PDE: log-slope of $r(t)$ from $\epsilon = 10^{-3}$")
    ax_l.axvline(1.0, color="k", ls="--", lw=0.8)
    ax_l.set(xlabel=r"noise $\sigma / \sigma_c$", ylabel="growth rate (1 / time)",
             title="growth rates of the uniform state")
    ax_l.set_ylim(bottom=max(ax_l.get_ylim()[0], -3.0))
    ax_l.grid(True, alpha=0.3)
    ax_l.legend(fontsize=8, loc="lower left")
    fig.suptitle(title, fontsize=11)
    return fig


def main(argv=None) -> int:
    """Command line: run the particles and the PDE, save the PNG, print the thresholds."""
    args = figure_command(__doc__, __file__, argv)
    if args.quick:
        qs = pq = np.array([0.6, 1.2, 1.6])
        ns, systems, T, dt, window, lmax = (64, 256), (2, 1), 8.0, 0.04, 4.0, 32
    else:
        qs = np.array([0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.4, 1.6])
        pq = np.round(np.r_[np.arange(0.3, 0.85, 0.1), np.arange(0.85, 1.11, 0.025),
                            np.arange(1.2, 1.65, 0.2)], 4)
        ns, systems, T, dt, window, lmax = (256, 2048), (8, 2), 30.0, 0.02, 12.0, 96
    Ts = np.where(qs > 1.06, 0.75 * T, T)  # the incoherent state relaxes at 2 |lambda_1|
    levels = [particle_levels(qs, n, s, Ts, dt, window, args.seed) for n, s in
              zip(ns, systems, strict=True)]
    pde_r, pde_rate = pde_levels(pq, lmax)
    for n, lev in zip(ns, levels, strict=True):
        med = np.array([np.median(x) for x in lev])
        below = first_crossing(qs, med, 0.25, rising=False)
        print(f"n = {n}: median r at sigma/sigma_c = " + ", ".join(
            f"{q:g}: {m:.3g}" for q, m in zip(qs, med, strict=True) if q in qs[[0, -1]]
            or 0.9 <= q <= 1.1) + f"; r < 0.25 from {below:.3f}")
    below = [first_crossing(pq, pde_r, level, rising=False) for level in (0.25, 1e-3)]
    print("PDE: r at sigma/sigma_c = " + ", ".join(
        f"{q:g}: {r:.3g}" for q, r in zip(pq, pde_r, strict=True) if q in pq[[0, -1]]
        or 0.95 <= q <= 1.05) + f"; r < 0.25 from {below[0]:.3f}, r < 1e-3 from "
        f"{below[1]:.3f}; l = 1 rate error {np.max(np.abs(pde_rate - rate(pq))):.1e}")
    title = (f"Noise: the diffusion threshold on S^2, {MODEL.upper()}, d = 3, β = {BETA:g}, "
             rf"$\sigma_c = \sqrt{{2 \mu_1/\beta}}$ = {SIGMA_C:.3f}, seed {args.seed}" "\n"
             f"particles: n = {', '.join(map(str, ns))} ({', '.join(map(str, systems))} uniform "
             f"starts per \u03c3), Heun dt = {dt:g}, r over t in [T - {window:g}, T], T = {T:g} "
             f"({0.75 * T:g} above 1.06 \u03c3_c); PDE: zonal (axisymmetric, d = 3), "
             f"lmax = {lmax}")
    args.save(make_figure(qs, ns, levels, pq, pde_r, pde_rate, title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
