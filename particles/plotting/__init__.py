"""Pictures of runs: histograms, tokens on the sphere, clusters, energy, movies.

Two layers:

* Plot functions ``f(..., ax=None) -> ax`` draw into given axes (or a new
  figure's axes when ``ax`` is None); they never show or save.
* :func:`make_figure` assembles a whole figure of one :data:`KINDS` from a
  trajectory and its analysis; :func:`save_plot` and :func:`plot_file`
  write it to disk (PNG, or GIF for ``"movie"``) and are what the CLI calls.

Figures are built as :class:`matplotlib.figure.Figure` objects, never through
pyplot, so no GUI backend is touched (saving uses Agg) and nothing leaks
between calls.  Log-time axes cannot show ``t = 0``: frames at ``t = 0`` are
left out of them.

This package module draws single runs; one module per further figure family:
:mod:`particles.plotting.compare` (model comparisons) and
:mod:`particles.plotting.kernels` (kernel comparisons).  Every writer checks
its output path with :func:`particles.paths.check_output_path` before drawing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from particles.analysis import AnalysisResult, InnerProductHistogram, analyze
from particles.display import time_text, value_text
from particles.paths import check_output_path, replacing
from particles.plotting.frames import nearest_frames
from particles.plotting.harmonics import mode_power, modes_figure
from particles.plotting.save import save_figure
from particles.plotting.titles import run_title, time_label

#: kind drawn when none is asked for.
DEFAULT_KIND = "clusters"

_FAST = "0.6"  # colour of fast-phase merge marks
_SLOW = "tab:red"  # colour of slow (metastable) merge marks
_FORMATION = "tab:green"


# ---------------------------------------------------------------- helpers


def _new_axes(projection: str | None = None, figsize=(5.0, 4.0)) -> Axes:
    fig = Figure(figsize=figsize, layout="constrained")
    return fig.add_subplot(projection=projection)


def _clusters_text(k: int) -> str:
    """``"3 clusters"``, ``"1 cluster"``, or ``"spread"`` for a count of 0."""
    return "spread (no clusters)" if k == 0 else f"{k} cluster{'s' if k != 1 else ''}"


def _positive(times: np.ndarray) -> np.ndarray:
    """Mask of frames a log-time axis can show."""
    return np.asarray(times) > 0


def _cluster_colors(labels: np.ndarray | None, n: int) -> np.ndarray:
    """RGBA colour per token: one colour per cluster, largest cluster first."""
    from matplotlib import colormaps

    if labels is None:
        return np.tile(np.array([0.12, 0.47, 0.71, 1.0]), (n, 1))
    uniq, inv, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[np.argsort(-sizes, kind="stable")] = np.arange(uniq.size)
    cmap = colormaps["tab10" if uniq.size <= 10 else "tab20"]
    return cmap(rank[inv.ravel()] % cmap.N)


def principal_directions(x: np.ndarray, k: int = 3) -> np.ndarray:
    """Top-k eigenvectors of the pooled second moment ``sum x^T x`` of tokens.

    Parameters
    ----------
    x : ndarray, shape (..., n, d)
        Tokens (all leading axes pooled).
    k : int
        Number of directions.

    Returns
    -------
    ndarray, shape (d, k)
        Orthonormal columns, largest eigenvalue first.
    """
    flat = np.asarray(x, dtype=np.float64).reshape(-1, x.shape[-1])
    _, v = np.linalg.eigh(flat.T @ flat)
    return v[:, ::-1][:, :k]


def _arcs(path: np.ndarray, sub: int = 4) -> np.ndarray:
    """Refine a token path (frames, d) by normalised linear interpolation.

    Consecutive saved frames can be far apart; joining them by chords would
    cut through the sphere, so each segment gets ``sub`` points on the sphere.
    """
    if path.shape[0] < 2:
        return path
    s = np.linspace(0.0, 1.0, sub, endpoint=False)
    seg = path[:-1, None, :] * (1 - s)[None, :, None] + path[1:, None, :] * s[None, :, None]
    pts = np.concatenate([seg.reshape(-1, path.shape[1]), path[-1:]])
    norms = np.linalg.norm(pts, axis=1, keepdims=True)
    return pts / np.where(norms > 0, norms, 1.0)


def _sphere_wireframe(ax: Axes) -> None:
    """A faint unit sphere on 3-D axes, equal aspect, no axis clutter."""
    u = np.linspace(0, 2 * np.pi, 25)
    v = np.linspace(0, np.pi, 13)
    ax.plot_wireframe(
        np.outer(np.cos(u), np.sin(v)),
        np.outer(np.sin(u), np.sin(v)),
        np.outer(np.ones_like(u), np.cos(v)),
        color="0.85",
        linewidth=0.4,
    )
    ax.set_box_aspect((1, 1, 1), zoom=1.3)
    for setter in (ax.set_xlim, ax.set_ylim, ax.set_zlim):
        setter(-1.0, 1.0)
    # coordinates carry no meaning on the sphere (nor after a projection)
    ax.set_axis_off()


def _unit_circle(ax: Axes) -> None:
    t = np.linspace(0, 2 * np.pi, 361)
    ax.plot(np.cos(t), np.sin(t), color="0.75", linewidth=1.0, zorder=0)
    ax.set_aspect("equal")
    ax.set_xlim(-1.12, 1.12)
    ax.set_ylim(-1.12, 1.12)
    ax.set_axis_off()


def _time_radius(times: np.ndarray | None, frames: int) -> np.ndarray:
    """Radius per frame for d = 2 trails: 0.25 at the start to 1 at the end,
    linear in log time (in frame index without times)."""
    if times is None or frames < 2:
        s = np.linspace(0.0, 1.0, frames)
    else:
        t = np.asarray(times, dtype=np.float64)
        pos = t[t > 0]
        if pos.size < 2:
            s = np.linspace(0.0, 1.0, frames)
        else:
            u = np.log(np.maximum(t, pos[0]))
            s = (u - u[0]) / (u[-1] - u[0]) if u[-1] > u[0] else np.linspace(0, 1, frames)
    return 0.25 + 0.75 * s


def plot_histogram(
    hist: InnerProductHistogram | tuple[np.ndarray, np.ndarray],
    ax: Axes | None = None,
    *,
    density: bool = True,
    log: bool = False,
    title: str | None = None,
    **style: Any,
) -> Axes:
    """Histogram of pair inner products on [-1, 1].

    Parameters
    ----------
    hist : InnerProductHistogram or (bin_edges, counts)
        A computed histogram, or edges (bins + 1,) and counts (bins,).
    ax : Axes, optional
        Where to draw (a new figure's axes when None).
    density : bool
        Normalise to unit integral.
    log : bool
        Logarithmic count axis (shows the small inter-cluster peaks next to
        the large within-cluster peak at 1).
    title : str, optional
    **style
        Passed to ``Axes.stairs``.

    Returns
    -------
    Axes
    """
    ax = _new_axes() if ax is None else ax
    if isinstance(hist, InnerProductHistogram):
        edges, counts = hist.bin_edges, hist.counts
    else:
        edges, counts = (np.asarray(a) for a in hist)
    values = counts.astype(float)
    if density and values.sum() > 0:
        values = values / (values.sum() * np.diff(edges))
    style.setdefault("fill", True)
    style.setdefault("alpha", 0.8)
    ax.stairs(values, edges, **style)
    ax.set_xlim(edges[0], edges[-1])
    if log:
        ax.set_yscale("log")
    ax.set_xlabel(r"$\langle x_i, x_j\rangle$")
    ax.set_ylabel("density" if density else "pairs")
    if title:
        ax.set_title(title)
    return ax


def plot_tokens(
    positions: np.ndarray,
    ax: Axes | None = None,
    *,
    times: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    trails: bool = True,
    radial_time: bool = True,
    directions: np.ndarray | None = None,
    size: float = 20.0,
) -> Axes:
    """Tokens on the circle (d = 2), the sphere (d = 3) or a 3-D projection (d > 3).

    Parameters
    ----------
    positions : ndarray, shape (n, d) or (frames, n, d)
        One configuration, or a path: its last frame is drawn as filled
        points, its first as small hollow points, and each token's
        trajectory as a line.
    ax : Axes, optional
        2-D axes for d = 2; 3-D axes (``projection="3d"``) for d >= 3.
    times : ndarray, shape (frames,), optional
        Frame times (d = 2 trails use them for the radius).
    labels : ndarray of int, shape (n,), optional
        Cluster id per token (colours; largest cluster first).
    trails : bool
        Draw the trajectories.
    radial_time : bool
        d = 2 only: on the circle, trajectories would all lie on the circle
        itself; instead draw them in the disk at a radius growing from 0.25
        (first frame) to 1 (last frame) linearly in log time, so paths
        converging into clusters are visible.
    directions : ndarray, shape (d, 3), optional
        Projection for d > 3 (default: :func:`principal_directions` of all
        frames).  Projected tokens lie inside the unit ball.
    size : float
        Marker size.

    Returns
    -------
    Axes
    """
    x = np.asarray(positions, dtype=np.float64)
    path = x if x.ndim == 3 else x[None]
    frames, n, d = path.shape
    colors = _cluster_colors(labels, n)
    if d > 3 and directions is None:
        directions = principal_directions(path)
    if ax is None:
        ax = _new_axes(None if d == 2 else "3d", figsize=(5.0, 5.0))

    def show(pts: np.ndarray) -> np.ndarray:
        return pts @ directions if d > 3 else pts

    if d == 2:
        _unit_circle(ax)
    else:
        _sphere_wireframe(ax)
    if trails and frames > 1:
        radius = _time_radius(times, frames) if (d == 2 and radial_time) else None
        sub = 4
        for i in range(n):
            arc = _arcs(path[:, i], sub)
            if radius is not None:
                arc = (
                    arc
                    * np.interp(np.arange(arc.shape[0]) / sub, np.arange(frames), radius)[:, None]
                )
            ax.plot(*show(arc).T, color=colors[i], linewidth=0.7, alpha=0.55)
        first = show(path[0]) * (radius[0] if radius is not None else 1.0)
        ax.scatter(
            *first.T, s=size / 3, facecolors="none", edgecolors=colors, linewidths=0.6, zorder=2
        )
        if radius is not None:
            ax.text(
                0.0,
                0.0,
                "trails: radius\n∝ log t",
                ha="center",
                va="center",
                fontsize=7,
                color="0.5",
            )
    # depthshade fades far points, which hides cluster colours on the sphere
    extra = {"depthshade": False} if d >= 3 else {}
    ax.scatter(
        *show(path[-1]).T, s=size, c=colors, edgecolors="k", linewidths=0.3, zorder=3, **extra
    )
    return ax


def largest_gap_cut(theta: np.ndarray) -> float:
    """The middle of the largest empty arc between the angles, in [0, 2 pi).

    Cutting the circle there (instead of at 0 = 2 pi) keeps every cluster in
    one piece on an angle axis.

    Parameters
    ----------
    theta : ndarray, shape (n,)
        Angles (any real values; taken modulo 2 pi).

    Returns
    -------
    float
    """
    th = np.sort(np.mod(np.asarray(theta, dtype=np.float64).ravel(), 2 * np.pi))
    if th.size == 0:
        return 0.0
    gaps = np.diff(np.concatenate([th, [th[0] + 2 * np.pi]]))
    k = int(np.argmax(gaps))
    return float(np.mod(th[k] + gaps[k] / 2, 2 * np.pi))


def _pi_label(v: float) -> str:
    """An angle as a multiple of pi/2, reduced to [0, 2 pi): "0", "π/2", "π", "3π/2"."""
    k = round(v / (np.pi / 2)) % 4
    return ("0", "π/2", "π", "3π/2")[k]


def plot_angles(
    times: np.ndarray,
    positions: np.ndarray,
    ax: Axes | None = None,
    *,
    labels: np.ndarray | None = None,
    cut: float | None = None,
) -> Axes:
    """Angles ``theta_i(t)`` of tokens on the circle against log time (d = 2).

    Parameters
    ----------
    times : ndarray, shape (frames,)
    positions : ndarray, shape (frames, n, 2)
    ax : Axes, optional
    labels : ndarray of int, shape (n,), optional
        Cluster id per token (colours).
    cut : float, optional
        Where the circle is cut open: the axis shows ``[cut, cut + 2 pi)``
        (tick labels reduced modulo 2 pi).  Default
        :func:`largest_gap_cut` of the last frame, so no cluster is split
        between the top and the bottom of the axis.

    Returns
    -------
    Axes
    """
    from particles.sphere import circle_to_angles

    ax = _new_axes() if ax is None else ax
    ok = _positive(times)
    t = np.asarray(times)[ok]
    theta = circle_to_angles(np.asarray(positions)[ok])  # (frames, n) in [0, 2 pi)
    if cut is None:
        cut = largest_gap_cut(theta[-1]) if theta.size else 0.0
    theta = cut + np.mod(theta - cut, 2 * np.pi)  # in [cut, cut + 2 pi)
    colors = _cluster_colors(labels, theta.shape[1])
    for i in range(theta.shape[1]):
        th = theta[:, i].copy()
        # break the line where the token crosses the cut
        th[1:][np.abs(np.diff(th)) > np.pi] = np.nan
        ax.plot(t, th, color=colors[i], linewidth=0.8)
    ax.set_xscale("log")
    ax.set_ylim(cut, cut + 2 * np.pi)
    quarter = np.pi / 2
    ticks = quarter * np.arange(np.ceil(cut / quarter), np.floor((cut + 2 * np.pi) / quarter) + 1)
    ax.set_yticks(ticks, [_pi_label(v) for v in ticks])
    ax.set_xlabel("time t")
    ax.set_ylabel("angle θ (circle cut at the largest gap)")
    return ax


def merge_label_groups(
    times: np.ndarray, lo: float, hi: float, min_fraction: float = 0.035
) -> list[list[int]]:
    """Group merge times whose labels would overprint on a log-time axis.

    Parameters
    ----------
    times : ndarray, shape (m,)
        Merge times (> 0), increasing.
    lo, hi : float
        The axis range (> 0).
    min_fraction : float
        Labels closer than this fraction of the axis width share one label.

    Returns
    -------
    list of list of int
        Indices into ``times``, one list per label.
    """
    times = np.asarray(times, dtype=np.float64)
    span = max(np.log10(hi / lo), 1e-12) if hi > lo > 0 else 1.0
    groups: list[list[int]] = []
    anchor = None
    for k, t in enumerate(times):
        u = np.log10(t)
        if anchor is not None and (u - anchor) / span < min_fraction:
            groups[-1].append(k)
        else:
            groups.append([k])
            anchor = u
    return groups


def _mark_events(
    ax: Axes,
    merges,
    formation_time: float | None,
    annotate: bool,
    label: str = "formation",
    span: tuple[float, float] | None = None,
) -> None:
    """Vertical marks: merges (fast grey, slow red) and the formation time.

    Slow merges closer than a few per cent of the log axis share one label
    (:func:`merge_label_groups`), so labels never overprint.
    """
    form = np.inf if formation_time is None or np.isnan(formation_time) else formation_time
    slow_events = []
    for ev in merges or ():
        slow = ev.time > form
        ax.axvline(
            ev.time,
            color=_SLOW if slow else _FAST,
            linestyle=":",
            linewidth=1.2 if slow else 0.6,
            zorder=1,
        )
        if slow and ev.time > 0:
            slow_events.append(ev)
    if annotate and slow_events:
        slow_events.sort(key=lambda ev: ev.time)
        times = np.array([ev.time for ev in slow_events])
        lo, hi = span if span is not None else (times[0], times[-1])
        for group in merge_label_groups(times, lo, hi):
            evs = [slow_events[k] for k in group]
            text = ("merge " if len(evs) == 1 else "merges ") + ", ".join(
                "+".join(map(str, ev.sizes)) for ev in evs
            )
            ax.annotate(
                text,
                (evs[0].time, 0.97),
                xycoords=("data", "axes fraction"),
                xytext=(-3, 0),
                textcoords="offset points",
                rotation=90,
                ha="right",
                va="top",
                fontsize=7,
                color=_SLOW,
            )
    if np.isfinite(form) and form > 0:
        ax.axvline(
            form,
            color=_FORMATION,
            linestyle="--",
            linewidth=1.2,
            zorder=1,
            label=f"{label} t={time_text(form)}",
        )


#: quantile bands of ensemble plots: (low, high, alpha), widest first.
BANDS = ((0.05, 0.95, 0.15), (0.25, 0.75, 0.35))


def _quantile_bands(
    ax: Axes, t: np.ndarray, values: np.ndarray, color: str, *, discrete: bool, step: bool,
    missing: int | None = None,
) -> None:
    """Median line and the :data:`BANDS` of an ensemble's values (frames, batch);
    values equal to ``missing`` are left out (a frame with nothing else: a gap)."""
    method = "inverted_cdf" if discrete else "linear"
    levels = sorted({q for lo, hi, _ in BANDS for q in (lo, hi)} | {0.5})
    if missing is not None and np.any(values == missing):
        per = np.full((len(levels), values.shape[0]), np.nan)
        for f, row in enumerate(values):
            kept = row[row != missing]
            if kept.size:
                per[:, f] = np.quantile(kept, levels, method=method)
    else:
        per = np.quantile(values, levels, axis=1, method=method)
    qs = dict(zip(levels, per, strict=True))
    for lo, hi, alpha in BANDS:
        ax.fill_between(
            t, qs[lo], qs[hi], color=color, alpha=alpha, linewidth=0,
            label=f"{100 * lo:g}-{100 * hi:g} %", **({"step": "post"} if step else {}),
        )
    label = f"median of {values.shape[1]} systems"
    if step:
        ax.step(t, qs[0.5], where="post", color=color, linewidth=2.0, label=label)
    else:
        ax.plot(t, qs[0.5], color=color, linewidth=2.0, label=label)


def _shade_spread(ax: Axes, t: np.ndarray, spread: np.ndarray, label: str) -> None:
    """Grey spans over the runs of frames that are spread (one legend entry)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], spread.astype(np.int8), [0]])))
    for k, (a, b) in enumerate(zip(edges[::2], edges[1::2], strict=True)):
        ax.axvspan(t[a], t[min(b, t.size - 1)], color="0.6", alpha=0.25, linewidth=0,
                   label=label if k == 0 else None)


def plot_cluster_count(
    times: np.ndarray,
    counts: np.ndarray,
    ax: Axes | None = None,
    *,
    merges=None,
    formation_time: float | None = None,
    plateaus=None,
    system: int | None = None,
) -> Axes:
    """Cluster count against log time.

    Parameters
    ----------
    times : ndarray, shape (frames,)
    counts : ndarray, shape (frames,) or (frames, batch)
        One system (a staircase) or an ensemble: its median staircase with
        the 25-75 % band and a lighter 5-95 % band (quantiles of the counts
        per frame, values the ensemble takes).  A count of 0 is a spread
        system (no clusters): left out of the staircase and the quantiles,
        and its frames shaded grey (an ensemble: where most systems are).
    ax : Axes, optional
    merges : list of MergeEvent, optional
        Marked by vertical lines (fast merges grey, those after the formation
        time red with their sizes); for one system only.
    formation_time : float, optional
        Marked by a dashed line.
    plateaus : list of Plateau, optional
        Long-lived ones are shaded.
    system : int, optional
        Ensemble only: also draw this member's staircase (thin).

    Returns
    -------
    Axes
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    ax = _new_axes() if ax is None else ax
    ok = _positive(times)
    t, c = np.asarray(times)[ok], np.asarray(counts)[ok]
    for p in plateaus or ():
        if p.long_lived:
            ax.axvspan(max(p.start, t[0]), p.end, color="tab:blue", alpha=0.08, linewidth=0)
    span = (float(t[0]), float(t[-1])) if t.size else None
    # count 0: spread, no clusters (particles.observables.spread): a gap, shaded
    gap = np.where(c == 0, np.nan, c.astype(np.float64))
    if c.ndim == 1:
        ax.step(t, gap, where="post", color="tab:blue", linewidth=1.6, label="clusters")
        _shade_spread(ax, t, c == 0, "spread (no clusters)")
        _mark_events(ax, merges, formation_time, annotate=True, span=span)
    else:
        _quantile_bands(ax, t, c, "tab:blue", discrete=True, step=True, missing=0)
        if system is not None:
            ax.step(t, gap[:, system], where="post", color="k", linewidth=0.7, alpha=0.6,
                    label=f"system {system}")
        _shade_spread(ax, t, 2 * np.sum(c == 0, axis=1) > c.shape[1],
                      "most systems spread (no clusters)")
        _mark_events(ax, None, formation_time, annotate=False, label="median formation")
    ax.set_xscale("log")
    top = max(int(np.max(c)), 1) if c.size else 1
    if top > 40:
        # counts spanning decades: log axis, but with plain integer labels
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(0.8, top * 1.25)
    else:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(0, top + 1)
    ax.set_xlabel("time t")
    ax.set_ylabel("clusters")
    ax.legend(loc="lower left", fontsize=8)
    return ax


def plot_energy(
    times: np.ndarray,
    energy_normalized: np.ndarray,
    ax: Axes | None = None,
    *,
    merges=None,
    formation_time: float | None = None,
    size_prediction: np.ndarray | None = None,
) -> Axes:
    """Normalised energy ``2 beta e^{-beta} E_beta`` against log time.

    Parameters
    ----------
    times : ndarray, shape (frames,)
    energy_normalized : ndarray, shape (frames,) or (frames, batch)
    ax : Axes, optional
    merges, formation_time
        Marked as in :func:`plot_cluster_count`.
    size_prediction : ndarray, shape (frames,), optional
        ``sum_c (n_c / n)^2`` over the clusters: the value the normalised
        energy takes when the clusters are points far apart, so each merge
        is a step of the staircase.

    Returns
    -------
    Axes
    """
    ax = _new_axes() if ax is None else ax
    ok = _positive(times)
    t, e = np.asarray(times)[ok], np.asarray(energy_normalized)[ok]
    if e.ndim == 1:
        ax.plot(t, e, color="tab:purple", linewidth=1.6, label=r"$2\beta e^{-\beta}E_\beta$")
        _mark_events(ax, merges, formation_time, annotate=False)
    else:
        _quantile_bands(ax, t, e, "tab:purple", discrete=False, step=False)
        _mark_events(ax, None, formation_time, annotate=False, label="median formation")
    if size_prediction is not None:
        ax.step(
            t,
            np.asarray(size_prediction)[ok],
            where="post",
            color="k",
            linestyle="--",
            linewidth=0.9,
            label=r"$\sum_c (n_c/n)^2$",
        )
    ax.set_xscale("log")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("time t")
    ax.set_ylabel("normalised energy")
    ax.legend(loc="upper left", fontsize=8)
    return ax


# ---------------------------------------------------------------- figures


def _run_title(traj: Any, analysis: AnalysisResult, system: int | None = None) -> str:
    """:func:`~particles.plotting.titles.run_title` of the run (from the analysis
    facts when the trajectory has no configuration)."""
    cfg = getattr(traj, "config", None)
    info = analysis.info
    if cfg is not None:
        return run_title(cfg, system=system, batch=info.get("batch"))
    ens = ""
    if info.get("batch"):
        ens = (f", system {system} of {info['batch']}" if system is not None
               else f", ensemble of {info['batch']}")
    return f"n={info['n']}, d={info['d']}, β={value_text(info['beta'])}{ens}"


def _system(a: np.ndarray, batch: int | None, system: int) -> np.ndarray:
    """Select one system's slice from a (frames, batch, ...) array."""
    return a if batch is None else a[:, system]


def _check_system(batch: int | None, system: int) -> None:
    count = 1 if batch is None else batch
    if not 0 <= system < count:
        what = "a single system" if batch is None else f"an ensemble of {batch}"
        raise ValueError(f"system must be in [0, {count}) for {what}, got {system}")


def default_frames(times: np.ndarray, k: int = 6) -> np.ndarray:
    """Indices of about k frames: the first, then spread evenly in log time.

    The log-spaced part starts at ``max(first positive time, 1e-4 T)`` so
    that runs saved from tiny times do not spend panels on instants where
    nothing has moved yet.
    """
    times = np.asarray(times)
    F = times.size
    if F <= k:
        return np.arange(F)
    pos = times[times > 0]
    if not pos.size:
        return np.array([0])
    T = times[-1]
    targets = np.geomspace(max(pos[0], 1e-4 * T), T, k - 1)
    idx = [0] + [int(np.argmin(np.abs(np.log(np.maximum(times, pos[0]) / t)))) for t in targets]
    idx[-1] = F - 1
    return np.unique(idx)


def _size_prediction(labels: np.ndarray) -> np.ndarray:
    """``sum_c (n_c / n)^2`` per frame from labels (frames, n)."""
    n = labels.shape[1]
    out = np.empty(labels.shape[0])
    for f in range(labels.shape[0]):
        sizes = np.unique(labels[f], return_counts=True)[1]
        out[f] = np.sum((sizes / n) ** 2)
    return out


def make_figure(
    traj: Any,
    kind: str = DEFAULT_KIND,
    *,
    analysis: AnalysisResult | None = None,
    times: Any = None,
    system: int = 0,
    log_histogram: bool = True,
) -> Figure:
    """Assemble the figure of one kind for a run.

    Parameters
    ----------
    traj : Trajectory
        The run.
    kind : str
        One of :data:`KINDS` except ``"movie"`` (see :func:`save_movie`).
    analysis : AnalysisResult, optional
        Its analysis (computed with default settings when None).
    times : float or sequence of float, optional
        ``"histogram"``: times of the panels (nearest frames; default six
        frames spread in log time).  ``"sphere"``: the time of the drawn
        configuration (default the last frame; trajectories up to it).
        Times outside the saved frames' range are refused
        (:func:`~particles.plotting.frames.nearest_frames`).
    system : int
        Ensemble member drawn by ``"sphere"`` and marked in ``"clusters"``.
    log_histogram : bool
        Logarithmic count axis in the histograms.

    Returns
    -------
    Figure
    """
    entry = KINDS.get(kind)
    if entry is None or entry.draw is None:
        allowed = ", ".join(k for k, v in KINDS.items() if v.draw is not None)
        raise ValueError(f"kind must be one of {allowed} (movie: use save_movie), got {kind!r}")
    if times is not None and not entry.uses_times:
        raise ValueError(f"times are not used by the {kind} kind (--times: "
                         + ", ".join(k for k, v in KINDS.items() if v.uses_times) + ")")
    analysis = analyze(traj) if analysis is None else analysis
    _check_system(analysis.batch, system)
    return entry.draw(_View(traj, analysis, system, times, log_histogram))


@dataclass(frozen=True)
class _View:
    """What every figure kind draws from: the run, its analysis, the options."""

    traj: Any
    analysis: AnalysisResult
    system: int
    times: Any
    log_histogram: bool

    @property
    def batch(self) -> int | None:
        return self.analysis.batch

    @property
    def member(self) -> int | None:
        """The drawn system of an ensemble (None: a single system)."""
        return self.system if self.batch is not None else None

    def title(self, member: bool = False) -> str:
        """The whole run's title (an ensemble: all its systems), or the member's."""
        return _run_title(self.traj, self.analysis, self.member if member else None)

    @property
    def time_label(self) -> str:
        return time_label(getattr(self.traj, "config", None))

    @property
    def merges(self) -> list:
        return [ev for ev in self.analysis.merges if ev.system == self.system]


def _draw_histogram(v: _View) -> Figure:
    """Small multiples of the pair inner-product histograms."""
    analysis, T, batch, times, log_histogram = (v.analysis, v.analysis.times, v.batch, v.times,
                                                v.log_histogram)
    title = v.title()
    idx = default_frames(T) if times is None else nearest_frames(T, times)
    cols = min(3, idx.size)
    rows = -(-idx.size // cols)
    fig = Figure(figsize=(3.2 * cols, 2.6 * rows + 0.4), layout="constrained")
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False).ravel()
    for ax, f in zip(axes, idx, strict=False):
        plot_histogram(
            (analysis.bin_edges, analysis.histograms[f]),
            ax,
            log=log_histogram,
            title=f"t = {time_text(T[f])}",
        )
        ax.label_outer()
    for ax in axes[idx.size :]:
        ax.set_visible(False)
    pooled = ", all systems pooled" if batch is not None else ""
    fig.suptitle(f"pair inner products{pooled}\n{title}", fontsize=10)
    return fig


def _draw_sphere(v: _View) -> Figure:
    """The tokens with their trajectories (and their angles on the circle)."""
    analysis, T, batch, system, times = v.analysis, v.analysis.times, v.batch, v.system, v.times
    traj, member, tlabel = v.traj, v.title(member=True), v.time_label
    x = np.asarray(traj.positions)
    path = _system(x, batch, system)
    last = T.size - 1 if times is None else int(nearest_frames(T, times)[-1])
    labels = _system(analysis.labels, batch, system)[last]
    d = path.shape[-1]
    head = f"{member}\nt = {time_text(T[last])}, " + _clusters_text(
        int(_system(analysis.counts, batch, system)[last]))
    if d == 2:
        fig = Figure(figsize=(10.0, 4.8), layout="constrained")
        ax = fig.add_subplot(1, 2, 1)
        plot_tokens(path[: last + 1], ax, times=T[: last + 1], labels=labels)
        ax.set_title(head, fontsize=10)
        ax2 = plot_angles(
            T[: last + 1], path[: last + 1], fig.add_subplot(1, 2, 2), labels=labels
        )
        ax2.set_title("angles (colour: cluster at the end)", fontsize=10)
        ax2.set_xlabel(tlabel)
        return fig
    fig = Figure(figsize=(5.5, 5.5), layout="constrained")
    ax = fig.add_subplot(projection="3d")
    plot_tokens(path[: last + 1], ax, labels=labels)
    what = "" if d == 3 else "\nprojected on the top 3 principal directions"
    ax.set_title(head + what, fontsize=10)
    return fig


@dataclass(frozen=True)
class _Staircase:
    """What the cluster and energy figures share: counts, energy, the formation
    time marked (an ensemble's median, Kaplan-Meier) and its note."""

    counts: np.ndarray
    energy: np.ndarray
    one_system: bool
    prediction: np.ndarray | None
    formation: float
    censored_note: str | None

    def note(self, ax: Axes, loc: str) -> None:
        if self.censored_note:
            ax.plot([], [], " ", label=self.censored_note)
            ax.legend(loc=loc, fontsize=8)


def _staircase(v: _View) -> _Staircase:
    analysis, batch, system = v.analysis, v.batch, v.system
    T = analysis.times
    ts = analysis.timescales[system if batch is not None else 0]
    counts = analysis.counts
    energy = analysis.scalars["energy_normalized"]
    one_system = batch is None
    pred = _size_prediction(_system(analysis.labels, batch, system)) if one_system else None
    # an ensemble is marked by the median formation time of all its systems, those
    # not formed by the end counted as censored (Kaplan-Meier): NaN when over half
    # never formed, and the legend says so
    censored_note = None
    if one_system:
        form = ts.formation_time
    else:
        km = analysis.ensemble().formation
        form = float(km.quantile(0.5))
        if np.isnan(form):
            censored_note = (
                f"median formation > {time_text(T[-1])} ({km.censored} of {km.systems} "
                "not formed)"
            )

    return _Staircase(counts, energy, one_system, pred, form, censored_note)


def _draw_clusters(v: _View) -> Figure:
    """Cluster count and normalised energy against log time, merges marked."""
    st, T, system, merges = _staircase(v), v.analysis.times, v.system, v.merges
    counts, energy, one_system, form = st.counts, st.energy, st.one_system, st.formation
    analysis, tlabel, title = v.analysis, v.time_label, v.title()
    fig = Figure(figsize=(6.4, 6.0), layout="constrained")
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    plot_cluster_count(
        T,
        counts,
        ax1,
        merges=merges if one_system else None,
        formation_time=form,
        plateaus=[p for p in analysis.plateaus if p.system == system] if one_system else None,
        system=None if one_system else system,
    )
    ax1.set_xlabel("")
    plot_energy(T, energy, ax2, merges=merges if one_system else None, formation_time=form)
    st.note(ax1, "lower left")
    st.note(ax2, "upper left")
    ax2.set_xlabel(tlabel)
    fig.suptitle(title, fontsize=10)
    return fig


def _draw_energy(v: _View) -> Figure:
    """The normalised energy staircase against the cluster-size prediction."""
    st, T, merges = _staircase(v), v.analysis.times, v.merges
    energy, one_system, form, pred = st.energy, st.one_system, st.formation, st.prediction
    tlabel, title = v.time_label, v.title()
    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    ax = fig.add_subplot()
    plot_energy(
        T,
        energy,
        ax,
        merges=merges if one_system else None,
        formation_time=form,
        size_prediction=pred,
    )
    st.note(ax, "upper left")
    ax.set_xlabel(tlabel)
    fig.suptitle(title, fontsize=10)
    return fig


def _draw_modes(v: _View) -> Figure:
    """Power of each degree against time and degree, the theory's l* marked."""
    T, info = v.analysis.times, v.analysis.info
    frames = default_frames(T, 4) if v.times is None else nearest_frames(T, v.times)
    return modes_figure(T, mode_power(v.analysis, v.traj, v.system), info["beta"], info["n"],
                        info["d"], frames, v.title(member=True), v.time_label)


@dataclass(frozen=True)
class FigureKind:
    """A registered figure kind of ``particles plot``.

    Attributes
    ----------
    name, description : str
    draw : callable or None
        Draws the figure of a run (None: an animation, :func:`save_movie`).
    suffix : str
        The file it is written to ends so (``.png``, ``.gif``).
    uses_times : bool
        It draws chosen times (``times=``, ``particles plot --times``); the
        other kinds refuse them.
    """

    name: str
    description: str
    draw: Callable[[_View], Figure] | None
    suffix: str = ".png"
    uses_times: bool = False

    def __str__(self) -> str:
        return self.description


#: figure kinds of :func:`make_figure` and ``particles plot --kind``.
KINDS: dict[str, FigureKind] = {k.name: k for k in (
    FigureKind("clusters", "cluster count and normalised energy against log time, "
               "merges marked", _draw_clusters),
    FigureKind("histogram", "small multiples of pair inner-product histograms at chosen "
               "times", _draw_histogram, uses_times=True),
    FigureKind("sphere", "tokens on the circle / sphere / top-3 principal directions, with "
               "trajectories", _draw_sphere, uses_times=True),
    FigureKind("energy", "normalised energy staircase against log time vs the cluster-size "
               "prediction", _draw_energy),
    FigureKind("modes", "power of the tokens' measure by degree (S^2: spherical harmonics) "
               "against time, the linear theory's fastest degree l* marked", _draw_modes,
               uses_times=True),
    FigureKind("movie", "GIF animation of the tokens", None, ".gif"),
)}


def save_movie(
    traj: Any,
    out: str | os.PathLike,
    *,
    analysis: AnalysisResult | None = None,
    system: int = 0,
    fps: int = 8,
    max_frames: int = 100,
    trail: int = 5,
    dpi: int = 80,
    overwrite: bool = True,
) -> Path:
    """Write a GIF of the tokens moving (matplotlib's PillowWriter).

    Tokens keep the colour of the cluster they belong to at the end, so the
    movie shows which tokens end up together; each drags a short trail.

    Parameters
    ----------
    traj : Trajectory
    out : str or path-like
        Output GIF path (written whole under a temporary name, then moved
        into place; :func:`save_plot` checks it first).
    analysis : AnalysisResult, optional
        For the cluster colours and counts (computed when None).
    system : int
        Ensemble member to draw.
    fps : int
        Frames per second.
    max_frames : int
        Saved frames are subsampled evenly down to this many.
    trail : int
        Each token drags its positions at the last ``trail`` movie frames.
    dpi : int
        Resolution.
    overwrite : bool
        Replace an existing ``out`` (only once the new movie is complete).

    Returns
    -------
    Path
    """
    from matplotlib.animation import PillowWriter

    analysis = analyze(traj) if analysis is None else analysis
    batch = analysis.batch
    _check_system(batch, system)
    path = _system(np.asarray(traj.positions, dtype=np.float64), batch, system)
    labels = _system(analysis.labels, batch, system)
    counts = _system(analysis.counts, batch, system)
    T = analysis.times
    frames, n, d = path.shape
    idx = np.unique(np.linspace(0, frames - 1, min(frames, max_frames)).round().astype(int))
    directions = principal_directions(path) if d > 3 else np.eye(d)
    shown = path @ directions  # (frames, n, 2 or 3)
    colors = _cluster_colors(labels[-1], n)
    title = _run_title(traj, analysis, system if batch is not None else None)
    if d > 3:
        title += "\n(top 3 principal directions)"

    # build the scene once and move its artists: rebuilding 3-D axes for every
    # frame costs ~10x more
    fig = Figure(figsize=(5.0, 5.0), layout="constrained")
    if d == 2:
        ax = fig.add_subplot()
        _unit_circle(ax)
    else:
        ax = fig.add_subplot(projection="3d")
        _sphere_wireframe(ax)
    lines = [
        ax.plot(*shown[:1, i].T, color=colors[i], linewidth=0.8, alpha=0.6)[0] for i in range(n)
    ]
    extra = {"depthshade": False} if d >= 3 else {}
    dots = ax.scatter(
        *shown[0].T, s=20, c=colors, edgecolors="k", linewidths=0.3, zorder=3, **extra
    )
    heading = ax.set_title("", fontsize=9)
    writer = PillowWriter(fps=fps)
    with replacing(out, overwrite=overwrite) as temp, writer.saving(fig, os.fspath(temp), dpi):
        for k, f in enumerate(idx):
            start = idx[max(0, k - trail)]
            for i, line in enumerate(lines):
                arc = _arcs(path[start : f + 1, i]) @ directions
                if d == 2:
                    line.set_data(arc[:, 0], arc[:, 1])
                else:
                    line.set_data_3d(arc[:, 0], arc[:, 1], arc[:, 2])
            if d == 2:
                dots.set_offsets(shown[f])
            else:
                dots._offsets3d = tuple(shown[f].T)  # the documented way to move 3-D points
            heading.set_text(f"{title}\nt = {time_text(T[f])}, {_clusters_text(int(counts[f]))}")
            writer.grab_frame()
    return Path(out)


def default_output(path: str | os.PathLike, kind: str) -> Path:
    """``run.h5`` -> ``run_<kind>.png`` (``.gif`` for movies) next to the input."""
    p = Path(path)
    return p.with_name(f"{p.stem}_{kind}{KINDS[kind].suffix}")


def save_plot(
    traj: Any,
    kind: str = DEFAULT_KIND,
    out: str | os.PathLike | None = None,
    *,
    analysis: AnalysisResult | None = None,
    overwrite: bool = False,
    dpi: int = 120,
    **options: Any,
) -> Path:
    """Draw a figure of one kind and write it (PNG, GIF for ``"movie"``).

    Parameters
    ----------
    traj : Trajectory
    kind : str
        One of :data:`KINDS`.
    out : str or path-like
        Output file (required here; :func:`plot_file` has a default).
    analysis : AnalysisResult, optional
    overwrite : bool
        Replace an existing output file.
    dpi : int
    **options
        Passed to :func:`make_figure` (times, system, log_histogram) or
        :func:`save_movie` (system, fps, max_frames, trail).

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    particles.errors.OutputExistsError
        If ``out`` exists and ``overwrite`` is False (also a ``FileExistsError``).
    particles.errors.OutputPathError
        ``out`` is a directory, or its directory is missing or read-only.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if out is None:
        raise ValueError("out is required")
    out = check_output_path(out, overwrite=overwrite, resumable=False)
    if KINDS[kind].draw is None:  # an animation
        options.pop("times", None)
        options.pop("log_histogram", None)
        return save_movie(traj, out, analysis=analysis, overwrite=overwrite, **options)
    fig = make_figure(traj, kind, analysis=analysis, **options)
    return save_figure(fig, out, overwrite=overwrite, dpi=dpi)


def plot_file(
    path: str | os.PathLike,
    kind: str = DEFAULT_KIND,
    out: str | os.PathLike | None = None,
    *,
    overwrite: bool = False,
    **options: Any,
) -> Path:
    """Plot a trajectory file (what ``particles plot`` calls).

    The stored ``/analysis`` group is used when it matches the file's frames
    (see :func:`particles.analysis.analyze_file`); otherwise the analysis is
    computed in memory with default settings and not stored.

    Parameters
    ----------
    path : str or path-like
        An H5MD trajectory.
    kind : str
        One of :data:`KINDS` (default ``"clusters"``).
    out : str or path-like, optional
        Default :func:`default_output` (``run_<kind>.png`` next to the input).
    overwrite : bool
        Replace an existing output.
    **options
        Passed to :func:`save_plot`.

    Returns
    -------
    Path
        The written file.
    """
    from particles.analysis import read_analysis
    from particles.io import load

    if not Path(path).is_file():
        raise FileNotFoundError(f"no such file: {os.fspath(path)}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    out = check_output_path(default_output(path, kind) if out is None else out,
                            overwrite=overwrite, resumable=False)
    traj = load(path)
    try:
        analysis = read_analysis(path)
        if analysis.times.shape != traj.times.shape or not np.allclose(analysis.times, traj.times):
            analysis = None  # stale: the run was extended after `analyze`
    except (KeyError, OSError):
        # no stored analysis, or the file is locked by a run still writing it
        analysis = None
    if analysis is None:
        analysis = analyze(traj)
    return save_plot(traj, kind, out, analysis=analysis, overwrite=overwrite, **options)
