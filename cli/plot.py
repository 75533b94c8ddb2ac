"""``particles plot``: pictures of a trajectory file."""

from __future__ import annotations

from pathlib import Path

import click
from particles_cli.analyze import parse_times

from particles.plotting import DEFAULT_KIND, KINDS, plot_file


@click.command("plot")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--kind",
    type=click.Choice(list(KINDS)),
    default=DEFAULT_KIND,
    show_default=True,
    help="; ".join(f"{k}: {v}" for k, v in KINDS.items()) + ".",
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
@click.option("--dpi", type=int, default=120, show_default=True, help="Resolution of PNGs.")
def plot(
    path: Path,
    kind: str,
    out: Path | None,
    overwrite: bool,
    times: str | None,
    system: int,
    dpi: int,
) -> None:
    """Draw a picture of the run in PATH and print the file written.

    Uses the file's /analysis group when `particles analyze` stored one for
    the current frames; otherwise analyses with the default settings.
    """
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
