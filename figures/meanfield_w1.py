"""Particles against the mean-field PDE on the circle and on S^2: densities and W1 against n
(figure 9).

``n`` tokens drawn i.i.d. from ``rho0`` follow the particle dynamics
(:func:`particles.simulate`, RK4, spectral sums where cheaper, so n = 1e6 takes
seconds); the density follows the continuity equation (:func:`particles.meanfield.solve`).
Top: the PDE density against the histogram of the largest system over time.  Middle: the
exact circle W1 (:func:`particles.meanfield.wasserstein.w1_circle_density`) per n over
time, and against n: ``O(n^{-1/2})`` at t = 0 (sampling), and so over a fixed time window
(the flow is Lipschitz in W1): a log-log slope of about ``-1/2``.  Bottom: the same on
S^2 from a von Mises-Fisher cap, with the sliced W1 (:mod:`particles.meanfield.sliced`).

Usage::

    python figures/meanfield_w1.py [--quick] [--out figures/meanfield_w1.png] [--seed N]
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np
from matplotlib.figure import Figure

from particles import simulate
from particles.gallery import figure_command
from particles.meanfield import MeanFieldConfig, SphereFieldConfig, solve, solve_sphere_frames
from particles.meanfield.sliced import sliced_w1_density
from particles.meanfield.sphere import SphereSpace
from particles.meanfield.wasserstein import sample_density, w1_circle_density
from particles.plotting.convergence import fitted_slope, plot_convergence
from particles.sphere import von_mises_fisher


@dataclass(frozen=True)
class W1Experiment:
    """W1 between particles and the PDE (``config``, saved at ``times`` (F,)): ``w1[i]``
    (S_i, F) per draw and frame for ``ns[i]`` (S^2: sliced); ``rho`` the PDE's densities;
    ``theta_last`` (F, ns[-1]) the first draw's angles at the largest n (S^2: None)."""

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
        return fitted_slope(self.ns, self.mean.mean(1) if frame is None else self.mean[:, frame])[0]


RUN = {"integrator": "rk4", "summation": "auto", "observables": ("order",)}


def _draws(config, times, rho, ns, draws, seed: int, one) -> W1Experiment:
    """``draws[i]`` runs of ``one(n, rng) -> (W1 per frame, angles)`` for each ``ns[i]``."""
    start, rng, w1, last = time.perf_counter(), np.random.default_rng(seed), [], None
    for n, S in zip(ns, draws, strict=True):
        runs = [one(int(n), rng) for _ in range(S)]
        w1.append(np.array([r[0] for r in runs]))
        last = runs[0][1]  # the first draw at the largest (last) n
    return W1Experiment(config=config, times=times, ns=np.asarray(ns), w1=w1, rho=rho,
                        theta_last=last, seconds=time.perf_counter() - start)


def w1_experiment(ns=(50, 200, 800, 3200, 12800, 51200, 204800, 1000000),
                  draws=(32, 32, 16, 8, 4, 2, 2, 1), *, beta: float = 2.0,
                  model: str = "usa", init: str = "modes:k=2,eps=0.5", modes: int = 1024,
                  T: float = 1.5, save_every: float = 0.25, dt: float = 0.05,
                  seed: int = 0) -> W1Experiment:
    """Run the PDE once and ``draws[i]`` particle systems of ``ns[i]`` tokens (keep ``T``
    before the clusters outgrow the grid: the PDE warns); ``dt``: the particles' RK4 step."""
    config = MeanFieldConfig(model=model, beta=beta, modes=modes, T=T, save_every=save_every,
                             init=init)
    pde = solve(config)

    def one(n, rng):
        theta0 = sample_density(pde.rho[0], n, rng)
        tr = simulate(n, 2, beta, model=model, dt=dt, T=T, save_times=pde.times,
                      x0=np.stack([np.cos(theta0), np.sin(theta0)], 1), **RUN)
        theta = np.arctan2(tr.positions[..., 1], tr.positions[..., 0])
        return [w1_circle_density(t, r) for t, r in zip(theta, pde.rho, strict=True)], theta

    return _draws(config, pde.times, pde.rho, ns, draws, seed, one)


def sphere_experiment(ns=(1000, 3162, 10000, 31623, 100000), draws=(8, 4, 4, 2, 1), *,
                      beta: float = 1.0, model: str = "usa", kappa: float = 1.0, lmax: int = 32,
                      T: float = 1.0, save_every: float = 0.25, dt: float = 0.05,
                      seed: int = 0) -> W1Experiment:
    """The same on S^2 from the cap ``exp(kappa z)``, with the sliced W1."""
    config = SphereFieldConfig(d=3, lmax=lmax, model=model, beta=beta, T=T,
                               save_every=save_every, init=f"vonmises:kappa={kappa}")
    frames = list(solve_sphere_frames(config))
    times, rho = np.array([f.time for f in frames]), np.array([f.rho for f in frames])
    space = SphereSpace(config)
    grid = space.theta, space.phi, space.cell[:, 0], lmax

    def one(n, rng):
        x0 = von_mises_fisher(n, 3, mu=[0.0, 0.0, 1.0], kappa=kappa, rng=rng)
        tr = simulate(n, 3, beta, model=model, dt=dt, T=T, save_times=times, x0=x0, **RUN)
        return [sliced_w1_density(tr.positions[f], rho[f], *grid) for f in range(len(rho))], None

    return _draws(config, times, rho, ns, draws, seed, one)


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


def make_figure(exp: W1Experiment, seed: int, sphere: W1Experiment) -> Figure:
    """Top: densities against particle histograms over time; then W1(t) per n and W1
    against n on the circle, and the sliced W1 on S^2 (``sphere``) the same way."""
    fig = Figure(figsize=(13, 11), layout="constrained")
    picks = np.unique(np.linspace(0, exp.times.size - 1, 4).round().astype(int))
    grid = fig.add_gridspec(3, 2 * picks.size, height_ratios=(1.0, 1.1, 1.1))
    _snapshots(fig, grid, exp, picks)
    s2 = sphere.config
    for row, e, name, where in ((1, exp, "W1", "on the circle"), (2, sphere, "sliced W1",
                                f"on S^2 ({s2.init}, lmax = {s2.lmax})")):
        plot_convergence(e.times, e.ns, e.mean, fig.add_subplot(grid[row, :picks.size]),
                         fig.add_subplot(grid[row, picks.size:]), name=name, where=where)
    cfg = exp.config
    fig.suptitle(f"Particles (RK4, i.i.d. from \u03c10, seed {seed}) against the mean field: "
                 f"circle {cfg.model.upper()}, β = {cfg.beta:g}, \u03c10 = {cfg.init}, M = "
                 f"{cfg.modes};\nS^2 {s2.model.upper()}, β = {s2.beta:g}, \u03c10 = {s2.init}")
    return fig


def main(argv=None) -> int:
    """Command line: run, save the PNG, print the slopes."""
    args = figure_command(__doc__, __file__, argv)
    if args.quick:
        exp = w1_experiment(ns=(25, 100), draws=(2, 2), modes=256, T=0.5, seed=args.seed)
        sphere = sphere_experiment(ns=(100, 400), draws=(2, 2), lmax=12, T=0.5, seed=args.seed)
    else:
        exp, sphere = w1_experiment(seed=args.seed), sphere_experiment(seed=args.seed)
    for where, e in (("circle, W1", exp), ("S^2, sliced W1", sphere)):
        print(f"{where}: slope of log W1 against log n: {e.slope():.3f} (time average), "
              f"{e.slope(0):.3f} (t = 0), {e.slope(-1):.3f} (t = {e.times[-1]:g}); "
              f"{e.seconds:.1f} s")
    args.save(make_figure(exp, args.seed, sphere))
    return 0


if __name__ == "__main__":
    sys.exit(main())
