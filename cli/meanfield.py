"""``particles meanfield``: solve the mean-field PDE on the circle, on S^2 (``--d 3``) or
axisymmetric on S^{d-1} (``--d N --axisymmetric``) into a density file."""

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
from particles.meanfield.sphere_config import SPHERE_INITS, SphereFieldConfig
from particles.runs.estimate import check_fits, meanfield_estimate
from particles.runs.meanfield import meanfield_resume_path, run_meanfield_to_file, summary_line

#: MeanFieldConfig fields set by options of the same name (``save_every`` -> --save-every).
FIELDS = tuple(f.name for f in dataclasses.fields(MeanFieldConfig))

#: options of the circle only, and of the sphere only.
CIRCLE_ONLY = ("modes", "coupling")
SPHERE_ONLY = ("d", "lmax", "axisymmetric")


#: the defaults of MeanFieldConfig, shown in the help texts.
DEFAULTS = {f.name: f.default for f in dataclasses.fields(MeanFieldConfig)}


def option_name(field: str) -> str:
    """``save_every`` -> ``--save-every`` (``D`` stays ``--D``)."""
    return "--" + field.replace("_", "-")


def _init_forms(inits: dict = INITS) -> str:
    """``uniform | perturbed[:eps=E,kmax=K] | ...`` from a registry of initial densities."""
    return " | ".join(
        name + (f"[:{','.join(f'{k}=..' for k in params)}]" if params else "")
        for name, params in inits.items()
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


def build_config(options: dict, stored: MeanFieldConfig | SphereFieldConfig | None = None
                 ) -> MeanFieldConfig | SphereFieldConfig:
    """The configuration of the options given (over ``stored`` when resuming): on the
    sphere with ``--d 3`` or more (or a stored sphere solve), else on the circle.

    Raises
    ------
    click.BadParameter, click.UsageError
        An invalid value, naming its option.
    """
    given = {k: v for k, v in options.items() if v is not None and v is not False}
    if stored is not None:
        sphere = isinstance(stored, SphereFieldConfig)
    else:
        sphere = given.get("d", 2) != 2 or "lmax" in given or "axisymmetric" in given
        if given.get("d") == 2 and not sphere:
            given.pop("d")  # the circle's own default; with sphere options it is refused
    wrong = [k for k in (CIRCLE_ONLY if sphere else SPHERE_ONLY) if k in given]
    if wrong:
        where = "on the sphere (--d 3 or more)" if sphere else "on the circle (--d 2)"
        raise click.BadParameter(f"is not an option of the solve {where}",
                                 param_hint=f"'{option_name(wrong[0])}'")
    cls = SphereFieldConfig if sphere else MeanFieldConfig
    values = stored.to_dict() if stored is not None else {}
    if stored is not None and ("save_times" in given) != ("save_every" in given):
        # one of the two given: it replaces the stored one (the comparison names it)
        values.pop("save_every" if "save_times" in given else "save_times", None)
    values.update(given)
    try:
        if stored is not None:
            return cls.from_dict(values)
        return cls(**values)
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
@click.option("--d", "d", type=int, help="Dimension of the space: 2 (the circle, default), 3 "
              "(S^2, pseudo-spectral with spherical harmonics) or any d >= 3 with "
              "--axisymmetric.")
@click.option("--lmax", type=int, help="Highest spherical-harmonic degree on the sphere "
              "(default 32; the grid is dealiased, about 3 lmax / 2 rings).")
@click.option("--axisymmetric", is_flag=True, default=None,
              help="Densities of the polar angle only, on S^{d-1} for any d >= 3.")
@click.option("--T", "T", type=float, help=f"Final time (default {DEFAULTS['T']:g}).")
@click.option("--save-every", type=float,
              help="Time between saved frames (default: frames at 0 and --T only).")
@click.option("--save-times", callback=_save_times,
              help="Comma-separated save times instead of --save-every.")
@click.option("--usa-scale", type=click.Choice(USA_SCALES),
              help="USA normalisation, as for simulate: n, or n_exp_beta (time in units "
              f"of e^beta; default {DEFAULTS.get('usa_scale', 'n')}).")
@click.option("--coupling", type=float, help="Kuramoto coupling c (model kuramoto).")
@click.option("--init", help=f"Initial density (default perturbed): {_init_forms()}; on the "
              f"sphere: {_init_forms(SPHERE_INITS)}.")
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
    """Solve the mean-field PDE and stream the density to an H5MD file.

    d_t rho + div(rho v[rho]) = D Laplace rho for a probability density rho on
    the circle (default), on S^2 (--d 3 --lmax L) or, for densities of the
    polar angle only, on S^{d-1} (--d N --axisymmetric).  Prints the output
    path and a one-line summary on stdout.  Ctrl-C stops cleanly (file kept,
    marked incomplete, exit status 130; 143 for SIGTERM); --resume continues
    it.  A full disk stops the solve at once (exit status 1).  A solve whose memory or output cannot
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
            check_fits(meanfield_estimate(config), out,
                       sizes="--lmax" if isinstance(config, SphereFieldConfig) else "--modes")
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    run_session(
        lambda should_stop: run_meanfield_to_file(config, out, overwrite=overwrite,
                                                  resume=resume, progress=True,
                                                  should_stop=should_stop),
        out=out, command="particles meanfield", report=lambda s: [summary_line(s)])
