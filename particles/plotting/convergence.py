"""Particles against the mean field as n grows: a distance over time per n, and against n.

:func:`plot_convergence` draws, for systems of ``n`` tokens compared with a PDE
solution (the circle's exact W1, the sphere's sliced W1), the distance over time
for each ``n`` and its time average against ``n`` on log-log axes, with the fitted
slope and the ``n^{-1/2}`` law of i.i.d. sampling (``figures/meanfield_w1.py``).
Draws into given axes, never shows or saves.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from numpy.typing import ArrayLike

__all__ = ["fitted_slope", "plot_convergence"]


def fitted_slope(ns: ArrayLike, values: ArrayLike) -> tuple[float, float]:
    """Least-squares ``(slope, intercept)`` of ``log values`` against ``log ns``."""
    slope, intercept = np.polyfit(np.log(np.asarray(ns, dtype=float)),
                                  np.log(np.asarray(values, dtype=float)), 1)
    return float(slope), float(intercept)


def plot_convergence(times: ArrayLike, ns: ArrayLike, distance: ArrayLike, ax_t: Axes,
                     ax_n: Axes, *, name: str = "W1", where: str = "") -> float:
    """The distance over time per n (``ax_t``) and against n (``ax_n``, log-log).

    Parameters
    ----------
    times : array_like, shape (F,)
    ns : array_like, shape (N,)
        System sizes, increasing.
    distance : array_like, shape (N, F)
        The distance (mean over draws) per size and time, positive.
    ax_t, ax_n : matplotlib.axes.Axes
    name : str
        The distance's name in labels and titles.
    where : str
        Appended to the titles (``"on S^2"``).

    Returns
    -------
    float
        The fitted slope of the time average against ``n`` (log-log).
    """
    t, ns, dist = np.asarray(times), np.asarray(ns), np.asarray(distance, dtype=float)
    colours = colormaps["viridis"](np.linspace(0.0, 0.9, ns.size))
    for i, n in enumerate(ns):
        ax_t.semilogy(t, dist[i], "o-", ms=3, color=colours[i], label=f"n = {n:,}")
    ax_t.set(xlabel="t", ylabel=f"{name}(particles, PDE) (log)",
             title=f"{name} over time {where}, mean over draws".replace("  ", " "))
    avg = dist.mean(axis=1)
    slope, c = fitted_slope(ns, avg)
    ax_n.loglog(ns, avg, "o", label="time average")
    ax_n.loglog(ns, dist[:, -1], "s", mfc="none", label=f"t = {t[-1]:g}")
    ax_n.loglog(ns, np.exp(c) * ns**slope, "-", color="C2", label=f"fit: slope {slope:.3f}")
    ax_n.loglog(ns, avg[0] * (ns / ns[0]) ** -0.5, "--", color="k", label="theory: slope -1/2")
    ax_n.set(xlabel="n (log)", ylabel=f"{name} (log)", title=f"{name} against n {where}".strip())
    for ax in (ax_t, ax_n):
        ax.legend(fontsize=8, ncol=2 if ax is ax_t else 1)
        ax.grid(True, which="both", alpha=0.3)
    return slope
