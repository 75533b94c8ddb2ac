"""``particles compare``: SA, USA and Kuramoto from one initial condition on the circle."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np
from particles_cli.options import (
    NamesType,
    load_npy,
    option_name,
    some_config_options,
)
from particles_cli.session import run_session

from particles.config import parse_init
from particles.io.compare import read_comparison_summary
from particles.models import MODELS
from particles.runs.compare import DEFAULT_MODELS, check_models, compare_models

#: the configuration options of `simulate` that `compare` shares (same help texts);
#: d is always 2, and the attention matrices, kernel and batch are not compared.
SHARED = (
    "n",
    "beta",
    "T",
    "dt",
    "save_every",
    "save_times",
    "integrator",
    "usa_scale",
    "seed",
    "coupling",
    "omega",
)


@dataclass(frozen=True)
class CircleInit:
    """A parsed ``--init``: a configuration name, or angles / points from PATH.npy."""

    init: str = "uniform"
    theta0: np.ndarray | None = None


class _InitType(click.ParamType):
    """``uniform|equispaced|cap:EPS|vmf:KAPPA|PATH.npy`` (angles (n,) or points (n, 2))."""

    name = "init"

    def convert(self, value, param, ctx):
        if isinstance(value, CircleInit):
            return value
        try:
            if value.endswith(".npy") or "/" in value:
                a = load_npy(value, "initial angles")
                if not np.issubdtype(a.dtype, np.number) or not (
                    a.ndim == 1 or (a.ndim == 2 and a.shape[1] == 2)
                ):
                    raise ValueError(
                        f"{value} must hold n angles (n,) or n points (n, 2), "
                        f"got {a.dtype} {a.shape}"
                    )
                return CircleInit("array", a)
            name, _ = parse_init(value)
            if name == "array":
                raise ValueError("init 'array' is given as PATH.npy")
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        return CircleInit(value)


@click.command("compare")
@some_config_options(*SHARED)
@click.option(
    "--models",
    type=NamesType("models", check_models),
    default=",".join(DEFAULT_MODELS),
    show_default=True,
    help="Comma-separated models to run, each from the same initial condition: "
    + ", ".join(MODELS)
    + ".",
)
@click.option(
    "--init",
    "init",
    type=_InitType(),
    default="uniform",
    show_default=True,
    help="Initial condition on the circle: uniform | equispaced | cap:EPS | vmf:KAPPA | "
    "PATH.npy of n angles (n,) or n points (n, 2); --n may then be left out.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("compare.h5"),
    show_default=True,
    help="Output H5MD file, one particle group per model; never replaced without --overwrite.",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a PNG: r(t), cluster count and normalised energy per model, "
    "and the final tokens of each model on the circle.",
)
@click.option("--overwrite", is_flag=True, help="Replace existing --out and --plot files.")
def compare(
    models: tuple[str, ...],
    init: CircleInit,
    out: Path,
    plot: Path | None,
    overwrite: bool,
    **options,
) -> None:
    """Run SA, USA and Kuramoto from one initial condition on the circle (d = 2).

    All models share the seed, the initial tokens and the output times;
    --coupling and --omega apply to Kuramoto.  Prints the file(s) written and
    the final order parameter r, cluster count and normalised energy per model.
    """
    given = {k: v for k, v in options.items() if v is not None}
    missing = [option_name(k) for k in ("n", "beta") if k not in given]
    if init.theta0 is not None and "--n" in missing:
        missing.remove("--n")
    if missing:
        raise click.UsageError(f"missing option(s) {', '.join(missing)}")

    def report(result) -> list[str]:
        return [*([str(plot)] if plot is not None else []), result.table()]

    run_session(
        lambda should_stop: compare_models(**given, models=models, init=init.init,
                                           theta0=init.theta0, out=out, plot=plot,
                                           overwrite=overwrite, progress=True,
                                           should_stop=should_stop),
        out=out, command="particles compare", report=report, resumable=False,
        report_kept=False, paths={"--out": out, "--plot": plot} if plot else None,
        fields={"theta0": "--init", "plot": "--plot"},
        summary_of=lambda result: read_comparison_summary(out))
