"""The plain-text summary of a whole-run analysis, one function per section.

:meth:`particles.analysis.AnalysisResult.summary` joins the sections:
the header line (:func:`header_line`), the cluster counts at chosen times
(:func:`count_table`: one system, or an ensemble's distribution), the time
scales (:func:`timescale_lines`), the merges (:func:`merge_lines`), the
merges located while the run ran (:func:`located_lines`), the systems'
passages to ``until_clusters`` (:func:`passage_lines`) and the splits.
Each takes the result (an :class:`~particles.analysis.AnalysisResult`, typed
``Any`` here: this module sits below :mod:`particles.analysis.report`, which
imports it) and returns lines of text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from particles.analysis.components import DEFAULT_EPS
from particles.display import time_text, value_text
from particles.io.analysis import ANALYSIS_GROUP

if TYPE_CHECKING:
    from particles.analysis.ensemble import EnsembleStats
    from particles.analysis.merges import Timescales
    from particles.analysis.tracking import MergeEvent

__all__ = [
    "count_table",
    "header_line",
    "located_lines",
    "merge_lines",
    "merge_phase",
    "passage_lines",
    "summary_text",
    "timescale_lines",
]


def merge_phase(time: float, formation_time: float) -> str:
    """``"fast"`` before the formation time, ``"slow"`` after, ``"unformed"`` without one."""
    if np.isnan(formation_time):
        return "unformed"
    return "slow" if time > formation_time else "fast"


def summary_text(result: Any, times: Any = None, max_merges: int = 40) -> str:
    """The whole summary (see :meth:`~particles.analysis.AnalysisResult.summary`)."""
    lines = [header_line(result), ""]
    lines += count_table(result, times)
    lines.append("")
    lines += timescale_lines(result)
    lines.append("")
    lines += merge_lines(result, max_merges)
    if result.located:
        lines.append("")
        lines += located_lines(result, max_merges)
    if result.passages:
        lines.append("")
        lines += passage_lines(result, max_merges)
    if result.splits:
        lines.append(f"splits: {len(result.splits)} (tokens drifted past eps)")
    return "\n".join(lines)


def header_line(result: Any) -> str:
    """Source, model, n, d, beta, batch, frames, time range and the cluster rule."""
    info, s = result.info, result.settings
    src = f"{info['source']}: " if info.get("source") else ""
    model = f"{info['model']}  " if info.get("model") else ""
    ens = f"  batch={result.batch}" if result.batch is not None else ""
    eps = "largest gap" if s["method"] == "gap" else f"eps={value_text(s['eps'])} rad"
    return (
        f"{src}{model}n={info.get('n')}  d={info.get('d')}  "
        f"beta={value_text(info.get('beta'))}{ens}  frames={result.times.size}  "
        f"t=[{time_text(result.times[0])}, {time_text(result.times[-1])}]  clusters: {eps} "
        f"({s['method']})"
    )


def count_table(result: Any, times: Any = None) -> list[str]:
    """The counts at the table times (default
    :meth:`~particles.analysis.AnalysisResult.default_table_times`): a header and one row each."""
    table_times = result.default_table_times() if times is None else times
    ft, fc = result.counts_at(table_times)
    idx = np.searchsorted(result.times, ft)
    rows = zip(ft, fc, idx, strict=True)
    if result.batch is None:
        return [_single_head(result), *(_single_row(result, t, c, f) for t, c, f in rows)]
    st = result.ensemble()
    return [_ensemble_head(result), *(_ensemble_row(result, st, t, c, f) for t, c, f in rows)]


def _mass_head(result: Any) -> str:
    frac = result.settings.get("mass_fraction")
    return f">={100 * frac:g}%" if frac is not None else ""


def _single_head(result: Any) -> str:
    head = f"{'time':>12}  {'clusters':>8}"
    head += f"  {_mass_head(result):>7}" if result.mass_counts is not None else ""
    head += f"  {'mode k':>6}  {'|c_k|':>7}" if result.fourier_mode is not None else ""
    return head + (f"  {'r':>7}" if result.scalars.get("order_parameter") is not None else "")


def _single_row(result: Any, t: float, c: Any, f: int) -> str:
    mc, mode, mod = result.mass_counts, result.fourier_mode, result.fourier_modulus
    r = result.scalars.get("order_parameter")
    shown = "spread" if result.spread[f] else f"{int(c)}"
    row = f"{time_text(t):>12}  {shown:>8}"
    row += f"  {int(mc[f]):>7d}" if mc is not None else ""
    row += f"  {int(mode[f]):>6d}  {float(mod[f]):>7.4f}" if mode is not None else ""
    row += f"  {float(r[f]):>7.4f}" if r is not None else ""
    return row


def _ensemble_head(result: Any) -> str:
    mc, mode = result.mass_counts, result.fourier_mode
    return (
        f"{'time':>12}  {'mean':>6}  {'min':>4}  {'q25':>4}  {'med':>4}  {'q75':>4}  "
        f"{'max':>4}" + (f"  {'mean ' + _mass_head(result):>10}" if mc is not None else "")
        + (f"  {'mode k':>6}" if mode is not None else "")
        + (f"  {'mean r':>7}" if result.scalars.get("order_parameter") is not None else "")
        + "   systems by count (count:systems)"
    )


def _count_quantile(st: EnsembleStats, f: int, level: float, counts: np.ndarray) -> int:
    """A count quantile of frame ``f``: the stored one where its level is stored."""
    lv = list(st.levels)
    if level in lv:
        return int(st.count_quantiles[f, lv.index(level)])
    return int(np.quantile(counts, level, method="inverted_cdf"))


def _ensemble_row(result: Any, st: EnsembleStats, t: float, c: np.ndarray,
                  f: int) -> str:
    mc, mode = result.mass_counts, result.fourier_mode
    r = result.scalars.get("order_parameter")
    have = c[c != 0]  # spread systems have no count
    if have.size:
        q = [_count_quantile(st, f, level, have) for level in (0.25, 0.5, 0.75)]
        row = (f"{time_text(t):>12}  {have.mean():>6.3g}  {have.min():>4d}  "
               f"{q[0]:>4d}  {q[1]:>4d}  {q[2]:>4d}  {have.max():>4d}")
    else:
        row = f"{time_text(t):>12}  {'spread':>6}  " + "  ".join(["   -"] * 5)
    if mc is not None:
        m = mc[f][c != 0]
        row += f"  {m.mean():>10.3g}" if m.size else f"  {'-':>10}"
    if mode is not None:
        # the mode most systems show (ties: the smallest k)
        row += f"  {int(np.bincount(mode[f]).argmax()):>6d}"
    row += f"  {float(np.mean(r[f])):>7.4f}" if r is not None else ""
    sp = int(result.spread[f].sum())
    note = f"  ({sp} spread)" if sp else ""
    return f"{row}   {st.distribution_line(f)}{note}"


def timescale_lines(result: Any) -> list[str]:
    """The time-scale rule, an ensemble's quantiles, and one line per system (20 at most)."""
    s, batch = result.settings, result.batch
    lines = [
        f"time scales (long-lived plateau: >= {value_text(s['min_decades'])} decade(s) of "
        f"time, measured from max(start, {value_text(s['time_unit'])}))"
    ]
    if batch is not None:
        lines += [result.ensemble().table(), "", "per system:"]
    shown = result.timescales if batch is None else result.timescales[:20]
    lines += [_system_line(result, ts) for ts in shown]
    if batch is not None and len(result.timescales) > len(shown):
        lines.append(f"  ... {len(result.timescales) - len(shown)} more systems")
    return lines


def _system_line(result: Any, ts: Timescales) -> str:
    """One system's formation and first merge (or why there is none)."""
    who = "" if result.batch is None else f"system {ts.system}: "
    if np.isnan(ts.formation_time):
        return f"  {who}{_unformed_text(result, ts)}"
    if np.isnan(ts.first_merge_time):
        merge = ("one cluster: nothing to merge" if ts.clusters_formed == 1
                 else "no merge after formation")
    else:
        merge = f"first merge {time_text(ts.first_merge_time)}"
        if np.isfinite(ts.separation):
            merge += f" ({ts.separation:.2f} decades later)"
    k = ts.clusters_formed
    return (f"  {who}formation time {time_text(ts.formation_time)} "
            f"({k} cluster{'s' if k != 1 else ''}); {merge}")


def _unformed_text(result: Any, ts: Timescales) -> str:
    """Why a system formed no clusters: spread at the end, or no long-lived plateau."""
    last = result.times.size - 1
    at = last if result.batch is None else (last, ts.system)
    if not result.spread[at]:
        return "no long-lived plateau (clusters not formed)"
    r = result.scalars.get("order_parameter")
    rr = "" if r is None else f", r={float(r[at]):.3g}"
    return ("no clusters formed: at the end a linked group of tokens spans "
            f"more than 90 degrees (spread population{rr})")


def merge_lines(result: Any, max_merges: int) -> list[str]:
    """The merges: all of them, or (more than ``max_merges``) the slow ones, and
    what was left out."""
    form = {ts.system: ts.formation_time for ts in result.timescales}

    def phase(ev: MergeEvent) -> str:
        return merge_phase(ev.time, form[ev.system])

    batch = result.batch
    shown = result.merges
    if len(result.merges) > max_merges:
        # too many to list: the slow (metastable) merges are the news
        shown = [ev for ev in result.merges if phase(ev) == "slow"]
    lines = [
        f"merges ({len(result.merges)}): time, "
        + ("system, " if batch is not None else "")
        + "surviving id <- absorbed ids, sizes, phase"
    ]
    if len(shown) < len(result.merges):
        lines.append(_hidden_merges_line([phase(ev) for ev in result.merges]))
    for ev in shown[:max_merges]:
        who = f"  system {ev.system:<3d}" if batch is not None else ""
        gone = ",".join(map(str, ev.absorbed))
        sizes = " + ".join(map(str, ev.sizes))
        lines.append(
            f"  t={time_text(ev.time):<10}{who}  {ev.into} <- {gone:<8}  "
            f"sizes {sizes} = {ev.size_after}  {phase(ev)}"
        )
    if len(shown) > max_merges:
        lines.append(f"  ... {len(shown) - max_merges} more")
    return lines


def _hidden_merges_line(phases: list[str]) -> str:
    """What the merge list leaves out: the fast merges and those of unformed systems."""
    fast = phases.count("fast")
    unformed = phases.count("unformed")
    parts = []
    if fast:
        parts.append(f"{fast} fast merges before the formation time")
    if unformed:
        parts.append(
            f"{unformed} merges in systems whose clusters never formed (no formation time)"
        )
    return f"  ({'; '.join(parts)} not listed; all are in /{ANALYSIS_GROUP}/merges)"


def located_lines(result: Any, max_merges: int) -> list[str]:
    """The merges the run located, each with the saved frames around it (and its
    system, in an ensemble)."""
    located, times = result.located, result.times
    ensemble = result.batch is not None
    lines = [f"merges located while it ran ({len(located)}; eps "
             f"{value_text(DEFAULT_EPS)} rad, to the integrator's tolerance): "
             + ("system, " if ensemble else "")
             + "time, clusters before -> after, between saved frames"]
    for m in located[:max_merges]:
        k = int(np.searchsorted(times, m.time, side="left"))
        lo = time_text(times[k - 1]) if k > 0 else "-"
        hi = time_text(times[k]) if k < times.size else "-"
        system = f"  {m.system:>4d}" if ensemble else ""
        lines.append(f"{system}  t={m.time:<12.6g}  {m.before:>4d} -> {m.after:<4d}  "
                     f"({lo}, {hi}]")
    if len(located) > max_merges:
        lines.append(f"  ... {len(located) - max_merges} more (to_dataframe('located'))")
    return lines


def passage_lines(result: Any, max_rows: int) -> list[str]:
    """Each system's first passage to ``until_clusters`` (per value it had)."""
    passages, times = result.passages, result.times
    lines = [f"first passages to until_clusters ({len(passages)}): until, system, time "
             "(a located merge, else the first saved frame there), frame"]
    for p in passages[:max_rows]:
        when = "before it (not recorded)" if np.isnan(p.time) else f"t={p.time:.6g}"
        frame = time_text(times[p.frame]) if p.frame < times.size else "-"
        lines.append(f"  {p.until:>4d}  {p.system:>4d}  {when:<24}  frame {p.frame} "
                     f"(t={frame})")
    if len(passages) > max_rows:
        lines.append(f"  ... {len(passages) - max_rows} more (to_dataframe('passages'))")
    return lines
