"""The ``particles`` command group.

Every command lives in its own module and is registered by one line in
:data:`COMMANDS`.  Commands are imported only when they run (or show their
own ``--help``), so ``particles --help`` starts without loading the
library's compiled kernels, h5py or matplotlib.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass

import click
from particles_cli import interrupts


@dataclass(frozen=True)
class CommandEntry:
    """A command of the group, imported on first use.

    Attributes
    ----------
    name : str
        Command name (the click command object in ``module`` has this name).
    module : str
        Module defining it.
    help : str
        First line of its docstring, shown by ``particles --help`` (a test
        checks that it matches).
    """

    name: str
    module: str
    help: str

    def load(self) -> click.Command:
        """Import the module and return the click command."""
        return getattr(importlib.import_module(self.module), self.name)


#: the commands of ``particles``, one line each.
COMMANDS: list[CommandEntry] = [
    CommandEntry("simulate", "particles_cli.simulate",
                 "Simulate tokens on the sphere and stream the frames to an H5MD file."),
    CommandEntry("info", "particles_cli.info", "Print the configuration, frames, completion "
                 "and observables of a trajectory file."),
    CommandEntry("analyze", "particles_cli.analyze", "Find clusters, merges and the two time "
                 "scales of a run; store them beside PATH."),
    CommandEntry("plot", "particles_cli.plot",
                 "Draw a picture of the run in PATH and print the file written."),
    CommandEntry("compare", "particles_cli.compare", "Run SA, USA and Kuramoto from one "
                 "initial condition on the circle (d = 2)."),
    CommandEntry("kernels", "particles_cli.kernels", "Run each attention kernel from the "
                 "same initial tokens and plot them side by side."),
    CommandEntry("meanfield", "particles_cli.meanfield", "Solve the mean-field PDE and "
                 "stream the density to an H5MD file."),
    CommandEntry("sweep", "particles_cli.sweep",
                 "Run ensembles over a grid of parameters into one sweep file."),
    CommandEntry("compile", "particles_cli.compile", "Compile the kernels of every command "
                 "into the disk cache, ahead of time."),
    CommandEntry("figures", "particles_cli.figures", "Remake the gallery's figures from the "
                 "scripts in figures/ and print each file written."),
]


class LazyCommands(MutableMapping):
    """``name -> click.Command``, importing a command's module on first access."""

    def __init__(self, entries: list[CommandEntry]) -> None:
        self._entries = {e.name: e for e in entries}
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            self._loaded[name] = self._entries[name].load()
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command
        self._entries.setdefault(name, CommandEntry(name, "", command.get_short_help_str()))

    def __delitem__(self, name: str) -> None:
        self._entries.pop(name)
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def short_help(self, name: str) -> str:
        """The stored one-line help (imports nothing)."""
        return self._entries[name].help


class LazyGroup(click.Group):
    """A group whose commands are imported on first use.

    A ``KeyboardInterrupt`` (Ctrl-C or SIGTERM, see
    :mod:`particles_cli.interrupts`) that no command handled, e.g. one
    raised while a command's modules are imported, ends the run with one
    line and exit status 128 + signal (not click's "Aborted!", exit 1).
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(COMMANDS)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        found = super().resolve_command(ctx, args)  # imports the command's modules
        ctx.meta["particles.command_loaded"] = True
        # until the command says what it writes (run_session, plot, analyze,
        # compile set their own), a stop has written nothing: the options are
        # being checked (a SIGTERM there said "any output file holds...", issue 38)
        interrupts.on_forced_stop(interrupts.nothing_written)
        return found

    def invoke(self, ctx: click.Context):
        try:
            try:
                return super().invoke(ctx)
            finally:
                interrupts.hold()  # the command is done: the exit window must not be cut
        except KeyboardInterrupt:
            if ctx.meta.get("particles.command_loaded"):
                interrupts.exit_now(f"Interrupted: {interrupts.description()}")
            interrupts.exit_now("Interrupted: stopped before any work; nothing written")

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # the stored one-line help, so listing the commands imports none of them
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, click.Command(name, help=self.commands.short_help(name))
                 .get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group("particles", cls=LazyGroup,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="attention-particles", prog_name="particles")
def cli() -> None:
    """Simulate self-attention dynamics of tokens on the sphere."""
