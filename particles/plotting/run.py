"""The figures of one run (a trajectory and its analysis), and writing them to files.

:func:`make_figure` assembles a whole figure of one of :data:`KINDS` (the
trajectory's entries of :data:`particles.plotting.kinds.FIGURES`) from a
trajectory and its analysis, each drawn by its entry's ``draw`` from a view
of the run; :func:`save_plot` and :func:`plot_file` write it to disk (PNG,
or a GIF for the ``movie``, :func:`particles.plotting.movie.save_movie`) and
are what the CLI calls.  Every writer checks its output path with
:func:`particles.paths.check_output_path` before drawing and writes through
:func:`particles.plotting.save.save_figure`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from particles.analysis import AnalysisResult, analyze
from particles.display import time_text
from particles.paths import check_output_path
from particles.plotting.axes import (
    clusters_text,
    plot_angles,
    plot_cluster_count,
    plot_energy,
    plot_histogram,
    plot_tokens,
)
from particles.plotting.frames import check_member, nearest_frames, system_of
from particles.plotting.harmonics import mode_power, modes_figure
from particles.plotting.kinds import FigureKind, register_figures
from particles.plotting.movie import save_movie
from particles.plotting.save import save_figure
from particles.plotting.titles import time_label, trajectory_title

__all__ = [
    "DEFAULT_KIND",
    "KINDS",
    "default_frames",
    "default_output",
    "make_figure",
    "plot_file",
    "save_plot",
]

#: kind drawn when none is asked for.
DEFAULT_KIND = "clusters"

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
    check_member(analysis.batch, system)
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
        return trajectory_title(self.traj, self.analysis, self.member if member else None)

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
    traj, who, tlabel = v.traj, v.title(member=True), v.time_label
    x = np.asarray(traj.positions)
    path = system_of(x, batch, system)
    last = T.size - 1 if times is None else int(nearest_frames(T, times)[-1])
    labels = system_of(analysis.labels, batch, system)[last]
    d = path.shape[-1]
    head = f"{who}\nt = {time_text(T[last])}, " + clusters_text(
        int(system_of(analysis.counts, batch, system)[last]))
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
    pred = _size_prediction(system_of(analysis.labels, batch, system)) if one_system else None
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


#: figure kinds of :func:`make_figure` and ``particles plot --kind`` (``FIGURES["trajectory"]``).
KINDS: dict[str, FigureKind] = register_figures(
    "trajectory", DEFAULT_KIND,
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
)


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
