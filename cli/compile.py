"""``particles compile``: fill the compiled-kernel cache ahead of time."""

from __future__ import annotations

import click
from particles_cli import interrupts

from particles.runs.precompile import TARGETS, precompile


@click.command("compile")
@click.option("--for", "targets", type=click.Choice(list(TARGETS)), multiple=True,
              help="Prepare these commands only (repeatable); default: all of them.")
@click.option("--all", "more", is_flag=True,
              help="Also the less common variants (other attention kernels, Sinkhorn, "
                   "per-system weights, movies).")
def compile_(targets: tuple[str, ...], more: bool) -> None:
    """Compile the kernels of every command into the disk cache, ahead of time."""
    interrupts.on_forced_stop(lambda: "the kernel cache keeps every entry finished before "
                              "the stop; run particles compile again for the rest")
    report = precompile(targets or None, more=more,
                        progress=lambda text: click.echo(f"compiling: {text}", err=True))
    click.echo(f"{report.runs} tiny runs ({', '.join(report.targets)}) in "
               f"{report.seconds:.1f} s; cache {report.cache}: {report.entries} entries, "
               f"{report.nbytes / 2**20:.1f} MiB")


#: the command object under the command's name (``CommandEntry.load`` looks it up).
compile = compile_
