"""Figures of a kernel comparison (``particles kernels``).

:func:`kernel_comparison_figure` draws the cluster counts of every kernel on
one time axis above a grid of pair inner-product histograms (one row per
kernel, one column per chosen time); :func:`plot_kernel_comparison` writes
it as a PNG.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from particles.analysis.comparison import KernelComparison
from particles.display import time_text, value_text
from particles.paths import check_output_path
from particles.plotting.axes import plot_histogram
from particles.plotting.compare import STYLES, log_time
from particles.plotting.frames import nearest_frames
from particles.plotting.save import save_figure
from particles.plotting.titles import SHORT_SEED_DIGITS, seed_text

__all__ = ["default_times", "kernel_comparison_figure", "plot_kernel_comparison"]


def default_times(times: ArrayLike, k: int = 4) -> np.ndarray:
    """Indices of about ``k`` frames spread over a run, the first and last included.

    The frames in between are log-spaced in time when the output times span a
    decade or more (from ``max(first positive time, 1e-4 T)``), evenly spaced
    frames otherwise.

    Returns
    -------
    ndarray of int, shape (<= k,)
        Increasing frame indices.
    """
    times = np.asarray(times, dtype=float)
    F = times.size
    if F <= k:
        return np.arange(F)
    if log_time(times):
        pos = times[times > 0]
        inner = np.geomspace(max(pos[0], 1e-4 * times[-1]), times[-1], k)[1:-1]
        near = [int(np.argmin(np.abs(np.log(np.maximum(times, pos[0]) / t)))) for t in inner]
        return np.unique([0, *near, F - 1])
    return np.unique(np.round(np.linspace(0, times.size - 1, min(k, times.size))).astype(int))


def _frames(times: np.ndarray, when: ArrayLike | None) -> np.ndarray:
    if when is None:
        return default_times(times)
    return nearest_frames(times, when)


def kernel_comparison_figure(result: KernelComparison, *, times: ArrayLike | None = None):
    """Figure of a kernel comparison: cluster counts over time, then a histogram grid.

    Parameters
    ----------
    result : KernelComparison
    times : array_like, optional
        Times of the histogram columns (the nearest saved frames); default
        :func:`default_times` (about 4, t = 0 and T included).

    Returns
    -------
    matplotlib.figure.Figure
        Built without pyplot.  Top: cluster count against time, one line per
        kernel (log time when the output times span a decade; t = 0 is then
        left out).  Below: one row per kernel, one column per time, the
        density of pair inner products on a log scale.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    frames = _frames(result.times, times)
    runs = list(result.runs.values())
    rows, cols = len(runs), len(frames)
    x0 = result.x0
    log = log_time(result.times)

    fig = Figure(figsize=(max(8.0, 2.4 * cols + 1.5), 3.4 + 1.7 * rows), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[3.4, 1.7 * rows])
    ax_c = top.subplots()
    keep = result.times > 0 if log else np.ones(result.times.size, dtype=bool)
    for i, run in enumerate(runs):
        color, style = STYLES[i % len(STYLES)]
        ax_c.step(result.times[keep], run.clusters[keep], where="post", color=color,
                  linestyle=style, linewidth=1.8, label=run.label)
    if log:
        ax_c.set_xscale("log")
    top_count = max(int(run.clusters.max()) for run in runs)
    if top_count > 40:
        ax_c.set_yscale("log")
    else:
        ax_c.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax_c.set_ylim(0, top_count + 1)
    for f in frames:  # where the histogram columns are
        if result.times[f] > 0 or not log:
            ax_c.axvline(result.times[f], color="0.8", linewidth=0.8, linestyle=":", zorder=0)
    ax_c.set_xlabel("time t" + (" (log)" if log else ""))
    ax_c.set_ylabel(f"clusters (eps={value_text(result.eps)}; 0: spread)")
    ax_c.grid(True, which="major", color="0.9", linewidth=0.6)
    ax_c.legend(loc="best", fontsize=9)
    cfg = runs[0].trajectory.config
    # no data file goes with this figure: its seed is written in full (a long
    # entropy seed on a line of its own), and in the image's metadata
    seed = seed_text(result.seed, full=True)
    short = len(seed) <= len("seed ") + SHORT_SEED_DIGITS
    top.suptitle(
        f"{cfg.model.upper()}, n={x0.shape[0]}, d={x0.shape[1]}, β={value_text(cfg.beta)}"
        + (f", {seed}" if short else "")
        + f": {len(runs)} kernels from the same initial tokens" + ("" if short else f"\n{seed}")
    )

    grid = np.asarray(bottom.subplots(rows, cols, sharex=True, sharey=True, squeeze=False))
    for i, run in enumerate(runs):
        color = STYLES[i % len(STYLES)][0]
        for j, f in enumerate(frames):
            ax = grid[i, j]
            plot_histogram((result.bin_edges, run.histograms[f]), ax, log=True,
                           color=color, alpha=0.75)
            c = int(run.clusters[f])
            what = "spread" if c == 0 else f"{c} cluster{'s' * (c != 1)}"  # 0: spread
            ax.set_title(f"t={time_text(result.times[f])}: {what}", fontsize=9)
            ax.tick_params(labelsize=8)
            if i < rows - 1:
                ax.set_xlabel("")
            if j:
                ax.set_ylabel("")
            else:
                ax.set_ylabel(f"{run.label}\ndensity", fontsize=9, color=color)
    bottom.suptitle("pair inner products ⟨x_i, x_j⟩ (log density)", fontsize=10)
    return fig


def plot_kernel_comparison(
    result: KernelComparison,
    out: str | os.PathLike,
    *,
    overwrite: bool = False,
    times: ArrayLike | None = None,
    dpi: int = 120,
) -> Path:
    """Draw :func:`kernel_comparison_figure` and write it as a PNG (Agg; nothing shown).

    Parameters
    ----------
    result : KernelComparison
    out : str or path-like
        Output PNG (the seed, kernels, configuration and versions in its
        metadata, :func:`record`).
    overwrite : bool
        Replace an existing ``out``.
    times : array_like, optional
        Times of the histogram columns (see :func:`kernel_comparison_figure`).
    dpi : int
        Resolution.

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    particles.io.OutputPathError
        ``out`` exists and ``overwrite`` is False, is a directory, or its
        directory is missing or read-only (checked before drawing).
    ValueError
        ``times`` outside the run.
    """
    out = check_output_path(out, overwrite=overwrite, resumable=False)
    return save_figure(kernel_comparison_figure(result, times=times), out, overwrite=overwrite,
                       dpi=dpi, record=record(result))


def record(result: KernelComparison) -> dict[str, str]:
    """What remakes the figure (:mod:`particles.plotting.record`): the seed, the
    kernels, the configuration the tokens were drawn with, the software versions."""
    from particles.io.hdf5 import software_versions

    out = {"seed": str(result.seed), "kernels": ",".join(result.kernels),
           "eps": repr(result.eps)}
    if result.config is not None:
        out["config"] = result.config.to_json()
    out["versions"] = json.dumps(software_versions(), sort_keys=True)
    return out
