"""``particles plot``: pictures of a trajectory file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np
from particles_cli import interrupts
from particles_cli.analyze import parse_times
from particles_cli.info import kind_name
from particles_cli.options import output_refused

from particles.errors import OutputPathError
from particles.io import FILE_KINDS, TrajectoryFileError, read_summary
from particles.io.density import is_density_file
from particles.paths import check_output_path
from particles.plotting import DEFAULT_FIGURES, FIGURES, default_output, plot_file
from particles.plotting.density import default_density_output, plot_density_file
from particles.plotting.frames import nearest_frames
from particles.plotting.kinds import FigureKind, figure_owner

#: the largest --dpi: a figure of 10 x 6 inches is then 10000 x 6000 pixels.
MAX_DPI = 1000


def image_formats() -> list[str]:
    """Extensions (no dot) matplotlib can write a figure to."""
    from matplotlib.backend_bases import FigureCanvasBase

    return sorted(FigureCanvasBase.get_supported_filetypes())


#: animated formats a movie may be written to (where Pillow can write them).
MOVIE_FORMATS = ("gif", "png", "apng", "webp")


def movie_formats() -> list[str]:
    """Extensions (no dot) of :data:`MOVIE_FORMATS` Pillow can write an animation to."""
    from PIL import Image

    Image.init()
    known = Image.registered_extensions()
    return [f for f in MOVIE_FORMATS if known.get(f".{f}") in Image.SAVE_ALL]


def check_output_format(out: Path, formats: list[str], what: str, hint: str = "'--out'") -> None:
    """Refuse an output name whose extension ``formats`` lacks, before any work.

    Raises
    ------
    click.BadParameter
    """
    ext = out.suffix.lower().lstrip(".")
    if ext not in formats:
        got = f"'.{ext}'" if ext else "no extension"
        raise click.BadParameter(
            f"{out}: {got} is not a format {what} can be written to; use one of "
            + ", ".join(f".{f}" for f in formats),
            param_hint=hint,
        )


def check_plot_options(
    path: Path, kind: str, out: Path | None, system: int, overwrite: bool,
    times: np.ndarray | None = None,
) -> None:
    """Everything ``plot`` can refuse from the file header alone, before loading frames.

    Raises
    ------
    click.BadParameter
        Unsupported extension, ``--out`` equal to PATH, existing (without
        ``--overwrite``) or in a missing or read-only directory, ``--system``
        outside the file's ensemble, PATH not a trajectory.
    click.UsageError
        ``--times`` outside the file's saved times (they start at 0 and end
        at the last frame's time).
    """
    target = default_output(path, kind) if out is None else out
    if FIGURES["trajectory"][kind].animated:
        check_output_format(target, movie_formats(), "a movie")
    else:
        check_output_format(target, image_formats(), "a picture")
    if target.resolve() == path.resolve():
        raise click.BadParameter(
            f"{out} is the input trajectory; the picture needs another name", param_hint="'--out'"
        )
    try:
        check_output_path(target, overwrite=overwrite, resumable=False)
    except OutputPathError as exc:
        raise output_refused(exc) from None
    try:
        summary = read_summary(path)
    except TrajectoryFileError as exc:
        raise click.BadParameter(str(exc), param_hint="'PATH'") from None
    if times is not None:
        try:
            nearest_frames([0.0, summary.time], times)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    batch = summary.config.batch
    count = batch or 1
    if not 0 <= system < count:
        what = "a single system" if batch is None else f"an ensemble of {batch}"
        raise click.BadParameter(
            f"must be in [0, {count}) for {what} ({path}), got {system}", param_hint="'--system'"
        )


def check_density_options(
    path: Path, kind: str | None, out: Path | None, other: Path | None, overwrite: bool
) -> str:
    """What ``plot`` can refuse for a mean-field density file (or ``--kind compare``)
    before loading frames; returns the kind to draw.

    Raises
    ------
    click.BadParameter, click.UsageError
    """
    density = is_density_file(path)
    figures = FIGURES["density"]
    kind = kind or DEFAULT_FIGURES["density" if density else "trajectory"]
    if kind not in figures:
        raise click.BadParameter(
            f"{path} is a mean-field density file; it draws {' or '.join(figures)}, "
            f"not {kind!r}", param_hint="'--kind'")
    paired = " or ".join(f"--kind {k.name}" for k in figures.values() if "other" in k.needs)
    if "other" in figures[kind].needs:
        if other is None:
            raise click.UsageError(f"--kind {kind} needs --with RUN.h5, a particle run on "
                                   "the density's circle or S^2 (or the density file, when "
                                   "PATH is the run)")
        if not density and not is_density_file(other):
            raise click.BadParameter(f"neither {path} nor {other} is a mean-field density "
                                     "file (particles meanfield)", param_hint="'--with'")
        if other.resolve() == path.resolve():
            raise click.BadParameter(f"{other} is PATH itself", param_hint="'--with'")
    elif other is not None:
        raise click.UsageError(f"--with is for {paired}")
    elif not density:
        raise click.BadParameter(f"{path} is a particle run; --kind density draws a "
                                 "mean-field density file (particles meanfield)",
                                 param_hint="'--kind'")
    field = path if density else other
    target = default_density_output(field, kind) if out is None else out
    check_output_format(target, image_formats(), "a picture")
    if target.resolve() in (path.resolve(), *((other.resolve(),) if other else ())):
        raise click.BadParameter(f"{out} is an input file; the picture needs another name",
                                 param_hint="'--out'")
    try:
        check_output_path(target, overwrite=overwrite, resumable=False)
    except OutputPathError as exc:
        raise output_refused(exc) from None
    return kind


def parse_where(value: str | None) -> dict[str, str]:
    """``"d=3,model=sa"`` -> ``{"d": "3", "model": "sa"}`` (values checked by the plot).

    Raises
    ------
    click.BadParameter
    """
    out: dict[str, str] = {}
    for part in (value or "").split(","):
        if not part.strip():
            continue
        name, eq, v = part.partition("=")
        if not eq or not name.strip() or not v.strip():
            raise click.BadParameter(f"must be AXIS=VALUE[,AXIS=VALUE...], got {value!r}",
                                     param_hint="'--where'")
        out[name.strip()] = v.strip()
    return out


#: options that only sweep pictures use, and those only trajectory pictures use.
SWEEP_ONLY = ("stat", "axis", "delta", "where", "log")
TRAJECTORY_ONLY = ("system",)


def sweep_entry(ctx: click.Context, kind: str, other: Path | None) -> FigureKind:
    """The sweep figure ``kind``, once the options that cannot go with it are refused.

    Raises
    ------
    click.BadParameter, click.UsageError
    """
    if other is not None:
        raise click.UsageError("--with is for --kind compare of a mean-field density file")
    figures = FIGURES["sweep"]
    if kind not in figures:
        raise click.BadParameter(f"{kind!r} draws a trajectory; a sweep file has the kinds "
                                 + ", ".join(figures), param_hint="'--kind'")
    entry = figures[kind]
    for name in TRAJECTORY_ONLY:
        if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT:
            raise click.BadParameter("is for trajectory files, not sweeps",
                                     param_hint=f"'--{name}'")
    if "stat" in entry.needs and ctx.params["stat"] is None:
        raise click.BadParameter(f"the {kind} kind needs a statistic, e.g. --stat "
                                 "first_merge_time", param_hint="'--stat'")
    return entry


def sweep_options(ctx: click.Context, entry: FigureKind, times: str | None,
                  report: Callable[[str], None]) -> dict[str, Any]:
    """The keywords of :func:`~particles.plotting.sweep.save_sweep_plot` for ``entry``.

    Raises
    ------
    click.BadParameter
        An option the figure does not draw (refused, never ignored).
    """
    p = ctx.params
    options: dict[str, Any] = {"where": parse_where(p["where"])}
    if p["axis"] is not None:
        options["axis"] = p["axis"]
    takes = (*entry.options, *(("times",) if entry.uses_times else ()))
    for name in ("times", "delta"):
        given = ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT
        if given and name not in takes:
            raise click.BadParameter(f"is not used by --kind {entry.name}",
                                     param_hint=f"'--{name}'")
    if times is not None:
        options["times"] = list(parse_times(times))
    if p["delta"] is not None:
        options["delta"] = p["delta"]
    options.update({name: p[name] for name in ("stat", "log") if name in entry.options})
    if "report" in entry.options:
        options["report"] = report
    return options


def plot_sweep(ctx: click.Context, path: Path, kind: str | None, other: Path | None,
               out: Path | None, overwrite: bool, times: str | None, dpi: int) -> None:
    """The sweep-file branch of ``plot``: checks, then one library call, then the path."""
    from particles.errors import SweepError
    from particles.plotting.sweep import default_sweep_output, save_sweep_plot
    from particles.sweep import load

    kind = kind or DEFAULT_FIGURES["sweep"]
    entry = sweep_entry(ctx, kind, other)
    target = default_sweep_output(path, kind) if out is None else out
    check_output_format(target, image_formats(), "a picture")
    if target.resolve() == path.resolve():
        raise click.BadParameter(f"{out} is the input sweep; the picture needs another name",
                                 param_hint="'--out'")
    try:
        check_output_path(target, overwrite=overwrite, resumable=False)
    except OutputPathError as exc:
        raise output_refused(exc) from None
    risk: list[str] = []  # a censored time's quartiles and systems at risk, per point
    options = sweep_options(ctx, entry, times, risk.append)
    try:
        written = save_sweep_plot(load(path), kind, target, overwrite=overwrite, dpi=dpi,
                                  **options)
    except (SweepError, ValueError, OSError, ImportError) as exc:  # ImportError: the extra
        raise click.UsageError(" ".join(str(exc).split())) from None
    click.echo(str(written))
    for line in risk:
        click.echo(line)


#: how the help names the files of each kind that draws figures, in the order it lists them.
FAMILY_WORDS = {"trajectory": "A trajectory", "sweep": "A sweep file",
                "density": "A mean-field density file"}


def _kind_help() -> str:
    return " ".join(
        f"{FAMILY_WORDS[family]}: " + "; ".join(f"{k}: {v}" for k, v in FIGURES[family].items())
        + f" (default {DEFAULT_FIGURES[family]})." for family in FAMILY_WORDS)


@click.command("plot")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--kind",
    type=click.Choice(list(dict.fromkeys(k for f in FAMILY_WORDS for k in FIGURES[f]))),
    default=None,
    help=_kind_help(),
)
@click.option(
    "--with",
    "other",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="--kind compare: the particle run on the circle (d = 2) or S^2 (d = 3) drawn "
    "against the density file PATH (either may be PATH).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Output file (default: PATH's name with _KIND.png, or _movie.gif, next "
    "to it); never replaced without --overwrite.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing --out.")
@click.option(
    "--times",
    help="Comma-separated times: the histogram panels, or the time the "
    "sphere is drawn at (nearest saved frames).",
)
@click.option(
    "--system",
    type=int,
    default=0,
    show_default=True,
    help="Ensemble member drawn by sphere and movie.",
)
@click.option(
    "--dpi",
    type=click.IntRange(1, MAX_DPI),
    default=120,
    show_default=True,
    help=f"Resolution of pictures, dots per inch (at most {MAX_DPI}).",
)
@click.option("--stat", help="Sweep files, --kind curve: the statistic drawn (pair_fraction, "
              "cluster_mean, order_parameter_mean, first_merge_time, ...).")
@click.option("--axis", help="Sweep files: the grid axis along x (default beta; curve: the "
              "first swept axis).")
@click.option("--delta", type=float, help="Sweep files: the close-pair threshold delta "
              "(nearest stored; default the largest).")
@click.option("--where", help="Sweep files: fix grid axes, AXIS=VALUE[,AXIS=VALUE...] "
              "(nearest value for numbers); an axis left free gives one panel per value.")
@click.option("--log/--linear", "log", default=None, help="Sweep files, --kind curve: log or "
              "linear y axis (default log for times to an event).")
@click.pass_context
def plot(
    ctx: click.Context,
    path: Path,
    kind: str | None,
    other: Path | None,
    out: Path | None,
    overwrite: bool,
    times: str | None,
    system: int,
    dpi: int,
    stat: str | None,
    axis: str | None,
    delta: float | None,
    where: str | None,
    log: bool | None,
) -> None:
    """Draw a picture of the run in PATH and print the file written.

    Uses the results `particles analyze` stored beside PATH (run.analysis.h5) for
    the current frames; otherwise analyses with the default settings.  A sweep
    file (`particles sweep`) has its own kinds: phase-diagram, clusters, curve; a
    mean-field density file (particles meanfield) draws --kind density, or --kind
    compare --with RUN.h5.
    """
    interrupts.on_forced_stop(lambda: "stopped while drawing; no figure is half-written "
                              "(each takes its name only once complete)")
    family = figure_owner(kind_name(path), kind, other is not None)
    PLOTTERS[family](ctx, path, kind, other, out, overwrite, times, dpi)


def plot_density(ctx: click.Context, path: Path, kind: str | None, other: Path | None,
                 out: Path | None, overwrite: bool, times: str | None, dpi: int) -> None:
    """The density-file branch of ``plot`` (or ``--kind compare --with``): checks, one
    library call, the path."""
    for name in SWEEP_ONLY:
        if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT:
            raise click.BadParameter("is for sweep files", param_hint=f"'--{name}'")
    kind = check_density_options(path, kind, out, other, overwrite)
    try:
        written = plot_density_file(path, kind, out, other=other, overwrite=overwrite,
                                    times=parse_times(times), dpi=dpi)
    except FileExistsError as exc:
        raise output_refused(exc) from None
    except (ValueError, OSError) as exc:
        raise click.UsageError(" ".join(str(exc).split())) from None
    click.echo(str(written))


def plot_trajectory(ctx: click.Context, path: Path, kind: str | None, other: Path | None,
                    out: Path | None, overwrite: bool, times: str | None, dpi: int) -> None:
    """The trajectory branch of ``plot``: checks, one library call, the path."""
    figures = FIGURES["trajectory"]
    if kind is not None and kind not in figures:
        owner = next(f for f, kinds in FIGURES.items() if kind in kinds)
        raise click.BadParameter(f"{kind!r} draws a {FILE_KINDS[owner].description} file; "
                                 f"{path} is not one", param_hint="'--kind'")
    for name in SWEEP_ONLY:
        if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT:
            raise click.BadParameter("is for sweep files", param_hint=f"'--{name}'")
    kind = kind or DEFAULT_FIGURES["trajectory"]
    if times is not None and not figures[kind].uses_times:
        raise click.BadParameter(f"is not used by --kind {kind} (only by "
                                 + ", ".join(k for k, v in figures.items() if v.uses_times)
                                 + ")", param_hint="'--times'")
    system = ctx.params["system"]
    check_plot_options(path, kind, out, system, overwrite, parse_times(times))
    options = {"system": system}
    if not figures[kind].animated:
        options.update(times=parse_times(times), dpi=dpi)
    try:
        written = plot_file(path, kind, out, overwrite=overwrite, **options)
    except FileExistsError as exc:
        raise output_refused(exc) from None
    except (ValueError, OSError) as exc:
        raise click.UsageError(" ".join(str(exc).split())) from None
    click.echo(str(written))


#: the branch of ``plot`` for the files of each kind that draws figures
#: (:func:`particles.plotting.kinds.figure_owner` picks it).
PLOTTERS = {"trajectory": plot_trajectory, "sweep": plot_sweep, "density": plot_density}
