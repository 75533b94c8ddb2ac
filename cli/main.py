"""The ``particles`` command group.

Every command lives in its own module and is registered by one line in
:data:`COMMANDS`.
"""

from __future__ import annotations

import click
from particles_cli.analyze import analyze
from particles_cli.compare import compare
from particles_cli.info import info
from particles_cli.kernels import kernels
from particles_cli.plot import plot
from particles_cli.simulate import simulate

#: the commands of ``particles``, one line each.
COMMANDS: list[click.Command] = [
    simulate,
    info,
    analyze,
    plot,
    compare,
    kernels,
]


@click.group("particles", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="attention-particles", prog_name="particles")
def cli() -> None:
    """Simulate self-attention dynamics of tokens on the sphere."""


for _command in COMMANDS:
    cli.add_command(_command)
