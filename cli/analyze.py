"""``particles analyze``: clusters, merges and time scales of a trajectory file."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import numpy as np
from particles_cli import interrupts

from particles.analysis import DEFAULT_EPS, METHODS, analyze_file
from particles.analysis.clusters import DEFAULT_MASS_FRACTION
from particles.analysis.histograms import DEFAULT_BINS
from particles.analysis.merges import DEFAULT_MIN_DECADES
from particles.analysis.modes import DEFAULT_MAX_MODE
from particles.analysis.scalars import DEFAULT_DELTA, DEFAULT_SPAN_TOL
from particles.errors import OutputWriteError
from particles.io import TrajectoryFileError, read_summary
from particles.io.analysis import analysis_path

#: the most histogram bins on [-1, 1] (each frame stores a histogram).
MAX_BINS = 100_000


def check_bins(path: Path, bins: int) -> None:
    """Refuse histograms that cannot fit in memory, from the file header alone.

    Raises
    ------
    click.BadParameter
        ``frames x systems x bins`` counts need more than the available memory.
    """
    from particles.runs.estimate import available_memory

    try:
        s = read_summary(path)
    except TrajectoryFileError:
        return  # analyze_file reports it in its own words
    need = 8 * 4 * s.frames * (s.config.batch or 1) * bins
    free = available_memory()
    if need > free:
        raise click.BadParameter(
            f"{bins} bins for {s.frames} frames need about {need / 2**30:.3g} GiB of memory "
            f"and {free / 2**30:.3g} GiB is available",
            param_hint="'--bins'",
        )


def parse_times(value: str | None) -> np.ndarray | None:
    """``"0,1,10,1e3"`` -> array of times (None stays None).

    Raises
    ------
    click.BadParameter
        Not a comma-separated list of finite numbers >= 0.
    """
    if value is None:
        return None
    try:
        times = np.array([float(v) for v in value.split(",") if v.strip()])
    except ValueError:
        raise click.BadParameter(
            f"must be comma-separated numbers, got {value!r}", param_hint="'--times'"
        ) from None
    if times.size == 0 or not np.all(np.isfinite(times)) or np.any(times < 0):
        raise click.BadParameter(
            f"must be finite times >= 0, got {value!r}", param_hint="'--times'"
        )
    return times


@click.command("analyze")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--eps",
    type=float,
    default=DEFAULT_EPS,
    show_default=True,
    help="Linking geodesic distance (radians): closer tokens share a cluster.",
)
@click.option(
    "--method",
    type=click.Choice(list(METHODS)),
    default="components",
    show_default=True,
    help="Clustering: " + "; ".join(f"{k} = {v}" for k, v in METHODS.items()) + ".",
)
@click.option(
    "--min-decades",
    type=float,
    default=DEFAULT_MIN_DECADES,
    show_default=True,
    help="A cluster-count plateau is long-lived when it lasts this many decades "
    "of time; the formation time is the start of the first one.",
)
@click.option(
    "--time-unit",
    type=float,
    default=1.0,
    show_default=True,
    help="Plateaus starting earlier are measured from this time.",
)
@click.option(
    "--bins",
    type=click.IntRange(1, MAX_BINS),
    default=DEFAULT_BINS,
    show_default=True,
    help="Bins of the inner-product histograms on [-1, 1].",
)
@click.option(
    "--delta",
    type=float,
    default=DEFAULT_DELTA,
    show_default=True,
    help="Close pairs: <x_i, x_j> > 1 - delta.",
)
@click.option(
    "--span-tol",
    type=float,
    default=DEFAULT_SPAN_TOL,
    show_default=True,
    help="Span dimension: eigenvalues of X^T X / n above span-tol * trace.",
)
@click.option(
    "--mass-fraction",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=DEFAULT_MASS_FRACTION,
    show_default=True,
    help="Mass-weighted count: clusters holding at least this fraction of the tokens.",
)
@click.option(
    "--max-mode",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_MODE,
    show_default=True,
    help="d = 2: largest Fourier mode k searched for the dominant mode of the "
    "tokens' empirical measure.",
)
@click.option(
    "--times",
    help="Comma-separated times of the cluster-count table "
    "(default: 0, each power of ten, the end).",
)
@click.option("--no-write", is_flag=True, help="Print the summary only; write no results file.")
def analyze(
    path: Path,
    eps: float,
    method: str,
    min_decades: float,
    time_unit: float,
    bins: int,
    delta: float,
    span_tol: float,
    mass_fraction: float,
    max_mode: int,
    times: str | None,
    no_write: bool,
) -> None:
    """Find clusters, merges and the two time scales of a run; store them beside PATH.

    Results go to the /analysis group of a file next to PATH (run.h5 ->
    run.analysis.h5, replacing earlier ones; PATH itself is only read) and a
    summary table is printed: cluster count at chosen times ("spread" where a
    linked group of tokens spans more than 90 degrees: no clusters), the
    mass-weighted count, on the circle the dominant Fourier mode k and its
    |c_k|, the formation time, and each merge with its time and sizes.  Ctrl-C stops with exit
    status 130, PATH and earlier results unchanged; a full disk is one line
    (exit status 1).
    """
    table_times = parse_times(times)
    check_bins(path, bins)
    interrupts.on_forced_stop(lambda: f"{path} is unchanged; no results written "
                              f"(earlier results in {analysis_path(path)} are kept)")
    try:
        result = analyze_file(
            path,
            write=not no_write,
            eps=None if method == "gap" else eps,
            method=method,
            min_decades=min_decades,
            time_unit=time_unit,
            bins=bins,
            delta=delta,
            span_tol=span_tol,
            mass_fraction=mass_fraction,
            max_mode=max_mode,
        )
    except KeyboardInterrupt:
        click.echo(f"Interrupted: {path} is unchanged; no results written "
                   f"(earlier results in {analysis_path(path)} are kept)", err=True)
        sys.exit(130)
    except OutputWriteError as exc:
        click.echo(f"Error: {exc}; {path} is unchanged", err=True)
        sys.exit(1)
    except (ValueError, OSError) as exc:  # TrajectoryFileError is a ValueError
        raise click.UsageError(" ".join(str(exc).split())) from None
    click.echo(result.summary(table_times))
    if not no_write:
        click.echo(f"\nresults stored in {analysis_path(path)}:/analysis")
