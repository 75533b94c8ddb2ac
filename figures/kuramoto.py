"""Kuramoto on the circle: synchronisation against coupling, and three models from one start
(issue 27, figure 8).

Top left: the Kuramoto model ``theta_i' = omega_i + (K/n) sum_j sin(theta_j -
theta_i)`` with Lorentzian natural frequencies of half-width gamma = 0.5
(``omega="lorentzian:0.5"``, drawn per system), one sweep over the coupling K
per n (:class:`particles.sweep.SweepSpec`, :func:`particles.sweep.run_sweep`):
the order parameter ``r = |(1/n) sum_j x_j|``, averaged over the systems and
over the last third of the run (t in [40, 60]), against the n -> infinity
theory ``r = sqrt(1 - 2 gamma / K)`` above ``K_c = 2 gamma`` (Kuramoto 1975,
:func:`particles.plotting.sweep.kuramoto_lorentzian_r`, dashed), and the level
``sqrt(pi / (4 n))`` of n independent uniform phases (dotted), where finite
populations sit below K_c.  The Lorentzian's tail puts a few oscillators at
``|omega|`` ~ n gamma, which RK4 with dt = 0.05 aliases (the step-size warning is
silenced here): they drift incoherently either way, and r at n = 3200, K = 2
agrees with dt = 0.01 to 3e-4.  Bottom: SA and USA (beta = 4) and Kuramoto
(K = 1.2, Gaussian frequencies of standard deviation 0.5, K_c = 0.80, no
tail to alias) from the same 64 uniform angles
(:func:`particles.runs.compare.compare_models`): the angles against time and
r(t); attention forms clusters that merge (SA's third at t ~ 15), Kuramoto
one locked group that turns at its sample's mean frequency (drawn in the
frame of its mean phase psi(t)).

Usage::

    python figures/kuramoto.py [--quick] [--out figures/kuramoto.png]
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from particles.errors import StepSizeWarning
from particles.gallery import figure_command
from particles.observables import order_parameter_from_positions
from particles.plotting.sweep import kuramoto_lorentzian_r
from particles.runs.compare import compare_models
from particles.sweep import LocalBackend, SweepSpec, load, run_sweep

GAMMA, DT, K_COMPARE, BETA = 0.5, 0.05, 1.2, 4.0


def order_against_coupling(n: int, couplings, runs: int, T: float, seed: int) -> np.ndarray:
    """Mean r over the systems and the last third of the frames, per coupling: (k,)."""
    spec = SweepSpec(base=dict(model="kuramoto", n=n, d=2, omega=f"lorentzian:{GAMMA:g}",
                               integrator="rk4", dt=DT, T=T, save_every=round(T / 20 / DT)),
                     axes=(("coupling", tuple(couplings)),), runs=runs, seed=seed)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        # the Lorentzian tail's fast oscillators (see the module docstring)
        warnings.simplefilter("ignore", StepSizeWarning)
        run_sweep(spec, Path(tmp) / "sweep.h5", backend=LocalBackend())
        r = load(Path(tmp) / "sweep.h5")["order_parameter_mean"].transpose("coupling", "time")
    late = r.values[:, -(r.shape[1] // 3):]
    return late.mean(axis=1)


def compare(n: int, T: float, seed: int):
    """SA, USA and Kuramoto from one start: {model: (times, angles (F, n), r (F,))};
    Kuramoto's angles in the frame turning with its mean phase psi(t)."""
    with tempfile.TemporaryDirectory() as tmp:
        result = compare_models(n=n, beta=BETA, models=("sa", "usa", "kuramoto"),
                                coupling=K_COMPARE, omega="gaussian:0.5", T=T, dt=0.005,
                                save_every=int(T / 0.005 / 150), seed=seed,
                                out=Path(tmp) / "compare.h5")
    out = {}
    for model, traj in result.trajectories.items():
        X = traj.positions
        theta, order = np.arctan2(X[..., 1], X[..., 0]), order_parameter_from_positions(X)
        if model == "kuramoto":
            theta = np.angle(np.exp(1j * (theta - order.psi[:, None])))
        out[model] = (traj.times, theta, order.r)
    return out


def make_figure(couplings, curves, runs, models, n_cmp, seed) -> Figure:
    """r against K per n with the theory (top left), r(t) per model (top right), and
    each model's angles against time (bottom)."""
    fig = Figure(figsize=(14.0, 8.4), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[1.1, 1.0])
    ax, axr = top.subplots(1, 2, width_ratios=[1.4, 1.0])
    cmap = colormaps["viridis"]
    fine = np.linspace(min(couplings), max(couplings), 400)
    for j, (n, r) in enumerate(curves.items()):
        color = cmap(0.85 * j / max(len(curves) - 1, 1))
        ax.plot(couplings, r, "o-", color=color, label=f"n = {n}, {runs[n]} systems per K")
        ax.axhline(np.sqrt(np.pi / (4 * n)), color=color, ls=":", lw=1.3)
    ax.plot(fine, kuramoto_lorentzian_r(fine, GAMMA), "k--", lw=2,
            label=f"theory n → ∞: √(1 \u2212 2\u03b3/K), K_c = 2\u03b3 = {2 * GAMMA:g}")
    ax.plot([], [], "k:", label="√(π/4n): n independent uniform phases")
    ax.set_xlabel("coupling K")
    ax.set_ylabel("order parameter r (mean over systems and t ∈ [2T/3, T])")
    ax.set_title(f"Kuramoto, Lorentzian frequencies \u03b3 = {GAMMA:g}, RK4 dt = {DT:g}, "
                 f"seed {seed}", fontsize=10)
    ax.legend(fontsize=8.5, loc="upper left")
    ax.grid(True, alpha=0.3)
    colors = {"sa": "tab:blue", "usa": "tab:orange", "kuramoto": "tab:green"}
    for model, (t, _, r) in models.items():
        axr.plot(t, r, color=colors[model], lw=2, label=model)
    axr.set_xlabel("time t")
    axr.set_ylabel("order parameter r")
    axr.set_ylim(0, 1.02)
    axr.set_title(f"one start, n = {n_cmp}: SA, USA β = {BETA:g}; "
                  f"Kuramoto K = {K_COMPARE:g} (Gaussian ω)", fontsize=10)
    axr.legend(fontsize=9)
    axr.grid(True, alpha=0.3)
    axes = bottom.subplots(1, len(models), sharey=True)
    for a, (model, (t, theta, _)) in zip(axes, models.items(), strict=True):
        wrapped = theta.copy()
        wrapped[1:][np.abs(np.diff(theta, axis=0)) > np.pi] = np.nan  # no line across +-pi
        for i in range(0, theta.shape[1], 2):  # every other token: the picture stays small
            a.plot(t, wrapped[:, i], lw=0.7, color=colors[model])
        a.set_title(f"{model}: K = {K_COMPARE:g}, angles θ_i \u2212 ψ(t) from the mean phase"
                    if model == "kuramoto" else f"{model}: β = {BETA:g}", fontsize=10)
        a.set_xlabel("time t")
    axes[0].set_ylabel(f"angle θ_i (rad), every other of the {n_cmp} tokens")
    fig.suptitle("Synchronisation on the circle: Kuramoto against coupling, and SA, USA, "
                 "Kuramoto from one start", fontsize=11.5)
    return fig


def main(argv=None) -> int:
    """Command line: the sweeps and the comparison, save the PNG, print r against theory."""
    args = figure_command(__doc__, __file__, argv)
    if args.quick:
        couplings, runs, T, T_cmp = np.linspace(0.5, 3.0, 5), {50: 8, 400: 4}, 15.0, 10.0
    else:
        couplings, runs, T, T_cmp = np.linspace(0.25, 3.0, 12), {50: 48, 400: 16, 3200: 8}, \
            60.0, 30.0
    couplings = tuple(float(k) for k in np.round(couplings, 4))
    curves = {n: order_against_coupling(n, couplings, m, T, args.seed) for n, m in runs.items()}
    theory = kuramoto_lorentzian_r(np.array(couplings), GAMMA)
    for n, r in curves.items():
        above = np.array(couplings) > 2 * GAMMA
        print(f"n = {n}: r at K = {couplings[0]:g}: {r[0]:.3f} (sqrt(pi/4n) = "
              f"{np.sqrt(np.pi / (4 * n)):.3f}); above K_c, max |r - theory| = "
              f"{np.max(np.abs(r - theory)[above]):.3f}")
    models = compare(64, T_cmp, args.seed)
    for model, (_, _, r) in models.items():
        print(f"{model}: r(T) = {r[-1]:.3f}")
    args.save(make_figure(couplings, curves, runs, models, 64, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
