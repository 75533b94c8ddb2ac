"""``particles figures``: remake the gallery's pictures from the scripts in ``figures/``.

A stop says what it left in figures, never in frames: Ctrl-C (or SIGTERM)
prints ``Interrupted: ...`` and a write that fails (a full disk, a file size
limit) ``Error: ...``, each one line naming the figures written and those not
made (exit status 128 + signal, and 1).  The files of the figure that was
being made are removed: a picture on disk is always a whole one.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import click
from particles_cli import interrupts
from particles_cli.options import output_refused
from particles_cli.session import one_line_warnings, stop_on_signals

from particles.errors import FiguresNotFoundError, OutputPathError, UnknownFigureError
from particles.gallery import FIGURES, make_figures, select_figures


def _names(ctx: click.Context, param: click.Parameter, value: str | None) -> list[str]:
    try:
        return select_figures(value)
    except UnknownFigureError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


class FiguresLeft:
    """The figures of one command, which of them are written, and what a stop left."""

    def __init__(self, names: list[str], out_dir: Path, quick: bool) -> None:
        self.names, self.out_dir, self.quick = names, out_dir, quick
        self.made: list[str] = []
        # every output as it was before the command: a stop removes what the
        # unfinished figure wrote over it (or created)
        self._before = {p: self._identity(p) for name in names
                        for p in FIGURES[name].outputs(out_dir)}

    @staticmethod
    def _identity(path: Path) -> tuple[int, int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    @property
    def current(self) -> str | None:
        """The figure being made (None: all made)."""
        rest = self.names[len(self.made):]
        return rest[0] if rest else None

    def remove_unfinished(self) -> list[Path]:
        """Remove the files the figure being made wrote (never a whole picture)."""
        removed = []
        if self.current is not None:
            for path in FIGURES[self.current].outputs(self.out_dir):
                if self._identity(path) != self._before[path] and path.exists():
                    path.unlink(missing_ok=True)
                    removed.append(path)
        return removed

    def left(self) -> str:
        """What the command left: the figures written and those not made, in words."""
        rest = self.names[len(self.made):]
        written = (f"{len(self.made)} of {len(self.names)} figures written to {self.out_dir} "
                   f"({', '.join(self.made)})" if self.made
                   else f"no figure written to {self.out_dir}")
        again = " ".join(["particles figures", *(["--quick"] if self.quick else []),
                          "--only", ",".join(rest), "--out", os.fspath(self.out_dir)])
        return f"{written}; not made: {', '.join(rest)}; make them with: {again}"


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
    """Remake the gallery's figures from the scripts in figures/ and print each file written.

    Ctrl-C keeps the figures written and says which are not made; a full
    disk stops with one line saying the same (exit status 1).
    """
    progress = FiguresLeft(only, out_dir, quick)

    def report(result) -> None:
        progress.made.append(result.name)
        for path in result.paths:
            click.echo(f"{result.name}: {path} ({result.seconds:.1f} s)")

    # a stop the watchdog has to end (an interrupt lost in a compile) names figures too
    interrupts.on_forced_stop(lambda: f"figure {progress.current} not finished; "
                              + progress.left())
    status = 0
    with one_line_warnings(), stop_on_signals() as requested:
        try:
            try:
                make_figures(only, out_dir, quick=quick, overwrite=overwrite, report=report)
            finally:
                requested.running = False  # from here on signals are only recorded
        except OutputPathError as exc:
            raise output_refused(exc) from None
        except FiguresNotFoundError as exc:
            raise click.UsageError(str(exc)) from None
        except KeyboardInterrupt:
            progress.remove_unfinished()
            status = 128 + (requested[0] if requested else signal.SIGINT)
            click.echo(f"Interrupted: {progress.left()}", err=True)
            interrupts.reported()
        except OSError as exc:  # a full disk, a file size limit
            progress.remove_unfinished()
            why = exc.strerror or " ".join(str(exc).split())
            click.echo(f"Error: cannot write figure {progress.current} ({why}); "
                       + progress.left(), err=True)
            status = 1
        interrupts.hold()  # reported: a later signal is held and reported at exit
    if requested and not status:  # a signal once every figure was written
        status = 128 + requested[0]
        click.echo(f"Interrupted: after the last figure; {len(only)} figures written to "
                   f"{out_dir}", err=True)
    if status:
        sys.exit(status)
