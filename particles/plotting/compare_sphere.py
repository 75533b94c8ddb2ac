"""A particle run on S^2 against a mean-field density on S^2
(``particles plot field.h5 --kind compare --with RUN.h5``).

* :func:`sliced_against_density`: the sliced W1 distance
  (:func:`particles.meanfield.sliced.sliced_w1_density`) between the tokens'
  empirical measure and the density at every time both files saved.
* :func:`sphere_compare_figure`: at a few of those times the density and the
  tokens' histogram side by side on the same Mollweide projection (one colour
  scale per time), and the distance over time below.

The histogram's cells are equal in area (equal steps in ``cos theta`` and in
longitude), as many as keep about 16 tokens a cell, so its values are
``count / (n * cell area)``, relative to the uniform measure like the density.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from particles.display import time_text
from particles.meanfield.sliced import DIRECTIONS, sliced_w1_density
from particles.plotting.density_sphere import grid_edges, mollweide_map, sphere_density_title
from particles.plotting.frames import nearest_frames, shared_frames, token_positions
from particles.plotting.kernels import default_times
from particles.plotting.titles import particle_run_text

__all__ = ["SlicedCurve", "sliced_against_density", "sphere_compare_figure", "token_histogram"]

#: tokens per histogram cell aimed at (the histogram's resolution).
TOKENS_PER_CELL = 16

_RHO = "\u03c1"  # written out: ruff takes the letter for a p


@dataclass(frozen=True)
class SlicedCurve:
    """The sliced W1 between a run's tokens and the density at their common times.

    Attributes
    ----------
    times : ndarray, shape (K,)
    distance : ndarray, shape (K,)
        ``SW1(mu_n(t), rho(t))`` (:mod:`particles.meanfield.sliced`, its default
        seeded directions).
    run_frames, density_frames : ndarray of int, shape (K,)
        The frames of each file at those times.
    """

    times: np.ndarray
    distance: np.ndarray
    run_frames: np.ndarray
    density_frames: np.ndarray


def _tokens(traj: Any) -> tuple[np.ndarray, np.ndarray | None]:
    return token_positions(traj, 3, "S^2 (d = 3) to compare with a density on S^2")


def sliced_against_density(traj: Any, density: Any) -> SlicedCurve:
    """Sliced W1(t) between a particle run on S^2 and a mean-field density on S^2.

    Parameters
    ----------
    traj : Trajectory
        A run with d = 3 (an ensemble is pooled into one empirical measure).
    density : StoredDensity
        A density file's contents of a solve on S^2 (``rho`` (F, ntheta, nphi),
        ``theta``, ``phi``, ``weights``, ``config.lmax``).

    Returns
    -------
    SlicedCurve
        At every time both files saved.

    Raises
    ------
    ValueError
        The run is not on S^2 or keeps no positions, or no common save time.
    """
    x, weights = _tokens(traj)
    i, j = shared_frames(traj.times, density.times)
    grid = (np.asarray(density.theta), np.asarray(density.phi), np.asarray(density.weights),
            int(density.config.lmax))
    distance = np.array([sliced_w1_density(x[a], density.rho[b], *grid, masses=weights)
                         for a, b in zip(i, j, strict=True)])
    return SlicedCurve(np.asarray(traj.times)[i], distance, i, j)


def token_histogram(x: np.ndarray, weights: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The tokens' density relative to the uniform measure on equal-area cells.

    Parameters
    ----------
    x : ndarray, shape (n, 3)
        Points on S^2.
    weights : ndarray, shape (n,), optional
        Masses (default equal).

    Returns
    -------
    lon : ndarray, shape (nlon + 1,)
        Longitude edges in ``[-pi, pi]`` (``phi - pi``, as the density's maps).
    lat : ndarray, shape (nlat + 1,)
        Latitude edges, decreasing from ``pi / 2`` (equal steps in ``sin(lat)``).
    values : ndarray, shape (nlat, nlon)
        Mass of each cell over its area fraction (1 = uniform);
        ``nlon = 2 nlat``, about :data:`TOKENS_PER_CELL` tokens a cell.
    """
    n = x.shape[0]
    nlat = int(np.clip(np.sqrt(n / (2 * TOKENS_PER_CELL)), 2, 90))
    nlon = 2 * nlat
    z_edges = np.linspace(1.0, -1.0, nlat + 1)  # north first, as the density's rings
    lon_edges = np.linspace(-np.pi, np.pi, nlon + 1)
    z = np.clip(x[:, 2], -1.0, 1.0)
    lon = np.mod(np.arctan2(x[:, 1], x[:, 0]), 2 * np.pi) - np.pi
    m = np.full(n, 1.0 / n) if weights is None else np.asarray(weights) / np.sum(weights)
    counts, _, _ = np.histogram2d(-z, lon, bins=(-z_edges, lon_edges), weights=m)
    return lon_edges, np.arcsin(z_edges), counts * (nlat * nlon)


def sphere_compare_figure(density: Any, traj: Any, *, times: ArrayLike | None = None
                          ) -> Figure:
    """The density beside the tokens' histogram at a few times, and the sliced W1(t).

    Parameters
    ----------
    density : StoredDensity
        A density file's contents of a solve on S^2.
    traj : Trajectory
        A particle run on S^2 (d = 3).
    times : array_like, optional
        Times of the map panels (nearest common frames); default about 3.

    Returns
    -------
    matplotlib.figure.Figure
        One column per time: the density (top) and the histogram (middle) on
        the same Mollweide projection and colour scale; bottom: the distance.
    """
    curve = sliced_against_density(traj, density)
    x, weights = _tokens(traj)
    picks = (default_times(curve.times, 3) if times is None
             else nearest_frames(curve.times, times))
    fig = Figure(figsize=(4.6 * max(len(picks), 2), 8.0), layout="constrained")
    grid = fig.add_gridspec(3, len(picks), height_ratios=(1.0, 1.0, 0.9))
    lon, lat = grid_edges(np.asarray(density.theta), np.asarray(density.phi))
    for col, k in enumerate(picks):
        a, b = curve.run_frames[k], curve.density_frames[k]
        rho = np.asarray(density.rho[b])
        h_lon, h_lat, hist = token_histogram(x[a], weights)
        scale = {"vmin": 0.0, "vmax": float(max(rho.max(), 1.0))}
        when = f"t = {time_text(curve.times[k])}"
        mollweide_map(fig, fig.add_subplot(grid[0, col], projection="mollweide"), lon, lat,
                      rho, f"mean field, {when}", **scale)
        mollweide_map(fig, fig.add_subplot(grid[1, col], projection="mollweide"), h_lon,
                      h_lat, hist, f"tokens (n={x.shape[1]}), SW1 = {curve.distance[k]:.3g}",
                      **scale)
    ax = fig.add_subplot(grid[2, :])
    ax.plot(curve.times, curve.distance, "o-", ms=3, color="C0")
    positive = curve.distance > 0
    if np.all(positive) and curve.distance.max() / curve.distance.min() > 20:
        ax.set_yscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel(f"sliced W1 (tokens, {_RHO}), {DIRECTIONS} directions")
    ax.grid(alpha=0.3)
    fig.suptitle(f"{particle_run_text(traj.config)}  vs  "
                 f"{sphere_density_title(density.config)}", fontsize="medium")
    return fig
