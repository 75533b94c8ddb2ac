"""``python -m particles_cli``: the ``particles`` command.

The interrupt handlers are installed before anything heavy is imported
(:mod:`particles_cli.interrupts` needs only the standard library), so Ctrl-C
during start-up is one line too.
"""

from particles_cli import interrupts


def main() -> None:
    """Install the interrupt handling, then run the command group."""
    try:
        interrupts.install()
        from particles_cli.main import cli
    except KeyboardInterrupt:  # Ctrl-C while importing click
        interrupts.exit_now("Interrupted: stopped before any work; nothing written")
    cli(prog_name="particles")


if __name__ == "__main__":
    main()
