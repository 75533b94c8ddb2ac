"""Figures of a parameter sweep: phase diagrams, cluster counts, any statistic against a grid axis.

Everything here takes the ``xarray.Dataset`` that ``particles.sweep.load``
returns (this module never imports :mod:`particles.sweep`, which sits above
plotting): one coordinate per swept axis (``beta``, ``d``, ``n``, ``model``,
``coupling``, ...), ``time``, ``delta``, ``quantile``, ``clusters`` and
``system``, and the statistics ``pair_fraction (*grid, time, delta)``,
``cluster_quantile (*grid, time, quantile)``, ``order_parameter_mean (*grid,
time)``, ``first_merge_time (*grid, quantile)``, ``single_cluster_time
(*grid, system)``, ...  The settings that were not swept come from the base
configuration stored in the attributes.

Three figure kinds (:data:`SWEEP_KINDS`, ``particles plot SWEEP.h5 --kind``):

* ``phase-diagram``: the (beta, t) map of the fraction of token pairs with
  ``<x_i, x_j> > 1 - delta``, with the high-dimensional theory frontier
  ``rho_beta(t) = 1 - delta`` (:func:`frontier_time`) overlaid;
* ``clusters``: the cluster count (median and quartiles over the systems)
  against a grid axis at chosen times;
* ``curve``: any statistic against any grid axis, with the theory curves
  that apply (Kuramoto ``r = sqrt(1 - 2 gamma / K)`` for Lorentzian
  frequencies of half-width gamma against ``coupling``); times to an event
  (first merge, formation, single cluster) on a log axis.

A grid axis that is neither drawn nor fixed by ``where`` gives one panel per
value (:func:`sweep_figure`); the plot functions ``f(ds, ..., ax=None) -> ax``
draw one panel and need the other axes fixed (or of length 1).

Theory (DESIGN.md section 2): when all pairwise inner products equal
``rho`` they stay equal, and for i.i.d. uniform tokens in dimension d >> n
all of them track the solution of the same ODE from ``rho(0) = 0``
(Geshkovski, Letrouit, Polyanskiy, Rigollet, "A mathematical perspective on
Transformers", Thm 6.9):

    SA:  rho' = 2 (1 - rho) ((n - 1) rho + 1) / (exp(beta (1 - rho)) + n - 1)
    USA: rho' = (2 / n) exp(beta rho) (1 - rho) ((n - 1) rho + 1)

(USA with ``usa_scale="n_exp_beta"`` multiplies the USA rate by
``exp(-beta)``).  :func:`equiangular_rate`, :func:`equiangular_rho` and
:func:`frontier_time` evaluate it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from particles.display import time_text, value_text
from particles.paths import check_output_path
from particles.plotting.censored import (
    CENSORED,
    RiskSet,
    draw_quartiles,
    risk_lines,
    write_at_risk,
)
from particles.plotting.frames import nearest_frames
from particles.plotting.kinds import FigureKind, figure_kind, register_figures
from particles.plotting.save import save_figure

__all__ = [
    "DEFAULT_SWEEP_KIND",
    "LOG_STATISTICS",
    "SWEEP_KINDS",
    "default_sweep_output",
    "equiangular_rate",
    "equiangular_rho",
    "frontier_time",
    "grid_axes",
    "kuramoto_lorentzian_r",
    "plot_cluster_counts",
    "plot_phase_diagram",
    "plot_sweep_curve",
    "save_sweep_plot",
    "sweep_figure",
    "sweep_setting",
]

#: kind drawn for a sweep file when none is asked for.
DEFAULT_SWEEP_KIND = "phase-diagram"

#: statistics drawn on a log axis by default (times to an event: ~ exp(c beta)).
LOG_STATISTICS = ("first_merge_time", "formation_time", "single_cluster_time")

#: times to an event censored at the sweep's last time (inf: not reached by then).
CENSORED_STATISTICS = LOG_STATISTICS

#: dimensions of a statistic that are not grid axes.
_INNER = ("time", "delta", "quantile", "clusters", "system")

_LABELS = {
    "pair_fraction": "fraction of pairs with ⟨x_i, x_j⟩ > 1 \u2212 δ",
    "cluster_mean": "mean cluster count",
    "cluster_quantile": "cluster count",
    "cluster_distribution": "fraction of systems",
    "spread_fraction": "fraction of systems spread (no clusters)",
    "first_merge_one_cluster": "systems that formed one cluster",
    "energy_mean": "mean energy",
    "order_parameter_mean": "order parameter r",
    "formation_time": "formation time",
    "first_merge_time": "first-merge time",
    "single_cluster_time": "time to a single cluster",
}
_SYMBOLS = {"beta": "β", "delta": "δ", "gamma": "\u03b3", "tau": "τ", "coupling": "coupling K"}
_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
           "tab:pink", "tab:gray", "tab:olive", "tab:cyan")


# ---------------------------------------------------------------- theory


def equiangular_rate(
    rho: np.ndarray | float, beta: float, n: int, model: str = "sa", usa_scale: str = "n"
) -> np.ndarray:
    """``rho'`` of the equiangular ODE (see the module docstring).

    Parameters
    ----------
    rho : float or ndarray, shape (k,)
        Common pairwise inner product(s), in [-1/(n-1), 1].
    beta : float
    n : int
        Number of tokens.
    model : {"sa", "usa"}
    usa_scale : {"n", "n_exp_beta"}
        USA normalisation (``"n_exp_beta"`` multiplies the rate by ``exp(-beta)``).

    Returns
    -------
    ndarray, shape of ``rho``
    """
    r = np.asarray(rho, dtype=np.float64)
    growth = (1.0 - r) * ((n - 1) * r + 1.0)
    if model == "sa":
        return 2.0 * growth / (np.exp(beta * (1.0 - r)) + n - 1)
    if model == "usa":
        shift = beta if usa_scale == "n_exp_beta" else 0.0
        return (2.0 / n) * np.exp(beta * r - shift) * growth
    raise ValueError(f"the equiangular ODE is for model 'sa' or 'usa', got {model!r}")


def equiangular_rho(
    times: np.ndarray, beta: float, n: int, model: str = "sa", usa_scale: str = "n",
    rho0: float = 0.0,
) -> np.ndarray:
    """The common inner product ``rho(t)`` of the equiangular ODE from ``rho(0) = rho0``.

    Parameters
    ----------
    times : ndarray, shape (k,)
        Non-negative, increasing times.
    beta, n, model, usa_scale
        As in :func:`equiangular_rate`.
    rho0 : float
        Initial inner product (0: orthogonal, the d >> n limit).

    Returns
    -------
    ndarray, shape (k,)
        ``rho`` at ``times`` (RK45, relative tolerance 1e-10).
    """
    from scipy.integrate import solve_ivp

    t = np.asarray(times, dtype=np.float64)
    if t.size == 0:
        return t.copy()
    sol = solve_ivp(lambda _t, r: equiangular_rate(r, beta, n, model, usa_scale),
                    (0.0, float(t.max())), [float(rho0)], t_eval=t, rtol=1e-10, atol=1e-13)
    return np.minimum(sol.y[0], 1.0)


def frontier_time(
    beta: float, delta: float, n: int, model: str = "sa", usa_scale: str = "n"
) -> float:
    """The time at which the equiangular ``rho_beta(t)`` from 0 reaches ``1 - delta``.

    ``t = int_0^{1 - delta} d rho / rho'(rho)`` (quadrature: the rate is
    positive on [0, 1), so ``rho`` is increasing).

    Parameters
    ----------
    beta : float
    delta : float
        In (0, 1].
    n, model, usa_scale
        As in :func:`equiangular_rate`.

    Returns
    -------
    float
        The frontier of the (beta, t) phase diagram at ``beta``.
    """
    from scipy.integrate import quad

    if not 0.0 < delta <= 1.0:
        raise ValueError(f"delta must be in (0, 1], got {delta!r}")
    value, _ = quad(lambda r: 1.0 / float(equiangular_rate(r, beta, n, model, usa_scale)),
                    0.0, 1.0 - delta, epsabs=0.0, epsrel=1e-10, limit=200)
    return float(value)


def kuramoto_lorentzian_r(coupling: np.ndarray | float, gamma: float) -> np.ndarray:
    """Stationary Kuramoto order parameter for Lorentzian frequencies (n -> infinity).

    ``r = sqrt(1 - 2 gamma / K)`` above the critical coupling ``K_c = 2 gamma``
    and 0 below (Kuramoto 1975; gamma the half-width at half maximum, what
    ``omega="lorentzian:GAMMA"`` draws).

    Parameters
    ----------
    coupling : float or ndarray, shape (k,)
    gamma : float
        Half-width at half maximum (>= 0).

    Returns
    -------
    ndarray, shape of ``coupling``
    """
    K = np.asarray(coupling, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = 1.0 - 2.0 * gamma / K
    return np.where(K > 2.0 * gamma, np.sqrt(np.clip(r2, 0.0, None)), 0.0)


# ---------------------------------------------------------------- the Dataset


def grid_axes(ds: Any) -> list[str]:
    """The swept axes of a sweep Dataset, in the order of the grid."""
    for name in ("cluster_mean", "energy_mean", "pair_fraction", *ds.data_vars):
        if name in ds.data_vars:
            return [d for d in ds[name].dims if d not in _INNER]
    return []


def _base_config(ds: Any) -> dict[str, Any]:
    for key in ("config", "base_config", "base", "parameters"):
        raw = ds.attrs.get(key)
        if isinstance(raw, bytes):
            raw = raw.decode()
        if isinstance(raw, str):
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value.get("config", value) if "config" in value else value
        elif isinstance(raw, Mapping):
            return dict(raw)
    return {}


def sweep_setting(ds: Any, name: str, default: Any = None) -> Any:
    """The value of one simulation setting in a (selected) sweep Dataset.

    A swept axis reduced to one value gives that value; otherwise the base
    configuration stored in the attributes; otherwise ``default``.
    """
    if name in ds.coords and ds[name].size == 1:
        value = ds[name].values.reshape(-1)[0]
        return value.item() if hasattr(value, "item") else value
    base = _base_config(ds)
    if name in base:
        return base[name]
    return _config_defaults().get(name, default)


def _config_defaults() -> dict[str, Any]:
    """Defaults of :class:`~particles.config.SimulationConfig` (a stored
    configuration leaves them out)."""
    import dataclasses

    from particles.config import SimulationConfig

    return {f.name: f.default for f in dataclasses.fields(SimulationConfig)
            if f.default is not dataclasses.MISSING}


def stored_index(name: str, stored: np.ndarray, value: Any) -> int:
    """The index of ``value`` among the ``stored`` values of a sweep's axis (equal
    to rounding, 1e-9 relative: ``0.3`` finds ``0.30000000000000004``).

    Raises
    ------
    ValueError
        Not a number, or a value the sweep did not store (naming those it did):
        a plot of another value than the one asked for is never drawn.
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    stored = np.asarray(stored, dtype=np.float64)
    hit = np.flatnonzero(np.abs(stored - v) <= 1e-9 * np.maximum(1.0, np.abs(stored)))
    if not np.isfinite(v) or hit.size == 0:
        shown = ", ".join(f"{x:.6g}" for x in stored[:12]) + (", ..." if stored.size > 12 else "")
        raise ValueError(f"{name}={value} is not in this sweep ({name}: {shown})")
    return int(hit[0])


def _pick(ds: Any, where: Mapping[str, Any] | None) -> Any:
    """``ds`` at the fixed values of ``where`` (nearest for numbers; exact for text)."""
    axes = grid_axes(ds)
    for name, value in (where or {}).items():
        if name not in axes:
            raise ValueError(f"{name!r} is not an axis of this sweep "
                             f"(axes: {', '.join(axes) or 'none'})")
        coord = ds[name]
        if coord.dtype.kind in "fiu":
            ds = ds.isel({name: [stored_index(name, coord.values, value)]})
        else:
            values = [str(v) for v in coord.values]
            if str(value) not in values:
                raise ValueError(f"{name}={value} is not in this sweep ({', '.join(values)})")
            ds = ds.isel({name: [values.index(str(value))]})
    return ds


def _free(ds: Any, drawn: Sequence[str]) -> list[str]:
    """Grid axes with more than one value that are not drawn."""
    return [a for a in grid_axes(ds) if a not in drawn and ds.sizes[a] > 1]


def _one_panel(ds: Any, drawn: Sequence[str]) -> Any:
    free = _free(ds, drawn)
    if free:
        values = ", ".join(str(v) for v in ds[free[0]].values)
        raise ValueError(f"the sweep also varies {free[0]} ({values}): fix it with "
                         f"where={{{free[0]!r}: ...}} (--where {free[0]}=VALUE)")
    return ds.squeeze([a for a in grid_axes(ds) if a not in drawn], drop=False)


def _nearest_times(ds: Any, times: Sequence[float] | None, default: int = 1) -> np.ndarray:
    """Saved times nearest to ``times`` (default: ``default`` times spread over the run;
    times outside the saved range are refused, :func:`nearest_frames`)."""
    saved = np.asarray(ds["time"].values, dtype=np.float64)
    if times is None or len(times) == 0:
        if default == 1:
            return saved[-1:]
        pick = np.unique(np.linspace(0, saved.size - 1, default + 1).round().astype(int)[1:])
        return saved[pick]
    return saved[nearest_frames(saved, times)]


def _axis_label(name: str) -> str:
    return _SYMBOLS.get(name, name)


def _label(stat: str) -> str:
    return _LABELS.get(stat, stat.replace("_", " "))


def _title(ds: Any, drawn: Sequence[str]) -> str:
    """The settings of a panel: fixed grid values, then n, d, model, runs."""
    parts, fixed = [], [c for c in ds.coords
                        if c not in _INNER and c not in drawn and ds[c].size == 1]
    for a in fixed:
        parts.append(f"{_axis_label(a)}={_fmt(ds[a].values.reshape(-1)[0])}")
    for name in ("model", "n", "d"):
        if name not in fixed and name not in drawn:
            value = sweep_setting(ds, name)
            if value is not None:
                parts.append(f"{name}={_fmt(value)}")
    runs = ds.attrs.get("runs", ds.sizes.get("system"))
    if runs:
        parts.append(f"{int(runs)} runs")
    return ", ".join(parts)


def _fmt(v: Any) -> str:
    return value_text(v)  # grid values rounded for display; the file keeps them exact


def _new_axes(figsize=(5.5, 4.0)) -> Axes:
    return Figure(figsize=figsize, layout="constrained").add_subplot()


# ---------------------------------------------------------------- plot functions


def plot_phase_diagram(
    ds: Any,
    *,
    delta: float | None = None,
    axis: str = "beta",
    where: Mapping[str, Any] | None = None,
    theory: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """The (axis, t) map of the fraction of pairs with ``<x_i, x_j> > 1 - delta``.

    Parameters
    ----------
    ds : xarray.Dataset
        A sweep (``pair_fraction (*grid, time, delta)``).
    delta : float, optional
        The threshold (one the sweep stored; default the largest stored).
    axis : str
        Grid axis along x (default ``beta``).
    where : dict, optional
        Values of the other grid axes (those of length 1 need none).
    theory : bool
        Overlay the frontier ``rho_beta(t) = 1 - delta`` of the equiangular
        ODE (:func:`frontier_time`; for ``axis="beta"`` and models sa/usa).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    ds = _pick(ds, where)
    if axis not in grid_axes(ds):
        raise ValueError(f"{axis!r} is not an axis of this sweep (axes: "
                         f"{', '.join(grid_axes(ds))})")
    ds = _one_panel(ds, [axis])
    deltas = np.asarray(ds["delta"].values, dtype=np.float64)
    k = int(deltas.argmax()) if delta is None else stored_index("delta", deltas, delta)
    d = float(deltas[k])
    frac = ds["pair_fraction"].isel(delta=k).transpose("time", axis)
    x = np.asarray(ds[axis].values)
    t = np.asarray(ds["time"].values, dtype=np.float64)
    ax = ax if ax is not None else _new_axes()
    numeric = x.dtype.kind in "fiu"
    xs = x.astype(np.float64) if numeric else np.arange(x.size, dtype=np.float64)
    mesh = ax.pcolormesh(xs, t, np.asarray(frac.values, dtype=np.float64), shading="nearest",
                         vmin=0.0, vmax=1.0, cmap="viridis")
    ax.figure.colorbar(mesh, ax=ax,
                       label=f"fraction of pairs with ⟨x_i, x_j⟩ > 1 \u2212 {value_text(d)}")
    if not numeric:
        ax.set_xticks(xs, [_fmt(v) for v in x])
    model = str(sweep_setting(ds, "model", "sa"))
    n = sweep_setting(ds, "n")
    if theory and axis == "beta" and model in ("sa", "usa") and n is not None and numeric:
        scale = str(sweep_setting(ds, "usa_scale", "n"))
        fine = np.linspace(float(xs.min()), float(xs.max()), 200)
        front = np.array([frontier_time(b, d, int(n), model, scale) for b in fine])
        ax.plot(fine, front, color="white", lw=2.0, ls="--",
                label=f"theory (d → ∞): \u03c1_β(t) = 1 \u2212 {value_text(d)}")
        ax.legend(loc="upper left", fontsize="small", framealpha=0.6)
    ax.set_xlim(float(xs.min()) - 0.5 * _step(xs), float(xs.max()) + 0.5 * _step(xs))
    ax.set_ylim(float(t.min()), float(t.max()))
    ax.set_xlabel(_axis_label(axis))
    ax.set_ylabel("t")
    ax.set_title(_title(ds, [axis]), fontsize="small")
    return ax


def _step(x: np.ndarray) -> float:
    return float(np.diff(np.sort(x)).min()) if x.size > 1 else 1.0


def _band(ax: Axes, x: np.ndarray, da: Any, color: str, label: str,
          censor_at: float | None = None) -> tuple[np.ndarray | None, np.ndarray,
                                                   np.ndarray | None]:
    """Median line with the 25-75 % band of a statistic with a quantile dimension
    (:func:`~particles.plotting.censored.draw_quartiles`); returns (lo, mid, hi)."""
    q = np.asarray(da["quantile"].values, dtype=np.float64)

    def at(p: float) -> np.ndarray | None:
        i = np.flatnonzero(np.isclose(q, p))
        return None if i.size == 0 else np.asarray(da.isel(quantile=int(i[0])).values, float)

    mid = at(0.5)
    if mid is None:
        mid = np.asarray(da.isel(quantile=q.size // 2).values, float)
    lo, hi = at(0.25), at(0.75)
    draw_quartiles(ax, x, lo, mid, hi, color=color, label=label, censor_at=censor_at)
    return lo, mid, hi


def _x_values(ds: Any, axis: str, ax: Axes) -> np.ndarray:
    x = np.asarray(ds[axis].values)
    if x.dtype.kind in "fiu":
        return x.astype(np.float64)
    xs = np.arange(x.size, dtype=np.float64)
    ax.set_xticks(xs, [_fmt(v) for v in x])
    return xs


def plot_cluster_counts(
    ds: Any,
    *,
    times: Sequence[float] | None = None,
    axis: str = "beta",
    where: Mapping[str, Any] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Cluster count (median over the systems, 25-75 % band) against a grid axis.

    Parameters
    ----------
    ds : xarray.Dataset
        A sweep (``cluster_quantile (*grid, time, quantile)``).
    times : sequence of float, optional
        One line per time (nearest saved; default four times spread over the run).
    axis : str
        Grid axis along x (default ``beta``).
    where : dict, optional
        Values of the other grid axes.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    ds = _pick(ds, where)
    if axis not in grid_axes(ds):
        raise ValueError(f"{axis!r} is not an axis of this sweep (axes: "
                         f"{', '.join(grid_axes(ds))})")
    ds = _one_panel(ds, [axis])
    ax = ax if ax is not None else _new_axes()
    x = _x_values(ds, axis, ax)
    for j, t in enumerate(_nearest_times(ds, times, default=4)):
        da = ds["cluster_quantile"].sel(time=t).transpose(axis, "quantile")
        _band(ax, x, da, _COLORS[j % len(_COLORS)], f"t = {time_text(t)}")
    ax.set_xlabel(_axis_label(axis))
    ax.set_ylabel("cluster count (median, quartiles)")
    ax.set_ylim(bottom=0.5)
    ax.legend(fontsize="small")
    ax.set_title(_title(ds, [axis]), fontsize="small")
    return ax


def _risk(ds: Any, stat: str, axis: str, da: Any) -> RiskSet | None:
    """The systems a censored time statistic rests on at each ``axis`` value (None: the
    sweep does not store them)."""
    runs = int(ds.attrs.get("runs", ds.sizes.get("system", 0)))

    def count(name: str) -> np.ndarray | None:
        if name not in ds.data_vars:
            return None
        return np.asarray(ds[name].transpose(axis).values, dtype=np.int64).reshape(-1)

    if stat == "single_cluster_time":  # every system, inf: not reached by T
        inf = np.isposinf(np.asarray(da.transpose(axis, "system").values, dtype=np.float64))
        return RiskSet(np.full(inf.shape[0], inf.shape[1]), inf.sum(axis=1), inf.shape[1])
    not_formed = count("formation_censored")
    if stat == "formation_time" and not_formed is not None:
        return RiskSet(np.full(not_formed.shape, runs), not_formed, runs)
    one, merged_not = count("first_merge_one_cluster"), count("first_merge_censored")
    if stat == "first_merge_time" and all(v is not None for v in (not_formed, one, merged_not)):
        # over the systems that formed two or more clusters (particles.analysis.ensemble)
        return RiskSet(runs - not_formed - one, merged_not, runs,
                       {"formed one cluster": one, "never formed": not_formed})
    return None


def _kuramoto_gamma(ds: Any) -> float | None:
    """Half-width of the Lorentzian frequencies of a Kuramoto sweep panel, else None."""
    if str(sweep_setting(ds, "model", "")) != "kuramoto":
        return None
    omega = sweep_setting(ds, "omega")
    if isinstance(omega, bytes):
        omega = omega.decode()
    if not isinstance(omega, str):
        return None
    parts = omega.split(":")
    if parts[0] != "lorentzian" or len(parts) < 2:
        return None
    try:
        return float(parts[1])
    except ValueError:
        return None


def plot_sweep_curve(
    ds: Any,
    stat: str,
    *,
    axis: str | None = None,
    times: Sequence[float] | None = None,
    delta: float | None = None,
    clusters: int | None = None,
    where: Mapping[str, Any] | None = None,
    theory: bool = True,
    log: bool | None = None,
    ax: Axes | None = None,
    report: Callable[[str], None] | None = None,
) -> Axes:
    """Any statistic of a sweep against any grid axis.

    Parameters
    ----------
    ds : xarray.Dataset
        A sweep.
    stat : str
        A data variable: one with a ``time`` dimension is drawn at ``times``
        (one line each, default the last time); one with a ``quantile``
        dimension as its median and 25-75 % band; ``single_cluster_time``
        (per system) as the median and quartiles over the systems;
        ``pair_fraction`` at ``delta`` (default the largest);
        ``cluster_distribution`` at ``clusters`` (default 1).
    axis : str, optional
        Grid axis along x (default the first one with more than one value).
    times : sequence of float, optional
    delta : float, optional
    clusters : int, optional
    where : dict, optional
        Values of the other grid axes.
    theory : bool
        Overlay the theory curves that apply: ``sqrt(1 - 2 gamma / K)``
        (:func:`kuramoto_lorentzian_r`) for ``order_parameter_mean`` against
        ``coupling`` in a Kuramoto sweep with ``omega="lorentzian:GAMMA"``.
    log : bool, optional
        Log y axis (default: for :data:`LOG_STATISTICS`).
    ax : matplotlib Axes, optional
    report : callable, optional
        :data:`CENSORED_STATISTICS` (times to an event, censored at the last
        save time T): called with one line per point giving the quartiles
        (``> T`` where censored) and the systems at risk.  Those statistics
        also mark a quartile or median beyond T (dashed to T, open triangles)
        and write the systems at risk along the bottom
        (:mod:`particles.plotting.censored`).

    Returns
    -------
    matplotlib Axes
    """
    if stat not in ds.data_vars:
        raise ValueError(f"{stat!r} is not a statistic of this sweep (one of "
                         f"{', '.join(sorted(ds.data_vars))})")
    ds = _pick(ds, where)
    axis = _curve_axis(ds, axis)
    ds = _one_panel(ds, [axis])
    da, label_extra = _curve_slice(ds, ds[stat], delta, clusters)
    if times is not None and len(times) and "time" not in da.dims:
        raise ValueError(f"times (--times) are not used by {stat}, which has no time "
                         "dimension")
    ax = ax if ax is not None else _new_axes()
    x = _x_values(ds, axis, ax)
    T = float(ds["time"].values[-1]) if stat in CENSORED_STATISTICS else None
    quartiles = _draw_curve(ax, ds, da, stat, axis, x, times, label_extra, T)
    drawn = [np.asarray(ln.get_ydata(), dtype=np.float64) for ln in ax.get_lines()
             if ln.get_gid() != CENSORED]
    risk = _risk(ds, stat, axis, da) if T is not None and quartiles is not None else None
    if risk is not None:
        write_at_risk(ax, x, risk)
        if report is not None:
            _report_risk(report, ds, axis, where, quartiles, risk, T)
    if not any(np.isfinite(y).any() for y in drawn):
        ax.text(0.5, 0.5, "not reached by any system (∞)", transform=ax.transAxes,
                ha="center", va="center", color="0.4")
    gamma = _kuramoto_gamma(ds)
    if theory and stat == "order_parameter_mean" and axis == "coupling" and gamma is not None:
        fine = np.linspace(float(x.min()), float(x.max()), 400)
        ax.plot(fine, kuramoto_lorentzian_r(fine, gamma), color="k", ls="--",
                label=f"√(1 \u2212 2\u03b3/K), \u03b3 = {value_text(gamma)} (n → ∞)")
    positive = any((np.isfinite(y) & (y > 0)).any() for y in drawn)
    if (log if log is not None else stat in LOG_STATISTICS) and positive:
        ax.set_yscale("log")
    ax.set_xlabel(_axis_label(axis))
    ax.set_ylabel(_label(stat))
    ax.legend(fontsize="small")
    ax.set_title(_title(ds, [axis]), fontsize="small")
    return ax


def _curve_axis(ds: Any, axis: str | None) -> str:
    """The grid axis along x: ``axis``, checked, or the first one with more than one value."""
    axes = grid_axes(ds)
    if axis is None:
        multi = [a for a in axes if ds.sizes[a] > 1]
        axis = multi[0] if multi else (axes[0] if axes else None)
    if axis not in axes:
        raise ValueError(f"{axis!r} is not an axis of this sweep (axes: {', '.join(axes)})")
    return axis


def _curve_slice(ds: Any, da: Any, delta: float | None,
                 clusters: int | None) -> tuple[Any, str]:
    """``da`` at one threshold ``delta`` and one cluster count, and the label's addition."""
    label_extra = ""
    if "delta" in da.dims:
        deltas = np.asarray(ds["delta"].values, dtype=np.float64)
        k = int(deltas.argmax()) if delta is None else stored_index("delta", deltas, delta)
        da = da.isel(delta=k)
        label_extra = f", δ = {value_text(deltas[k])}"
    if "clusters" in da.dims:
        k = 1 if clusters is None else int(clusters)
        ks = [int(v) for v in ds["clusters"].values]
        if k not in ks:
            raise ValueError(f"clusters must be one of {ks[0]}..{ks[-1]}, got {k}")
        da = da.sel(clusters=k)
        label_extra = f", {k} cluster{'s' if k != 1 else ''}"
    return da, label_extra


def _draw_curve(ax: Axes, ds: Any, da: Any, stat: str, axis: str, x: np.ndarray,
                times: Sequence[float] | None, label_extra: str,
                T: float | None) -> np.ndarray | None:
    """Draw ``da`` against ``x``: quartiles over systems, a line or band per time, a
    band over quantiles, or one line; return the quartiles (3, points) drawn, if any."""
    quartiles = None
    if "system" in da.dims:  # per-system values: median and quartiles over the systems
        values = np.asarray(da.transpose(axis, "system").values, dtype=np.float64)
        quartiles = np.quantile(values, [0.25, 0.5, 0.75], axis=1, method="inverted_cdf")
        draw_quartiles(ax, x, *quartiles, color=_COLORS[0], label="median over systems",
                       censor_at=T)
    elif "time" in da.dims:
        for j, t in enumerate(_nearest_times(ds, times)):
            sub = da.sel(time=t)
            color = _COLORS[j % len(_COLORS)]
            if "quantile" in sub.dims:
                _band(ax, x, sub.transpose(axis, "quantile"), color,
                      f"t = {time_text(t)}{label_extra}")
            else:
                ax.plot(x, np.asarray(sub.transpose(axis).values, float), color=color,
                        marker="o", ms=3, label=f"t = {time_text(t)}{label_extra}")
    elif "quantile" in da.dims:
        quartiles = _band(ax, x, da.transpose(axis, "quantile"), _COLORS[0],
                          "median, quartiles", censor_at=T)
    else:
        ax.plot(x, np.asarray(da.transpose(axis).values, float), color=_COLORS[0], marker="o",
                ms=3, label=_label(stat))
    return quartiles


def _report_risk(report: Callable[[str], None], ds: Any, axis: str,
                 where: Mapping[str, Any] | None, quartiles: Any, risk: Any,
                 T: float) -> None:
    """Call ``report`` with one line per point: its quartiles and the systems at risk."""
    fixed = [f"{k}={_fmt(v)}" for k, v in (where or {}).items()]
    names = [", ".join([*fixed, f"{axis}={_fmt(v)}"]) for v in ds[axis].values]
    for line in risk_lines(names, *quartiles, risk, T):
        report(line)


# ---------------------------------------------------------------- figures and files


#: figure kinds of :func:`sweep_figure` and ``particles plot SWEEP.h5 --kind``
#: (``FIGURES["sweep"]``; ``draw`` draws one panel).
SWEEP_KINDS: dict[str, FigureKind] = register_figures(
    "sweep", DEFAULT_SWEEP_KIND,
    FigureKind("phase-diagram", "(beta, t) map of the fraction of pairs with "
               "<x_i,x_j> > 1 - delta, with the high-dimensional theory frontier",
               plot_phase_diagram, options=("delta", "axis", "where", "theory")),
    FigureKind("clusters", "cluster count (median, quartiles) against a grid axis at chosen "
               "times", plot_cluster_counts, uses_times=True, options=("axis", "where")),
    FigureKind("curve", "any statistic (--stat) against any grid axis (--axis), with theory "
               "curves", plot_sweep_curve, uses_times=True,
               options=("stat", "axis", "delta", "clusters", "where", "theory", "log", "report"),
               needs=("stat",)),
)


def sweep_figure(
    ds: Any,
    kind: str = DEFAULT_SWEEP_KIND,
    *,
    where: Mapping[str, Any] | None = None,
    **options: Any,
) -> Figure:
    """A whole figure of one :data:`SWEEP_KINDS`: one panel per value of a free grid axis.

    Parameters
    ----------
    ds : xarray.Dataset
        A sweep.
    kind : str
        One of :data:`SWEEP_KINDS`.
    where : dict, optional
        Fixed values of grid axes.
    **options
        Passed to :func:`plot_phase_diagram` (delta, axis, theory),
        :func:`plot_cluster_counts` (times, axis) or :func:`plot_sweep_curve`
        (stat, axis, times, delta, clusters, theory, log, report; ``report``
        is dropped for the other kinds).

    Returns
    -------
    matplotlib Figure

    Raises
    ------
    ValueError
        Unknown kind, axis or statistic, or more than one grid axis left free (one line).
    """
    entry = figure_kind("sweep", kind)
    if "stat" in entry.needs:
        stat = options.pop("stat", None)
        if stat is None:
            raise ValueError(f"the {kind} kind needs a statistic (stat=..., --stat)")
        options = {"stat": stat, **options}
    if "report" not in entry.options:
        options.pop("report", None)  # only curves of censored times report
    picked = _pick(ds, where)
    axis = options.get("axis")
    if axis is None:
        if "stat" in entry.needs:  # a statistic against the first swept axis
            multi = [a for a in grid_axes(picked) if picked.sizes[a] > 1]
            axis = multi[0] if multi else None
        else:
            axis = "beta"
    free = _free(picked, [axis])
    if len(free) > 1:
        raise ValueError(f"the sweep varies {', '.join(free)} besides {axis}: fix all but one "
                         "with where (--where AXIS=VALUE)")
    values = list(picked[free[0]].values) if free else [None]
    cols = min(3, len(values))
    rows = math.ceil(len(values) / cols)
    fig = Figure(figsize=(5.5 * cols, 4.2 * rows), layout="constrained")
    for k, value in enumerate(values):
        ax = fig.add_subplot(rows, cols, k + 1)
        fixed = dict(where or {})
        if free:
            fixed[free[0]] = value.item() if hasattr(value, "item") else value
        entry.draw(ds, where=fixed, ax=ax, **options)
    return fig


def default_sweep_output(path: str | os.PathLike, kind: str) -> Path:
    """``sweep.h5`` -> ``sweep_<kind>.png`` next to the input."""
    p = Path(path)
    return p.with_name(f"{p.stem}_{kind}.png")


def save_sweep_plot(
    ds: Any,
    kind: str,
    out: str | os.PathLike,
    *,
    overwrite: bool = False,
    dpi: int = 120,
    **options: Any,
) -> Path:
    """Draw :func:`sweep_figure` and write it (any format matplotlib writes; Agg, nothing shown).

    Parameters
    ----------
    ds : xarray.Dataset
    kind : str
        One of :data:`SWEEP_KINDS`.
    out : str or path-like
    overwrite : bool
        Replace an existing ``out``.
    dpi : int
    **options
        Passed to :func:`sweep_figure`.

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    particles.errors.OutputExistsError
        ``out`` exists and ``overwrite`` is False (checked before drawing).
    particles.errors.OutputPathError
        ``out`` is a directory, or its directory is missing or read-only.
    """
    out = check_output_path(out, overwrite=overwrite, resumable=False)
    return save_figure(sweep_figure(ds, kind, **options), out, overwrite=overwrite, dpi=dpi)
