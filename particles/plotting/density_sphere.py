"""Figures of mean-field densities on the sphere (``particles plot field.h5 --kind density``
of a solve made with ``particles meanfield --d 3`` or ``--axisymmetric``).

* S^2: the density at a few times as Mollweide heat maps (longitude, latitude;
  the grid's cells drawn flat, each panel on its own colour scale).
* Axisymmetric on S^{d-1}: the density ``f(t, theta)`` as a (theta, t) heat
  map beside profiles ``f(theta)`` at a few times.

Densities are relative to the uniform measure (1 = uniform).  Built without
pyplot (:class:`matplotlib.figure.Figure`), never shown.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from particles.display import time_text, value_text
from particles.meanfield.zonal import gegenbauer
from particles.plotting.frames import nearest_frames
from particles.plotting.kernels import default_times
from particles.plotting.titles import seed_text

__all__ = ["grid_edges", "mollweide_map", "sphere_density_figure", "sphere_density_title"]


def sphere_density_title(config: Any) -> str:
    """``"mean field sa on S^2, β=5, D=0.01, lmax=64, init perturbed, seed 3"``."""
    where = f"S^{config.d - 1}" + (" (axisymmetric)" if config.axisymmetric else "")
    parts = [f"mean field {config.model} on {where}", f"β={value_text(config.beta)}"]
    if config.model == "usa" and config.usa_scale != "n":
        parts.append(f"usa_scale {config.usa_scale}")
    if config.D:
        parts.append(f"D={value_text(config.D)}")
    parts += [f"lmax={config.lmax}", f"init {config.init}"]
    seed = seed_text(config.seed)
    if seed:
        parts.append(seed)
    return ", ".join(parts)


def _edges(centres: np.ndarray, low: float, high: float) -> np.ndarray:
    """Cell edges around increasing ``centres``: midpoints, closed by ``low`` and ``high``."""
    return np.concatenate([[low], (centres[1:] + centres[:-1]) / 2, [high]])


def _picks(times: np.ndarray, when: ArrayLike | None, k: int = 4) -> np.ndarray:
    return default_times(times, k) if when is None else nearest_frames(times, when)


def sphere_density_figure(result: Any, *, times: ArrayLike | None = None) -> Figure:
    """The density of a solve on the sphere at a few times.

    Parameters
    ----------
    result : StoredDensity
        A density file's contents (:func:`particles.io.density.load_density`) of a
        :class:`~particles.meanfield.sphere_config.SphereFieldConfig` solve: ``theta``,
        ``phi`` (S^2), ``times`` (F,), ``rho`` (F, ntheta, nphi) or (F, N).
    times : array_like, optional
        Times to draw (the nearest saved frames); default about 4 spread over the run.

    Returns
    -------
    matplotlib.figure.Figure
    """
    t, rho = np.asarray(result.times), np.asarray(result.rho)
    theta = np.asarray(result.theta)
    picks = _picks(t, times)
    if rho.ndim == 3:
        fig = _mollweide(theta, np.asarray(result.phi), t, rho, picks)
    else:
        fine = np.linspace(0.0, np.pi, 241)
        fig = _axisymmetric(fine, t, _resample(result.config, theta, np.asarray(result.weights),
                                               rho, fine), picks)
    complete = getattr(result, "complete", True)
    fig.suptitle(sphere_density_title(result.config) + ("" if complete else " (incomplete)"),
                 fontsize="medium")
    return fig


def grid_edges(theta: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Longitude (centred on 0: ``phi - pi``) and latitude edges of the grid's cells,
    shapes (nphi + 1,) and (ntheta + 1,), for a Mollweide ``pcolormesh``."""
    lon = _edges(phi, phi[0] - np.pi / phi.size, phi[-1] + np.pi / phi.size) - np.pi
    return lon, np.pi / 2 - _edges(theta, 0.0, np.pi)


def mollweide_map(fig: Figure, ax: Any, lon: np.ndarray, lat: np.ndarray, values: np.ndarray,
                  title: str, **mesh: Any) -> None:
    """Cells drawn flat on a Mollweide axes, with a colour bar and a faint graticule.

    ``values`` (len(lat) - 1, len(lon) - 1); ``mesh``: more ``pcolormesh`` options
    (``vmin``, ``vmax``).
    """
    quad = ax.pcolormesh(lon, lat, values, shading="flat", cmap="viridis", rasterized=True,
                         **mesh)
    fig.colorbar(quad, ax=ax, shrink=0.7, label="density (1 = uniform)")
    ax.set_title(title, fontsize="small")
    ax.set_xticklabels([])
    ax.set_yticklabels([])
    ax.grid(True, lw=0.3, color="w", alpha=0.5)


def _mollweide(theta, phi, t, rho, picks) -> Figure:
    ncols = min(2, len(picks))
    nrows = -(-len(picks) // ncols)
    fig = Figure(figsize=(5.5 * ncols, 3.2 * nrows + 0.6), layout="constrained")
    lon, lat = grid_edges(theta, phi)
    for i, f in enumerate(picks):
        ax = fig.add_subplot(nrows, ncols, i + 1, projection="mollweide")
        mollweide_map(fig, ax, lon, lat, rho[f], f"t = {time_text(t[f])}")
    return fig


def _resample(config: Any, theta: np.ndarray, weights: np.ndarray, rho: np.ndarray,
              fine: np.ndarray) -> np.ndarray:
    """The band-limited densities (F, N) on the Gauss nodes ``theta``, evaluated at the
    polar angles ``fine`` through their Gegenbauer coefficients (exact), (F, len(fine))."""
    q_nodes = gegenbauer(config.d, config.lmax, np.cos(theta))[0]
    q_fine = gegenbauer(config.d, config.lmax, np.cos(fine))[0]
    return (rho * weights) @ q_nodes.T @ q_fine


def _axisymmetric(theta, t, rho, picks) -> Figure:
    fig = Figure(figsize=(11.0, 4.5), layout="constrained")
    heat, prof = fig.subplots(1, 2, width_ratios=(1.2, 1.0))
    t_edges = _edges(t, t[0], t[-1]) if t.size > 1 else np.array([t[0] - 0.5, t[0] + 0.5])
    mesh = heat.pcolormesh(_edges(theta, 0.0, np.pi), t_edges, rho, shading="flat",
                           cmap="viridis", rasterized=True)
    fig.colorbar(mesh, ax=heat, label="f(t, θ) (1 = uniform)")
    heat.set_xlabel("polar angle θ")
    heat.set_ylabel("t")
    for i, f in enumerate(picks):
        heat.axhline(t[f], color="w", lw=0.6, ls=":")
        prof.plot(theta, rho[f], color=f"C{i % 10}", lw=1.2, label=f"t = {time_text(t[f])}")
    prof.axhline(1.0, color="0.6", lw=0.8, ls="--", label="uniform")
    prof.set_xlabel("polar angle θ")
    prof.set_ylabel("f(θ)")
    prof.set_xlim(0, np.pi)
    prof.legend(fontsize="small")
    return fig
