"""``particles meanfield``: solve the mean-field PDE on the circle into a density file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
from particles_cli.session import run_session

from particles.errors import OutputPathError, TrajectoryFileError
from particles.io.density import read_density_summary
from particles.meanfield import INITS, MEANFIELD_MODELS, MeanFieldConfig
from particles.meanfield.solver import POSITIVITY
from particles.meanfield.spectral import USA_SCALES
from particles.runs.estimate import check_fits, meanfield_estimate
from particles.runs.meanfield import meanfield_resume_path, run_meanfield_to_file, summary_line

#: MeanFieldConfig fields set by options of the same name (``save_every`` -> --save-every).
FIELDS = tuple(f.name for f in dataclasses.fields(MeanFieldConfig))


#: the defaults of MeanFieldConfig, shown in the help texts.
DEFAULTS = {f.name: f.default for f in dataclasses.fields(MeanFieldConfig)}


def option_name(field: str) -> str:
    """``save_every`` -> ``--save-every`` (``D`` stays ``--D``)."""
    return "--" + field.replace("_", "-")


def _init_forms() -> str:
    """``uniform | perturbed[:eps=E,kmax=K] | ...`` from the registry of initial densities."""
    return " | ".join(
        name + (f"[:{','.join(f'{k}=..' for k in params)}]" if params else "")
        for name, params in INITS.items()
    )




def _save_times(ctx, param, value: str | None):
    """``--save-times 0.5,1,2`` -> (0.5, 1.0, 2.0)."""
    if value is None:
        return None
    try:
        times = tuple(float(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter(
            f"must be comma-separated numbers, got {value!r}", ctx, param
        ) from None
    if not times:
        raise click.BadParameter("must name at least one time", ctx, param)
    return times


def build_config(options: dict, stored: MeanFieldConfig | None = None) -> MeanFieldConfig:
    """The configuration of the options given (over ``stored`` when resuming).

    Raises
    ------
    click.BadParameter, click.UsageError
        An invalid value, naming its option.
    """
    given = {k: v for k, v in options.items() if v is not None}
    values = stored.to_dict() if stored is not None else {}
    if stored is not None and ("save_times" in given) != ("save_every" in given):
        # one of the two given: it replaces the stored one (the comparison names it)
        values.pop("save_every" if "save_times" in given else "save_times", None)
    values.update(given)
    try:
        if stored is not None:
            return MeanFieldConfig.from_dict(values)
        return MeanFieldConfig(**values)
    except (ValueError, TypeError) as exc:
        message = " ".join(str(exc).split())
        field = getattr(exc, "field", None)
        if field is not None:
            raise click.BadParameter(message, param_hint=f"'{option_name(field)}'") from None
        raise click.UsageError(message) from None


@click.command("meanfield")
@click.option("--beta", type=float, help="Inverse temperature of the interaction exp(beta cos).")
@click.option("--model", type=click.Choice(list(MEANFIELD_MODELS)),
              help="Velocity field: " + ", ".join(MEANFIELD_MODELS)
              + f" (default {DEFAULTS['model']}).")
@click.option("--D", "D", type=float,
              help="Diffusion coefficient (sigma^2 / 2 for particle noise sigma; "
              f"default {DEFAULTS['D']:g}).")
@click.option("--modes", type=int, help="Grid points M (even, >= 8) on the circle "
              f"(default {DEFAULTS['modes']}).")
@click.option("--T", "T", type=float, help=f"Final time (default {DEFAULTS['T']:g}).")
@click.option("--save-every", type=float,
              help="Time between saved frames (default: frames at 0 and --T only).")
@click.option("--save-times", callback=_save_times,
              help="Comma-separated save times instead of --save-every.")
@click.option("--usa-scale", type=click.Choice(USA_SCALES),
              help="USA normalisation, as for simulate: n, or n_exp_beta (time in units "
              f"of e^beta; default {DEFAULTS.get('usa_scale', 'n')}).")
@click.option("--coupling", type=float, help="Kuramoto coupling c (model kuramoto).")
@click.option("--init", help=f"Initial density (default perturbed): {_init_forms()}.")
@click.option("--seed", type=int, help="Seed of the random perturbation of --init perturbed "
              f"(default {DEFAULTS['seed']}).")
@click.option("--rtol", type=float, help="Relative tolerance of the adaptive step "
              f"(default {DEFAULTS['rtol']:g}).")
@click.option("--atol", type=float, help="Absolute tolerance of the adaptive step, density "
              f"units (default {DEFAULTS['atol']:g}).")
@click.option("--positivity", type=click.Choice(POSITIVITY),
              help="When the density goes negative: warn once (default), raise (stop the "
              "solve, file kept), ignore.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("field.h5"),
              show_default=True,
              help="Output H5MD density file; never replaced without --overwrite.")
@click.option("--overwrite", is_flag=True,
              help="Replace an existing --out, once the new solve has produced frames.")
@click.option("--resume", is_flag=True,
              help="Continue the incomplete --out from its last frame, bit for bit, with "
              "the configuration stored in it (options given again must match it).")
@click.option("--no-size-check", is_flag=True,
              help="Start even when the estimated memory or output size exceeds what is "
              "available.")
def meanfield(out: Path, overwrite: bool, resume: bool, no_size_check: bool,
              **options) -> None:
    """Solve the mean-field PDE on the circle and stream the density to an H5MD file.

    d_t rho + d_theta(rho v[rho]) = D d_theta^2 rho for a probability density
    rho on the circle.  Prints the output path and a one-line summary on
    stdout.  Ctrl-C stops cleanly (file kept, marked incomplete, exit status
    130; 143 for SIGTERM); --resume continues it.  A full disk stops the
    solve at once (exit status 1).  A solve whose memory or output cannot
    fit is refused before any work (--no-size-check starts it anyway).
    """
    if resume:
        if overwrite:
            raise click.UsageError(
                f"--resume continues {out} in place; --resume and --overwrite exclude each other"
            )
        config = None
        if any(v is not None for v in options.values()):
            try:
                stored = read_density_summary(meanfield_resume_path(out)).config
            except OutputPathError as exc:
                raise click.BadParameter(str(exc), param_hint="'--out'") from None
            except TrajectoryFileError as exc:
                raise click.UsageError(str(exc)) from None
            config = build_config(options, stored)
    else:
        if options["beta"] is None:
            raise click.UsageError("missing option --beta")
        config = build_config(options)
    if config is not None and not no_size_check:  # before any allocation
        try:
            check_fits(meanfield_estimate(config), out, sizes="--modes")
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    run_session(
        lambda should_stop: run_meanfield_to_file(config, out, overwrite=overwrite,
                                                  resume=resume, progress=True,
                                                  should_stop=should_stop),
        out=out, command="particles meanfield", report=lambda s: [summary_line(s)])
