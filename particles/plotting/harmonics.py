"""The ``modes`` figure: which degree of the tokens' measure grew.

Two panels of the normalised degree-l power ``Q_l`` of the tokens'
empirical measure (:func:`~particles.analysis.harmonics.normalized_power`:
1 for one cluster, about 1/n for n uniform tokens; on S^2 ``4 pi P_l / (2l +
1)`` from the analysis' stored ``P_l``, on the circle ``|c_k|^2``): ``Q_l``
against time for the low degrees, and against l at chosen frames; both mark
the degree ``l*`` that linear theory says grows fastest at the run's beta
(:func:`~particles.analysis.harmonics.fastest_degree`), the second the
uniform level ``1/n``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from particles.analysis.harmonics import DEFAULT_MAX_DEGREE, fastest_degree, normalized_power
from particles.display import time_text, value_text

#: degrees drawn against time (the rest crowd the panel).
TIME_DEGREES = 10


def mode_power(analysis: Any, traj: Any, system: int) -> np.ndarray:
    """``Q_l`` (frames, L + 1) of one system: from the stored ``P_l`` on S^2,
    computed from the positions otherwise (or for an older sidecar).

    Raises
    ------
    ValueError
        d >= 4 with more tokens than the double sum takes.
    """
    L = DEFAULT_MAX_DEGREE
    power = analysis.harmonic_power
    if power is not None:
        power = np.asarray(power)
        power = power[:, system] if power.ndim == 3 else power
        return 4 * np.pi * power / (2 * np.arange(power.shape[1]) + 1)
    x = np.asarray(traj.positions)
    x = x[:, system] if x.ndim == 4 else x
    config = getattr(traj, "config", None)
    masses = config.mass_array() if config is not None else None
    return np.stack([normalized_power(xf, L, masses) for xf in x])


def modes_figure(times: np.ndarray, power: np.ndarray, beta: float, n: int, d: int,
                 frames: np.ndarray, title: str, time_label: str) -> Figure:
    """Draw the figure (module docstring).

    Parameters
    ----------
    times : ndarray, shape (frames,)
    power : ndarray, shape (frames, L + 1)
        ``Q_l`` of each frame.
    beta : float
        The run's beta (> 0: marks ``l*``; otherwise none is drawn).
    n, d : int
        Tokens (the uniform level) and dimension (the theory's rates).
    frames : ndarray of int
        Frames drawn in the second panel.
    title, time_label : str
    """
    L = power.shape[1] - 1
    star = fastest_degree(beta, d) if beta > 0 else None
    fig = Figure(figsize=(6.4, 7.0), layout="constrained")
    ax1, ax2 = fig.subplots(2, 1)
    for l in range(1, min(L, TIME_DEGREES) + 1):
        bold = l == star
        ax1.plot(times, power[:, l], lw=2.6 if bold else 1.0, color="k" if bold else None,
                 label=f"l = {l}" + (" (l*)" if bold else ""), zorder=3 if bold else 2)
    ax1.set_yscale("log")
    pos = times[times > 0]
    if pos.size:
        ax1.set_xscale("symlog", linthresh=float(pos[0]))
        ax1.set_xlim(float(times[0]), float(times[-1]))
    ax1.set_xlabel(time_label)
    ax1.set_ylabel("normalised power Q_l")
    ax1.legend(fontsize=7, ncol=2)
    ls = np.arange(1, L + 1)
    for f in frames:
        ax2.plot(ls, power[f, 1:], marker="o", ms=3, label=f"t = {time_text(times[f])}")
    ax2.axhline(1.0 / n, color="k", ls=":", lw=1.0, label="uniform, n tokens (1/n)")
    if star is not None:
        ax2.axvline(star, color="k", ls="--", lw=1.2,
                    label=f"l* = {star}, fastest linear growth at beta = {value_text(beta)}")
    ax2.set_yscale("log")
    ax2.set_xlabel("degree l")
    ax2.set_ylabel("normalised power Q_l")
    ax2.legend(fontsize=7)
    what = {2: "Fourier", 3: "spherical-harmonic"}.get(d, "Gegenbauer")
    fig.suptitle(f"{what} power of the tokens by degree\n{title}", fontsize=10)
    return fig
