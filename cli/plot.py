"""``particles plot``: pictures of a trajectory file."""

from __future__ import annotations

from pathlib import Path

import click
from particles_cli.analyze import parse_times

from particles.errors import OutputPathError
from particles.io import TrajectoryFileError, read_summary
from particles.io.density import is_density_file
from particles.paths import check_output_path
from particles.plotting import DEFAULT_KIND, KINDS, default_output, plot_file
from particles.plotting.density import (
    DENSITY_KINDS,
    default_density_output,
    plot_density_file,
)

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
    path: Path, kind: str, out: Path | None, system: int, overwrite: bool
) -> None:
    """Everything ``plot`` can refuse from the file header alone, before loading frames.

    Raises
    ------
    click.BadParameter
        Unsupported extension, ``--out`` equal to PATH, existing (without
        ``--overwrite``) or in a missing or read-only directory, ``--system``
        outside the file's ensemble, PATH not a trajectory.
    """
    target = default_output(path, kind) if out is None else out
    if kind == "movie":
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
        raise click.BadParameter(
            str(exc).replace(" (overwrite=True)", ""), param_hint="'--out'"
        ) from None
    try:
        batch = read_summary(path).config.batch
    except TrajectoryFileError as exc:
        raise click.BadParameter(str(exc), param_hint="'PATH'") from None
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
    kind = kind or ("density" if density else DEFAULT_KIND)
    if kind not in DENSITY_KINDS:
        raise click.BadParameter(
            f"{path} is a mean-field density file; it draws {' or '.join(DENSITY_KINDS)}, "
            f"not {kind!r}", param_hint="'--kind'")
    if kind == "compare":
        if other is None:
            raise click.UsageError("--kind compare needs --with RUN.h5, a particle run on "
                                   "the circle (or the density file, when PATH is the run)")
        if not density and not is_density_file(other):
            raise click.BadParameter(f"neither {path} nor {other} is a mean-field density "
                                     "file (particles meanfield)", param_hint="'--with'")
        if other.resolve() == path.resolve():
            raise click.BadParameter(f"{other} is PATH itself", param_hint="'--with'")
    elif other is not None:
        raise click.UsageError("--with is for --kind compare")
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
        raise click.BadParameter(
            str(exc).replace(" (overwrite=True)", ""), param_hint="'--out'"
        ) from None
    return kind


@click.command("plot")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--kind",
    type=click.Choice([*KINDS, *DENSITY_KINDS]),
    help="; ".join(f"{k}: {v}" for k, v in {**KINDS, **DENSITY_KINDS}.items())
    + f".  Default: {DEFAULT_KIND} for a run, density for a density file.",
)
@click.option(
    "--with",
    "other",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="--kind compare: the particle run on the circle (d = 2) drawn against the "
    "density file PATH (either may be PATH).",
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
def plot(
    path: Path,
    kind: str | None,
    other: Path | None,
    out: Path | None,
    overwrite: bool,
    times: str | None,
    system: int,
    dpi: int,
) -> None:
    """Draw a picture of the run in PATH and print the file written.

    Uses the results `particles analyze` stored beside PATH (run.analysis.h5) for
    the current frames; otherwise analyses with the default settings.  A mean-field
    density file (particles meanfield) draws --kind density, or --kind compare
    --with RUN.h5.
    """
    if (kind in DENSITY_KINDS or other is not None or is_density_file(path)):
        kind = check_density_options(path, kind, out, other, overwrite)
        try:
            written = plot_density_file(path, kind, out, other=other, overwrite=overwrite,
                                        times=parse_times(times), dpi=dpi)
        except FileExistsError as exc:
            raise click.BadParameter(
                str(exc).replace(" (overwrite=True)", ""), param_hint="'--out'"
            ) from None
        except (ValueError, OSError) as exc:
            raise click.UsageError(" ".join(str(exc).split())) from None
        click.echo(str(written))
        return
    kind = kind or DEFAULT_KIND
    check_plot_options(path, kind, out, system, overwrite)
    options = {"system": system}
    if kind != "movie":
        options.update(times=parse_times(times), dpi=dpi)
    try:
        written = plot_file(path, kind, out, overwrite=overwrite, **options)
    except FileExistsError as exc:
        raise click.BadParameter(
            str(exc).replace(" (overwrite=True)", ""), param_hint="'--out'"
        ) from None
    except (ValueError, OSError) as exc:
        raise click.UsageError(" ".join(str(exc).split())) from None
    click.echo(str(written))
