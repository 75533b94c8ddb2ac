"""Particles against the mean-field PDE on the circle and on S^2: densities and W1 against n
(figure 9).

``n`` tokens drawn i.i.d. from ``rho0`` follow the particle dynamics
(:func:`particles.simulate`, RK4, spectral sums where cheaper, so n = 1e6 takes
seconds); the density follows the continuity equation
(:func:`particles.meanfield.solve`).  Top: the PDE density against the histogram of
the largest system over time.  Bottom: the exact circle W1 distance
(:func:`particles.meanfield.wasserstein.w1_circle_density`) per n over time, and
against n: ``O(n^{-1/2})`` at t = 0 (sampling), and so over a fixed time window
(the flow is Lipschitz in W1), so the log-log slope is about ``-1/2``.  Bottom row, S^2:
tokens i.i.d. from the PDE's von Mises-Fisher start, the sliced W1
(:func:`particles.meanfield.sliced.sliced_w1_density`) to the S^2 solve
(:func:`particles.meanfield.solve_sphere_frames`) over time and against n.

Usage::

    python figures/meanfield_w1.py [--quick] [--out figures/meanfield_w1.png] [--seed N]
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from particles import simulate
from particles.gallery import figure_command
from particles.meanfield import MeanFieldConfig, SphereFieldConfig, solve, solve_sphere_frames
from particles.meanfield.sliced import sliced_w1_density
from particles.meanfield.sphere import SphereSpace
from particles.meanfield.wasserstein import sample_density, w1_circle_density
from particles.sphere import von_mises_fisher


@dataclass(frozen=True)
class W1Experiment:
    """W1 between particles and the PDE.

    ``config`` is the PDE run (its save times are the comparison times, ``times``,
    shape (F,)); ``ns`` (N,); ``w1[i]`` (S_i, F): W1 per draw and frame for
    ``ns[i]``; ``rho`` (F, M): the PDE densities (S^2: (F, ntheta, nphi), and
    ``w1`` the sliced W1); ``theta_last`` (F, ns[-1]): the angles of the first draw
    at the largest n (None on S^2); ``seconds``: wall time.
    """

    config: MeanFieldConfig
    times: np.ndarray
    ns: np.ndarray
    w1: list
    rho: np.ndarray
    theta_last: np.ndarray
    seconds: float

    @property
    def mean(self) -> np.ndarray:
        """Mean W1 over draws, shape (N, F)."""
        return np.array([w.mean(axis=0) for w in self.w1])

    def slope(self, frame: int | None = None) -> float:
        """Least-squares slope of ``log W1`` against ``log n`` (time average if no frame)."""
        y = self.mean.mean(axis=1) if frame is None else self.mean[:, frame]
        return float(np.polyfit(np.log(self.ns), np.log(y), 1)[0])


def w1_experiment(ns=(50, 200, 800), draws=(16, 16, 8), *, beta: float = 2.0,
                  model: str = "usa", init: str = "modes:k=2,eps=0.5", modes: int = 1024,
                  T: float = 1.5, save_every: float = 0.25, dt: float = 0.05,
                  seed: int = 0) -> W1Experiment:
    """Run the PDE once and ``draws[i]`` particle systems of ``ns[i]`` tokens.

    ``beta, model, init, modes, T, save_every`` make the
    :class:`~particles.meanfield.MeanFieldConfig` (keep ``T`` before the clusters
    outgrow the grid: the PDE warns); ``dt`` is the particles' RK4 step and
    ``seed`` the root seed of the initial draws.
    """
    start = time.perf_counter()
    config = MeanFieldConfig(model=model, beta=beta, modes=modes, T=T, save_every=save_every,
                             init=init)
    pde = solve(config)
    rng = np.random.default_rng(seed)
    w1 = []
    theta_last = None
    for n, S in zip(ns, draws, strict=True):
        rows = []
        for _ in range(S):
            theta0 = sample_density(pde.rho[0], int(n), rng)
            tr = simulate(int(n), 2, beta, model=model, integrator="rk4", dt=dt, T=T,
                          save_times=pde.times, x0=np.stack([np.cos(theta0), np.sin(theta0)], 1),
                          summation="auto", observables=("order",))
            theta = np.arctan2(tr.positions[..., 1], tr.positions[..., 0])
            rows.append([w1_circle_density(theta[f], pde.rho[f])
                         for f in range(pde.times.size)])
            if theta_last is None and n == ns[-1]:
                theta_last = theta
        w1.append(np.array(rows))
    return W1Experiment(config=config, times=pde.times, ns=np.asarray(ns), w1=w1, rho=pde.rho,
                        theta_last=theta_last, seconds=time.perf_counter() - start)


def sphere_experiment(ns=(100, 400, 1600), draws=(8, 4, 2), *, beta: float = 1.0,
                      model: str = "usa", kappa: float = 1.0, lmax: int = 32, T: float = 1.0,
                      save_every: float = 0.25, dt: float = 0.05,
                      seed: int = 0) -> W1Experiment:
    """The same on S^2: the PDE from a von Mises-Fisher cap ``exp(kappa z)`` and
    ``draws[i]`` systems of ``ns[i]`` tokens drawn i.i.d. from it; ``w1`` holds the
    sliced W1 (keep ``T`` before the cap outgrows ``lmax``: the PDE warns)."""
    start = time.perf_counter()
    config = SphereFieldConfig(d=3, lmax=lmax, model=model, beta=beta, T=T,
                               save_every=save_every, init=f"vonmises:kappa={kappa}")
    frames = list(solve_sphere_frames(config))
    times, rho = np.array([f.time for f in frames]), np.array([f.rho for f in frames])
    space = SphereSpace(config)
    grid = (space.theta, space.phi, space.cell[:, 0], lmax)
    rng = np.random.default_rng(seed)
    w1 = []
    for n, S in zip(ns, draws, strict=True):
        rows = []
        for _ in range(S):
            x0 = von_mises_fisher(int(n), 3, mu=[0.0, 0.0, 1.0], kappa=kappa, rng=rng)
            tr = simulate(int(n), 3, beta, model=model, integrator="rk4", dt=dt, T=T,
                          save_times=times, x0=x0, summation="auto", observables=("order",))
            rows.append([sliced_w1_density(tr.positions[f], rho[f], *grid)
                         for f in range(times.size)])
        w1.append(np.array(rows))
    return W1Experiment(config=config, times=times, ns=np.asarray(ns), w1=w1, rho=rho,
                        theta_last=None, seconds=time.perf_counter() - start)


def _snapshots(fig, grid, exp: W1Experiment, picks) -> None:
    """Top row: the PDE density and the particles' histogram (largest n) at a few times."""
    M = exp.rho.shape[1]
    theta = 2 * np.pi * np.arange(M + 1) / M  # closed: the last cell wraps to the first
    for col, f in enumerate(picks):
        ax = fig.add_subplot(grid[0, 2 * col:2 * col + 2])
        if exp.theta_last is not None:
            bins = int(min(128, 2 * np.sqrt(exp.ns[-1])))
            ax.hist(np.mod(exp.theta_last[f], 2 * np.pi), bins=bins, range=(0, 2 * np.pi),
                    density=True, color="0.7", label=f"particles, n = {exp.ns[-1]:,}")
        ax.plot(theta, np.append(exp.rho[f], exp.rho[f][0]), color="C3", lw=1.3,
                label="mean-field PDE \u03c1(θ, t)")
        ax.set(xlim=(0, 2 * np.pi), xlabel="θ (rad)", title=f"t = {exp.times[f]:g}")
        ax.set_xticks(np.pi * np.arange(5) / 2, ["0", "π/2", "π", "3π/2", "2π"])
        if col == 0:
            ax.set_ylabel("density")
            ax.legend(fontsize=8, loc="upper left")


def _over_time_and_n(ax_t, ax_n, exp: W1Experiment, name: str, where: str) -> None:
    """``name`` over time per n (``ax_t``) and its time average against n (``ax_n``,
    log-log, fitted slope, the -1/2 law)."""
    mean = exp.mean
    colours = colormaps["viridis"](np.linspace(0.0, 0.9, exp.ns.size))
    for i, n in enumerate(exp.ns):
        ax_t.semilogy(exp.times, mean[i], "o-", ms=3, color=colours[i], label=f"n = {n:,}")
    ax_t.set(xlabel="t", ylabel=f"{name}(particles, PDE) (log)",
             title=f"{name} over time {where}, mean over draws")
    ax_t.legend(fontsize=8, ncol=2)
    avg, slope = mean.mean(axis=1), exp.slope()
    ax_n.loglog(exp.ns, avg, "o", label="time average")
    ax_n.loglog(exp.ns, mean[:, -1], "s", mfc="none", label=f"t = {exp.times[-1]:g}")
    c = np.exp(np.polyfit(np.log(exp.ns), np.log(avg), 1)[1])
    ax_n.loglog(exp.ns, c * exp.ns**slope, "-", color="C2", label=f"fit: slope {slope:.3f}")
    ax_n.loglog(exp.ns, avg[0] * (exp.ns / exp.ns[0]) ** -0.5, "--", color="k",
                label="theory: slope -1/2")
    ax_n.set(xlabel="n (log)", ylabel=f"{name} (log)", title=f"{name} against n {where}")
    ax_n.legend(fontsize=8)
    for ax in (ax_t, ax_n):
        ax.grid(True, which="both", alpha=0.3)


def make_figure(exp: W1Experiment, seed: int, sphere: W1Experiment | None = None) -> Figure:
    """Top: densities against particle histograms over time; then W1(t) per n and
    W1 against n (log-log, fitted slope, the -1/2 law) on the circle, and (``sphere``)
    the sliced W1 on S^2 the same way."""
    rows = 2 if sphere is None else 3
    fig = Figure(figsize=(13, 7.5 if sphere is None else 11.0), layout="constrained")
    picks = np.unique(np.linspace(0, exp.times.size - 1, 4).round().astype(int))
    grid = fig.add_gridspec(rows, 2 * picks.size, height_ratios=(1.0, 1.1, 1.1)[:rows])
    _snapshots(fig, grid, exp, picks)
    _over_time_and_n(fig.add_subplot(grid[1, :picks.size]),
                     fig.add_subplot(grid[1, picks.size:]), exp, "W1", "on the circle")
    if sphere is not None:
        _over_time_and_n(fig.add_subplot(grid[2, :picks.size]),
                         fig.add_subplot(grid[2, picks.size:]), sphere, "sliced W1",
                         f"on S^2 ({sphere.config.model.upper()}, β = {sphere.config.beta:g}, "
                         f"vMF start, lmax = {sphere.config.lmax})")
    cfg = exp.config
    bottom = ("" if sphere is None else
              f"\nbottom row: S^2, i.i.d. tokens from \u03c10 = {sphere.config.init}, sliced W1")
    fig.suptitle(f"Particles against the mean field on the circle: {cfg.model.upper()}, "
                 f"β = {cfg.beta:g}, i.i.d. tokens from \u03c10 = {cfg.init}, PDE M = {cfg.modes} "
                 f"modes, particles RK4, seed {seed}{bottom}")
    return fig


def main(argv=None) -> int:
    """Command line: run, save the PNG, print the slopes."""
    args = figure_command(__doc__, __file__, argv)
    if args.quick:
        exp = w1_experiment(ns=(25, 100), draws=(2, 2), modes=256, T=0.5, seed=args.seed)
        sphere = sphere_experiment(ns=(100, 400), draws=(2, 2), lmax=12, T=0.5,
                                   seed=args.seed)
    else:
        exp = w1_experiment(ns=(50, 200, 800, 3200, 12800, 51200, 204800, 1000000),
                            draws=(32, 32, 16, 8, 4, 2, 2, 1), seed=args.seed)
        sphere = sphere_experiment(ns=(1000, 3162, 10000, 31623, 100000),
                                   draws=(8, 4, 4, 2, 1), seed=args.seed)
    for where, e in (("circle, W1", exp), ("S^2, sliced W1", sphere)):
        print(f"{where}: slope of log W1 against log n: {e.slope():.3f} (time average), "
              f"{e.slope(0):.3f} (t = 0), {e.slope(-1):.3f} (t = {e.times[-1]:g}); "
              f"{e.seconds:.1f} s")
    args.save(make_figure(exp, args.seed, sphere))
    return 0


if __name__ == "__main__":
    sys.exit(main())
