"""``particles simulate``: run a configuration into an H5MD trajectory file."""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np
from particles_cli.info import stop_phrase
from particles_cli.options import (
    CONFIG_KEYS,
    build_config,
    check_exclusive,
    check_sizes,
    config_options,
    given_values,
    option_name,
    read_config_file,
)
from particles_cli.session import run_session

from particles.config import SimulationConfig
from particles.display import time_text
from particles.integrators import INTEGRATORS
from particles.io import OutputPathError, TrajectoryFileError, read_summary
from particles.runs import RunResult, resume_path, run_to_file
from particles.runs.estimate import check_fits, estimate
from particles.runs.run import as_stored, resumed_config


def summary_line(s: RunResult) -> str:
    """One line: frames, final time, status, final clusters, order parameter and energy.

    A last frame with an eps-linked group of tokens spanning more than 90
    degrees reads ``spread`` (:meth:`~particles.runs.RunResult.spread`, count
    0), not ``1 cluster``; an ensemble's count statistics leave those out.
    Above :data:`~particles.runs.run.SUMMARY_MAX_PAIRS` pairs of tokens the
    clusters are not counted (O(n^2)), and the line says so.
    """
    status = "complete" if s.complete else f"incomplete, {s.frames_expected} expected"
    stop = stop_phrase(s)
    if stop:
        status = (f"complete: {stop} before the {s.frames_expected} frames planned"
                  if s.complete else f"{stop}, {status}; continue with --resume")
    clusters = s.summary_clusters()
    one = s.final.ndim == 2  # one system, else an ensemble
    if clusters is None:
        parts = [f"clusters not counted at n = {s.final.shape[-2]} (O(n^2) pairs; "
                 "particles analyze counts them)"]
    elif one:
        parts = ["spread (a linked group over more than 90 degrees)" if clusters == 0
                 else f"clusters {int(clusters)}"]
    else:
        spread = np.asarray(clusters) == 0
        have = np.asarray(clusters)[~spread]  # spread systems have no count
        parts = [
            f"clusters mean {np.mean(have):.3g} (min {np.min(have)}, max {np.max(have)}) over "
            f"{len(have)} systems" if have.size else "no system clustered"
        ]
        if np.any(spread):
            parts.append(f"{int(np.sum(spread))} spread (a linked group over more than 90 "
                         "degrees)")
    mean = "" if one else " mean"
    r = s.final_observables.get("order_parameter")
    if r is not None:
        parts.append(f"r{mean} {np.mean(r):.4g}")
    energy = s.final_observables.get("energy")
    if energy is not None:
        parts.append(f"energy{mean} {np.mean(energy):.6g}")
    if s.config.merge_events:
        parts.append(f"{s.merges} merge event{'s' * (s.merges != 1)} located")
    if s.config.until_clusters is not None and s.config.batch is not None:
        parts.append(f"{s.passages} first passage{'s' * (s.passages != 1)} recorded")
    return f"{s.frames} frames to t={time_text(s.time)} ({status}), " + ", ".join(parts)


def resume_config(out: Path, options: dict, config_file: Path | None) -> SimulationConfig:
    """The configuration of ``simulate --resume`` given with options: the options
    (and --config keys) given over the configuration stored in ``out``.

    Rerunning the original command with ``--resume`` added gives the stored
    configuration back; :func:`particles.runs.run_to_file` refuses any other.
    """
    try:
        out = resume_path(out)  # adopts the temporary file of a run killed early
    except OutputPathError as exc:
        raise click.BadParameter(str(exc), param_hint="'--out'") from None
    named = [option_name(k) for k, v in options.items() if v is not None]
    named += ["--config"] * (config_file is not None)
    try:
        stored = read_summary(out).config.to_dict()
    except TrajectoryFileError as exc:
        raise click.UsageError(
            f"cannot check {', '.join(named)} against the configuration stored in {out}: {exc}"
        ) from None
    from_file = read_config_file(config_file) if config_file else {}
    filled = {
        k: stored.get(k) if options.get(k) is None and k not in from_file else options.get(k)
        for k in CONFIG_KEYS
    }
    config, _ = build_config(filled, config_file)  # x0: frame 0 is in the file
    return config


def extended(given: SimulationConfig, stored: SimulationConfig) -> SimulationConfig:
    """The configuration a resume with ``given`` runs: the stored one with the
    changes a resume makes (:func:`particles.runs.run.resumed_config`: extended to
    a later ``T``, other integration settings), else ``given`` as it is (what it
    cannot continue, :func:`particles.runs.run_to_file` refuses, saying why)."""
    try:
        return resumed_config(given, stored)
    except ValueError:
        return as_stored(given, stored)


def check_estimate(
    out: Path, config: SimulationConfig | None, *, resume: bool, dry_run: bool, check: bool,
    x0: np.ndarray | None = None,
) -> None:
    """Estimate the run before any work: print it (``dry_run``) and refuse what cannot fit.

    ``config`` None with ``resume`` means the configuration stored in ``out``.  A
    dry run times the drift on this machine and counts an adaptive
    integrator's steps with a short probe
    (:func:`particles.runs.probe.probed_estimate`, from ``x0`` where given);
    the check before a run needs sizes only.
    """
    written = 0
    if resume:
        try:
            out = resume_path(out)  # adopts the temporary file of a run killed early
            stored = read_summary(out).config
        except OutputPathError as exc:
            raise click.BadParameter(str(exc), param_hint="'--out'") from None
        except TrajectoryFileError as exc:  # as run_to_file would report it
            raise click.UsageError(str(exc)) from None
        config = extended(config, stored) if config is not None else stored
        written = out.stat().st_size
    est = estimate(config)
    if dry_run:
        from particles.runs.probe import probed_estimate

        what = ("probing the adaptive steps" if INTEGRATORS[config.integrator].adaptive
                else "timing the drift on this machine")
        click.echo(f"{what} (compiles the kernels once) ...", err=True)
        est = probed_estimate(config, x0=x0)
        click.echo(f"{out} (dry run: nothing written)")
        click.echo("\n".join(est.lines()))
    if check:
        try:
            check_fits(est, out, written=written)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None


@click.command("simulate")
@config_options
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("run.h5"),
    show_default=True,
    help="Output H5MD file; never replaced without --overwrite.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace an existing --out, once the new run has produced its first frames.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the incomplete --out from its last frame with the configuration "
    "stored in it; the original command's options may be given again (refused, "
    "naming them, where they differ from the stored ones).  With a larger --T "
    "alone, extends the run (complete or not) to it, bit-identical to asking for "
    "that --T from the start: a --save-every grid goes on, and log- or lin-spaced "
    "--save-times go on with the same spacing (the same points per decade); or give "
    "--save-times that start with the stored ones.  --collapse-tol, --rtol, --atol "
    "and a deterministic --integrator may change (with --dt when it switches between "
    "fixed and adaptive steps, the save times kept): the frames after the last one "
    "are computed with them, a segment the file records (particles info lists them).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="TOML file of configuration keys (SimulationConfig field names); options "
    "given on the command line override it.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the estimated memory, output size and time of the run, and write nothing.",
)
@click.option(
    "--no-size-check",
    is_flag=True,
    help="Start even when the estimated memory or output size exceeds what is available.",
)
def simulate(
    out: Path,
    overwrite: bool,
    resume: bool,
    config_file: Path | None,
    dry_run: bool,
    no_size_check: bool,
    **options,
) -> None:
    """Simulate tokens on the sphere and stream the frames to an H5MD file.

    Prints the output path and a one-line summary on stdout; a progress bar
    appears on stderr for runs longer than a second.  Ctrl-C stops cleanly
    (file kept, marked incomplete, exit status 130; 143 for SIGTERM);
    --resume continues it.  A signal always gives exit status 128 + its
    number, and the message says what the file holds: one that lands after
    the last frame says the file is complete.  A full disk stops the run at
    once (exit status 1), naming the free space needed; --resume continues
    it once there is room.  Before any work the memory, output size and
    time are estimated; a run that cannot fit is refused (--no-size-check
    starts it anyway, --dry-run prints the estimate only: for an adaptive
    integrator it first counts the steps with a short probe of the run, one
    to three seconds once the kernels are compiled, and says when a time is a
    bound rather than an estimate, or gives its range where the tokens'
    collapse decides it).
    """
    values = given_values(options, config_file)
    if not no_size_check:
        check_sizes(values)
    if resume:
        if overwrite:
            raise click.UsageError(
                f"--resume continues {out} in place; --resume and --overwrite exclude each other"
            )
        x0 = None
        given = config_file is not None or any(v is not None for v in options.values())
        config = resume_config(out, options, config_file) if given else None
    else:
        config, x0 = build_config(options, config_file)
    check_exclusive(options)
    if dry_run or not no_size_check:
        check_estimate(out, config, resume=resume, dry_run=dry_run, check=not no_size_check,
                       x0=x0)
        if dry_run:
            return
    run_session(
        lambda should_stop: run_to_file(config, out, x0=x0, overwrite=overwrite, resume=resume,
                                        progress=True, should_stop=should_stop),
        out=out, command="particles simulate", report=lambda s: [summary_line(s)])
