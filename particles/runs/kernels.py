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
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from particles.analysis import DEFAULT_EPS, InnerProductHistogram, count_clusters
from particles.analysis.comparison import KernelComparison, KernelRun
from particles.config import KERNEL_PARAMETERS, SimulationConfig, check_names
from particles.engine import simulate
from particles.fields import KERNELS
from particles.plotting.kernels import (
    default_times,
    kernel_comparison_figure,
    plot_kernel_comparison,
)
from particles.runs.compare import check_output
from particles.runs.initial import initial_tokens

__all__ = [
    "KernelComparison",
    "KernelRun",
    "check_kernels",
    "compare_kernels",
    "default_times",
    "kernel_comparison_figure",
    "plot_kernel_comparison",
]


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
        kernel ran (checked before any run; never replaced unless ``overwrite``);
        it records the seed, kernels, configuration and versions in its metadata.
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
    x0 = initial_tokens(first)[0]
    common["seed"] = first.seed
    runs = {}
    for k in kernels:
        traj = simulate(**common, kernel=k, x0=x0, **extra[k])
        clusters = np.atleast_1d(count_clusters(traj.positions, eps)).astype(np.int64)
        hists = np.stack([histogram.compute(x).counts.copy() for x in traj.positions])
        runs[k] = KernelRun(k, traj, clusters, hists)
    times = next(iter(runs.values())).trajectory.times
    result = KernelComparison(runs, x0, times, histogram.bin_edges, eps, int(first.seed), first)
    if plot is not None:
        plot_kernel_comparison(result, plot, overwrite=overwrite)
    return result


