"""Particles against the mean-field PDE on the circle: W1 distance against n (issue 13).

``n`` tokens drawn i.i.d. from the initial density ``rho0`` follow the particle
dynamics (:func:`particles.simulate`, RK4 on the circle, with the spectral
summation where it is the cheaper: O(n K) per step, so n reaches 1e6 in
about a minute on 2 cores); the density follows the
continuity equation (:func:`particles.meanfield.solve`).  The exact circle
Wasserstein-1 distance between the empirical measure and the PDE density
(:func:`particles.meanfield.wasserstein.w1_circle_density`) is ``O(n^{-1/2})`` at
t = 0 (sampling) and stays so over a fixed time window (the flow is Lipschitz in
W1), so its log-log slope against ``n`` is about ``-1/2``.

Usage::

    python figures/meanfield_w1.py [--quick] [--out figures/meanfield_w1.png]

Writes one PNG (never opens a window) and prints the fitted slopes.  ``--quick``
is a seconds-long run of the same pipeline (used by the tests).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from particles import simulate
from particles.meanfield import MeanFieldConfig, solve
from particles.meanfield.wasserstein import sample_density, w1_circle_density


@dataclass(frozen=True)
class W1Experiment:
    """W1 between particles and the PDE.

    Attributes
    ----------
    config : MeanFieldConfig
        The PDE run (its ``save_times`` are the comparison times).
    times : ndarray, shape (F,)
    ns : ndarray of int, shape (N,)
    w1 : list of ndarray, each shape (S_i, F)
        W1 per draw (seed) and frame, for each ``n``.
    rho : ndarray, shape (F, M)
        The PDE densities.
    theta_last : ndarray, shape (F, ns[-1])
        Particle angles of the first draw at the largest ``n``.
    seconds : float
        Wall time of the experiment.
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

    Parameters
    ----------
    ns : sequence of int, shape (N,)
        Numbers of tokens.
    draws : sequence of int, shape (N,)
        Independent samples of the initial tokens for each ``n``.
    beta, model, init, modes, T, save_every
        The mean-field problem (:class:`~particles.meanfield.MeanFieldConfig`);
        keep ``T`` before the clusters outgrow the grid (the PDE warns).
    dt : float
        RK4 step of the particles.
    seed : int
        Root seed of the initial draws.

    Returns
    -------
    W1Experiment
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


def make_figure(exp: W1Experiment) -> Figure:
    """Three panels: W1(t) per n, W1 against n (log-log, fitted slope), the final densities."""
    fig = Figure(figsize=(13, 4), layout="constrained")
    ax_t, ax_n, ax_rho = fig.subplots(1, 3)
    mean = exp.mean
    for i, n in enumerate(exp.ns):
        ax_t.semilogy(exp.times, mean[i], "o-", ms=3, label=f"n = {n}")
    ax_t.set(xlabel="t", ylabel="W1(particles, PDE)", title="mean over draws")
    ax_t.legend(fontsize=8)
    avg = mean.mean(axis=1)
    slope = exp.slope()
    ax_n.loglog(exp.ns, avg, "o", label="time average")
    ax_n.loglog(exp.ns, mean[:, -1], "s", mfc="none", label=f"t = {exp.times[-1]:g}")
    c = np.exp(np.polyfit(np.log(exp.ns), np.log(avg), 1)[1])
    ax_n.loglog(exp.ns, c * exp.ns**slope, "-", label=f"fit: slope {slope:.3f}")
    ax_n.loglog(exp.ns, avg[0] * (exp.ns / exp.ns[0]) ** -0.5, ":", color="gray",
                label="slope -1/2")
    ax_n.set(xlabel="n", ylabel="W1", title="W1 against n")
    ax_n.legend(fontsize=8)
    M = exp.rho.shape[1]
    theta = 2 * np.pi * np.arange(M) / M
    ax_rho.plot(theta, exp.rho[-1], label=f"PDE, t = {exp.times[-1]:g}")
    ax_rho.plot(theta, exp.rho[0], "--", color="gray", label="PDE, t = 0")
    if exp.theta_last is not None:
        ax_rho.hist(np.mod(exp.theta_last[-1], 2 * np.pi), bins=64, range=(0, 2 * np.pi),
                    density=True, alpha=0.4, label=f"particles, n = {exp.ns[-1]}")
    ax_rho.set(xlabel="theta", ylabel="density", title="density and particles")
    ax_rho.legend(fontsize=8)
    cfg = exp.config
    fig.suptitle(f"{cfg.model.upper()}, beta = {cfg.beta:g}, init {cfg.init}, "
                 f"M = {cfg.modes}")
    return fig


def main(argv=None) -> int:
    """Command line: run, save the PNG, print the slopes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a seconds-long run")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_suffix(".png"))
    args = parser.parse_args(argv)
    if args.quick:
        exp = w1_experiment(ns=(25, 100), draws=(2, 2), modes=256, T=0.5)
    else:
        exp = w1_experiment(ns=(50, 200, 800, 3200, 12800, 51200, 204800, 1000000),
                            draws=(32, 32, 16, 8, 4, 2, 2, 1))
    make_figure(exp).savefig(args.out, dpi=120)
    print(f"slope of log W1 against log n: {exp.slope():.3f} (time average), "
          f"{exp.slope(0):.3f} (t = 0), {exp.slope(-1):.3f} (t = {exp.times[-1]:g}); "
          f"{exp.seconds:.1f} s")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
