"""Times to an event, censored at the end of the run, drawn and told so the censoring shows.

A system whose event (formation, first merge, a single cluster) did not come
by the run's end ``T`` is *censored*: its time is only known to exceed ``T``.
A quartile the ensemble did not reach (Kaplan-Meier, or over the systems) is
then ``+inf``.  Left to matplotlib such a band or median simply vanishes; here

* an upper quartile beyond ``T`` is a dashed line from the lower quartile to
  ``T`` ending in an open triangle (legend "censored: quartile > T");
* a median beyond ``T`` is a larger open triangle at ``T`` ("median > T");
* every finite quartile range is also a vertical bar, so a point whose
  neighbours are censored or undefined still shows its band;
* the systems *at risk* of the event (those whose time the estimate rests
  on) label a second x axis on top, one number per point, and are returned
  as one line per point (:func:`risk_lines`) for the CLI to print.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from matplotlib.axes import Axes

from particles.display import time_text

__all__ = ["CENSORED", "RiskSet", "draw_quartiles", "risk_lines", "write_at_risk"]

#: gid of the artists that mark censoring (they are not data: callers can skip them).
CENSORED = "censored"


@dataclass(frozen=True)
class RiskSet:
    """Who a censored time statistic rests on, per point of a curve.

    Attributes
    ----------
    at_risk : ndarray of int, shape (k,)
        Systems at risk of the event (the estimate's sample).
    censored : ndarray of int, shape (k,)
        Those among them without the event by the end of the run.
    total : int
        Systems per point.
    left_out : dict of str to ndarray of int, shape (k,)
        Systems not at risk, by reason (``"formed one cluster"``, ...).
    """

    at_risk: np.ndarray
    censored: np.ndarray
    total: int
    left_out: Mapping[str, np.ndarray] = field(default_factory=dict)


def draw_quartiles(ax: Axes, x: np.ndarray, lo: np.ndarray | None, mid: np.ndarray,
                   hi: np.ndarray | None, *, color: str, label: str,
                   censor_at: float | None = None) -> None:
    """Median line and 25-75 % band, the quartiles beyond ``censor_at`` marked.

    Parameters
    ----------
    ax : Axes
    x : ndarray, shape (k,)
    lo, mid, hi : ndarray, shape (k,)
        Quartiles (``lo``/``hi`` None: median only); ``+inf``: not reached.
    color, label : str
    censor_at : float, optional
        The censoring time ``T`` (None: infinite values are not censoring, left out).
    """
    ax.plot(x, mid, color=color, marker="o", ms=3, label=label)
    if lo is not None and hi is not None:
        ok = np.isfinite(lo) & np.isfinite(hi)
        ax.fill_between(x, np.where(ok, lo, np.nan), np.where(ok, hi, np.nan), color=color,
                        alpha=0.25, lw=0)
    if censor_at is None:
        return
    T = float(censor_at)
    if lo is not None and hi is not None and ok.any():
        ax.vlines(x[ok], lo[ok], hi[ok], colors=color, lw=1.2)
    if hi is not None:
        cut = np.isposinf(hi)
        if cut.any():
            base = np.where(np.isfinite(lo), lo, T) if lo is not None else np.full(x.shape, T)
            ax.vlines(x[cut], base[cut], T, colors=color, linestyles="--", lw=1.2,
                      gid=CENSORED)
            ax.plot(x[cut], np.full(int(cut.sum()), T), "^", color=color, mfc="none", ms=6,
                    ls="none", gid=CENSORED,
                    label=f"censored: upper quartile > T = {time_text(T)}")
    late = np.isposinf(mid)
    if late.any():
        ax.plot(x[late], np.full(int(late.sum()), T), "^", color=color, mfc="none", ms=10,
                mew=1.6, ls="none", gid=CENSORED, label=f"censored: median > T = {time_text(T)}")


def write_at_risk(ax: Axes, x: np.ndarray, risk: RiskSet) -> Axes:
    """The systems at risk, one number per point, as the ticks of a second x axis on top.

    Returns
    -------
    Axes
        The secondary axis.
    """
    # every point keeps its number, those with nothing drawn (none at risk) too
    ax.dataLim.update_from_data_x(np.asarray(x, dtype=np.float64), ignore=False)
    ax.autoscale_view()
    top = ax.secondary_xaxis("top")
    top.set_xticks(x, [f"{int(k)}" for k in risk.at_risk], fontsize="x-small")
    top.tick_params(length=2, pad=1)
    top.set_xlabel(f"systems at risk of the event (of {risk.total})", fontsize="x-small")
    return top


def risk_lines(names: list[str], lo: np.ndarray | None, mid: np.ndarray,
               hi: np.ndarray | None, risk: RiskSet, censor_at: float) -> list[str]:
    """One line per point: the quartiles (``> T`` when censored) and the risk set.

    ``names[i]`` names the point (``"beta=2"``).
    """
    def t(v: float) -> str:
        if np.isnan(v):
            return "undefined"
        return f"> {time_text(censor_at)}" if np.isposinf(v) else time_text(v)

    lines = []
    for i, name in enumerate(names):
        out = "".join(f", {int(v[i])} {why}" for why, v in risk.left_out.items() if v[i])
        if not risk.at_risk[i]:
            lines.append(f"{name}: undefined, no system at risk (of {risk.total}{out})")
            continue
        quart = "" if lo is None or hi is None else f", quartiles {t(lo[i])} .. {t(hi[i])}"
        lines.append(f"{name}: median {t(mid[i])}{quart}; {int(risk.at_risk[i])} of "
                     f"{risk.total} systems at risk, {int(risk.censored[i])} censored at "
                     f"T = {time_text(censor_at)}{out}")
    return lines
