"""Figures of a model comparison (``particles compare``).

:func:`comparison_figure` draws the order parameter ``r(t)``, the cluster
count and the normalised energy of every model on shared axes, above one
circle panel per model; :func:`plot_comparison` writes it as a PNG.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from particles.analysis import DEFAULT_EPS, cluster_sizes_centers, component_labels
from particles.analysis.comparison import ComparisonResult, model_label
from particles.display import time_text, value_text
from particles.errors import ConfigError
from particles.paths import check_output_path
from particles.plotting.save import save_figure
from particles.trajectory import Trajectory

__all__ = ["STYLES", "comparison_figure", "log_time", "plot_comparison"]

#: colour and line style per model (and per kernel): identical curves (beta = 0) stay visible
STYLES = (
    ("tab:blue", "-"),
    ("tab:orange", "--"),
    ("tab:green", ":"),
    ("tab:red", "-."),
    ("tab:purple", "-"),
)


def _as_result(
    source: ComparisonResult | Mapping[str, Trajectory] | str | os.PathLike,
) -> ComparisonResult:
    if isinstance(source, ComparisonResult):
        return source
    if isinstance(source, Mapping):
        trajs = dict(source)
        if not trajs:
            raise ValueError("no trajectories to plot")
        return ComparisonResult(None, trajs, int(next(iter(trajs.values())).config.seed))
    return ComparisonResult.from_file(source)


def log_time(times: np.ndarray) -> bool:
    """Log time when the positive output times span at least a decade."""
    pos = times[times > 0]
    return pos.size >= 2 and pos[-1] >= 10 * pos[0]


def _model_title(t: Trajectory) -> str:
    cfg = t.config
    label = model_label(cfg.model)
    if cfg.model == "kuramoto":
        parts = [f"c={value_text(cfg.coupling)}"]
        if isinstance(cfg.omega, str):
            parts.append(f"ω~{cfg.omega}")
        elif cfg.omega is not None:
            parts.append("ω given")
        label += f" ({', '.join(parts)})"
    elif cfg.model == "usa" and cfg.usa_scale != "n":
        label += f" ({cfg.usa_scale})"
    return label


def _draw_circle(ax, traj: Trajectory, initial: np.ndarray, color: str, eps: float) -> None:
    """Final clusters of one model (marker area ∝ size), the start in grey, r e^{i psi}."""
    final = traj.final
    n = final.shape[0]
    labels, count = component_labels(final, eps)
    count = int(count)
    sizes, centers = cluster_sizes_centers(final, labels, count)
    s = np.linspace(0, 2 * np.pi, 361)
    ax.plot(np.cos(s), np.sin(s), color="0.75", linewidth=1.0, zorder=0)
    # the shared start, inside the circle so that it never hides the end state
    ax.scatter(*(0.8 * initial).T, s=5, color="0.65", linewidths=0, zorder=1)
    ax.scatter(
        *centers.T,
        s=8 + 250 * sizes / n,
        color=color,
        alpha=0.85,
        edgecolors="k",
        linewidths=0.4,
        zorder=3,
    )
    if count <= 8:  # sizes as numbers while they stay readable
        for size, c in zip(sizes, centers, strict=True):
            if size > 1:
                ax.text(*(1.22 * c), str(size), ha="center", va="center", fontsize=8)
    z = final.mean(axis=0)
    r = float(np.hypot(*z))
    if r > 0.02:
        ax.annotate(
            "",
            xy=tuple(z),
            xytext=(0.0, 0.0),
            zorder=4,
            arrowprops=dict(arrowstyle="-|>", color=color, lw=1.4),
        )
    ax.set_aspect("equal")
    ax.set_xlim(-1.35, 1.35)
    ax.set_ylim(-1.35, 1.35)
    ax.set_axis_off()
    ax.set_title(
        f"{model_label(traj.config.model)} at t={time_text(traj.times[-1])}\n"
        f"{count} cluster{'s' * (count != 1)}, r={r:.2f}",
        fontsize=9,
        color=color,
    )


def comparison_figure(
    source: ComparisonResult | Mapping[str, Trajectory] | str | os.PathLike,
    *,
    eps: float = DEFAULT_EPS,
):
    """Figure of a comparison: r(t), cluster count and energy, then one circle per model.

    Parameters
    ----------
    source : ComparisonResult, dict of str to Trajectory, or path
        The comparison (a path is read with :func:`load_comparison`).
    eps : float
        Cluster linking distance (radians) of the counts.

    Returns
    -------
    matplotlib.figure.Figure
        Built without pyplot (nothing shown); three line panels sharing a
        time axis (log time when the output times span a decade or more;
        frames at t = 0 are then left out) with one line per model, and a
        row of circle panels: each model's final tokens (coloured by
        cluster), the shared initial tokens in grey on an inner circle and
        the order parameter as an arrow.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    result = _as_result(source)
    trajs = result.trajectories
    k = len(trajs)
    first = next(iter(trajs.values()))
    cfg = first.config
    counts = result.cluster_counts(eps)
    log = log_time(first.times)

    fig = Figure(figsize=(max(8.0, 3.0 * k), 10.5), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[2.5, 1.0])
    ax_r, ax_c, ax_e = top.subplots(3, 1, sharex=True)
    for i, (m, t) in enumerate(trajs.items()):
        color, style = STYLES[i % len(STYLES)]
        keep = t.times > 0 if log else np.ones(t.frames, dtype=bool)
        x = t.times[keep]
        kw = dict(color=color, linestyle=style, linewidth=1.7)
        ax_r.plot(x, t.observables["order_parameter"][keep], label=_model_title(t), **kw)
        ax_c.step(x, counts[m][keep], where="post", **kw)
        ax_e.plot(x, t.observables["energy_normalized"][keep], **kw)
    if log:
        ax_e.set_xscale("log")
    ax_r.set_ylim(0, 1.05)
    ax_r.set_ylabel("order parameter r")
    ax_r.legend(loc="best", fontsize=9)
    top_count = max(int(c.max()) for c in counts.values())
    if top_count > 40:
        ax_c.set_yscale("log")
    else:
        ax_c.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax_c.set_ylim(0, top_count + 1)
    ax_c.set_ylabel(f"clusters (eps={value_text(eps)})")
    ax_e.set_ylim(0, 1.05)
    ax_e.set_ylabel("normalised energy\n" + r"$2\beta e^{-\beta}E_\beta$")
    ax_e.set_xlabel("time t" + (" (log)" if log else ""))
    for ax in (ax_r, ax_c, ax_e):
        ax.grid(True, which="major", color="0.9", linewidth=0.6)
    top.suptitle(
        f"n={cfg.n}, β={value_text(cfg.beta)}: {', '.join(map(model_label, trajs))} "
        "from the same initial condition"
    )

    circles = np.atleast_1d(bottom.subplots(1, k))
    for i, (ax, t) in enumerate(zip(circles, trajs.values(), strict=True)):
        _draw_circle(ax, t, result.initial, STYLES[i % len(STYLES)][0], eps)
    bottom.supxlabel(
        "final clusters: marker area ∝ size (sizes > 1 written when at most 8)\n"
        r"grey: shared initial tokens (at radius 0.8); arrow: $r\,e^{i\psi}$",
        fontsize=8,
        color="0.35",
    )
    return fig


def plot_comparison(
    source: ComparisonResult | Mapping[str, Trajectory] | str | os.PathLike,
    out: str | os.PathLike,
    *,
    overwrite: bool = False,
    eps: float = DEFAULT_EPS,
    dpi: int = 120,
) -> Path:
    """Draw :func:`comparison_figure` and write it as a PNG (Agg; nothing shown).

    Parameters
    ----------
    source : ComparisonResult, dict of str to Trajectory, or path
        The comparison.
    out : str or path-like
        Output PNG.
    overwrite : bool
        Replace an existing ``out``.
    eps : float
        Cluster linking distance (radians).
    dpi : int
        Resolution.

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    particles.errors.OutputExistsError
        ``out`` exists and ``overwrite`` is False (checked before drawing; also
        a ``FileExistsError``).
    particles.errors.OutputPathError
        ``out`` is a directory, or its directory is missing or read-only.
    """
    out = check_png_path(out, overwrite=overwrite)
    figure = comparison_figure(source, eps=eps)
    return save_figure(figure, out, overwrite=overwrite, dpi=dpi)


def check_png_path(out: str | os.PathLike, *, overwrite: bool) -> Path:
    """``out`` may take a PNG: its name ends in ``.png`` and
    :func:`~particles.paths.check_output_path` accepts it.

    Raises
    ------
    ConfigError
        Another extension (field ``plot``).
    OutputPathError
        As :func:`~particles.paths.check_output_path`.
    """
    if Path(out).suffix.lower() != ".png":
        raise ConfigError(f"plot must be a .png file, got {os.fspath(out)!r}", "plot")
    return check_output_path(out, overwrite=overwrite, resumable=False)
