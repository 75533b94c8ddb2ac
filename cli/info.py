"""``particles info``: what a trajectory file holds."""

from __future__ import annotations

import os
from pathlib import Path

import click
import numpy as np
from particles_cli.options import option_name

from particles.display import time_text, value_text
from particles.errors import SweepError
from particles.io import RunSummary, TrajectoryFileError, kind_of, read_summary
from particles.io.analysis import AnalysisSummary, analysis_source, read_analysis_summary
from particles.io.density import DensitySummary, grid_description, read_density_summary


def _describe(key: str, value) -> str:
    """A short text for one configuration value (matrices and long lists summarised)."""
    if isinstance(value, list) and value and isinstance(value[0], list):
        return f"{len(value)}x{len(value[0])} matrix"
    if isinstance(value, list) and len(value) > 8:
        return f"{len(value)} values, {value_text(min(value))} .. {value_text(max(value))}"
    return "-" if value is None else value_text(value)


def _positions(s: RunSummary) -> str:
    """Which frames' positions the file keeps (``--positions``)."""
    kept = s.config.positions
    return {"all": "every frame", "final": "the latest frame only (--positions final)",
            "none": "none kept but the resume point (--positions none)"}.get(kept, kept)


def _analysis(path: Path) -> str:
    """Where ``particles analyze`` stored results for ``path``, or how to get them."""
    source = analysis_source(path)
    if source is None:
        return "- (particles analyze stores results in a file beside it)"
    return f"{source}:/analysis" + ("" if source != path else " (inside the trajectory)")


def stop_phrase(s: RunSummary) -> str:
    """Why a run ended or paused before its last save time, in option names
    (``"stopped by --until-clusters 3"``, ``"paused by --max-wall 60 s"``), or ""."""
    if s.stop_reason == "until_clusters":
        return f"stopped by --until-clusters {s.config.until_clusters}"
    if s.stop_reason == "max_wall":
        return f"paused by --max-wall {s.config.max_wall:g} s"
    return ""


def info_lines(s: RunSummary) -> list[str]:
    """The report of ``particles info``, one string per line."""
    stop = stop_phrase(s)
    if s.complete:
        status = "complete"
        if stop:
            status += f" ({stop} before the {s.frames_expected} frames planned)"
    else:
        paused = f"{stop}, " if stop else ""
        status = (
            f"incomplete ({paused}{s.frames} of {s.frames_expected} frames; continue with: "
            f"particles simulate --resume --out {s.path})"
        )
    config = s.config.to_dict()
    width = max(map(len, config))
    events = [f"merges       {s.merges} located (/events/merges)"] if s.config.merge_events else []
    if s.passages or s.config.until_clusters is not None:
        events.append(f"passages     {s.passages} recorded (each system's first passage to "
                      "--until-clusters; /events/passages)")
    return [
        f"{s.path}",
        f"status       {status}",
        f"frames       {s.frames} (t = 0 .. {time_text(s.time)}, last step {s.step})",
        *events,
        *switch_lines(s),
        *segment_lines(s),
        f"observables  {', '.join(s.observables) or '-'}",
        f"positions    {_positions(s)}",
        f"analysis     {_analysis(s.path)}",
        "configuration",
        *(f"  {k.ljust(width)}  {_describe(k, v)}{_chosen(s, k)}" for k, v in config.items()),
    ]


def _chosen(s: RunSummary, key: str) -> str:
    """How the file's summation was chosen, after its value."""
    return " (chosen by --summation auto)" if key == "summation" and s.summation_auto else ""


def switch_lines(s: RunSummary) -> list[str]:
    """Where ``--integrator auto`` went on with its stiff phase (/events/switches),
    one line each; that it has not yet, for a file of ``auto``; none for other files."""
    lines = [f"switched     {w.before} -> {w.after} after frame {w.frame} (t = "
             f"{time_text(w.time)}; mean step x spectral radius {w.stiffness:.3g}; "
             "--integrator auto, /events/switches)" for w in s.switches]
    if not lines and s.config.integrator == "auto":
        lines.append("switched     not yet (--integrator auto runs dopri5 until the run "
                     "turns stiff)")
    return lines


def segment_lines(s: RunSummary) -> list[str]:
    """The segments of a file resumed with changed settings (/segments), one line
    each: from which frame, which settings changed, when; none for other files."""
    if not s.segments:
        return []
    lines = [f"segments     {len(s.segments) + 1} (the settings that computed the frames; the "
             "configuration below is the last one's)",
             f"  0  frames 0 .. {s.segments[0].frame}: the run's first settings"]
    for i, seg in enumerate(s.segments, start=1):
        end = s.segments[i].frame if i < len(s.segments) else s.frames - 1
        frames = (f"frames {seg.frame + 1} .. {end}" if end > seg.frame
                  else "no frame of its own yet")
        changed = ", ".join(f"{option_name(k)} {_text(a)} -> {_text(b)}"
                            for k, (a, b) in seg.changes.items())
        lines.append(f"  {i}  {frames} (from t = {time_text(seg.time)}, {seg.written}): "
                     f"{changed}")
    return lines


def _text(value) -> str:
    return "-" if value is None else value_text(value)


def density_info_lines(s: DensitySummary) -> list[str]:
    """The report of ``particles info`` for a mean-field density file."""
    if s.complete:
        status = "complete"
    else:
        status = (
            f"incomplete ({s.frames} of {s.frames_expected} frames; continue with: "
            f"particles meanfield --resume --out {s.path})"
        )
    obs = s.final_observables
    config = s.config.to_dict()
    width = max(map(len, config))
    where, grid = grid_description(s.config)
    return [
        f"{s.path}",
        f"kind         mean-field density on {where} (particles meanfield)",
        f"status       {status}",
        f"frames       {s.frames} (t = 0 .. {time_text(s.time)}, {s.step} solver steps, "
        f"{int(obs['rejected_steps'])} rejected)",
        f"grid         {grid}",
        f"observables  {', '.join(s.observables) or '-'}",
        f"last frame   mass {obs['mass']:.12g}, energy {obs['energy']:.6g}, "
        f"min density {obs['min_density']:.3g}",
        "configuration",
        *(f"  {k.ljust(width)}  {_describe(k, v)}{_chosen(s, k)}" for k, v in config.items()),
    ]


def _chosen(s: RunSummary, key: str) -> str:
    """How the file's summation was chosen, after its value."""
    return " (chosen by --summation auto)" if key == "summation" and s.summation_auto else ""


def analysis_info_lines(s: AnalysisSummary) -> list[str]:
    """The report of ``particles info`` for the analysis results beside a trajectory."""
    a = s.attrs
    status = "complete" if s.complete else (
        f"incomplete ({s.datasets} of {s.expected} datasets; run particles analyze again)")
    batch = int(a.get("batch", 0) or 0)
    run = [f"{k}={value_text(a[k])}" for k in ("n", "d", "beta") if k in a]
    run += [f"batch={batch}"] if batch else []
    model = str(a.get("model", "") or "")
    method = str(a.get("method", "-"))
    eps = float(a.get("eps", np.nan))
    rule = "largest gap" if method == "gap" or np.isnan(eps) else f"eps={value_text(eps)} rad"
    return [
        f"{s.path}",
        "kind         trajectory analysis (particles analyze)",
        f"trajectory   {s.trajectory or '-'}",
        f"status       {status}",
        f"frames       {s.frames} analysed",
        f"run          {'  '.join(([model] if model else []) + run) or '-'}",
        f"clusters     {rule} ({method})",
        f"format       {a.get('format_version', 1)}, written by {a.get('created_by', '-')}",
    ]


def _values(values) -> str:
    """A grid axis in a few words: the values, or their count and range."""
    if len(values) <= 6:
        return ", ".join(map(value_text, values))
    if all(isinstance(v, (int, float)) for v in values):
        return f"{len(values)} values, {value_text(min(values))} .. {value_text(max(values))}"
    return f"{len(values)} values, {values[0]} .. {values[-1]}"


def _merge_line(path: Path) -> str | None:
    """The risk set of the first merges of a finished sweep, over every grid point."""
    from particles.io.sweep import open_sweep, read_stats

    with open_sweep(path) as f:
        stats = read_stats(f)
    if "first_merge_one_cluster" not in stats:  # a sweep of an older format
        return None
    one, censored, unformed = (int(np.sum(stats[k][0])) for k in (
        "first_merge_one_cluster", "first_merge_censored", "formation_censored"))
    return (f"merges       first-merge quantiles over the systems that formed 2+ clusters; "
            f"{one} formed one cluster (nothing to merge), {censored} had no merge by T, "
            f"{unformed} never formed (all grid points)")


def _watch_lines(spec) -> list[str]:
    """The sweep's merge events and stop at a cluster count, where set."""
    out = []
    if spec.merge_events:
        out.append("events       merges located between save times (--merge-events): "
                   "first-merge and single-cluster times from them")
    if spec.until_clusters is not None:
        out.append(f"stop         each grid point at {spec.until_clusters} clusters or fewer "
                   "in every system (--until-clusters)")
    return out


def sweep_info_lines(path: Path) -> list[str]:
    """The report of ``particles info`` for a sweep file (``particles sweep``)."""
    from particles.io.sweep import read_header
    from particles.sweep import SweepSpec

    h = read_header(path)
    spec = SweepSpec.from_json(h.spec)
    total = h.done.size
    if h.complete:
        status = "complete"
    else:
        status = (f"incomplete ({h.systems_done} of {total} systems done; continue with: "
                  f"particles sweep --resume --out {path})")
    fixed = dict(spec.base)
    width = max(map(len, fixed), default=0)
    t = h.times
    return [
        f"{path}",
        "kind         parameter sweep (particles sweep)",
        f"status       {status}",
        f"grid         {' x '.join(map(str, spec.shape)) or '1'} points: "
        + ("; ".join(f"{k} = {_values(v)}" for k, v in spec.axes) or "one point"),
        f"systems      {spec.runs} per grid point, {total} in all, seed {spec.seed}",
        f"times        {len(t)} save times"
        + (f", t = {time_text(t[0])} .. {time_text(t[-1])}" if len(t) else ""),
        f"statistics   deltas {', '.join(map(value_text, spec.deltas))}; cluster eps "
        f"{value_text(spec.eps)}; positions {'stored' if h.positions else 'not stored'}",
        *([line] if (line := _merge_line(path) if h.complete else None) else []),
        *_watch_lines(spec),
        "fixed",
        *(f"  {k.ljust(width)}  {_describe(k, v)}" for k, v in fixed.items()),
    ]


def cache_lines() -> list[str]:
    """Where the compiled-kernel cache writes and loads, what it holds, whether it
    is writable."""
    from particles._numba import cache_dir, cache_entries, cache_load_dirs, user_cache_dir

    path, reason = cache_dir()
    entries, nbytes = cache_entries()
    writable = os.access(path, os.W_OK) if path.exists() else os.access(
        next((p for p in path.parents if p.exists()), Path("/")), os.W_OK)
    loads = [p for p in cache_load_dirs() if p != path]
    return [
        f"cache        {path} ({reason})",
        f"entries      {entries} compiled entry points, {nbytes / 2**20:.1f} MiB",
        f"writable     {'yes' if writable else 'no'}",
        *(f"loads also   {p} (read when the cache above misses)" for p in loads),
        f"fallback     {user_cache_dir()} (per-user; NUMBA_CACHE_DIR overrides)",
    ]


@click.command("info")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                required=False)
@click.option("--cache", is_flag=True,
              help="Print where the compiled-kernel cache is and what it holds.")
def info(path: Path | None, cache: bool) -> None:
    """Print the configuration, frames, completion and observables of a trajectory file.

    A mean-field density file (particles meanfield) and a sweep file (particles
    sweep) are described the same way.
    """
    if cache:
        click.echo("\n".join(cache_lines()))
        if path is None:
            return
    if path is None:
        raise click.UsageError("give a trajectory file PATH, or --cache")
    describe = {"density": lambda p: density_info_lines(read_density_summary(p)),
                "sweep": sweep_info_lines,
                "analysis": lambda p: analysis_info_lines(read_analysis_summary(p))}.get(
                    kind_name(path))
    try:
        lines = describe(path) if describe is not None else info_lines(read_summary(path))
    except (TrajectoryFileError, SweepError) as exc:
        raise click.BadParameter(str(exc), param_hint="'PATH'") from None
    click.echo("\n".join(lines))


def kind_name(path: Path) -> str | None:
    """The name of the file kind of ``path`` (:func:`particles.io.kind_of`), or None
    when no kind can open it (its reader then says why)."""
    try:
        return kind_of(path).name
    except TrajectoryFileError:
        return None
