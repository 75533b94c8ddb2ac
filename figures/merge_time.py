"""Merge time of two clusters on the circle against beta (issue 27, figure 5).

Two tokens (two point clusters of equal mass) start at angle ``phi`` on the
circle and follow SA attention (:func:`particles.simulate`, dopri5 with
log-spaced save times and ``summation="auto"``); the run stops at the first
frame with one cluster (``until_clusters=1``) and ``merge_events=True``
locates the merge by bisection (:attr:`particles.Trajectory.merge_events`).
The merge time grows like ``exp(beta (1 - cos phi))`` (DESIGN.md section 2):
the dashed lines are the law with its Laplace prefactor,
``log T = beta (1 - cos phi) - log(2 beta sin^2 phi)``, and the thin lines
the exact two-cluster quadrature
(:func:`particles.analysis.two_cluster_merge_time`); on the right the
prefactor-corrected times ``2 beta sin^2 phi T`` of every angle fall on one
line ``e^x``, ``x = beta (1 - cos phi)``.  The title prints the fitted slope
of ``log T`` against beta over the upper half of the range, raw and
prefactor-corrected, next to ``1 - cos phi``.

Usage::

    python figures/merge_time.py [--quick] [--out figures/merge_time.png]
"""

from __future__ import annotations

import sys

import numpy as np
from matplotlib import colormaps
from matplotlib.figure import Figure

from particles import simulate
from particles.analysis import two_cluster_merge_time
from particles.gallery import figure_command

RTOL = 1e-8


def pair(phi: float) -> np.ndarray:
    """Two points on the circle at angle ``phi``, symmetric about the x axis."""
    a = np.array([-phi / 2, phi / 2])
    return np.stack([np.cos(a), np.sin(a)], axis=1)


def merge_time(beta: float, phi: float, seed: int) -> float:
    """The located merge time of the two clusters."""
    traj = simulate(2, 2, beta, integrator="dopri5", rtol=RTOL, T=1e9, summation="auto",
                    save_times="log:0.01:1e9:60", until_clusters=1, merge_events=True,
                    x0=pair(phi), seed=seed)
    (merge,) = traj.merge_events
    return merge.time


def sweep(phis, points: int, top: float, seed: int) -> dict[float, tuple[np.ndarray, ...]]:
    """Per phi: betas with beta (1 - cos phi) in [2, top], and their merge times."""
    out = {}
    for phi in phis:
        gap = 1 - np.cos(phi)
        betas = np.linspace(2 / gap, top / gap, points)
        out[phi] = (betas, np.array([merge_time(b, phi, seed) for b in betas]))
    return out


def slopes(phi: float, betas: np.ndarray, times: np.ndarray, low: float) -> tuple[float, float]:
    """Least-squares slopes of log T and of log(2 beta sin^2 phi T) against beta, over the
    points with beta (1 - cos phi) >= low (the large-beta regime of the law)."""
    keep = betas * (1 - np.cos(phi)) >= low - 1e-9
    b, t = betas[keep], times[keep]
    raw = np.polyfit(b, np.log(t), 1)[0]
    fixed = np.polyfit(b, np.log(2 * b * np.sin(phi) ** 2 * t), 1)[0]
    return float(raw), float(fixed)


def make_figure(data, low: float, seed: int) -> Figure:
    """log T against beta (left); prefactor-corrected against beta (1 - cos phi) (right)."""
    fig = Figure(figsize=(12.0, 5.4), layout="constrained")
    ax_b, ax_g = fig.subplots(1, 2)
    cmap = colormaps["viridis"]
    notes = []
    for k, (phi, (betas, times)) in enumerate(data.items()):
        color = cmap(0.85 * k / max(len(data) - 1, 1))
        gap, s2 = 1 - np.cos(phi), np.sin(phi) ** 2
        fine = np.linspace(betas[0], betas[-1], 100)
        law = np.array([two_cluster_merge_time(b, phi, asymptotic=True) for b in fine])
        exact = np.array([two_cluster_merge_time(b, phi) for b in fine])
        raw, fixed = slopes(phi, betas, times, low)
        notes.append(f"{np.degrees(phi):.0f}°: {raw:.3f} [{fixed:.3f}] vs {gap:.3f}")
        label = f"φ = {np.degrees(phi):.0f}°: located merges (fitted slope {raw:.3f})"
        ax_b.plot(betas, times, "o", color=color, markersize=6, label=label)
        ax_b.plot(fine, exact, "-", color=color, linewidth=0.9, alpha=0.7,
                  label="exact two-cluster quadrature" if k == 0 else None)
        ax_b.plot(fine, law, "--", color="k", linewidth=1.3, dashes=(5, 3),
                  label=r"law $T = e^{\beta(1-\cos\varphi)}/(2\beta\sin^2\varphi)$"
                  if k == 0 else None)
        ax_g.plot(betas * gap, 2 * betas * s2 * times, "o", color=color, markersize=6,
                  label=f"φ = {np.degrees(phi):.0f}° (corrected slope = {fixed / gap:.3f} "
                  "(1 - cos φ))")
    x = np.linspace(*ax_g.get_xlim(), 100)
    ax_g.plot(x, np.exp(x), "--", color="k", linewidth=1.3, dashes=(5, 3),
              label=r"law $e^{\beta(1-\cos\varphi)}$")
    ax_g.axvspan(low, x[-1], color="0.9", zorder=0, label="fitted range")
    for ax in (ax_b, ax_g):
        ax.set_yscale("log")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    ax_b.set_ylabel("merge time T (log)")
    ax_b.set_xlabel("inverse temperature β")
    ax_g.set_ylabel(r"$2\beta\sin^2\varphi\; T$ (log)")
    ax_g.set_xlabel("β (1 - cos φ): every angle on one law")
    fig.suptitle("Two clusters on the circle merge after T ~ exp(β (1 - cos φ)): n = 2 "
                 f"equal-mass tokens, d = 2, SA, dopri5 rtol {RTOL:g}, seed {seed}\n"
                 f"fitted d log T / dβ over β (1 - cos φ) ≥ {low:g} [prefactor-corrected] vs "
                 "1 - cos φ: " + "; ".join(notes), fontsize=10)
    return fig


def main(argv=None) -> int:
    """Command line: sweep beta for each phi, save the PNG, print the fitted slopes."""
    args = figure_command(__doc__, __file__, argv)
    phis = (np.pi / 3, np.pi / 2, 2 * np.pi / 3)
    points, top = (4, 8.0) if args.quick else (9, 18.0)
    low = top / 2
    data = sweep(phis, points, top, args.seed)
    for phi, (betas, times) in data.items():
        raw, fixed = slopes(phi, betas, times, low)
        print(f"phi = {phi:.4f}: beta {betas[0]:.3g}..{betas[-1]:.3g}, T {times[0]:.3g}.."
              f"{times[-1]:.3g}; slope {raw:.4f}, corrected {fixed:.4f}, "
              f"1 - cos phi = {1 - np.cos(phi):.4f}")
    args.save(make_figure(data, low, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
