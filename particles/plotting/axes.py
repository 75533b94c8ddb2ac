"""Plot functions that draw into given axes: histograms, tokens, angles, counts, energy.

Each ``plot_*(..., ax=None) -> ax`` draws into the axes it is given (or a new
figure's axes when ``ax`` is None, :func:`new_axes`) and never shows or
saves; the whole figures of a run (:mod:`particles.plotting.run`), the movie
(:mod:`particles.plotting.movie`) and the ``figures/`` scripts are built from
them.  The drawing helpers they share (cluster colours, the unit circle and
sphere, arcs on the sphere) are here too.  Log-time axes cannot show
``t = 0``: frames at ``t = 0`` are left out of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from particles.analysis import InnerProductHistogram
from particles.display import time_text

__all__ = [
    "BANDS",
    "arc_points",
    "cluster_colors",
    "clusters_text",
    "largest_gap_cut",
    "merge_label_groups",
    "new_axes",
    "plot_angles",
    "plot_cluster_count",
    "plot_energy",
    "plot_histogram",
    "plot_tokens",
    "principal_directions",
    "sphere_wireframe",
    "unit_circle",
]

_FAST = "0.6"  # colour of fast-phase merge marks
_SLOW = "tab:red"  # colour of slow (metastable) merge marks
_FORMATION = "tab:green"


# ---------------------------------------------------------------- helpers


def new_axes(projection: str | None = None, figsize=(5.0, 4.0)) -> Axes:
    fig = Figure(figsize=figsize, layout="constrained")
    return fig.add_subplot(projection=projection)


def clusters_text(k: int) -> str:
    """``"3 clusters"``, ``"1 cluster"``, or ``"spread"`` for a count of 0."""
    return "spread (no clusters)" if k == 0 else f"{k} cluster{'s' if k != 1 else ''}"


def _positive(times: np.ndarray) -> np.ndarray:
    """Mask of frames a log-time axis can show."""
    return np.asarray(times) > 0


def cluster_colors(labels: np.ndarray | None, n: int) -> np.ndarray:
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


def arc_points(path: np.ndarray, sub: int = 4) -> np.ndarray:
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


def sphere_wireframe(ax: Axes) -> None:
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


def unit_circle(ax: Axes) -> None:
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
    ax = new_axes() if ax is None else ax
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
        For d = 2 only: on the circle, trajectories would all lie on the circle
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
    colors = cluster_colors(labels, n)
    if d > 3 and directions is None:
        directions = principal_directions(path)
    if ax is None:
        ax = new_axes(None if d == 2 else "3d", figsize=(5.0, 5.0))

    def show(pts: np.ndarray) -> np.ndarray:
        return pts @ directions if d > 3 else pts

    if d == 2:
        unit_circle(ax)
    else:
        sphere_wireframe(ax)
    if trails and frames > 1:
        radius = _time_radius(times, frames) if (d == 2 and radial_time) else None
        sub = 4
        for i in range(n):
            arc = arc_points(path[:, i], sub)
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

    ax = new_axes() if ax is None else ax
    ok = _positive(times)
    t = np.asarray(times)[ok]
    theta = circle_to_angles(np.asarray(positions)[ok])  # (frames, n) in [0, 2 pi)
    if cut is None:
        cut = largest_gap_cut(theta[-1]) if theta.size else 0.0
    theta = cut + np.mod(theta - cut, 2 * np.pi)  # in [cut, cut + 2 pi)
    colors = cluster_colors(labels, theta.shape[1])
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

    ax = new_axes() if ax is None else ax
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
    ax = new_axes() if ax is None else ax
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
