"""Every attention kernel from one initial condition, side by side.

:func:`compare_kernels` draws one set of initial tokens from the seed and
runs each kernel of :data:`particles.fields.KERNELS` from exactly those
tokens with the same model, integrator and output times; it records, per
kernel, the trajectory, the cluster count of every frame and the histogram
of pair inner products ``<x_i, x_j>`` of every frame.
:func:`plot_kernel_comparison` draws the cluster counts of every kernel on
one time axis above a grid of histograms (one row per kernel, one column per
chosen time) and writes it as a PNG.

Kernel parameters (``KERNEL_PARAMETERS`` in :mod:`particles.config`): edp
and intersection use ``beta``, rbf and l2 use ``tau``, quadratic uses
``gamma``.  ``tau`` and ``gamma`` are passed only to the kernels that use
them.  On the sphere ``exp(beta <x, y>) = e^beta exp(-(beta/2) |x - y|^2)``,
so edp and rbf at ``tau = beta/2`` run the same dynamics.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from particles.analysis import DEFAULT_EPS, InnerProductHistogram, count_clusters
from particles.config import KERNEL_PARAMETERS, SimulationConfig, check_names
from particles.engine import initial_positions, simulate
from particles.fields import KERNELS
from particles.plotting import plot_histogram
from particles.runs.compare import STYLES, check_output, log_time
from particles.trajectory import Trajectory

__all__ = [
    "KernelComparison",
    "KernelRun",
    "check_kernels",
    "compare_kernels",
    "default_times",
    "kernel_comparison_figure",
    "plot_kernel_comparison",
]


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class KernelRun:
    """One kernel of a comparison.

    Attributes
    ----------
    kernel : str
        Key of :data:`particles.fields.KERNELS`.
    trajectory : Trajectory
        ``positions`` of shape (frames, n, d); frame 0 is the shared start.
    clusters : ndarray of int64, shape (frames,)
        :func:`~particles.analysis.count_clusters` of every frame.
    histograms : ndarray of int64, shape (frames, bins)
        Pair inner-product counts of every frame (``n (n - 1) / 2`` pairs
        each) on the comparison's ``bin_edges``.
    """

    kernel: str
    trajectory: Trajectory
    clusters: np.ndarray
    histograms: np.ndarray

    @property
    def label(self) -> str:
        """The kernel with the value of its parameter, e.g. ``"rbf (τ=2)"``."""
        cfg = self.trajectory.config
        param = KERNEL_PARAMETERS[self.kernel]
        value = {"beta": cfg.beta, "tau": cfg.tau, "gamma": cfg.gamma}[param]
        symbol = {"beta": "β", "tau": "τ", "gamma": "\u03b3"}[param]
        return f"{self.kernel} ({symbol}={value:g})"


@dataclass(frozen=True)
class KernelComparison:
    """Runs of several kernels from one initial condition.

    Attributes
    ----------
    runs : dict of str to KernelRun
        One per kernel, in run order.
    x0 : ndarray, shape (n, d)
        The shared initial tokens.
    times : ndarray, shape (frames,)
        The output times, the same for every kernel.
    bin_edges : ndarray, shape (bins + 1,)
        Histogram bin edges on [-1, 1].
    eps : float
        Cluster linking distance (radians) of the counts.
    seed : int
        The root seed that drew ``x0``, recorded in every configuration.
    """

    runs: dict[str, KernelRun]
    x0: np.ndarray
    times: np.ndarray
    bin_edges: np.ndarray
    eps: float
    seed: int

    @property
    def kernels(self) -> tuple[str, ...]:
        """The kernels, in run order."""
        return tuple(self.runs)

    def table(self) -> str:
        """A text table: kernel, final cluster count and final mean inner product."""
        lines = [f"{'kernel':<22}{'clusters':>10}{'mean <xi,xj>':>14}"]
        for run in self.runs.values():
            t = run.trajectory
            mean = float(t.observables["mean_inner_product"][-1])
            lines.append(
                f"{run.label:<22}{int(run.clusters[-1]):>10d}{mean:>14.4f}"
                + ("" if t.complete else "  (incomplete)")
            )
        return "\n".join(lines)


# ---------------------------------------------------------------- running
def check_kernels(kernels: Any) -> tuple[str, ...]:
    """Kernel names (a sequence, or one comma-separated string) checked against the registry.

    Returns
    -------
    tuple of str
        The names in order.

    Raises
    ------
    ValueError
        Empty, unknown or repeated names (one-line message starting "kernels").
    """
    return check_names("kernels", kernels, KERNELS)


def _parameters(kernels: tuple[str, ...], tau: float | None,
                gamma: float | None) -> dict[str, dict[str, float]]:
    """The ``tau``/``gamma`` keyword arguments of each kernel (only those it uses)."""
    extra: dict[str, dict[str, float]] = {k: {} for k in kernels}
    for name, value in (("tau", tau), ("gamma", gamma)):
        if value is None:
            continue
        users = [k for k in kernels if KERNEL_PARAMETERS[k] == name]
        if not users:
            owners = ", ".join(k for k, p in KERNEL_PARAMETERS.items() if p == name)
            raise ValueError(
                f"{name} applies to kernel(s) {owners}, none of which is among the "
                f"kernels ({', '.join(kernels)})"
            )
        for k in users:
            extra[k][name] = value
    return extra


def compare_kernels(
    *,
    n: int,
    d: int,
    beta: float,
    kernels: Sequence[str] | str = tuple(KERNELS),
    tau: float | None = None,
    gamma: float | None = None,
    model: str = "sa",
    integrator: str = "rk4",
    dt: float = 0.01,
    T: float = 10.0,
    save_every: int = 10,
    save_times: str | ArrayLike | None = None,
    seed: int | None = None,
    init: str = "uniform",
    eps: float = DEFAULT_EPS,
    bins: int = 40,
    plot: str | os.PathLike | None = None,
    overwrite: bool = False,
) -> KernelComparison:
    """Run several attention kernels from one initial condition.

    Parameters
    ----------
    n, d : int
        Number of tokens and ambient dimension (tokens on S^{d-1}).
    beta : float
        Inverse temperature (the parameter of edp and intersection).
    kernels : sequence of str or str
        Keys of :data:`particles.fields.KERNELS`, run in this order
        (``"edp,rbf"`` is accepted).  Default: all of them.
    tau : float, optional
        Parameter of rbf and l2 (passed to those only); None for the
        configuration default.
    gamma : float, optional
        Offset of quadratic (passed to it only); None for the default.
    model, integrator : str
        Names from the registries, the same for every kernel.
    dt, T : float
        Step size (initial step when adaptive) and final time.
    save_every : int
        Steps between saved frames; or give ``save_times``.
    save_times : str or array_like, optional
        Output times, e.g. ``"log:0.1:1e3:40"``.
    seed : int, optional
        Root seed; draws the shared initial tokens once and is recorded in
        every configuration (None: fresh entropy).
    init : str
        Named initial condition (``uniform``, ``cap:EPS``, ...), drawn once.
    eps : float
        Cluster linking distance (radians).
    bins : int
        Number of inner-product histogram bins on [-1, 1].
    plot : str or path-like, optional
        Also write :func:`plot_kernel_comparison` to this PNG once every
        kernel ran (checked before any run; never replaced unless ``overwrite``).
    overwrite : bool
        Replace an existing ``plot``.

    Returns
    -------
    KernelComparison
        Per kernel a trajectory of shape (frames, n, d), cluster counts of
        shape (frames,) and histograms of shape (frames, bins); frame 0 is
        the shared ``x0`` of shape (n, d) for every kernel.

    Raises
    ------
    ValueError
        Before any run: an invalid argument (the message starts with its
        name), ``tau``/``gamma`` given when no kernel uses it.
    particles.io.OutputPathError
        Before any run: ``plot`` exists (without ``overwrite``), is a
        directory, or its directory is missing or read-only.
    particles.IntegrationError
        A run failed.
    """
    kernels = check_kernels(kernels)
    extra = _parameters(kernels, tau, gamma)
    eps = float(eps)
    if not (np.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    histogram = InnerProductHistogram(bins)  # validates bins
    common: dict[str, Any] = dict(
        n=n, d=d, beta=beta, model=model, integrator=integrator, dt=dt, T=T,
        save_every=save_every, save_times=save_times, seed=seed, init=init,
    )
    # every configuration is checked before the first run
    configs = {k: SimulationConfig(**common, kernel=k, **extra[k]) for k in kernels}
    if plot is not None:
        plot = check_output(plot, overwrite)
    first = configs[kernels[0]].resolved()
    x0 = initial_positions(first)[0]
    common["seed"] = first.seed
    runs = {}
    for k in kernels:
        traj = simulate(**common, kernel=k, x0=x0, **extra[k])
        clusters = np.atleast_1d(count_clusters(traj.positions, eps)).astype(np.int64)
        hists = np.stack([histogram.compute(x).counts.copy() for x in traj.positions])
        runs[k] = KernelRun(k, traj, clusters, hists)
    times = next(iter(runs.values())).trajectory.times
    result = KernelComparison(runs, x0, times, histogram.bin_edges, eps, int(first.seed))
    if plot is not None:
        plot_kernel_comparison(result, plot, overwrite=overwrite)
    return result


# ---------------------------------------------------------------- plotting
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
    when = np.atleast_1d(np.asarray(when, dtype=float))
    if when.ndim != 1 or not when.size or not np.all(np.isfinite(when)):
        raise ValueError(f"times must be one or more finite numbers, got {when!r}")
    lo, hi = times[0], times[-1]
    if np.any((when < lo) | (when > hi)):
        raise ValueError(f"times must lie in [{lo:g}, {hi:g}] (the run), got {when.tolist()}")
    return np.unique([int(np.argmin(np.abs(times - w))) for w in when])


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
    ax_c.set_ylabel(f"clusters (eps={result.eps:g})")
    ax_c.grid(True, which="major", color="0.9", linewidth=0.6)
    ax_c.legend(loc="best", fontsize=9)
    cfg = runs[0].trajectory.config
    top.suptitle(
        f"{cfg.model.upper()}, n={x0.shape[0]}, d={x0.shape[1]}, β={cfg.beta:g}, "
        f"seed {result.seed}: {len(runs)} kernels from the same initial tokens"
    )

    grid = np.asarray(bottom.subplots(rows, cols, sharex=True, sharey=True, squeeze=False))
    for i, run in enumerate(runs):
        color = STYLES[i % len(STYLES)][0]
        for j, f in enumerate(frames):
            ax = grid[i, j]
            plot_histogram((result.bin_edges, run.histograms[f]), ax, log=True,
                           color=color, alpha=0.75)
            c = int(run.clusters[f])
            ax.set_title(f"t={result.times[f]:.3g}: {c} cluster{'s' * (c != 1)}", fontsize=9)
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
        Output PNG.
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
    out = check_output(out, overwrite)
    kernel_comparison_figure(result, times=times).savefig(out, dpi=dpi)
    return out
