"""``particles kernels``: every attention kernel from the same initial tokens, one PNG."""

from __future__ import annotations

from pathlib import Path

import click
from particles_cli.options import (
    CONFIG_KEYS,
    NamesType,
    check_exclusive,
    check_sizes,
    cli_message,
    option_name,
    some_config_options,
)
from particles_cli.plot import check_output_format, image_formats
from particles_cli.session import one_line_warnings

from particles.analysis import DEFAULT_EPS
from particles.config import KERNEL_PARAMETERS
from particles.errors import IntegrationError
from particles.fields import KERNELS
from particles.io import OutputPathError
from particles.runs.kernels import check_kernels, compare_kernels

#: the configuration options of `simulate` that `kernels` shares (same help texts).
SHARED = (
    "n",
    "d",
    "beta",
    "T",
    "dt",
    "save_every",
    "save_times",
    "model",
    "integrator",
    "seed",
    "tau",
    "gamma",
)


@click.command("kernels")
@some_config_options(*SHARED)
@click.option(
    "--kernels",
    type=NamesType("kernels", check_kernels),
    default=",".join(KERNELS),
    show_default=True,
    help="Comma-separated kernels to run, each from the same initial tokens ("
    + "; ".join(f"{k} uses {p}" for k, p in KERNEL_PARAMETERS.items())
    + ").",
)
@click.option(
    "--eps",
    type=float,
    default=DEFAULT_EPS,
    show_default=True,
    help="Cluster linking distance (radians).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("kernels.png"),
    show_default=True,
    help="Output PNG: cluster count per kernel over time above inner-product histograms "
    "(one row per kernel); never replaced without --overwrite.",
)
@click.option("--overwrite", is_flag=True, help="Replace an existing --out file.")
def kernels(
    kernels: tuple[str, ...],
    eps: float,
    out: Path,
    overwrite: bool,
    **options,
) -> None:
    """Run each attention kernel from the same initial tokens and plot them side by side.

    The tokens are drawn once from --seed; every kernel shares the model,
    integrator and output times.  --tau goes to rbf and l2, --gamma to
    quadratic (edp at beta and rbf at tau = beta/2 coincide on the sphere).
    Prints the PNG written, the seed (drawn when --seed is not given; also in
    the title and, for PNG, PDF and SVG, in the image's metadata with the
    configuration and versions) and the final cluster count and mean inner
    product per kernel.
    """
    given = {k: v for k, v in options.items() if v is not None}
    missing = [option_name(k) for k in ("n", "d", "beta") if k not in given]
    if missing:
        raise click.UsageError(f"missing option(s) {', '.join(missing)}")
    check_exclusive(given)
    check_sizes({**given, "batch": len(kernels)})  # every kernel's run is kept in memory
    check_output_format(out, image_formats(), "a picture")
    with one_line_warnings():
        try:
            result = compare_kernels(
                **given, kernels=kernels, eps=eps, plot=out, overwrite=overwrite
            )
        except OutputPathError as exc:
            raise click.BadParameter(str(exc), param_hint="'--out'") from None
        except IntegrationError as exc:
            click.echo(f"Error: {' '.join(str(exc).split())}", err=True)
            raise SystemExit(1) from None
        except (ValueError, TypeError) as exc:
            field = str(exc).split(" ", 1)[0]
            message = cli_message(" ".join(str(exc).split()))
            if field == "kernel":  # e.g. --model kuramoto has no attention kernel
                raise click.BadParameter(message, param_hint="'--kernels'") from None
            if field in CONFIG_KEYS or field == "eps":
                raise click.BadParameter(message, param_hint=f"'{option_name(field)}'") from None
            raise click.UsageError(message) from None
    click.echo(str(out))
    # drawn when not given: printed (and in the title and the image's metadata)
    # so that `--seed` remakes the figure
    click.echo(f"seed {result.seed}")
    click.echo(result.table())
