"""Phase diagrams (beta, t) of the fraction of clustered pairs (issue 27, figure 3).

For each beta in [0.1, 9] an ensemble of systems of n = 32 tokens drawn
uniformly on S^{d-1} follows SA attention through the Euler layer (the
papers' scheme, ``x <- normalize(x + dt A V x)``), run as one sweep over beta
(:class:`particles.sweep.SweepSpec`, :func:`particles.sweep.run_sweep` on the
local backend, :func:`particles.sweep.load`); colour: the fraction of pairs
with ``<x_i, x_j> > 1 - delta``, delta = 1e-3, over every pair of every
system (:func:`particles.plotting.sweep.plot_phase_diagram`).  Left: d = 2,
where clusters form but stay apart (metastability) once beta is large.
Middle: d = 128, with the high-dimensional theory (dashed white): for d >> n
all inner products follow the equiangular ODE ``rho_beta(t)`` from 0
(DESIGN.md section 2), so the frontier is ``rho_beta(t) = 1 - delta``
(:func:`particles.plotting.sweep.frontier_time`); red crosses: the measured
time at which half of the pairs are clustered (measured 5.5 % late at small
beta, which is the Euler step: log(1 + dt)/dt = 0.953 of the ODE's rate, and
with dt = 0.02 the ratio is 1.001; up to 9 % early at beta ~ 6.5, where the
spread ~ 1/sqrt(d) of the initial inner products lets the closer pairs lead).
Right: d = 32 with random
weights, ``Q^T K = G1 G2 / sqrt(d)`` (``weights="gaussian"``) and ``V = W
W^T / sqrt(d)`` (``value_weights="wwt"``), one draw per beta shared by its
systems; these speeds are ~ 4 sqrt(d) larger, so it runs with a ten times
smaller step to a fifteen times shorter T.  The issue asks for 2048 systems
per beta; the ensembles here are smaller to fit the time budget (the
fraction is an average over 496 pairs per system, so they are smooth).

Usage::

    python figures/phase_diagram.py [--quick] [--out figures/phase_diagram.png]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from particles.analysis import first_crossing
from particles.gallery import figure_command
from particles.plotting.sweep import frontier_time, plot_phase_diagram
from particles.sweep import LocalBackend, SweepSpec, load, run_sweep

N, DELTA = 32, 1e-3


def sweep(betas, runs: int, seed: int, **base):
    """One sweep over beta (fixed fields ``base``): the loaded Dataset."""
    spec = SweepSpec(base={"n": N, "integrator": "euler", **base},
                     axes=(("beta", tuple(betas)),), runs=runs, deltas=(DELTA,), seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sweep.h5"
        run_sweep(spec, path, backend=LocalBackend())
        return load(path)


def half_time(ds) -> np.ndarray:
    """Per beta: when half of the pairs are clustered, interpolated linearly between the
    saved frames (nan: never by T)."""
    frac = ds["pair_fraction"].isel(delta=0).transpose("beta", "time").values
    return first_crossing(ds["time"].values, frac, 0.5)


def theory_ratio(ds) -> float:
    """Median over beta of the measured half-time over the theory frontier time."""
    betas = np.asarray(ds["beta"].values)
    front = np.array([frontier_time(b, DELTA, N) for b in betas])
    return float(np.nanmedian(half_time(ds) / front))


def make_figure(panels, seed: int) -> Figure:
    """Three phase diagrams side by side, theory and measured half-times on d = 128."""
    fig = Figure(figsize=(17.0, 5.4), layout="constrained")
    axes = fig.subplots(1, 3)
    for ax, (name, ds, info) in zip(axes, panels, strict=True):
        theory = name == "d128"
        plot_phase_diagram(ds, delta=DELTA, theory=theory, ax=ax)
        if theory:
            betas = np.asarray(ds["beta"].values)
            ax.plot(betas, half_time(ds), "x", color="tab:red", ms=7, mew=2,
                    label="measured: half of the pairs clustered "
                    f"(median t / theory {theory_ratio(ds):.3f})")
            ax.legend(loc="lower right", fontsize=8.5, framealpha=0.8)
        ax.set_xlabel("inverse temperature β")
        ax.set_ylabel("time t = layers · dt")
        ax.set_title(f"n = {N}, {info}\n{ds.attrs['runs']} systems per β, seed {seed}",
                     fontsize=10)
    fig.suptitle(f"Fraction of pairs with ⟨x_i, x_j⟩ > 1 - {DELTA:g}: SA, edp kernel, "
                 "uniform starts, Euler layer", fontsize=11.5)
    return fig


def main(argv=None) -> int:
    """Command line: three sweeps, save the PNG, print the frontier against the theory."""
    args = figure_command(__doc__, __file__, argv)
    if args.quick:
        betas, runs, T, T_rand = np.linspace(0.1, 9.0, 4), (4, 4, 4), 10.0, 1.0
    else:
        betas, runs, T, T_rand = np.linspace(0.1, 9.0, 24), (256, 128, 64), 30.0, 2.0
    betas = tuple(float(b) for b in np.round(betas, 4))
    every = {"T": T, "dt": 0.1, "save_every": 5}
    panels = [
        ("d2", sweep(betas, runs[0], args.seed, d=2, **every), "d = 2, dt = 0.1"),
        ("d128", sweep(betas, runs[1], args.seed, d=128, **every), "d = 128, dt = 0.1"),
        ("random", sweep(betas, runs[2], args.seed, d=32, T=T_rand, dt=0.01, save_every=4,
                         weights="gaussian", value_weights="wwt"),
         "d = 32, random Q, K, V (gaussian, wwt), dt = 0.01"),
    ]
    for name, ds, _ in panels:
        final = ds["pair_fraction"].isel(delta=0, time=-1).values
        print(f"{name}: final fraction at beta = {betas[0]:g}, {betas[len(betas) // 2]:g}, "
              f"{betas[-1]:g}: {final[0]:.3f}, {final[len(betas) // 2]:.3f}, {final[-1]:.3f}")
    measured = half_time(panels[1][1])
    for b, t in zip(betas, measured, strict=True):
        front = frontier_time(b, DELTA, N)
        print(f"d = 128, beta = {b:g}: half of the pairs clustered at t = {t:.3g}, "
              f"theory rho_beta(t) = 1 - delta at t = {front:.3g} (ratio {t / front:.3f})")
    print(f"median ratio {theory_ratio(panels[1][1]):.3f}")
    args.save(make_figure(panels, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
