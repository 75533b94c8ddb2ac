"""``particles figures``: remake the gallery's pictures from the scripts in ``figures/``."""

from __future__ import annotations

from pathlib import Path

import click
from particles_cli.options import output_refused

from particles.errors import FiguresNotFoundError, OutputPathError, UnknownFigureError
from particles.gallery import FIGURES, make_figures, select_figures


def _names(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str]:
    try:
        return select_figures(value)
    except UnknownFigureError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


@click.command("figures")
@click.option("--quick", is_flag=True,
              help="Small n, short T, coarse grids: seconds per figure (what the tests run).")
@click.option("--only", metavar="NAME[,NAME]", callback=_names,
              help="Comma-separated figures to make (default: all of them: "
                   + ", ".join(FIGURES) + ").")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("figures"),
              show_default=True, help="Directory of the pictures (created when missing).")
@click.option("--overwrite", is_flag=True, help="Replace existing pictures.")
def figures(quick: bool, only: list[str], out_dir: Path, overwrite: bool) -> None:
    """Remake the gallery's figures from the scripts in figures/ and print each file written."""
    def report(result) -> None:
        for path in result.paths:
            click.echo(f"{result.name}: {path} ({result.seconds:.1f} s)")

    try:
        make_figures(only, out_dir, quick=quick, overwrite=overwrite, report=report)
    except OutputPathError as exc:
        raise output_refused(exc) from None
    except FiguresNotFoundError as exc:
        raise click.UsageError(str(exc)) from None
