"""``particles sweep``: ensembles over a grid of parameters into one sweep file."""

from __future__ import annotations

from pathlib import Path

import click
from particles_cli.options import CONFIG_OPTIONS, default_text

from particles.sweep.backends import DEFAULT_TIMEOUT, check_timeout
from particles.sweep.grid import FIXED_ONLY, GRID_FIELDS, field_kind

#: help of the fields that are no ``simulate`` option.
_HELP = {"masses": "Token masses m_j > 0, one per token: M1,M2,...",
         "max_steps": "Upper bound on the steps of one run (guards adaptive runs that stall)."}


def _help_of(field: str) -> str:
    """The ``simulate`` help of a field's option."""
    decorate = dict(CONFIG_OPTIONS).get(field)
    if decorate is None:
        return _HELP.get(field, field.replace("_", " ") + ".")

    @decorate
    def probe() -> None:  # pragma: no cover - never called
        pass

    return probe.__click_params__[0].help or ""


def _grid_options(f):
    """One string option per configuration field: a value, ``A,B,C`` or ``START:STOP:NUM``."""
    for field in reversed(GRID_FIELDS):
        if field in FIXED_ONLY:
            form, more = "VALUE", ""
        elif field_kind(field) is str:
            form, more = "VALUE|A,B,..", " A list sweeps it."
        else:
            form, more = "VALUE|A,B,..|START:STOP:NUM", " A list or an inclusive range sweeps it."
        default = default_text(field)
        help_ = _help_of(field) + more
        f = click.option("--" + field.replace("_", "-"), field, type=str, metavar=form,
                         help=help_, show_default=default if default else False)(f)
    return f


def _fail(exc: Exception) -> None:
    raise click.UsageError(" ".join(str(exc).split())) from None


class SweepGroup(click.Group):
    """``particles sweep [OPTIONS]`` runs a sweep; ``particles sweep export`` converts one."""

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[OPTIONS] | export PATH --csv OUT")


@click.group("sweep", cls=SweepGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@_grid_options
@click.option("--runs", type=int, default=64, show_default=True,
              help="Systems (independent random starts) per grid point.")
@click.option("--delta", "deltas", type=str, default="0.1,0.01,0.001", show_default=True,
              help="Thresholds of the close-pair fractions <x_i, x_j> > 1 - delta.")
@click.option("--eps", type=float, default=0.05, show_default=True,
              help="Linking distance (radians) of the cluster detection.")
@click.option("--seed", type=int, help="Root seed (default: fresh entropy, recorded).")
@click.option("--config", "config_file",
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="TOML file: SimulationConfig keys (a list sweeps the key) and runs, "
              "delta, seed, eps; options on the command line override it.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("sweep.h5"),
              show_default=True, help="Output sweep file; never replaced without --overwrite.")
@click.option("--overwrite", is_flag=True, help="Replace an existing --out once the first "
              "task is written.")
@click.option("--resume", is_flag=True, help="Finish the sweep in --out: only the systems "
              "not done run (the original command with --resume added).")
@click.option("--dry-run", is_flag=True, help="Print the grid, the tasks and an estimate of "
              "their cost; write nothing.")
@click.option("--no-size-check", is_flag=True,
              help="Start even when the estimated memory of a task or the size of the sweep "
              "file exceeds what is available.")
@click.option("--positions", "keep_positions", is_flag=True,
              help="Also store every system's positions at every save time.")
@click.option("--chunk", type=int, help="Systems per task (default: enough tasks for every "
              "worker; the results do not depend on it).")
@click.option("--processes", type=click.IntRange(min=1), help="Local worker processes, one "
              "Numba thread each; 1 runs the tasks in this process (default: one per core "
              "when the sweep is estimated at 30 s or more, else this process).")
@click.option("--scheduler", help="Dask scheduler tcp://HOST:PORT (default: this machine, "
              "or DASK_SCHEDULER_ADDRESS).")
@click.option("--scheduler-file", type=click.Path(path_type=Path),
              help="Dask scheduler file (dask scheduler --scheduler-file).")
@click.option("--scheduler-timeout", type=float, metavar="SECONDS",
              help="Seconds to wait for the Dask scheduler to answer, retrying one still "
              f"starting up (default {DEFAULT_TIMEOUT:g}).")
@click.option("--max-wall", type=float, metavar="SECONDS",
              help="Pause the sweep after this many seconds of wall time: at the first task "
              "that finishes after them, every finished task kept and the running ones "
              "stopped; --resume continues it.")
@click.option("--merge-events", is_flag=True, default=None,
              help="Locate every drop of each system's cluster count (eps = 0.05) between "
              "save times by bisection, as simulate --batch --merge-events, store the merges "
              "(/sweep/merges) and take the first-merge and single-cluster times from them; "
              "deterministic integrators only.")
@click.option("--until-clusters", type=click.IntRange(min=1), metavar="K",
              help="Run each grid point's ensemble (one task) until every one of its systems "
              "has at most K clusters, as simulate --batch --until-clusters: its statistics "
              "end there, and each system's first passage is stored.")
@click.pass_context
def sweep(ctx: click.Context, runs: int, deltas: str, eps: float, seed: int | None,
          config_file: Path | None, out: Path, overwrite: bool, resume: bool, dry_run: bool,
          no_size_check: bool, keep_positions: bool, chunk: int | None, processes: int | None,
          scheduler: str | None, scheduler_file: Path | None, scheduler_timeout: float | None,
          max_wall: float | None, until_clusters: int | None, merge_events: bool | None,
          **options: str | None) -> None:
    """Run ensembles over a grid of parameters into one sweep file.

    Every simulate option takes a value, a list A,B,C or an inclusive range
    START:STOP:NUM (--beta 0.1:9:90 --d 2,3,128); the grid is the product
    of the lists, in the order given.  Each grid point runs --runs systems
    and stores, at every save time, the close-pair fractions, the
    cluster-count distribution, mean energy and order parameter, and the
    formation, first-merge and single-cluster times (from located merges with
    --merge-events).  Prints the file and a summary on stdout, a progress bar
    on stderr.  Ctrl-C (or a kill) keeps
    every finished task; --resume finishes the sweep.  `particles sweep
    export FILE --csv OUT` writes a tidy CSV table.
    """
    if ctx.invoked_subcommand is not None:
        return
    from particles.errors import SweepError

    given = {k: v for k, v in options.items() if v is not None}
    sweep_keys: dict = {}
    values: dict = {}
    try:
        spec, max_wall = _spec_of(ctx, given, values, sweep_keys, config_file=config_file,
                                  runs=runs, deltas=deltas, eps=eps, seed=seed,
                                  max_wall=max_wall, resume=resume,
                                  keep_positions=keep_positions,
                                  watch=(merge_events, until_clusters))
        if spec is not None:
            from particles.sweep.run import check_chunk

            check_chunk(spec, chunk)
    except SweepError as exc:
        _fail(_named_in_file(exc, given, values, sweep_keys, config_file))
    _check_workers(chunk, processes, scheduler, scheduler_file, scheduler_timeout)
    if dry_run:
        _dry_run(spec, out, chunk, resume)
    if spec is not None and not no_size_check:  # before any work (a dry run: after it)
        _check_fits(spec, out)
    if dry_run:
        return
    run_it(spec, out, overwrite=overwrite, resume=resume, chunk=chunk, processes=processes,
           scheduler=scheduler, scheduler_file=scheduler_file, timeout=scheduler_timeout,
           max_wall=max_wall)


def _spec_of(ctx: click.Context, given: dict, values: dict, sweep_keys: dict, *,
             config_file: Path | None, runs: int, deltas: str, eps: float, seed: int | None,
             max_wall: float | None, resume: bool, keep_positions: bool,
             watch: tuple[bool | None, int | None] = (None, None)):
    """The sweep's spec (None to resume with no value given) and its checked ``max_wall``.

    ``watch`` is the command line's ``--merge-events`` and ``--until-clusters``
    (None: not given, the file's keys or the defaults).

    Fills ``values`` (the grid's fields) and ``sweep_keys`` (the file's session keys) as
    it reads them, so that a caller catching a ``SweepError`` can name the file's key.
    """
    from particles.sweep.grid import (
        SESSION_KEYS,
        SweepSpec,
        check_max_wall,
        parse_value,
        read_sweep_file,
    )

    values.update(read_sweep_file(config_file) if config_file else {})
    sweep_keys.update({k: values.pop(k) for k in SESSION_KEYS if k in values})
    # click fills ctx.params in command-line order: the order of the axes
    order = [k for k in ctx.params if k in given]
    for k in order:
        values[k] = parse_value(k, given[k])
    runs = _file_default(ctx, "runs", runs, sweep_keys, "runs")
    delta_values = _delta_values(ctx, deltas, sweep_keys)
    eps = _file_default(ctx, "eps", eps, sweep_keys, "eps")
    if seed is None:
        seed = sweep_keys.get("seed")
    if max_wall is None:
        max_wall = sweep_keys.get("max_wall")
    if max_wall is not None:
        max_wall = check_max_wall(max_wall)
    merge_events, until = watch
    if merge_events is None:
        merge_events = sweep_keys.get("merge_events", False)
    if until is None:
        until = sweep_keys.get("until_clusters")
    spec = None
    if not resume or values:
        spec = SweepSpec.from_values(values, runs=runs, deltas=delta_values, seed=seed,
                                     eps=eps, positions=keep_positions,
                                     merge_events=merge_events, until_clusters=until)
    return spec, max_wall


def _file_default(ctx: click.Context, param: str, value, sweep_keys: dict, key: str):
    """The file's ``key`` where the command line left ``param`` at its default."""
    if ctx.get_parameter_source(param) == click.core.ParameterSource.DEFAULT \
            and key in sweep_keys:
        return sweep_keys[key]
    return value


def _delta_values(ctx: click.Context, deltas: str, sweep_keys: dict) -> tuple:
    """The thresholds: the file's ``delta`` (a number or a list) or ``--delta``."""
    if ctx.get_parameter_source("deltas") == click.core.ParameterSource.DEFAULT \
            and "delta" in sweep_keys:
        given_delta = sweep_keys["delta"]  # a number or a list of them
        return tuple(given_delta if isinstance(given_delta, list) else [given_delta])
    return tuple(float(x) for x in _floats("--delta", deltas))


def _named_in_file(exc: Exception, given: dict, values: dict, sweep_keys: dict,
                   config_file: Path | None) -> Exception:
    """``exc``, naming the key of ``config_file`` when the bad value came from the file."""
    from particles.errors import SweepError

    key = next((k for k in sweep_keys if f"--{k.replace('_', '-')}" in str(exc)), None)
    field = getattr(exc, "field", None)
    if field in values and field not in given:
        key = field
    return SweepError(f"{exc} (key {key} in {config_file})") if key and config_file else exc


def _check_workers(chunk: int | None, processes: int | None, scheduler: str | None,
                   scheduler_file: Path | None, scheduler_timeout: float | None) -> None:
    """Refuse a bad --chunk, processes with a scheduler, a bad --scheduler-timeout."""
    from particles.errors import SweepError

    if chunk is not None and chunk < 1:
        raise click.BadParameter(f"must be a positive integer, got {chunk}",
                                 param_hint="'--chunk'")
    if processes is not None and (scheduler or scheduler_file):
        raise click.BadParameter("local worker processes and a Dask scheduler exclude each "
                                 "other", param_hint="'--processes'")
    if scheduler_timeout is not None:  # before any work, a dry run's too
        try:
            check_timeout(scheduler_timeout)
        except SweepError as exc:
            raise click.BadParameter(str(exc), param_hint="'--scheduler-timeout'") from None


def _check_fits(spec, out: Path) -> None:
    """Refuse a sweep whose memory or file exceeds what is available."""
    from particles.runs.estimate import check_fits
    from particles.sweep.run import sweep_estimate

    try:
        check_fits(sweep_estimate(spec.resolved()), out)
    except ValueError as exc:
        _fail(exc)


def _floats(option: str, text: str) -> list[float]:
    from particles.errors import SweepError

    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise SweepError(f"{option}: {text!r} is not a list of numbers") from None


def _dry_run(spec, out: Path, chunk: int | None, resume: bool) -> None:
    import numpy as np

    from particles.display import value_text
    from particles.errors import SweepError
    from particles.io.sweep import read_header
    from particles.sweep.run import default_chunk, plan_tasks, read_spec, sweep_estimate

    try:
        done = None
        if resume:
            header = read_header(out)
            spec = spec or read_spec(out)
            done = header.done
        spec = spec.resolved()
    except SweepError as exc:
        _fail(exc)
    if done is None or done.shape != (spec.points, spec.runs):
        done = np.zeros((spec.points, spec.runs), dtype=bool)
    size = chunk or default_chunk(spec, 1)
    tasks = plan_tasks(spec, done, size)
    from particles.runs.probe import PROBE_SECONDS

    # adaptive steps probed, the drift timed on this machine
    est = sweep_estimate(spec, probe=PROBE_SECONDS, timed=True)
    click.echo(f"{out} (dry run: nothing written)")
    axes = ", ".join(f"{k} ({len(v)})" for k, v in spec.axes) or "none (one point)"
    click.echo(f"grid         {spec.points} points: {axes}")
    click.echo(f"systems      {spec.runs} per point, {spec.points * spec.runs} in all")
    click.echo(f"frames       {len(spec.times)} save times per system")
    left = f" ({int(done.sum())} systems done)" if done.any() else ""
    click.echo(f"tasks        {len(tasks)} of at most {size} systems{left}")
    for t in tasks[:5]:
        values = ", ".join(f"{k}={value_text(v)}" for k, v in spec.point_values(t.point).items())
        click.echo(f"  point {t.point} ({values or 'fixed'}) systems {t.start}..{t.stop - 1}")
    if len(tasks) > 5:
        click.echo(f"  ... {len(tasks) - 5} more")
    click.echo("\n".join(est.lines()[1:]))


def run_it(spec, out: Path, *, overwrite: bool, resume: bool, chunk: int | None,
           processes: int | None, scheduler: str | None, scheduler_file: Path | None,
           timeout: float | None = None, max_wall: float | None = None) -> None:
    """Run the sweep and report (one line per outcome; exit 128 + signal on a stop,
    0 when paused by ``max_wall``, as ``simulate --max-wall``)."""
    from particles_cli.session import run_session

    from particles.errors import SweepError
    from particles.sweep.backends import make_backend
    from particles.sweep.run import run_sweep

    try:
        backend = make_backend(
            scheduler=scheduler, processes=processes,  # None: picked per sweep
            scheduler_file=None if scheduler_file is None else str(scheduler_file),
            timeout=timeout)
    except (SweepError, ValueError, OSError, TimeoutError) as exc:  # e.g. no scheduler there
        _fail(exc)

    def start(should_stop):
        try:
            return run_sweep(spec, out, overwrite=overwrite, resume=resume, backend=backend,
                             chunk=chunk, progress=True, should_stop=should_stop,
                             max_wall=max_wall)
        finally:
            backend.close()

    def report(result) -> list[str]:
        ran = (f"{result.tasks_run} tasks ({result.systems_run} systems) run in "
               f"{result.seconds:.1f} s")
        if not result.complete:
            return [f"paused by --max-wall {max_wall:g} s: {out} {result.describe()}, marked "
                    f"incomplete; {ran}; continue with: particles sweep --resume --out {out}"]
        return [f"{result.spec.points} grid points x {result.spec.runs} systems, "
                f"complete; {ran}"]

    run_session(start, out=out, command="particles sweep", report=report,
                report_kept=False, unit="system")


@sweep.command("export")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--csv", "csv_out", type=click.Path(path_type=Path), required=True,
              help="CSV file to write (one row per value: variable, coordinates, value).")
@click.option("--variables", help="Statistics to export, comma-separated (default: all).")
@click.option("--overwrite", is_flag=True, help="Replace an existing --csv file.")
def export(path: Path, csv_out: Path, variables: str | None, overwrite: bool) -> None:
    """Write the statistics of a finished sweep as a tidy CSV table."""
    from particles.errors import OutputPathError, SweepError
    from particles.sweep.dataset import export_csv

    names = None if variables is None else tuple(v.strip() for v in variables.split(","))
    try:
        rows = export_csv(path, csv_out, variables=names, overwrite=overwrite)
    except OutputPathError as exc:
        raise click.BadParameter(str(exc), param_hint="'--csv'") from None
    except (SweepError, ImportError) as exc:  # ImportError: the tables extra is missing
        _fail(exc)
    click.echo(str(csv_out))
    click.echo(f"{rows} rows")
