"""Particles against the mean-field PDE on S^2: densities, and the degree-l power by degree.

The PDE (:func:`particles.meanfield.solve_sphere_frames`, SA at beta = 9, lmax = 64)
starts from the uniform density plus degrees 1..8 of amplitude eps = 0.1; ``n`` tokens
drawn i.i.d. from that start (exactly, by
:func:`particles.meanfield.sphere_tokens.sample_sphere_density`) follow the particle
dynamics (:func:`particles.simulate`, RK4, spectral sums).  Top: the density
(Mollweide) and the tokens' equal-area histogram on one colour scale at four times,
with their sliced W1 (:mod:`particles.meanfield.sliced`).  Bottom left: the normalised
degree-l power ``Q_l(t)`` (1 for one cluster, ``1/n`` for independent tokens) of the
PDE (:func:`particles.meanfield.sphere_tokens.density_power`) and of the tokens
(:func:`particles.analysis.harmonics.normalized_power`), with ``Q_l(0) exp(2 sigma_l
t)`` of the linear rates.  Bottom right: ``sigma_l`` of linear theory
(:func:`particles.meanfield.growth_rate_sphere`, Funk-Hecke) against half the
log-slope of ``Q_l`` over the linear phase for both, the fastest degree ``l*``
(:func:`particles.analysis.harmonics.fastest_degree`) marked.  The solve stops before
its clusters outgrow the grid (positivity raise: min density > 0 at every frame).

Usage::

    python figures/meanfield_sphere.py [--quick] [--out figures/meanfield_sphere.png] [--seed N]
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure

from particles import simulate
from particles.analysis.harmonics import fastest_degree, normalized_power
from particles.gallery import figure_command
from particles.meanfield import SphereFieldConfig, growth_rate_sphere, solve_sphere_frames
from particles.meanfield.sliced import sliced_w1_density
from particles.meanfield.sphere import SphereSpace
from particles.meanfield.sphere_tokens import density_power, sample_sphere_density
from particles.plotting.compare_sphere import token_histogram
from particles.plotting.density_sphere import grid_edges, mollweide_map

#: degrees drawn (l* = 4 at beta = 9 among them).
DEGREES = 8


@dataclass(frozen=True)
class SphereRun:
    """The PDE and the particles from one start: ``times`` (F,), the PDE's ``rho``
    (F, ntheta, nphi) and ``power`` (F, L + 1), the tokens ``x`` (F, n, 3) and their
    ``token_power`` (F, L + 1), the sliced W1 ``w1`` (F,)."""

    config: SphereFieldConfig
    space: SphereSpace
    times: np.ndarray
    rho: np.ndarray
    power: np.ndarray
    x: np.ndarray
    token_power: np.ndarray
    w1: np.ndarray


def experiment(n: int, lmax: int, T: float, *, beta: float = 9.0, eps: float = 0.1,
               dt: float = 0.05, save_every: float = 0.25, seed: int = 0) -> SphereRun:
    """Solve, draw ``n`` tokens from the start with ``seed``, run them, measure."""
    config = SphereFieldConfig(d=3, lmax=lmax, model="sa", beta=beta, T=T, save_every=save_every,
                               init=f"perturbed:eps={eps},lmax={DEGREES}", seed=seed,
                               positivity="raise")
    space, start = SphereSpace(config), time.perf_counter()
    frames = list(solve_sphere_frames(config, space=space))
    times, rho = np.array([f.time for f in frames]), np.array([f.rho for f in frames])
    x0 = sample_sphere_density(rho[0], lmax, n, np.random.default_rng(seed))
    print(f"PDE {time.perf_counter() - start:.1f} s", file=sys.stderr)
    tr = simulate(n, 3, beta, model="sa", x0=x0, dt=dt, T=T, save_times=times,
                  integrator="rk4", summation="auto", observables=("order",))
    print(f"PDE and particles (n = {n}) {time.perf_counter() - start:.1f} s", file=sys.stderr)
    grid = space.theta, space.phi, space.cell[:, 0], lmax
    return SphereRun(
        config=config, space=space, times=times, rho=rho,
        power=np.array([density_power(r, DEGREES) for r in rho]), x=tr.positions,
        token_power=np.array([normalized_power(x, DEGREES) for x in tr.positions]),
        w1=np.array([sliced_w1_density(x, r, *grid) for x, r in
                     zip(tr.positions, rho, strict=True)]))


def fitted_rates(run: SphereRun, n: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Half the log-slope of ``Q_l`` (l = 1..DEGREES) over the linear phase (``t`` up to
    where the PDE's largest departure from uniform is 3x its start), for the PDE and
    the tokens (their ``1/n`` floor taken off, frames where the rest exceeds it; NaN
    with fewer than two); and that phase's end."""
    dev = np.abs(run.rho - 1.0).max(axis=(1, 2))
    keep = dev <= 3.0 * dev[0]
    t = run.times[keep]
    pde = np.polyfit(t, np.log(run.power[keep, 1:]), 1)[0] / 2
    tokens = np.full(DEGREES, np.nan)
    for l in range(1, DEGREES + 1):
        signal = run.token_power[keep, l] - 1.0 / n
        above = signal > 1.0 / n  # a slope of the sampling floor says nothing
        if above.sum() >= 2:
            tokens[l - 1] = np.polyfit(t[above], np.log(signal[above]), 1)[0] / 2
    return pde, tokens, float(t[-1])


def _maps(fig, grid, run: SphereRun, picks) -> None:
    lon, lat = grid_edges(run.space.theta, run.space.phi)
    for col, f in enumerate(picks):
        scale = {"vmin": 0.0, "vmax": float(max(run.rho[f].max(), 1.0))}
        mollweide_map(fig, fig.add_subplot(grid[0, col], projection="mollweide"), lon, lat,
                      run.rho[f], f"mean field, t = {run.times[f]:g}", **scale)
        h_lon, h_lat, hist = token_histogram(run.x[f])
        mollweide_map(fig, fig.add_subplot(grid[1, col], projection="mollweide"), h_lon,
                      h_lat, hist, f"tokens, sliced W1 = {run.w1[f]:.3g}", **scale)


def _power(ax, run: SphereRun, n: int, rates: np.ndarray, star: int) -> None:
    fine = np.linspace(0.0, run.times[-1], 200)
    for l in range(1, DEGREES + 1):
        c = "k" if l == star else f"C{(l - 1) % 10}"
        ax.plot(run.times, run.power[:, l], color=c, lw=2.4 if l == star else 1.2,
                label=f"l = {l}" + (" (l*)" if l == star else ""))
        ax.plot(run.times, run.token_power[:, l], "o", color=c, ms=3, mfc="none")
        ax.plot(fine, run.power[0, l] * np.exp(2 * rates[l - 1] * fine), ":", color=c, lw=0.9)
    ax.axhline(1.0 / n, color="0.4", ls="--", lw=1.0, label=f"1/n (n = {n:,})")
    ax.set_yscale("log")
    ax.set(xlabel="t", ylabel=r"normalised power $Q_l$",
           title=r"$Q_l(t)$: PDE (lines), tokens (circles), $Q_l(0)\,e^{2\sigma_l t}$ (dotted)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=3, loc="lower right")


def _rates(ax, run: SphereRun, n: int, rates: np.ndarray, star: int) -> None:
    pde, tokens, t_end = fitted_rates(run, n)
    ls = np.arange(1, DEGREES + 1)
    ax.plot(ls, rates, "k-", lw=1.6, label=r"linear theory $\sigma_l$ (Funk-Hecke)")
    ax.plot(ls, pde, "s", color="C3", mfc="none", ms=7,
            label=f"PDE: half the log-slope of $Q_l$, t \u2264 {t_end:g}")
    ax.plot(ls, tokens, "o", color="C0", ms=5,
            label=r"tokens: the same, $Q_l - 1/n$ (where above $1/n$)")
    ax.axvline(star, color="k", ls="--", lw=1.0, label=f"l* = {star}")
    ax.set(xlabel="degree l", ylabel="growth rate (1 / time)",
           title="growth rates of the uniform state by degree")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def make_figure(run: SphereRun, n: int, seed: int) -> Figure:
    """Four times of maps (density, histogram), then the power and the rates."""
    cfg = run.config
    picks = np.unique(np.linspace(0, run.times.size - 1, 4).round().astype(int))
    fig = Figure(figsize=(3.3 * picks.size, 9.5), layout="constrained")
    grid = fig.add_gridspec(3, picks.size, height_ratios=(1.0, 1.0, 1.5))
    _maps(fig, grid, run, picks)
    rates = growth_rate_sphere(np.arange(1, DEGREES + 1), 3, cfg.beta, cfg.model)
    star = fastest_degree(cfg.beta)
    half = picks.size // 2
    _power(fig.add_subplot(grid[2, :half]), run, n, rates, star)
    _rates(fig.add_subplot(grid[2, half:]), run, n, rates, star)
    fig.suptitle(f"Particles against the mean field on S^2: {cfg.model.upper()}, "
                 f"\u03b2 = {cfg.beta:g}, \u03c10 = {cfg.init} (seed {seed}), lmax = {cfg.lmax}; "
                 f"n = {n:,} tokens i.i.d. from \u03c10, RK4")
    return fig


def main(argv=None) -> int:
    """Command line: run, save the PNG, print the fitted rates against theory."""
    args = figure_command(__doc__, __file__, argv)
    n, lmax, T = (500, 12, 0.5) if args.quick else (100_000, 64, 4.5)
    run = experiment(n, lmax, T, seed=args.seed)
    rates = growth_rate_sphere(np.arange(1, DEGREES + 1), 3, run.config.beta, "sa")
    pde, tokens, t_end = fitted_rates(run, n)
    print(f"l* = {fastest_degree(run.config.beta)}; rates l = 1..{DEGREES}, t <= {t_end:g}: "
          f"theory {np.round(rates, 3)}, PDE {np.round(pde, 3)}, tokens {np.round(tokens, 3)}; "
          f"sliced W1 {np.round(run.w1, 4)}")
    args.save(make_figure(run, n, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
