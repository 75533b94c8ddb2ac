"""Figures of mean-field density files (``particles plot field.h5 --kind density|compare``).

* :func:`density_figure`: the density ``rho(t, theta)`` as a (theta, t) heat
  map, beside profiles ``rho(theta)`` at a few times.
* :func:`compare_figure`: a particle run on the circle against the density,
  the histogram of the tokens' angles over ``rho`` at a few common times,
  and the exact Wasserstein-1 distance ``W1(t)`` between the tokens'
  empirical measure and the density (:func:`w1_against_density`); on S^2,
  :func:`~particles.plotting.compare_sphere.sphere_compare_figure` (maps and
  the sliced W1).
* :func:`plot_density_file` writes either as a picture; it is what the CLI
  calls.

Figures are built without pyplot (:class:`matplotlib.figure.Figure`), never
shown; outputs are checked with :func:`particles.paths.check_output_path`
before anything is drawn.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from particles.display import time_text, value_text
from particles.io import load
from particles.io.density import is_density_file, load_density
from particles.meanfield.wasserstein import w1_circle_density
from particles.paths import check_output_path
from particles.plotting.compare_sphere import sphere_compare_figure
from particles.plotting.density_sphere import sphere_density_figure
from particles.plotting.frames import (
    common_frames,
    nearest_frames,
    shared_frames,
    token_positions,
)
from particles.plotting.kernels import default_times
from particles.plotting.kinds import FigureKind, figure_kind, register_figures
from particles.plotting.save import save_figure
from particles.plotting.titles import particle_run_text, seed_text

__all__ = [
    "DENSITY_KINDS",
    "W1Curve",
    "common_frames",
    "compare_figure",
    "default_density_output",
    "density_figure",
    "density_title",
    "plot_density_file",
    "run_angles",
    "w1_against_density",
]

_TWO_PI = 2.0 * np.pi
_RHO = "\u03c1"  # written out: ruff takes the letter for a p


def default_density_output(path: str | os.PathLike, kind: str) -> Path:
    """``field.h5`` -> ``field_<kind>.png`` next to it."""
    p = Path(path)
    return p.with_name(f"{p.stem}_{kind}.png")


def density_title(config: Any) -> str:
    """``"mean field usa, β=9, D=0.01, M=256, init perturbed, seed 3"``."""
    parts = [f"mean field {config.model}", f"β={value_text(config.beta)}"]
    if config.model == "usa" and getattr(config, "usa_scale", "n") != "n":
        parts.append(f"usa_scale {config.usa_scale}")
    if config.D:
        parts.append(f"D={value_text(config.D)}")
    if config.model == "kuramoto" and getattr(config, "coupling", 1.0) != 1.0:
        parts.append(f"c={value_text(config.coupling)}")
    parts += [f"M={config.modes}", f"init {config.init}"]
    seed = seed_text(config.seed)
    if seed:
        parts.append(seed)
    return ", ".join(parts)


def _frames(times: np.ndarray, when: ArrayLike | None, k: int = 4) -> np.ndarray:
    """Frame indices nearest to ``when`` (default: about ``k`` spread over the run)."""
    if when is None:
        return default_times(times, k)
    return nearest_frames(times, when)


def _cell_edges(modes: int) -> np.ndarray:
    """Edges of the cells ``[theta_j - pi/M, theta_j + pi/M)``, shape (M + 1,)."""
    return (np.arange(modes + 1) - 0.5) * _TWO_PI / modes


def _periodic(theta: np.ndarray, rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The profile closed at ``2 pi`` (the value at theta_0 repeated), for line plots."""
    return np.append(theta, _TWO_PI), np.append(rho, rho[0])


def density_figure(result: Any, *, times: ArrayLike | None = None) -> Figure:
    """The density as a (theta, t) heat map beside profiles at a few times.

    Parameters
    ----------
    result : DensityResult
        ``theta`` (M,), ``times`` (F,), ``rho`` (F, M).
    times : array_like, optional
        Times of the profiles (the nearest saved frames); default about 4
        spread over the run, t = 0 and the last included.

    Returns
    -------
    matplotlib.figure.Figure
    """
    theta, t, rho = np.asarray(result.theta), np.asarray(result.times), np.asarray(result.rho)
    picks = _frames(t, times)
    fig = Figure(figsize=(11.0, 4.5), layout="constrained")
    heat, prof = fig.subplots(1, 2, width_ratios=(1.2, 1.0))
    if t.size > 1:
        t_edges = np.concatenate([[t[0]], (t[1:] + t[:-1]) / 2, [t[-1]]])
    else:
        t_edges = np.array([t[0] - 0.5, t[0] + 0.5])
    mesh = heat.pcolormesh(_cell_edges(theta.size), t_edges, rho, shading="flat",
                           cmap="viridis", rasterized=True)
    fig.colorbar(mesh, ax=heat, label=f"{_RHO}(t, θ)")
    heat.set_xlabel("θ")
    heat.set_ylabel("t")
    heat.set_xlim(-np.pi / theta.size, _TWO_PI - np.pi / theta.size)
    for f in picks:
        heat.axhline(t[f], color="w", lw=0.6, ls=":")
    colors = [f"C{i % 10}" for i in range(len(picks))]
    for f, c in zip(picks, colors, strict=True):
        prof.plot(*_periodic(theta, rho[f]), color=c, lw=1.2, label=f"t = {time_text(t[f])}")
    prof.axhline(1 / _TWO_PI, color="0.6", lw=0.8, ls="--", label="uniform 1/(2π)")
    prof.set_xlabel("θ")
    prof.set_ylabel(f"{_RHO}(θ)")
    prof.set_xlim(0, _TWO_PI)
    prof.legend(fontsize="small")
    _pi_ticks(heat)
    _pi_ticks(prof)
    complete = getattr(result, "complete", True)
    fig.suptitle(density_title(result.config) + ("" if complete else " (incomplete)"),
                 fontsize="medium")
    return fig


def _pi_ticks(ax) -> None:
    ax.set_xticks(np.arange(5) * np.pi / 2, ["0", "π/2", "π", "3π/2", "2π"])


def run_angles(traj: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """The tokens' angles per frame of a run on the circle, and their weights.

    Returns
    -------
    theta : ndarray, shape (frames, N)
        ``atan2(y, x)`` of every token (an ensemble pooled: N = batch * n).
    weights : ndarray, shape (N,) or None
        Token masses (None: equal).

    Raises
    ------
    ValueError
        The run is not on the circle (d != 2) or keeps no positions.
    """
    x, weights = token_positions(traj, 2, "the circle (d = 2)")
    return np.arctan2(x[..., 1], x[..., 0]), weights


@dataclass(frozen=True)
class W1Curve:
    """W1 between a run's tokens and the density at their common times.

    Attributes
    ----------
    times : ndarray, shape (K,)
    w1 : ndarray, shape (K,)
        ``W1(mu_n(t), rho(t))`` on the circle (arc length).
    run_frames, density_frames : ndarray of int, shape (K,)
        The frames of each file at those times.
    """

    times: np.ndarray
    w1: np.ndarray
    run_frames: np.ndarray
    density_frames: np.ndarray


def w1_against_density(traj: Any, density: Any) -> W1Curve:
    """W1(t) between a particle run on the circle and a mean-field density.

    Parameters
    ----------
    traj : Trajectory
        A run with d = 2 (an ensemble is pooled into one empirical measure).
    density : DensityResult

    Returns
    -------
    W1Curve
        At every time both files saved a frame.

    Raises
    ------
    ValueError
        Not on the circle, or no common save time.
    """
    theta, weights = run_angles(traj)
    i, j = shared_frames(traj.times, density.times)
    w1 = np.array([w1_circle_density(theta[a], density.rho[b], weights)
                   for a, b in zip(i, j, strict=True)])
    return W1Curve(np.asarray(traj.times)[i], w1, i, j)


def compare_figure(density: Any, traj: Any, *, times: ArrayLike | None = None) -> Figure:
    """Token angle histograms over the density at a few times, and W1(t).

    Parameters
    ----------
    density : DensityResult
    traj : Trajectory
        A particle run on the circle (d = 2).
    times : array_like, optional
        Times of the histogram panels (nearest common frames); default about 4.

    Returns
    -------
    matplotlib.figure.Figure
        Top row: one panel per time, the histogram (as a density) of the
        tokens' angles and the profile ``rho(theta)``.  Bottom: ``W1(t)``.
    """
    curve = w1_against_density(traj, density)
    theta, weights = run_angles(traj)
    picks = _frames(curve.times, times)
    fig = Figure(figsize=(3.2 * max(len(picks), 3), 6.5), layout="constrained")
    grid = fig.add_gridspec(2, len(picks), height_ratios=(1.0, 0.8))
    M = density.theta.size
    bins = max(8, min(M, int(np.sqrt(theta.shape[1]) * 2)))
    edges = np.linspace(0, _TWO_PI, bins + 1)
    for col, k in enumerate(picks):
        ax = fig.add_subplot(grid[0, col])
        a, b = curve.run_frames[k], curve.density_frames[k]
        ax.hist(np.mod(theta[a], _TWO_PI), bins=edges, weights=weights, density=True,
                color="0.75", label=f"tokens (n={theta.shape[1]})")
        ax.plot(*_periodic(np.asarray(density.theta), np.asarray(density.rho[b])),
                color="C3", lw=1.2, label=f"{_RHO} (mean field)")
        ax.set_title(f"t = {time_text(curve.times[k])}, W1 = {curve.w1[k]:.3g}", fontsize="small")
        ax.set_xlim(0, _TWO_PI)
        _pi_ticks(ax)
        ax.set_xlabel("θ")
        if col == 0:
            ax.set_ylabel("density")
            ax.legend(fontsize="x-small")
    ax = fig.add_subplot(grid[1, :])
    positive = curve.w1 > 0
    ax.plot(curve.times, curve.w1, "o-", ms=3, color="C0")
    if np.all(positive) and curve.w1.max() / curve.w1.min() > 20:
        ax.set_yscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel(f"W1(tokens, {_RHO})")
    ax.grid(alpha=0.3)
    what = particle_run_text(traj.config)
    fig.suptitle(f"{what}  vs  {density_title(density.config)}", fontsize="medium")
    return fig


def _draw_density(density: Any, run: Any, times: ArrayLike | None) -> Figure:
    sphere = density.weights is not None  # a solve on the sphere (S^2 or axisymmetric)
    return (sphere_density_figure if sphere else density_figure)(density, times=times)


def _draw_compare(density: Any, run: Any, times: ArrayLike | None) -> Figure:
    if density.weights is None:
        return compare_figure(density, run, times=times)
    if density.phi is None:
        raise ValueError("kind 'compare' draws densities on the circle and on S^2; this one "
                         "is axisymmetric (a density of the polar angle only)")
    return sphere_compare_figure(density, run, times=times)


#: figure kinds of a density file (``particles plot field.h5 --kind``; ``FIGURES["density"]``):
#: ``draw(density, run, times)``, ``run`` the particle run of a figure that ``needs`` ``other``.
DENSITY_KINDS: dict[str, FigureKind] = register_figures(
    "density", "density",
    FigureKind("density", "(density file) rho(t, theta) heat map and profiles at a few times",
               _draw_density, uses_times=True),
    FigureKind("compare", "(density file, --with RUN.h5 on the circle or S^2) the tokens' "
               "histograms against the density and W1(t) (S^2: sliced W1)", _draw_compare,
               uses_times=True, needs=("other",)),
)


def plot_density_file(
    path: str | os.PathLike,
    kind: str = "density",
    out: str | os.PathLike | None = None,
    *,
    other: str | os.PathLike | None = None,
    overwrite: bool = False,
    times: ArrayLike | None = None,
    dpi: int = 120,
) -> Path:
    """Plot a density file (what ``particles plot`` calls for one).

    Parameters
    ----------
    path : str or path-like
        A density file, or (``kind="compare"``) a particle run when ``other``
        is the density file.
    kind : {"density", "compare"}
    out : str or path-like, optional
        Default :func:`default_density_output` (``field_<kind>.png`` next to it).
    other : str or path-like, optional
        ``compare``: the particle run on the circle or S^2 (or the density file).
    overwrite : bool
        Replace an existing output.
    times : array_like, optional
        Times of the profiles / histogram panels.
    dpi : int

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    ValueError
        Unknown kind, ``other`` missing or given for ``density``, or the files
        do not fit (not on the density's circle or sphere, no common time).
    TrajectoryFileError
        A file that is not what it should be.
    OutputPathError
        ``out`` exists (without ``overwrite``) or cannot be written.
    """
    entry = figure_kind("density", kind)
    if "other" in entry.needs and other is None:
        raise ValueError(f"kind {kind!r} needs the particle run to compare with (--with RUN.h5)")
    if "other" not in entry.needs and other is not None:
        paired = " or ".join(repr(k.name) for k in DENSITY_KINDS.values() if "other" in k.needs)
        raise ValueError(f"--with is for kind {paired}")
    field_path, run_path = Path(path), None if other is None else Path(other)
    if run_path is not None and not is_density_file(field_path) and is_density_file(run_path):
        field_path, run_path = run_path, field_path  # given the other way round
    out = check_output_path(default_density_output(field_path, kind) if out is None else out,
                            overwrite=overwrite, resumable=False)
    density = load_density(field_path)
    fig = entry.draw(density, None if run_path is None else load(run_path), times)
    return save_figure(fig, out, overwrite=overwrite, dpi=dpi)
